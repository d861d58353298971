//! A tunnel's REALITY target (`profiles[i].reality_dest`) against the servers that
//! listen for it (the relay in reverse mode, the origins in direct mode): a loopback,
//! private or local-name target is refused unless they allow private destinations,
//! a server cannot stop allowing them while it listens for such a profile, nor can
//! such a tunnel be duplicated for a relay that does not allow them, and the panel's
//! default target (`tunnels.reality_dest`) must be a global one.

use crate::common;

use axum::http::StatusCode;
use common::Harness;
use serde_json::{Value, json};
use switchyard_panel::PanelConfig;
use switchyard_panel::config::PanelConfigError;

/// A cluster with servers `relay` and `origin`: the cluster's and their ids.
async fn servers(h: &Harness, t: &str) -> (i64, i64, i64) {
    let c = h
        .post("/api/v1/clusters")
        .bearer(t)
        .json(&json!({"name": "main"}))
        .send()
        .await
        .ok(StatusCode::CREATED)["id"]
        .as_i64()
        .unwrap();
    let mut ids = Vec::new();
    for (i, name) in ["relay", "origin"].iter().enumerate() {
        ids.push(
            h.post("/api/v1/servers")
                .bearer(t)
                .json(&json!({"cluster_id": c, "name": name, "address": format!("203.0.113.{}", i + 1)}))
                .send()
                .await
                .ok(StatusCode::CREATED)["id"]
                .as_i64()
                .unwrap(),
        );
    }
    (c, ids[0], ids[1])
}

fn tunnel(name: &str, mode: &str, relay: i64, origin: i64, dest: &str) -> Value {
    json!({"name": name, "relay_server_id": relay, "origin_server_ids": [origin], "mode": mode,
        "profiles": [{"port": 7443, "security": "reality", "reality_dest": dest,
            "reality_server_name": "site.example.com"}]})
}

fn allow(c: i64, name: &str, i: u8, on: bool) -> Value {
    json!({"cluster_id": c, "name": name, "address": format!("203.0.113.{i}"),
        "allow_private_destinations": on})
}

#[tokio::test]
async fn a_private_tunnel_reality_dest_is_refused_unless_the_listening_server_allows_it() {
    let h = Harness::new().await;
    let t = h.token().await;
    let (c, relay, origin) = servers(&h, &t).await;
    for dest in [
        "127.0.0.1:9090",
        "10.0.0.5:443",
        "192.168.1.1:443",
        "169.254.169.254:80",
        "[::1]:443",
        "[fd00::1]:443",
        "localhost:443",
        "panel.localhost:443",
        "db.internal:443",
    ] {
        let p = h
            .post("/api/v1/tunnels")
            .bearer(&t)
            .json(&tunnel("eu", "reverse", relay, origin, dest))
            .send()
            .await
            .field_error(StatusCode::UNPROCESSABLE_ENTITY, "profiles[0].reality_dest");
        assert!(
            p.to_string().contains("allow private destinations"),
            "{dest}: {p}"
        );
    }
    // The form, whatever the server allows: what a resolver reads as 127.0.0.1.
    h.post("/api/v1/tunnels")
        .bearer(&t)
        .json(&tunnel("eu", "reverse", relay, origin, "2130706433:443"))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "profiles[0].reality_dest");
    // A global target is taken; changing it to a private one is refused.
    let id = h
        .post("/api/v1/tunnels")
        .bearer(&t)
        .json(&tunnel(
            "eu",
            "reverse",
            relay,
            origin,
            "www.example.com:443",
        ))
        .send()
        .await
        .ok(StatusCode::CREATED)["id"]
        .as_i64()
        .unwrap();
    h.put(&format!("/api/v1/tunnels/{id}"))
        .bearer(&t)
        .json(&tunnel("eu", "reverse", relay, origin, "127.0.0.1:9090"))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "profiles[0].reality_dest");
    // The origin allowing private destinations does not help: in reverse mode the
    // relay listens.
    h.put(&format!("/api/v1/servers/{origin}"))
        .bearer(&t)
        .json(&allow(c, "origin", 2, true))
        .send()
        .await
        .ok(StatusCode::OK);
    h.put(&format!("/api/v1/tunnels/{id}"))
        .bearer(&t)
        .json(&tunnel("eu", "reverse", relay, origin, "127.0.0.1:9090"))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "profiles[0].reality_dest");
    // The relay allowing them: taken.
    h.put(&format!("/api/v1/servers/{relay}"))
        .bearer(&t)
        .json(&allow(c, "relay", 1, true))
        .send()
        .await
        .ok(StatusCode::OK);
    let changed = h
        .put(&format!("/api/v1/tunnels/{id}"))
        .bearer(&t)
        .json(&tunnel("eu", "reverse", relay, origin, "127.0.0.1:9090"))
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(changed["profiles"][0]["reality_dest"], "127.0.0.1:9090");
    // ... and it cannot stop allowing them while the tunnel needs it.
    let p = h
        .put(&format!("/api/v1/servers/{relay}"))
        .bearer(&t)
        .json(&allow(c, "relay", 1, false))
        .send()
        .await
        .field_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "allow_private_destinations",
        );
    assert!(p.to_string().contains("127.0.0.1:9090"), "{p}");
    // A duplicate for a relay that does not allow them is refused too.
    let relay2 = h
        .post("/api/v1/servers")
        .bearer(&t)
        .json(&allow(c, "relay-2", 3, false))
        .send()
        .await
        .ok(StatusCode::CREATED)["id"]
        .as_i64()
        .unwrap();
    h.post(&format!("/api/v1/tunnels/{id}/duplicate"))
        .bearer(&t)
        .json(&json!({"name": "eu-2", "relay_server_id": relay2}))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "profiles[0].reality_dest");
    // In direct mode the origins listen: the origin's setting is the one that counts.
    h.put(&format!("/api/v1/servers/{origin}"))
        .bearer(&t)
        .json(&allow(c, "origin", 2, false))
        .send()
        .await
        .ok(StatusCode::OK);
    let direct = |port: u16| {
        let mut v = tunnel("eu-direct", "direct", relay, origin, "127.0.0.1:9090");
        v["profiles"][0]["port"] = json!(port);
        v
    };
    h.post("/api/v1/tunnels")
        .bearer(&t)
        .json(&direct(7444))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "profiles[0].reality_dest");
    h.put(&format!("/api/v1/servers/{origin}"))
        .bearer(&t)
        .json(&allow(c, "origin", 2, true))
        .send()
        .await
        .ok(StatusCode::OK);
    h.post("/api/v1/tunnels")
        .bearer(&t)
        .json(&direct(7444))
        .send()
        .await
        .ok(StatusCode::CREATED);
}

#[test]
fn the_panels_default_tunnel_target_must_be_global_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("panel.toml");
    for dest in [
        "localhost:443",
        "panel.localhost:443",
        "printer.local:443",
        "db.internal:443",
    ] {
        std::fs::write(&path, format!("[tunnels]\nreality_dest = \"{dest}\"\n")).unwrap();
        match PanelConfig::load(Some(&path)) {
            Err(PanelConfigError::Invalid { field, message }) => {
                assert_eq!(field, "tunnels.reality_dest", "{dest}: {message}");
                assert!(message.contains("this machine"), "{dest}: {message}");
            }
            other => panic!("{dest}: {other:?}"),
        }
    }
    std::fs::write(
        &path,
        "[tunnels]\nreality_dest = \"www.example.org:8443\"\n",
    )
    .unwrap();
    PanelConfig::load(Some(&path)).unwrap();
}
