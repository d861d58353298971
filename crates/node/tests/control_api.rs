//! The control API, called through its router without a socket, and the journal's
//! durability across a node restart.

mod common;

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::*;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use switchyard_node::{Node, NodeConfig, control};
use switchyard_testkit::SingBox;
use switchyard_testkit::config::vless_outbound;
use tower::ServiceExt;

async fn call(f: &Fixture, method: &str, uri: &str, body: Option<Value>) -> (StatusCode, String) {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json")
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
        .unwrap();
    let resp = control::router(f.node.clone()).oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

async fn json(f: &Fixture, uri: &str) -> Value {
    let (status, body) = call(f, "GET", uri, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    serde_json::from_str(&body).unwrap()
}

#[tokio::test]
async fn status_stats_ack_config_and_metrics() {
    let f = start("protocol = \"vless\"").await;
    let client = SingBox::client(vless_outbound(f.addr(), ALICE_UUID))
        .await
        .unwrap();
    f.http
        .download_via_socks(client.proxy_addr().unwrap(), 100_000)
        .await
        .unwrap();

    let status = json(&f, "/v1/status").await;
    assert_eq!(status["version"], 1);
    assert_eq!(status["inbounds"][0]["tag"], "main");

    // Live counters, then a journal record on flush, read after a cursor, acked.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stats = json(&f, "/v1/stats").await;
    assert!(stats["users"]["alice"]["down"].as_u64().unwrap() >= 100_000);
    assert!(stats["users"]["alice"]["last_active_ms"].as_i64().unwrap() > 0);
    let seq = f.node.flush_journal().unwrap().unwrap();
    let stats = json(&f, "/v1/stats?cursor=0").await;
    assert_eq!(stats["next_cursor"], seq);
    let rec = &stats["records"][0];
    assert!(rec["users"]["alice"]["down"].as_u64().unwrap() >= 100_000);
    assert_eq!(
        json(&f, &format!("/v1/stats?cursor={seq}")).await["records"],
        json!([])
    );
    let (code, _) = call(&f, "POST", "/v1/stats/ack", Some(json!({"cursor": seq}))).await;
    assert_eq!(code, StatusCode::NO_CONTENT);
    assert_eq!(json(&f, "/v1/status").await["journal"]["pending"], 0);

    // Config: read, change, refuse a broken one with the field named.
    let mut config = json(&f, "/v1/config").await;
    config["version"] = json!(2);
    let (code, body) = call(&f, "PUT", "/v1/config", Some(config.clone())).await;
    assert_eq!((code, body.as_str()), (StatusCode::OK, r#"{"applied":2}"#));
    config["inbounds"][0]["port"] = json!(0);
    let (code, body) = call(&f, "PUT", "/v1/config", Some(config)).await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    assert!(body.contains("inbounds[0].port"), "{body}");
    let (code, body) = call(&f, "PUT", "/v1/config", Some(json!({"inbounds": 3}))).await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(json(&f, "/v1/status").await["version"], 2);

    let (code, metrics) = call(&f, "GET", "/metrics", None).await;
    assert_eq!(code, StatusCode::OK);
    assert!(
        metrics.contains("switchyard_inbound_bytes_total{inbound=\"main\",direction=\"down\"}"),
        "{metrics}"
    );
    assert!(metrics.contains("# TYPE switchyard_node_connections gauge"));
}

#[tokio::test]
async fn counts_survive_a_node_restart_and_nothing_counts_twice() {
    let f = start("protocol = \"vless\"").await;
    let client = SingBox::client(vless_outbound(f.addr(), ALICE_UUID))
        .await
        .unwrap();
    f.http
        .download_via_socks(client.proxy_addr().unwrap(), 200_000)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let counted = f.alice().1;
    // A clean stop takes the last record.
    f.node.shutdown().await;
    let config: NodeConfig = f.node.config().await;
    drop(client);
    let restarted = Node::start(NodeConfig {
        inbounds: vec![],
        ..config
    })
    .await
    .unwrap();
    let (records, cursor) = restarted.journal().read(0, 100);
    let journaled: u64 = records
        .iter()
        .filter_map(|r| r.users.get("alice"))
        .map(|b| b.down)
        .sum();
    assert_eq!(journaled, counted);
    // A reader that stored the cursor reads nothing twice; after ack nothing is left.
    assert!(restarted.journal().read(cursor, 100).0.is_empty());
    restarted.journal().ack(cursor).unwrap();
    assert_eq!(restarted.journal().pending(), 0);
}
