//! Strategies and checks the codecs' property tests share.

use std::net::{IpAddr, SocketAddr};

use proptest::prelude::*;

use crate::Address;

/// Any address a parser can return: IPv4, IPv6, or a hostname that is no IP literal.
pub(crate) fn address() -> impl Strategy<Value = Address> {
    prop_oneof![
        (any::<[u8; 4]>(), any::<u16>())
            .prop_map(|(ip, port)| Address::Ip(SocketAddr::new(IpAddr::from(ip), port))),
        (any::<[u8; 16]>(), any::<u16>())
            .prop_map(|(ip, port)| Address::Ip(SocketAddr::new(IpAddr::from(ip), port))),
        ("[a-z][a-zA-Z0-9._-]{0,60}", any::<u16>())
            .prop_map(|(name, port)| Address::Domain(name, port)),
        ("[a-z]{255}", any::<u16>()).prop_map(|(name, port)| Address::Domain(name, port)),
    ]
}

/// Arbitrary bytes, short and long.
pub(crate) fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

/// Checks that every strict prefix of `message` gives `Ok(None)`.
pub(crate) fn assert_prefixes_incomplete<T: std::fmt::Debug, E: std::fmt::Debug>(
    message: &[u8],
    parse: impl Fn(&[u8]) -> Result<Option<T>, E>,
) {
    for end in 0..message.len() {
        let got = parse(&message[..end]);
        assert!(
            matches!(got, Ok(None)),
            "prefix of {end} of {} bytes gave {got:?}",
            message.len()
        );
    }
}
