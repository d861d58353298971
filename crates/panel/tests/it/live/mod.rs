//! Pieces of the tests that run a real panel with real nodes on 127.0.0.1.

#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::time::{Duration, Instant};

use switchyard_channel::JoinToken;
use switchyard_node::channel::{EnrolledNode, EnrolledOptions, run_enrolled};
use switchyard_node::config::ControlSettings;
use switchyard_panel::store::UserInput;

/// Unix ms now.
pub fn now() -> i64 {
    switchyard_node::accounting::now_ms()
}

/// Polls `f` every 100 ms until it holds; fails after `secs`.
pub async fn wait_until<F: std::future::Future<Output = bool>>(
    what: &str,
    secs: u64,
    mut f: impl FnMut() -> F,
) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f().await {
        assert!(Instant::now() < deadline, "{what} within {secs} s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A node with its state in `dir`, joining with `token`, its control API on a free
/// port of 127.0.0.1, redialing fast.
pub async fn join(dir: &Path, token: &str) -> EnrolledNode {
    let mut options = EnrolledOptions::new(dir.to_owned());
    options.token = Some(JoinToken::parse(token).unwrap());
    options.control = Some(ControlSettings {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..ControlSettings::default()
    });
    options.channel.backoff.first = Duration::from_millis(100);
    options.channel.backoff.max = Duration::from_millis(500);
    run_enrolled(options).await.unwrap()
}

/// An enabled user without limits.
pub fn user(name: &str) -> UserInput {
    UserInput::new(name)
}

/// One HTTP/1.1 request to the panel at `addr`: the status and the JSON body (null
/// when empty). `auth` is a whole header value (`Bearer …`) or empty.
pub async fn http(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    auth: &str,
    body: Option<&serde_json::Value>,
) -> (u16, serde_json::Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let auth = if auth.is_empty() {
        String::new()
    } else {
        format!("Authorization: {auth}\r\n")
    };
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{auth}\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).await.unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (
        status,
        serde_json::from_str(body).unwrap_or(serde_json::Value::Null),
    )
}

/// `Bearer <an API token>`, made through a session of the first admin, whose password
/// the panel wrote in `data_dir` on its first start.
pub async fn api_token(addr: std::net::SocketAddr, data_dir: &Path) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let file =
        std::fs::read_to_string(data_dir.join(switchyard_panel::run::PASSWORD_FILE)).unwrap();
    let password = file
        .lines()
        .find_map(|l| l.strip_prefix("password: "))
        .unwrap_or_else(|| panic!("no password line in the panel's password file"));
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = serde_json::json!({ "username": "admin", "password": password.trim() }).to_string();
    let req = format!(
        "POST /api/v1/session HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).await.unwrap();
    let cookie = raw
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .unwrap_or_else(|| panic!("no session: {raw}"))
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let session: serde_json::Value =
        serde_json::from_str(raw.split_once("\r\n\r\n").unwrap().1).unwrap();
    let csrf = session["csrf_token"].as_str().unwrap();
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = serde_json::json!({ "name": "test" }).to_string();
    let req = format!(
        "POST /api/v1/tokens HTTP/1.1\r\nHost: x\r\nConnection: close\r\nCookie: {cookie}\r\n\
         X-CSRF-Token: {csrf}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).await.unwrap();
    let token: serde_json::Value =
        serde_json::from_str(raw.split_once("\r\n\r\n").unwrap().1).unwrap();
    format!("Bearer {}", token["secret"].as_str().unwrap())
}

/// A panel on free ports of 127.0.0.1 with its data in `dir/panel`, and its HTTP
/// address.
pub async fn panel(dir: &Path) -> (switchyard_panel::Panel, std::net::SocketAddr) {
    panel_with(dir, |_| {}).await
}

/// [`panel`] with its config changed by `edit` first.
pub async fn panel_with(
    dir: &Path,
    edit: impl FnOnce(&mut switchyard_panel::config::PanelConfig),
) -> (switchyard_panel::Panel, std::net::SocketAddr) {
    use switchyard_panel::config::{ChannelSettings, PanelConfig};
    let free =
        || std::net::SocketAddr::from(([127, 0, 0, 1], switchyard_testkit::free_port().unwrap()));
    let http = free();
    let mut config = PanelConfig {
        listen: http,
        data_dir: dir.join("panel"),
        channel: ChannelSettings {
            listen: free(),
            ..ChannelSettings::default()
        },
        ..PanelConfig::default()
    };
    edit(&mut config);
    let panel = switchyard_panel::Panel::start(config).await.unwrap();
    (panel, http)
}

/// A server named `name` at 127.0.0.1 in `cluster`, private destinations allowed (the
/// tests' targets are on 127.0.0.1).
pub async fn server(panel: &switchyard_panel::Panel, cluster: i64, name: &str) -> i64 {
    panel
        .state
        .service()
        .create_server(
            &switchyard_panel::store::ServerInput {
                cluster_id: cluster,
                name: name.into(),
                address: "127.0.0.1".into(),
                allow_private_destinations: true,
            },
            now(),
        )
        .await
        .unwrap()
        .id
}

/// A VLESS inbound on `port` of `server`: over TLS with a self-signed certificate for
/// `localhost` when `tls`, plain otherwise.
pub fn vless(
    server: i64,
    name: &str,
    port: u16,
    tls: bool,
) -> switchyard_panel::store::InboundInput {
    use switchyard_panel::model::{InboundSecurity, InboundTransport, Protocol, TlsCertificate};
    switchyard_panel::store::InboundInput {
        server_id: server,
        name: name.into(),
        protocol: Protocol::Vless,
        port,
        transport: InboundTransport::Tcp,
        security: if tls {
            InboundSecurity::Tls {
                certificate: TlsCertificate::SelfSigned,
            }
        } else {
            InboundSecurity::None
        },
        host: None,
        sni: tls.then(|| "localhost".into()),
        coefficient: 1.0,
        method: None,
        flow: None,
        hysteria2: None,
        trusted_proxies: Vec::new(),
        rules: Default::default(),
    }
}

/// One node per server, joined with a fresh token (state in `dir/node-<i>`), once
/// every one of them is online.
pub async fn join_all(
    panel: &switchyard_panel::Panel,
    dir: &Path,
    servers: &[i64],
) -> Vec<EnrolledNode> {
    let mut nodes = Vec::new();
    for (i, id) in servers.iter().enumerate() {
        let token = panel.join_token(*id).await.unwrap();
        nodes.push(join(&dir.join(format!("node-{i}")), &token).await);
    }
    let store = panel.state.store().clone();
    for id in servers {
        wait_until("the node is online", 20, || {
            let store = store.clone();
            let id = *id;
            async move {
                store.server(id).await.unwrap().state
                    == switchyard_panel::model::ServerState::Online
            }
        })
        .await;
    }
    nodes
}

/// A TCP echo server on 127.0.0.1, running until the test ends.
pub async fn echo_server() -> std::net::SocketAddr {
    echo_server_on([127, 0, 0, 1]).await
}

/// A TCP echo server on `ip` (another loopback address, say), running until the
/// test ends.
pub async fn echo_server_on(ip: [u8; 4]) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind(std::net::SocketAddr::from((ip, 0)))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    addr
}

/// A Clash config the panel served, for a test whose targets are on 127.0.0.1:
/// without the rules that send private addresses (127.0.0.0/8 among them) direct,
/// which would take the test's traffic around the node. Fails when there are none
/// to take out.
pub fn through_the_node(yaml: &str) -> String {
    let kept: Vec<&str> = yaml
        .lines()
        .filter(|l| !l.trim_end().ends_with(",DIRECT,no-resolve\""))
        .collect();
    assert_eq!(
        yaml.lines().count() - kept.len(),
        8,
        "the private rules of a served Clash config:\n{yaml}"
    );
    let mut out = kept.join("\n");
    out.push('\n');
    out
}

/// An Xray config the panel served, for a test whose targets are on 127.0.0.1:
/// without its rule that routes private addresses direct (around the node). Fails
/// when it has none.
pub fn xray_through_the_node(config: &mut serde_json::Value) {
    let rules = config["routing"]["rules"].as_array_mut().unwrap();
    let before = rules.len();
    // The private rule: the one naming loopback (a preset's direct rules stay).
    rules.retain(|r| {
        !r["ip"]
            .as_array()
            .is_some_and(|ips| ips.iter().any(|ip| ip == "127.0.0.0/8"))
    });
    assert_eq!(before - rules.len(), 1, "the private rule of {config}");
}

/// The credentials of `user` (VLESS UUID, Trojan password), as the store keeps them.
pub async fn credentials(
    panel: &switchyard_panel::Panel,
    user: &switchyard_panel::model::User,
) -> switchyard_panel::model::Credentials {
    let token = user.subscription_path.trim_start_matches("/sub/");
    let (_, creds) = panel
        .state
        .store()
        .user_by_token(token, now())
        .await
        .unwrap()
        .unwrap();
    creds
}

/// `GET path` from the panel at `addr` with `extra` header lines (each ending in
/// CRLF), no token: the status line, the headers (names in lower case) and the body.
pub async fn get_raw(
    addr: std::net::SocketAddr,
    path: &str,
    extra: &str,
) -> (String, String, String) {
    let (status, headers, body) = get_bytes(addr, path, extra).await;
    (status, headers, String::from_utf8(body).unwrap())
}

/// [`get_raw`] with the body as bytes (a binary file).
pub async fn get_bytes(
    addr: std::net::SocketAddr,
    path: &str,
    extra: &str,
) -> (String, String, Vec<u8>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: p\r\nConnection: close\r\n{extra}\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8(raw[..end].to_vec()).unwrap();
    let (status, headers) = head.split_once("\r\n").unwrap_or((&head, ""));
    // Names in lower case, values as sent.
    let headers: Vec<String> = headers
        .lines()
        .map(|l| match l.split_once(':') {
            Some((name, value)) => format!("{}:{value}", name.to_ascii_lowercase()),
            None => l.to_owned(),
        })
        .collect();
    (
        status.to_owned(),
        headers.join("\r\n"),
        raw[end + 4..].to_vec(),
    )
}
