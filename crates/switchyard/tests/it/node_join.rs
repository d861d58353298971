//! `switchyard node join TOKEN` against a panel's channel listener in this process:
//! the node enrolls, prints it, serves its control API over the channel; started again
//! as `switchyard node --state-dir DIR` it holds the channel from its enrollment alone;
//! a used token is refused with the panel's reason and exit status 2.

use std::collections::{HashMap, HashSet};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchyard_channel::{
    EnrollRefused, EnrollRequest, Enroller, JoinToken, Method, NodeChannel, PanelIdentity, Pin,
    StatusCode, serve_panel,
};

#[derive(Default)]
struct TestEnroller {
    secrets: Mutex<HashSet<String>>,
    pins: Mutex<HashMap<Pin, String>>,
}

#[switchyard_channel::async_trait]
impl Enroller for TestEnroller {
    async fn enroll(&self, request: EnrollRequest) -> Result<String, EnrollRefused> {
        if self.secrets.lock().unwrap().remove(request.secret.expose()) {
            Ok("srv-cli".into())
        } else {
            Err(EnrollRefused::AlreadyUsed)
        }
    }

    async fn enrolled(&self, server_id: &str, certificate: Pin) -> Result<(), EnrollRefused> {
        self.pins
            .lock()
            .unwrap()
            .insert(certificate, server_id.into());
        Ok(())
    }

    async fn authorize(&self, der: &[u8]) -> Option<String> {
        self.pins
            .lock()
            .unwrap()
            .get(&Pin::of_certificate(der))
            .cloned()
    }
}

struct Node(Child);
impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn switchyard(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    c.args(args);
    c
}

async fn status_over(channel: &NodeChannel) -> serde_json::Value {
    let (code, body) = channel
        .request(Method::GET, "/v1/status", None)
        .await
        .unwrap();
    assert_eq!(code, StatusCode::OK);
    serde_json::from_slice(&body).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_prints_enrolls_and_serves_then_the_state_dir_alone_is_enough() {
    let id = Arc::new(PanelIdentity::generate(&[]).unwrap());
    let enroller = Arc::new(TestEnroller::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, mut channels) = tokio::sync::mpsc::channel(4);
    tokio::spawn(serve_panel(
        listener,
        id.clone(),
        enroller.clone(),
        tx,
        std::future::pending(),
    ));
    let token = JoinToken::generate(addr.to_string(), id.pin().unwrap()).unwrap();
    enroller
        .secrets
        .lock()
        .unwrap()
        .insert(token.secret.clone());
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let state_arg = state.to_str().unwrap();
    let control = format!("127.0.0.1:{}", free_port());

    let child = switchyard(&[
        "node",
        "join",
        &token.encode(),
        "--state-dir",
        state_arg,
        "--control",
        &control,
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let mut node = Node(child);
    let channel = tokio::time::timeout(Duration::from_secs(20), channels.recv())
        .await
        .expect("the node dials the channel")
        .unwrap();
    assert_eq!(channel.server_id(), "srv-cli");
    assert_eq!(status_over(&channel).await["version"], 0);
    assert!(state.join("panel.json").exists());
    let _ = Command::new("kill")
        .args(["-TERM", &node.0.id().to_string()])
        .status();
    let out = node.0.wait_with_output_ref();
    assert!(
        out.contains(&format!(
            "joined the panel at {addr} as server srv-cli; the enrollment is kept in"
        )),
        "{out}"
    );

    // From the state directory alone.
    let child = switchyard(&["node", "--state-dir", state_arg, "--control", &control])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _node = Node(child);
    let channel = tokio::time::timeout(Duration::from_secs(20), channels.recv())
        .await
        .expect("the node dials the channel again")
        .unwrap();
    assert_eq!(status_over(&channel).await["version"], 0);
    // The loopback API wants the token the state directory holds.
    let out = switchyard(&["node", "token", "--state-dir", state_arg])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let token_text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(token_text.trim().len(), 64);
    let token_file = std::fs::read_to_string(state.join("control.token")).unwrap();
    assert_eq!(token_text.trim(), token_file.trim());

    // The token again: refused with the panel's reason, exit status 2.
    let other = dir.path().join("other");
    let out = switchyard(&[
        "node",
        "join",
        &token.encode(),
        "--state-dir",
        other.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the join token was already used"), "{err}");
    let out = switchyard(&["node", "join", "syj1.garbage"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

trait WaitOutput {
    fn wait_with_output_ref(&mut self) -> String;
}

impl WaitOutput for Child {
    /// Waits for the child and returns its stdout.
    fn wait_with_output_ref(&mut self) -> String {
        use std::io::Read as _;
        let _ = self.wait();
        let mut out = String::new();
        if let Some(mut s) = self.stdout.take() {
            let _ = s.read_to_string(&mut out);
        }
        out
    }
}
