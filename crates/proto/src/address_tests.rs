use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

use proptest::prelude::*;

use super::*;
use crate::testing;

fn v4(a: [u8; 4], port: u16) -> Address {
    Address::Ip(SocketAddr::from((Ipv4Addr::from(a), port)))
}

#[test]
fn socks_form_vectors() {
    let cases: Vec<(Address, Vec<u8>)> = vec![
        (v4([127, 0, 0, 1], 80), vec![1, 127, 0, 0, 1, 0, 80]),
        (
            Address::Ip(SocketAddr::from((Ipv6Addr::LOCALHOST, 8080))),
            [&[4][..], &[0; 15], &[1, 0x1f, 0x90]].concat(),
        ),
        (
            Address::domain("example.com", 443).unwrap(),
            [&[3, 11][..], b"example.com", &[1, 187]].concat(),
        ),
    ];
    for (addr, wire) in cases {
        let mut out = Vec::new();
        addr.encode_socks(&mut out);
        assert_eq!(out, wire);
        assert_eq!(addr.wire_len(), wire.len());
        assert_eq!(Address::parse_socks(&wire), Ok(Some((addr, wire.len()))));
    }
}

#[test]
fn vless_form_vectors() {
    let wire = [0, 80, 1, 127, 0, 0, 1];
    assert_eq!(
        Address::parse_vless(&wire),
        Ok(Some((v4([127, 0, 0, 1], 80), 7)))
    );
    let wire = [&[1, 187, 2, 11][..], b"example.com"].concat();
    let addr = Address::domain("example.com", 443).unwrap();
    assert_eq!(
        Address::parse_vless(&wire),
        Ok(Some((addr.clone(), wire.len())))
    );
    let mut out = Vec::new();
    addr.encode_vless(&mut out);
    assert_eq!(out, wire);
    let wire = [&[0, 53, 3][..], &[0; 15], &[1]].concat();
    let want = Address::Ip(SocketAddr::from((Ipv6Addr::LOCALHOST, 53)));
    assert_eq!(Address::parse_vless(&wire), Ok(Some((want, 19))));
}

#[test]
fn bad_addresses_are_named() {
    assert_eq!(
        Address::parse_socks(&[2, 0]),
        Err(AddressError::UnknownType(2))
    );
    assert_eq!(
        Address::parse_vless(&[0, 80, 4]),
        Err(AddressError::UnknownType(4))
    );
    assert_eq!(
        Address::parse_socks(&[3, 0, 0, 80]),
        Err(AddressError::EmptyDomain)
    );
    assert_eq!(
        Address::parse_socks(&[3, 5, b'a', 0, b'b']),
        Err(AddressError::InvalidDomainByte(0))
    );
    assert_eq!(Address::domain("", 1), Err(AddressError::EmptyDomain));
    assert_eq!(
        Address::domain("a b", 1),
        Err(AddressError::InvalidDomainByte(b' '))
    );
    assert_eq!(
        Address::domain("é", 1),
        Err(AddressError::InvalidDomainByte(0xc3))
    );
    let long = "a".repeat(256);
    assert_eq!(
        Address::domain(&long, 1),
        Err(AddressError::DomainTooLong(256))
    );
    // A colon is allowed while the name streams in, but not in a finished name.
    assert_eq!(
        Address::parse_socks(&[3, 3, b'a', b':', b'b', 0, 1]),
        Err(AddressError::InvalidDomainByte(b':'))
    );
}

#[test]
fn ip_literal_domains_become_ips() {
    assert_eq!(Address::domain("10.0.0.1", 5), Ok(v4([10, 0, 0, 1], 5)));
    let v6 = Address::Ip(SocketAddr::from((Ipv6Addr::LOCALHOST, 5)));
    assert_eq!(Address::domain("[::1]", 5), Ok(v6.clone()));
    let wire = [&[3, 3][..], b"::1", &[0, 5]].concat();
    assert_eq!(Address::parse_socks(&wire), Ok(Some((v6, 7))));
}

#[test]
fn display() {
    assert_eq!(v4([1, 2, 3, 4], 80).to_string(), "1.2.3.4:80");
    let v6 = Address::Ip(SocketAddr::from((Ipv6Addr::LOCALHOST, 443)));
    assert_eq!(v6.to_string(), "[::1]:443");
    assert_eq!(
        Address::domain("example.com", 443).unwrap().to_string(),
        "example.com:443"
    );
}

proptest! {
    #[test]
    fn round_trips_and_prefixes(addr in testing::address()) {
        let mut socks = Vec::new();
        addr.encode_socks(&mut socks);
        prop_assert_eq!(Address::parse_socks(&socks), Ok(Some((addr.clone(), socks.len()))));
        testing::assert_prefixes_incomplete(&socks, Address::parse_socks);
        let mut vless = Vec::new();
        addr.encode_vless(&mut vless);
        prop_assert_eq!(Address::parse_vless(&vless), Ok(Some((addr.clone(), vless.len()))));
        testing::assert_prefixes_incomplete(&vless, Address::parse_vless);
    }

    #[test]
    fn arbitrary_bytes_never_panic(buf in testing::bytes(300)) {
        if let Ok(Some((_, used))) = Address::parse_socks(&buf) {
            prop_assert!(used <= buf.len());
        }
        if let Ok(Some((_, used))) = Address::parse_vless(&buf) {
            prop_assert!(used <= buf.len());
        }
    }
}
