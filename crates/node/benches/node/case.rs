//! The cases measured: a protocol, the peer that is both the reference server and
//! the client of both servers, and the target behind the servers; and each side's
//! config for a case.

use serde_json::{Value, json};
use switchyard_testkit::config::{
    shadowsocks_inbound, shadowsocks_outbound, tls_client, tls_server, trojan_inbound,
    trojan_outbound, vless_inbound, vless_outbound,
};
use switchyard_testkit::{TestCert, local};

use crate::Fixture;

/// Credentials, the same for every server.
const UUID: &str = "6f1c3f2e-9a0b-4c5d-8e7f-102132435465";
const TROJAN_PASSWORD: &str = "bench-password";
const SS_METHOD: &str = "2022-blake3-aes-128-gcm";
const SS_SERVER_KEY: &str = "YmVuY2gtc2VydmVyLWtleQ=="; // "bench-server-key"
const SS_USER_KEY: &str = "YmVuY2gtdXNlci1rZXkhIQ=="; // "bench-user-key!!"
const VISION: &str = "xtls-rprx-vision";
/// The gRPC service name on every side.
const GRPC_SERVICE: &str = "bench";
/// The Hysteria 2 user's password.
const HY2_PASSWORD: &str = "bench-hysteria2";
/// The XHTTP path on every side.
const XHTTP_PATH: &str = "/bench";

/// The name REALITY clients send and the TLS 1.3 site ([`crate::target::TlsSite`])
/// has its certificate for.
pub(crate) const SITE_NAME: &str = "target.test";

/// A protocol as both servers serve it and the client speaks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// VLESS on plain TCP, no TLS: nothing of the server's to encrypt either way, so
    /// after the header each server may relay inside the kernel.
    VlessTcp,
    VlessTls,
    TrojanTls,
    Shadowsocks,
    /// VLESS over REALITY with the `xtls-rprx-vision` flow; the REALITY `dest` is the
    /// local TLS 1.3 site.
    VlessRealityVision,
    /// VLESS over gRPC ("gun", service [`GRPC_SERVICE`]) over TLS with ALPN `h2`.
    VlessGrpcTls,
    /// Hysteria 2 over QUIC (UDP), no obfuscation, no declared bandwidth (BBR).
    Hysteria2,
    /// VLESS over XHTTP (path [`XHTTP_PATH`]) in stream-up mode over REALITY: one
    /// long POST up and one long GET down, both on HTTP/2.
    VlessXhttpStreamReality,
    /// VLESS over XHTTP in packet-up mode over REALITY: the GET down, the upload in
    /// numbered POSTs, on HTTP/2.
    VlessXhttpPacketReality,
}

impl Protocol {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::VlessTcp => "VLESS (plain TCP)",
            Self::VlessTls => "VLESS+TLS",
            Self::TrojanTls => "Trojan+TLS",
            Self::Shadowsocks => "SS-2022 aes-128-gcm",
            Self::VlessRealityVision => "VLESS+REALITY+Vision",
            Self::VlessGrpcTls => "VLESS+gRPC+TLS",
            Self::Hysteria2 => "Hysteria 2",
            // "xhttp-stream" and "xhttp-packet" pick them in the case filter.
            Self::VlessXhttpStreamReality => "VLESS+XHTTP-stream-up+REALITY",
            Self::VlessXhttpPacketReality => "VLESS+XHTTP-packet-up+REALITY",
        }
    }

    /// The XHTTP mode of the XHTTP protocols, the same on every side (Xray's server
    /// refuses the other mode when one is set).
    pub(crate) fn xhttp_mode(self) -> Option<&'static str> {
        match self {
            Self::VlessXhttpStreamReality => Some("stream-up"),
            Self::VlessXhttpPacketReality => Some("packet-up"),
            _ => None,
        }
    }

    /// Whether the client and the server speak TLS (whose suite is worth reporting).
    pub(crate) fn tls(self) -> bool {
        !matches!(self, Self::Shadowsocks | Self::VlessTcp)
    }

    /// Whether the servers listen on UDP (QUIC) rather than TCP.
    pub(crate) fn udp(self) -> bool {
        self == Self::Hysteria2
    }
}

/// The other implementation: the reference server, and the client in front of both
/// servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Peer {
    /// sing-box 1.14.4.
    SingBox,
    /// Xray-core 24.11.21, always run as `nobody`.
    Xray,
}

impl Peer {
    pub(crate) const ALL: [Self; 2] = [Self::SingBox, Self::Xray];

    pub(crate) fn side(self) -> Side {
        match self {
            Self::SingBox => Side::SingBox,
            Self::Xray => Side::Xray,
        }
    }
}

/// What the servers carry the load to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Inner {
    /// Plain HTTP: the [`switchyard_testkit::HttpTarget`].
    Http,
    /// HTTPS, TLS 1.3: the bench's client speaks TLS to the [`crate::target::TlsSite`]
    /// through the proxy, so that Vision's direct copy engages.
    Tls13,
}

/// One case: ours and the peer as servers, the peer as the client of both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Case {
    pub(crate) protocol: Protocol,
    pub(crate) peer: Peer,
    pub(crate) inner: Inner,
}

/// Every case, in the order run and reported.
pub(crate) const CASES: [Case; 14] = [
    Case::new(Protocol::VlessTcp, Peer::SingBox, Inner::Http),
    Case::new(Protocol::VlessTcp, Peer::Xray, Inner::Http),
    Case::new(Protocol::VlessTls, Peer::SingBox, Inner::Http),
    Case::new(Protocol::TrojanTls, Peer::SingBox, Inner::Http),
    Case::new(Protocol::Shadowsocks, Peer::SingBox, Inner::Http),
    Case::new(Protocol::VlessTls, Peer::Xray, Inner::Http),
    Case::new(Protocol::VlessRealityVision, Peer::Xray, Inner::Http),
    Case::new(Protocol::VlessTls, Peer::Xray, Inner::Tls13),
    Case::new(Protocol::VlessRealityVision, Peer::Xray, Inner::Tls13),
    Case::new(Protocol::VlessGrpcTls, Peer::SingBox, Inner::Http),
    Case::new(Protocol::VlessGrpcTls, Peer::Xray, Inner::Http),
    Case::new(Protocol::VlessXhttpStreamReality, Peer::Xray, Inner::Http),
    Case::new(Protocol::VlessXhttpPacketReality, Peer::Xray, Inner::Http),
    Case::new(Protocol::Hysteria2, Peer::SingBox, Inner::Http),
];

impl Case {
    pub(crate) const fn new(protocol: Protocol, peer: Peer, inner: Inner) -> Self {
        Self {
            protocol,
            peer,
            inner,
        }
    }

    /// "VLESS+TLS", or "VLESS+TLS (inner TLS 1.3)" for the TLS target: the row's
    /// first column.
    pub(crate) fn label(self) -> String {
        match self.inner {
            Inner::Http => self.protocol.name().to_owned(),
            Inner::Tls13 => format!("{} (inner TLS 1.3)", self.protocol.name()),
        }
    }

    /// "VLESS+TLS / Xray (inner TLS 1.3)": what the log and the case filter see.
    pub(crate) fn name(self) -> String {
        let peer = self.peer.side().name();
        match self.inner {
            Inner::Http => format!("{} / {peer}", self.protocol.name()),
            Inner::Tls13 => format!("{} / {peer} (inner TLS 1.3)", self.protocol.name()),
        }
    }

    /// The Vision cases, which do not fail the whole run: our node may refuse them
    /// in this build (Vision is being built; the rows then say n/a and why), and
    /// Xray 24.11.21's Vision now and then corrupts an inner stream (the repetition is
    /// then measured again, and the report says so).
    pub(crate) fn tolerant(self) -> bool {
        self.protocol == Protocol::VlessRealityVision
    }

    /// The body of our node's `[[inbounds]]` table (without tag and port).
    pub(crate) fn ours_inbound(self, fx: &Fixture) -> String {
        let cert = &fx.cert;
        let tls = format!(
            "security = {{ type = \"tls\", cert = \"{}\", key = \"{}\" }}",
            cert.cert_path().display(),
            cert.key_path().display()
        );
        match self.protocol {
            Protocol::VlessTcp => "protocol = \"vless\"".to_owned(),
            Protocol::VlessTls => format!("protocol = \"vless\"\n{tls}"),
            Protocol::VlessGrpcTls => format!(
                "protocol = \"vless\"\n{tls}\n\
                 transport = {{ type = \"grpc\", service_name = \"{GRPC_SERVICE}\" }}"
            ),
            Protocol::Hysteria2 => format!("protocol = \"hysteria2\"\n{tls}"),
            Protocol::TrojanTls => format!("protocol = \"trojan\"\n{tls}"),
            Protocol::Shadowsocks => format!(
                "protocol = \"shadowsocks\"\nmethod = \"{SS_METHOD}\"\npassword = \"{SS_SERVER_KEY}\""
            ),
            Protocol::VlessRealityVision => format!(
                "protocol = \"vless\"\nflow = \"{VISION}\"\n{}",
                ours_reality(fx)
            ),
            Protocol::VlessXhttpStreamReality | Protocol::VlessXhttpPacketReality => format!(
                "protocol = \"vless\"\n\
                 transport = {{ type = \"xhttp\", path = \"{XHTTP_PATH}\", mode = \"{}\" }}\n{}",
                self.protocol.xhttp_mode().unwrap_or("auto"),
                ours_reality(fx)
            ),
        }
    }

    /// Our node's `[[users]]` table: the one user.
    pub(crate) fn ours_user(self) -> String {
        let ss = match self.protocol {
            Protocol::Shadowsocks => format!("shadowsocks = \"{SS_USER_KEY}\"\n"),
            Protocol::Hysteria2 => format!("hysteria2 = \"{HY2_PASSWORD}\"\n"),
            _ => String::new(),
        };
        format!(
            "[[users]]\nname = \"bench\"\nvless = \"{UUID}\"\ntrojan = \"{TROJAN_PASSWORD}\"\n{ss}"
        )
    }

    /// sing-box's inbound on `port`. Shadowsocks is multi-user (server key plus one
    /// user), as our node's is, so the client's config is the same for both.
    pub(crate) fn sing_box_inbound(self, port: u16, cert: &TestCert) -> Value {
        match self.protocol {
            Protocol::VlessTcp => vless_inbound(port, UUID),
            Protocol::VlessTls => {
                let mut inbound = vless_inbound(port, UUID);
                inbound["tls"] = tls_server(cert);
                inbound
            }
            Protocol::TrojanTls => trojan_inbound(port, TROJAN_PASSWORD, tls_server(cert)),
            Protocol::VlessGrpcTls => {
                let mut inbound = vless_inbound(port, UUID);
                inbound["tls"] = tls_server(cert);
                inbound["tls"]["alpn"] = json!(["h2"]);
                inbound["transport"] = grpc_transport();
                inbound
            }
            Protocol::Hysteria2 => json!({
                "type": "hysteria2", "tag": "in", "listen": "127.0.0.1", "listen_port": port,
                "users": [{ "name": "bench", "password": HY2_PASSWORD }],
                "tls": tls_server(cert),
            }),
            Protocol::Shadowsocks => {
                let mut inbound = shadowsocks_inbound(port, SS_METHOD, SS_SERVER_KEY);
                inbound["users"] = json!([{ "name": "bench", "password": SS_USER_KEY }]);
                inbound
            }
            Protocol::VlessRealityVision
            | Protocol::VlessXhttpStreamReality
            | Protocol::VlessXhttpPacketReality => unreachable!("no sing-box case has REALITY"),
        }
    }

    /// The sing-box client's outbound to a server on `port`.
    pub(crate) fn sing_box_outbound(self, port: u16, cert: &TestCert) -> Value {
        let server = local(port);
        match self.protocol {
            Protocol::VlessTcp => vless_outbound(server, UUID),
            Protocol::VlessTls => {
                let mut out = vless_outbound(server, UUID);
                out["tls"] = tls_client(cert);
                out
            }
            Protocol::TrojanTls => trojan_outbound(server, TROJAN_PASSWORD, tls_client(cert)),
            Protocol::VlessGrpcTls => {
                let mut out = vless_outbound(server, UUID);
                out["tls"] = tls_client(cert);
                out["tls"]["alpn"] = json!(["h2"]);
                out["transport"] = grpc_transport();
                out
            }
            Protocol::Hysteria2 => json!({
                "type": "hysteria2", "tag": "proxy",
                "server": server.ip().to_string(), "server_port": server.port(),
                "password": HY2_PASSWORD,
                "tls": tls_client(cert),
            }),
            Protocol::Shadowsocks => {
                shadowsocks_outbound(server, SS_METHOD, &format!("{SS_SERVER_KEY}:{SS_USER_KEY}"))
            }
            Protocol::VlessRealityVision
            | Protocol::VlessXhttpStreamReality
            | Protocol::VlessXhttpPacketReality => unreachable!("no sing-box case has REALITY"),
        }
    }

    /// The user's `flow` on both Xray ends.
    fn flow(self) -> &'static str {
        match self.protocol {
            Protocol::VlessRealityVision => VISION,
            _ => "",
        }
    }

    /// Xray's server config: the one VLESS inbound on `port` and `freedom` out.
    pub(crate) fn xray_server(self, port: u16, fx: &Fixture) -> Value {
        let stream = match self.protocol {
            Protocol::VlessTcp => json!({ "network": "tcp", "security": "none" }),
            Protocol::VlessGrpcTls => json!({
                "network": "grpc", "security": "tls",
                "grpcSettings": { "serviceName": GRPC_SERVICE },
                "tlsSettings": {
                    "alpn": ["h2"],
                    "certificates": [{
                        "certificate": pem_lines(fx.cert.cert_pem()),
                        "key": pem_lines(fx.cert.key_pem()),
                    }],
                },
            }),
            Protocol::VlessTls => json!({
                "network": "tcp", "security": "tls",
                "tlsSettings": { "certificates": [{
                    "certificate": pem_lines(fx.cert.cert_pem()),
                    "key": pem_lines(fx.cert.key_pem()),
                }]},
            }),
            Protocol::VlessRealityVision => json!({
                "network": "tcp", "security": "reality",
                "realitySettings": xray_reality_server(fx),
            }),
            Protocol::VlessXhttpStreamReality | Protocol::VlessXhttpPacketReality => json!({
                "network": "xhttp", "security": "reality",
                "xhttpSettings": self.xray_xhttp(),
                "realitySettings": xray_reality_server(fx),
            }),
            other => unreachable!("no Xray case has {other:?}"),
        };
        json!({
            "log": xray_log(),
            "inbounds": [{
                "tag": "bench", "protocol": "vless", "listen": "127.0.0.1", "port": port,
                "settings": {
                    "clients": [{ "id": UUID, "flow": self.flow() }],
                    "decryption": "none",
                },
                "streamSettings": stream,
            }],
            "outbounds": [{ "tag": "direct", "protocol": "freedom" }],
        })
    }

    /// Xray's client config: a SOCKS inbound on `socks_port`, VLESS to the server on
    /// `server_port`. TLS trusts exactly the bench's certificate, as sing-box's does.
    pub(crate) fn xray_client(self, socks_port: u16, server_port: u16, fx: &Fixture) -> Value {
        let stream = match self.protocol {
            Protocol::VlessTcp => json!({ "network": "tcp", "security": "none" }),
            Protocol::VlessGrpcTls => json!({
                "network": "grpc", "security": "tls",
                "grpcSettings": { "serviceName": GRPC_SERVICE },
                "tlsSettings": {
                    "serverName": fx.cert.name(),
                    "alpn": ["h2"],
                    "disableSystemRoot": true,
                    "certificates": [{
                        "usage": "verify", "certificate": pem_lines(fx.cert.cert_pem()),
                    }],
                },
            }),
            Protocol::VlessTls => json!({
                "network": "tcp", "security": "tls",
                "tlsSettings": {
                    "serverName": fx.cert.name(),
                    "disableSystemRoot": true,
                    "certificates": [{
                        "usage": "verify", "certificate": pem_lines(fx.cert.cert_pem()),
                    }],
                },
            }),
            Protocol::VlessRealityVision => json!({
                "network": "tcp", "security": "reality",
                "realitySettings": xray_reality_client(fx),
            }),
            Protocol::VlessXhttpStreamReality | Protocol::VlessXhttpPacketReality => json!({
                "network": "xhttp", "security": "reality",
                "xhttpSettings": self.xray_xhttp(),
                "realitySettings": xray_reality_client(fx),
            }),
            other => unreachable!("no Xray case has {other:?}"),
        };
        json!({
            "log": xray_log(),
            "inbounds": [{
                "tag": "socks", "protocol": "socks", "listen": "127.0.0.1",
                "port": socks_port, "settings": { "udp": false },
            }],
            "outbounds": [{
                "tag": "proxy", "protocol": "vless",
                "settings": { "vnext": [{
                    "address": "127.0.0.1", "port": server_port,
                    "users": [{ "id": UUID, "encryption": "none", "flow": self.flow() }],
                }]},
                "streamSettings": stream,
            }],
        })
    }

    /// Xray's `xhttpSettings`, the same on its server and its client: the path and the
    /// case's mode, every other knob Xray's default.
    fn xray_xhttp(self) -> Value {
        json!({ "path": XHTTP_PATH, "mode": self.protocol.xhttp_mode().unwrap_or("auto") })
    }

    /// The sides measured: ours only when this build serves the protocol.
    pub(crate) fn sides(self) -> Vec<Side> {
        if self.protocol == Protocol::Shadowsocks && !crate::OURS_SERVES_SHADOWSOCKS {
            vec![self.peer.side()]
        } else {
            vec![Side::Ours, self.peer.side()]
        }
    }
}

/// Our node's REALITY `security` table: the TLS 1.3 site as `dest`, the bench's keys;
/// an empty short id accepted too, as Xray's server is configured.
fn ours_reality(fx: &Fixture) -> String {
    format!(
        "security = {{ type = \"reality\", dest = \"{}\", server_names = [\"{SITE_NAME}\"], \
         private_key = \"{}\", short_ids = [\"\", \"{}\"] }}",
        fx.site.addr(),
        fx.keys.private_key,
        fx.keys.short_id
    )
}

/// Xray's server `realitySettings`: the same site, keys and short ids as ours.
fn xray_reality_server(fx: &Fixture) -> Value {
    json!({
        "dest": fx.site.addr().to_string(),
        "serverNames": [SITE_NAME],
        "privateKey": fx.keys.private_key,
        "shortIds": ["", fx.keys.short_id],
    })
}

/// Xray's client `realitySettings`: uTLS `chrome` (what REALITY needs), the bench's
/// public key and short id.
fn xray_reality_client(fx: &Fixture) -> Value {
    json!({
        "serverName": SITE_NAME, "fingerprint": "chrome",
        "publicKey": fx.keys.public_key, "shortId": fx.keys.short_id,
        "spiderX": "/",
    })
}

/// sing-box's gRPC transport for [`GRPC_SERVICE`] (the same on both sides).
fn grpc_transport() -> Value {
    json!({ "type": "grpc", "service_name": GRPC_SERVICE })
}

/// Warnings only, and no access log: the level of the other servers' configs, no
/// line per connection.
fn xray_log() -> Value {
    json!({ "loglevel": "warning", "access": "none" })
}

/// A PEM as Xray takes it inline: its lines.
fn pem_lines(pem: &str) -> Vec<&str> {
    pem.lines().filter(|l| !l.trim().is_empty()).collect()
}

/// Which server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    Ours,
    SingBox,
    Xray,
}

impl Side {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Ours => "ours",
            Self::SingBox => "sing-box",
            Self::Xray => "Xray",
        }
    }
}
