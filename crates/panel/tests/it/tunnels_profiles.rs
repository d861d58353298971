//! Links per profile and a direct-mode origin's several addresses, made through the
//! panel's API, on real nodes joined to one panel on 127.0.0.1 (a relay and one
//! origin), with a real sing-box client carrying a user's connections through the
//! relay's VLESS inbound into the tunnel.
//!
//! - A tunnel whose profiles have 6 and 2 links gets exactly those links up, per
//!   profile, and 16 connections held by a user land 12 and 4 on them: a profile's
//!   links are its weight (`docs/tunnel.md`, "Profiles").
//! - A direct-mode origin listed at two addresses, the first closed: the relay dials
//!   both (hot standby), the closed one waits in back-off with its error, and the
//!   user's traffic goes through the other.

use crate::live;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchyard_node::channel::EnrolledNode;
use switchyard_testkit::{SingBox, free_port};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The half of tunnel `name` on `node`, as it reports it (null without one).
async fn half(node: &EnrolledNode, name: &str) -> Value {
    node.node().tunnel(name).await.unwrap_or(Value::Null)
}

/// Waits until `f` holds of the half of `name` on `node`.
async fn wait_half(node: &EnrolledNode, name: &str, what: &str, f: impl Fn(&Value) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let h = half(node, name).await;
        if f(&h) {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {h}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// An echo connection through the client's SOCKS inbound, checked with a round trip.
async fn echo(proxy: SocketAddr, echo: SocketAddr, what: &str) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let attempt = async {
            let mut s = switchyard_testkit::socks5::connect(proxy, echo).await?;
            s.write_all(b"ping\n").await?;
            let mut back = [0u8; 5];
            tokio::time::timeout(Duration::from_secs(5), s.read_exact(&mut back))
                .await
                .map_err(|_| anyhow::anyhow!("no echo"))??;
            anyhow::ensure!(&back == b"ping\n", "echoed {back:?}");
            anyhow::Ok(s)
        };
        match attempt.await {
            Ok(s) => return s,
            Err(e) => assert!(Instant::now() < deadline, "{what}: {e:#}"),
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// A panel, a relay and an origin (both at 127.0.0.1, private destinations allowed),
/// a VLESS inbound on the relay, a user, both nodes joined; a sing-box client with
/// one SOCKS inbound into the user's relay entry alone (no URL test: nothing else
/// crosses the tunnel), and the API token.
struct World {
    _dir: tempfile::TempDir,
    panel: switchyard_panel::Panel,
    http: SocketAddr,
    auth: String,
    relay: i64,
    origin: i64,
    nodes: Vec<EnrolledNode>,
    client: SingBox,
    proxy: SocketAddr,
}

async fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let (panel, http) = live::panel(dir.path()).await;
    let service = panel.state.service().clone();
    let cluster = panel.state.store().create_cluster("c", live::now()).await;
    let cluster = cluster.unwrap().id;
    let relay = live::server(&panel, cluster, "relay").await;
    let origin = live::server(&panel, cluster, "origin").await;
    service
        .create_inbound(
            &live::vless(relay, "Relay", free_port().unwrap(), true),
            live::now(),
        )
        .await
        .unwrap();
    let user = service
        .create_user(&live::user("alice"), live::now())
        .await
        .unwrap();
    let nodes = live::join_all(&panel, dir.path(), &[relay, origin]).await;
    let auth = live::api_token(http, &dir.path().join("panel")).await;
    let (_, config) = live::http(
        http,
        "GET",
        &format!("{}?format=sing-box", user.subscription_path),
        "",
        None,
    )
    .await;
    let out = config["outbounds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["tag"] == "Relay")
        .unwrap_or_else(|| panic!("no Relay outbound in {config}"))
        .clone();
    let client = SingBox::start(json!({
        "log": {"level": "warn"},
        "inbounds": [{"type": "socks", "tag": "in", "listen": "127.0.0.1",
                      "listen_port": free_port().unwrap()}],
        "outbounds": [out],
        "route": {"final": "Relay"},
    }))
    .await
    .unwrap();
    let proxy = client.inbound_addr("in").unwrap();
    World {
        _dir: dir,
        panel,
        http,
        auth,
        relay,
        origin,
        nodes,
        client,
        proxy,
    }
}

impl World {
    async fn shutdown(self) {
        drop(self.client);
        for n in self.nodes {
            n.shutdown().await;
        }
        self.panel.shutdown().await;
    }
}

/// Per profile index, a count from a status map (`{"0": 6, "1": 2}`).
fn per_profile(v: &Value) -> Vec<(String, u64)> {
    v.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, n)| (k.clone(), n.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profiles_with_six_and_two_links_carry_three_times_the_streams() {
    let w = world().await;
    let echo_addr = live::echo_server().await;
    let (p0, p1) = (free_port().unwrap(), free_port().unwrap());
    let mut input = json!({
        "name": "weights", "relay_server_id": w.relay, "origin_server_ids": [w.origin],
        "profiles": [
            {"port": p0, "security": "tls", "links": 6},
            {"port": p1, "security": "tls", "links": 0},
        ],
    });
    // A profile's links are checked, and the error names the profile's field.
    let (status, body) = live::http(w.http, "POST", "/api/v1/tunnels", &w.auth, Some(&input)).await;
    assert_eq!(
        (status, &body["errors"][0]["field"]),
        (422, &json!("profiles[1].links")),
        "{body}"
    );
    input["profiles"][1]["links"] = json!(2);
    let (status, body) = live::http(w.http, "POST", "/api/v1/tunnels", &w.auth, Some(&input)).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        (&body["profiles"][0]["links"], &body["profiles"][1]["links"]),
        (&json!(6), &json!(2))
    );
    let id = body["id"].as_i64().unwrap();
    let origin_name = format!("server-{}", w.origin);

    // The relay has exactly 6 links of the origin on profile 0 and 2 on profile 1;
    // the origin wants and has as many at each profile's address.
    let by_profile = [("0".to_owned(), 6), ("1".to_owned(), 2)];
    wait_half(&w.nodes[0], "weights", "6 + 2 links on the relay", |h| {
        per_profile(&h["origins"][&origin_name]["links_per_profile"]) == by_profile
    })
    .await;
    wait_half(
        &w.nodes[1],
        "weights",
        "the origin's links per address",
        |h| {
            let counts = |key: &str| -> Vec<u64> {
                h["addresses"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|x| x[key].as_u64()).collect())
                    .unwrap_or_default()
            };
            counts("wanted") == [6, 2] && counts("connected") == [6, 2]
        },
    )
    .await;
    // The panel's live status shows the same.
    let (status, live) = live::http(
        w.http,
        "GET",
        &format!("/api/v1/tunnels/{id}/status"),
        &w.auth,
        None,
    )
    .await;
    assert_eq!(
        (status, &live["state"]),
        (200, &json!("Connections: 8")),
        "{live}"
    );
    assert_eq!(
        per_profile(&live["relay"]["origins"][&origin_name]["links_per_profile"]),
        by_profile,
        "{live}"
    );

    // 16 connections, one after another: each takes the least loaded link, so every
    // one of the 8 links carries 2, and the profiles 12 and 4: three times as many.
    let mut held = Vec::new();
    for i in 0..16 {
        held.push(echo(w.proxy, echo_addr, &format!("connection {i}")).await);
    }
    wait_half(
        &w.nodes[0],
        "weights",
        "the streams follow the links",
        |h| {
            per_profile(&h["origins"][&origin_name]["streams_per_profile"])
                == [("0".to_owned(), 12), ("1".to_owned(), 4)]
        },
    )
    .await;
    drop(held);

    // A client that sets one value for the whole tunnel (as before links were per
    // profile) still can: profiles without their own links take it.
    let change = json!({
        "name": "weights", "relay_server_id": w.relay, "origin_server_ids": [w.origin],
        "links": 3,
        "profiles": [{"port": p0, "security": "tls"}, {"port": p1, "security": "tls", "links": 1}],
    });
    let (status, body) = live::http(
        w.http,
        "PUT",
        &format!("/api/v1/tunnels/{id}"),
        &w.auth,
        Some(&change),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (&body["profiles"][0]["links"], &body["profiles"][1]["links"]),
        (&json!(3), &json!(1))
    );
    wait_half(
        &w.nodes[0],
        "weights",
        "3 + 1 links after the change",
        |h| {
            per_profile(&h["origins"][&origin_name]["links_per_profile"])
                == [("0".to_owned(), 3), ("1".to_owned(), 1)]
        },
    )
    .await;
    w.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_origin_is_dialed_at_every_address_and_a_closed_one_costs_no_user() {
    let w = world().await;
    let echo_addr = live::echo_server().await;
    let port = free_port().unwrap();
    // The origin's node listens on 127.0.0.1 alone (its server's address is a
    // loopback IP), so 127.0.0.2 at the profile's port is closed.
    let input = json!({
        "name": "standby", "relay_server_id": w.relay, "origin_server_ids": [w.origin],
        "mode": "direct",
        "profiles": [{"port": port, "security": "tls", "links": 2}],
        "origin_addresses": [{"server_id": w.origin, "addresses": ["127.0.0.2", "127.0.0.1"]}],
    });
    let (status, body) = live::http(w.http, "POST", "/api/v1/tunnels", &w.auth, Some(&input)).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        body["origins"][0]["addresses"],
        json!(["127.0.0.2", "127.0.0.1"]),
        "{body}"
    );
    let id = body["id"].as_i64().unwrap();
    let origin_name = format!("server-{}", w.origin);
    let closed = format!("127.0.0.2:{port}");
    let open = format!("127.0.0.1:{port}");

    // The relay dials both addresses (one link each): the closed one fails and waits,
    // the other has its link.
    wait_half(
        &w.nodes[0],
        "standby",
        "both addresses dialed, one link up",
        |h| {
            let dialing = h["dialing"][&origin_name]
                .as_array()
                .cloned()
                .unwrap_or_default();
            // Targets read `tls://host:port`.
            let at = |addr: &str| {
                dialing
                    .iter()
                    .find(|a| {
                        a["target"]
                            .as_str()
                            .is_some_and(|t| t.ends_with(&format!("//{addr}")))
                    })
                    .cloned()
            };
            let (Some(c), Some(o)) = (at(&closed), at(&open)) else {
                return false;
            };
            h["links"] == 1
                && c["wanted"] == 1
                && c["connected"] == 0
                && c["failures"].as_u64().is_some_and(|n| n > 0)
                && c["last_error"].as_str().is_some_and(|e| !e.is_empty())
                && o["connected"] == 1
        },
    )
    .await;

    // A user's connection goes through the address that works.
    let mut s = echo(w.proxy, echo_addr, "through the open address").await;
    wait_half(
        &w.nodes[0],
        "standby",
        "the user's stream on the origin",
        |h| h["origins"][&origin_name]["open_streams"] == 1,
    )
    .await;
    s.write_all(b"again\n").await.unwrap();
    let mut back = [0u8; 6];
    s.read_exact(&mut back).await.unwrap();
    assert_eq!(&back, b"again\n");
    let (status, live) = live::http(
        w.http,
        "GET",
        &format!("/api/v1/tunnels/{id}/status"),
        &w.auth,
        None,
    )
    .await;
    assert_eq!(
        (status, &live["state"]),
        (200, &json!("Connections: 1")),
        "{live}"
    );
    drop(s);
    w.shutdown().await;
}
