//! The running client's control socket: a Unix socket (mode 0600) that takes one JSON
//! request per line and answers one JSON line. `switchyard client status`, `mark`,
//! `unmark`, `done`, `auto on`, `add`, `speedtest` and `update` talk to it.
//!
//! Requests: `{"command":"status"}`, `{"command":"mark","servers":["name",…]}`,
//! `{"command":"unmark","servers":[…]}`, `{"command":"done"}`,
//! `{"command":"update"}`, `{"command":"auto_on","subscription":"2"}`,
//! `{"command":"add","url":"https://…"}`, `{"command":"speedtest","server":"name"}`. Answers: `{"ok":true, …}` or `{"ok":false,"error":"…"}`.
//! A request line is at most [`MAX_LINE`] bytes and must come within
//! [`REQUEST_TIMEOUT`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot};

/// The longest request line.
pub const MAX_LINE: usize = 64 * 1024;

/// How long a connection has to send its request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// How long [`call`] waits for the answer: longer than a subscription fetch (20 s)
/// or a speed test (at most 30 s), which `add` and `speedtest` wait for.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// What the user asks the running client.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "lowercase", deny_unknown_fields)]
pub enum Request {
    /// The queue, the current and return servers, the last events.
    Status,
    /// Servers (by name) Auto must not switch to.
    Mark {
        /// Their names.
        servers: Vec<String>,
    },
    /// Removes marks.
    Unmark {
        /// Their names.
        servers: Vec<String>,
    },
    /// "Done" after marking: Auto acts on the marks.
    Done,
    /// Fetch every subscription again now.
    Update,
    /// Turn Auto on in this subscription (its URL or its number, 1 first).
    #[serde(rename = "auto_on")]
    AutoOn {
        /// The subscription.
        subscription: String,
    },
    /// Measure a server's download speed (by name; the current server when `None`).
    Speedtest {
        /// The server's name.
        #[serde(default)]
        server: Option<String>,
    },
    /// Add a subscription at the end of the list (kept in the data directory).
    Add {
        /// Its URL.
        url: String,
    },
}

/// A request with the way back for its answer.
pub type Call = (Request, oneshot::Sender<Value>);

/// Why the control socket could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    /// Binding or connecting failed.
    #[error("control socket {path}: {source}")]
    Socket {
        /// The socket's path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The answer was not JSON, or the client hung up.
    #[error("control socket {path}: {problem}")]
    Answer {
        /// The socket's path.
        path: PathBuf,
        /// What went wrong.
        problem: String,
    },
}

/// Serves the socket at `path` (replacing a stale one), handing each request to `calls`.
pub fn serve(path: &Path, calls: mpsc::UnboundedSender<Call>) -> Result<(), ControlError> {
    let socket = |source| ControlError::Socket {
        path: path.to_owned(),
        source,
    };
    if path.exists() {
        std::fs::remove_file(path).map_err(socket)?;
    }
    let listener = UnixListener::bind(path).map_err(socket)?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(socket)?;
    }
    tokio::spawn(async move {
        loop {
            let s = match listener.accept().await {
                Ok((s, _)) => s,
                Err(e) => {
                    // Out of descriptors and the like: wait, never stop answering.
                    tracing::warn!("control socket: accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            };
            if calls.is_closed() {
                return; // the client is stopping
            }
            let calls = calls.clone();
            tokio::spawn(async move {
                if let Err(e) = answer(s, calls).await {
                    tracing::debug!("control connection: {e}");
                }
            });
        }
    });
    Ok(())
}

async fn answer(s: UnixStream, calls: mpsc::UnboundedSender<Call>) -> std::io::Result<()> {
    let (r, mut w) = s.into_split();
    let mut line = String::new();
    let mut reader = BufReader::new(r).take(MAX_LINE as u64);
    let read = tokio::time::timeout(REQUEST_TIMEOUT, reader.read_line(&mut line)).await;
    let reply = match read {
        Err(_) => serde_json::json!({"ok": false, "error": "no request in time"}),
        Ok(Err(e)) => serde_json::json!({"ok": false, "error": e.to_string()}),
        Ok(Ok(_)) => match serde_json::from_str::<Request>(line.trim()) {
            Err(e) => serde_json::json!({"ok": false, "error": format!("not a request: {e}")}),
            Ok(request) => {
                let (tx, rx) = oneshot::channel();
                if calls.send((request, tx)).is_err() {
                    serde_json::json!({"ok": false, "error": "the client is stopping"})
                } else {
                    rx.await
                        .unwrap_or_else(|_| serde_json::json!({"ok": false, "error": "no answer"}))
                }
            }
        },
    };
    w.write_all(format!("{reply}\n").as_bytes()).await?;
    w.shutdown().await
}

/// Sends `request` to the client running with the socket at `path`; its answer.
pub async fn call(path: &Path, request: &Request) -> Result<Value, ControlError> {
    let s = UnixStream::connect(path)
        .await
        .map_err(|source| ControlError::Socket {
            path: path.to_owned(),
            source,
        })?;
    let (r, mut w) = s.into_split();
    let problem = |problem: String| ControlError::Answer {
        path: path.to_owned(),
        problem,
    };
    let text = serde_json::to_string(request).map_err(|e| problem(e.to_string()))?;
    w.write_all(format!("{text}\n").as_bytes())
        .await
        .map_err(|e| problem(e.to_string()))?;
    let mut line = String::new();
    let mut reader = BufReader::new(r).take(16 << 20);
    tokio::time::timeout(ANSWER_TIMEOUT, reader.read_line(&mut line))
        .await
        .map_err(|_| problem(format!("no answer within {ANSWER_TIMEOUT:?}")))?
        .map_err(|e| problem(e.to_string()))?;
    serde_json::from_str(line.trim()).map_err(|e| problem(format!("not JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[test]
    fn requests_read_as_documented() {
        let r: Request = serde_json::from_str(r#"{"command":"mark","servers":["A","B"]}"#).unwrap();
        assert_eq!(
            r,
            Request::Mark {
                servers: vec!["A".into(), "B".into()]
            }
        );
        assert_eq!(
            serde_json::from_str::<Request>(r#"{"command":"status"}"#).unwrap(),
            Request::Status
        );
        assert_eq!(
            serde_json::from_str::<Request>(r#"{"command":"auto_on","subscription":"2"}"#).unwrap(),
            Request::AutoOn {
                subscription: "2".into()
            }
        );
        assert_eq!(
            serde_json::from_str::<Request>(r#"{"command":"add","url":"https://p/sub/x"}"#)
                .unwrap(),
            Request::Add {
                url: "https://p/sub/x".into()
            }
        );
        assert!(serde_json::from_str::<Request>(r#"{"command":"reboot"}"#).is_err());
        assert!(serde_json::from_str::<Request>(r#"{"command":"add"}"#).is_err());
    }

    #[tokio::test]
    async fn a_call_gets_the_driver_s_answer_and_junk_gets_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("control.sock");
        let (tx, mut rx) = mpsc::unbounded_channel::<Call>();
        serve(&path, tx).unwrap();
        tokio::spawn(async move {
            while let Some((request, reply)) = rx.recv().await {
                let _ = reply.send(serde_json::json!({"ok": true, "got": format!("{request:?}")}));
            }
        });
        let answer = call(&path, &Request::Done).await.unwrap();
        assert_eq!(answer, serde_json::json!({"ok": true, "got": "Done"}));
        let mut s = UnixStream::connect(&path).await.unwrap();
        s.write_all(b"{nope}\n").await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        let v: Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(v["ok"], false);
        assert!(
            v["error"].as_str().unwrap().starts_with("not a request"),
            "{v}"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}
