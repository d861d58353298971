//! Users and the credentials they may use.

use serde::{Deserialize, Serialize};

use crate::Secret;

/// A user and the credentials it may use.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserConfig {
    /// Unique name; traffic is counted under it.
    pub name: String,
    /// A disabled user is refused and its connections are closed.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// VLESS UUID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vless: Option<Secret>,
    /// Trojan password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trojan: Option<Secret>,
    /// Shadowsocks 2022 user key (base64, the method's key length).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shadowsocks: Option<Secret>,
    /// SOCKS5 password (the user name is `name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socks: Option<Secret>,
    /// Hysteria 2 password (what the client sends as `Hysteria-Auth`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hysteria2: Option<Secret>,
    /// The most distinct source addresses the user may have online at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address_limit: Option<u32>,
}

fn yes() -> bool {
    true
}
