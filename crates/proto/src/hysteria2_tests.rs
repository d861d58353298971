use super::*;
use proptest::prelude::*;
use std::net::SocketAddr;

fn domain(name: &str, port: u16) -> Address {
    Address::domain(name, port).unwrap()
}

#[test]
fn varints_read_as_rfc_9000_writes_them() {
    // RFC 9000, appendix A.1's examples.
    for (bytes, value) in [
        (&[0x25][..], 37u64),
        (&[0x40, 0x25], 37),
        (&[0x7b, 0xbd], 15_293),
        (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
        (
            &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
            151_288_809_941_952_652,
        ),
    ] {
        assert_eq!(read_varint(bytes), Some((value, bytes.len())));
        // Cut short: wait for the rest.
        assert_eq!(read_varint(&bytes[..bytes.len() - 1]), None);
    }
    let mut out = Vec::new();
    write_varint(15_293, &mut out);
    assert_eq!(out, [0x7b, 0xbd]);
}

#[test]
fn a_tcp_request_reads_whole_and_waits_on_every_prefix() {
    let mut wire = Vec::new();
    let request = TcpRequest {
        address: domain("example.com", 443),
    };
    request.encode(&[b'x'; 300], &mut wire);
    wire.extend_from_slice(b"payload");
    let taken = wire.len() - b"payload".len();
    assert_eq!(
        TcpRequest::parse(&wire).unwrap(),
        Some((request.clone(), taken))
    );
    for cut in 0..taken {
        assert_eq!(
            TcpRequest::parse(&wire[..cut]).unwrap(),
            None,
            "cut at {cut}"
        );
    }
    // IPv6 and IPv4 destinations are `[v6]:port` and `a.b.c.d:port` on the wire.
    for address in ["[2001:db8::1]:53", "192.0.2.7:8080"] {
        let parsed = parse_address(address.as_bytes()).unwrap();
        let ip: SocketAddr = address.parse().unwrap();
        assert_eq!(parsed, Address::Ip(ip));
        let mut wire = Vec::new();
        TcpRequest {
            address: parsed.clone(),
        }
        .encode(&[], &mut wire);
        assert_eq!(TcpRequest::parse(&wire).unwrap().unwrap().0.address, parsed);
    }
}

#[test]
fn a_bad_tcp_request_names_what_is_wrong() {
    let frame = |id: u64, address: &[u8], padding: u64| {
        let mut out = Vec::new();
        write_varint(id, &mut out);
        write_varint(address.len() as u64, &mut out);
        out.extend_from_slice(address);
        write_varint(padding, &mut out);
        out
    };
    assert_eq!(
        TcpRequest::parse(&frame(0x402, b"a:1", 0)),
        Err(Hysteria2Error::FrameType(0x402))
    );
    assert_eq!(
        TcpRequest::parse(&frame(0x401, b"", 0)),
        Err(Hysteria2Error::AddressLength(0))
    );
    assert_eq!(
        TcpRequest::parse(&frame(0x401, &[b'a'; 263], 0)),
        Err(Hysteria2Error::AddressLength(263))
    );
    for bad in [
        &b"no-port"[..],
        b"host:99999",
        b"::1:53",
        b"[::1:53",
        b"bad host:1",
    ] {
        assert_eq!(
            TcpRequest::parse(&frame(0x401, bad, 0)),
            Err(Hysteria2Error::Address(
                String::from_utf8_lossy(bad).into_owned()
            )),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
    assert_eq!(
        TcpRequest::parse(&frame(0x401, b"a:1", 4097)),
        Err(Hysteria2Error::Padding(4097))
    );
}

#[test]
fn tcp_responses_round_trip_and_bad_ones_are_named() {
    for response in [
        TcpResponse {
            ok: true,
            message: String::new(),
        },
        TcpResponse {
            ok: false,
            message: "connection refused".into(),
        },
    ] {
        let mut wire = Vec::new();
        response.encode(&[0; 100], &mut wire);
        assert_eq!(
            TcpResponse::parse(&wire).unwrap(),
            Some((response.clone(), wire.len()))
        );
        for cut in 0..wire.len() {
            assert_eq!(TcpResponse::parse(&wire[..cut]).unwrap(), None);
        }
    }
    assert_eq!(TcpResponse::parse(&[2]), Err(Hysteria2Error::Status(2)));
    let mut long = vec![1];
    write_varint(2049, &mut long);
    assert_eq!(
        TcpResponse::parse(&long),
        Err(Hysteria2Error::Message(2049))
    );
}

#[test]
fn udp_messages_round_trip_and_fragments_reassemble() {
    let to = domain("dns.example", 53);
    let payload: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
    let datagrams = fragment(7, 42, &to, &payload, 1200).unwrap();
    assert_eq!(datagrams.len(), 3);
    assert!(datagrams.iter().all(|d| d.len() <= 1200));
    let mut defrag = Defragger::default();
    let mut whole = None;
    // Out of order: reassembled all the same.
    for d in [&datagrams[2], &datagrams[0], &datagrams[1]] {
        let m = UdpMessage::parse(d).unwrap();
        assert_eq!((m.session_id, m.packet_id, m.fragment_count), (7, 42, 3));
        assert_eq!(m.address, to);
        assert!(whole.is_none());
        whole = defrag.feed(&m);
    }
    assert_eq!(whole.as_deref(), Some(&payload[..]));
    // One datagram when it fits; an empty payload is one datagram too.
    assert_eq!(fragment(7, 1, &to, &payload[..100], 1200).unwrap().len(), 1);
    let empty = fragment(7, 2, &to, &[], 1200).unwrap();
    assert_eq!(UdpMessage::parse(&empty[0]).unwrap().payload, b"");
}

#[test]
fn a_lost_fragment_drops_its_packet_when_the_next_one_starts() {
    let to = domain("a.example", 9);
    let first = fragment(1, 10, &to, &[1; 2000], 1200).unwrap();
    let second = fragment(1, 11, &to, &[2; 2000], 1200).unwrap();
    let mut defrag = Defragger::default();
    assert_eq!(defrag.feed(&UdpMessage::parse(&first[0]).unwrap()), None);
    // first[1] is lost; the next packet starts.
    assert_eq!(defrag.feed(&UdpMessage::parse(&second[0]).unwrap()), None);
    assert_eq!(
        defrag.feed(&UdpMessage::parse(&second[1]).unwrap()),
        Some(vec![2; 2000])
    );
    // The late fragment of the dropped packet completes nothing.
    assert_eq!(defrag.feed(&UdpMessage::parse(&first[1]).unwrap()), None);
}

#[test]
fn bad_udp_messages_are_named() {
    assert_eq!(
        UdpMessage::parse(&[0; 7]),
        Err(Hysteria2Error::ShortDatagram(7))
    );
    let mut d = vec![0, 0, 0, 1, 0, 1, 3, 3];
    write_varint(3, &mut d);
    d.extend_from_slice(b"a:1");
    assert_eq!(
        UdpMessage::parse(&d),
        Err(Hysteria2Error::Fragment { id: 3, count: 3 })
    );
    d[7] = 0;
    d[6] = 0;
    assert_eq!(
        UdpMessage::parse(&d),
        Err(Hysteria2Error::Fragment { id: 0, count: 0 })
    );
    let to = domain("a.example", 9);
    assert!(matches!(
        fragment(1, 1, &to, &[0; 100], 20),
        Err(Hysteria2Error::TooLarge { .. })
    ));
    assert!(matches!(
        fragment(1, 1, &to, &[0; 65_535], 100),
        Err(Hysteria2Error::TooLarge { .. })
    ));
}

#[test]
fn salamander_masks_with_blake2b_of_key_and_salt() {
    // BLAKE2b-256("cry_me_a_r1ver" ‖ 00 01 .. 07), computed apart (Python's hashlib).
    let mask = "721fae781c722360391daa6ece7b040b62e07787f64705865b4198638d0b6b7f";
    let mask: Vec<u8> = (0..32)
        .map(|i| u8::from_str_radix(&mask[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let s = Salamander::new(b"cry_me_a_r1ver");
    let salt = [0, 1, 2, 3, 4, 5, 6, 7];
    let mut out = Vec::new();
    s.obfuscate(salt, &[0; 40], &mut out);
    assert_eq!(&out[..8], &salt);
    assert_eq!(&out[8..40], &mask[..]);
    assert_eq!(&out[40..], &mask[..8], "the mask repeats");
    s.deobfuscate_in_place(&mut out).unwrap();
    assert_eq!(&out[8..], &[0; 40]);
    assert_eq!(
        s.deobfuscate_in_place(&mut [0; 8]),
        Err(Hysteria2Error::ShortObfuscated(8))
    );
    assert_eq!(format!("{s:?}"), "Salamander(<key>)", "the key never shows");
}

#[test]
fn rx_values_read_as_rates_or_auto() {
    assert_eq!(Rx::parse("0"), Ok(Rx::Rate(0)));
    assert_eq!(Rx::parse("12500000"), Ok(Rx::Rate(12_500_000)));
    assert_eq!(Rx::parse("auto"), Ok(Rx::Auto));
    assert_eq!(Rx::parse("-1"), Err(Hysteria2Error::Rx("-1".into())));
    assert_eq!(Rx::Auto.to_string(), "auto");
}

proptest! {
    #[test]
    fn varints_round_trip(v in 0u64..(1 << 62)) {
        let mut out = Vec::new();
        write_varint(v, &mut out);
        prop_assert_eq!(out.len(), varint_len(v));
        prop_assert_eq!(read_varint(&out), Some((v, out.len())));
    }

    #[test]
    fn any_bytes_parse_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = TcpRequest::parse(&bytes);
        let _ = TcpResponse::parse(&bytes);
        if let Ok(m) = UdpMessage::parse(&bytes) {
            let mut again = Vec::new();
            m.encode(&mut again);
            prop_assert_eq!(UdpMessage::parse(&again).unwrap(), m);
        }
        let mut copy = bytes.clone();
        let _ = Salamander::new(b"k").deobfuscate_in_place(&mut copy);
    }

    #[test]
    fn any_packet_fragments_and_reassembles(
        len in 0usize..20_000,
        max in 60usize..1500,
    ) {
        let payload: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
        let to = Address::domain("x.example", 1).unwrap();
        match fragment(3, 9, &to, &payload, max) {
            Ok(datagrams) => {
                let mut d = Defragger::default();
                let mut got = None;
                for dg in &datagrams {
                    prop_assert!(dg.len() <= max);
                    got = d.feed(&UdpMessage::parse(dg).unwrap());
                }
                prop_assert_eq!(got, Some(payload));
            }
            Err(Hysteria2Error::TooLarge { .. }) => {}
            Err(e) => prop_assert!(false, "{}", e),
        }
    }
}
