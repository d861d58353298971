//! A subscription's body for an app, in the format it reads: a sing-box or Xray JSON
//! config, a Clash YAML config, or base64 share links; with its content type and the
//! file name it is saved as. The renderers live in `switchyard_proto`.

use switchyard_proto::entry::Entry;
use switchyard_proto::routing::Routing;
use switchyard_proto::vpn::VpnOptions;

use super::agents::Format;

/// What an app gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppBody {
    /// The config or links.
    pub text: String,
    /// Its media type.
    pub content_type: &'static str,
    /// The file name it is saved as.
    pub file_name: &'static str,
}

/// `entries` in `format`; `group_name` names the selector group (sing-box, Clash).
/// `vpn` is what a VPN config needs (the resolver asked through the proxy): every
/// Clash config (the apps' TUN switch uses it) and Xray config (the apps carry their
/// VPN into its SOCKS inbound) carries it; a sing-box config only for an app that
/// builds its VPN from the config (`builds_vpn`). `routing` is the split tunnelling
/// every config carries (share links carry none); `template` the operator's base
/// config for the format, if any (`switchyard_proto::template`).
pub fn app_body(
    format: Format,
    entries: &[Entry],
    group_name: &str,
    vpn: &VpnOptions,
    builds_vpn: bool,
    routing: &Routing,
    template: Option<&serde_json::Value>,
) -> AppBody {
    let (text, content_type, file_name) = match format {
        Format::SingBox => {
            let options = switchyard_proto::singbox::SingBoxOptions {
                group_name: group_name.to_owned(),
                vpn: builds_vpn.then(|| vpn.clone()),
                routing: Some(routing.clone()),
                ..Default::default()
            };
            let config = switchyard_proto::singbox::ClientConfig::new(entries, &options);
            let text = match template {
                Some(t) => {
                    let ours = serde_json::to_value(&config).unwrap_or_default();
                    switchyard_proto::template::singbox(t, &ours, group_name).to_string()
                }
                None => serde_json::to_string(&config).unwrap_or_default(),
            };
            (text, "application/json; charset=utf-8", "switchyard.json")
        }
        Format::Clash => {
            let options = switchyard_proto::clash::ClashOptions {
                group_name: group_name.to_owned(),
                vpn: Some(vpn.clone()),
                routing: Some(routing.clone()),
                ..Default::default()
            };
            (
                match template {
                    Some(t) => switchyard_proto::clash::client_config_in(entries, &options, t),
                    None => switchyard_proto::clash::client_config(entries, &options),
                },
                "text/yaml; charset=utf-8",
                "switchyard.yaml",
            )
        }
        Format::Xray => {
            let options = switchyard_proto::xray::XrayOptions {
                vpn: Some(vpn.clone()),
                routing: Some(routing.clone()),
                ..Default::default()
            };
            let configs = match template {
                Some(t) => switchyard_proto::xray::client_configs_in(entries, &options, t),
                None => switchyard_proto::xray::client_configs(entries, &options),
            };
            (
                serde_json::to_string(&configs).unwrap_or_default(),
                "application/json; charset=utf-8",
                "switchyard.json",
            )
        }
        Format::Links => (
            switchyard_proto::share::subscription_base64(entries),
            "text/plain; charset=utf-8",
            "switchyard.txt",
        ),
    };
    AppBody {
        text,
        content_type,
        file_name,
    }
}
