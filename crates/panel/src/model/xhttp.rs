//! An XHTTP inbound's settings (Xray's SplitHTTP successor: the stream as ordinary
//! HTTP requests under a path, so it crosses anything that carries HTTP, a CDN
//! included), and the rules that check them (each error names the field).
//!
//! VLESS or Trojan, with security none, TLS or REALITY. Only Xray-based apps run
//! it: sing-box and Clash subscriptions leave such inbounds out and say why
//! (`subscription::support`). Padding, upload limits and XMUX are Xray's defaults
//! on both sides, so entries carry no `extra`.

use serde::{Deserialize, Serialize};
use switchyard_proto::xhttp::{Mode, Settings};
use utoipa::ToSchema;

use super::{FieldError, check_host};

/// An XHTTP inbound's transport settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InboundXhttp {
    /// The path requests go under: starts with `/`, no query, at most 256
    /// characters.
    #[schema(max_length = 256, pattern = r"^/[^?\x00-\x1f\x7f-\x9f]*$")]
    pub path: String,
    /// The `Host` the node expects and clients send; any when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// How clients send the upload: `auto` (the default: the client picks),
    /// `packet-up`, `stream-up` or `stream-one`. The node in `auto` takes every
    /// mode; in another, that one only.
    #[serde(default = "auto")]
    #[schema(pattern = r"^(auto|packet-up|stream-up|stream-one)$")]
    pub mode: String,
}

fn auto() -> String {
    Mode::Auto.name().to_owned()
}

impl InboundXhttp {
    /// The mode, `auto` for a name that is not one (checked before it is stored).
    pub fn mode(&self) -> Mode {
        Mode::parse(&self.mode).unwrap_or_default()
    }

    /// The node's settings: path, host and mode, Xray's defaults otherwise.
    pub fn settings(&self) -> Settings {
        let mut settings = Settings::new(self.path.clone());
        settings.host = self.host.clone();
        settings.mode = self.mode();
        settings
    }
}

/// Checks an XHTTP inbound's settings; `vless_or_trojan`: whether its protocol is
/// one XHTTP carries.
pub fn check_xhttp(x: &InboundXhttp, vless_or_trojan: bool) -> Result<(), FieldError> {
    if !vless_or_trojan {
        return Err(FieldError::new(
            "transport",
            "XHTTP carries VLESS or Trojan only",
        ));
    }
    let path = &x.path;
    if !path.starts_with('/')
        || path.len() > 256
        || path.contains('?')
        || path.chars().any(char::is_control)
    {
        return Err(FieldError::new(
            "transport.path",
            "must start with /, have no query and be at most 256 characters",
        ));
    }
    if let Some(h) = &x.host {
        check_host("transport.host", h)?;
    }
    if Mode::parse(&x.mode).is_none() || x.mode.is_empty() {
        return Err(FieldError::new(
            "transport.mode",
            "must be auto, packet-up, stream-up or stream-one",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x(path: &str, host: Option<&str>, mode: &str) -> InboundXhttp {
        InboundXhttp {
            path: path.into(),
            host: host.map(str::to_owned),
            mode: mode.into(),
        }
    }

    #[test]
    fn each_wrong_field_is_named() {
        // `true`: VLESS or Trojan; `false`: Shadowsocks, Hysteria 2 (the caller's).
        let field = |carried: bool, x: InboundXhttp| check_xhttp(&x, carried).map_err(|e| e.field);
        assert_eq!(field(true, x("/xh", None, "auto")), Ok(()));
        assert_eq!(
            field(true, x("/", Some("cdn.example.com"), "stream-one")),
            Ok(())
        );
        assert_eq!(
            field(false, x("/xh", None, "auto")),
            Err("transport".into())
        );
        for path in ["xh", "/a?b=1", "/a\nb", &format!("/{}", "a".repeat(256))] {
            assert_eq!(
                field(true, x(path, None, "auto")),
                Err("transport.path".into())
            );
        }
        assert_eq!(
            field(true, x("/", Some("bad host"), "auto")),
            Err("transport.host".into())
        );
        for mode in ["", "stream", "Auto", "packet_up"] {
            assert_eq!(
                field(true, x("/", None, mode)),
                Err("transport.mode".into())
            );
        }
    }

    #[test]
    fn the_node_gets_path_host_and_mode() {
        let s = x("/xh", Some("cdn.example.com"), "packet-up").settings();
        let mut want = Settings::new("/xh");
        want.host = Some("cdn.example.com".into());
        want.mode = Mode::PacketUp;
        assert_eq!(s, want);
        let json: InboundXhttp = serde_json::from_str(r#"{"path":"/a"}"#).unwrap();
        assert_eq!(json, x("/a", None, "auto"));
    }
}
