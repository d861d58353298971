//! The control API, called through its router without a socket, and the journal's
//! durability across a node restart.

use crate::common;

use std::time::Duration;

use axum::http::StatusCode;
use common::control::*;
use common::*;
use serde_json::json;
use switchyard_node::Node;
use switchyard_testkit::SingBox;
use switchyard_testkit::config::vless_outbound;

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
    // (The node's own flush, every second, may have taken some of them already.)
    f.node.flush_journal().await.unwrap();
    let stats = json(&f, "/v1/stats?cursor=0").await;
    let seq = stats["next_cursor"].as_u64().unwrap();
    let records = stats["records"].as_array().unwrap();
    assert_eq!(records.last().unwrap()["seq"], seq);
    let down: u64 = records
        .iter()
        .map(|r| r["users"]["alice"]["down"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(down, f.alice().1);
    assert_eq!(
        json(&f, &format!("/v1/stats?cursor={seq}")).await["records"],
        json!([])
    );
    let (code, _) = call(&f, "POST", "/v1/stats/ack", Some(json!({"cursor": seq}))).await;
    assert_eq!(code, StatusCode::NO_CONTENT);
    assert_eq!(json(&f, "/v1/status").await["journal"]["pending"], 0);

    // Config: change, refuse a broken one with the field named.
    let mut config = serde_json::to_value(f.node.config().await).unwrap();
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
    drop(client);
    let restarted = restart(&f).await;
    let (records, cursor) = restarted.read_journal(0, 100).await.unwrap();
    let journaled: u64 = records
        .iter()
        .filter_map(|r| r.users.get("alice"))
        .map(|b| b.down)
        .sum();
    assert_eq!(journaled, counted);
    // A reader that stored the cursor reads nothing twice; after ack nothing is left.
    assert!(
        restarted
            .read_journal(cursor, 100)
            .await
            .unwrap()
            .0
            .is_empty()
    );
    restarted.ack_journal(cursor).await.unwrap();
    assert_eq!(restarted.journal().pending(), 0);
}

#[tokio::test]
async fn a_failed_save_of_the_last_good_config_is_reported_and_the_change_applies() {
    let f = start("protocol = \"vless\"").await;
    // The temporary file can't be created: the save fails, whoever runs the test.
    let blocker = f.dir.path().join("config.json.tmp");
    std::fs::create_dir(&blocker).unwrap();
    let mut c = f.node.config().await;
    c.version = 2;
    c.users[0].enabled = false; // alice
    f.node
        .apply(c)
        .await
        .expect("disabling a user always applies");
    let runtime = f.node.shared().runtime();
    let alice = switchyard_node::config::parse_uuid(ALICE_UUID).unwrap();
    assert!(runtime.users.vless(&alice).is_none(), "alice is refused");
    let status = json(&f, "/v1/status").await;
    assert_eq!(status["version"], 2);
    let error = format!(
        "state file {}: Is a directory (os error 21)",
        blocker.display()
    );
    assert_eq!(
        status["last_good"],
        json!({"saved_version": 1, "error": error, "failures": 1})
    );
    let metrics = call(&f, "GET", "/metrics", None).await.1;
    assert!(
        metrics.contains("\nswitchyard_last_good_saved 0\n"),
        "{metrics}"
    );
    assert!(metrics.contains("\nswitchyard_last_good_save_failures_total 1\n"));
    // Once the disk takes it again, the next change is saved and the report clears.
    std::fs::remove_dir(&blocker).unwrap();
    let mut c = f.node.config().await;
    c.version = 3;
    f.node.apply(c).await.unwrap();
    assert_eq!(
        json(&f, "/v1/status").await["last_good"],
        json!({"saved_version": 3, "error": null, "failures": 1})
    );
    assert_eq!(Node::last_good(f.dir.path()).unwrap().version, 3);
}
