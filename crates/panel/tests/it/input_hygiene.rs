//! What the API refuses in names and REALITY targets: Unicode format characters
//! (bidirectional overrides, zero-width characters, the byte-order mark) in every name
//! it takes, and a REALITY `dest` on the server's own machine or networks unless the
//! server allows private destinations. Each refusal names its field.

use crate::common;

use axum::http::StatusCode;
use common::Harness;
use serde_json::{Value, json};

/// The characters of the field test: right-to-left override, zero width space,
/// right-to-left isolate, byte-order mark.
const HIDDEN: [char; 4] = ['\u{202E}', '\u{200B}', '\u{2067}', '\u{FEFF}'];

async fn cluster_and_server(h: &Harness, t: &str) -> (i64, i64) {
    let c = h
        .post("/api/v1/clusters")
        .bearer(t)
        .json(&json!({"name": "main"}))
        .send()
        .await
        .ok(StatusCode::CREATED)["id"]
        .as_i64()
        .unwrap();
    let s = h
        .post("/api/v1/servers")
        .bearer(t)
        .json(&json!({"cluster_id": c, "name": "fra-1", "address": "203.0.113.9"}))
        .send()
        .await
        .ok(StatusCode::CREATED)["id"]
        .as_i64()
        .unwrap();
    (c, s)
}

fn reality(server_id: i64, dest: &str) -> Value {
    json!({"server_id": server_id, "name": "R", "protocol": "vless", "port": 443,
        "security": {"type": "reality", "dest": dest, "server_names": ["www.example.com"]}})
}

#[tokio::test]
async fn names_with_format_characters_are_refused_naming_the_field() {
    let h = Harness::new().await;
    let t = h.token().await;
    let s = h.login().await;
    let (c, server) = cluster_and_server(&h, &t).await;
    for ch in HIDDEN {
        let name = format!("Paris{ch}fdp.exe");
        let p = h
            .post("/api/v1/clusters")
            .bearer(&t)
            .json(&json!({ "name": name }))
            .send()
            .await
            .field_error(StatusCode::UNPROCESSABLE_ENTITY, "name");
        let message = p["errors"][0]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("U+{:04X}", u32::from(ch))),
            "{message}"
        );
        h.put(&format!("/api/v1/clusters/{c}"))
            .bearer(&t)
            .json(&json!({ "name": name }))
            .send()
            .await
            .field_error(StatusCode::UNPROCESSABLE_ENTITY, "name");
        h.post("/api/v1/servers")
            .bearer(&t)
            .json(&json!({"cluster_id": c, "name": name, "address": "203.0.113.10"}))
            .send()
            .await
            .field_error(StatusCode::UNPROCESSABLE_ENTITY, "name");
        h.post("/api/v1/inbounds")
            .bearer(&t)
            .json(&common::vless(server, &name, 8443))
            .send()
            .await
            .field_error(StatusCode::UNPROCESSABLE_ENTITY, "name");
        h.post(&format!("/api/v1/clusters/{c}/routes"))
            .bearer(&t)
            .json(&json!({ "name": name }))
            .send()
            .await
            .field_error(StatusCode::UNPROCESSABLE_ENTITY, "name");
        h.post(&format!("/api/v1/clusters/{c}/routes"))
            .bearer(&t)
            .json(&json!({"name": "Paris", "flag": format!("🇫🇷{ch}")}))
            .send()
            .await
            .field_error(StatusCode::UNPROCESSABLE_ENTITY, "flag");
        h.post("/api/v1/users")
            .bearer(&t)
            .json(&json!({ "username": format!("alice{ch}") }))
            .send()
            .await
            .field_error(StatusCode::UNPROCESSABLE_ENTITY, "username");
        h.post("/api/v1/users")
            .bearer(&t)
            .json(&json!({"username": "bob", "note": format!("paid{ch} until May")}))
            .send()
            .await
            .field_error(StatusCode::UNPROCESSABLE_ENTITY, "note");
        h.post("/api/v1/tokens")
            .session(&s)
            .json(&json!({ "name": name }))
            .send()
            .await
            .field_error(StatusCode::UNPROCESSABLE_ENTITY, "name");
        h.post("/api/v1/tunnels")
            .bearer(&t)
            .json(
                &json!({"name": format!("exit{ch}"), "relay_server_id": server,
                "origin_server_ids": []}),
            )
            .send()
            .await
            .field_error(StatusCode::UNPROCESSABLE_ENTITY, "name");
    }
    // What is visible passes: letters of any script, emoji, a note's lines; a flag
    // keeps the joiner its emoji sequences are made with (a name does not).
    h.post(&format!("/api/v1/clusters/{c}/routes"))
        .bearer(&t)
        .json(&json!({"name": "🇨🇭 Zürich 東京", "flag": "🏳️\u{200D}🌈"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    h.post("/api/v1/users")
        .bearer(&t)
        .json(&json!({"username": "carol", "note": "paid until May\nrenews by card"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
}

#[tokio::test]
async fn a_private_reality_dest_is_refused_unless_the_server_allows_it() {
    let h = Harness::new().await;
    let t = h.token().await;
    let (c, server) = cluster_and_server(&h, &t).await;
    for dest in [
        "127.0.0.1:9090",
        "10.0.0.5:443",
        "192.168.1.1:443",
        "169.254.169.254:80",
        "100.64.0.1:443",
        "0.0.0.0:443",
        "[::1]:443",
        "[fd00::1]:443",
        "[::ffff:127.0.0.1]:443",
        "localhost:443",
        "panel.localhost:443",
        "2130706433:443",
    ] {
        let p = h
            .post("/api/v1/inbounds")
            .bearer(&t)
            .json(&reality(server, dest))
            .send()
            .await
            .field_error(StatusCode::UNPROCESSABLE_ENTITY, "security.dest");
        assert!(p.to_string().contains("security.dest"), "{dest}: {p}");
    }
    let id = h
        .post("/api/v1/inbounds")
        .bearer(&t)
        .json(&reality(server, "www.example.com:443"))
        .send()
        .await
        .ok(StatusCode::CREATED)["id"]
        .as_i64()
        .unwrap();
    h.put(&format!("/api/v1/inbounds/{id}"))
        .bearer(&t)
        .json(&reality(server, "127.0.0.1:9090"))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "security.dest");
    // A server that allows private destinations may send REALITY probes to one.
    let allow = |on: bool| {
        json!({"cluster_id": c, "name": "fra-1", "address": "203.0.113.9",
            "allow_private_destinations": on})
    };
    h.put(&format!("/api/v1/servers/{server}"))
        .bearer(&t)
        .json(&allow(true))
        .send()
        .await
        .ok(StatusCode::OK);
    let changed = h
        .put(&format!("/api/v1/inbounds/{id}"))
        .bearer(&t)
        .json(&reality(server, "127.0.0.1:9090"))
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(changed["security"]["dest"], "127.0.0.1:9090");
    // ... and cannot stop allowing them while an inbound needs it.
    let p = h
        .put(&format!("/api/v1/servers/{server}"))
        .bearer(&t)
        .json(&allow(false))
        .send()
        .await
        .field_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "allow_private_destinations",
        );
    assert!(p.to_string().contains("127.0.0.1:9090"), "{p}");
}
