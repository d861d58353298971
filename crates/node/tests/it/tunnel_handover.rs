//! A tunnel across an upgrade, in one process: each half's node hands its sockets to
//! a node started on them ([`Node::start_with`]), then releases (as the upgrade's old
//! process does, [`switchyard_node::handover`]). A slow download through the relay
//! and the origin goes on in the old nodes while new connections go through the new
//! ones: the relay's links say `GoAway`, so the origin dials the new relay at once;
//! the old origin's links say it, so the relay opens new streams on the new origin's.
//! And a connection to a relay whose origin has not connected yet (it just started,
//! or took over) waits a little for one: it is carried once the origin comes, and
//! fails, rather than hangs, when none does.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use switchyard_node::node::Start;
use switchyard_node::{Node, NodeConfig};
use switchyard_testkit::config::vless_outbound;
use switchyard_testkit::{SingBox, free_port};
use switchyard_tunnel::credentials::{TunnelSecret, origin_credential};
use switchyard_tunnel::link::cert::issue;

const SECRET: TunnelSecret = TunnelSecret([9; 32]);
const MIB: u64 = 1 << 20;

async fn wait_for(what: &str, mut f: impl AsyncFnMut() -> bool) {
    for _ in 0..400 {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{what}: not within 10 s");
}

/// The node that takes over from `old` (same config, its sockets), then `old`
/// released.
async fn take_over(old: &Arc<Node>) -> Arc<Node> {
    let sockets = old.handed_sockets().await;
    let config = old.config().await;
    let new = Node::start_with(
        config,
        Start {
            inherited: Some(sockets.into()),
        },
    )
    .await
    .unwrap();
    old.release().await;
    new.take_over().await.unwrap();
    new
}

/// A relay node (VLESS inbound, the tunnel "eu" to origin "fi", two links per
/// profile) and the config of its origin, not started.
struct Halves {
    relay: Fixture,
    origin_text: String,
    _dirs: [tempfile::TempDir; 2],
}

async fn halves() -> Halves {
    let cert = issue("eu").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (cert_path, key_path) = (dir.path().join("t.crt"), dir.path().join("t.key"));
    std::fs::write(&cert_path, &cert.cert_pem).unwrap();
    std::fs::write(&key_path, &cert.key_pem).unwrap();
    let port = free_port().unwrap();
    let credential = origin_credential(&SECRET, "eu", "fi").to_hex();
    let profiles =
        format!("[[tunnels.profiles]]\nport = {port}\naddresses = [\"127.0.0.1:{port}\"]\n");
    let relay_tunnel = format!(
        "[[tunnels]]\nname = \"eu\"\nlinks = 2\n{profiles}\n[tunnels.relay]\nlisten = \"127.0.0.1\"\ncert = \"{}\"\nkey = \"{}\"\n[[tunnels.relay.origins]]\nname = \"fi\"\ncredential = \"{credential}\"\n",
        cert_path.display(),
        key_path.display()
    );
    let relay = start_with("protocol = \"vless\"", &relay_tunnel).await;
    let origin_dir = tempfile::tempdir().unwrap();
    let origin_text = format!(
        "[node]\nstate_dir = \"{}\"\nallow_private_destinations = true\n[control]\nlisten = \"127.0.0.1:{}\"\n[[tunnels]]\nname = \"eu\"\nlinks = 2\n{profiles}\n[tunnels.origin]\nname = \"fi\"\ncredential = \"{credential}\"\npin = \"{}\"\n",
        origin_dir.path().display(),
        free_port().unwrap(),
        cert.pin
    );
    Halves {
        relay,
        origin_text,
        _dirs: [dir, origin_dir],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_waits_a_little_for_an_origin_and_fails_without_one() {
    let h = halves().await;
    let relay = &h.relay;
    let client = SingBox::client(vless_outbound(relay.addr(), ALICE_UUID))
        .await
        .unwrap();
    let proxy = client.proxy_addr().unwrap();
    // No origin at all: the connection fails (after the wait), nothing hangs.
    assert!(relay.http.download_via_socks(proxy, MIB).await.is_err());
    // A connection made while the origin is still dialing waits for it.
    let waiting = relay.http.download_via_socks_slowly(proxy, MIB);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "it waits for an origin");
    let origin = Node::start(NodeConfig::from_toml(&h.origin_text).unwrap())
        .await
        .unwrap();
    assert_eq!(
        waiting.await.unwrap().unwrap(),
        MIB,
        "carried once the origin came"
    );
    origin.shutdown().await;
    drop(client);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tunnel_carries_on_across_the_upgrade_of_its_relay_then_of_its_origin() {
    let h = halves().await;
    let relay = &h.relay;
    let origin_text = &h.origin_text;
    let origin = Node::start(NodeConfig::from_toml(origin_text).unwrap())
        .await
        .unwrap();
    wait_for("2 links", async || {
        relay.node.tunnel("eu").await.unwrap()["links"] == 2
    })
    .await;
    let client = SingBox::client(vless_outbound(relay.addr(), ALICE_UUID))
        .await
        .unwrap();
    let proxy = client.proxy_addr().unwrap();
    relay.http.download_via_socks(proxy, MIB).await.unwrap();

    // The relay is upgraded under a slow download.
    let first = relay.http.download_via_socks_slowly(proxy, 30 * MIB);
    wait_for("the download through the old relay", async || {
        relay.node.open_connections() == 1
    })
    .await;
    let relay2 = take_over(&relay.node).await;
    // The origin heard the old relay's GoAway and dialed the new one at once.
    wait_for("the new relay's links", async || {
        relay2.tunnel("eu").await.unwrap()["links"] == 2
    })
    .await;
    relay.http.download_via_socks(proxy, MIB).await.unwrap();
    assert!(!first.is_finished(), "the first download still runs");
    assert_eq!(relay.node.open_connections(), 1, "in the old relay");
    assert_eq!(first.await.unwrap().unwrap(), 30 * MIB);
    wait_for("the old relay drained", async || {
        relay.node.open_connections() == 0
    })
    .await;

    // Then the origin, under another slow download (through the new relay).
    let second = relay.http.download_via_socks_slowly(proxy, 30 * MIB);
    wait_for("the download through the old origin", async || {
        origin.open_connections() == 1
    })
    .await;
    let origin2 = take_over(&origin).await;
    wait_for("the new origin's links", async || {
        relay2.tunnel("eu").await.unwrap()["origins"]["fi"]["links_per_profile"]["0"] == 4
    })
    .await;
    // New streams go over the new origin's links: the old ones said GoAway.
    relay.http.download_via_socks(proxy, MIB).await.unwrap();
    let third = relay.http.download_via_socks_slowly(proxy, 4 * MIB);
    wait_for("a stream on the new origin", async || {
        origin2.open_connections() == 1
    })
    .await;
    assert_eq!(origin.open_connections(), 1, "only the first stream");
    assert_eq!(second.await.unwrap().unwrap(), 30 * MIB);
    assert_eq!(third.await.unwrap().unwrap(), 4 * MIB);
    wait_for("the old origin drained", async || {
        origin.open_connections() == 0
    })
    .await;
    drop(client);
}
