//! The node's enrollment: [`join`] with a token, kept in `panel.json`
//! ([`load_enrollment`]).

use core::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_util::rt::TokioIo;
use rcgen::{KeyPair, PKCS_ECDSA_P256_SHA256};
use serde::{Deserialize, Serialize};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::enroll::{EnrollAnswer, EnrollWire};
use crate::identity::KeyPem;
use crate::{JoinToken, Pin, fs};

/// The enrollment's file in the node's state directory.
pub const ENROLLMENT_FILE: &str = "panel.json";
/// Deadline of the TCP connect and of the TLS handshake, each.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Deadline of the whole enrollment exchange after TLS.
const ENROLL_TIMEOUT: Duration = Duration::from_secs(30);
/// Most bytes of the panel's answer to `/enroll`.
const MAX_ANSWER: usize = 64 * 1024;

/// What a node keeps of its enrollment (`panel.json`, `0600`): where the panel is,
/// which certificate it shows, who the node is and its own certificate and key.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Enrollment {
    /// `host:port` of the panel's channel listener.
    pub panel: String,
    /// The pin of the panel's channel certificate, `cert:<64 hex>`.
    #[serde(with = "pin_text")]
    pub pin: Pin,
    /// The server id the panel gave this node.
    pub server_id: String,
    /// The node's client certificate (signed by the panel's CA), PEM.
    pub certificate_pem: String,
    /// The node's private key (PKCS#8 PEM); made on the node, never sent.
    pub key_pem: KeyPem,
}

impl fmt::Debug for Enrollment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Enrollment")
            .field("panel", &self.panel)
            .field("pin", &self.pin)
            .field("server_id", &self.server_id)
            .finish_non_exhaustive()
    }
}

mod pin_text {
    use serde::{Deserialize as _, Deserializer, Serializer};

    use crate::Pin;

    pub(super) fn serialize<S: Serializer>(pin: &Pin, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(pin)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Pin, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Why a node could not join its panel, or read its enrollment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JoinError {
    /// The panel's address could not be reached.
    #[error("cannot reach the panel at {panel}: {reason}")]
    Connect {
        /// The address dialed.
        panel: String,
        /// Which step failed, and how.
        kind: ConnectFailure,
        /// What failed.
        reason: String,
    },
    /// The panel showed a certificate other than the one the token pins.
    #[error(
        "the panel at {panel} showed a certificate other than the one the join token pins \
         (is the address right, or was the panel's identity replaced? ask the panel for a new token)"
    )]
    PinMismatch {
        /// The address dialed.
        panel: String,
    },
    /// TLS with the panel failed for another reason.
    #[error("TLS with the panel at {panel} failed: {reason}")]
    Tls {
        /// The address dialed.
        panel: String,
        /// Which step failed, and how.
        kind: TlsFailure,
        /// What rustls said.
        reason: String,
    },
    /// The panel refused the enrollment; `detail` is its reason (`the join token was
    /// already used`, `the join token expired`, `unknown join token`).
    #[error("the panel refused to enroll this node: {detail}")]
    Refused {
        /// The panel's reason.
        detail: String,
    },
    /// The panel answered with another error.
    #[error("the panel answered {status}: {detail}")]
    Panel {
        /// The HTTP status.
        status: u16,
        /// The problem's detail, or the start of the body.
        detail: String,
    },
    /// The panel's answer is not what enrollment expects.
    #[error("the panel's answer to the enrollment is malformed: {reason}")]
    BadAnswer {
        /// Which part of the exchange is wrong.
        kind: AnswerFailure,
        /// What is wrong.
        reason: String,
    },
    /// The node's key could not be made.
    #[error("making the node's key: {0}")]
    Key(rcgen::Error),
    /// The enrollment could not be written or read.
    #[error("{path}: {reason}")]
    State {
        /// The file or directory.
        path: PathBuf,
        /// What failed, by kind.
        kind: StateFailure,
        /// What failed.
        reason: String,
    },
    /// `panel.json` holds something that is not an enrollment.
    #[error("{path}: not an enrollment ({reason}); join the panel again with a new token")]
    BadEnrollment {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// Which step of reaching the panel failed ([`JoinError::Connect`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectFailure {
    /// No answer in time (the TCP connection or the whole enrollment).
    Timeout,
    /// The TCP connection failed with this error.
    Io(std::io::ErrorKind),
    /// The enrollment request could not be sent or answered.
    Request,
}

/// Which step of TLS with the panel failed ([`JoinError::Tls`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsFailure {
    /// No handshake in time.
    Timeout,
    /// The handshake failed with this error (rustls's, wrapped).
    Handshake(std::io::ErrorKind),
    /// HTTP over the TLS connection could not start.
    Http,
}

/// What is wrong with the enrollment exchange ([`JoinError::BadAnswer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AnswerFailure {
    /// The enrollment request could not be made.
    Request,
    /// The answer's body could not be read (or is larger than allowed).
    Body,
    /// The answer is not the JSON expected.
    Json(serde_json::error::Category),
    /// The certificate answered does not fit the node's key.
    Certificate,
}

/// Why the enrollment could not be written or read ([`JoinError::State`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateFailure {
    /// A file system error of this kind.
    Io(std::io::ErrorKind),
    /// The enrollment could not be encoded.
    Encode,
    /// The blocking task doing it failed.
    Task,
}

fn bad_json(e: &serde_json::Error) -> JoinError {
    JoinError::BadAnswer {
        kind: AnswerFailure::Json(e.classify()),
        reason: e.to_string(),
    }
}

fn state_io(path: PathBuf) -> impl FnOnce(std::io::Error) -> JoinError {
    move |e| JoinError::State {
        path,
        kind: StateFailure::Io(e.kind()),
        reason: e.to_string(),
    }
}

/// Why a TLS dial failed, told apart for the pin.
pub(crate) fn tls_failure(panel: &str, e: &std::io::Error) -> JoinError {
    let pinned = e
        .get_ref()
        .and_then(|inner| switchyard_tunnel::link::pin::pin_error_in(inner))
        .is_some_and(|p| matches!(p, switchyard_tunnel::link::pin::PinError::Mismatch { .. }));
    if pinned {
        JoinError::PinMismatch {
            panel: panel.to_owned(),
        }
    } else {
        JoinError::Tls {
            panel: panel.to_owned(),
            kind: TlsFailure::Handshake(e.kind()),
            reason: e.to_string(),
        }
    }
}

/// Dials `panel` and makes TLS with `config`, each step within [`CONNECT_TIMEOUT`].
pub(crate) async fn dial(
    panel: &str,
    config: std::sync::Arc<rustls::ClientConfig>,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, JoinError> {
    let connect_error = |kind, reason: String| JoinError::Connect {
        panel: panel.to_owned(),
        kind,
        reason,
    };
    let tcp = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(panel))
        .await
        .map_err(|_| {
            connect_error(
                ConnectFailure::Timeout,
                format!("no answer within {CONNECT_TIMEOUT:?}"),
            )
        })?
        .map_err(|e| connect_error(ConnectFailure::Io(e.kind()), e.to_string()))?;
    let _ = tcp.set_nodelay(true);
    let connector = TlsConnector::from(config);
    tokio::time::timeout(
        CONNECT_TIMEOUT,
        connector.connect(crate::tls::panel_server_name(), tcp),
    )
    .await
    .map_err(|_| JoinError::Tls {
        panel: panel.to_owned(),
        kind: TlsFailure::Timeout,
        reason: format!("no handshake within {CONNECT_TIMEOUT:?}"),
    })?
    .map_err(|e| tls_failure(panel, &e))
}

fn problem_detail(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("detail")?.as_str().map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned())
}

/// Enrolls this node with the panel the token names: makes the node's key pair, sends
/// the public key with the token's secret, and keeps the answer in
/// `state_dir/panel.json` (`0600`, written atomically; the directory is made `0700`).
pub async fn join(
    token: &JoinToken,
    state_dir: &Path,
    hostname: &str,
) -> Result<Enrollment, JoinError> {
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(JoinError::Key)?;
    let tls = dial(&token.panel, crate::tls::node_enroll_config(token.pin)).await?;
    let body = serde_json::to_vec(&EnrollWire {
        secret: token.secret.clone(),
        public_key: base64::engine::general_purpose::STANDARD.encode(key.public_key_raw()),
        hostname: hostname
            .chars()
            .take(crate::enroll::MAX_HOSTNAME_LEN)
            .collect(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
    })
    .map_err(|e| JoinError::BadAnswer {
        kind: AnswerFailure::Request,
        reason: e.to_string(),
    })?;
    let exchange = async {
        let (mut send, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| JoinError::Tls {
                panel: token.panel.clone(),
                kind: TlsFailure::Http,
                reason: e.to_string(),
            })?;
        let driver = tokio::spawn(connection);
        let request = Request::builder()
            .method(Method::POST)
            .uri("/enroll")
            .header(header::HOST, &token.panel)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| JoinError::BadAnswer {
                kind: AnswerFailure::Request,
                reason: e.to_string(),
            })?;
        let response = send
            .send_request(request)
            .await
            .map_err(|e| JoinError::Connect {
                panel: token.panel.clone(),
                kind: ConnectFailure::Request,
                reason: format!("the enrollment request failed: {e}"),
            })?;
        let status = response.status();
        let body = Limited::new(response.into_body(), MAX_ANSWER)
            .collect()
            .await
            .map_err(|e| JoinError::BadAnswer {
                kind: AnswerFailure::Body,
                reason: e.to_string(),
            })?
            .to_bytes();
        driver.abort();
        Ok::<_, JoinError>((status, body))
    };
    let (status, body) = tokio::time::timeout(ENROLL_TIMEOUT, exchange)
        .await
        .map_err(|_| JoinError::Connect {
            panel: token.panel.clone(),
            kind: ConnectFailure::Timeout,
            reason: format!("no answer to the enrollment within {ENROLL_TIMEOUT:?}"),
        })??;
    match status {
        StatusCode::OK => {}
        StatusCode::FORBIDDEN => {
            return Err(JoinError::Refused {
                detail: problem_detail(&body),
            });
        }
        other => {
            return Err(JoinError::Panel {
                status: other.as_u16(),
                detail: problem_detail(&body),
            });
        }
    }
    let answer: EnrollAnswer = serde_json::from_slice(&body).map_err(|e| bad_json(&e))?;
    let enrollment = Enrollment {
        panel: token.panel.clone(),
        pin: token.pin,
        server_id: answer.server_id,
        certificate_pem: answer.certificate_pem,
        key_pem: KeyPem::new(key.serialize_pem()),
    };
    // The certificate must fit the node's key, or the channel could never be made.
    crate::tls::node_channel_config(
        enrollment.pin,
        &enrollment.certificate_pem,
        enrollment.key_pem.expose(),
    )
    .map_err(|e| JoinError::BadAnswer {
        kind: AnswerFailure::Certificate,
        reason: e.to_string(),
    })?;
    let dir = state_dir.to_owned();
    let saved = enrollment.clone();
    tokio::task::spawn_blocking(move || save_enrollment(&dir, &saved))
        .await
        .map_err(|e| JoinError::State {
            path: state_dir.join(ENROLLMENT_FILE),
            kind: StateFailure::Task,
            reason: e.to_string(),
        })??;
    Ok(enrollment)
}

/// Writes `panel.json` in `state_dir` (atomically, `0600`). Blocks.
pub fn save_enrollment(state_dir: &Path, enrollment: &Enrollment) -> Result<(), JoinError> {
    let path = state_dir.join(ENROLLMENT_FILE);
    let text = serde_json::to_vec_pretty(enrollment).map_err(|e| JoinError::State {
        path: path.clone(),
        kind: StateFailure::Encode,
        reason: e.to_string(),
    })?;
    fs::create_private_dir(state_dir).map_err(state_io(state_dir.to_owned()))?;
    fs::write_atomic(&path, &text).map_err(state_io(path))
}

/// The enrollment kept in `state_dir`, if the node joined a panel. Blocks (a file
/// read).
pub fn load_enrollment(state_dir: &Path) -> Result<Option<Enrollment>, JoinError> {
    let path = state_dir.join(ENROLLMENT_FILE);
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(state_io(path)(e)),
    };
    let _ = fs::tighten(&path);
    let enrollment: Enrollment =
        serde_json::from_slice(&text).map_err(|e| JoinError::BadEnrollment {
            path: path.clone(),
            reason: e.to_string(),
        })?;
    crate::tls::node_channel_config(
        enrollment.pin,
        &enrollment.certificate_pem,
        enrollment.key_pem.expose(),
    )
    .map_err(|e| JoinError::BadEnrollment {
        path,
        reason: e.to_string(),
    })?;
    Ok(Some(enrollment))
}
