//! A relay node and an origin node on 127.0.0.1 joined by a tunnel (reverse mode,
//! pinned TLS): a real sing-box client's traffic enters the relay, crosses the tunnel
//! and leaves from the origin; it is counted once, on the relay.

use crate::common;

use std::time::Duration;

use common::*;
use switchyard_node::{Node, NodeConfig};
use switchyard_testkit::config::vless_outbound;
use switchyard_testkit::{SingBox, free_port};
use switchyard_tunnel::credentials::{TunnelSecret, origin_credential};
use switchyard_tunnel::link::cert::issue;

const SECRET: TunnelSecret = TunnelSecret([5; 32]);

async fn wait_for(mut f: impl AsyncFnMut() -> bool) {
    for _ in 0..200 {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("not reached in 5 s");
}

#[tokio::test]
async fn user_traffic_crosses_the_tunnel_and_is_counted_once_on_the_relay() {
    let cert = issue("eu").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (cert_path, key_path) = (dir.path().join("t.crt"), dir.path().join("t.key"));
    std::fs::write(&cert_path, &cert.cert_pem).unwrap();
    std::fs::write(&key_path, &cert.key_pem).unwrap();
    let (tls_port, ws_port) = (free_port().unwrap(), free_port().unwrap());
    let credential = origin_credential(&SECRET, "eu", "fi").to_hex();
    let profiles = format!(
        r#"
[[tunnels.profiles]]
port = {tls_port}
addresses = ["127.0.0.1:{tls_port}"]
[[tunnels.profiles]]
port = {ws_port}
transport = {{ type = "ws", path = "/eu", host = "cdn.test" }}
addresses = ["127.0.0.1:{ws_port}"]
"#
    );
    // The relay: a VLESS inbound; the tunnel becomes its final outbound by itself.
    let relay_tunnel = format!(
        "[[tunnels]]\nname = \"eu\"\nlinks = 2\n{profiles}\n[tunnels.relay]\nlisten = \"127.0.0.1\"\ncert = \"{}\"\nkey = \"{}\"\n[[tunnels.relay.origins]]\nname = \"fi\"\ncredential = \"{credential}\"\n",
        cert_path.display(),
        key_path.display()
    );
    let relay = start_with("protocol = \"vless\"", &relay_tunnel).await;
    // The origin: no inbound of its own.
    let origin_dir = tempfile::tempdir().unwrap();
    let origin_text = format!(
        "[node]\nstate_dir = \"{}\"\nallow_private_destinations = true\n[control]\nlisten = \"127.0.0.1:{}\"\n[[tunnels]]\nname = \"eu\"\nlinks = 2\n{profiles}\n[tunnels.origin]\nname = \"fi\"\ncredential = \"{credential}\"\npin = \"{}\"\n",
        origin_dir.path().display(),
        free_port().unwrap(),
        cert.pin
    );
    let origin = Node::start(NodeConfig::from_toml(&origin_text).unwrap())
        .await
        .unwrap();

    // 2 profiles × 1 address × 2 links.
    wait_for(async || relay.node.tunnel("eu").await.unwrap()["links"] == 4).await;
    let status = relay.node.tunnel("eu").await.unwrap();
    assert_eq!(status["state"], "Connections: 4");
    assert_eq!(
        status["origins"]["fi"]["links_per_profile"],
        serde_json::json!({"0": 2, "1": 2})
    );

    let client = SingBox::client(vless_outbound(relay.addr(), ALICE_UUID))
        .await
        .unwrap();
    let proxy = client.proxy_addr().unwrap();
    relay.http.download_via_socks(proxy, 4 << 20).await.unwrap();
    relay.http.upload_via_socks(proxy, 1 << 20).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (up, down) = relay.alice();
    assert!((4 << 20..(4 << 20) + 4096).contains(&down), "down {down}");
    assert!((1 << 20..(1 << 20) + 4096).contains(&up), "up {up}");
    // Counted once: the origin charges nobody.
    assert!(origin.shared().accounting.users().is_empty());
    let payload = relay.node.tunnel("eu").await.unwrap()["payload_bytes"]
        .as_u64()
        .unwrap();
    assert!(payload >= (5 << 20), "tunnel payload {payload}");
    // UDP crosses the tunnel too (sing-box sends it as XUDP to the relay).
    relay.udp.check_via_socks(proxy, 20, 1200).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (up2, down2) = relay.alice();
    assert!(
        up2 - up >= 20 * 1200 && down2 - down >= 20 * 1200,
        "UDP counted on alice"
    );
    assert!(origin.shared().accounting.users().is_empty());
    let o = origin.tunnel("eu").await.unwrap();
    assert_eq!(o["role"], "origin");
    assert_eq!(o["links"], 4);

    // Reset: the relay drops the links, the origin dials again at once.
    assert!(relay.node.reset_tunnel("eu").await);
    wait_for(async || relay.node.tunnel("eu").await.unwrap()["links"] == 4).await;
    relay.http.download_via_socks(proxy, 100_000).await.unwrap();

    // The origin is removed from the tunnel: its links drop within a second.
    let mut c = relay.node.config().await;
    c.tunnels[0].relay.as_mut().unwrap().origins.clear();
    relay.node.apply(c).await.unwrap();
    tokio::time::timeout(Duration::from_secs(1), async {
        while relay.node.tunnel("eu").await.unwrap()["links"] != 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("links dropped within a second");
    assert_eq!(
        relay.node.tunnel("eu").await.unwrap()["state"],
        "No connections"
    );
    assert!(
        relay.http.download_via_socks(proxy, 1000).await.is_err(),
        "nothing carries now"
    );
}

#[tokio::test]
async fn direct_mode_the_relay_dials_the_origin() {
    let cert = issue("eu").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (cert_path, key_path) = (dir.path().join("t.crt"), dir.path().join("t.key"));
    std::fs::write(&cert_path, &cert.cert_pem).unwrap();
    std::fs::write(&key_path, &cert.key_pem).unwrap();
    let port = free_port().unwrap();
    let credential = origin_credential(&SECRET, "eu", "fi").to_hex();
    let head = format!(
        "[[tunnels]]\nname = \"eu\"\nmode = \"direct\"\nlinks = 2\n[[tunnels.profiles]]\nport = {port}\n"
    );
    let relay_tunnel = format!(
        "{head}[tunnels.relay]\npin = \"{}\"\n[[tunnels.relay.origins]]\nname = \"fi\"\ncredential = \"{credential}\"\nhost = \"127.0.0.1\"\n",
        cert.pin
    );
    let origin_dir = tempfile::tempdir().unwrap();
    let origin_text = format!(
        "[node]\nstate_dir = \"{}\"\nallow_private_destinations = true\n[control]\nlisten = \"127.0.0.1:{}\"\n{head}[tunnels.origin]\nname = \"fi\"\ncredential = \"{credential}\"\nlisten = \"127.0.0.1\"\ncert = \"{}\"\nkey = \"{}\"\n",
        origin_dir.path().display(),
        free_port().unwrap(),
        cert_path.display(),
        key_path.display()
    );
    // The origin listens first; the relay dials it.
    let origin = Node::start(NodeConfig::from_toml(&origin_text).unwrap())
        .await
        .unwrap();
    let relay = start_with("protocol = \"vless\"", &relay_tunnel).await;
    wait_for(async || relay.node.tunnel("eu").await.unwrap()["links"] == 2).await;
    let status = relay.node.tunnel("eu").await.unwrap();
    assert_eq!(status["dialing"]["fi"][0]["connected"], 2, "{status}");
    let client = SingBox::client(vless_outbound(relay.addr(), ALICE_UUID))
        .await
        .unwrap();
    let proxy = client.proxy_addr().unwrap();
    relay.http.download_via_socks(proxy, 1 << 20).await.unwrap();
    relay.udp.check_via_socks(proxy, 5, 500).await.unwrap();
    assert!(origin.shared().accounting.users().is_empty());
    assert_eq!(origin.tunnel("eu").await.unwrap()["links"], 2);
}
