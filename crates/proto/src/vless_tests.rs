use proptest::prelude::*;

use super::*;
use crate::testing;

/// The sample UUID of sing-box's docs, b831381d-6324-4d53-ad4f-8cda48b30811.
const UUID: Uuid = [
    0xb8, 0x31, 0x38, 0x1d, 0x63, 0x24, 0x4d, 0x53, 0xad, 0x4f, 0x8c, 0xda, 0x48, 0xb3, 0x08, 0x11,
];

fn header(addons: &[u8], rest: &[u8]) -> Vec<u8> {
    [&[0][..], &UUID, &[addons.len() as u8], addons, rest].concat()
}

#[test]
fn tcp_request_as_sing_box_writes_it() {
    // sing-vmess WriteRequest: version, UUID, addons length 0, command 1, port,
    // ATYP 2, name; the payload follows in the same write.
    let wire = header(
        &[],
        &[&[1, 1, 187, 2, 11][..], b"example.com", b"GET"].concat(),
    );
    let (req, used) = Request::parse(&wire).unwrap().unwrap();
    let dest = Address::domain("example.com", 443).unwrap();
    assert_eq!(
        req,
        Request {
            uuid: UUID,
            flow: Flow::None,
            command: Command::Tcp(dest)
        }
    );
    assert_eq!(&wire[used..], b"GET");
    let mut out = Vec::new();
    req.encode(&mut out);
    assert_eq!(out, &wire[..used]);
}

#[test]
fn udp_and_mux_requests() {
    let wire = header(&[], &[2, 0, 53, 1, 8, 8, 8, 8]);
    let (req, used) = Request::parse(&wire).unwrap().unwrap();
    assert_eq!(
        req.command,
        Command::Udp(Address::domain("8.8.8.8", 53).unwrap())
    );
    assert_eq!(used, wire.len());
    // Command 3 (XUDP / Mux.Cool) has no destination: frames follow at once.
    let wire = header(&[], &[3, 0, 12]);
    let (req, used) = Request::parse(&wire).unwrap().unwrap();
    assert_eq!(req.command, Command::Mux);
    assert_eq!(used, 19);
}

#[test]
fn flow_in_addons() {
    // Xray/sing-box with flow xtls-rprx-vision: field 1, wire type 2 (0x0a), length 16.
    let addons = [&[0x0a, 16][..], b"xtls-rprx-vision"].concat();
    let wire = header(&addons, &[1, 0, 80, 1, 1, 1, 1, 1]);
    let (req, used) = Request::parse(&wire).unwrap().unwrap();
    assert_eq!(req.flow, Flow::Vision);
    assert_eq!(used, wire.len());
    let mut encoded = Vec::new();
    req.encode(&mut encoded);
    assert_eq!(encoded, wire, "encoded as Xray writes it");
    let addons = [&[0x0a, 16][..], b"xtls-rprx-splice"].concat();
    let wire = header(&addons, &[1, 0, 80, 1, 1, 1, 1, 1]);
    assert_eq!(
        Request::parse(&wire),
        Err(VlessError::UnsupportedFlow("xtls-rprx-splice".into()))
    );
    // An empty flow and a seed (field 2) are fine.
    let addons = [0x0a, 0, 0x12, 2, 0xde, 0xad];
    let wire = header(&addons, &[3]);
    assert!(matches!(Request::parse(&wire), Ok(Some((_, 25)))));
    let wire = header(&[0x0a, 5, b'a'], &[3]);
    assert!(matches!(
        Request::parse(&wire),
        Err(VlessError::BadAddons(_))
    ));
    let wire = header(&[0x0f], &[3]);
    assert!(matches!(
        Request::parse(&wire),
        Err(VlessError::BadAddons(_))
    ));
}

#[test]
fn bad_requests_are_named() {
    assert_eq!(Request::parse(&[1]), Err(VlessError::BadVersion(1)));
    assert_eq!(
        Request::parse(&header(&[], &[9])),
        Err(VlessError::UnsupportedCommand(9))
    );
    assert_eq!(
        Request::parse(&header(&[], &[1, 0, 80, 7])),
        Err(VlessError::Address(AddressError::UnknownType(7)))
    );
}

#[test]
fn udp_packets() {
    let mut out = Vec::new();
    encode_udp_packet(b"abc", &mut out).unwrap();
    encode_udp_packet(b"", &mut out).unwrap();
    assert_eq!(out, [0, 3, b'a', b'b', b'c', 0, 0]);
    assert_eq!(parse_udp_packet(&out), Some((&b"abc"[..], 5)));
    assert_eq!(parse_udp_packet(&out[5..]), Some((&b""[..], 2)));
    assert_eq!(parse_udp_packet(&out[..4]), None);
    let big = vec![0; 65536];
    assert_eq!(
        encode_udp_packet(&big, &mut out),
        Err(PayloadTooLarge(65536))
    );
}

fn command() -> impl Strategy<Value = Command> {
    prop_oneof![
        testing::address().prop_map(Command::Tcp),
        testing::address().prop_map(Command::Udp),
        Just(Command::Mux),
    ]
}

proptest! {
    #[test]
    fn request_round_trip_and_prefixes(uuid in any::<Uuid>(), command in command()) {
        let req = Request { uuid, flow: Flow::None, command };
        let mut wire = Vec::new();
        req.encode(&mut wire);
        prop_assert_eq!(Request::parse(&wire), Ok(Some((req, wire.len()))));
        testing::assert_prefixes_incomplete(&wire, Request::parse);
    }

    #[test]
    fn udp_round_trip(payload in testing::bytes(2000)) {
        let mut wire = Vec::new();
        encode_udp_packet(&payload, &mut wire).unwrap();
        prop_assert_eq!(parse_udp_packet(&wire), Some((&payload[..], wire.len())));
        for end in 0..wire.len() {
            prop_assert_eq!(parse_udp_packet(&wire[..end]), None);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(mut buf in testing::bytes(400)) {
        if let Ok(Some((_, used))) = Request::parse(&buf) {
            prop_assert!(used <= buf.len());
        }
        // Also behind a valid version and UUID, where the addons parser runs.
        buf.splice(0..0, [0u8; 17]);
        let _ = Request::parse(&buf);
        let _ = parse_udp_packet(&buf);
    }
}
