//! A tunnel made through the panel's API, on three real nodes joined to one panel on
//! 127.0.0.1 (a relay and two origins): the panel renders each node's half (derived
//! credentials, its own certificate, the pins), the links come up, a real sing-box
//! client's download goes user → relay → tunnel → origin → local target, and changes
//! made in the API (Reset, an origin removed, the tunnel disabled, deleted) reach the
//! nodes live; the state the panel reports follows the nodes ("Connections: 4", "No
//! connections" once the origins stop, "Relay unreachable" once the relay stops). The
//! tunnel's one profile says no security, so it is REALITY (the default of a new
//! tunnel's first profile): every link here runs over REALITY. Nothing probes the
//! relay's tunnel port, so no node ever connects to the default target.

use crate::live;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchyard_node::channel::EnrolledNode;
use switchyard_node::config::TunnelTransport;
use switchyard_proto::reality::{PublicKey, ShortId};
use switchyard_testkit::{HttpTarget, SingBox, free_port};
use switchyard_tunnel::credentials::Credential;
use switchyard_tunnel::half::{DEFAULT_WINDOW, OriginHalf, OriginSpec, Profile};
use switchyard_tunnel::link::transport::{RealityLink, Transport};

const MIB: u64 = 1 << 20;

/// An echo connection through the client, checked with a round trip.
struct Echo {
    stream: tokio::net::TcpStream,
    round: u32,
}

impl Echo {
    async fn open(proxy: SocketAddr, echo: SocketAddr) -> Self {
        let stream = switchyard_testkit::socks5::connect(proxy, echo)
            .await
            .unwrap();
        Self { stream, round: 0 }
    }

    async fn check(&mut self, what: &str) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        self.round += 1;
        let line = format!("direct {}\n", self.round);
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
}

/// The links the tunnel `name` has up on `node` (0 when it has no half).
async fn links(node: &EnrolledNode, name: &str) -> u64 {
    node.node()
        .tunnel(name)
        .await
        .and_then(|s| s["links"].as_u64())
        .unwrap_or(0)
}

async fn wait_links(node: &EnrolledNode, name: &str, want: u64, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = links(node, name).await;
        if now == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: {now} links, not {want}: {:?}",
            node.node().tunnel(name).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn download(target: &HttpTarget, proxy: SocketAddr, log: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match target.download_via_socks(proxy, 2 * MIB).await {
            Ok(()) => return,
            Err(e) if Instant::now() > deadline => panic!("download: {e:#}\n{}", log()),
            Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tunnel_made_in_the_api_carries_a_real_client_s_traffic() {
    let target = HttpTarget::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (panel, http) = live::panel(dir.path()).await;
    let service = panel.state.service().clone();
    let store = panel.state.store().clone();
    let cluster = store.create_cluster("c", live::now()).await.unwrap().id;
    // A hook for the tunnel's changes of state, which the webhook observer finds by
    // asking the relay as the dashboard does.
    let hook = store
        .create_webhook(
            &switchyard_panel::model::WebhookInput {
                url: "http://127.0.0.1:9/hook".into(),
                events: vec!["tunnel.changed".into()],
                enabled: true,
                allow_private: true,
            },
            "a secret of sixteen",
            0,
        )
        .await
        .unwrap()
        .id;
    let watch = || {
        let store = store.clone();
        let state = panel.state.clone();
        async move {
            switchyard_panel::webhooks::watch_tunnels(store.as_ref(), state.nodes(), live::now())
                .await
                .unwrap()
        }
    };
    let mut servers = Vec::new();
    for name in ["relay", "origin-a", "origin-b"] {
        servers.push(live::server(&panel, cluster, name).await);
    }
    let (relay, a, b) = (servers[0], servers[1], servers[2]);
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
    let mut nodes = live::join_all(&panel, dir.path(), &servers).await;
    let auth = live::api_token(http, &dir.path().join("panel")).await;

    // A local echo server: a connection through the tunnel that must survive the
    // live changes below.
    let echo_addr = live::echo_server().await;

    // A real client, through the relay's inbound. Once the relay has its one tunnel,
    // that is its final outbound, so the bytes cross the tunnel.
    let (_, mut config) = live::http(
        http,
        "GET",
        &format!("{}?format=sing-box", user.subscription_path),
        "",
        None,
    )
    .await;
    for o in config["outbounds"].as_array_mut().unwrap() {
        if o["type"] == "urltest" {
            o["url"] = json!(format!("http://{}/bytes/0", target.addr()));
        }
    }
    config["route"]["final"] = json!("Relay");
    config["inbounds"][0]["listen_port"] = json!(free_port().unwrap());
    let client = SingBox::start(config).await.unwrap();
    let proxy = client.proxy_addr().unwrap();
    // A connection held through the relay before it has any tunnel: it goes direct,
    // and must survive the relay's final outbound switching to the tunnel, and every
    // change of the tunnel after that (a user's connection that is not in it).
    let deadline = Instant::now() + Duration::from_secs(20);
    while let Err(e) = target.download_via_socks(proxy, 1024).await {
        assert!(
            Instant::now() < deadline,
            "the relay serves its inbound: {e:#}\n{}",
            client.log_tail()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let mut direct = Echo::open(proxy, echo_addr).await;
    direct.check("direct, before the tunnel").await;

    // The operator fills in a name, the relay, an origin and a port: nothing else.
    let port = free_port().unwrap();
    let mut input = json!({
        "name": "exit", "relay_server_id": relay, "origin_server_ids": [a],
        "links": 2, "profiles": [{"port": port}],
    });
    let (status, tunnel) = live::http(http, "POST", "/api/v1/tunnels", &auth, Some(&input)).await;
    assert_eq!(status, 201, "{tunnel}");
    let id = tunnel["id"].as_i64().unwrap();
    let tunnel_path = format!("/api/v1/tunnels/{id}");
    wait_links(&nodes[0], "exit", 2, "the relay").await;
    wait_links(&nodes[1], "exit", 2, "origin a").await;
    direct
        .check("direct, after the relay's first tunnel was created")
        .await;
    // The links run over REALITY: both halves run the same REALITY profile with the
    // tunnel's public key, and only the listening relay holds the private key.
    assert_eq!(tunnel["profiles"][0]["security"], "reality", "{tunnel}");
    let relay_half = nodes[0].node().config().await.tunnels[0].clone();
    let origin_half = nodes[1].node().config().await.tunnels[0].clone();
    match &relay_half.profiles[0].transport {
        TunnelTransport::Reality {
            public_key, dest, ..
        } => assert_eq!(
            (public_key.as_str(), dest.as_str()),
            (
                tunnel["reality_public_key"].as_str().unwrap(),
                "www.microsoft.com:443"
            )
        ),
        other => panic!("the relay's profile is {other:?}"),
    }
    assert_eq!(
        origin_half.profiles[0].transport,
        relay_half.profiles[0].transport
    );
    assert!(relay_half.relay.unwrap().reality_private_key.is_some());
    assert!(origin_half.origin.unwrap().reality_private_key.is_none());
    assert_eq!(
        nodes[0].node().tunnel("exit").await.unwrap()["origins"][format!("server-{a}")]["open_streams"],
        0,
        "the direct connection is not in the tunnel"
    );

    download(&target, proxy, || client.log_tail()).await;
    let mut held = switchyard_testkit::socks5::connect(proxy, echo_addr)
        .await
        .unwrap();
    let mut round = 0u32;
    let mut still_up = async |what: &str| {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        round += 1;
        let line = format!("round {round}\n");
        held.write_all(line.as_bytes())
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let mut back = vec![0u8; line.len()];
        tokio::time::timeout(Duration::from_secs(5), held.read_exact(&mut back))
            .await
            .unwrap_or_else(|_| panic!("{what}: no echo"))
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(back, line.as_bytes(), "{what}");
    };
    still_up("through the tunnel").await;

    // An origin added: live; the connection up stays up (adding moves nobody).
    input["origin_server_ids"] = json!([a, b]);
    let (status, body) = live::http(http, "PUT", &tunnel_path, &auth, Some(&input)).await;
    assert_eq!(status, 200, "{body}");
    wait_links(&nodes[0], "exit", 4, "the relay, two origins").await;
    wait_links(&nodes[2], "exit", 2, "origin b").await;
    still_up("after an origin was added").await;
    direct.check("direct, after an origin was added").await;
    // Adding an origin moves nobody: alice's new connections still leave from a.
    let streams = |server: i64| {
        let relay = nodes[0].node().clone();
        async move {
            relay.tunnel("exit").await.unwrap()["origins"][format!("server-{server}")]["open_streams"]
                .as_u64()
                .unwrap_or(0)
        }
    };
    let (on_a, on_b) = (streams(a).await, streams(b).await);
    assert_eq!((on_a, on_b), (1, 0), "the held connection is on origin a");
    let mut second = switchyard_testkit::socks5::connect(proxy, echo_addr)
        .await
        .unwrap();
    {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        second.write_all(b"x").await.unwrap();
        let mut one = [0u8; 1];
        second.read_exact(&mut one).await.unwrap();
    }
    assert_eq!(
        (streams(a).await, streams(b).await),
        (2, 0),
        "a new connection of alice's went to her origin"
    );
    drop(second);

    // The panel asks the nodes: the state, and every node's half.
    let status_path = format!("/api/v1/tunnels/{id}/status");
    let (status, live) = live::http(http, "GET", &status_path, &auth, None).await;
    assert_eq!(status, 200, "{live}");
    assert_eq!(
        (live["state"].as_str(), live["links"].as_u64()),
        (Some("Connections: 4"), Some(4)),
        "{live}"
    );
    assert_eq!(live["relay"]["role"], "relay", "{live}");
    for (o, server) in live["origins"].as_array().unwrap().iter().zip([a, b]) {
        assert_eq!(o["server_id"], server);
        assert_eq!(o["half"]["role"], "origin", "{o}");
        assert_eq!(o["half"]["links"], 2, "{o}");
        assert_eq!(o["error"], Value::Null);
    }
    // The panel's own observer looks every 30 s too: whoever looks first tells.
    watch().await;
    let (_, list) = live::http(http, "GET", "/api/v1/tunnels/status", &auth, None).await;
    assert_eq!(
        list,
        json!([{"id": id, "state": "Connections: 4", "links": 4, "error": null}])
    );

    // Re-issue the certificate: both sides take it (the origins accept both pins
    // while it rolls out) and no link drops meanwhile; once every node runs the new
    // pin, the overlap ends: the previous pin is dropped everywhere.
    let (status, re) = live::http(
        http,
        "POST",
        &format!("{tunnel_path}/certificate"),
        &auth,
        None,
    )
    .await;
    assert_eq!(status, 200, "{re}");
    assert!(re["previous_pin"].is_string(), "{re}");
    let pins = json!([re["certificate_pin"]]);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let up = links(&nodes[0], "exit").await;
        assert_eq!(up, 4, "a link dropped during the re-issue");
        let done = async |n: &EnrolledNode| {
            let config = n.node().config().await;
            let origin = config.tunnels[0].origin.as_ref().unwrap();
            json!(origin.all_pins()) == pins
        };
        if done(&nodes[1]).await && done(&nodes[2]).await {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the origins run the new pin alone"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (_, t) = live::http(http, "GET", &tunnel_path, &auth, None).await;
    assert_eq!(
        (&t["certificate_pin"], &t["previous_pin"]),
        (&re["certificate_pin"], &Value::Null),
        "the overlap is over"
    );
    for _ in 0..50 {
        assert_eq!(
            links(&nodes[0], "exit").await,
            4,
            "a link dropped after the re-issue"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    still_up("after the certificate was re-issued").await;
    direct
        .check("direct, after the certificate was re-issued")
        .await;

    // Rotate the credentials: every origin gets a new one, the relay accepts the
    // previous and the new until both origins run the new one; no link drops
    // meanwhile; then the previous credential opens nothing.
    let own = async |n: &EnrolledNode| {
        let config = n.node().config().await;
        let o = config.tunnels[0].origin.clone().unwrap();
        (
            o.credential.expose().to_owned(),
            o.previous_credential.is_some(),
        )
    };
    let (old_a, _) = own(&nodes[1]).await;
    let (old_b, _) = own(&nodes[2]).await;
    let (status, rot) = live::http(
        http,
        "POST",
        &format!("{tunnel_path}/rotate-credentials"),
        &auth,
        None,
    )
    .await;
    assert_eq!(status, 200, "{rot}");
    assert_eq!(
        (&rot["credential_epoch"], &rot["previous_credential_epoch"]),
        (&json!(1), &json!(0)),
        "{rot}"
    );
    assert!(
        !rot.to_string().contains(&old_a),
        "no credential in the answer"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        assert_eq!(
            links(&nodes[0], "exit").await,
            4,
            "a link dropped during the rotation"
        );
        let (now_a, _) = own(&nodes[1]).await;
        let (now_b, _) = own(&nodes[2]).await;
        let relay_config = nodes[0].node().config().await;
        let relay_half = relay_config.tunnels[0].relay.as_ref().unwrap();
        let overlap = relay_half
            .origins
            .iter()
            .any(|o| o.previous_credential.is_some());
        if now_a != old_a && now_b != old_b && !overlap {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the origins run the new credentials and the relay only those"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (_, t) = live::http(http, "GET", &tunnel_path, &auth, None).await;
    assert_eq!(
        (&t["credential_epoch"], &t["previous_credential_epoch"]),
        (&json!(1), &Value::Null),
        "the overlap is over"
    );
    for _ in 0..50 {
        assert_eq!(
            links(&nodes[0], "exit").await,
            4,
            "a link dropped after the rotation"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    still_up("after the credentials were rotated").await;
    direct
        .check("direct, after the credentials were rotated")
        .await;
    // a's previous credential is refused now (the Reset below shows the new ones
    // bring every link back).
    let bad = async || {
        nodes[0].node().tunnel("exit").await.unwrap()["refusals_per_profile"]
            .as_array()
            .map_or(0, |r| {
                r.iter().filter_map(|p| p["bad_credential"].as_u64()).sum()
            })
    };
    let before = bad().await;
    // The thief knows the REALITY profile too (it is in every origin's config), so
    // it gets as far as the hello: a TLS hello would be spliced to the target.
    let reality = match &nodes[1].node().config().await.tunnels[0].profiles[0].transport {
        TunnelTransport::Reality {
            server_name,
            dest,
            public_key,
            short_id,
        } => Transport::Reality(RealityLink {
            server_name: server_name.clone(),
            public_key: PublicKey::parse(public_key).unwrap(),
            short_id: ShortId::parse(short_id).unwrap(),
            dest: dest.clone(),
            private_key: None,
        }),
        other => panic!("origin a's profile is {other:?}"),
    };
    let thief = OriginHalf::start(
        OriginSpec {
            tunnel: "exit".into(),
            origin: format!("server-{a}"),
            credential: Credential::from_hex(&old_a).unwrap(),
            pins: vec![re["certificate_pin"].as_str().unwrap().parse().unwrap()],
            profiles: vec![Profile {
                port,
                transport: reality.clone(),
                addresses: vec![format!("127.0.0.1:{port}")],
                links: None,
            }],
            links: 1,
            window: DEFAULT_WINDOW,
        },
        std::sync::Arc::new(|_, _| {}),
    );
    live::wait_until("the relay refuses a's previous credential", 20, || async {
        bad().await > before
    })
    .await;
    assert_eq!(thief.links(), 0, "the previous credential opens nothing");
    thief.stop().await;
    assert_eq!(links(&nodes[0], "exit").await, 4);
    drop(held);

    let carried = nodes[0].node().tunnel("exit").await.unwrap()["payload_bytes"]
        .as_u64()
        .unwrap();
    assert!(
        carried >= 2 * MIB,
        "the relay's tunnel carried {carried} bytes"
    );
    // Counted once, on the relay, on the user's account: the origins carry it as
    // tunnel traffic and charge no one.
    live::wait_until("the download is on alice's account", 20, || {
        let store = store.clone();
        async move {
            let u = store.user(user.id, live::now()).await.unwrap();
            u.used_down >= 2 * MIB
        }
    })
    .await;
    let u = store.user(user.id, live::now()).await.unwrap();
    assert!(
        u.used_up + u.used_down < 3 * MIB,
        "counted once: {} up, {} down",
        u.used_up,
        u.used_down
    );
    // The panel keeps what the relay reports, for the chart.
    live::wait_until("the usage chart shows the download", 20, || async {
        let (_, u) = live::http(http, "GET", &format!("{tunnel_path}/usage"), &auth, None).await;
        let bytes: u64 = u["points"]
            .as_array()
            .map_or(0, |p| p.iter().filter_map(|p| p["bytes"].as_u64()).sum());
        bytes >= 2 * MIB
    })
    .await;

    // Reset: every node rebuilds its half; the links drop and come back at once.
    let (status, outcome) = live::http(
        http,
        "POST",
        &format!("/api/v1/tunnels/{id}/reset"),
        &auth,
        None,
    )
    .await;
    assert_eq!(status, 200, "{outcome}");
    assert_eq!(
        outcome,
        json!([
            {"server_id": relay, "reset": true, "error": null},
            {"server_id": a, "reset": true, "error": null},
            {"server_id": b, "reset": true, "error": null},
        ])
    );
    if tokio::time::timeout(Duration::from_secs(10), async {
        while links(&nodes[0], "exit").await != 4 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .is_err()
    {
        panic!(
            "the links did not come back after the reset:\nrelay {:?}\norigin a {:?}\norigin b {:?}",
            nodes[0].node().tunnel("exit").await,
            nodes[1].node().tunnel("exit").await,
            nodes[2].node().tunnel("exit").await
        );
    }
    download(&target, proxy, || client.log_tail()).await;
    direct.check("direct, after a reset").await;

    // An origin removed in the API: its half goes, the relay keeps the other's links.
    let mut change = input.clone();
    change["origin_server_ids"] = json!([a]);
    let (status, body) = live::http(
        http,
        "PUT",
        &format!("/api/v1/tunnels/{id}"),
        &auth,
        Some(&change),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    wait_links(&nodes[0], "exit", 2, "the relay, one origin left").await;
    direct.check("direct, after an origin was removed").await;
    drop(direct);
    live::wait_until("origin b has no half", 20, || {
        let n = nodes[2].node().clone();
        async move { n.tunnel("exit").await.is_none() }
    })
    .await;
    download(&target, proxy, || client.log_tail()).await;

    // The last origin stops: the relay answers with no connections; the relay stops:
    // unreachable.
    let state = || async {
        let (_, v) = live::http(http, "GET", &status_path, &auth, None).await;
        v["state"].as_str().unwrap_or_default().to_owned()
    };
    let origin_b = nodes.pop().unwrap();
    let origin_a = nodes.pop().unwrap();
    origin_a.shutdown().await;
    live::wait_until("No connections", 30, || async {
        state().await == "No connections"
    })
    .await;
    watch().await;
    assert_eq!(watch().await, 0, "told once");
    let relay_node = nodes.pop().unwrap();
    relay_node.shutdown().await;
    live::wait_until("Relay unreachable", 30, || async {
        state().await == "Relay unreachable"
    })
    .await;
    watch().await;
    assert_eq!(watch().await, 0, "told once");
    let told: Vec<(String, String, String)> = store
        .deliveries(hook, 10)
        .await
        .unwrap()
        .iter()
        .rev()
        .map(|d| {
            let body: Value = serde_json::from_str(&d.body).unwrap();
            let data = &body["data"];
            (
                d.event.clone(),
                format!(
                    "{} → {}",
                    data["from"].as_str().unwrap(),
                    data["state"].as_str().unwrap()
                ),
                data["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    // Each change once, in order (the links may have come up after a first look).
    assert!(
        told.ends_with(&[
            (
                "tunnel.changed".into(),
                "connected → no_connections".into(),
                "exit".into()
            ),
            (
                "tunnel.changed".into(),
                "no_connections → unreachable".into(),
                "exit".into()
            ),
        ]),
        "{told:?}"
    );
    for pair in told.windows(2) {
        let to = pair[0].1.split(" → ").nth(1).unwrap();
        assert!(pair[1].1.starts_with(&format!("{to} → ")), "{told:?}");
    }
    let (_, v) = live::http(http, "GET", &status_path, &auth, None).await;
    assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{v}");
    assert_eq!(v["relay"], Value::Null);

    // Disabled: no node runs it; deleted: gone from the API.
    change["enabled"] = json!(false);
    let (status, body) = live::http(
        http,
        "PUT",
        &format!("/api/v1/tunnels/{id}"),
        &auth,
        Some(&change),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = live::http(
        http,
        "DELETE",
        &format!("/api/v1/tunnels/{id}"),
        &auth,
        None,
    )
    .await;
    assert_eq!(status, 204);
    let (status, list) = live::http(http, "GET", "/api/v1/tunnels", &auth, None).await;
    assert_eq!((status, list), (200, json!([])));
    drop(client);
    origin_b.shutdown().await;
    drop(panel);
}
