//! A user's address limit: set and read through the API (bounded, the field named
//! when refused), enforced by the node the user connects to, with the real sing-box
//! client dialing from distinct 127.0.0.x source addresses; through a tunnel the limit
//! is the relay's business, and the origin never counts the relay's address.

use crate::common::Harness;
use crate::live;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::json;
use switchyard_node::channel::EnrolledNode;
use switchyard_panel::Panel;
use switchyard_panel::store::{UserInput, UserStore};
use switchyard_testkit::{SingBox, free_port};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[tokio::test]
async fn the_address_limit_round_trips_through_the_api_and_is_bounded() {
    let h = Harness::new().await;
    let t = h.token().await;
    let u = h
        .post("/api/v1/users")
        .bearer(&t)
        .json(&json!({"username": "alice", "address_limit": 3}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    assert_eq!(u["address_limit"], 3);
    let path = format!("/api/v1/users/{}", u["id"]);
    assert_eq!(
        h.get(&path).bearer(&t).send().await.ok(StatusCode::OK)["address_limit"],
        3
    );
    let listed = h
        .get("/api/v1/users")
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(listed["users"][0]["address_limit"], 3);
    // Left out of a PUT: no limit.
    let changed = h
        .put(&path)
        .bearer(&t)
        .json(&json!({"username": "alice"}))
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(changed["address_limit"], json!(null));
    let changed = h
        .put(&path)
        .bearer(&t)
        .json(&json!({"username": "alice", "address_limit": 1000}))
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(changed["address_limit"], 1000);
    for bad in [0, 1001] {
        h.put(&path)
            .bearer(&t)
            .json(&json!({"username": "alice", "address_limit": bad}))
            .send()
            .await
            .field_error(StatusCode::UNPROCESSABLE_ENTITY, "address_limit");
        h.post("/api/v1/users")
            .bearer(&t)
            .json(&json!({"username": "bob", "address_limit": bad}))
            .send()
            .await
            .field_error(StatusCode::UNPROCESSABLE_ENTITY, "address_limit");
    }
    let doc = h.get("/api/openapi.json").send().await.json();
    let field = &doc["components"]["schemas"]["UserInput"]["properties"]["address_limit"];
    assert_eq!(
        (&field["minimum"], &field["maximum"]),
        (&json!(1), &json!(1000)),
        "{field}"
    );
    assert!(
        doc["components"]["schemas"]["User"]["properties"]["address_limit"].is_object(),
        "the read shows it"
    );
}

/// A user input with `limit`.
fn limited(name: &str, limit: u32) -> UserInput {
    UserInput {
        address_limit: Some(limit),
        ..live::user(name)
    }
}

/// The VLESS UUID of the panel user `user`.
async fn uuid(panel: &Panel, user: &switchyard_panel::model::User) -> String {
    let token = user.subscription_path.trim_start_matches("/sub/");
    let (_, creds) = panel
        .state
        .store()
        .user_by_token(token, live::now())
        .await
        .unwrap()
        .unwrap();
    creds.vless_uuid
}

/// The real sing-box client of the VLESS inbound on `port` of 127.0.0.1, dialing it
/// from `source`.
async fn client(port: u16, uuid: &str, source: &str) -> SingBox {
    SingBox::client(json!({
        "type": "vless", "server": "127.0.0.1", "server_port": port, "uuid": uuid,
        "inet4_bind_address": source,
    }))
    .await
    .unwrap()
}

/// An echo connection through `proxy`, once a line made the round trip; none when the
/// node refused it (closed, or nothing back within 5 s).
async fn echo(proxy: SocketAddr, echo: SocketAddr) -> Option<TcpStream> {
    let mut s = switchyard_testkit::socks5::connect(proxy, echo)
        .await
        .ok()?;
    s.write_all(b"ping\n").await.ok()?;
    let mut back = [0u8; 5];
    tokio::time::timeout(Duration::from_secs(5), s.read_exact(&mut back))
        .await
        .ok()?
        .ok()?;
    (&back == b"ping\n").then_some(s)
}

/// [`echo`], tried until it works (the node may still be taking its config).
async fn echo_within(proxy: SocketAddr, to: SocketAddr, secs: u64, what: &str) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(s) = echo(proxy, to).await {
            return s;
        }
        assert!(Instant::now() < deadline, "{what} within {secs} s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The user's counters on `node`: source addresses online and connections refused by
/// the address limit.
fn counted(node: &EnrolledNode, user: i64) -> (Vec<String>, u64) {
    node.node()
        .shared()
        .accounting
        .users()
        .get(&format!("u{user}"))
        .map(|c| {
            (
                c.sources.iter().map(ToString::to_string).collect(),
                c.refused_by_address_limit,
            )
        })
        .unwrap_or_default()
}

/// Waits until `node` runs the user with `limit`.
async fn node_has_limit(node: &EnrolledNode, user: i64, limit: u32) {
    live::wait_until("the node has the user's address limit", 20, || async {
        node.node()
            .config()
            .await
            .users
            .iter()
            .any(|u| u.name == format!("u{user}") && u.address_limit == Some(limit))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_source_address_is_refused_on_the_node_the_user_connects_to() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, _) = live::panel(dir.path()).await;
    let service = panel.state.service().clone();
    let cluster = panel
        .state
        .store()
        .create_cluster("c", live::now())
        .await
        .unwrap()
        .id;
    let server = live::server(&panel, cluster, "s").await;
    let port = free_port().unwrap();
    service
        .create_inbound(&live::vless(server, "Plain", port, false), live::now())
        .await
        .unwrap();
    let alice = service
        .create_user(&limited("alice", 1), live::now())
        .await
        .unwrap();
    let id = uuid(&panel, &alice).await;
    let nodes = live::join_all(&panel, dir.path(), &[server]).await;
    node_has_limit(&nodes[0], alice.id, 1).await;
    let to = live::echo_server().await;

    let first = client(port, &id, "127.0.0.2").await;
    let second = client(port, &id, "127.0.0.3").await;
    let held = echo_within(first.proxy_addr().unwrap(), to, 20, "the first address").await;
    assert!(
        echo(second.proxy_addr().unwrap(), to).await.is_none(),
        "a second address is refused while the first is online\n{}",
        second.log_tail()
    );
    let (sources, refused) = counted(&nodes[0], alice.id);
    assert_eq!(sources, ["127.0.0.2"]);
    assert!(refused >= 1, "the refusal is counted");
    // The limit is on addresses online at once: once the first closes, the second
    // gets in.
    drop(held);
    live::wait_until("the first address goes offline", 10, || async {
        counted(&nodes[0], alice.id).0.is_empty()
    })
    .await;
    let _second = echo_within(second.proxy_addr().unwrap(), to, 10, "the second address").await;
    for n in nodes {
        n.shutdown().await;
    }
    panel.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_a_tunnel_the_origin_never_counts_the_relay_s_address() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, http) = live::panel(dir.path()).await;
    let service = panel.state.service().clone();
    let cluster = panel
        .state
        .store()
        .create_cluster("c", live::now())
        .await
        .unwrap()
        .id;
    let relay = live::server(&panel, cluster, "relay").await;
    let origin = live::server(&panel, cluster, "origin").await;
    let (relay_port, origin_port) = (free_port().unwrap(), free_port().unwrap());
    for (server, name, port) in [
        (relay, "Relay", relay_port),
        (origin, "Origin", origin_port),
    ] {
        service
            .create_inbound(&live::vless(server, name, port, false), live::now())
            .await
            .unwrap();
    }
    let alice = service
        .create_user(&limited("alice", 1), live::now())
        .await
        .unwrap();
    let bob = service
        .create_user(&limited("bob", 1), live::now())
        .await
        .unwrap();
    let (alice_id, bob_id) = (uuid(&panel, &alice).await, uuid(&panel, &bob).await);
    let nodes = live::join_all(&panel, dir.path(), &[relay, origin]).await;
    let auth = live::api_token(http, &dir.path().join("panel")).await;
    let input = json!({
        "name": "exit", "relay_server_id": relay, "origin_server_ids": [origin],
        "profiles": [{"port": free_port().unwrap()}],
    });
    let (status, tunnel) = live::http(http, "POST", "/api/v1/tunnels", &auth, Some(&input)).await;
    assert_eq!(status, 201, "{tunnel}");
    let streams = || async {
        nodes[0].node().tunnel("exit").await.map_or(0, |s| {
            s["origins"][format!("server-{origin}")]["open_streams"]
                .as_u64()
                .unwrap_or(0)
        })
    };
    live::wait_until("the tunnel's links are up", 30, || async {
        nodes[0]
            .node()
            .tunnel("exit")
            .await
            .is_some_and(|s| s["links"].as_u64().unwrap_or(0) > 0)
    })
    .await;
    node_has_limit(&nodes[0], alice.id, 1).await;
    node_has_limit(&nodes[1], alice.id, 1).await;
    let to = live::echo_server().await;

    // Alice and Bob through the relay, from addresses of their own: the relay's only
    // way out is the tunnel, so both reach the origin from the relay's address.
    let alice_relay = client(relay_port, &alice_id, "127.0.0.2").await;
    let bob_relay = client(relay_port, &bob_id, "127.0.0.3").await;
    let _a = echo_within(
        alice_relay.proxy_addr().unwrap(),
        to,
        20,
        "alice via the relay",
    )
    .await;
    let _b = echo_within(bob_relay.proxy_addr().unwrap(), to, 20, "bob via the relay").await;
    assert_eq!(streams().await, 2, "both connections cross the tunnel");
    // Alice also straight to the origin, from a third address: had the origin counted
    // the relay's address for her tunnel stream, her one place would be taken.
    let alice_origin = client(origin_port, &alice_id, "127.0.0.4").await;
    let _c = echo_within(
        alice_origin.proxy_addr().unwrap(),
        to,
        20,
        "alice straight to the origin",
    )
    .await;
    assert_eq!(
        counted(&nodes[1], alice.id),
        (vec!["127.0.0.4".to_owned()], 0)
    );
    assert_eq!(
        counted(&nodes[1], bob.id).1,
        0,
        "bob is never refused at the origin"
    );
    assert!(counted(&nodes[1], bob.id).0.is_empty(), "nor counted there");
    // Where they connect, the limit holds: alice from a fourth address, at the relay.
    assert_eq!(
        counted(&nodes[0], alice.id),
        (vec!["127.0.0.2".to_owned()], 0)
    );
    assert_eq!(
        counted(&nodes[0], bob.id),
        (vec!["127.0.0.3".to_owned()], 0)
    );
    let again = client(relay_port, &alice_id, "127.0.0.5").await;
    assert!(
        echo(again.proxy_addr().unwrap(), to).await.is_none(),
        "a second address of alice's at the relay is refused"
    );
    assert!(counted(&nodes[0], alice.id).1 >= 1);
    for n in nodes {
        n.shutdown().await;
    }
    panel.shutdown().await;
}

/// The limit is stored and read back by both backends, and cleared by an update
/// without it.
async fn stored(store: switchyard_panel::store::SqlStore) {
    use switchyard_panel::model::Credentials;
    const NOW: i64 = 1_796_121_000_000;
    let creds = Credentials {
        vless_uuid: "00000000-0000-4000-8000-000000000001".into(),
        trojan_password: "pw".into(),
        ss_seed: "seed".into(),
    };
    let u = store
        .create_user(&limited("alice", 7), &creds, "tok", NOW)
        .await
        .unwrap();
    assert_eq!(u.address_limit, Some(7));
    assert_eq!(store.user(u.id, NOW).await.unwrap().address_limit, Some(7));
    let changed = store
        .update_user(u.id, &limited("alice", 1000), NOW)
        .await
        .unwrap();
    assert_eq!(changed.address_limit, Some(1000));
    let cleared = store
        .update_user(u.id, &live::user("alice"), NOW)
        .await
        .unwrap();
    assert_eq!(cleared.address_limit, None);
}

#[tokio::test]
async fn the_address_limit_is_stored_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = switchyard_panel::store::SqlStore::open_sqlite(
        &dir.path().join("panel.db"),
        switchyard_panel::store::Changes::default(),
    )
    .await
    .unwrap();
    stored(store).await;
}

#[tokio::test]
async fn the_address_limit_is_stored_on_postgres() {
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    let url = pg.fresh_database("address_limit").unwrap();
    let store =
        switchyard_panel::store::SqlStore::open(&url, switchyard_panel::store::Changes::default())
            .await
            .unwrap();
    stored(store).await;
}
