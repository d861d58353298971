//! Where a TLS inbound's certificate comes from ([`TlsCertificate`]), and what the
//! node is told of an ACME certificate.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::FieldError;

/// Where a TLS inbound's certificate comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "source", rename_all = "snake_case", deny_unknown_fields)]
pub enum TlsCertificate {
    /// The panel generates a self-signed certificate for the inbound's SNI and gives
    /// it to clients in the subscription to pin (sing-box) or to accept without a CA
    /// (share links, `allowInsecure=1`). For first looks and tests; use a real
    /// certificate in production.
    SelfSigned,
    /// PEM files on the node (for example kept fresh by an ACME client there).
    Files {
        /// The certificate chain's path on the node.
        cert: String,
        /// The private key's path on the node.
        key: String,
    },
    /// A certificate the node obtains and renews itself from an ACME server (Let's
    /// Encrypt unless `directory` names another), for the name clients ask for: the
    /// inbound's `sni`, else its `host`, else the server's address. The ACME server
    /// validates on port 443 of that name (TLS-ALPN-01), so the inbound listens on
    /// 443 or has 443 forwarded to it. Not for Hysteria 2 (UDP).
    Acme {
        /// An address for the ACME server's notices (expiry warnings).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schema(max_length = 254, example = "ops@example.com")]
        email: Option<String>,
        /// Another ACME server's directory (`https://`); unset: Let's Encrypt.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schema(max_length = 2048)]
        directory: Option<String>,
        /// The root (PEM) that a private ACME server's own HTTPS chains to; unset:
        /// the node's system roots.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schema(max_length = 65536)]
        directory_root_pem: Option<String>,
    },
}

impl TlsCertificate {
    /// The node's ACME settings of an [`TlsCertificate::Acme`] certificate for
    /// `name` (what clients ask for); `None` for the other sources.
    pub fn acme_settings(&self, name: &str) -> Option<switchyard_config::AcmeSettings> {
        let Self::Acme {
            email,
            directory,
            directory_root_pem,
        } = self
        else {
            return None;
        };
        let mut settings = switchyard_config::AcmeSettings {
            identifiers: vec![name.to_owned()],
            email: email.clone(),
            directory_root_pem: directory_root_pem.clone(),
            ..switchyard_config::AcmeSettings::default()
        };
        if let Some(d) = directory {
            settings.directory.clone_from(d);
        }
        Some(settings)
    }
}

impl TlsCertificate {
    /// An ACME certificate's settings, as the node checks them (errors name
    /// `security.certificate.<field>`).
    pub(crate) fn check(&self) -> Result<(), FieldError> {
        let Some(settings) = self.acme_settings("placeholder.invalid") else {
            return Ok(());
        };
        settings
            .check()
            .map_err(|p| FieldError::new(format!("security.certificate.{}", p.field), p.problem))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acme(email: Option<&str>, directory: Option<&str>) -> TlsCertificate {
        TlsCertificate::Acme {
            email: email.map(str::to_owned),
            directory: directory.map(str::to_owned),
            directory_root_pem: None,
        }
    }

    #[test]
    fn an_acme_certificate_is_for_the_name_clients_ask_for_from_let_s_encrypt_by_default() {
        let s = acme(Some("ops@example.com"), None)
            .acme_settings("vpn.example.com")
            .unwrap();
        assert_eq!(s.identifiers, ["vpn.example.com"]);
        assert_eq!(s.directory, switchyard_config::acme::LETS_ENCRYPT);
        assert_eq!(s.email.as_deref(), Some("ops@example.com"));
        assert_eq!(s.renew_days, 30);
        let s = acme(None, Some("https://acme.test/dir"))
            .acme_settings("1.2.3.4")
            .unwrap();
        assert_eq!(s.directory, "https://acme.test/dir");
        assert_eq!(TlsCertificate::SelfSigned.acme_settings("a.example"), None);
    }

    #[test]
    fn acme_errors_name_the_field() {
        let field = |c: TlsCertificate| c.check().unwrap_err().field;
        assert_eq!(field(acme(Some("ops"), None)), "security.certificate.email");
        assert_eq!(
            field(acme(None, Some("http://acme.test/dir"))),
            "security.certificate.directory"
        );
        assert_eq!(acme(Some("ops@example.com"), None).check(), Ok(()));
        assert_eq!(TlsCertificate::SelfSigned.check(), Ok(()));
    }
}
