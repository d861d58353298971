//! One server of a subscription, as a client app sees it.
//!
//! The panel builds an [`Entry`] for every route a user's subscription carries;
//! [`crate::share`] writes it as a share link and reads it back, and
//! [`crate::singbox`] turns a list of them into a sing-box client config. The client
//! reads exactly what the panel writes because both go through these types.
//!
//! Secrets (a VLESS UUID, a Trojan or Shadowsocks password) are in the fields as
//! plain strings, since links and configs must carry them, but `Debug` prints
//! `<redacted>` in their place so they stay out of logs.

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::Digest;

#[path = "entry_hysteria2.rs"]
pub mod hysteria2;
#[cfg(test)]
#[path = "hysteria2_formats_tests.rs"]
mod hysteria2_formats_tests;
#[path = "entry_xhttp.rs"]
pub mod xhttp;

/// What `Debug` prints in place of a secret.
pub const REDACTED: &str = "<redacted>";

/// One server entry: where to connect and how.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The name the client app shows (may hold any Unicode, emoji included).
    pub name: String,
    /// The server's host name or IP address (an IPv6 address without brackets).
    pub server: String,
    /// The server's port (1-65535; links cannot carry 0).
    pub port: u16,
    /// The proxy protocol and its credentials.
    pub protocol: EntryProtocol,
    /// How the protocol's stream is carried.
    pub transport: EntryTransport,
    /// TLS around the transport; `None` for none.
    pub tls: Option<EntryTls>,
    /// The route this entry stands for, when the panel says ([`is_route_id`]): the
    /// same on every fetch whichever inbound the route's balancer chose, so a client
    /// keys the server's identity on it and a rebalance is an address change. Other
    /// apps never see it as anything but an ignored parameter or key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
}

/// The longest route id carried, in bytes (a DNS label's length, so it fits the
/// sing-box carrier, a domain name).
pub const MAX_ROUTE_ID: usize = 63;

/// Whether `id` may be carried as an entry's route: 1 to [`MAX_ROUTE_ID`] ASCII
/// letters, digits and `-` (a DNS label). Writers leave out anything else, readers
/// ignore it: a route id is a hint for a client's memory, never where to connect.
pub fn is_route_id(id: &str) -> bool {
    (1..=MAX_ROUTE_ID).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// The proxy protocol of an [`Entry`], with the user's credentials.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum EntryProtocol {
    /// VLESS with the user's UUID (`8-4-4-4-12` hex text) and an optional flow
    /// (`xtls-rprx-vision`).
    Vless {
        /// The user's UUID.
        uuid: String,
        /// The flow, when the inbound uses one.
        flow: Option<String>,
    },
    /// Trojan with the user's password.
    Trojan {
        /// The user's password.
        password: String,
    },
    /// Shadowsocks. It brings its own encryption and runs over plain TCP (and UDP):
    /// an entry of this protocol has [`EntryTransport::Tcp`] and no TLS, and links
    /// and sing-box configs carry neither for it.
    Shadowsocks {
        /// The method, e.g. `2022-blake3-aes-128-gcm`.
        method: String,
        /// The password; for Shadowsocks 2022 with several users on one inbound
        /// (SIP022 identity headers), `"<server key>:<user key>"`, both base64.
        password: String,
    },
    /// Hysteria 2: QUIC on the entry's UDP port under the entry's TLS (always
    /// present: its server name and pin), HTTP/3 authentication with the user's
    /// password. Its transport is [`EntryTransport::Tcp`] (none of its own).
    Hysteria2 {
        /// The user's password.
        password: String,
        /// Salamander obfuscation's password, when the inbound obfuscates.
        obfs_password: Option<String>,
        /// The port range the server also accepts on (port hopping), `first-last`.
        ports: Option<String>,
        /// The upload bandwidth the client declares, Mbit/s (Brutal); none: BBR.
        up_mbps: Option<u32>,
        /// The download bandwidth the client declares, Mbit/s.
        down_mbps: Option<u32>,
        /// How often the client hops to another port of `ports`, in seconds;
        /// none: the client's default (Hysteria's 30 s). Only with `ports`.
        /// Clients take at least
        /// [`hysteria2::MIN_HOP_INTERVAL_SECS`] (the official client refuses less,
        /// mihomo raises it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hop_interval: Option<u32>,
    },
}

impl fmt::Debug for EntryProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Vless { flow, .. } => f
                .debug_struct("Vless")
                .field("uuid", &REDACTED)
                .field("flow", flow)
                .finish(),
            Self::Trojan { .. } => f
                .debug_struct("Trojan")
                .field("password", &REDACTED)
                .finish(),
            Self::Shadowsocks { method, .. } => f
                .debug_struct("Shadowsocks")
                .field("method", method)
                .field("password", &REDACTED)
                .finish(),
            Self::Hysteria2 {
                obfs_password,
                ports,
                up_mbps,
                down_mbps,
                hop_interval,
                ..
            } => f
                .debug_struct("Hysteria2")
                .field("password", &REDACTED)
                .field("obfs_password", &obfs_password.as_ref().map(|_| REDACTED))
                .field("ports", ports)
                .field("up_mbps", up_mbps)
                .field("down_mbps", down_mbps)
                .field("hop_interval", hop_interval)
                .finish(),
        }
    }
}

/// How an [`Entry`]'s stream is carried.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum EntryTransport {
    /// Plain TCP.
    Tcp,
    /// WebSocket.
    Ws {
        /// The request path, e.g. `/ws`; Xray's early-data form `/ws?ed=2048` is
        /// kept as it is (sing-box configs turn it into `max_early_data`).
        path: String,
        /// The `Host` header, when it differs from the TLS name or server.
        host: Option<String>,
    },
    /// HTTPUpgrade: an HTTP/1.1 upgrade, then the bytes as they are.
    HttpUpgrade {
        /// The request path, e.g. `/up`.
        path: String,
        /// The `Host` header, when it differs from the TLS name or server.
        host: Option<String>,
    },
    /// gRPC ("gun"): streams as HTTP/2 requests to `/{service_name}/Tun`.
    Grpc {
        /// The gRPC service name.
        service_name: String,
        /// The HTTP/2 `:authority`, when it differs from the TLS name or server.
        authority: Option<String>,
        /// Xray's multi mode (`/{service_name}/TunMulti`), for the apps that speak it;
        /// the others speak plain gun, which every node accepts as well.
        multi: bool,
    },
    /// XHTTP (Xray's SplitHTTP successor): the stream as ordinary HTTP requests under
    /// `path` ([`crate::xhttp`]). Only Xray-based apps run it (sing-box and mihomo
    /// configs never carry it).
    Xhttp {
        /// The path requests go under, e.g. `/xh`.
        path: String,
        /// The `Host` header, when it differs from the TLS name or server.
        host: Option<String>,
        /// How the upload travels.
        mode: crate::xhttp::Mode,
        /// Padding, upload limits and XMUX when not Xray's defaults.
        extra: Option<xhttp::XhttpExtra>,
    },
}

/// TLS settings of an [`Entry`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntryTls {
    /// The name sent as SNI and verified; `None` uses the server's host.
    pub server_name: Option<String>,
    /// Skip certificate verification entirely (only for tests and operators who
    /// chose it; prefer [`Self::certificate_pem`]).
    #[serde(default)]
    pub insecure: bool,
    /// A pinned self-signed certificate (PEM) to trust instead of the system roots.
    /// Share links cannot carry it; sing-box configs can.
    #[serde(default)]
    pub certificate_pem: Option<String>,
    /// A pinned certificate known only by the SHA-256 of its DER bytes, what a Clash
    /// config's `fingerprint` holds: the certificate to trust instead of the system
    /// roots when there is no [`Self::certificate_pem`] (which, when set, is the pin
    /// and makes this ignored). Clash configs carry it; share links, sing-box and
    /// Xray configs cannot (they verify as usual, which a self-signed certificate
    /// fails: they fail closed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_sha256: Option<[u8; 32]>,
    /// The ALPN protocols to offer, in order; empty for the client's default.
    #[serde(default)]
    pub alpn: Vec<String>,
    /// The browser whose TLS ClientHello the client imitates (uTLS: `chrome`,
    /// `firefox`, `safari`, ...); `None` for the client's own. Links write it as `fp`,
    /// sing-box as `utls.fingerprint`, Clash as `client-fingerprint`, Xray as
    /// `fingerprint`. REALITY needs one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// REALITY in place of ordinary TLS: the server proves itself with the key behind
    /// [`EntryReality::public_key`], not with a certificate, and
    /// [`Self::server_name`] is the borrowed site's name. `None` for TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reality: Option<EntryReality>,
}

/// What a REALITY client needs besides the SNI and the fingerprint.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntryReality {
    /// The server's X25519 public key, base64url without padding (Xray's
    /// `publicKey`, a link's `pbk`).
    pub public_key: String,
    /// The short id the client presents: 0 to 16 hex digits (Xray's `shortId`, a
    /// link's `sid`); `""` is a valid id.
    #[serde(default)]
    pub short_id: String,
}

impl EntryTls {
    /// The SHA-256 of the pinned certificate's DER bytes (of the first `CERTIFICATE`
    /// block of [`Self::certificate_pem`], else [`Self::certificate_sha256`]), the
    /// form certificate pins take in Clash configs. `None` without a pinned
    /// certificate or when the PEM is not PEM; a config then pins nothing and
    /// verifies as usual, which a self-signed certificate fails: it fails closed.
    pub fn pin_sha256(&self) -> Option<[u8; 32]> {
        const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
        const END: &str = "-----END CERTIFICATE-----";
        let Some(pem) = self.certificate_pem.as_deref() else {
            return self.certificate_sha256;
        };
        let body = &pem[pem.find(BEGIN)? + BEGIN.len()..];
        let body = &body[..body.find(END)?];
        let text: Vec<u8> = body.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        let der = crate::base64::decode_lenient(&text)?;
        Some(sha2::Sha256::digest(&der).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_redacts_credentials() {
        let protocols = [
            EntryProtocol::Vless {
                uuid: "b831381d-6324-4d53-ad4f-8cda48b30811".into(),
                flow: Some("xtls-rprx-vision".into()),
            },
            EntryProtocol::Trojan {
                password: "hunter2-trojan".into(),
            },
            EntryProtocol::Shadowsocks {
                method: "2022-blake3-aes-128-gcm".into(),
                password: "c2VydmVy:dXNlcg==".into(),
            },
        ];
        for protocol in protocols {
            let entry = Entry {
                name: "n".into(),
                server: "example.com".into(),
                port: 443,
                protocol,
                transport: EntryTransport::Tcp,
                tls: None,
                route: None,
            };
            let text = format!("{entry:?}");
            assert!(text.contains(REDACTED), "{text}");
            for secret in ["b831381d", "hunter2", "c2VydmVy"] {
                assert!(!text.contains(secret), "{text}");
            }
        }
    }

    #[test]
    fn hysteria2_debug_shows_the_hop_interval_not_the_passwords() {
        let protocol = EntryProtocol::Hysteria2 {
            password: "hunter2-hy2".into(),
            obfs_password: Some("salamander-salt".into()),
            ports: Some("20000-20009".into()),
            up_mbps: None,
            down_mbps: Some(50),
            hop_interval: Some(15),
        };
        assert_eq!(
            format!("{protocol:?}"),
            "Hysteria2 { password: \"<redacted>\", obfs_password: Some(\"<redacted>\"), \
             ports: Some(\"20000-20009\"), up_mbps: None, down_mbps: Some(50), \
             hop_interval: Some(15) }"
        );
        // Entries written before the interval existed read as none.
        let old = r#"{"type":"hysteria2","password":"p","obfs_password":null,"ports":null,"up_mbps":null,"down_mbps":null}"#;
        let read: EntryProtocol = serde_json::from_str(old).unwrap();
        assert!(matches!(
            read,
            EntryProtocol::Hysteria2 {
                hop_interval: None,
                ..
            }
        ));
        assert_eq!(serde_json::to_string(&read).unwrap(), old);
    }

    #[test]
    fn serde_round_trip() {
        let entry = Entry {
            name: "Tokyo 🇯🇵".into(),
            server: "2001:db8::1".into(),
            port: 8443,
            protocol: EntryProtocol::Vless {
                uuid: "b831381d-6324-4d53-ad4f-8cda48b30811".into(),
                flow: None,
            },
            transport: EntryTransport::Ws {
                path: "/v".into(),
                host: Some("cdn.example.com".into()),
            },
            tls: Some(EntryTls {
                server_name: Some("node.example.com".into()),
                ..EntryTls::default()
            }),
            route: Some("7".into()),
        };
        let text = serde_json::to_string(&entry).unwrap();
        assert_eq!(serde_json::from_str::<Entry>(&text).unwrap(), entry);
    }
}
