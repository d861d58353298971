//! A certificate from an ACME server (Let's Encrypt by default), obtained and renewed
//! by whoever serves it: the panel for its own HTTPS, a node for a TLS inbound. The
//! server validates with TLS-ALPN-01 (RFC 8737): it connects to port 443 of each
//! identifier (a test server may use another port) and offers ALPN `acme-tls/1`;
//! the listener answers with a challenge certificate. The same settings serve both.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Let's Encrypt's production directory.
pub const LETS_ENCRYPT: &str = "https://acme-v02.api.letsencrypt.org/directory";
/// The most identifiers one certificate is asked for.
pub const MAX_IDENTIFIERS: usize = 10;
/// The most days before expiry a renewal may be asked for: ten years (public ACME
/// servers' certificates last 90 days or less; a private one's may last years).
pub const MAX_RENEW_DAYS: u32 = 3650;

/// Where a certificate comes from and what it is for.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcmeSettings {
    /// The names (or IP addresses) the certificate is for, at most
    /// [`MAX_IDENTIFIERS`]. The panel's own defaults to its `public_url`'s host; an
    /// inbound's needs at least one.
    #[serde(default)]
    pub identifiers: Vec<String>,
    /// The ACME server's directory, an `https://` URL. Default: Let's Encrypt's.
    #[serde(default = "lets_encrypt")]
    pub directory: String,
    /// A PEM file of the root that the ACME server's own HTTPS chains to, for a test
    /// or private ACME server; unset: the system's roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory_root: Option<PathBuf>,
    /// The same root as PEM text (what the panel pushes); not with `directory_root`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory_root_pem: Option<String>,
    /// An address for the ACME server's notices (expiry warnings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// Renew when the certificate has fewer days than this left. Default 30, as
    /// Let's Encrypt advises for its 90-day certificates.
    #[serde(default = "thirty")]
    pub renew_days: u32,
}

impl Default for AcmeSettings {
    fn default() -> Self {
        Self {
            identifiers: Vec::new(),
            directory: lets_encrypt(),
            directory_root: None,
            directory_root_pem: None,
            email: None,
            renew_days: thirty(),
        }
    }
}

fn lets_encrypt() -> String {
    LETS_ENCRYPT.to_owned()
}

fn thirty() -> u32 {
    30
}

/// What is wrong with [`AcmeSettings`]: the field (relative to the settings) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcmeProblem {
    /// `identifiers[1]`, `directory`, …
    pub field: String,
    /// What is wrong and what would be right.
    pub problem: String,
}

fn problem(field: impl Into<String>, problem: impl Into<String>) -> AcmeProblem {
    AcmeProblem {
        field: field.into(),
        problem: problem.into(),
    }
}

impl AcmeSettings {
    /// Checks every field; identifiers may be empty here (the panel fills its own in),
    /// callers that need one say so.
    pub fn check(&self) -> Result<(), AcmeProblem> {
        if !self.directory.starts_with("https://") || self.directory.len() > 2048 {
            return Err(problem(
                "directory",
                "must be an https:// URL (at most 2048 bytes)",
            ));
        }
        if self.directory_root.is_some() && self.directory_root_pem.is_some() {
            return Err(problem(
                "directory_root_pem",
                "give directory_root (a file) or directory_root_pem (PEM text), not both",
            ));
        }
        if let Some(pem) = &self.directory_root_pem
            && (!pem.contains("-----BEGIN CERTIFICATE-----") || pem.len() > 64 * 1024)
        {
            return Err(problem(
                "directory_root_pem",
                "must be PEM certificates (at most 64 KiB)",
            ));
        }
        if let Some(email) = &self.email
            && !email_ok(email)
        {
            return Err(problem(
                "email",
                "must be one address like ops@example.com (at most 254 bytes)",
            ));
        }
        if !(1..=MAX_RENEW_DAYS).contains(&self.renew_days) {
            return Err(problem("renew_days", format!("must be 1-{MAX_RENEW_DAYS}")));
        }
        if self.identifiers.len() > MAX_IDENTIFIERS {
            return Err(problem(
                "identifiers",
                format!("at most {MAX_IDENTIFIERS} names or addresses"),
            ));
        }
        for (i, id) in self.identifiers.iter().enumerate() {
            if !identifier_ok(id) {
                return Err(problem(
                    format!("identifiers[{i}]"),
                    format!(
                        "{id:?} is neither a DNS name nor an IP address (TLS-ALPN-01 cannot validate wildcards)"
                    ),
                ));
            }
            if self.identifiers[..i]
                .iter()
                .any(|o| o.eq_ignore_ascii_case(id))
            {
                return Err(problem(
                    format!("identifiers[{i}]"),
                    format!("{id:?} is named twice"),
                ));
            }
        }
        Ok(())
    }
}

/// A DNS name (letters, digits, `-` and `.`, labels of 1-63 bytes not starting or
/// ending with `-`, at most 253 bytes, not all digits) or an IP address.
pub fn identifier_ok(id: &str) -> bool {
    if id.parse::<std::net::IpAddr>().is_ok() {
        return true;
    }
    id.contains(|c: char| c.is_ascii_alphabetic()) && crate::validate::dns_name(id, false)
}

fn email_ok(email: &str) -> bool {
    email.len() <= 254
        && email
            .split_once('@')
            .is_some_and(|(local, domain)| !local.is_empty() && identifier_ok(domain))
        && email
            .bytes()
            .all(|b| b.is_ascii_graphic() && !matches!(b, b',' | b'<' | b'>' | b'"'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(f: impl FnOnce(&mut AcmeSettings)) -> Result<(), String> {
        let mut s = AcmeSettings {
            identifiers: vec!["vpn.example.com".into(), "127.0.0.1".into()],
            ..AcmeSettings::default()
        };
        f(&mut s);
        s.check().map_err(|p| p.field)
    }

    #[test]
    fn defaults_are_let_s_encrypt_and_thirty_days() {
        let s: AcmeSettings = toml::from_str("identifiers = [\"a.example\"]").unwrap();
        assert_eq!(s.directory, LETS_ENCRYPT);
        assert_eq!(s.renew_days, 30);
        assert_eq!(s.check(), Ok(()));
        assert!(toml::from_str::<AcmeSettings>("domain = \"a\"").is_err());
    }

    #[test]
    fn each_field_is_checked_and_named() {
        assert_eq!(with(|_| {}), Ok(()));
        assert_eq!(
            with(|s| s.directory = "http://acme.test/dir".into()),
            Err("directory".into())
        );
        assert_eq!(
            with(|s| {
                s.directory_root = Some("/r.pem".into());
                s.directory_root_pem = Some("-----BEGIN CERTIFICATE-----".into());
            }),
            Err("directory_root_pem".into())
        );
        assert_eq!(
            with(|s| s.directory_root_pem = Some("nope".into())),
            Err("directory_root_pem".into())
        );
        for bad in [
            "ops",
            "ops@",
            "a@b@c",
            "ops@exa mple.com",
            "<ops@example.com>",
        ] {
            assert_eq!(
                with(|s| s.email = Some(bad.into())),
                Err("email".into()),
                "{bad}"
            );
        }
        assert_eq!(with(|s| s.email = Some("ops@example.com".into())), Ok(()));
        assert_eq!(with(|s| s.renew_days = 0), Err("renew_days".into()));
        assert_eq!(with(|s| s.renew_days = 3651), Err("renew_days".into()));
        for bad in [
            "*.example.com",
            "-a.example",
            "a..example",
            "",
            "1.2.3",
            "é.example",
        ] {
            assert_eq!(
                with(|s| s.identifiers[1] = bad.into()),
                Err("identifiers[1]".into()),
                "{bad:?}"
            );
        }
        assert_eq!(
            with(|s| s.identifiers[1] = "VPN.example.com".into()),
            Err("identifiers[1]".into())
        );
        assert_eq!(
            with(|s| s.identifiers = vec!["a.example".into(); 11]),
            Err("identifiers".into())
        );
        assert_eq!(with(|s| s.identifiers[1] = "::1".into()), Ok(()));
    }
}
