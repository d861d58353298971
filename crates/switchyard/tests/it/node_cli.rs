//! `switchyard node --config FILE` as an operator runs it: reloads on file change and
//! on SIGHUP, keeps serving when the file breaks, stops cleanly on SIGTERM.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn config(version: u32, control: u16, port: u16, broken: bool) -> String {
    let limit = if broken { "address_limit = 0" } else { "" };
    format!(
        r#"version = {version}
[control]
listen = "127.0.0.1:{control}"
[[inbounds]]
tag = "in"
protocol = "vless"
listen = "127.0.0.1"
port = {port}
[[users]]
name = "alice"
vless = "b831381d-6324-4d53-ad4f-8cda48b30811"
{limit}
"#
    )
}

/// `switchyard node token --config FILE`.
fn token(file: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["node", "token", "--config"])
        .arg(file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// A GET with `token` as the bearer token (none when empty); the whole response.
fn get(control: u16, token: &str, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", control)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    let auth = if token.is_empty() {
        String::new()
    } else {
        format!("Authorization: Bearer {token}\r\n")
    };
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n"
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

fn wait_for_version(control: u16, token: &str, v: u32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if get(control, token, "/v1/status")
            .is_some_and(|s| s.contains(&format!("\"version\":{v}")))
        {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

struct Node(Child);
impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

#[test]
fn reloads_on_change_and_sighup_survives_a_broken_file_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("node.toml");
    let (control, port) = (free_port(), free_port());
    write(&file, &config(1, control, port, false));
    let child = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["node", "--config"])
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut node = Node(child);
    let t = token(&file);
    assert!(
        wait_for_version(control, &t, 1, Duration::from_secs(10)),
        "the node came up"
    );
    // The token the command prints is the one the API wants, and only it.
    let refused = get(control, "", "/v1/status").unwrap();
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    let t = t.as_str();

    // The file changes: picked up by the watcher.
    write(&file, &config(2, control, port, false));
    assert!(
        wait_for_version(control, t, 2, Duration::from_secs(10)),
        "reloaded on change"
    );

    // SIGHUP reloads. The file's modification time is put back so the watcher can't
    // be what notices.
    let stamp = dir.path().join("stamp");
    write(&stamp, "");
    assert!(
        Command::new("touch")
            .arg("-r")
            .arg(&file)
            .arg(&stamp)
            .status()
            .unwrap()
            .success()
    );
    write(&file, &config(3, control, port, false));
    assert!(
        Command::new("touch")
            .arg("-r")
            .arg(&stamp)
            .arg(&file)
            .status()
            .unwrap()
            .success()
    );
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        wait_for_version(control, t, 2, Duration::from_secs(1)),
        "no reload without a change or a signal"
    );
    signal(&node.0, "-HUP");
    assert!(
        wait_for_version(control, t, 3, Duration::from_secs(10)),
        "reloaded on SIGHUP"
    );

    // A broken file is refused; version 3 serves on.
    write(&file, &config(4, control, port, true));
    signal(&node.0, "-HUP");
    std::thread::sleep(Duration::from_secs(3));
    assert!(wait_for_version(control, t, 3, Duration::from_secs(1)));
    assert!(node.0.try_wait().unwrap().is_none(), "still running");

    // The last good config is on disk next to the file.
    let kept =
        std::fs::read_to_string(dir.path().join("switchyard-node-state/config.json")).unwrap();
    assert!(kept.contains("\"version\": 3"), "{kept}");

    signal(&node.0, "-TERM");
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = node.0.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "stops on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
}

#[test]
fn a_broken_file_at_start_with_no_last_good_config_exits_2_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("node.toml");
    write(&file, &config(1, free_port(), free_port(), true));
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["node", "--config"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("users[0].address_limit"), "{err}");
}

/// A node with a VLESS inbound whose users may reach 127.0.0.1.
fn counting_config(control: u16, port: u16) -> String {
    config(1, control, port, false) + "[node]\nallow_private_destinations = true\n"
}

fn start_node(file: &Path) -> Node {
    Node(
        Command::new(env!("CARGO_BIN_EXE_switchyard"))
            .args(["node", "--config"])
            .arg(file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// Alice's bytes up, as `GET /v1/stats` (after cursor 0) shows them: live and in the
/// journal's records.
fn alice_up(control: u16, token: &str) -> Option<(u64, u64)> {
    let response = get(control, token, "/v1/stats?cursor=0")?;
    let body = response.split_once("\r\n\r\n")?.1;
    let stats: serde_json::Value = serde_json::from_str(body).ok()?;
    let live = stats["users"]["alice"]["up"].as_u64().unwrap_or(0);
    let journaled = stats["records"]
        .as_array()?
        .iter()
        .filter_map(|r| r["users"]["alice"]["up"].as_u64())
        .sum();
    Some((live, journaled))
}

#[test]
fn a_kill_9_loses_at_most_a_second_of_counting() {
    const N: usize = 300_000;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("node.toml");
    let (control, port) = (free_port(), free_port());
    write(&file, &counting_config(control, port));
    let mut node = start_node(&file);
    let t = token(&file);
    assert!(wait_for_version(control, &t, 1, Duration::from_secs(10)));

    // Alice sends N bytes through the node (VLESS by hand) to a sink here.
    let sink = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let to = sink.local_addr().unwrap();
    let reader = std::thread::spawn(move || {
        let (mut s, _) = sink.accept().unwrap();
        let mut all = Vec::new();
        s.read_to_end(&mut all).unwrap();
        all.len()
    });
    let mut vless = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut header = vec![0u8];
    header.extend((0..16).map(|i| {
        u8::from_str_radix(&"b831381d63244d53ad4f8cda48b30811"[2 * i..2 * i + 2], 16).unwrap()
    }));
    header.extend([0, 1]); // no addons; TCP
    header.extend(to.port().to_be_bytes());
    header.extend([1, 127, 0, 0, 1]);
    vless.write_all(&header).unwrap();
    vless.write_all(&vec![7u8; N]).unwrap();
    vless.shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(reader.join().unwrap(), N);
    let deadline = Instant::now() + Duration::from_secs(10);
    while alice_up(control, &t).is_none_or(|(live, _)| live < N as u64) {
        assert!(Instant::now() < deadline, "counted live");
        std::thread::sleep(Duration::from_millis(20));
    }
    // A second and a half later the bytes are on disk: kill -9 then.
    std::thread::sleep(Duration::from_millis(1500));
    node.0.kill().unwrap();
    node.0.wait().unwrap();
    let _node = start_node(&file);
    assert!(wait_for_version(control, &t, 1, Duration::from_secs(10)));
    assert_eq!(alice_up(control, &t), Some((0, N as u64)));
}
