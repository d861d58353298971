use proptest::prelude::*;

use super::*;

/// Feeds `input` to a fresh decoder in pieces of `step` bytes; the payload read.
fn decode_in(input: &[u8], step: usize) -> Result<Vec<u8>, GrpcError> {
    let mut d = Decoder::new();
    let mut out = Vec::new();
    for piece in input.chunks(step.max(1)) {
        let mut rest = piece;
        while !rest.is_empty() {
            let (taken, payload) = d.feed(rest)?;
            assert!(taken > 0 && taken <= rest.len());
            out.extend_from_slice(payload);
            rest = &rest[taken..];
        }
    }
    Ok(out)
}

fn hunk(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_header(payload.len(), &mut out);
    out.extend_from_slice(payload);
    out
}

#[test]
fn a_hunk_is_what_xray_writes() {
    // Xray's `Hunk{Data: "hello"}` marshalled by protobuf, behind gRPC's 5 bytes.
    assert_eq!(hunk(b"hello"), b"\0\0\0\0\x07\x0a\x05hello");
    let long = vec![7u8; 300];
    let framed = hunk(&long);
    assert_eq!(&framed[..8], &[0, 0, 0, 1, 0x2f, 0x0a, 0xac, 0x02]);
    assert_eq!(decode_in(&framed, 1).unwrap(), long);
}

#[test]
fn a_multi_hunk_gives_each_element_in_order() {
    // MultiHunk{Data: ["ab", "", "cde"]}.
    let body = b"\x0a\x02ab\x0a\x00\x0a\x03cde";
    let mut msg = vec![0, 0, 0, 0, body.len() as u8];
    msg.extend_from_slice(body);
    for step in [1, 2, 3, 100] {
        assert_eq!(decode_in(&msg, step).unwrap(), b"abcde");
    }
}

#[test]
fn unknown_fields_are_skipped() {
    // field 2 varint 300, field 3 fixed64, field 4 bytes "zz", field 5 fixed32, data "x".
    let body =
        b"\x10\xac\x02\x19\x01\x02\x03\x04\x05\x06\x07\x08\x22\x02zz\x2d\x01\x02\x03\x04\x0a\x01x";
    let mut msg = vec![0, 0, 0, 0, body.len() as u8];
    msg.extend_from_slice(body);
    assert_eq!(decode_in(&msg, 1).unwrap(), b"x");
    assert_eq!(decode_in(&msg, 64).unwrap(), b"x");
}

#[test]
fn an_empty_message_is_nothing() {
    let mut d = Decoder::new();
    assert_eq!(d.feed(b"\0\0\0\0\0").unwrap(), (5, &b""[..]));
    assert!(d.at_boundary());
    assert_eq!(
        decode_in(b"\0\0\0\0\0\0\0\0\0\x03\x0a\x01z", 2).unwrap(),
        b"z"
    );
}

#[test]
fn bad_messages_are_typed_errors() {
    assert_eq!(
        decode_in(b"\x01\0\0\0\x03", 5),
        Err(GrpcError::Compressed(1))
    );
    assert_eq!(
        decode_in(b"\0\x01\0\0\x01", 5),
        Err(GrpcError::TooLarge(MAX_MESSAGE_LEN + 1))
    );
    // data field of 5 bytes in a message of 3.
    assert_eq!(
        decode_in(b"\0\0\0\0\x03\x0a\x05ab", 1),
        Err(GrpcError::Overrun)
    );
    // a group (wire type 3).
    assert_eq!(
        decode_in(b"\0\0\0\0\x01\x0b", 1),
        Err(GrpcError::WireType(3))
    );
    // a key cut by the message's end.
    assert_eq!(decode_in(b"\0\0\0\0\x01\x8a", 1), Err(GrpcError::Overrun));
    // a length missing.
    assert_eq!(decode_in(b"\0\0\0\0\x01\x0a", 1), Err(GrpcError::Overrun));
    // a varint of 11 bytes.
    let mut long = vec![0, 0, 0, 0, 12, 0x10];
    long.extend_from_slice(&[0xff; 11]);
    assert_eq!(decode_in(&long, 3), Err(GrpcError::Varint));
    // a fixed64 past the message.
    assert_eq!(
        decode_in(b"\0\0\0\0\x03\x19\x01\x02", 1),
        Err(GrpcError::Overrun)
    );
}

#[test]
fn paths_name_their_mode() {
    assert_eq!(match_path("/svc/Tun", "svc"), Some(Mode::Gun));
    assert_eq!(match_path("/svc/TunMulti", "svc"), Some(Mode::Multi));
    assert_eq!(match_path("/svc/Tun?x", "svc"), None);
    assert_eq!(match_path("/svc2/Tun", "svc"), None);
    assert_eq!(match_path("/svc/tun", "svc"), None);
    assert_eq!(match_path("svc/Tun", "svc"), None);
    assert_eq!(match_path("/other/Tun", "svc"), None);
    assert_eq!(Mode::Multi.path("a.b"), "/a.b/TunMulti");
    assert_eq!(Mode::Gun.path("a.b"), "/a.b/Tun");
}

proptest! {
    /// Payloads framed by us come back whole, however the bytes are cut.
    #[test]
    fn framed_payloads_come_back(
        payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..600), 0..8),
        step in 1usize..700,
    ) {
        let mut wire = Vec::new();
        for p in &payloads {
            wire.extend_from_slice(&hunk(p));
        }
        let back = decode_in(&wire, step).unwrap();
        prop_assert_eq!(back, payloads.concat());
    }

    /// Whatever the bytes: no panic, and everything fed is taken or refused.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256), step in 1usize..40) {
        let _ = decode_in(&bytes, step);
    }
}

#[test]
fn a_header_is_seven_to_nine_bytes_up_to_a_quarter_mebibyte() {
    // Flag, length, tag: 6 bytes; the varint 1 byte to 127, 2 to 16,383, 3 beyond.
    for (n, len) in [
        (0, 7),
        (127, 7),
        (128, 8),
        (16_383, 8),
        (16_384, 9),
        (261_964, 9),
    ] {
        let (header, got) = header(n);
        assert_eq!(got, len, "{n} bytes of payload");
        let mut appended = Vec::new();
        encode_header(n, &mut appended);
        assert_eq!(&header[..got], &appended[..]);
        let message = u32::from_be_bytes(header[1..5].try_into().unwrap()) as usize;
        assert_eq!(
            message,
            len - 5 + n,
            "the length counts the tag, varint and payload"
        );
    }
}
