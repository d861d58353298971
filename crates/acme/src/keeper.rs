//! Obtaining, keeping and renewing one certificate.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use instant_acme::{
    Account, AccountCredentials, ChallengeType, Identifier, NewAccount, NewOrder, OrderStatus,
    RetryPolicy,
};
use rustls::sign::CertifiedKey;
use switchyard_config::AcmeSettings;
use tokio_util::sync::CancellationToken;

use crate::served::Served;

/// How often the certificate's age is looked at.
const CHECK_EVERY: Duration = Duration::from_secs(3600);
/// The first wait after a failed attempt; it doubles up to [`CHECK_EVERY`].
const FIRST_RETRY: Duration = Duration::from_secs(60);

/// Why a certificate could not be obtained.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AcmeError {
    /// The ACME server refused or failed.
    #[error("the ACME server: {0}")]
    Server(#[from] instant_acme::Error),
    /// A file of the keeper's directory.
    #[error("{}: {source}", .path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The order did not become ready.
    #[error("the order ended {0:?}")]
    Order(OrderStatus),
    /// The certificate (issued, kept or the challenge's) is unusable.
    #[error("{0}")]
    Certificate(String),
}

/// Obtains and renews the certificate of `settings` into the directory it keeps,
/// serving it through [`Keeper::served`].
#[derive(Debug)]
pub struct Keeper {
    settings: AcmeSettings,
    dir: PathBuf,
    served: Arc<Served>,
}

impl Keeper {
    /// A keeper for `settings` (whose identifiers are the certificate's) keeping its
    /// files in `dir` (made `0700`; `cert.pem`, `key.pem`, `account.json`, 0600).
    pub fn new(settings: AcmeSettings, dir: PathBuf) -> Arc<Self> {
        Arc::new(Self {
            settings,
            dir,
            served: Arc::default(),
        })
    }

    /// What the listener serves.
    pub fn served(&self) -> &Arc<Served> {
        &self.served
    }

    /// The identifiers the certificate is for.
    pub fn identifiers(&self) -> &[String] {
        &self.settings.identifiers
    }

    /// Serves the kept certificate, then obtains one when there is none or it is due,
    /// again every hour, until `stop`.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let mut retry = FIRST_RETRY;
        let mut expires = self.load_stored().await;
        let names = self.settings.identifiers.join(", ");
        loop {
            let due = expires.is_none_or(|not_after| {
                let left = not_after.saturating_sub(crate::now_s());
                left < i64::from(self.settings.renew_days) * 86_400
            });
            let wait = if due {
                let obtained = tokio::select! {
                    r = self.obtain() => r,
                    () = stop.cancelled() => return,
                };
                match obtained {
                    Ok(not_after) => {
                        tracing::info!(
                            "acme: a certificate for {names} served, valid until {not_after} (Unix s)"
                        );
                        expires = Some(not_after);
                        retry = FIRST_RETRY;
                        CHECK_EVERY
                    }
                    Err(e) => {
                        // A challenge of the failed order is not answered any more.
                        self.served.clear_challenges();
                        tracing::error!(
                            "acme: no certificate for {names}: {e}; again in {retry:?}"
                        );
                        let wait = retry;
                        retry = (retry * 2).min(CHECK_EVERY);
                        wait
                    }
                }
            } else {
                CHECK_EVERY
            };
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = stop.cancelled() => return,
            }
        }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The stored certificate, served, and its expiry (Unix s); `None` when there is
    /// none or it is unusable (then a new one is obtained).
    async fn load_stored(&self) -> Option<i64> {
        let (cert, key) = (self.file("cert.pem"), self.file("key.pem"));
        let (cert_pem, key_pem) = tokio::task::spawn_blocking(move || {
            Some((std::fs::read(cert).ok()?, std::fs::read(key).ok()?))
        })
        .await
        .ok()??;
        match self.serve(&cert_pem, &key_pem) {
            Ok(not_after) => Some(not_after),
            Err(e) => {
                tracing::warn!(
                    "acme: the stored certificate is not usable ({e}): getting a new one"
                );
                None
            }
        }
    }

    /// Serves a chain and key; its expiry (Unix s).
    fn serve(&self, cert_pem: &[u8], key_pem: &[u8]) -> Result<i64, AcmeError> {
        let (key, not_after) = read_issued(
            cert_pem,
            key_pem,
            &self.file("cert.pem"),
            &self.file("key.pem"),
        )?;
        self.served.set_current(Arc::new(key));
        Ok(not_after)
    }

    /// The root the ACME server's HTTPS chains to, as a file (written from
    /// `directory_root_pem` when that is how it was given).
    async fn directory_root(&self) -> Result<Option<PathBuf>, AcmeError> {
        match (
            &self.settings.directory_root,
            &self.settings.directory_root_pem,
        ) {
            (Some(path), _) => Ok(Some(path.clone())),
            (None, Some(pem)) => {
                let path = self.file("directory-root.pem");
                write_private(&self.dir, &path, pem.as_bytes()).await?;
                Ok(Some(path))
            }
            (None, None) => Ok(None),
        }
    }

    async fn account(&self) -> Result<Account, AcmeError> {
        let path = self.file("account.json");
        let root = self.directory_root().await?;
        let builder = || match &root {
            Some(root) => Account::builder_with_root(root),
            None => Account::builder(),
        };
        if let Ok(text) = tokio::fs::read_to_string(&path).await
            && let Ok(credentials) = serde_json::from_str::<AccountCredentials>(&text)
        {
            return Ok(builder()?.from_credentials(credentials).await?);
        }
        let contact = self.settings.email.as_ref().map(|e| format!("mailto:{e}"));
        let contacts: Vec<&str> = contact.iter().map(String::as_str).collect();
        let (account, credentials) = builder()?
            .create(
                &NewAccount {
                    contact: &contacts,
                    terms_of_service_agreed: true,
                    only_return_existing: false,
                },
                self.settings.directory.clone(),
                None,
            )
            .await?;
        let text = serde_json::to_string(&credentials)
            .map_err(|e| AcmeError::Certificate(e.to_string()))?;
        write_private(&self.dir, &path, text.as_bytes()).await?;
        Ok(account)
    }

    /// Orders a certificate, answers its challenges, stores and serves it.
    async fn obtain(&self) -> Result<i64, AcmeError> {
        let account = self.account().await?;
        let identifiers: Vec<Identifier> = self
            .settings
            .identifiers
            .iter()
            .map(|i| match i.parse::<std::net::IpAddr>() {
                Ok(ip) => Identifier::Ip(ip),
                Err(_) => Identifier::Dns(i.clone()),
            })
            .collect();
        let mut order = account.new_order(&NewOrder::new(&identifiers)).await?;
        let mut authorizations = order.authorizations();
        while let Some(authorization) = authorizations.next().await {
            let mut authorization = authorization?;
            if authorization.status == instant_acme::AuthorizationStatus::Valid {
                continue;
            }
            let name = match authorization.identifier().identifier {
                Identifier::Ip(ip) => ip.to_string(),
                Identifier::Dns(d) => d.clone(),
                other => {
                    return Err(AcmeError::Certificate(format!(
                        "cannot answer for {other:?}"
                    )));
                }
            };
            let mut challenge = authorization
                .challenge(ChallengeType::TlsAlpn01)
                .ok_or_else(|| {
                    AcmeError::Certificate("the server offers no tls-alpn-01 challenge".into())
                })?;
            let digest = challenge.key_authorization().digest();
            self.served
                .set_challenge(&name, challenge_key(&name, digest.as_ref())?);
            challenge.set_ready().await?;
        }
        let status = order.poll_ready(&RetryPolicy::default()).await?;
        self.served.clear_challenges();
        if status != OrderStatus::Ready {
            return Err(AcmeError::Order(status));
        }
        let key_pem = order.finalize().await?;
        let cert_pem = order.poll_certificate(&RetryPolicy::default()).await?;
        write_private(&self.dir, &self.file("key.pem"), key_pem.as_bytes()).await?;
        write_private(&self.dir, &self.file("cert.pem"), cert_pem.as_bytes()).await?;
        self.serve(cert_pem.as_bytes(), key_pem.as_bytes())
    }
}

/// What is checked of a chain and key an ACME server issued (or that were kept): that
/// rustls can serve them, and the leaf's expiry (Unix s). The fuzz target
/// `acme_certificate` runs this on arbitrary bytes.
pub fn check_issued(cert_pem: &[u8], key_pem: &[u8]) -> Result<i64, String> {
    read_issued(
        cert_pem,
        key_pem,
        Path::new("cert.pem"),
        Path::new("key.pem"),
    )
    .map(|(_, not_after)| not_after)
    .map_err(|e| e.to_string())
}

fn read_issued(
    cert_pem: &[u8],
    key_pem: &[u8],
    cert_path: &Path,
    key_path: &Path,
) -> Result<(CertifiedKey, i64), AcmeError> {
    let key = switchyard_transport::certificate::parse(cert_pem, key_pem, cert_path, key_path)
        .map_err(|e| AcmeError::Certificate(e.to_string()))?;
    let leaf = key
        .cert
        .first()
        .ok_or_else(|| AcmeError::Certificate("an empty chain".into()))?;
    let (_, parsed) = x509_parser::parse_x509_certificate(leaf.as_ref())
        .map_err(|e| AcmeError::Certificate(e.to_string()))?;
    let not_after = parsed.validity().not_after.timestamp();
    Ok((key, not_after))
}

/// The TLS-ALPN-01 certificate for `name`: self-signed, carrying the key
/// authorization's digest in the acmeIdentifier extension.
fn challenge_key(name: &str, digest: &[u8]) -> Result<Arc<CertifiedKey>, AcmeError> {
    let bad = |e: rcgen::Error| AcmeError::Certificate(format!("the challenge certificate: {e}"));
    let mut params = rcgen::CertificateParams::new(vec![name.to_owned()]).map_err(bad)?;
    params.custom_extensions = vec![rcgen::CustomExtension::new_acme_identifier(digest)];
    let key = rcgen::KeyPair::generate().map_err(bad)?;
    let cert = params.self_signed(&key).map_err(bad)?;
    let der = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    let signing = rustls::crypto::ring::sign::any_supported_type(&der)
        .map_err(|e| AcmeError::Certificate(e.to_string()))?;
    Ok(Arc::new(CertifiedKey::new(
        vec![cert.der().clone()],
        signing,
    )))
}

/// Writes a file readable by its owner alone, atomically
/// ([`switchyard_channel::fs::write_atomic`]), its directory made `0700` first.
async fn write_private(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), AcmeError> {
    let (dir, path, bytes) = (dir.to_owned(), path.to_owned(), bytes.to_owned());
    let at = path.clone();
    tokio::task::spawn_blocking(move || {
        switchyard_channel::fs::create_private_dir(&dir)?;
        switchyard_channel::fs::write_atomic(&path, &bytes)
    })
    .await
    .map_err(|e| AcmeError::File {
        path: at.clone(),
        source: std::io::Error::other(e.to_string()),
    })?
    .map_err(|source| AcmeError::File { path: at, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_issued_chain_is_checked_and_its_expiry_read() {
        let mut params = rcgen::CertificateParams::new(vec!["panel.test".to_owned()]).unwrap();
        params.not_after = rcgen::date_time_ymd(2031, 1, 2);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let (cert_pem, key_pem) = (cert.pem(), key.serialize_pem());
        assert_eq!(
            check_issued(cert_pem.as_bytes(), key_pem.as_bytes()),
            Ok(1_925_078_400),
            "2031-01-02T00:00:00Z"
        );
        let e = check_issued(b"nope", key_pem.as_bytes()).unwrap_err();
        assert!(e.starts_with("cert.pem: "), "{e}");
        let other = rcgen::KeyPair::generate().unwrap().serialize_pem();
        assert!(
            check_issued(cert_pem.as_bytes(), other.as_bytes()).is_err(),
            "a key of another certificate"
        );
    }

    #[test]
    fn the_challenge_certificate_carries_the_digest_for_the_name() {
        let key = challenge_key("127.0.0.1", &[7; 32]).unwrap();
        let (_, parsed) = x509_parser::parse_x509_certificate(key.cert[0].as_ref()).unwrap();
        // id-pe-acmeIdentifier (RFC 8737), critical, an OCTET STRING of the digest.
        let ext = parsed
            .extensions()
            .iter()
            .find(|e| e.oid.to_id_string() == "1.3.6.1.5.5.7.1.31")
            .expect("the acmeIdentifier extension");
        assert!(ext.critical);
        assert_eq!(ext.value, [[4u8, 32].as_slice(), &[7; 32]].concat());
        let san = parsed.subject_alternative_name().unwrap().unwrap();
        assert_eq!(
            format!("{:?}", san.value.general_names),
            "[IPAddress([127, 0, 0, 1])]"
        );
    }
}
