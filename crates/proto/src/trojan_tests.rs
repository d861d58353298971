use proptest::prelude::*;

use super::*;
use crate::testing;

const PASSWORD_HASH: &[u8; 56] = b"d63dc919e201d7bc4c825630d2cf25fdc93d4b2f0d46706d29038d01";

#[test]
fn password_hash_is_hex_sha224() {
    assert_eq!(&password_hash("password"), PASSWORD_HASH);
    assert_eq!(
        &password_hash(""),
        b"d14a028c2a3a2bc9476102bb288234c415a2b01f828ea62ac5b3e42f"
    );
}

#[test]
fn connect_request_as_sing_box_writes_it() {
    // sing-box ClientHandshake: key, CRLF, 1, SOCKS address, CRLF, payload.
    let wire = [
        &PASSWORD_HASH[..],
        b"\r\n\x01\x03\x0bexample.com\x01\xbb\r\n",
        b"GET / HTTP/1.1",
    ]
    .concat();
    let (req, used) = Request::parse(&wire).unwrap().unwrap();
    assert_eq!(
        req,
        Request {
            hash: *PASSWORD_HASH,
            command: Command::Connect,
            destination: Address::domain("example.com", 443).unwrap(),
        }
    );
    assert_eq!(&wire[used..], b"GET / HTTP/1.1");
    let mut out = Vec::new();
    req.encode(&mut out);
    assert_eq!(out, &wire[..used]);
}

#[test]
fn udp_associate_then_packets() {
    // sing-box ClientHandshakePacket: the request, then the first packet at once.
    let wire = [
        &PASSWORD_HASH[..],
        b"\r\n\x03\x01\x08\x08\x08\x08\x00\x35\r\n",
        b"\x01\x08\x08\x08\x08\x00\x35\x00\x03\r\nabc",
    ]
    .concat();
    let (req, used) = Request::parse(&wire).unwrap().unwrap();
    assert_eq!(req.command, Command::UdpAssociate);
    let (packet, n) = UdpPacket::parse(&wire[used..]).unwrap().unwrap();
    assert_eq!(packet.address, Address::domain("8.8.8.8", 53).unwrap());
    assert_eq!(packet.payload, b"abc");
    assert_eq!(used + n, wire.len());
    let mut out = Vec::new();
    packet.encode(&mut out).unwrap();
    assert_eq!(out, &wire[used..]);
}

#[test]
fn other_protocols_are_not_trojan_at_once() {
    assert_eq!(Request::parse(b"G"), Err(TrojanError::NotTrojan));
    assert_eq!(
        Request::parse(b"GET / HTTP/1.1\r\n"),
        Err(TrojanError::NotTrojan)
    );
    assert_eq!(
        Request::parse(&[0x16, 0x03, 0x01]),
        Err(TrojanError::NotTrojan)
    );
    let no_crlf = [&PASSWORD_HASH[..], b"\r\r"].concat();
    assert_eq!(Request::parse(&no_crlf), Err(TrojanError::NotTrojan));
    assert_eq!(Request::parse(&PASSWORD_HASH[..10]), Ok(None));
    assert_eq!(Request::parse(b""), Ok(None));
}

#[test]
fn bad_requests_are_named() {
    let wire = [&PASSWORD_HASH[..], b"\r\n\x7f"].concat();
    assert_eq!(
        Request::parse(&wire),
        Err(TrojanError::UnsupportedCommand(0x7f))
    );
    let wire = [&PASSWORD_HASH[..], b"\r\n\x01\x05"].concat();
    assert_eq!(
        Request::parse(&wire),
        Err(TrojanError::Address(AddressError::UnknownType(5)))
    );
    let wire = [
        &PASSWORD_HASH[..],
        b"\r\n\x01\x01\x01\x01\x01\x01\x00\x50\n",
    ]
    .concat();
    assert!(matches!(
        Request::parse(&wire),
        Err(TrojanError::MissingCrlf(_))
    ));
    let packet = b"\x01\x08\x08\x08\x08\x00\x35\x00\x03\rX";
    assert!(matches!(
        UdpPacket::parse(packet),
        Err(TrojanError::MissingCrlf(_))
    ));
}

proptest! {
    #[test]
    fn request_round_trip_and_prefixes(
        password in ".{0,20}",
        udp in any::<bool>(),
        destination in testing::address(),
    ) {
        let command = if udp { Command::UdpAssociate } else { Command::Connect };
        let req = Request { hash: password_hash(&password), command, destination };
        let mut wire = Vec::new();
        req.encode(&mut wire);
        prop_assert_eq!(Request::parse(&wire), Ok(Some((req, wire.len()))));
        testing::assert_prefixes_incomplete(&wire, Request::parse);
    }

    #[test]
    fn packet_round_trip_and_prefixes(address in testing::address(), payload in testing::bytes(300)) {
        let packet = UdpPacket { address, payload: &payload };
        let mut wire = Vec::new();
        packet.encode(&mut wire).unwrap();
        prop_assert_eq!(UdpPacket::parse(&wire), Ok(Some((packet, wire.len()))));
        testing::assert_prefixes_incomplete(&wire, |b| UdpPacket::parse(b).map(|o| o.map(|(_, n)| n)));
    }

    #[test]
    fn arbitrary_bytes_never_panic(buf in testing::bytes(400)) {
        let _ = Request::parse(&buf);
        let mut hashed = PASSWORD_HASH.to_vec();
        hashed.extend_from_slice(b"\r\n");
        hashed.extend_from_slice(&buf);
        let _ = Request::parse(&hashed);
        if let Ok(Some((_, used))) = UdpPacket::parse(&buf) {
            prop_assert!(used <= buf.len());
        }
    }
}
