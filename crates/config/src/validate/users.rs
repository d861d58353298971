//! The users' section: names, credentials that read, and no credential shared.

use std::collections::{HashMap, HashSet};

use super::inbounds::{parse_uuid, ss_key};
use super::{ConfigError, invalid};
use crate::{NodeConfig, Protocol};

impl NodeConfig {
    pub(super) fn validate_users(&self) -> Result<(), ConfigError> {
        let mut names = HashSet::new();
        let mut seen: HashMap<(&str, String), usize> = HashMap::new();
        for (i, u) in self.users.iter().enumerate() {
            let f = |name: &str| format!("users[{i}].{name}");
            if u.name.is_empty() || u.name.len() > 128 || u.name.chars().any(char::is_control) {
                return Err(invalid(f("name"), "use 1-128 printable characters"));
            }
            if !names.insert(u.name.as_str()) {
                return Err(invalid(
                    f("name"),
                    format!("{:?} is used by another user", u.name),
                ));
            }
            if let Some(id) = &u.vless
                && parse_uuid(id.expose()).is_none()
            {
                return Err(invalid(
                    f("vless"),
                    "is not a UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)",
                ));
            }
            if let Some(key) = &u.shadowsocks {
                for ib in self
                    .inbounds
                    .iter()
                    .filter(|ib| ib.protocol == Protocol::Shadowsocks)
                {
                    if let Some(method) = ib.method {
                        ss_key(key.expose(), method).map_err(|p| {
                            invalid(f("shadowsocks"), format!("for inbound {:?}: {p}", ib.tag))
                        })?;
                    }
                }
            }
            if let Some(pw) = &u.hysteria2 {
                if pw.expose().is_empty() {
                    return Err(invalid(f("hysteria2"), "must not be empty"));
                }
                // Never the password in the message: it is a secret.
                if pw.expose().chars().any(char::is_control) {
                    return Err(invalid(
                        f("hysteria2"),
                        "must not hold control characters (clients send it in an HTTP header)",
                    ));
                }
            }
            if u.address_limit == Some(0) {
                return Err(invalid(
                    f("address_limit"),
                    "must be at least 1 (omit it for no limit)",
                ));
            }
            let creds = [
                (
                    "vless",
                    u.vless
                        .as_ref()
                        .map(|s| s.expose().to_ascii_lowercase().replace('-', "")),
                ),
                ("trojan", u.trojan.as_ref().map(|s| s.expose().to_owned())),
                (
                    "shadowsocks",
                    u.shadowsocks.as_ref().map(|s| s.expose().to_owned()),
                ),
                (
                    "hysteria2",
                    u.hysteria2.as_ref().map(|s| s.expose().to_owned()),
                ),
            ];
            for (kind, cred) in creds {
                if let Some(cred) = cred
                    && let Some(j) = seen.insert((kind, cred), i)
                {
                    return Err(invalid(
                        f(kind),
                        format!(
                            "the same credential as users[{j}] ({:?}); each user needs its own",
                            self.users[j].name
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}
