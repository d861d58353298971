//! Config changes apply as a difference: unaffected connections carry on across a
//! reload; removed users and rebuilt inbounds lose theirs; a broken config changes
//! nothing.

use crate::common;

use std::time::Duration;

use common::*;
use switchyard_node::NodeConfig;
use switchyard_proto::Address;
use switchyard_testkit::pattern;
use switchyard_testkit::{TestCert, free_port};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A raw VLESS client downloading `n` bytes from the fixture's HTTP target.
async fn download(port: u16, uuid: &str, target: std::net::SocketAddr, n: u64) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    s.write_all(&vless_get(uuid, target, n)).await.unwrap();
    s
}

/// Reads the VLESS response and the HTTP head, then the body slowly, checking every
/// byte; returns the body bytes read before EOF.
async fn read_slowly(s: &mut TcpStream, pace: Duration) -> u64 {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte).await.unwrap_or(0) == 0 {
            return 0;
        }
        head.push(byte[0]);
    }
    let mut at = 0u64;
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = match s.read(&mut buf).await {
            Ok(0) | Err(_) => return at,
            Ok(n) => n,
        };
        assert_eq!(
            pattern::first_mismatch(at, &buf[..n]),
            None,
            "corrupt at {at}"
        );
        at += n as u64;
        tokio::time::sleep(pace).await;
    }
}

/// Two inbounds: `main` (VLESS) and `other` (Trojan) on free ports.
async fn two_inbounds() -> (Fixture, u16) {
    let other = free_port().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cert = TestCert::new("node.test").unwrap();
    let port = free_port().unwrap();
    let text = config_text(port, "protocol = \"vless\"", &cert, dir.path(), "")
        + &format!(
            "\n[[inbounds]]\ntag = \"other\"\nprotocol = \"vless\"\nlisten = \"127.0.0.1\"\nport = {other}\n"
        );
    (start_text(text, dir, cert, port).await, other)
}

async fn config(f: &Fixture) -> NodeConfig {
    f.node.config().await
}

#[tokio::test]
async fn long_transfers_carry_on_across_unrelated_changes() {
    let (f, other) = two_inbounds().await;
    const N: u64 = 48 << 20;
    let mut alice = download(f.port, ALICE_UUID, f.http.addr(), N).await;
    let mut bob = download(other, BOB_UUID, f.http.addr(), N).await;
    let reader_a =
        tokio::spawn(async move { read_slowly(&mut alice, Duration::from_millis(20)).await });
    let reader_b =
        tokio::spawn(async move { read_slowly(&mut bob, Duration::from_millis(20)).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    // A new user, a renamed inbound, a new inbound, a new version: nobody drops.
    let mut c = config(&f).await;
    c.version = 2;
    c.inbounds[0].name = "Renamed".into();
    c.users
        .push(toml_user("carol", "5f2c2d0e-6a2b-4c47-9a3e-0c7f0b8d1e2a"));
    let third = free_port().unwrap();
    let mut new_inbound = c.inbounds[1].clone();
    new_inbound.tag = "third".into();
    new_inbound.port = third;
    c.inbounds.push(new_inbound);
    f.node.apply(c.clone()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    c.version = 3;
    c.users[1].address_limit = Some(3); // bob's limit changes: no reason to close
    f.node.apply(c).await.unwrap();
    assert_eq!(reader_a.await.unwrap(), N);
    assert_eq!(reader_b.await.unwrap(), N);
    // The new inbound serves.
    let mut s = download(third, ALICE_UUID, f.http.addr(), 1000).await;
    assert_eq!(read_slowly(&mut s, Duration::ZERO).await, 1000);
}

fn toml_user(name: &str, uuid: &str) -> switchyard_node::config::UserConfig {
    switchyard_node::config::UserConfig {
        name: name.into(),
        enabled: true,
        vless: Some(switchyard_node::config::Secret::new(uuid)),
        trojan: None,
        shadowsocks: None,
        socks: None,
        hysteria2: None,
        address_limit: None,
    }
}

#[tokio::test]
async fn a_removed_or_disabled_user_loses_its_connections_and_only_those() {
    let f = start("protocol = \"vless\"").await;
    const N: u64 = 64 << 20;
    let mut alice = download(f.port, ALICE_UUID, f.http.addr(), N).await;
    let mut bob = download(f.port, BOB_UUID, f.http.addr(), N).await;
    let reader_a =
        tokio::spawn(async move { read_slowly(&mut alice, Duration::from_millis(50)).await });
    let reader_b =
        tokio::spawn(async move { read_slowly(&mut bob, Duration::from_millis(10)).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut c = config(&f).await;
    c.users[0].enabled = false; // alice
    f.node.apply(c.clone()).await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(5), reader_a)
        .await
        .expect("alice's connection closes")
        .unwrap();
    assert!(got < N, "alice was cut off ({got} of {N})");
    assert_eq!(reader_b.await.unwrap(), N, "bob is untouched");
    // Alice is refused from now on (silently held: no VLESS answer).
    let mut again = download(f.port, ALICE_UUID, f.http.addr(), 10).await;
    let mut b = [0u8; 1];
    let r = tokio::time::timeout(Duration::from_millis(800), again.read(&mut b)).await;
    assert!(r.is_err(), "no answer to a disabled user");
    // Removing bob entirely closes bob's connections the same way.
    let mut bob = download(f.port, BOB_UUID, f.http.addr(), N).await;
    let reader =
        tokio::spawn(async move { read_slowly(&mut bob, Duration::from_millis(50)).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    c.users.remove(1);
    f.node.apply(c).await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(5), reader)
        .await
        .expect("bob's connection closes")
        .unwrap();
    assert!(got < N);
}

#[tokio::test]
async fn changing_an_inbound_rebuilds_only_that_listener() {
    let (f, other) = two_inbounds().await;
    const N: u64 = 48 << 20;
    let mut on_main = download(f.port, ALICE_UUID, f.http.addr(), N).await;
    let mut on_other = download(other, BOB_UUID, f.http.addr(), N).await;
    let main_reader =
        tokio::spawn(async move { read_slowly(&mut on_main, Duration::from_millis(20)).await });
    let other_reader =
        tokio::spawn(async move { read_slowly(&mut on_other, Duration::from_millis(50)).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    // `other` becomes a Trojan inbound on the same port: rebuilt in place.
    let mut c = config(&f).await;
    c.inbounds[1].protocol = switchyard_node::config::Protocol::Trojan;
    f.node.apply(c).await.unwrap();
    let cut = tokio::time::timeout(Duration::from_secs(5), other_reader)
        .await
        .expect("closed")
        .unwrap();
    assert!(cut < N, "the rebuilt inbound's connection is closed");
    assert_eq!(
        main_reader.await.unwrap(),
        N,
        "the other inbound's connection is intact"
    );
    // The rebuilt listener speaks Trojan now on the same port.
    let mut s = TcpStream::connect(("127.0.0.1", other)).await.unwrap();
    let mut req = Vec::new();
    switchyard_proto::trojan::Request {
        hash: switchyard_proto::trojan::password_hash("alice-password"),
        command: switchyard_proto::trojan::Command::Connect,
        destination: Address::Ip(f.http.addr()),
    }
    .encode(&mut req);
    req.extend_from_slice(b"GET /bytes/100 HTTP/1.1\r\nHost: t\r\n\r\n");
    s.write_all(&req).await.unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).await.unwrap();
    assert!(all.len() > 100 && all.starts_with(b"HTTP/1.1 200"));
}

#[tokio::test]
async fn a_broken_config_is_refused_with_the_field_named_and_the_old_one_serves_on() {
    let f = start("protocol = \"vless\"").await;
    let mut c = config(&f).await;
    c.version = 7;
    c.users[1].vless = Some(switchyard_node::config::Secret::new("not-a-uuid"));
    let err = f.node.apply(c).await.unwrap_err().to_string();
    assert!(err.starts_with("users[1].vless:"), "{err}");
    // A port that can't be bound fails the whole change, naming the inbound.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut c = config(&f).await;
    c.version = 8;
    let mut extra = c.inbounds[0].clone();
    extra.tag = "second".into();
    extra.port = taken.local_addr().unwrap().port();
    c.inbounds.push(extra);
    let err = f.node.apply(c).await.unwrap_err().to_string();
    assert!(err.contains("\"second\""), "{err}");
    assert_eq!(config(&f).await.version, 1);
    // Still serving the old config.
    let mut s = download(f.port, ALICE_UUID, f.http.addr(), 1000).await;
    assert_eq!(read_slowly(&mut s, Duration::ZERO).await, 1000);
}

#[tokio::test]
async fn the_last_good_config_is_kept_on_disk() {
    let f = start("protocol = \"vless\"").await;
    let mut c = config(&f).await;
    c.version = 5;
    f.node.apply(c.clone()).await.unwrap();
    let kept = switchyard_node::Node::last_good(f.dir.path()).expect("saved");
    assert_eq!(kept, c);
}
