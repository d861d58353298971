//! A tunnel's live status and Reset through any of several panel instances: two real
//! panels on one private PostgreSQL, a relay and an origin joined to the first (it
//! holds their channels), every question asked through the second, which forwards it
//! through the database to the first (`nodes/forward.rs`). A node no instance holds
//! answers "Relay unreachable" once the asker's deadline has passed.

use crate::live;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_node::channel::EnrolledNode;
use switchyard_testkit::free_port;

/// A panel on free ports of 127.0.0.1 over the database at `url`, data in `dir`.
async fn instance(dir: &Path, url: &str) -> (switchyard_panel::Panel, SocketAddr) {
    use switchyard_panel::config::{ChannelSettings, PanelConfig};
    let free = || SocketAddr::from(([127, 0, 0, 1], free_port().unwrap()));
    let http = free();
    let panel = switchyard_panel::Panel::start(PanelConfig {
        listen: http,
        data_dir: dir.to_owned(),
        database_url: Some(url.to_owned()),
        channel: ChannelSettings {
            listen: free(),
            ..ChannelSettings::default()
        },
        ..PanelConfig::default()
    })
    .await
    .unwrap();
    (panel, http)
}

async fn links(node: &EnrolledNode, name: &str) -> u64 {
    node.node()
        .tunnel(name)
        .await
        .and_then(|h| h["links"].as_u64())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_and_reset_answer_through_the_instance_that_holds_no_channel() {
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    let url = pg.fresh_database("instances").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (a, http_a) = instance(&dir.path().join("a"), &url).await;
    let (b, http_b) = instance(&dir.path().join("b"), &url).await;
    let store = a.state.store().clone();
    let cluster = store.create_cluster("c", live::now()).await.unwrap().id;
    let relay = live::server(&a, cluster, "relay").await;
    let origin = live::server(&a, cluster, "origin").await;
    // Both nodes dial the first instance (their join tokens name its channel).
    let mut nodes = live::join_all(&a, dir.path(), &[relay, origin]).await;
    assert_eq!(
        (a.nodes.held(), b.nodes.held()),
        (vec![relay, origin], vec![])
    );
    // The first admin is the database's: a token made through one instance works
    // with the other.
    let auth = live::api_token(http_a, &dir.path().join("a")).await;

    // Made through the second instance: the first pushes the halves to its nodes.
    let port = free_port().unwrap();
    let input = json!({
        "name": "anywhere", "relay_server_id": relay, "origin_server_ids": [origin],
        "profiles": [{"port": port, "security": "tls", "links": 2}],
        // Reverse mode keeps an origin's direct-mode addresses, unused.
        "origin_addresses": [{"server_id": origin, "addresses": ["127.0.0.1", "origin.example"]}],
    });
    let (status, body) = live::http(http_b, "POST", "/api/v1/tunnels", &auth, Some(&input)).await;
    assert_eq!(status, 201, "{body}");
    // Kept in PostgreSQL as given, and read back by the other instance.
    let (_, read) = live::http(
        http_a,
        "GET",
        &format!("/api/v1/tunnels/{}", body["id"]),
        &auth,
        None,
    )
    .await;
    assert_eq!(
        (
            &read["profiles"][0]["links"],
            &read["origins"][0]["addresses"]
        ),
        (&json!(2), &json!(["127.0.0.1", "origin.example"])),
        "{read}"
    );
    let id = body["id"].as_i64().unwrap();
    live::wait_until("the relay's 2 links", 30, || async {
        links(&nodes[0], "anywhere").await == 2
    })
    .await;

    // The live status through the instance that holds no channel: the relay's and
    // the origin's halves, as the nodes report them.
    let (status, live) = live::http(
        http_b,
        "GET",
        &format!("/api/v1/tunnels/{id}/status"),
        &auth,
        None,
    )
    .await;
    assert_eq!(status, 200, "{live}");
    assert_eq!(
        (&live["state"], &live["error"]),
        (&json!("Connections: 2"), &Value::Null),
        "{live}"
    );
    assert_eq!(live["relay"]["role"], "relay", "{live}");
    assert_eq!(
        live["relay"]["origins"][format!("server-{origin}")]["links_per_profile"]["0"],
        2,
        "{live}"
    );
    assert_eq!(
        (
            &live["origins"][0]["half"]["role"],
            &live["origins"][0]["error"]
        ),
        (&json!("origin"), &Value::Null),
        "{live}"
    );
    let (status, list) = live::http(http_b, "GET", "/api/v1/tunnels/status", &auth, None).await;
    assert_eq!(
        (status, &list[0]["state"]),
        (200, &json!("Connections: 2")),
        "{list}"
    );

    // Reset through it: both nodes rebuild their halves, and the links come back.
    let before = nodes[1].node().tunnel("anywhere").await.unwrap();
    let (status, done) = live::http(
        http_b,
        "POST",
        &format!("/api/v1/tunnels/{id}/reset"),
        &auth,
        None,
    )
    .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(
        done,
        json!([
            {"server_id": relay, "reset": true, "error": null},
            {"server_id": origin, "reset": true, "error": null},
        ])
    );
    live::wait_until("the links back after the reset", 30, || async {
        links(&nodes[0], "anywhere").await == 2
    })
    .await;
    assert_eq!(before["role"], "origin");

    // The relay stopped: no instance holds its channel. Either instance answers
    // "Relay unreachable" once its deadline (3 s) has passed, saying why.
    nodes.remove(0).shutdown().await;
    live::wait_until(
        "the first instance let the relay's channel go",
        20,
        || async { !a.nodes.held().contains(&relay) },
    )
    .await;
    let path = format!("/api/v1/tunnels/{id}/status");
    for http in [http_b, http_a] {
        let asked = live::http(http, "GET", &path, &auth, None);
        let (status, live) = tokio::time::timeout(Duration::from_secs(15), asked)
            .await
            .expect("an answer after the deadline, not a hang");
        assert_eq!(
            (status, &live["state"]),
            (200, &json!("Relay unreachable")),
            "{live}"
        );
        assert!(
            live["error"]
                .as_str()
                .is_some_and(|e| e.contains("not connected to any panel instance")),
            "{live}"
        );
        // The origin, still held by the first instance, answers through it.
        assert_eq!(live["origins"][0]["half"]["role"], "origin", "{live}");
    }

    for n in nodes {
        n.shutdown().await;
    }
    b.shutdown().await;
    a.shutdown().await;
}
