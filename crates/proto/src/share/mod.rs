//! Share links (`vless://`, `trojan://`, `ss://`) and subscriptions made of them.
//!
//! [`to_link`] writes an [`Entry`] in the form v2rayN, v2rayNG, Xray, sing-box's
//! apps and mihomo read; [`parse_link`] reads it back, so `parse_link(&to_link(e))
//! == Ok(e)` for every entry a link can carry (a property test checks it).
//! [`links`] and [`subscription_base64`] make a whole subscription body;
//! [`parse_subscription`] reads either form back.
//!
//! ```text
//! vless://UUID@HOST:PORT?type=ws&path=%2Fws&host=H&security=tls&sni=S&allowInsecure=1&alpn=h2%2Chttp%2F1.1&fp=chrome&encryption=none&flow=F#NAME
//! vless://UUID@HOST:PORT?type=tcp&security=reality&sni=S&fp=chrome&pbk=PUBLICKEY&sid=SHORTID&encryption=none&flow=xtls-rprx-vision#NAME
//! vless://UUID@HOST:PORT?type=httpupgrade&path=%2Fup&host=H&security=tls&sni=S&encryption=none#NAME
//! vless://UUID@HOST:PORT?type=grpc&serviceName=NAME&authority=A&mode=gun&security=tls&sni=S&encryption=none#NAME
//! vless://UUID@HOST:PORT?type=xhttp&path=%2Fxh&host=H&mode=auto&extra=JSON&security=tls&sni=S&encryption=none#NAME
//! trojan://PASSWORD@HOST:PORT?type=tcp&security=tls&sni=S#NAME
//! hysteria2://PASSWORD@HOST:PORT/?sni=S&insecure=1&obfs=salamander&obfs-password=O&mport=FIRST-LAST&pinSHA256=HEX#NAME
//! ss://2022-blake3-aes-128-gcm:SERVERKEY%3AUSERKEY@HOST:PORT#NAME      (SIP002, 2022 methods)
//! ss://BASE64URL(method:password)@HOST:PORT#NAME                         (SIP002, other methods)
//! ```
//!
//! An entry's route id ([`Entry::route`]) is the last parameter, `route=ID` (on a
//! Shadowsocks link, its only one): other apps ignore parameters they do not know.
//!
//! Every value is percent-encoded (only `A-Z a-z 0-9 - . _ ~` stay as they are); an
//! IPv6 server is written in brackets. `security` is always written: a Trojan link
//! without it means TLS to most readers, so an entry without TLS says
//! `security=none`.
//!
//! What links cannot carry, and so what the round trip leaves out:
//! - [`EntryTls::certificate_pem`] and [`EntryTls::certificate_sha256`] (no link
//!   format has a field for a certificate or its hash), except that a Hysteria 2
//!   link carries the hash as `pinSHA256` (a PEM reads back as its hash);
//! - a Hysteria 2 entry's bandwidths (the official form has none), ALPN and uTLS
//!   fingerprint;
//! - for Shadowsocks, the transport and TLS (SIP002 has only plugins for them, and
//!   Shadowsocks runs on plain TCP here): its links are always plain TCP;
//! - empty strings where a value is optional: an empty `flow`, `sni` or `host` reads
//!   back as `None`;
//! - port 0, which [`parse_link`] refuses;
//! - an ALPN list whose items are empty or hold a comma.
//!
//! ```
//! use switchyard_proto::share::{parse_link, parse_subscription, subscription_base64, to_link};
//! use switchyard_proto::{Entry, EntryProtocol, EntryTls, EntryTransport};
//!
//! let entry = Entry {
//!     name: "Tokyo 🚀".into(),
//!     server: "node.example.com".into(),
//!     port: 443,
//!     protocol: EntryProtocol::Trojan { password: "secret".into() },
//!     transport: EntryTransport::Ws { path: "/t".into(), host: None },
//!     tls: Some(EntryTls { server_name: Some("node.example.com".into()), ..EntryTls::default() }),
//!     route: None,
//! };
//! let link = to_link(&entry);
//! assert_eq!(
//!     link,
//!     "trojan://secret@node.example.com:443?type=ws&path=%2Ft&security=tls&sni=node.example.com#Tokyo%20%F0%9F%9A%80"
//! );
//! assert_eq!(parse_link(&link), Ok(entry.clone()));
//! let body = subscription_base64(&[entry.clone()]);
//! assert_eq!(parse_subscription(&body), Ok(vec![entry]));
//! ```
//!
//! [`EntryTls::certificate_pem`]: crate::entry::EntryTls::certificate_pem
//! [`EntryTls::certificate_sha256`]: crate::entry::EntryTls::certificate_sha256

#[cfg(test)]
mod grpc_tests;
#[cfg(test)]
mod httpupgrade_tests;
#[cfg(test)]
mod hysteria2_tests;
mod parse;
mod percent;
#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod xhttp_tests;

use crate::base64;
use crate::entry::{Entry, EntryProtocol, EntryTransport};

pub use parse::{parse_link, parse_subscription};

/// The most bytes of a scheme or value an error repeats, so an error about a huge
/// or hostile input stays short.
const ERROR_EXCERPT: usize = 32;

/// What is wrong with a share link or subscription.
///
/// No variant repeats a credential: a UUID or password that is wrong is named, not
/// shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    /// The text has no `scheme://` at its start.
    #[error("not a share link: it does not start with vless://, trojan://, ss:// or hysteria2://")]
    NotALink,
    /// The scheme is not one Switchyard reads.
    #[error(
        "unsupported link scheme {0:?}: only vless://, trojan://, ss:// and hysteria2:// are read"
    )]
    UnsupportedScheme(String),
    /// Nothing before the `@` (the UUID, password or Shadowsocks userinfo).
    #[error("the {0} link has no credentials before '@'")]
    MissingCredentials(&'static str),
    /// The Shadowsocks userinfo is neither `method:password` nor base64 of it.
    #[error("the ss link's userinfo is neither percent-encoded method:password nor base64 of it")]
    BadShadowsocksUserinfo,
    /// No host between `@` and `:port`.
    #[error("the link has no server host")]
    MissingHost,
    /// An IPv6 address opened with `[` is not closed.
    #[error("the link's IPv6 server address has no closing ']'")]
    UnclosedIpv6,
    /// No `:port` after the host.
    #[error("the link has no port after the server host")]
    MissingPort,
    /// The port is not a number from 1 to 65535.
    #[error("the link's port {0:?} is not a number from 1 to 65535")]
    BadPort(String),
    /// Something follows the port that is not a query or fragment.
    #[error("the link has a path {0:?} after the port; only '/' may stand there")]
    UnexpectedPath(String),
    /// A part of the link has a malformed `%XX` escape or is not UTF-8 once decoded.
    #[error("the link's {0} has a malformed %-escape or is not UTF-8")]
    BadEncoding(&'static str),
    /// The `type` parameter names a transport other than `tcp`, `ws`,
    /// `httpupgrade`, `grpc` and `xhttp`.
    #[error("unsupported transport type={0:?}: only tcp, ws, httpupgrade, grpc and xhttp are read")]
    UnsupportedTransport(String),
    /// A `type=xhttp` link's `mode` is not one of Xray's.
    #[error(
        "unsupported XHTTP mode={0:?}: only auto, packet-up, stream-up and stream-one are read"
    )]
    UnsupportedXhttpMode(String),
    /// A `type=xhttp` link's `extra` is not a JSON object of Xray's XHTTP settings
    /// with ranges that read.
    #[error("the XHTTP extra={0:?} is not a JSON object of XHTTP settings")]
    BadXhttpExtra(String),
    /// A `type=grpc` link's `mode` is neither `gun` nor `multi`.
    #[error("unsupported gRPC mode={0:?}: only gun and multi are read")]
    UnsupportedGrpcMode(String),
    /// The `security` parameter names something other than `none`, `tls` and
    /// `reality`.
    #[error("unsupported security={0:?}: only none, tls and reality are read")]
    UnsupportedSecurity(String),
    /// A `security=reality` link has no `pbk`, or one that is not 32 bytes of
    /// base64url.
    #[error(
        "the REALITY link's pbk (the server's public key) is missing or not 32 bytes of base64url"
    )]
    BadRealityKey,
    /// A `security=reality` link's `sid` is not 0 to 16 hex digits (an even number).
    #[error("the REALITY link's sid is not 0 to 16 hex digits, an even number of them")]
    BadShortId,
    /// A VLESS link asks for an `encryption` other than `none`.
    #[error("unsupported VLESS encryption={0:?}: only none is read")]
    UnsupportedEncryption(String),
    /// A Shadowsocks link names a SIP003 plugin, which Switchyard does not run.
    #[error("unsupported Shadowsocks plugin {0:?}: Switchyard runs Shadowsocks on plain TCP")]
    UnsupportedPlugin(String),
    /// A `hysteria2://` link's `obfs` is not `salamander`, or Salamander has no
    /// `obfs-password`.
    #[error("unsupported Hysteria 2 obfs={0:?}: only salamander with an obfs-password is read")]
    UnsupportedObfs(String),
    /// A `hysteria2://` link's `mport` (or port list) is not one range
    /// `first-last`.
    #[error("the Hysteria 2 link's hop ports {0:?} are not one range first-last")]
    BadHopPorts(String),
    /// A `hysteria2://` link's `pinSHA256` is not 64 hex digits.
    #[error("the Hysteria 2 link's pinSHA256 is not a SHA-256 in 64 hex digits")]
    BadPin,
    /// A subscription body is neither share links nor base64 of them.
    #[error("the subscription is neither share links, one a line, nor base64 of them")]
    NotASubscription,
    /// A line of a subscription is not a link Switchyard reads.
    #[error("subscription line {line}: {error}")]
    Line {
        /// The line's number, from 1, in the decoded body.
        line: usize,
        /// What is wrong with it.
        error: Box<Self>,
    },
}

/// `text` cut to [`ERROR_EXCERPT`] bytes (at a character boundary), for errors.
fn excerpt(text: &str) -> String {
    let mut end = text.len().min(ERROR_EXCERPT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// Whether `method` is a Shadowsocks 2022 (SIP022) method, whose SIP002 userinfo is
/// percent-encoded text rather than base64.
fn is_2022_method(method: &str) -> bool {
    method.starts_with("2022-")
}

/// The share link of `entry` (see the [module docs](self) for the forms).
pub fn to_link(entry: &Entry) -> String {
    let mut out = String::with_capacity(128);
    match &entry.protocol {
        EntryProtocol::Vless { uuid, .. } => {
            out.push_str("vless://");
            percent::encode_into(&mut out, uuid);
        }
        EntryProtocol::Trojan { password } => {
            out.push_str("trojan://");
            percent::encode_into(&mut out, password);
        }
        EntryProtocol::Hysteria2 { password, .. } => {
            out.push_str("hysteria2://");
            percent::encode_into(&mut out, password);
        }
        EntryProtocol::Shadowsocks { method, password } => {
            out.push_str("ss://");
            if is_2022_method(method) {
                percent::encode_into(&mut out, method);
                out.push(':');
                percent::encode_into(&mut out, password);
            } else {
                let standard = base64::encode_standard(format!("{method}:{password}").as_bytes());
                out.extend(standard.chars().filter(|&c| c != '=').map(|c| match c {
                    '+' => '-',
                    '/' => '_',
                    c => c,
                }));
            }
        }
    }
    out.push('@');
    push_host(&mut out, &entry.server);
    out.push(':');
    out.push_str(&entry.port.to_string());
    if matches!(entry.protocol, EntryProtocol::Hysteria2 { .. }) {
        // The official Hysteria 2 form: a `/` before the query.
        out.push('/');
    }

    let params = query(entry);
    for (i, (key, value)) in params.iter().enumerate() {
        out.push(if i == 0 { '?' } else { '&' });
        out.push_str(key);
        out.push('=');
        percent::encode_into(&mut out, value);
    }
    out.push('#');
    percent::encode_into(&mut out, &entry.name);
    out
}

/// The host part: an IPv6 address in brackets, anything else percent-encoded (a
/// host name or IPv4 address has nothing to encode).
fn push_host(out: &mut String, server: &str) {
    if server.contains(':') && server.parse::<std::net::Ipv6Addr>().is_ok() {
        out.push('[');
        out.push_str(server);
        out.push(']');
    } else {
        percent::encode_into(out, server);
    }
}

/// The query parameters of `entry`'s link, in the order written.
fn query(entry: &Entry) -> Vec<(&'static str, String)> {
    let mut params = Vec::new();
    if matches!(entry.protocol, EntryProtocol::Shadowsocks { .. }) {
        push_route(&mut params, entry);
        return params;
    }
    if let EntryProtocol::Hysteria2 {
        obfs_password,
        ports,
        ..
    } = &entry.protocol
    {
        hysteria2_query(
            &mut params,
            entry,
            obfs_password.as_deref(),
            ports.as_deref(),
        );
        push_route(&mut params, entry);
        return params;
    }
    match &entry.transport {
        EntryTransport::Tcp => params.push(("type", "tcp".to_owned())),
        EntryTransport::Ws { path, host } => {
            params.push(("type", "ws".to_owned()));
            params.push(("path", path.clone()));
            if let Some(host) = host {
                params.push(("host", host.clone()));
            }
        }
        EntryTransport::HttpUpgrade { path, host } => {
            params.push(("type", "httpupgrade".to_owned()));
            params.push(("path", path.clone()));
            if let Some(host) = host {
                params.push(("host", host.clone()));
            }
        }
        EntryTransport::Grpc {
            service_name,
            authority,
            multi,
        } => {
            params.push(("type", "grpc".to_owned()));
            params.push(("serviceName", service_name.clone()));
            if let Some(authority) = authority {
                params.push(("authority", authority.clone()));
            }
            let mode = if *multi { "multi" } else { "gun" };
            params.push(("mode", mode.to_owned()));
        }
        // v2rayN's form: `extra` is Xray's `xhttpSettings.extra` as JSON, only when
        // something differs from Xray's defaults.
        EntryTransport::Xhttp {
            path,
            host,
            mode,
            extra,
        } => {
            params.push(("type", "xhttp".to_owned()));
            params.push(("path", path.clone()));
            if let Some(host) = host {
                params.push(("host", host.clone()));
            }
            params.push(("mode", mode.name().to_owned()));
            if let Some(extra) = extra {
                params.push(("extra", extra.to_xray().to_string()));
            }
        }
    }
    match &entry.tls {
        None => params.push(("security", "none".to_owned())),
        Some(tls) => {
            let security = if tls.reality.is_some() {
                "reality"
            } else {
                "tls"
            };
            params.push(("security", security.to_owned()));
            if let Some(sni) = &tls.server_name {
                params.push(("sni", sni.clone()));
            }
            if tls.insecure {
                params.push(("allowInsecure", "1".to_owned()));
            }
            if !tls.alpn.is_empty() {
                params.push(("alpn", tls.alpn.join(",")));
            }
            if let Some(fp) = &tls.fingerprint {
                params.push(("fp", fp.clone()));
            }
            if let Some(reality) = &tls.reality {
                params.push(("pbk", reality.public_key.clone()));
                if !reality.short_id.is_empty() {
                    params.push(("sid", reality.short_id.clone()));
                }
            }
        }
    }
    if let EntryProtocol::Vless { flow, .. } = &entry.protocol {
        params.push(("encryption", "none".to_owned()));
        if let Some(flow) = flow {
            params.push(("flow", flow.clone()));
        }
    }
    push_route(&mut params, entry);
    params
}

/// A `hysteria2://` link's parameters: `sni`, `insecure=1`, `obfs=salamander` with
/// `obfs-password`, `mport` (the hop range), `pinSHA256` (the pinned certificate's
/// SHA-256 in hex), as the official Hysteria 2 docs, v2rayN and NekoBox read them.
/// Bandwidths are not written (the official form leaves them to the client), nor
/// is the hop interval: the official URI has no parameter for it and neither
/// v2rayN nor Hiddify reads one, so a link's client hops at its own default.
fn hysteria2_query(
    params: &mut Vec<(&'static str, String)>,
    entry: &Entry,
    obfs_password: Option<&str>,
    ports: Option<&str>,
) {
    let tls = entry.tls.clone().unwrap_or_default();
    if let Some(sni) = &tls.server_name {
        params.push(("sni", sni.clone()));
    }
    if tls.insecure {
        params.push(("insecure", "1".to_owned()));
    }
    if let Some(password) = obfs_password {
        params.push(("obfs", "salamander".to_owned()));
        params.push(("obfs-password", password.to_owned()));
    }
    if let Some(ports) = ports {
        params.push(("mport", ports.to_owned()));
    }
    if let Some(pin) = tls.pin_sha256() {
        params.push(("pinSHA256", crate::entry::hysteria2::pin_hex(&pin)));
    }
}

/// `route=ID` last, when the entry has a route id that may be carried.
fn push_route(params: &mut Vec<(&'static str, String)>, entry: &Entry) {
    if let Some(route) = entry
        .route
        .as_deref()
        .filter(|r| crate::entry::is_route_id(r))
    {
        params.push(("route", route.to_owned()));
    }
}

/// The links of `entries`, one a line (`\n` between them, none after the last).
pub fn links(entries: &[Entry]) -> String {
    entries.iter().map(to_link).collect::<Vec<_>>().join("\n")
}

/// The subscription body v2rayN-family apps expect: [`links`] in standard base64
/// with padding, on one line.
pub fn subscription_base64(entries: &[Entry]) -> String {
    base64::encode_standard(links(entries).as_bytes())
}
