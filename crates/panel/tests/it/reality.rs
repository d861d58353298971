//! REALITY inbounds through the API: the key pair the panel makes (the public key
//! shown, the private one only in the node's config), the defaults (a short id,
//! 60 s of clock difference, Chrome's fingerprint), what an update keeps, the errors
//! naming the field, and the exact entry in every subscription format.

use crate::common;

use axum::http::StatusCode;
use base64::Engine;
use common::Harness;
use serde_json::{Value, json};
use switchyard_proto::reality::PrivateKey;

/// A VLESS REALITY inbound on `server_id`, with `extra` fields set on it.
fn reality(server_id: i64, extra: Value) -> Value {
    let mut v = json!({"server_id": server_id, "name": "🇩🇪 Frankfurt R", "protocol": "vless",
        "port": 443, "security": {"type": "reality", "dest": "www.example.com:443",
        "server_names": ["www.example.com", "example.com"]}});
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

async fn server(h: &Harness, t: &str) -> i64 {
    common::server_at(h, t, "fra-1", "203.0.113.9").await
}

/// The stored private key of inbound `id`.
async fn private_key(h: &Harness, id: i64) -> String {
    let mut all = Vec::new();
    for c in h.state.store().clusters().await.unwrap() {
        all.extend(h.state.store().cluster_inbounds(c.id).await.unwrap());
    }
    all.into_iter()
        .find(|(i, _)| i.id == id)
        .and_then(|(_, s)| s.reality_private_key)
        .unwrap()
}

#[tokio::test]
async fn the_panel_makes_the_keys_and_a_short_id_and_keeps_them() {
    let h = Harness::new().await;
    let t = h.token().await;
    let sid = server(&h, &t).await;
    let made = h
        .post("/api/v1/inbounds")
        .bearer(&t)
        .json(&reality(sid, json!({"flow": "xtls-rprx-vision"})))
        .send()
        .await
        .ok(StatusCode::CREATED);
    let id = made["id"].as_i64().unwrap();
    let short_id = made["security"]["short_ids"][0]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(short_id.len(), 16, "{made}");
    assert!(short_id.bytes().all(|b| b.is_ascii_hexdigit()), "{made}");
    assert_eq!(
        made["security"],
        json!({"type": "reality", "dest": "www.example.com:443",
            "server_names": ["www.example.com", "example.com"], "short_ids": [short_id],
            "max_time_diff_ms": 60000, "fingerprint": "chrome"})
    );
    assert_eq!(made["flow"], "xtls-rprx-vision");
    assert_eq!(made["sni"], Value::Null);
    let public = made["reality_public_key"].as_str().unwrap().to_owned();
    let private = private_key(&h, id).await;
    assert_eq!(
        PrivateKey::parse(&private).unwrap().public_key().encode(),
        public
    );
    let read = h
        .get(&format!("/api/v1/inbounds/{id}"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(read, made);
    assert!(!read.to_string().contains(&private));

    // Another target, no short ids given, no flow: the keys and the short id stay.
    let changed = h
        .put(&format!("/api/v1/inbounds/{id}"))
        .bearer(&t)
        .json(
            &json!({"server_id": sid, "name": "R", "protocol": "vless", "port": 8443,
            "host": "fra.example.net", "security": {"type": "reality", "dest": "[2606:4700:4700::1111]:443",
            "server_names": ["cdn.example.org"], "max_time_diff_ms": 0, "fingerprint": "firefox"}}),
        )
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(changed["reality_public_key"], public);
    assert_eq!(changed["security"]["short_ids"], json!([short_id]));
    assert_eq!(changed["security"]["max_time_diff_ms"], 0);
    assert_eq!(changed["flow"], Value::Null);
    assert_eq!(private_key(&h, id).await, private);
    // Short ids given replace them.
    let changed = h
        .put(&format!("/api/v1/inbounds/{id}"))
        .bearer(&t)
        .json(&reality(
            sid,
            json!({"security": {"type": "reality",
            "dest": "www.example.com:443", "server_names": ["www.example.com"],
            "short_ids": ["", "ab"]}}),
        ))
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(changed["security"]["short_ids"], json!(["", "ab"]));
    assert_eq!(changed["reality_public_key"], public);

    // TLS, then REALITY again: a new pair; TLS has none.
    let tls = h
        .put(&format!("/api/v1/inbounds/{id}"))
        .bearer(&t)
        .json(&reality(
            sid,
            json!({"security": {"type": "tls",
            "certificate": {"source": "self_signed"}}, "flow": "xtls-rprx-vision"}),
        ))
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(tls["reality_public_key"], Value::Null);
    assert_eq!(tls["flow"], "xtls-rprx-vision");
    let again = h
        .put(&format!("/api/v1/inbounds/{id}"))
        .bearer(&t)
        .json(&reality(sid, json!({})))
        .send()
        .await
        .ok(StatusCode::OK);
    let new_public = again["reality_public_key"].as_str().unwrap();
    assert_eq!(new_public.len(), 43);
    assert_ne!(new_public, public);
    assert_ne!(again["security"]["short_ids"], json!([short_id]));
}

#[tokio::test]
async fn bad_reality_fields_and_flows_are_named() {
    let h = Harness::new().await;
    let t = h.token().await;
    let sid = server(&h, &t).await;
    let security = |extra: Value| {
        let mut s = json!({"type": "reality", "dest": "www.example.com:443",
            "server_names": ["www.example.com"]});
        for (k, x) in extra.as_object().unwrap() {
            s[k] = x.clone();
        }
        json!({ "security": s })
    };
    let cases = [
        (
            security(json!({"dest": "www.example.com"})),
            "security.dest",
        ),
        (
            security(json!({"server_names": []})),
            "security.server_names",
        ),
        (
            security(json!({"server_names": ["ok.example", "bad name"]})),
            "security.server_names[1]",
        ),
        (
            security(json!({"short_ids": ["abc"]})),
            "security.short_ids[0]",
        ),
        (
            security(json!({"max_time_diff_ms": 3_600_001})),
            "security.max_time_diff_ms",
        ),
        (
            security(json!({"fingerprint": "netscape"})),
            "security.fingerprint",
        ),
        (json!({"protocol": "trojan"}), "security"),
        (
            json!({"transport": {"type": "ws", "path": "/r"}}),
            "security",
        ),
        (json!({"sni": "www.example.com"}), "sni"),
        (
            json!({"flow": "xtls-rprx-vision", "security": {"type": "none"}}),
            "flow",
        ),
        (
            json!({"flow": "xtls-rprx-vision", "transport": {"type": "ws", "path": "/v"},
                "security": {"type": "tls", "certificate": {"source": "self_signed"}}}),
            "flow",
        ),
    ];
    for (extra, field) in cases {
        h.post("/api/v1/inbounds")
            .bearer(&t)
            .json(&reality(sid, extra))
            .send()
            .await
            .field_error(StatusCode::UNPROCESSABLE_ENTITY, field);
    }
    // An unknown flow and an unknown REALITY field are refused by the JSON reader.
    for extra in [
        json!({"flow": "xtls-rprx-direct"}),
        security(json!({"private_key": "mine"})),
    ] {
        h.post("/api/v1/inbounds")
            .bearer(&t)
            .json(&reality(sid, extra))
            .send()
            .await
            .problem(StatusCode::UNPROCESSABLE_ENTITY);
    }
    assert!(
        h.get("/api/v1/inbounds")
            .bearer(&t)
            .send()
            .await
            .ok(StatusCode::OK)
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn the_subscription_carries_reality_in_every_format() {
    let h = Harness::new().await;
    let t = h.token().await;
    let sid = server(&h, &t).await;
    let made = h
        .post("/api/v1/inbounds")
        .bearer(&t)
        .json(&reality(
            sid,
            json!({"flow": "xtls-rprx-vision", "security": {"type": "reality",
                "dest": "www.example.com:443", "server_names": ["www.example.com", "example.com"],
                "short_ids": ["6ba85179e30d4fc2", "01"], "fingerprint": "safari"}}),
        ))
        .send()
        .await
        .ok(StatusCode::CREATED);
    let pbk = made["reality_public_key"].as_str().unwrap().to_owned();
    let user = h
        .post("/api/v1/users")
        .bearer(&t)
        .json(&json!({"username": "alice"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    let path = user["subscription_path"].as_str().unwrap().to_owned();
    let token = path.trim_start_matches("/sub/");
    let (_, creds) = h
        .state
        .store()
        .user_by_token(token, h.state.now())
        .await
        .unwrap()
        .unwrap();
    let uuid = creds.vless_uuid;
    let get = |format: &str| {
        let h = &h;
        let url = format!("{path}?format={format}");
        async move { h.get(&url).send().await.text() }
    };

    // The entry is the cluster's default route (named after this inbound), its id
    // carried last.
    let cluster = h
        .get(&format!("/api/v1/servers/{sid}"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK)["cluster_id"]
        .clone();
    let route = h
        .get(&format!("/api/v1/clusters/{cluster}/routes"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK)["routes"][0]["id"]
        .clone();
    let links = base64::engine::general_purpose::STANDARD
        .decode(get("links").await.trim())
        .unwrap();
    assert_eq!(
        String::from_utf8(links).unwrap(),
        format!(
            "vless://{uuid}@203.0.113.9:443?type=tcp&security=reality&sni=www.example.com\
             &fp=safari&pbk={pbk}&sid=6ba85179e30d4fc2&encryption=none&flow=xtls-rprx-vision\
             &route={route}#%F0%9F%87%A9%F0%9F%87%AA%20Frankfurt%20R"
        )
    );

    let sing_box: Value = serde_json::from_str(&get("sing-box").await).unwrap();
    let outbound = sing_box["outbounds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["type"] == "vless")
        .unwrap()
        .clone();
    assert_eq!(
        outbound,
        json!({"type": "vless", "tag": "🇩🇪 Frankfurt R", "server": "203.0.113.9",
            "server_port": 443, "uuid": uuid, "flow": "xtls-rprx-vision",
            "tls": {"enabled": true, "server_name": "www.example.com",
                "utls": {"enabled": true, "fingerprint": "safari"},
                "reality": {"enabled": true, "public_key": pbk, "short_id": "6ba85179e30d4fc2"}}})
    );

    let clash = switchyard_proto::clash::read(&get("clash").await).unwrap();
    assert_eq!(clash.skipped, vec![]);
    let tls = clash.entries[0].tls.clone().unwrap();
    assert_eq!(tls.server_name.as_deref(), Some("www.example.com"));
    assert_eq!(tls.fingerprint.as_deref(), Some("safari"));
    let r = tls.reality.unwrap();
    assert_eq!(
        (r.public_key.as_str(), r.short_id.as_str()),
        (pbk.as_str(), "6ba85179e30d4fc2")
    );
    let yaml = get("clash").await;
    assert!(yaml.contains("\"reality-opts\":"), "{yaml}");
    assert!(
        yaml.contains("\"client-fingerprint\": \"safari\""),
        "{yaml}"
    );

    let xray: Value = serde_json::from_str(&get("xray").await).unwrap();
    let proxy = &xray[0]["outbounds"][0];
    assert_eq!(
        proxy["settings"]["vnext"][0]["users"][0],
        json!({"id": uuid, "encryption": "none", "flow": "xtls-rprx-vision"})
    );
    assert_eq!(
        proxy["streamSettings"],
        json!({"network": "tcp", "security": "reality", "realitySettings": {
            "serverName": "www.example.com", "fingerprint": "safari", "publicKey": pbk,
            "shortId": "6ba85179e30d4fc2", "spiderX": "/"}})
    );
}
