use std::net::{Ipv4Addr, SocketAddr};

use proptest::prelude::*;

use super::*;
use crate::testing;

#[test]
fn greeting_and_selection() {
    // curl --socks5-hostname with credentials offers no-auth and username/password.
    let (greeting, used) = Greeting::parse(&[5, 2, 0, 2, 0xaa]).unwrap().unwrap();
    assert_eq!((greeting.methods.as_slice(), used), (&[0, 2][..], 4));
    assert_eq!(greeting.select(true), METHOD_USER_PASS);
    assert_eq!(greeting.select(false), METHOD_NO_AUTH);
    let only_none = Greeting { methods: vec![0] };
    assert_eq!(only_none.select(true), METHOD_NONE_ACCEPTABLE);
    let mut out = Vec::new();
    MethodSelection(METHOD_USER_PASS).encode(&mut out);
    assert_eq!(out, [5, 2]);
    assert_eq!(Greeting::parse(&[4, 1, 0]), Err(Socks5Error::BadVersion(4)));
    assert_eq!(Greeting::parse(&[5, 0]), Err(Socks5Error::NoMethods));
    assert_eq!(Greeting::parse(&[5, 3, 0]), Ok(None));
}

#[test]
fn credentials() {
    let wire = [1, 4, b'u', b's', b'e', b'r', 4, b'p', b'a', b's', b's'];
    let (creds, used) = Credentials::parse(&wire).unwrap().unwrap();
    assert_eq!(used, wire.len());
    assert_eq!(
        (&creds.username[..], &creds.password[..]),
        (&b"user"[..], &b"pass"[..])
    );
    assert!(!format!("{creds:?}").contains("pass\""));
    let mut out = Vec::new();
    creds.encode(&mut out);
    assert_eq!(out, wire);
    out.clear();
    AuthStatus { accepted: true }.encode(&mut out);
    AuthStatus { accepted: false }.encode(&mut out);
    assert_eq!(out, [1, 0, 1, 1]);
    assert_eq!(
        Credentials::parse(&[5, 1]),
        Err(Socks5Error::BadAuthVersion(5))
    );
}

#[test]
fn requests() {
    let wire = [&[5, 1, 0, 3, 11][..], b"example.com", &[0, 80]].concat();
    let (req, used) = Request::parse(&wire).unwrap().unwrap();
    assert_eq!(req.command, Command::Connect);
    assert_eq!(req.destination, Address::domain("example.com", 80).unwrap());
    assert_eq!(used, wire.len());
    let (req, _) = Request::parse(&[5, 3, 0, 1, 0, 0, 0, 0, 0, 0])
        .unwrap()
        .unwrap();
    assert_eq!(req.command, Command::UdpAssociate);
    let bind = Request::parse(&[5, 2, 0, 1]);
    assert_eq!(bind, Err(Socks5Error::BindUnsupported));
    assert_eq!(
        bind.unwrap_err().reply_code(),
        Some(ReplyCode::CommandNotSupported)
    );
    assert_eq!(Request::parse(&[5, 9]), Err(Socks5Error::UnknownCommand(9)));
    let bad_type = Request::parse(&[5, 1, 0, 2]).unwrap_err();
    assert_eq!(bad_type, Socks5Error::Address(AddressError::UnknownType(2)));
    assert_eq!(
        bad_type.reply_code(),
        Some(ReplyCode::AddressTypeNotSupported)
    );
    assert_eq!(Request::parse(&[4, 1]), Err(Socks5Error::BadVersion(4)));
}

#[test]
fn replies() {
    let bound = Address::Ip(SocketAddr::from((Ipv4Addr::new(127, 0, 0, 1), 1080)));
    let mut out = Vec::new();
    Reply {
        code: ReplyCode::Succeeded,
        bound: bound.clone(),
    }
    .encode(&mut out);
    assert_eq!(out, [5, 0, 0, 1, 127, 0, 0, 1, 0x04, 0x38]);
    out.clear();
    Reply {
        code: ReplyCode::CommandNotSupported,
        bound,
    }
    .encode(&mut out);
    assert_eq!(out[1], 7);
}

#[test]
fn udp_datagrams() {
    let wire = [0, 0, 0, 1, 8, 8, 8, 8, 0, 53, b'q'];
    let packet = UdpPacket::parse(&wire).unwrap();
    assert_eq!(packet.address, Address::domain("8.8.8.8", 53).unwrap());
    assert_eq!(packet.payload, b"q");
    let mut out = Vec::new();
    packet.encode(&mut out);
    assert_eq!(out, wire);
    assert_eq!(
        UdpPacket::parse(&[0, 0, 1, 1]),
        Err(Socks5Error::Fragmented(1))
    );
    assert_eq!(
        UdpPacket::parse(&[0, 0]),
        Err(Socks5Error::TruncatedDatagram)
    );
    assert_eq!(
        UdpPacket::parse(&[0, 0, 0, 1, 8]),
        Err(Socks5Error::TruncatedDatagram)
    );
}

proptest! {
    #[test]
    fn round_trips_and_prefixes(
        methods in proptest::collection::vec(any::<u8>(), 1..255),
        username in testing::bytes(255),
        password in testing::bytes(255),
        udp in any::<bool>(),
        destination in testing::address(),
    ) {
        let greeting = Greeting { methods };
        let mut wire = Vec::new();
        greeting.encode(&mut wire);
        prop_assert_eq!(Greeting::parse(&wire), Ok(Some((greeting, wire.len()))));
        testing::assert_prefixes_incomplete(&wire, Greeting::parse);

        let creds = Credentials { username, password };
        let mut wire = Vec::new();
        creds.encode(&mut wire);
        prop_assert_eq!(Credentials::parse(&wire), Ok(Some((creds, wire.len()))));
        testing::assert_prefixes_incomplete(&wire, Credentials::parse);

        let command = if udp { Command::UdpAssociate } else { Command::Connect };
        let req = Request { command, destination: destination.clone() };
        let mut wire = Vec::new();
        req.encode(&mut wire);
        prop_assert_eq!(Request::parse(&wire), Ok(Some((req, wire.len()))));
        testing::assert_prefixes_incomplete(&wire, Request::parse);

        let packet = UdpPacket { address: destination, payload: b"data" };
        let mut wire = Vec::new();
        packet.encode(&mut wire);
        prop_assert_eq!(UdpPacket::parse(&wire), Ok(packet));
    }

    #[test]
    fn arbitrary_bytes_never_panic(buf in testing::bytes(600)) {
        let _ = Greeting::parse(&buf);
        let _ = Credentials::parse(&buf);
        let _ = Request::parse(&buf);
        let _ = UdpPacket::parse(&buf);
    }
}
