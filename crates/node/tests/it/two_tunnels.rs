//! Two tunnels on one relay: rebuilding one leaves the other's streams intact.

use crate::common;

use std::time::Duration;

use common::*;
use switchyard_node::{Node, NodeConfig};
use switchyard_testkit::{HttpTarget, free_port, pattern};
use switchyard_tunnel::credentials::{TunnelSecret, origin_credential, tunnel_tag};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const SECRET: TunnelSecret = TunnelSecret([9; 32]);

/// A tunnel's relay snippet and the origin node serving it.
async fn tunnel(name: &str, dir: &std::path::Path) -> (String, std::sync::Arc<Node>) {
    let (cert, c, k) = tunnel_cert(name, dir);
    let port = free_port().unwrap();
    let cred = origin_credential(&SECRET, name, "o").to_hex();
    let profile =
        format!("[[tunnels.profiles]]\nport = {port}\naddresses = [\"127.0.0.1:{port}\"]\n");
    let relay = format!(
        "[[tunnels]]\nname = \"{name}\"\nlinks = 2\n{profile}[tunnels.relay]\nlisten = \"127.0.0.1\"\ncert = \"{}\"\nkey = \"{}\"\n[[tunnels.relay.origins]]\nname = \"o\"\ncredential = \"{cred}\"\n",
        c.display(),
        k.display()
    );
    let state = dir.join(format!("origin-{name}"));
    let origin = format!(
        "[node]\nstate_dir = \"{}\"\nallow_private_destinations = true\n[control]\nlisten = \"127.0.0.1:{}\"\n[[tunnels]]\nname = \"{name}\"\nlinks = 2\n{profile}[tunnels.origin]\nname = \"o\"\ncredential = \"{cred}\"\npin = \"{}\"\n",
        state.display(),
        free_port().unwrap(),
        cert.pin
    );
    (
        relay,
        Node::start(NodeConfig::from_toml(&origin).unwrap())
            .await
            .unwrap(),
    )
}

async fn download(port: u16, target: std::net::SocketAddr, n: u64) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    s.write_all(&vless_get(ALICE_UUID, target, n))
        .await
        .unwrap();
    s
}

/// Reads the VLESS answer, the HTTP head and the body slowly; returns body bytes.
async fn read_slowly(mut s: TcpStream) -> u64 {
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut b).await.unwrap_or(0) == 0 {
            return 0;
        }
        head.push(b[0]);
    }
    let (mut at, mut buf) = (0u64, vec![0u8; 256 * 1024]);
    loop {
        match s.read(&mut buf).await {
            Ok(0) | Err(_) => return at,
            Ok(n) => {
                assert_eq!(pattern::first_mismatch(at, &buf[..n]), None);
                at += n as u64;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn rebuilding_one_tunnel_leaves_the_other_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (eu, _eu_origin) = tunnel("eu", dir.path()).await;
    let (us, _us_origin) = tunnel("us", dir.path()).await;
    let (to_eu, to_us) = (
        HttpTarget::start().await.unwrap(),
        HttpTarget::start().await.unwrap(),
    );
    let rules = format!(
        "[[route.rules]]\nport = [{}]\noutbound = \"{}\"\n[[route.rules]]\nport = [{}]\noutbound = \"{}\"\n",
        to_eu.addr().port(),
        tunnel_tag("eu"),
        to_us.addr().port(),
        tunnel_tag("us")
    );
    let relay = start_with("protocol = \"vless\"", &format!("{eu}{us}{rules}")).await;
    for _ in 0..200 {
        let links =
            |v: Option<serde_json::Value>| v.map_or(0, |v| v["links"].as_u64().unwrap_or(0));
        if links(relay.node.tunnel("eu").await) == 2 && links(relay.node.tunnel("us").await) == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    const N: u64 = 32 << 20;
    let a = tokio::spawn(read_slowly(download(relay.port, to_eu.addr(), N).await));
    let b = tokio::spawn(read_slowly(download(relay.port, to_us.addr(), N).await));
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Change us's shape (its link count): only us is rebuilt.
    let mut c = relay.node.config().await;
    let us_cfg = c.tunnels.iter_mut().find(|t| t.name == "us").unwrap();
    us_cfg.links = 3;
    relay.node.apply(c).await.unwrap();
    assert_eq!(a.await.unwrap(), N, "eu's stream is intact");
    assert!(b.await.unwrap() < N, "us's stream was cut by the rebuild");
    assert_eq!(to_eu.requests(), 1);
}
