//! The user table: credential → user, rebuilt on every config change.

use std::collections::HashMap;
use std::sync::Arc;

use sha2::{Digest, Sha224, Sha256};

use crate::config::{NodeConfig, constant_time_eq, parse_uuid};

/// One enabled user.
#[derive(Debug, PartialEq, Eq)]
pub struct User {
    /// Name, under which traffic is counted.
    pub name: String,
    /// Most distinct source addresses online at once.
    pub address_limit: Option<u32>,
}

/// Credential look-ups for the protocols. Disabled users are not in it.
#[derive(Debug, Default)]
pub struct Users {
    vless: HashMap<[u8; 16], Arc<User>>,
    trojan: HashMap<[u8; 56], Arc<User>>,
    socks: HashMap<String, (String, Arc<User>)>,
    /// Shadowsocks user keys (raw bytes) with their users, in config order.
    pub shadowsocks: Vec<(Vec<u8>, Arc<User>)>,
    /// Hysteria 2 passwords by their SHA-256, so a look-up's timing says nothing of
    /// the passwords.
    hysteria2: HashMap<[u8; 32], Arc<User>>,
}

/// The hex SHA-224 of a Trojan password, as clients send it.
pub fn trojan_hash(password: &str) -> [u8; 56] {
    let digest = Sha224::digest(password.as_bytes());
    let mut out = [0u8; 56];
    for (i, b) in digest.iter().enumerate() {
        out[2 * i] = HEX[usize::from(b >> 4)];
        out[2 * i + 1] = HEX[usize::from(b & 0xf)];
    }
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";

impl Users {
    /// The table for `config` (validated: credentials parse and are unique).
    pub fn build(config: &NodeConfig) -> Self {
        let mut t = Self::default();
        for u in config.users.iter().filter(|u| u.enabled) {
            let user = Arc::new(User {
                name: u.name.clone(),
                address_limit: u.address_limit,
            });
            if let Some(id) = u.vless.as_ref().and_then(|s| parse_uuid(s.expose())) {
                t.vless.insert(id, user.clone());
            }
            if let Some(pw) = &u.trojan {
                t.trojan.insert(trojan_hash(pw.expose()), user.clone());
            }
            if let Some(pw) = &u.socks {
                t.socks
                    .insert(u.name.clone(), (pw.expose().to_owned(), user.clone()));
            }
            if let Some(pw) = &u.hysteria2 {
                t.hysteria2
                    .insert(Sha256::digest(pw.expose().as_bytes()).into(), user.clone());
            }
            if let Some(key) = &u.shadowsocks {
                use base64::Engine as _;
                if let Ok(raw) = base64::engine::general_purpose::STANDARD.decode(key.expose()) {
                    t.shadowsocks.push((raw, user.clone()));
                }
            }
        }
        t
    }

    /// The user with this VLESS UUID.
    pub fn vless(&self, uuid: &[u8; 16]) -> Option<&Arc<User>> {
        self.vless.get(uuid)
    }

    /// The user whose Trojan password hashes to `hash` (hex, lowercase or uppercase).
    pub fn trojan(&self, hash: &[u8; 56]) -> Option<&Arc<User>> {
        let mut lower = *hash;
        lower.make_ascii_lowercase();
        self.trojan.get(&lower)
    }

    /// The user with this Hysteria 2 password (a client's `Hysteria-Auth`).
    pub fn hysteria2(&self, password: &str) -> Option<&Arc<User>> {
        let digest: [u8; 32] = Sha256::digest(password.as_bytes()).into();
        self.hysteria2.get(&digest)
    }

    /// The user with this SOCKS5 name and password.
    pub fn socks(&self, name: &str, password: &str) -> Option<&Arc<User>> {
        self.socks
            .get(name)
            .filter(|(pw, _)| constant_time_eq(pw.as_bytes(), password.as_bytes()))
            .map(|(_, u)| u)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::NodeConfig;

    #[test]
    fn trojan_hash_matches_the_protocol() {
        // SHA-224("password"), as Trojan clients send it.
        assert_eq!(
            &trojan_hash("password"),
            b"d63dc919e201d7bc4c825630d2cf25fdc93d4b2f0d46706d29038d01"
        );
    }

    #[test]
    fn lookups_skip_disabled_users() {
        let config = NodeConfig::from_toml(
            r#"
            [[users]]
            name = "alice"
            vless = "b831381d-6324-4d53-ad4f-8cda48b30811"
            trojan = "pw-a"
            socks = "s-a"
            hysteria2 = "hy-a"
            [[users]]
            name = "bob"
            enabled = false
            trojan = "pw-b"
            hysteria2 = "hy-b"
            "#,
        )
        .unwrap();
        let users = Users::build(&config);
        let id = parse_uuid("b831381d-6324-4d53-ad4f-8cda48b30811").unwrap();
        assert_eq!(users.vless(&id).unwrap().name, "alice");
        assert_eq!(users.trojan(&trojan_hash("pw-a")).unwrap().name, "alice");
        let mut upper = trojan_hash("pw-a");
        upper.make_ascii_uppercase();
        assert!(users.trojan(&upper).is_some());
        assert!(users.trojan(&trojan_hash("pw-b")).is_none());
        assert!(users.socks("alice", "s-a").is_some());
        assert!(users.socks("alice", "wrong").is_none());
        assert_eq!(users.hysteria2("hy-a").unwrap().name, "alice");
        assert!(users.hysteria2("hy-b").is_none(), "disabled");
        assert!(users.hysteria2("HY-A").is_none());
    }
}
