//! Reading share links and subscription bodies back into entries.
//!
//! Lenient where other writers differ and the meaning is clear (scheme case, a `/`
//! after the port, unknown parameters such as `fp` or `headerType`, base64 in
//! either alphabet with or without padding, `insecure=1` beside `allowInsecure=1`),
//! strict where guessing would connect somewhere else or without the security asked
//! for (an unknown transport, security, VLESS encryption or Shadowsocks plugin is
//! an error, never dropped; so is a REALITY link without a well-formed `pbk` or
//! `sid`). REALITY links are read whole (`sni`, `fp`, `pbk`, `sid`) although
//! Switchyard's client cannot use them: it leaves them out by name, and other
//! servers of the subscription stay usable.

use super::{LinkError, excerpt, percent};
use crate::base64;
use crate::entry::xhttp::XhttpExtra;
use crate::entry::{Entry, EntryProtocol, EntryReality, EntryTls, EntryTransport};
use crate::reality::{PublicKey, ShortId};

/// The schemes read, as the protocol names errors use.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scheme {
    Vless,
    Trojan,
    Shadowsocks,
    Hysteria2,
}

impl Scheme {
    fn name(self) -> &'static str {
        match self {
            Self::Vless => "vless",
            Self::Trojan => "trojan",
            Self::Shadowsocks => "ss",
            Self::Hysteria2 => "hysteria2",
        }
    }
}

/// Reads one share link (surrounding whitespace ignored).
pub fn parse_link(link: &str) -> Result<Entry, LinkError> {
    let link = link.trim();
    let (scheme, rest) = link.split_once("://").ok_or(LinkError::NotALink)?;
    let scheme = match scheme.to_ascii_lowercase().as_str() {
        "vless" => Scheme::Vless,
        "trojan" => Scheme::Trojan,
        "ss" => Scheme::Shadowsocks,
        // `hy2://` is the official short form.
        "hysteria2" | "hy2" => Scheme::Hysteria2,
        "" => return Err(LinkError::NotALink),
        _ => return Err(LinkError::UnsupportedScheme(excerpt(scheme))),
    };
    let (rest, name) = match rest.split_once('#') {
        Some((rest, fragment)) => (
            rest,
            percent::decode(fragment).ok_or(LinkError::BadEncoding("name (#fragment)"))?,
        ),
        None => (rest, String::new()),
    };
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let params = Params::parse(query)?;
    // SIP002 writers (and older ss:// links) may base64 the userinfo, whose standard
    // alphabet has '/', or even the whole `method:password@host:port`: a path can
    // only start after the last '@'.
    let decoded;
    let rest = if scheme == Scheme::Shadowsocks && !rest.contains('@') {
        let whole = rest.strip_suffix('/').unwrap_or(rest);
        decoded = decode_base64_text(whole).ok_or(LinkError::BadShadowsocksUserinfo)?;
        decoded.as_str()
    } else {
        rest
    };
    let (userinfo, after) = rest
        .rsplit_once('@')
        .ok_or(LinkError::MissingCredentials(scheme.name()))?;
    if userinfo.is_empty() {
        return Err(LinkError::MissingCredentials(scheme.name()));
    }
    let (host_port, path) = match after.find('/') {
        Some(at) => after.split_at(at),
        None => (after, ""),
    };
    if !path.is_empty() && path != "/" {
        return Err(LinkError::UnexpectedPath(excerpt(path)));
    }
    if scheme == Scheme::Hysteria2 {
        return hysteria2(userinfo, host_port, &params, name);
    }
    let (server, port) = host_and_port(host_port)?;

    let protocol = match scheme {
        Scheme::Vless => {
            if let Some(encryption) = params.get("encryption").filter(|e| *e != "none") {
                return Err(LinkError::UnsupportedEncryption(excerpt(encryption)));
            }
            EntryProtocol::Vless {
                uuid: percent::decode(userinfo).ok_or(LinkError::BadEncoding("UUID"))?,
                flow: params.non_empty("flow").map(str::to_owned),
            }
        }
        Scheme::Trojan => EntryProtocol::Trojan {
            password: percent::decode(userinfo).ok_or(LinkError::BadEncoding("password"))?,
        },
        // Read before the port (its port may be a range).
        Scheme::Hysteria2 => return hysteria2(userinfo, host_port, &params, name),
        Scheme::Shadowsocks => {
            if let Some(plugin) = params.non_empty("plugin") {
                return Err(LinkError::UnsupportedPlugin(excerpt(plugin)));
            }
            let (method, password) = shadowsocks_userinfo(userinfo)?;
            return Ok(Entry {
                name,
                server,
                port,
                protocol: EntryProtocol::Shadowsocks { method, password },
                transport: EntryTransport::Tcp,
                tls: None,
                route: route(&params),
            });
        }
    };
    Ok(Entry {
        name,
        server,
        port,
        protocol,
        transport: transport(&params)?,
        tls: tls(&params, scheme)?,
        route: route(&params),
    })
}

/// A `hysteria2://` (or `hy2://`) link: the password (all of the userinfo: the
/// official `user:pass` form is its password), `sni`, `insecure`, `obfs` with
/// `obfs-password`, `pinSHA256`, and the hop range from `mport` or from the
/// official multi-port form in place of the port (`HOST:20000-20010`, the first
/// port the main one). Always TLS; no transport of its own.
fn hysteria2(
    userinfo: &str,
    host_port: &str,
    params: &Params,
    name: String,
) -> Result<Entry, LinkError> {
    use crate::entry::hysteria2::{hop_range, pin_from_hex};
    let password = percent::decode(userinfo).ok_or(LinkError::BadEncoding("password"))?;
    let (host_part, port_text) = match host_port.rsplit_once(':') {
        Some((host, port)) if port.contains('-') || port.contains(',') => (host, Some(port)),
        _ => (host_port, None),
    };
    let (server, port, mut ports) = match port_text {
        Some(range) => {
            let (first, last) =
                hop_range(range).ok_or_else(|| LinkError::BadHopPorts(excerpt(range)))?;
            let (server, _) = host_and_port(&format!("{host_part}:{first}"))?;
            (server, first, Some(format!("{first}-{last}")))
        }
        None => {
            let (server, port) = host_and_port(host_port)?;
            (server, port, None)
        }
    };
    if let Some(mport) = params.non_empty("mport") {
        let (first, last) =
            hop_range(mport).ok_or_else(|| LinkError::BadHopPorts(excerpt(mport)))?;
        ports = Some(format!("{first}-{last}"));
    }
    let obfs_password = match params.non_empty("obfs") {
        None => None,
        Some("salamander") => Some(
            params
                .non_empty("obfs-password")
                .ok_or_else(|| LinkError::UnsupportedObfs("salamander".into()))?
                .to_owned(),
        ),
        Some(other) => return Err(LinkError::UnsupportedObfs(excerpt(other))),
    };
    let certificate_sha256 = match params.non_empty("pinSHA256") {
        None => None,
        Some(pin) => Some(pin_from_hex(pin).ok_or(LinkError::BadPin)?),
    };
    let flag = |key| matches!(params.get(key), Some("1" | "true"));
    Ok(Entry {
        name,
        server,
        port,
        protocol: EntryProtocol::Hysteria2 {
            password,
            obfs_password,
            ports,
            up_mbps: None,
            down_mbps: None,
            hop_interval: None,
        },
        transport: EntryTransport::Tcp,
        tls: Some(EntryTls {
            server_name: params.non_empty("sni").map(str::to_owned),
            insecure: flag("insecure") || flag("allowInsecure"),
            certificate_sha256,
            ..EntryTls::default()
        }),
        route: route(params),
    })
}

/// The `route` parameter, when it is a route id ([`crate::entry::is_route_id`]);
/// anything else is ignored, as an unknown parameter is.
fn route(params: &Params) -> Option<String> {
    params
        .get("route")
        .filter(|r| crate::entry::is_route_id(r))
        .map(str::to_owned)
}

/// `method:password`, percent-encoded (the SIP002 form for 2022 methods, which
/// sing-box and Xray read) or base64 of it (either alphabet, padding optional).
fn shadowsocks_userinfo(userinfo: &str) -> Result<(String, String), LinkError> {
    let text = match userinfo.split_once(':') {
        Some((method, password)) => {
            let method = percent::decode(method).ok_or(LinkError::BadEncoding("method"))?;
            let password = percent::decode(password).ok_or(LinkError::BadEncoding("password"))?;
            return checked_userinfo(method, password);
        }
        None => decode_base64_text(userinfo).ok_or(LinkError::BadShadowsocksUserinfo)?,
    };
    let (method, password) = text
        .split_once(':')
        .ok_or(LinkError::BadShadowsocksUserinfo)?;
    checked_userinfo(method.to_owned(), password.to_owned())
}

fn checked_userinfo(method: String, password: String) -> Result<(String, String), LinkError> {
    // No method has a ':'; one that did could not be written back unambiguously.
    if method.is_empty() || method.contains(':') || password.is_empty() {
        return Err(LinkError::BadShadowsocksUserinfo);
    }
    Ok((method, password))
}

/// Base64 text, possibly percent-encoded (`%3D` for `=`), decoded to UTF-8.
fn decode_base64_text(text: &str) -> Option<String> {
    let text = percent::decode(text)?;
    String::from_utf8(base64::decode_lenient(text.trim().as_bytes())?).ok()
}

/// `host:port`, `[v6]:port`; the host percent-decoded.
fn host_and_port(text: &str) -> Result<(String, u16), LinkError> {
    let (host, port) = if let Some(bracketed) = text.strip_prefix('[') {
        let (host, after) = bracketed.split_once(']').ok_or(LinkError::UnclosedIpv6)?;
        let port = after.strip_prefix(':').ok_or(LinkError::MissingPort)?;
        (host.to_owned(), port)
    } else {
        let (host, port) = text.rsplit_once(':').ok_or(LinkError::MissingPort)?;
        (
            percent::decode(host).ok_or(LinkError::BadEncoding("server host"))?,
            port,
        )
    };
    if host.is_empty() {
        return Err(LinkError::MissingHost);
    }
    let port = port
        .parse::<u16>()
        .ok()
        .filter(|p| *p != 0 && port.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| LinkError::BadPort(excerpt(port)))?;
    Ok((host, port))
}

fn transport(params: &Params) -> Result<EntryTransport, LinkError> {
    match params.get("type").unwrap_or("tcp") {
        "tcp" | "" => Ok(EntryTransport::Tcp),
        "ws" => Ok(EntryTransport::Ws {
            path: params.get("path").unwrap_or("/").to_owned(),
            host: params.non_empty("host").map(str::to_owned),
        }),
        "httpupgrade" => Ok(EntryTransport::HttpUpgrade {
            path: params.get("path").unwrap_or("/").to_owned(),
            host: params.non_empty("host").map(str::to_owned),
        }),
        // Xray's share-link form (v2rayN, v2rayNG): no `serviceName` is the empty
        // one (writers leave it out then), no `mode` is plain gun.
        "grpc" => Ok(EntryTransport::Grpc {
            service_name: params.get("serviceName").unwrap_or_default().to_owned(),
            authority: params.non_empty("authority").map(str::to_owned),
            multi: match params.get("mode").unwrap_or_default() {
                "" | "gun" => false,
                "multi" => true,
                other => return Err(LinkError::UnsupportedGrpcMode(excerpt(other))),
            },
        }),
        // v2rayN's form: `mode` (none is auto), `extra` as Xray's JSON.
        "xhttp" => {
            let mode = params.get("mode").unwrap_or_default();
            let mode = crate::xhttp::Mode::parse(mode)
                .ok_or_else(|| LinkError::UnsupportedXhttpMode(excerpt(mode)))?;
            let extra = match params.non_empty("extra") {
                None => None,
                Some(text) => {
                    let bad = || LinkError::BadXhttpExtra(excerpt(text));
                    let value: serde_json::Value = serde_json::from_str(text).map_err(|_| bad())?;
                    let extra = XhttpExtra::from_xray(&value).ok_or_else(bad)?;
                    (extra != XhttpExtra::default()).then_some(extra)
                }
            };
            Ok(EntryTransport::Xhttp {
                path: params.get("path").unwrap_or("/").to_owned(),
                host: params.non_empty("host").map(str::to_owned),
                mode,
                extra,
            })
        }
        other => Err(LinkError::UnsupportedTransport(excerpt(other))),
    }
}

/// TLS from `security`; a Trojan link without it means TLS, a VLESS one none.
fn tls(params: &Params, scheme: Scheme) -> Result<Option<EntryTls>, LinkError> {
    let default = if scheme == Scheme::Trojan {
        "tls"
    } else {
        "none"
    };
    match params
        .get("security")
        .filter(|s| !s.is_empty())
        .unwrap_or(default)
    {
        "none" => Ok(None),
        security @ ("tls" | "reality") => {
            let flag = |key| matches!(params.get(key), Some("1" | "true"));
            let reality = if security == "reality" {
                Some(reality(params)?)
            } else {
                None
            };
            Ok(Some(EntryTls {
                server_name: params
                    .non_empty("sni")
                    .or_else(|| params.non_empty("peer"))
                    .map(str::to_owned),
                insecure: flag("allowInsecure") || flag("insecure"),
                certificate_pem: None,
                certificate_sha256: None,
                alpn: params
                    .non_empty("alpn")
                    .map(|a| a.split(',').map(str::to_owned).collect())
                    .unwrap_or_default(),
                fingerprint: params.non_empty("fp").map(str::to_owned),
                reality,
            }))
        }
        other => Err(LinkError::UnsupportedSecurity(excerpt(other))),
    }
}

/// `pbk` and `sid` of a `security=reality` link, checked (a key that is not one
/// would only fail later, at the handshake). `spx` (the spider's first path) is
/// left to the client's default, `/`.
fn reality(params: &Params) -> Result<EntryReality, LinkError> {
    let public_key = params.non_empty("pbk").ok_or(LinkError::BadRealityKey)?;
    PublicKey::parse(public_key).map_err(|_| LinkError::BadRealityKey)?;
    let short_id = params.get("sid").unwrap_or_default();
    ShortId::parse(short_id).map_err(|_| LinkError::BadShortId)?;
    Ok(EntryReality {
        public_key: public_key.to_owned(),
        short_id: short_id.to_owned(),
    })
}

/// A link's query parameters, percent-decoded; the first of a repeated key wins.
struct Params(Vec<(String, String)>);

impl Params {
    fn parse(query: &str) -> Result<Self, LinkError> {
        let mut pairs = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let key = percent::decode(key).ok_or(LinkError::BadEncoding("query"))?;
            let value = percent::decode(value).ok_or(LinkError::BadEncoding("query"))?;
            pairs.push((key, value));
        }
        Ok(Self(pairs))
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn non_empty(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.is_empty())
    }
}

/// Reads a subscription body: share links one a line, or base64 of them (standard
/// or URL-safe alphabet, padding optional, line breaks inside ignored). Blank lines
/// are skipped; any other line that is not a link read here is an error naming the
/// line.
pub fn parse_subscription(body: &str) -> Result<Vec<Entry>, LinkError> {
    let body = body.trim_start_matches('\u{feff}').trim();
    let decoded;
    let text = if body.is_empty() || body.contains("://") {
        body
    } else {
        let compact: Vec<u8> = body.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        decoded = base64::decode_lenient(&compact)
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or(LinkError::NotASubscription)?;
        if !decoded.contains("://") && !decoded.trim().is_empty() {
            return Err(LinkError::NotASubscription);
        }
        &decoded
    };
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            parse_link(line).map_err(|error| LinkError::Line {
                line: i + 1,
                error: Box::new(error),
            })
        })
        .collect()
}
