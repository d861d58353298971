//! A tunnel through fault-injecting proxies: a blocked profile costs bandwidth, not
//! the tunnel; its address waits in back-off (visible in status) and comes back.

use crate::common;

use std::time::Duration;

use common::*;
use switchyard_node::{Node, NodeConfig};
use switchyard_testkit::config::vless_outbound;
use switchyard_testkit::fault::{Fault, FaultProxy};
use switchyard_testkit::{SingBox, free_port, local};
use switchyard_tunnel::credentials::{TunnelSecret, origin_credential};
use switchyard_tunnel::link::cert::issue;

use crate::tunnel_support;
use tunnel_support::wait_links;

#[tokio::test]
async fn a_blocked_profile_costs_bandwidth_not_the_tunnel() {
    let cert = issue("eu").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (c, k) = (dir.path().join("t.crt"), dir.path().join("t.key"));
    std::fs::write(&c, &cert.cert_pem).unwrap();
    std::fs::write(&k, &cert.key_pem).unwrap();
    let (a, b) = (free_port().unwrap(), free_port().unwrap());
    let (proxy_a, proxy_b) = (
        FaultProxy::start(local(a)).await.unwrap(),
        FaultProxy::start(local(b)).await.unwrap(),
    );
    let cred = origin_credential(&TunnelSecret([4; 32]), "eu", "fi").to_hex();
    let relay_profiles = format!(
        "[[tunnels.profiles]]\nport = {a}\n[[tunnels.profiles]]\nport = {b}\ntransport = {{ type = \"ws\", path = \"/eu\" }}\n"
    );
    let origin_profiles = format!(
        "[[tunnels.profiles]]\nport = {a}\naddresses = [\"{}\"]\n[[tunnels.profiles]]\nport = {b}\ntransport = {{ type = \"ws\", path = \"/eu\" }}\naddresses = [\"{}\"]\n",
        proxy_a.addr(),
        proxy_b.addr()
    );
    let relay = start_with(
        "protocol = \"vless\"",
        &format!(
            "[[tunnels]]\nname = \"eu\"\nlinks = 2\n{relay_profiles}[tunnels.relay]\nlisten = \"127.0.0.1\"\ncert = \"{}\"\nkey = \"{}\"\n[[tunnels.relay.origins]]\nname = \"fi\"\ncredential = \"{cred}\"\n",
            c.display(),
            k.display()
        ),
    )
    .await;
    let origin_text = format!(
        "[node]\nstate_dir = \"{}\"\nallow_private_destinations = true\n[control]\nlisten = \"127.0.0.1:{}\"\n[[tunnels]]\nname = \"eu\"\nlinks = 2\n{origin_profiles}[tunnels.origin]\nname = \"fi\"\ncredential = \"{cred}\"\npin = \"{}\"\n",
        dir.path().join("origin").display(),
        free_port().unwrap(),
        cert.pin
    );
    let origin = Node::start(NodeConfig::from_toml(&origin_text).unwrap())
        .await
        .unwrap();
    wait_links(&relay.node, 4).await;
    let client = SingBox::client(vless_outbound(relay.addr(), ALICE_UUID))
        .await
        .unwrap();
    let proxy = client.proxy_addr().unwrap();
    relay.http.download_via_socks(proxy, 1 << 20).await.unwrap();

    // Profile A is blocked: its links are cut and new ones refused.
    proxy_a.set(Fault::Refuse);
    proxy_a.cut();
    wait_links(&relay.node, 2).await;
    let status = relay.node.tunnel("eu").await.unwrap();
    assert_eq!(
        status["origins"]["fi"]["links_per_profile"],
        serde_json::json!({"1": 2})
    );
    // Everything still flows, over profile B.
    relay.http.download_via_socks(proxy, 2 << 20).await.unwrap();
    // The origin shows A waiting in back-off with its error.
    let mut waiting = false;
    for _ in 0..100 {
        let o = origin.tunnel("eu").await.unwrap();
        let addr_a = &o["addresses"][0];
        if addr_a["failures"].as_u64().unwrap_or(0) > 0 && !addr_a["last_error"].is_null() {
            waiting = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(waiting, "{}", origin.tunnel("eu").await.unwrap());

    // The block is lifted; a reset makes the origin try again at once.
    proxy_a.set(Fault::Pass);
    assert!(origin.reset_tunnel("eu").await);
    wait_links(&relay.node, 4).await;
    relay.http.download_via_socks(proxy, 1 << 20).await.unwrap();
}
