//! Who moves, and whose connections survive, when a tunnel made in the panel changes:
//! one panel, four real nodes on 127.0.0.1 (a relay and three origins), six users
//! each with their own SOCKS inbound in one real sing-box client, every user holding
//! an echo connection through the tunnel.
//!
//! - Users are pinned to origins by name: each lands on the origin rendezvous hashing
//!   of their node name over the connected origins picks (`docs/tunnel.md`).
//! - A second tunnel on the relay is created, changed in shape (links, window),
//!   disabled and deleted: the first tunnel's links and every user's connection
//!   through it stay up through each kind of change.
//! - A blocked profile (the fault injector in front of its port refuses and cuts)
//!   costs its links and moves no user; once unblocked its links come back.
//! - An origin removed: the connections of users on the others stay up; only its own
//!   users move, each to the origin the hashing picks among those left.
//! - Duplicate for another relay: the copy's links come up with its own credentials,
//!   and an origin's credential for the first tunnel opens nothing on the copy's relay.

use crate::live;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchyard_node::channel::EnrolledNode;
use switchyard_panel::render::node_user;
use switchyard_testkit::fault::{Fault, FaultProxy};
use switchyard_testkit::{HttpTarget, SingBox, free_port};
use switchyard_tunnel::credentials::Credential;
use switchyard_tunnel::half::{DEFAULT_WINDOW, OriginHalf, OriginSpec, Profile};
use switchyard_tunnel::link::transport::Transport;
use switchyard_tunnel::placement::rendezvous;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const USERS: usize = 6;

/// The half of tunnel `name` on `node`, as it reports it.
async fn half(node: &EnrolledNode, name: &str) -> Value {
    node.node().tunnel(name).await.unwrap_or(Value::Null)
}

async fn links(node: &EnrolledNode, name: &str) -> u64 {
    half(node, name).await["links"].as_u64().unwrap_or(0)
}

async fn wait_links(node: &EnrolledNode, name: &str, want: u64, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while links(node, name).await != want {
        assert!(
            Instant::now() < deadline,
            "{what}: not {want} links: {}",
            half(node, name).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The relay's open streams of tunnel `name`, per origin name.
async fn streams(relay: &EnrolledNode, name: &str) -> BTreeMap<String, u64> {
    let h = half(relay, name).await;
    h["origins"]
        .as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.clone(), v["open_streams"].as_u64().unwrap_or(0)))
                .filter(|(_, n)| *n > 0)
                .collect()
        })
        .unwrap_or_default()
}

/// How many of `users` each origin should carry: rendezvous over `connected`.
fn expected(users: &[String], connected: &[&str]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for u in users {
        *out.entry(rendezvous(u, connected).unwrap().to_owned())
            .or_insert(0) += 1;
    }
    out
}

async fn wait_streams(relay: &EnrolledNode, want: &BTreeMap<String, u64>, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = streams(relay, "exit").await;
        if now == *want {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {now:?}, not {want:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A user's echo connection through the client, checked with a round trip.
struct Held {
    stream: TcpStream,
    round: u32,
}

impl Held {
    async fn open(proxy: SocketAddr, echo: SocketAddr) -> Self {
        let stream = switchyard_testkit::socks5::connect(proxy, echo)
            .await
            .unwrap();
        let mut held = Self { stream, round: 0 };
        held.check("opened").await;
        held
    }

    async fn check(&mut self, what: &str) {
        self.round += 1;
        let line = format!("round {}\n", self.round);
        self.stream
            .write_all(line.as_bytes())
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let mut back = vec![0u8; line.len()];
        tokio::time::timeout(Duration::from_secs(5), self.stream.read_exact(&mut back))
            .await
            .unwrap_or_else(|_| panic!("{what}: no echo"))
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(back, line.as_bytes(), "{what}");
    }

    /// Whether the connection is closed (end of stream or an error) within 10 s.
    async fn closes(&mut self) -> bool {
        let _ = self.stream.write_all(b"x").await;
        let mut buf = [0u8; 64];
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.stream.read(&mut buf)).await {
                Err(_) => return false,
                Ok(Ok(0) | Err(_)) => return true,
                Ok(Ok(_)) => {}
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tunnel_changes_move_only_the_users_they_must() {
    let target = HttpTarget::start().await.unwrap();
    let (echo, side_echo) = (live::echo_server().await, live::echo_server().await);
    let dir = tempfile::tempdir().unwrap();
    let (panel, http) = live::panel(dir.path()).await;
    let service = panel.state.service().clone();
    let cluster = panel.state.store().create_cluster("c", live::now()).await;
    let cluster = cluster.unwrap().id;
    let mut servers = Vec::new();
    for name in ["relay", "origin-a", "origin-b", "origin-c"] {
        servers.push(live::server(&panel, cluster, name).await);
    }
    let (relay, a, b, c) = (servers[0], servers[1], servers[2], servers[3]);
    let origin = |id: i64| format!("server-{id}");
    service
        .create_inbound(
            &live::vless(relay, "Relay", free_port().unwrap(), true),
            live::now(),
        )
        .await
        .unwrap();
    let mut users = Vec::new();
    for i in 0..USERS {
        let u = service
            .create_user(&live::user(&format!("user-{i}")), live::now())
            .await
            .unwrap();
        users.push(u);
    }
    let names: Vec<String> = users.iter().map(|u| node_user(u.id)).collect();
    let nodes = live::join_all(&panel, dir.path(), &servers).await;
    let auth = live::api_token(http, &dir.path().join("panel")).await;

    // Tunnel "exit" to three origins, one link per profile; profile 0's links reach
    // the relay through the fault injector. Both profiles say TLS (pinned
    // certificate): this test keeps TLS links covered end to end, as tunnels_live
    // does REALITY's; the injector's cut hellos would otherwise be a REALITY
    // listener's to splice.
    let (port0, port1) = (free_port().unwrap(), free_port().unwrap());
    let fault = FaultProxy::start(SocketAddr::from(([127, 0, 0, 1], port0)))
        .await
        .unwrap();
    let exit = json!({
        "name": "exit", "relay_server_id": relay, "origin_server_ids": [a, b, c],
        "links": 1,
        "profiles": [
            {"port": port0, "security": "tls", "addresses": [fault.addr().to_string()]},
            {"port": port1, "security": "tls"},
        ],
        "rules": {"ports": [echo.port(), target.addr().port()]},
    });
    let (status, body) = live::http(http, "POST", "/api/v1/tunnels", &auth, Some(&exit)).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        (
            &body["profiles"][0]["security"],
            &body["profiles"][1]["security"]
        ),
        (&json!("tls"), &json!("tls"))
    );
    let exit_id = body["id"].as_i64().unwrap();
    let exit_pin = body["certificate_pin"].clone();
    let exit_path = format!("/api/v1/tunnels/{exit_id}");
    wait_links(&nodes[0], "exit", 6, "the relay: 3 origins × 2 profiles").await;

    // One client, one SOCKS inbound per user, each into that user's own outbound.
    let (mut inbounds, mut outbounds, mut rules) = (Vec::new(), Vec::new(), Vec::new());
    for (i, u) in users.iter().enumerate() {
        let (_, config) = live::http(
            http,
            "GET",
            &format!("{}?format=sing-box", u.subscription_path),
            "",
            None,
        )
        .await;
        let mut out = config["outbounds"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["tag"] == "Relay")
            .unwrap_or_else(|| panic!("no Relay outbound in {config}"))
            .clone();
        out["tag"] = json!(format!("out-{i}"));
        outbounds.push(out);
        inbounds.push(json!({
            "type": "socks", "tag": format!("in-{i}"),
            "listen": "127.0.0.1", "listen_port": free_port().unwrap(),
        }));
        rules.push(json!({"inbound": [format!("in-{i}")], "outbound": format!("out-{i}")}));
    }
    let client = SingBox::start(json!({
        "log": {"level": "warn"},
        "inbounds": inbounds,
        "outbounds": outbounds,
        "route": {"rules": rules, "final": "out-0"},
    }))
    .await
    .unwrap();
    let proxies: Vec<SocketAddr> = (0..USERS)
        .map(|i| client.inbound_addr(&format!("in-{i}")).unwrap())
        .collect();
    let download = async |proxy: SocketAddr| {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match target.download_via_socks(proxy, 1 << 20).await {
                Ok(()) => return,
                Err(e) if Instant::now() > deadline => {
                    panic!("download: {e:#}\n{}", client.log_tail())
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
            }
        }
    };
    download(proxies[0]).await;

    // Every user lands on the origin rendezvous hashing picks, and each origin has
    // users (six users over three origins, fixed names: exact).
    let all = [origin(a), origin(b), origin(c)];
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    let placed = expected(&names, &all);
    assert_eq!(placed.len(), 3, "every origin has a user: {placed:?}");
    let mut held = Vec::new();
    for p in &proxies {
        held.push(Held::open(*p, echo).await);
    }
    wait_streams(&nodes[0], &placed, "users pinned by name").await;
    let check_all = async |held: &mut Vec<Held>, what: &str| {
        for (i, h) in held.iter_mut().enumerate() {
            h.check(&format!("user {i}: {what}")).await;
        }
    };

    // A second tunnel on the relay: created, changed in shape, disabled, deleted. The
    // relay then has two tunnels and route rules choose; exit's links and every
    // user's connection through it stay up through each kind of change.
    let side_port = free_port().unwrap();
    let mut side = json!({
        "name": "side", "relay_server_id": relay, "origin_server_ids": [a],
        "links": 1, "profiles": [{"port": side_port}],
        "rules": {"ports": [side_echo.port()]},
    });
    let (status, body) = live::http(http, "POST", "/api/v1/tunnels", &auth, Some(&side)).await;
    assert_eq!(status, 201, "{body}");
    // It says no security: REALITY, beside exit's TLS profiles on the same relay.
    assert_eq!(body["profiles"][0]["security"], "reality", "{body}");
    let side_path = format!("/api/v1/tunnels/{}", body["id"]);
    wait_links(&nodes[0], "side", 1, "the side tunnel's relay").await;
    assert_eq!(links(&nodes[0], "exit").await, 6, "a link of exit dropped");
    check_all(&mut held, "after a second tunnel was created").await;
    let mut through_side = Held::open(proxies[0], side_echo).await;
    assert_eq!(
        half(&nodes[0], "side").await["origins"][origin(a)]["open_streams"],
        1,
        "the route rules send the side port into the side tunnel"
    );
    through_side.check("through the side tunnel").await;

    side["links"] = json!(2);
    side["window_mib"] = json!(4);
    let (status, body) = live::http(http, "PUT", &side_path, &auth, Some(&side)).await;
    assert_eq!(status, 200, "{body}");
    wait_links(&nodes[0], "side", 2, "the side tunnel, rebuilt").await;
    for n in [&nodes[0], &nodes[1]] {
        assert_eq!(half(n, "side").await["window_bytes"], 4 << 20);
        assert_eq!(half(n, "exit").await["window_bytes"], DEFAULT_WINDOW);
    }
    assert_eq!(links(&nodes[0], "exit").await, 6, "a link of exit dropped");
    check_all(&mut held, "after the other tunnel's shape changed").await;

    side["enabled"] = json!(false);
    let (status, body) = live::http(http, "PUT", &side_path, &auth, Some(&side)).await;
    assert_eq!(status, 200, "{body}");
    live::wait_until("the side tunnel is gone from the relay", 20, || async {
        half(&nodes[0], "side").await.is_null()
    })
    .await;
    check_all(&mut held, "after the other tunnel was disabled").await;
    let (status, _) = live::http(http, "DELETE", &side_path, &auth, None).await;
    assert_eq!(status, 204);
    check_all(&mut held, "after the other tunnel was deleted").await;
    assert_eq!(links(&nodes[0], "exit").await, 6, "a link of exit dropped");

    // Profile 0 blocked: its links drop (the connections on them with them), the
    // other profile carries everything, and every user's new connection goes to the
    // same origin as before.
    fault.set(Fault::Refuse);
    fault.cut();
    wait_links(&nodes[0], "exit", 3, "profile 0 blocked").await;
    // The panel's live status says why: every origin's address behind the fault
    // injector has no link, its last error and a next attempt (it backs off).
    let blocked = fault.addr().to_string();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, live) =
            live::http(http, "GET", &format!("{exit_path}/status"), &auth, None).await;
        assert_eq!(status, 200, "{live}");
        let shown: Vec<&Value> = live["origins"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|o| {
                o["half"]["addresses"]
                    .as_array()?
                    .iter()
                    .find(|a| a["target"].as_str().is_some_and(|t| t.contains(&blocked)))
            })
            .collect();
        let explained = shown.len() == 3
            && shown.iter().all(|a| {
                a["connected"] == 0
                    && a["failures"].as_u64().is_some_and(|n| n > 0)
                    && a["last_error"].as_str().is_some_and(|e| !e.is_empty())
                    && a["next_attempt_in_ms"].is_u64()
            });
        if explained {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the live status explains the blocked profile: {live}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(held);
    wait_streams(&nodes[0], &BTreeMap::new(), "the old connections closed").await;
    let mut held = Vec::new();
    for p in &proxies {
        held.push(Held::open(*p, echo).await);
    }
    wait_streams(&nodes[0], &placed, "no user moved for a blocked profile").await;
    download(proxies[1]).await;
    assert_eq!(links(&nodes[0], "exit").await, 3, "the block holds");
    fault.set(Fault::Pass);
    wait_links(&nodes[0], "exit", 6, "profile 0 unblocked").await;
    check_all(&mut held, "after profile 0 came back").await;

    // Origin c removed: the users on a and b keep their connections; c's users lose
    // theirs and move, each where the hashing puts them among a and b.
    let mut change = exit.clone();
    change["origin_server_ids"] = json!([a, b]);
    let (status, body) = live::http(http, "PUT", &exit_path, &auth, Some(&change)).await;
    assert_eq!(status, 200, "{body}");
    wait_links(&nodes[0], "exit", 4, "two origins left").await;
    let left = [origin(a), origin(b)];
    let left: Vec<&str> = left.iter().map(String::as_str).collect();
    for (i, h) in held.iter_mut().enumerate() {
        let on = rendezvous(&names[i], &all).unwrap();
        if on == origin(c) {
            assert!(
                h.closes().await,
                "user {i} on the removed origin kept a connection"
            );
        } else {
            h.check(&format!("user {i} on {on}, after origin c was removed"))
                .await;
        }
    }
    held.clear();
    wait_streams(&nodes[0], &BTreeMap::new(), "every connection closed").await;
    for p in &proxies {
        held.push(Held::open(*p, echo).await);
    }
    let moved = expected(&names, &left);
    wait_streams(&nodes[0], &moved, "only c's users moved").await;
    for (i, n) in names.iter().enumerate() {
        let before = rendezvous(n, &all).unwrap();
        if before != origin(c) {
            assert_eq!(rendezvous(n, &left), Some(before), "user {i} stays");
        }
    }
    drop(held);

    // Duplicate for server c as the relay: its own certificate and credentials; the
    // copy listens on other ports (every node here shares 127.0.0.1).
    let (status, copy) = live::http(
        http,
        "POST",
        &format!("{exit_path}/duplicate"),
        &auth,
        Some(&json!({"name": "exit-c", "relay_server_id": c})),
    )
    .await;
    assert_eq!(status, 201, "{copy}");
    assert_ne!(
        copy["certificate_pin"], exit_pin,
        "the copy has its own certificate"
    );
    let copy_port = free_port().unwrap();
    let mut copy_input = change.clone();
    copy_input["name"] = json!("exit-c");
    copy_input["relay_server_id"] = json!(c);
    copy_input["profiles"] = json!([{"port": copy_port}]);
    let (status, body) = live::http(
        http,
        "PUT",
        &format!("/api/v1/tunnels/{}", copy["id"]),
        &auth,
        Some(&copy_input),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    wait_links(&nodes[3], "exit-c", 2, "the copy's relay: a and b").await;
    assert_eq!(
        links(&nodes[0], "exit").await,
        4,
        "the first tunnel is untouched"
    );

    // a's credential for "exit", presented to the copy's relay (with the copy's tag
    // and pin, as a thief would): refused.
    let config = nodes[1].node().config().await;
    let stolen = config
        .tunnels
        .iter()
        .find(|t| t.name == "exit")
        .and_then(|t| t.origin.as_ref())
        .map(|o| Credential::from_hex(o.credential.expose()).unwrap())
        .unwrap();
    let refused = |h: &Value| -> u64 {
        h["refusals_per_profile"].as_array().map_or(0, |r| {
            r.iter().filter_map(|p| p["bad_credential"].as_u64()).sum()
        })
    };
    let before = refused(&half(&nodes[3], "exit-c").await);
    let thief = OriginHalf::start(
        OriginSpec {
            tunnel: "exit-c".into(),
            origin: origin(a),
            credential: stolen,
            pins: vec![copy["certificate_pin"].as_str().unwrap().parse().unwrap()],
            profiles: vec![Profile {
                port: copy_port,
                transport: Transport::Tls,
                addresses: vec![format!("127.0.0.1:{copy_port}")],
                links: None,
            }],
            links: 1,
            window: DEFAULT_WINDOW,
        },
        std::sync::Arc::new(|_, _| {}),
    );
    live::wait_until(
        "the copy's relay refuses the stolen credential",
        20,
        || async { refused(&half(&nodes[3], "exit-c").await) > before },
    )
    .await;
    assert_eq!(thief.links(), 0);
    // Only a's and b's own links: never a third, and both there (one of them may be
    // reconnecting at this instant on a loaded machine: a CI run once saw 1 here).
    assert!(
        links(&nodes[3], "exit-c").await <= 2,
        "the thief's link counted"
    );
    wait_links(&nodes[3], "exit-c", 2, "only a's and b's own links").await;
    thief.stop().await;

    drop(client);
    for n in nodes {
        n.shutdown().await;
    }
    drop(panel);
}
