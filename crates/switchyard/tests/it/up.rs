//! `switchyard up` end to end: the panel, a node enrolled through the real join flow,
//! a VLESS+TLS inbound and a demo user, all from one command in a temporary
//! directory. The subscription goes to the real sing-box client (`sing-box check`,
//! then run), which downloads through the node from a local target; the demo user's
//! traffic shows in the panel's API; disabling the user cuts their open connection and
//! refuses new ones; enabling lets them back. A second `up` on the same directory
//! resumes with the same user and subscription.

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchyard_testkit::{HttpTarget, SingBox, free_port, socks5};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

const MIB: u64 = 1 << 20;

fn anyhow_timeout(_: tokio::time::error::Elapsed) -> anyhow::Error {
    anyhow::anyhow!("timed out")
}

/// What `up` printed.
pub(crate) struct Up {
    child: Child,
    pub(crate) api: SocketAddr,
    password: Option<String>,
    pub(crate) subscription: String,
}

impl Drop for Up {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

pub(crate) async fn up(data: &std::path::Path) -> Up {
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["up", "--data"])
        .arg(data)
        .args([
            "--listen",
            "127.0.0.1:0",
            "--channel-listen",
            "127.0.0.1:0",
            "--inbound-port",
            "0",
            "--allow-private-destinations",
        ])
        .env("RUST_LOG", crate::test_log())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("switchyard up starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (mut api, mut password, mut subscription) = (None, None, None);
    let deadline = Instant::now() + Duration::from_secs(60);
    while subscription.is_none() {
        let line = tokio::time::timeout_at(deadline.into(), lines.next_line())
            .await
            .expect("up prints its addresses within 60 s")
            .unwrap()
            .expect("up exited before printing the subscription");
        if let Some(rest) = line.strip_prefix("panel: http://") {
            api = Some(rest.trim().parse().unwrap());
        } else if let Some(rest) = line.strip_prefix("admin login: admin / ") {
            password = Some(rest.split_whitespace().next().unwrap().to_owned());
        } else if let Some(rest) = line.strip_prefix("subscription: ") {
            subscription = Some(rest.split_whitespace().next().unwrap().to_owned());
        }
    }
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Up {
        child,
        api: api.unwrap(),
        password,
        subscription: subscription.unwrap(),
    }
}

/// One HTTP/1.1 request, `Connection: close`: status, headers (lower-case), body.
async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> (u16, Vec<(String, String)>, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status, headers, body.to_owned())
}

struct Admin {
    api: SocketAddr,
    cookie: String,
    csrf: String,
}

impl Admin {
    async fn login(api: SocketAddr, password: &str) -> Self {
        let (status, headers, body) = http(
            api,
            "POST",
            "/api/v1/session",
            &[],
            Some(&json!({ "username": "admin", "password": password })),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let cookie = headers
            .iter()
            .find(|(k, _)| k == "set-cookie")
            .map(|(_, v)| v.split(';').next().unwrap().to_owned())
            .expect("a session cookie");
        let csrf = serde_json::from_str::<Value>(&body).unwrap()["csrf_token"]
            .as_str()
            .unwrap()
            .to_owned();
        Self { api, cookie, csrf }
    }

    async fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let (status, _, text) = http(
            self.api,
            method,
            path,
            &[("Cookie", &self.cookie), ("X-CSRF-Token", &self.csrf)],
            body,
        )
        .await;
        assert!(
            (200..300).contains(&status),
            "{method} {path}: {status} {text}"
        );
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    async fn demo(&self) -> Value {
        let page = self.call("GET", "/api/v1/users?search=demo", None).await;
        page["users"][0].clone()
    }

    async fn set_enabled(&self, user: &Value, enabled: bool) {
        let id = user["id"].as_i64().unwrap();
        let body = json!({
            "username": user["username"], "enabled": enabled, "note": user["note"],
        });
        let changed = self
            .call("PUT", &format!("/api/v1/users/{id}"), Some(&body))
            .await;
        assert_eq!(
            changed["status"],
            if enabled { "active" } else { "disabled" }
        );
    }
}

/// The subscription as sing-box JSON, with the local proxy on a free port and the
/// urltest group testing the local target (never the internet).
async fn client_config(sub: &str, target: &HttpTarget) -> Value {
    let url = sub.strip_prefix("http://").unwrap();
    let (addr, path) = url.split_once('/').unwrap();
    let (status, headers, body) = http(
        addr.parse().unwrap(),
        "GET",
        &format!("/{path}?format=sing-box"),
        &[],
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        headers
            .iter()
            .any(|(k, v)| k == "subscription-userinfo" && v.starts_with("upload="))
    );
    let mut config: Value = serde_json::from_str(&body).unwrap();
    config["inbounds"][0]["listen_port"] = json!(free_port().unwrap());
    for o in config["outbounds"].as_array_mut().unwrap() {
        if o["type"] == "urltest" {
            o["url"] = json!(format!("http://{}/bytes/0", target.addr()));
        }
    }
    config
}

async fn wait_until<F: std::future::Future<Output = bool>>(
    what: &str,
    secs: u64,
    mut f: impl FnMut() -> F,
) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f().await {
        assert!(Instant::now() < deadline, "{what} within {secs} s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_serves_a_working_subscription_and_users_follow_the_panel() {
    let dir = tempfile::tempdir().unwrap();
    let target = HttpTarget::start().await.unwrap();
    let first = up(dir.path()).await;
    let password = first
        .password
        .clone()
        .expect("the first run prints the password");
    let config = client_config(&first.subscription, &target).await;
    let client = SingBox::start(config)
        .await
        .unwrap_or_else(|e| panic!("sing-box takes the subscription: {e:#}"));
    let proxy = client.proxy_addr().unwrap();

    // A download through the node; the demo user's traffic reaches the API.
    target.download_via_socks(proxy, 4 * MIB).await.unwrap();
    let admin = Admin::login(first.api, &password).await;
    wait_until("the download counted on the demo user", 10, || async {
        admin.demo().await["used_down"].as_u64().unwrap() >= 4 * MIB
    })
    .await;

    // An open connection is cut when the user is disabled, and new ones fail.
    let mut open = socks5::connect(proxy, target.addr()).await.unwrap();
    // An upload that never ends keeps the connection open (the target closes
    // connections once it has answered).
    open.write_all(b"POST /sink HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000000\r\n\r\n")
        .await
        .unwrap();
    open.write_all(&[7u8; 65536]).await.unwrap();
    let mut buf = [0u8; 256];
    let demo = admin.demo().await;
    admin.set_enabled(&demo, false).await;
    let cut = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match open.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(
        cut.is_ok(),
        "the disabled user's open connection was closed within 10 s"
    );
    // The node holds a refused connection silently (probers learn nothing), so a
    // client sees either an error or nothing at all.
    let refused = tokio::time::timeout(
        Duration::from_secs(5),
        target.download_via_socks(proxy, MIB),
    )
    .await;
    assert!(
        !matches!(refused, Ok(Ok(()))),
        "a disabled user gets no new connection"
    );

    // Enabled again: back within seconds.
    admin.set_enabled(&demo, true).await;
    wait_until("the enabled user's download", 15, || async {
        let r = tokio::time::timeout(
            Duration::from_secs(5),
            target.download_via_socks(proxy, MIB),
        )
        .await
        .map_err(anyhow_timeout)
        .and_then(|r| r);
        if let Err(e) = &r {
            eprintln!("download: {e:#}; sing-box: {}", client.log_tail());
        }
        r.is_ok()
    })
    .await;
    let first_sub = first.subscription.clone();
    drop(client);
    drop(first);

    // Again on the same directory: resumes, same subscription, no new password.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let second = up(dir.path()).await;
    assert!(
        second.password.is_none(),
        "the password is printed only once"
    );
    let path = |s: &str| s.rsplit_once("/sub/").unwrap().1.to_owned();
    assert_eq!(path(&second.subscription), path(&first_sub));
    let config = client_config(&second.subscription, &target).await;
    let client = SingBox::start(config).await.unwrap();
    let proxy = client.proxy_addr().unwrap();
    wait_until("a download after the restart", 15, || async {
        target.download_via_socks(proxy, MIB).await.is_ok()
    })
    .await;
}
