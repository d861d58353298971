//! `switchyard tunnel init` writes snippets that two nodes can run as they are: the
//! origin connects to the relay over every profile.

use std::process::Command;
use std::time::Duration;

use switchyard_node::{Node, NodeConfig};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn init_writes_configs_that_connect_an_origin_to_the_relay() {
    let dir = tempfile::tempdir().unwrap();
    let (p1, p2, p3) = (free_port(), free_port(), free_port());
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args([
            "tunnel",
            "init",
            "--name",
            "eu",
            "--relay",
            "127.0.0.1",
            "--origin",
            "fi",
            "--origin",
            "de",
        ])
        .args([
            "--profile",
            &format!("tls:{p1}"),
            "--profile",
            &format!("ws:{p2}:/eu:cdn.test"),
            "--profile",
            &format!("httpupgrade:{p3}:/eu-up:cdn.test"),
            "--links",
            "2",
        ])
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for f in [
        "relay.toml",
        "origin-fi.toml",
        "origin-de.toml",
        "eu.crt",
        "eu.key",
        "eu.secret",
    ] {
        assert!(dir.path().join(f).exists(), "{f}");
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir.path().join("eu.key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "the key is private");

    let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap();
    let node = |extra: String, state: &str| {
        format!(
            "[node]\nstate_dir = \"{}\"\nallow_private_destinations = true\n[control]\nlisten = \"127.0.0.1:{}\"\n{extra}",
            dir.path().join(state).display(),
            free_port()
        )
    };
    let relay = Node::start(NodeConfig::from_toml(&node(read("relay.toml"), "relay")).unwrap())
        .await
        .unwrap();
    let _fi = Node::start(NodeConfig::from_toml(&node(read("origin-fi.toml"), "fi")).unwrap())
        .await
        .unwrap();
    for _ in 0..200 {
        if relay.tunnel("eu").await.unwrap()["links"] == 6 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let status = relay.tunnel("eu").await.unwrap();
    // 3 profiles (TLS, WebSocket, HTTPUpgrade) × 2 links.
    assert_eq!(status["links"], 6, "{status}");
    // The relay's routing sends everything into the tunnel by default.
    assert_eq!(
        relay.config().await.final_tag(),
        status["tag"].as_str().unwrap()
    );

    // Bad input is refused with a clear message and exit code 1 (no panic).
    let bad = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args([
            "tunnel",
            "init",
            "--name",
            "x",
            "--relay",
            "r",
            "--origin",
            "o",
            "--profile",
            "udp:1",
        ])
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--profile udp:1"));
}

#[tokio::test]
async fn init_direct_mode_has_the_relay_dial_the_origins() {
    let dir = tempfile::tempdir().unwrap();
    let p1 = free_port();
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args([
            "tunnel", "init", "--name", "us", "--relay", "unused", "--mode", "direct",
        ])
        .args([
            "--origin",
            "fi@127.0.0.1",
            "--profile",
            &format!("tls:{p1}"),
            "--links",
            "2",
        ])
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap();
    let node = |extra: String, state: &str| {
        format!(
            "[node]\nstate_dir = \"{}\"\nallow_private_destinations = true\n[control]\nlisten = \"127.0.0.1:{}\"\n{extra}",
            dir.path().join(state).display(),
            free_port()
        )
    };
    let _fi = Node::start(NodeConfig::from_toml(&node(read("origin-fi.toml"), "fi")).unwrap())
        .await
        .unwrap();
    let relay = Node::start(NodeConfig::from_toml(&node(read("relay.toml"), "relay")).unwrap())
        .await
        .unwrap();
    for _ in 0..200 {
        if relay.tunnel("us").await.unwrap()["links"] == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(relay.tunnel("us").await.unwrap()["links"], 2);
    // Direct mode without a host is refused.
    let bad = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args([
            "tunnel", "init", "--name", "x", "--relay", "r", "--origin", "o", "--mode", "direct",
        ])
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&bad.stderr).contains("NAME@HOST"));
}
