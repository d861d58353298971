//! HTTPS with a certificate from an ACME server (`acme` in the panel config): the
//! panel obtains it, answers the server's TLS-ALPN-01 challenge on its own listener
//! (a handshake offering ALPN `acme-tls/1` gets the challenge certificate), keeps the
//! certificate, its key and the ACME account in `DATA_DIR/acme/` (0600), serves it,
//! and renews it in place once fewer than `renew_days` are left. Until the first
//! certificate arrives, handshakes other than the challenge's fail; a failed attempt
//! is retried after 1 minute, doubling up to 1 hour.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use instant_acme::{
    Account, AccountCredentials, ChallengeType, Identifier, NewAccount, NewOrder, OrderStatus,
    RetryPolicy,
};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::config::AcmeSettings;

/// The ALPN protocol of TLS-ALPN-01 (RFC 8737).
const ACME_TLS: &[u8] = b"acme-tls/1";
/// How often the certificate's age is looked at.
const CHECK_EVERY: Duration = Duration::from_secs(3600);
/// The first wait after a failed attempt; it doubles up to [`CHECK_EVERY`].
const FIRST_RETRY: Duration = Duration::from_secs(60);

/// The certificate served now and the challenge certificate, if one is pending.
#[derive(Debug, Default)]
struct Served {
    current: RwLock<Option<Arc<CertifiedKey>>>,
    challenge: RwLock<Option<Arc<CertifiedKey>>>,
}

impl ResolvesServerCert for Served {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let acme = hello.alpn().is_some_and(|mut p| p.any(|p| p == ACME_TLS));
        let slot = if acme { &self.challenge } else { &self.current };
        slot.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

fn set(slot: &RwLock<Option<Arc<CertifiedKey>>>, key: Option<Arc<CertifiedKey>>) {
    *slot.write().unwrap_or_else(|p| p.into_inner()) = key;
}

/// Starts obtaining and renewing (until `stop`) and gives the acceptor both listeners
/// use; the error is rustls refusing its settings.
pub(crate) fn start(
    settings: AcmeSettings,
    identifiers: Vec<String>,
    dir: PathBuf,
    stop: CancellationToken,
) -> Result<TlsAcceptor, String> {
    let served = Arc::new(Served::default());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_cert_resolver(served.clone());
    config.alpn_protocols = vec![b"http/1.1".to_vec(), ACME_TLS.to_vec()];
    let keeper = Keeper {
        settings,
        identifiers,
        dir,
        served,
    };
    let keeper = Arc::new(keeper);
    let each = stop.clone();
    switchyard_tunnel::supervise::supervise(
        "panel acme: certificate keeper".into(),
        stop,
        Arc::default(),
        move || keeper.clone().run(each.clone()),
    );
    Ok(TlsAcceptor::from(Arc::new(config)))
}

struct Keeper {
    settings: AcmeSettings,
    identifiers: Vec<String>,
    dir: PathBuf,
    served: Arc<Served>,
}

/// Why a certificate could not be obtained.
#[derive(Debug, thiserror::Error)]
enum AcmeError {
    #[error("the ACME server: {0}")]
    Server(#[from] instant_acme::Error),
    #[error("{}: {source}", .path.display())]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the order ended {0:?}")]
    Order(OrderStatus),
    #[error("{0}")]
    Certificate(String),
}

impl Keeper {
    async fn run(self: Arc<Self>, stop: CancellationToken) {
        let mut retry = FIRST_RETRY;
        let mut expires = self.load_stored().await;
        loop {
            let due = expires.is_none_or(|not_after| {
                let left = not_after - crate::clock::now_ms() / 1000;
                left < i64::from(self.settings.renew_days) * 86_400
            });
            let wait = if due {
                match self.obtain().await {
                    Ok(not_after) => {
                        tracing::info!(
                            "acme: a certificate for {} served, valid until {} (Unix s)",
                            self.identifiers.join(", "),
                            not_after
                        );
                        expires = Some(not_after);
                        retry = FIRST_RETRY;
                        CHECK_EVERY
                    }
                    Err(e) => {
                        // A challenge of the failed order is not answered any more.
                        set(&self.served.challenge, None);
                        tracing::error!(
                            "acme: no certificate for {}: {e}; again in {retry:?}",
                            self.identifiers.join(", ")
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
        set(&self.served.current, Some(Arc::new(key)));
        Ok(not_after)
    }

    async fn account(&self) -> Result<Account, AcmeError> {
        let path = self.file("account.json");
        let builder = || match &self.settings.directory_root {
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
            set(
                &self.served.challenge,
                Some(challenge_key(&name, digest.as_ref())?),
            );
            challenge.set_ready().await?;
        }
        let status = order.poll_ready(&RetryPolicy::default()).await?;
        set(&self.served.challenge, None);
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

/// What the panel checks of a chain and key an ACME server issued (or that it kept):
/// that rustls can serve them, and the leaf's expiry (Unix s). The fuzz target
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
