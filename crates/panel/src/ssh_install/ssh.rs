//! The SSH side, over `russh`: connect with deadlines, read and check the host key
//! during the key exchange (before any credential is sent), log in, and run one
//! command per channel with a deadline, its output handed over as it comes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use russh::ChannelMsg;
use russh::client::{self, AuthResult, Handle};
use russh::keys::{HashAlg, PrivateKeyWithHashAlg, PublicKeyOrCertificate};
use tokio::io::AsyncRead;

use super::input::{Credentials, Target};
use super::progress::HostKey;

/// Why connecting failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// No TCP connection within the deadline, or refused.
    #[error("no TCP connection to {target}: {reason}")]
    Tcp {
        /// Where.
        target: String,
        /// Why.
        reason: String,
    },
    /// The key exchange did not finish.
    #[error("the SSH handshake with {target} failed: {reason}")]
    Handshake {
        /// Where.
        target: String,
        /// Why.
        reason: String,
    },
    /// The server presented another host key than the expected one (or, when
    /// reading it only, this is how the connection ends).
    #[error("the server presented the host key {}", .0.fingerprint)]
    HostKey(HostKey),
    /// The login was refused.
    #[error("the server refused the login of {user} ({method}); it accepts: {accepts}")]
    Refused {
        /// The login.
        user: String,
        /// `password` or `publickey`.
        method: &'static str,
        /// The methods the server offered next.
        accepts: String,
    },
    /// The login did not finish.
    #[error("the login failed: {0}")]
    Login(String),
}

/// What the handler saw and expects.
struct Client {
    expected: Option<String>,
    seen: Arc<Mutex<Option<HostKey>>>,
}

/// The key's fingerprint as OpenSSH prints it, and its algorithm.
pub fn host_key_of(key: &PublicKeyOrCertificate) -> HostKey {
    match key {
        PublicKeyOrCertificate::PublicKey { key, .. } => HostKey {
            algorithm: key.algorithm().as_str().to_owned(),
            fingerprint: key.fingerprint(HashAlg::Sha256).to_string(),
        },
        PublicKeyOrCertificate::Certificate(cert) => HostKey {
            algorithm: cert.algorithm().as_str().to_owned(),
            fingerprint: cert.public_key().fingerprint(HashAlg::Sha256).to_string(),
        },
    }
}

impl client::Handler for Client {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        key: &PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        let seen = host_key_of(key);
        let ok = self.expected.as_deref() == Some(seen.fingerprint.as_str());
        if let Ok(mut slot) = self.seen.lock() {
            *slot = Some(seen);
        }
        Ok(ok)
    }
}

/// A connection whose host key matched.
pub struct Session {
    handle: Handle<Client>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").finish_non_exhaustive()
    }
}

fn config() -> Arc<client::Config> {
    Arc::new(client::Config {
        // A server that stops answering is noticed between commands too.
        keepalive_interval: Some(Duration::from_secs(15)),
        keepalive_max: 4,
        nodelay: true,
        ..client::Config::default()
    })
}

/// Connects to `target` (TCP within `tcp_deadline`, the key exchange within
/// `handshake_deadline`) and goes on only when the host key's fingerprint is
/// `expected`; `None` only reads the key (always [`ConnectError::HostKey`]).
pub async fn connect(
    target: &Target,
    expected: Option<&str>,
    tcp_deadline: Duration,
    handshake_deadline: Duration,
) -> Result<(Session, HostKey), ConnectError> {
    let tcp = |reason: String| ConnectError::Tcp {
        target: target.to_string(),
        reason,
    };
    let stream = tokio::time::timeout(
        tcp_deadline,
        tokio::net::TcpStream::connect((target.host.as_str(), target.port)),
    )
    .await
    .map_err(|_| tcp(format!("no answer within {} s", tcp_deadline.as_secs())))?
    .map_err(|e| tcp(e.to_string()))?;
    let seen = Arc::new(Mutex::new(None));
    let handler = Client {
        expected: expected.map(str::to_owned),
        seen: seen.clone(),
    };
    let shake = tokio::time::timeout(
        handshake_deadline,
        client::connect_stream(config(), stream, handler),
    )
    .await;
    let presented = seen.lock().ok().and_then(|s| s.clone());
    let handshake = |reason: String| ConnectError::Handshake {
        target: target.to_string(),
        reason,
    };
    match shake {
        Err(_) => Err(handshake(format!(
            "not done within {} s",
            handshake_deadline.as_secs()
        ))),
        Ok(Ok(handle)) => match presented {
            Some(key) => Ok((Session { handle }, key)),
            None => Err(handshake("no host key was presented".into())),
        },
        Ok(Err(e)) => match presented {
            Some(key) if expected != Some(key.fingerprint.as_str()) => {
                Err(ConnectError::HostKey(key))
            }
            _ => Err(handshake(e.to_string())),
        },
    }
}

impl Session {
    /// Logs in as `user`, within `deadline`.
    pub async fn login(
        &mut self,
        user: &str,
        credentials: &Credentials,
        deadline: Duration,
    ) -> Result<(), ConnectError> {
        let attempt = async {
            match credentials {
                Credentials::Password(p) => (
                    "password",
                    self.handle.authenticate_password(user, p.as_str()).await,
                ),
                Credentials::Key(key) => {
                    let hash = match self.handle.best_supported_rsa_hash().await {
                        Ok(h) => h.flatten(),
                        Err(e) => return ("publickey", Err(e)),
                    };
                    let key = PrivateKeyWithHashAlg::new(key.clone(), hash);
                    (
                        "publickey",
                        self.handle.authenticate_publickey(user, key).await,
                    )
                }
            }
        };
        let (method, result) = tokio::time::timeout(deadline, attempt).await.map_err(|_| {
            ConnectError::Login(format!("not done within {} s", deadline.as_secs()))
        })?;
        match result.map_err(|e| ConnectError::Login(e.to_string()))? {
            AuthResult::Success => Ok(()),
            AuthResult::Failure {
                remaining_methods, ..
            } => Err(ConnectError::Refused {
                user: user.to_owned(),
                method,
                accepts: remaining_methods
                    .iter()
                    .map(<&str>::from)
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// Runs `command`, `stdin` (if any) fed to it, until it exits or `deadline`
    /// passes; `output` gets its standard output and error as they come. Its exit
    /// status, or why there is none.
    pub async fn run<R>(
        &self,
        command: &str,
        stdin: Option<R>,
        deadline: Duration,
        mut output: impl FnMut(&str) + Send,
    ) -> Result<u32, String>
    where
        R: AsyncRead + Unpin + Send,
    {
        let work = async {
            let channel = self
                .handle
                .channel_open_session()
                .await
                .map_err(|e| format!("opening a channel: {e}"))?;
            channel
                .exec(true, command)
                .await
                .map_err(|e| format!("starting the command: {e}"))?;
            let (mut read, write) = channel.split();
            let feed = async {
                if let Some(stdin) = stdin {
                    // A command that exits early closes the channel: its exit says why.
                    let sent = write.data(stdin).await;
                    let _ = write.eof().await;
                    sent.map_err(|e| format!("sending: {e}"))
                } else {
                    let _ = write.eof().await;
                    Ok(())
                }
            };
            let drain = async {
                let mut status = None;
                let mut signal = None;
                while let Some(msg) = read.wait().await {
                    match msg {
                        ChannelMsg::Data { data } => output(&String::from_utf8_lossy(&data)),
                        ChannelMsg::ExtendedData { data, .. } => {
                            output(&String::from_utf8_lossy(&data))
                        }
                        ChannelMsg::ExitStatus { exit_status } => status = Some(exit_status),
                        ChannelMsg::ExitSignal { signal_name, .. } => {
                            signal = Some(format!("{signal_name:?}"))
                        }
                        ChannelMsg::Close => break,
                        _ => {}
                    }
                }
                match (status, signal) {
                    (Some(s), _) => Ok(s),
                    (None, Some(sig)) => Err(format!("killed by signal {sig}")),
                    (None, None) => Err("the channel closed without an exit status".to_owned()),
                }
            };
            let (fed, exit) = tokio::join!(feed, drain);
            match (exit, fed) {
                (Ok(0), Err(e)) => Err(e),
                (exit, _) => exit,
            }
        };
        tokio::time::timeout(deadline, work)
            .await
            .map_err(|_| format!("not done within {} s", deadline.as_secs()))?
    }

    /// Says goodbye (best effort).
    pub async fn close(self) {
        let _ = self
            .handle
            .disconnect(russh::Disconnect::ByApplication, "done", "en")
            .await;
    }
}
