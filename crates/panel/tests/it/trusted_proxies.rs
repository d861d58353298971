//! An inbound's trusted proxies through the API, on SQLite and PostgreSQL: created
//! with a list, read back as it went in, changed and cleared; a bad entry refused by
//! its index with the node's own reason, a list on a transport without headers (TCP,
//! Hysteria 2) refused; and the list in the server's node config, read by the node's
//! own parser. The OpenAPI document bounds the list. End to end, a real node joined
//! to the panel counts a user at the address the listed proxy's `X-Forwarded-For`
//! names, and at the proxy's own once the list is cleared.

use crate::common::{self, Harness, server};
use crate::live;

use std::net::SocketAddr;
use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{Value, json};
use switchyard_node::channel::EnrolledNode;
use switchyard_panel::model::InboundTransport;
use switchyard_panel::store::{Changes, ServerStore, SqlStore};
use switchyard_proto::vless;
use switchyard_testkit::free_port;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const NOW: i64 = 1_796_121_000_000;

/// The networks of the tests: a CDN's IPv4 block, a bare address, an IPv6 block.
const NETS: [&str; 3] = ["173.245.48.0/20", "127.0.0.1", "2400:cb00::/32"];

/// A VLESS+TLS inbound on `port` over `transport` with `trusted_proxies`.
fn inbound(sid: i64, port: u16, transport: Value, trusted_proxies: Value) -> Value {
    let mut body = common::vless(sid, "🇺🇸 New York", port);
    body["transport"] = transport;
    body["trusted_proxies"] = trusted_proxies;
    body
}

fn ws() -> Value {
    json!({"type": "ws", "path": "/ws"})
}

/// The trusted proxies the node config of server `sid` gives inbound `id`, as the
/// node reads them.
async fn node_networks(h: &Harness, sid: i64, id: &Value) -> Vec<String> {
    let snapshot = h.store.server_snapshot(sid, NOW).await.unwrap();
    let config = switchyard_panel::render::render(&snapshot, NOW).unwrap();
    let tag = format!("in-{id}");
    let ib = config
        .inbounds
        .iter()
        .find(|i| i.tag == tag)
        .unwrap_or_else(|| panic!("{tag} not in {:?}", config.inbounds));
    ib.trusted_networks()
        .iter()
        .map(ToString::to_string)
        .collect()
}

async fn story(h: Harness) {
    let t = h.token().await;
    let sid = server(&h, &t).await;

    // Created with the list, read back as it went in, alone and in the list.
    let created = h
        .post("/api/v1/inbounds")
        .bearer(&t)
        .json(&inbound(sid, 443, ws(), json!(NETS)))
        .send()
        .await
        .ok(StatusCode::CREATED);
    assert_eq!(created["trusted_proxies"], json!(NETS), "{created}");
    let id = created["id"].clone();
    let read = h
        .get(&format!("/api/v1/inbounds/{id}"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(read["trusted_proxies"], json!(NETS));
    let listed = h
        .get(&format!("/api/v1/inbounds?server_id={sid}"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(listed[0]["trusted_proxies"], json!(NETS));
    // The node gets them, and reads a bare address as its /32.
    assert_eq!(
        node_networks(&h, sid, &id).await,
        ["173.245.48.0/20", "127.0.0.1/32", "2400:cb00::/32"]
    );

    // A bad entry is named by its index, with the node's reason; nothing changes.
    let p = h
        .put(&format!("/api/v1/inbounds/{id}"))
        .bearer(&t)
        .json(&inbound(
            sid,
            443,
            ws(),
            json!(["10.0.0.0/8", "cloudflare"]),
        ))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "trusted_proxies[1]");
    assert_eq!(
        p["errors"][0]["message"],
        "\"cloudflare\" is not an IP address (write a network as \"192.0.2.0/24\" or \"2001:db8::/32\")"
    );
    h.post("/api/v1/inbounds")
        .bearer(&t)
        .json(&inbound(sid, 444, ws(), json!(["::1", "10.0.0.0/33"])))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "trusted_proxies[1]");
    let too_many: Vec<String> = (0..257)
        .map(|n| format!("10.0.{}.{}", n / 256, n % 256))
        .collect();
    h.post("/api/v1/inbounds")
        .bearer(&t)
        .json(&inbound(sid, 444, ws(), json!(too_many)))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "trusted_proxies");
    // A transport without HTTP headers has no X-Forwarded-For to believe.
    let p = h
        .post("/api/v1/inbounds")
        .bearer(&t)
        .json(&inbound(
            sid,
            444,
            json!({"type": "tcp"}),
            json!(["127.0.0.1"]),
        ))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "trusted_proxies");
    assert!(
        p["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("is for ws, httpupgrade, xhttp and grpc")),
        "{p}"
    );
    let hysteria2 = json!({
        "server_id": sid, "name": "quic", "protocol": "hysteria2", "port": 8443,
        "security": {"type": "tls", "certificate": {"source": "self_signed"}},
        "trusted_proxies": ["127.0.0.1"],
    });
    h.post("/api/v1/inbounds")
        .bearer(&t)
        .json(&hysteria2)
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "trusted_proxies");
    let read = h
        .get(&format!("/api/v1/inbounds/{id}"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(read["trusted_proxies"], json!(NETS));

    // Kept when the transport changes to another with headers; cleared with [].
    let grpc = json!({"type": "grpc", "service_name": "tun"});
    let changed = h
        .put(&format!("/api/v1/inbounds/{id}"))
        .bearer(&t)
        .json(&inbound(sid, 443, grpc.clone(), json!(["2400:cb00::/32"])))
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(changed["trusted_proxies"], json!(["2400:cb00::/32"]));
    assert_eq!(node_networks(&h, sid, &id).await, ["2400:cb00::/32"]);
    let cleared = h
        .put(&format!("/api/v1/inbounds/{id}"))
        .bearer(&t)
        .json(&inbound(sid, 443, grpc, json!([])))
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(cleared["trusted_proxies"], json!([]));
    assert_eq!(node_networks(&h, sid, &id).await, Vec::<String>::new());

    // Unset is empty, on any transport.
    let mut plain = common::vless(sid, "plain", 445);
    plain["transport"] = json!({"type": "tcp"});
    let plain = h
        .post("/api/v1/inbounds")
        .bearer(&t)
        .json(&plain)
        .send()
        .await
        .ok(StatusCode::CREATED);
    assert_eq!(plain["trusted_proxies"], json!([]));
}

#[tokio::test]
async fn trusted_proxies_round_trip_on_sqlite() {
    story(Harness::new().await).await;
}

#[tokio::test]
async fn trusted_proxies_round_trip_on_postgres() {
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    let url = pg.fresh_database("trusted_proxies").unwrap();
    let store = SqlStore::open(&url, Changes::default()).await.unwrap();
    story(Harness::over(store).await).await;
}

/// The OpenAPI document has the list on the input and the inbound, at most 256.
#[tokio::test]
async fn the_openapi_document_bounds_the_list() {
    let h = Harness::new().await;
    let doc = h.get("/api/openapi.json").send().await.ok(StatusCode::OK);
    let schemas = &doc["components"]["schemas"];
    let input = &schemas["InboundInput"]["properties"]["trusted_proxies"];
    assert_eq!(input["type"], "array", "{input}");
    assert_eq!(input["items"]["type"], "string", "{input}");
    assert_eq!(input["maxItems"], 256, "{input}");
    let required = schemas["InboundInput"]["required"].as_array().unwrap();
    assert!(
        !required.contains(&json!("trusted_proxies")),
        "{required:?}"
    );
    let read = &schemas["Inbound"]["properties"]["trusted_proxies"];
    assert_eq!(read["type"], "array", "{read}");
}

/// A raw HTTPUpgrade client of `uuid` on `port` of 127.0.0.1 (it plays the CDN: its
/// address is the node's peer) sending `X-Forwarded-For: forwarded`, through to the
/// echo server `to`: the stream once its `ping` came back.
async fn upgrade(port: u16, forwarded: &str, uuid: &str, to: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let request = format!(
        "GET /up HTTP/1.1\r\nHost: cdn.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         X-Forwarded-For: {forwarded}\r\n\r\n"
    );
    s.write_all(request.as_bytes()).await.unwrap();
    let head = read_until(&mut s, b"\r\n\r\n").await;
    assert!(head.starts_with(b"HTTP/1.1 101"), "{head:?}");
    let mut hello = Vec::new();
    vless::Request {
        uuid: vless::parse_uuid(uuid).unwrap(),
        flow: vless::Flow::None,
        command: vless::Command::Tcp(switchyard_proto::Address::Ip(to)),
    }
    .encode(&mut hello);
    hello.extend_from_slice(b"ping");
    s.write_all(&hello).await.unwrap();
    read_until(&mut s, b"ping").await;
    s
}

/// What `s` sends until `want` has come (10 s at most).
async fn read_until(s: &mut TcpStream, want: &[u8]) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(want.len()).any(|w| w == want) {
        match tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
            other => panic!("{want:?} did not come ({other:?}); got {got:?}"),
        }
    }
    got
}

/// The source addresses the node counts online for the panel user `user`.
fn sources(node: &EnrolledNode, user: i64) -> Vec<String> {
    node.node()
        .shared()
        .accounting
        .users()
        .get(&format!("u{user}"))
        .map(|c| c.sources.iter().map(ToString::to_string).collect())
        .unwrap_or_default()
}

/// Waits until the node's inbound `id` trusts `want`.
async fn node_trusts(node: &EnrolledNode, id: i64, want: &[&str]) {
    live::wait_until("the node has the inbound's trusted proxies", 20, || async {
        node.node()
            .config()
            .await
            .inbounds
            .iter()
            .any(|i| i.tag == format!("in-{id}") && i.trusted_proxies == want)
    })
    .await;
}

/// End to end: the list set in the panel reaches a real node, which then counts a
/// user at the address the trusted peer's `X-Forwarded-For` names; cleared in the
/// panel, the node counts the peer again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_node_believes_the_proxies_the_panel_lists() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, _) = live::panel(dir.path()).await;
    let service = panel.state.service().clone();
    let store = panel.state.store().clone();
    let cluster = store.create_cluster("c", live::now()).await.unwrap().id;
    let server = live::server(&panel, cluster, "s").await;
    let port = free_port().unwrap();
    let mut input = live::vless(server, "Behind a CDN", port, false);
    input.transport = InboundTransport::HttpUpgrade {
        path: "/up".into(),
        host: None,
    };
    input.trusted_proxies = vec!["127.0.0.1".into()];
    let inbound = service.create_inbound(&input, live::now()).await.unwrap();
    assert_eq!(inbound.trusted_proxies, ["127.0.0.1"]);
    let alice = service
        .create_user(&live::user("alice"), live::now())
        .await
        .unwrap();
    let creds = live::credentials(&panel, &alice).await;
    let nodes = live::join_all(&panel, dir.path(), &[server]).await;
    node_trusts(&nodes[0], inbound.id, &["127.0.0.1"]).await;
    let to = live::echo_server().await;

    let held = upgrade(port, "198.51.100.7", &creds.vless_uuid, to).await;
    assert_eq!(sources(&nodes[0], alice.id), ["198.51.100.7"]);
    drop(held);
    live::wait_until("the connection goes offline", 10, || async {
        sources(&nodes[0], alice.id).is_empty()
    })
    .await;

    input.trusted_proxies.clear();
    service.update_inbound(inbound.id, &input).await.unwrap();
    node_trusts(&nodes[0], inbound.id, &[]).await;
    let _held = upgrade(port, "198.51.100.7", &creds.vless_uuid, to).await;
    assert_eq!(sources(&nodes[0], alice.id), ["127.0.0.1"]);
    for n in nodes {
        n.shutdown().await;
    }
    panel.shutdown().await;
}
