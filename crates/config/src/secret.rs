//! Secrets in config: compared in constant time, never printed.

use core::fmt;

use serde::{Deserialize, Serialize};

/// A credential (password, key, UUID) whose `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the code that must use it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// What reads of the config show in place of a secret.
pub const REDACTED: &str = "<redacted>";

impl super::NodeConfig {
    /// Every secret in the config, with the path of its field.
    fn secrets_mut(&mut self) -> Vec<(String, &mut Secret)> {
        let mut out = Vec::new();
        for (i, ib) in self.inbounds.iter_mut().enumerate() {
            if let Some(s) = &mut ib.password {
                out.push((format!("inbounds[{i}].password"), s));
            }
            if let Some(s) = ib.hysteria2.as_mut().and_then(|h| h.obfs_password.as_mut()) {
                out.push((format!("inbounds[{i}].hysteria2.obfs_password"), s));
            }
            match &mut ib.security {
                super::Security::Tls {
                    key_pem: Some(s), ..
                } => out.push((format!("inbounds[{i}].security.key_pem"), s)),
                super::Security::Reality { private_key, .. } => {
                    out.push((format!("inbounds[{i}].security.private_key"), private_key));
                }
                _ => {}
            }
        }
        for (i, u) in self.users.iter_mut().enumerate() {
            let fields = [
                ("vless", &mut u.vless),
                ("trojan", &mut u.trojan),
                ("shadowsocks", &mut u.shadowsocks),
                ("socks", &mut u.socks),
                ("hysteria2", &mut u.hysteria2),
            ];
            for (name, s) in fields {
                if let Some(s) = s {
                    out.push((format!("users[{i}].{name}"), s));
                }
            }
        }
        for (i, t) in self.tunnels.iter_mut().enumerate() {
            if let Some(r) = &mut t.relay {
                if let Some(k) = &mut r.key_pem {
                    out.push((format!("tunnels[{i}].relay.key_pem"), k));
                }
                if let Some(k) = &mut r.reality_private_key {
                    out.push((format!("tunnels[{i}].relay.reality_private_key"), k));
                }
                for (j, o) in r.origins.iter_mut().enumerate() {
                    out.push((
                        format!("tunnels[{i}].relay.origins[{j}].credential"),
                        &mut o.credential,
                    ));
                    if let Some(p) = &mut o.previous_credential {
                        out.push((
                            format!("tunnels[{i}].relay.origins[{j}].previous_credential"),
                            p,
                        ));
                    }
                }
            }
            if let Some(o) = &mut t.origin {
                if let Some(k) = &mut o.key_pem {
                    out.push((format!("tunnels[{i}].origin.key_pem"), k));
                }
                if let Some(k) = &mut o.reality_private_key {
                    out.push((format!("tunnels[{i}].origin.reality_private_key"), k));
                }
                out.push((format!("tunnels[{i}].origin.credential"), &mut o.credential));
                if let Some(p) = &mut o.previous_credential {
                    out.push((format!("tunnels[{i}].origin.previous_credential"), p));
                }
            }
        }
        out
    }

    /// The config with every secret (user credentials, Shadowsocks server keys, Hysteria 2
    /// obfs passwords, inline TLS keys, REALITY private keys, tunnel credentials) replaced by [`REDACTED`], for reads.
    pub fn redacted(&self) -> Self {
        let mut c = self.clone();
        for (_, s) in c.secrets_mut() {
            *s = Secret::new(REDACTED);
        }
        c
    }

    /// The first field holding [`REDACTED`]: a config that was read and sent back
    /// without its secrets filled in.
    pub fn redacted_field(&self) -> Option<String> {
        let mut c = self.clone();
        c.secrets_mut()
            .into_iter()
            .find(|(_, s)| s.expose() == REDACTED)
            .map(|(field, _)| field)
    }
}

/// Compares two byte strings in time that depends only on their lengths.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?} {s}"), "Secret(***) ***");
        assert_eq!(s.expose(), "hunter2");
    }

    #[test]
    fn constant_time_eq_compares() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
