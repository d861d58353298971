//! The node config push time, part of `cargo xtask bench panel`: how long a user
//! change takes, through the running panel, to a node running the new config of every
//! seeded user.
//!
//! Against the panel [`super::panel`] started: log in as the first admin, ask for a
//! join token for the seeded server (`POST /api/v1/servers/{id}/join`), run
//! `switchyard node join TOKEN` from the release binary, wait until the panel says
//! which config the node runs (`config_version` of `GET /api/v1/servers/{id}`), then
//! [`super::running::RUNS`] times: disable (or enable again) the first user with
//! `PUT /api/v1/users/1` and poll the server every [`POLL`] until its
//! `config_version` changes.
//!
//! The HTTP calls are a few, one connection each, so a minimal HTTP/1.1 client over
//! `std::net` does (xtask has no HTTP dependency).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::running::{Panel, RUNS, USERS, free_port};
use crate::cmd::Cmd;

/// How often the server's `config_version` is read while waiting for a change.
pub(crate) const POLL: Duration = Duration::from_millis(10);
/// How long the node may take to join and run its first config.
const JOIN_TIMEOUT: Duration = Duration::from_secs(120);
/// How long one change may take to reach the node before the bench gives up.
const CHANGE_TIMEOUT: Duration = Duration::from_secs(60);
/// Where the panel writes the first admin's password (`switchyard_panel::run`).
const PASSWORD_FILE: &str = "admin-password.txt";

/// The push times measured.
#[derive(Debug, Clone)]
pub(crate) struct PushTimes {
    /// Users in the config pushed.
    pub(crate) users: usize,
    /// One per change.
    pub(crate) runs: Vec<Duration>,
}

impl PushTimes {
    /// The median run.
    pub(crate) fn median(&self) -> Duration {
        let mut v = self.runs.clone();
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or_default()
    }
}

/// An admin session on the panel: the cookie and its CSRF token.
pub(crate) struct Session {
    addr: SocketAddr,
    /// `name=value` of the session cookie.
    pub(crate) cookie: String,
    csrf: String,
}

impl Session {
    pub(crate) fn login(addr: SocketAddr, data: &Path) -> Result<Self> {
        let file = data.join(PASSWORD_FILE);
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        let password = text
            .lines()
            .find_map(|l| l.strip_prefix("password: "))
            .with_context(|| format!("{} has no `password: ` line", file.display()))?;
        let body = json!({ "username": "admin", "password": password }).to_string();
        let r = request(addr, "POST", "/api/v1/session", &[], Some(&body))?;
        r.ok("logging in as admin")?;
        let cookie = r
            .header("set-cookie")
            .and_then(|c| c.split(';').next())
            .context("the login set no cookie")?
            .to_owned();
        let csrf = r.json()?["csrf_token"]
            .as_str()
            .context("the login returned no csrf_token")?
            .to_owned();
        Ok(Self { addr, cookie, csrf })
    }

    fn call(&self, method: &str, path: &str, body: Option<&str>) -> Result<Value> {
        let headers = [
            ("Cookie", self.cookie.as_str()),
            ("X-CSRF-Token", self.csrf.as_str()),
        ];
        let r = request(self.addr, method, path, &headers, body)?;
        r.ok(&format!("{method} {path}"))?;
        r.json()
    }

    fn config_version(&self, server: i64) -> Result<Option<u64>> {
        Ok(
            self.call("GET", &format!("/api/v1/servers/{server}"), None)?["config_version"]
                .as_u64(),
        )
    }

    /// Polls until the server's `config_version` is not `old`, or `timeout`.
    fn wait_for_version_other_than(
        &self,
        server: i64,
        old: Option<u64>,
        timeout: Duration,
    ) -> Result<u64> {
        let deadline = Instant::now() + timeout;
        loop {
            let now = self.config_version(server)?;
            if let Some(v) = now
                && now != old
            {
                return Ok(v);
            }
            if Instant::now() >= deadline {
                bail!("server {server} still runs config version {old:?} after {timeout:?}");
            }
            std::thread::sleep(POLL);
        }
    }
}

/// Joins a node to the seeded server of `panel` and times [`RUNS`] user changes
/// until the node runs them.
pub(crate) fn measure(panel: &mut Panel, work: &Path) -> Result<PushTimes> {
    let session = Session::login(panel.addr, &panel.data)?;
    let servers = session.call("GET", "/api/v1/servers", None)?;
    let server = servers
        .as_array()
        .and_then(|s| s.first())
        .and_then(|s| s["id"].as_i64())
        .context("the panel lists no server: was it seeded with --with-inbound?")?;
    let join = session.call("POST", &format!("/api/v1/servers/{server}/join"), None)?;
    let token = join["token"].as_str().context("no join token")?;
    let control = SocketAddr::from(([127, 0, 0, 1], free_port()?));
    let mut node = Cmd::new(&panel.switchyard)
        .args(["node", "join", token, "--state-dir"])
        .args([work.join("node")])
        .args(["--control", &control.to_string()])
        .spawn(&work.join("node.log"))?;
    let joined = Instant::now();
    let first = session
        .wait_for_version_other_than(server, None, JOIN_TIMEOUT)
        .with_context(|| {
            format!(
                "the node did not run a config; its log:\n{}",
                node.log_tail()
            )
        })?;
    println!(
        "node joined server {server} and runs config {first} after {:.1?}",
        joined.elapsed()
    );
    // Let the first rounds settle (a second heartbeat may store the same version).
    std::thread::sleep(Duration::from_secs(3));

    let mut runs = Vec::new();
    for run in 0..RUNS {
        let old = session.config_version(server)?;
        let enabled = run % 2 == 1;
        let body = json!({ "username": "seed-1", "enabled": enabled }).to_string();
        let started = Instant::now();
        session.call("PUT", "/api/v1/users/1", Some(&body))?;
        let new = session.wait_for_version_other_than(server, old, CHANGE_TIMEOUT)?;
        let took = started.elapsed();
        println!(
            "user 1 {}: config {old:?} -> {new} on the node in {took:.1?}",
            if enabled { "enabled" } else { "disabled" }
        );
        runs.push(took);
        node.ensure_running().context("the node died")?;
        panel.process.ensure_running().context("the panel died")?;
        std::thread::sleep(Duration::from_secs(1));
    }
    drop(node);
    Ok(PushTimes { users: USERS, runs })
}

/// A response: status, headers (names lower-case), body.
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn ok(&self, what: &str) -> Result<()> {
        if (200..300).contains(&self.status) {
            return Ok(());
        }
        bail!(
            "{what}: the panel answered {}: {}",
            self.status,
            String::from_utf8_lossy(&self.body)
        )
    }

    fn json(&self) -> Result<Value> {
        serde_json::from_slice(&self.body).with_context(|| {
            format!(
                "the panel's answer is not JSON: {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

/// One HTTP/1.1 request on its own connection (`Connection: close`).
fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Result<Response> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .with_context(|| format!("connecting to {addr}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (n, v) in headers {
        head += &format!("{n}: {v}\r\n");
    }
    let body = body.unwrap_or("");
    if !body.is_empty() || method != "GET" {
        head += &format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        );
    }
    head += "\r\n";
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .with_context(|| format!("{method} {path}: reading the answer"))?;
    parse_response(&raw).with_context(|| format!("{method} {path}"))
}

fn parse_response(raw: &[u8]) -> Result<Response> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .context("no end of the response head")?;
    let head = std::str::from_utf8(&raw[..split]).context("a response head not UTF-8")?;
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .context("no status line")?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    if chunked {
        body = dechunk(&body)?;
    }
    Ok(Response {
        status,
        headers,
        body,
    })
}

fn dechunk(mut raw: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let end = raw
            .windows(2)
            .position(|w| w == b"\r\n")
            .context("a chunk without its size line")?;
        let size = std::str::from_utf8(&raw[..end])?;
        let size = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16)
            .with_context(|| format!("chunk size {size:?}"))?;
        if size == 0 {
            return Ok(out);
        }
        let data = raw
            .get(end + 2..end + 2 + size)
            .context("a chunk shorter than its size")?;
        out.extend_from_slice(data);
        raw = raw.get(end + 4 + size..).unwrap_or_default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_parsed_plain_and_chunked() {
        let r = parse_response(
            b"HTTP/1.1 201 Created\r\nSet-Cookie: a=b; Path=/\r\ncontent-length: 2\r\n\r\n{}",
        )
        .unwrap();
        assert_eq!(r.status, 201);
        assert_eq!(r.header("set-cookie"), Some("a=b; Path=/"));
        assert_eq!(r.body, b"{}");
        let r = parse_response(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(r.body, b"abcde");
        assert!(parse_response(b"HTTP/1.1 200 OK\r\n").is_err());
    }

    #[test]
    fn the_median_run() {
        let ms = Duration::from_millis;
        let p = PushTimes {
            users: 1,
            runs: vec![ms(30), ms(10), ms(20)],
        };
        assert_eq!(p.median(), ms(20));
    }
}
