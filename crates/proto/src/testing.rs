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

/// Entries of every shape, for the client-config tests.
pub(crate) mod entries {
    use serde_json::Value;

    use crate::entry::{Entry, EntryProtocol, EntryReality, EntryTls, EntryTransport};

    /// `base` with the fields of the object `extra` set on it.
    pub(crate) fn merged(mut base: Value, extra: Value) -> Value {
        for (k, x) in extra.as_object().expect("an object") {
            base[k] = x.clone();
        }
        base
    }

    pub(crate) const UUID: &str = "b831381d-6324-4d53-ad4f-8cda48b30811";
    pub(crate) const PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

    pub(crate) fn entry(
        name: &str,
        protocol: EntryProtocol,
        transport: EntryTransport,
        tls: Option<EntryTls>,
    ) -> Entry {
        Entry {
            name: name.into(),
            server: "node.example.com".into(),
            port: 443,
            protocol,
            transport,
            tls,
            route: None,
        }
    }

    pub(crate) fn vless() -> EntryProtocol {
        EntryProtocol::Vless {
            uuid: UUID.into(),
            flow: None,
        }
    }

    pub(crate) fn trojan() -> EntryProtocol {
        EntryProtocol::Trojan {
            password: "pw".into(),
        }
    }

    pub(crate) fn shadowsocks() -> EntryProtocol {
        EntryProtocol::Shadowsocks {
            method: "2022-blake3-aes-128-gcm".into(),
            password: "c2VydmVy:dXNlcg==".into(),
        }
    }

    pub(crate) fn ws() -> EntryTransport {
        EntryTransport::Ws {
            path: "/ws".into(),
            host: Some("cdn.example.com".into()),
        }
    }

    /// HTTPUpgrade on `/up` with a `Host` of its own.
    pub(crate) fn httpupgrade() -> EntryTransport {
        EntryTransport::HttpUpgrade {
            path: "/up".into(),
            host: Some("cdn.example.com".into()),
        }
    }

    /// gRPC ("gun") with the service name `tun`, no authority of its own.
    pub(crate) fn grpc() -> EntryTransport {
        EntryTransport::Grpc {
            service_name: "tun".into(),
            authority: None,
            multi: false,
        }
    }

    /// XHTTP on `/xh` in `auto` mode, Xray's defaults otherwise.
    pub(crate) fn xhttp() -> EntryTransport {
        EntryTransport::Xhttp {
            path: "/xh".into(),
            host: None,
            mode: crate::xhttp::Mode::Auto,
            extra: None,
        }
    }

    /// TLS with a name, ALPN and a pinned certificate ([`PEM`]).
    pub(crate) fn tls() -> Option<EntryTls> {
        Some(EntryTls {
            server_name: Some("sni.example.com".into()),
            insecure: false,
            certificate_pem: Some(PEM.into()),
            certificate_sha256: None,
            alpn: vec!["h2".into(), "http/1.1".into()],
            ..EntryTls::default()
        })
    }

    /// A REALITY server's public key: 32 bytes (SHA-256 of "switchyard"), base64url.
    pub(crate) const PBK: &str = "PoZajx_KjTmvtUinsv-XAZ2fEqOvCoRtTvg7WEtZ_Q0";

    /// VLESS with the Vision flow over REALITY: the borrowed site's name, Chrome's
    /// fingerprint, the key and a short id.
    pub(crate) fn vision_over_reality() -> Entry {
        entry(
            "r",
            EntryProtocol::Vless {
                uuid: UUID.into(),
                flow: Some("xtls-rprx-vision".into()),
            },
            EntryTransport::Tcp,
            Some(EntryTls {
                server_name: Some("www.example.com".into()),
                fingerprint: Some("chrome".into()),
                reality: Some(EntryReality {
                    public_key: PBK.into(),
                    short_id: "6ba85179e30d4fc2".into(),
                }),
                ..EntryTls::default()
            }),
        )
    }

    /// VLESS with the Vision flow over WebSocket with early data in the path, and TLS
    /// without verification.
    pub(crate) fn vision_over_insecure_ws() -> Entry {
        entry(
            "t",
            EntryProtocol::Vless {
                uuid: UUID.into(),
                flow: Some("xtls-rprx-vision".into()),
            },
            EntryTransport::Ws {
                path: "/v?ed=2048".into(),
                host: None,
            },
            Some(EntryTls {
                insecure: true,
                ..EntryTls::default()
            }),
        )
    }
}
