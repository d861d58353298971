//! A source panel's inbound, as Xray's config describes it (Marzban's
//! `xray_config.json`, PasarGuard's core configs, Remnawave's config profiles, 3x-ui's
//! inbound rows), turned into this panel's inbound: the same protocol, port,
//! transport and security, with the source's REALITY private key and short ids, so a
//! client that still has an old config keeps working against a node on the same host
//! and port. Pure: what cannot be carried is the reason, in words the report shows.

use serde_json::Value;

use crate::model::{Flow, Id, InboundSecurity, InboundTransport, Protocol, TlsCertificate};
use crate::store::InboundInput;

/// One inbound of the source, in Xray's JSON (`tag`, `protocol`, `port`, `settings`,
/// `streamSettings`). Holds the REALITY private key: never shown (its `Debug` says
/// only the tag) and never serialized into a report.
#[derive(Clone, PartialEq, Eq)]
pub struct XrayInbound(pub Value);

impl std::fmt::Debug for XrayInbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("XrayInbound")
            .field(&self.0.get("tag").and_then(Value::as_str).unwrap_or(""))
            .finish_non_exhaustive()
    }
}

/// This panel's inbound for a source inbound: its input (on `server_id`, named by
/// the source's tag) and, for REALITY, the source's private key.
#[derive(Clone, PartialEq)]
pub struct PlannedInbound {
    /// What to create.
    pub input: InboundInput,
    /// REALITY's X25519 private key as the source had it (base64url).
    pub reality_private_key: Option<String>,
}

impl std::fmt::Debug for PlannedInbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlannedInbound")
            .field("input", &self.input)
            .finish_non_exhaustive()
    }
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn some(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_owned())
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The path and `Host` of a WebSocket-like transport's settings.
fn path_and_host(s: &Value) -> (String, Option<String>) {
    let path = match text(s, "path") {
        "" => "/".to_owned(),
        p => p.to_owned(),
    };
    let host = some(text(s, "host")).or_else(|| {
        s.get("headers")
            .and_then(|h| h.get("Host").or_else(|| h.get("host")))
            .and_then(Value::as_str)
            .and_then(some)
    });
    (path, host)
}

fn transport(stream: &Value) -> Result<InboundTransport, String> {
    let network = match text(stream, "network") {
        "" => "tcp",
        n => n,
    };
    let settings = |key: &str| stream.get(key).cloned().unwrap_or(Value::Null);
    Ok(match network {
        "tcp" | "raw" => {
            let s = stream
                .get("tcpSettings")
                .or_else(|| stream.get("rawSettings"));
            let header = s
                .and_then(|s| s.get("header"))
                .map(|h| text(h, "type"))
                .unwrap_or("");
            if !matches!(header, "" | "none") {
                return Err(format!(
                    "TCP with a {header} header disguise is not served here"
                ));
            }
            InboundTransport::Tcp
        }
        "ws" => {
            let (path, host) = path_and_host(&settings("wsSettings"));
            InboundTransport::Ws { path, host }
        }
        "httpupgrade" => {
            let (path, host) = path_and_host(&settings("httpupgradeSettings"));
            InboundTransport::HttpUpgrade { path, host }
        }
        "grpc" | "gun" => {
            let s = settings("grpcSettings");
            InboundTransport::Grpc {
                service_name: text(&s, "serviceName").to_owned(),
                multi_mode: s.get("multiMode").and_then(Value::as_bool).unwrap_or(false),
            }
        }
        "xhttp" | "splithttp" => {
            let s = stream
                .get("xhttpSettings")
                .or_else(|| stream.get("splithttpSettings"))
                .cloned()
                .unwrap_or(Value::Null);
            let (path, host) = path_and_host(&s);
            InboundTransport::Xhttp(crate::model::xhttp::InboundXhttp {
                path,
                host,
                mode: match text(&s, "mode") {
                    "" => "auto".to_owned(),
                    m => m.to_owned(),
                },
            })
        }
        other => return Err(format!("the {other} transport is not served here")),
    })
}

/// Security; the TLS server name; REALITY's private key.
type Secured = (InboundSecurity, Option<String>, Option<String>);

fn security(stream: &Value) -> Result<Secured, String> {
    Ok(match text(stream, "security") {
        "" | "none" => (InboundSecurity::None, None, None),
        "tls" => {
            let s = stream.get("tlsSettings").cloned().unwrap_or(Value::Null);
            let first = s
                .get("certificates")
                .and_then(Value::as_array)
                .and_then(|c| c.first())
                .cloned()
                .unwrap_or(Value::Null);
            let (cert, key) = (text(&first, "certificateFile"), text(&first, "keyFile"));
            if cert.is_empty() || key.is_empty() {
                return Err(
                    "its TLS certificate is not given as files (certificateFile, \
                            keyFile): create the inbound here with its certificate"
                        .into(),
                );
            }
            let certificate = TlsCertificate::Files {
                cert: cert.to_owned(),
                key: key.to_owned(),
            };
            (
                InboundSecurity::Tls { certificate },
                some(text(&s, "serverName")),
                None,
            )
        }
        "reality" => {
            let s = stream
                .get("realitySettings")
                .cloned()
                .unwrap_or(Value::Null);
            let dest = match s.get("dest").or_else(|| s.get("target")) {
                Some(Value::String(d)) => d.clone(),
                // Xray reads a bare port as one of the node's own.
                Some(Value::Number(n)) => format!("127.0.0.1:{n}"),
                _ => return Err("REALITY without a dest (target)".into()),
            };
            let private_key = text(&s, "privateKey");
            if private_key.is_empty() {
                return Err("REALITY without its privateKey".into());
            }
            let security = InboundSecurity::Reality {
                dest,
                server_names: strings(s.get("serverNames")),
                short_ids: strings(s.get("shortIds")),
                // Xray's maxTimeDiff is in ms, 0 (its default) leaving clocks unchecked:
                // kept, so clients the old server took are taken here.
                max_time_diff_ms: s.get("maxTimeDiff").and_then(Value::as_u64).unwrap_or(0),
                fingerprint: crate::model::REALITY_FINGERPRINT.to_owned(),
            };
            (security, None, Some(private_key.to_owned()))
        }
        other => return Err(format!("{other} security is not served here")),
    })
}

/// Whether the source gives the inbound's VLESS clients XTLS Vision: its settings'
/// own `flow` when it has one (Remnawave's way), else any of its clients' (Xray keeps
/// the flow per client; 3x-ui lists the clients in the inbound), else `hint`.
fn vision_for(settings: &Value, hint: bool) -> bool {
    let vision = |v: &Value| text(v, "flow") == Flow::Vision.as_str();
    if settings.get("flow").is_some_and(Value::is_string) {
        return vision(settings);
    }
    hint || settings
        .get("clients")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(vision))
}

/// This panel's inbound on `server_id` for the source inbound `x`, or why there is
/// none. `vision`: the source's VLESS users use XTLS Vision where nothing in the
/// inbound says otherwise (Marzban and its forks keep the flow with the user;
/// Remnawave gives it on TCP with TLS or REALITY unless the inbound sets a `flow`);
/// it is set where it applies (VLESS over TCP with TLS or REALITY), as the source's
/// Xray applied it.
pub fn plan(x: &XrayInbound, server_id: Id, vision: bool) -> Result<PlannedInbound, String> {
    let x = &x.0;
    let protocol = match text(x, "protocol") {
        "vless" => Protocol::Vless,
        "trojan" => Protocol::Trojan,
        "" => return Err("no protocol".into()),
        other => {
            return Err(format!(
                "{other} inbounds are not made here: its users get this panel's other inbounds"
            ));
        }
    };
    let port = match x.get("port") {
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) if s.bytes().all(|b| b.is_ascii_digit()) => s.parse().ok(),
        Some(Value::String(s)) => {
            return Err(format!(
                "its port {s:?} is a range or an environment variable: make it here by hand"
            ));
        }
        _ => None,
    };
    let port = port
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p > 0)
        .ok_or_else(|| "no port from 1 to 65535".to_owned())?;
    let stream = x.get("streamSettings").cloned().unwrap_or(Value::Null);
    let transport = transport(&stream)?;
    let (security, sni, reality_private_key) = security(&stream)?;
    let settings = x.get("settings").cloned().unwrap_or(Value::Null);
    let flow = (protocol == Protocol::Vless
        && transport == InboundTransport::Tcp
        && security.encrypts()
        && vision_for(&settings, vision))
    .then_some(Flow::Vision);
    Ok(PlannedInbound {
        input: InboundInput {
            server_id,
            name: text(x, "tag").to_owned(),
            protocol,
            port,
            transport,
            security,
            host: None,
            sni,
            coefficient: 1.0,
            method: None,
            flow,
            hysteria2: None,
            trusted_proxies: Vec::new(),
            rules: Default::default(),
        },
        reality_private_key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn x(v: Value) -> XrayInbound {
        XrayInbound(v)
    }

    #[test]
    fn a_reality_inbound_keeps_its_key_short_ids_names_and_vision() {
        let inbound = x(
            json!({"tag": "VLESS TCP REALITY", "protocol": "vless", "port": 443,
            "settings": {"clients": [], "decryption": "none"},
            "streamSettings": {"network": "tcp", "security": "reality", "realitySettings": {
                "dest": "www.example.com:443", "serverNames": ["www.example.com", ""],
                "privateKey": "k", "shortIds": ["", "6ba85179e30d4fc2"]}}}),
        );
        let p = plan(&inbound, 7, true).unwrap();
        assert_eq!(p.reality_private_key.as_deref(), Some("k"));
        assert_eq!((p.input.server_id, p.input.port), (7, 443));
        assert_eq!(p.input.name, "VLESS TCP REALITY");
        assert_eq!(p.input.flow, Some(Flow::Vision));
        assert_eq!(
            p.input.security,
            InboundSecurity::Reality {
                dest: "www.example.com:443".into(),
                server_names: vec!["www.example.com".into(), "".into()],
                short_ids: vec!["".into(), "6ba85179e30d4fc2".into()],
                max_time_diff_ms: 0,
                fingerprint: "chrome".into(),
            }
        );
        assert!(!format!("{p:?}{inbound:?}").contains("\"k\""));
        // Without Vision among the users, no flow; a bare port is the node's own.
        let mut v = inbound.0.clone();
        v["streamSettings"]["realitySettings"]["dest"] = json!(8443);
        v["streamSettings"]["realitySettings"]["maxTimeDiff"] = json!(90000);
        let p = plan(&x(v), 7, false).unwrap();
        assert_eq!(p.input.flow, None);
        let InboundSecurity::Reality {
            dest,
            max_time_diff_ms,
            ..
        } = p.input.security
        else {
            panic!()
        };
        assert_eq!((dest.as_str(), max_time_diff_ms), ("127.0.0.1:8443", 90000));
        // The inbound's own flow decides over the hint; a client's gives it.
        let mut v = inbound.0.clone();
        v["settings"]["flow"] = json!("");
        assert_eq!(plan(&x(v.clone()), 7, true).unwrap().input.flow, None);
        v["settings"] = json!({"clients": [{"id": "u", "flow": "xtls-rprx-vision"}]});
        assert_eq!(
            plan(&x(v), 7, false).unwrap().input.flow,
            Some(Flow::Vision)
        );
    }

    #[test]
    fn transports_map_by_their_settings() {
        let with = |stream: Value| {
            plan(
                &x(
                    json!({"tag": "t", "protocol": "trojan", "port": "8080", "streamSettings": stream}),
                ),
                1,
                true,
            )
        };
        let t = |stream: Value| with(stream).map(|p| p.input.transport);
        assert_eq!(t(json!({})), Ok(InboundTransport::Tcp));
        assert_eq!(
            t(
                json!({"network": "ws", "wsSettings": {"path": "/ws", "headers": {"Host": "cdn.example.com"}}})
            ),
            Ok(InboundTransport::Ws {
                path: "/ws".into(),
                host: Some("cdn.example.com".into())
            })
        );
        assert_eq!(
            t(json!({"network": "httpupgrade", "httpupgradeSettings": {"host": "h.example.com"}})),
            Ok(InboundTransport::HttpUpgrade {
                path: "/".into(),
                host: Some("h.example.com".into())
            })
        );
        assert_eq!(
            t(
                json!({"network": "grpc", "grpcSettings": {"serviceName": "svc", "multiMode": true}})
            ),
            Ok(InboundTransport::Grpc {
                service_name: "svc".into(),
                multi_mode: true
            })
        );
        assert_eq!(
            t(
                json!({"network": "splithttp", "splithttpSettings": {"path": "/x", "mode": "packet-up"}})
            ),
            Ok(InboundTransport::Xhttp(crate::model::xhttp::InboundXhttp {
                path: "/x".into(),
                host: None,
                mode: "packet-up".into()
            }))
        );
        assert_eq!(
            t(json!({"network": "tcp", "tcpSettings": {"header": {"type": "http"}}})),
            Err("TCP with a http header disguise is not served here".into())
        );
        assert_eq!(
            t(json!({"network": "kcp"})),
            Err("the kcp transport is not served here".into())
        );
        // TLS from the node's files, with the server name; Vision is for VLESS only.
        let p = with(
            json!({"security": "tls", "tlsSettings": {"serverName": "vpn.example.com",
            "certificates": [{"certificateFile": "/etc/c.pem", "keyFile": "/etc/k.pem"}]}}),
        )
        .unwrap();
        assert_eq!(p.input.port, 8080);
        assert_eq!(p.input.sni.as_deref(), Some("vpn.example.com"));
        assert_eq!(p.input.flow, None);
        assert_eq!(
            p.input.security,
            InboundSecurity::Tls {
                certificate: TlsCertificate::Files {
                    cert: "/etc/c.pem".into(),
                    key: "/etc/k.pem".into()
                }
            }
        );
        assert_eq!(
            with(json!({"security": "tls", "tlsSettings": {"certificates": [{"certificate": ["-----BEGIN"]}]}})).unwrap_err(),
            "its TLS certificate is not given as files (certificateFile, keyFile): create the \
             inbound here with its certificate"
        );
        assert_eq!(
            with(json!({"security": "xtls"})).unwrap_err(),
            "xtls security is not served here"
        );
    }

    #[test]
    fn what_is_not_made_here_says_why() {
        let r = |v: Value| plan(&x(v), 1, false).unwrap_err();
        assert_eq!(
            r(json!({"tag": "v", "protocol": "vmess", "port": 1})),
            "vmess inbounds are not made here: its users get this panel's other inbounds"
        );
        assert_eq!(r(json!({"tag": "v", "port": 1})), "no protocol");
        assert_eq!(
            r(json!({"tag": "v", "protocol": "vless", "port": "1000-2000"})),
            "its port \"1000-2000\" is a range or an environment variable: make it here by hand"
        );
        assert_eq!(
            r(json!({"tag": "v", "protocol": "vless", "port": 70000})),
            "no port from 1 to 65535"
        );
        assert_eq!(
            r(json!({"tag": "v", "protocol": "vless", "port": 443,
                "streamSettings": {"security": "reality", "realitySettings": {"dest": "a:443"}}})),
            "REALITY without its privateKey"
        );
    }

    proptest::proptest! {
        /// Whatever the source's JSON, a plan or a reason, never a panic; a plan's
        /// port is one a node can listen on.
        #[test]
        fn any_inbound_plans_or_says_why(
            protocol in "(vless|trojan|vmess|)",
            port in proptest::prelude::any::<i64>(),
            network in "(tcp|raw|ws|grpc|xhttp|kcp|)",
            security in "(none|tls|reality|)",
            key in "[A-Za-z0-9_-]{0,44}",
        ) {
            let v = json!({"tag": "t", "protocol": protocol, "port": port, "streamSettings": {
                "network": network, "security": security,
                "realitySettings": {"dest": "a:443", "privateKey": key}}});
            if let Ok(p) = plan(&x(v), 1, true) {
                proptest::prop_assert!(p.input.port > 0);
            }
        }
    }
}
