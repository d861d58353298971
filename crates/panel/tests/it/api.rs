//! The REST API through its router, without a socket: auth (sessions, CSRF, the login
//! limit, API tokens), CRUD with errors naming the field, computed user status,
//! secrets kept out of read APIs, subscriptions, the OpenAPI document, metrics, and
//! internal errors kept from clients. Every step checks exact values.

use crate::common;

use std::collections::BTreeSet;

use axum::http::StatusCode;
use base64::Engine;
use common::{Harness, PASSWORD, vless};
use serde_json::{Value, json};
use switchyard_panel::PanelConfig;
use switchyard_panel::config::AuthSettings;
use switchyard_panel::store::token_hash::hash_token;
use switchyard_proto::entry::EntryProtocol;

const UNATTACHED: &str = "1 inbound(s) are not in any route — clients can't see them yet";

/// A cluster, a server and a VLESS inbound; their ids.
async fn seed(h: &Harness, token: &str) -> (i64, i64, i64) {
    let c = h
        .post("/api/v1/clusters")
        .bearer(token)
        .json(&json!({"name": "main"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    let s = h
        .post("/api/v1/servers")
        .bearer(token)
        .json(&json!({"cluster_id": c["id"], "name": "ny-1", "address": "203.0.113.1"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    let s_id = s["id"].as_i64().unwrap();
    let i = h
        .post("/api/v1/inbounds")
        .bearer(token)
        .json(&vless(s_id, "🇺🇸 New York", 443))
        .send()
        .await
        .ok(StatusCode::CREATED);
    (c["id"].as_i64().unwrap(), s_id, i["id"].as_i64().unwrap())
}

/// A server in a new cluster named `name`; its id.
async fn server_in_new_cluster(h: &Harness, token: &str, name: &str) -> i64 {
    let c = h
        .post("/api/v1/clusters")
        .bearer(token)
        .json(&json!({"name": name}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    h.post("/api/v1/servers")
        .bearer(token)
        .json(&json!({"cluster_id": c["id"], "name": name, "address": "198.51.100.1"}))
        .send()
        .await
        .ok(StatusCode::CREATED)["id"]
        .as_i64()
        .unwrap()
}

async fn create_user(h: &Harness, token: &str, body: Value) -> Value {
    h.post("/api/v1/users")
        .bearer(token)
        .json(&body)
        .send()
        .await
        .ok(StatusCode::CREATED)
}

#[tokio::test]
async fn login_sets_an_http_only_strict_cookie_and_logout_ends_the_session() {
    let h = Harness::new().await;
    let wrong = h
        .post("/api/v1/session")
        .json(&json!({"username": "admin", "password": "wrong"}))
        .send()
        .await;
    let p = wrong.problem(StatusCode::UNAUTHORIZED);
    assert_eq!(p["detail"], "wrong name or password");
    assert_eq!(wrong.header("set-cookie"), None);
    // An unknown name answers the same.
    let unknown = h
        .post("/api/v1/session")
        .json(&json!({"username": "nobody", "password": PASSWORD}))
        .send()
        .await;
    assert_eq!(
        unknown.problem(StatusCode::UNAUTHORIZED)["detail"],
        "wrong name or password"
    );

    let r = h
        .post("/api/v1/session")
        .json(&json!({"username": "admin", "password": PASSWORD}))
        .send()
        .await;
    let body = r.ok(StatusCode::OK);
    assert_eq!(body["admin"]["username"], "admin");
    let csrf = body["csrf_token"].as_str().unwrap().to_owned();
    assert_eq!(csrf.len(), 32); // 24 random bytes, base64url
    let set = r.header("set-cookie").unwrap();
    let mut parts = set.split("; ");
    let cookie = parts.next().unwrap().to_owned();
    let id = cookie.strip_prefix("switchyard_session=").unwrap();
    assert_eq!(id.len(), 43); // 32 random bytes
    let attrs: BTreeSet<&str> = parts.collect();
    assert_eq!(
        attrs,
        BTreeSet::from(["Path=/", "HttpOnly", "SameSite=Strict", "Max-Age=43200"])
    );

    let s = common::Session {
        cookie: cookie.clone(),
        csrf: csrf.clone(),
    };
    let me = h
        .get("/api/v1/session")
        .cookie(&s)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(me["admin"]["username"], "admin");
    assert_eq!(me["csrf_token"], csrf.as_str());
    h.get("/api/v1/session")
        .send()
        .await
        .problem(StatusCode::UNAUTHORIZED);
    h.get("/api/v1/session")
        .header("cookie", "switchyard_session=forged")
        .send()
        .await
        .problem(StatusCode::UNAUTHORIZED);

    // Logging out is a write: it needs the CSRF token too.
    h.delete("/api/v1/session")
        .cookie(&s)
        .send()
        .await
        .problem(StatusCode::FORBIDDEN);
    let out = h.delete("/api/v1/session").session(&s).send().await;
    assert_eq!(out.status, StatusCode::NO_CONTENT);
    assert_eq!(
        out.header("set-cookie").as_deref(),
        Some("switchyard_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")
    );
    h.get("/api/v1/session")
        .cookie(&s)
        .send()
        .await
        .problem(StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn the_cookie_is_secure_behind_https() {
    let h = Harness::with(PanelConfig {
        public_url: Some("https://panel.example.com".into()),
        ..PanelConfig::default()
    })
    .await;
    let r = h
        .post("/api/v1/session")
        .json(&json!({"username": "admin", "password": PASSWORD}))
        .send()
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let set = r.header("set-cookie").unwrap();
    let attrs: BTreeSet<&str> = set.split("; ").skip(1).collect();
    assert_eq!(
        attrs,
        BTreeSet::from([
            "Path=/",
            "HttpOnly",
            "SameSite=Strict",
            "Max-Age=43200",
            "Secure"
        ])
    );
}

#[tokio::test]
async fn failed_logins_from_one_address_are_limited() {
    let h = Harness::with(PanelConfig {
        public_url: Some("http://panel.test".into()),
        auth: AuthSettings {
            login_burst: 3,
            login_refill_s: 30,
            ..AuthSettings::default()
        },
        ..PanelConfig::default()
    })
    .await;
    let attempt = |addr: &'static str, password: &'static str| {
        h.post("/api/v1/session")
            .peer(addr)
            .json(&json!({"username": "admin", "password": password}))
            .send()
    };
    for _ in 0..3 {
        attempt("192.0.2.7:4000", "wrong")
            .await
            .problem(StatusCode::UNAUTHORIZED);
    }
    // The burst is spent: even the right password waits, from any port of the address.
    let limited = attempt("192.0.2.7:4001", PASSWORD).await;
    let p = limited.problem(StatusCode::TOO_MANY_REQUESTS);
    let wait: u64 = limited.header("retry-after").unwrap().parse().unwrap();
    // 30 s less the time the three failures took (whole seconds, rounded up).
    assert!((28..=30).contains(&wait), "Retry-After: {wait}");
    assert_eq!(
        p["detail"],
        format!("too many failed logins from this address; try again in {wait} s")
    );
    // Another address is not held back.
    attempt("192.0.2.8:4000", PASSWORD).await.ok(StatusCode::OK);
}

#[tokio::test]
async fn cookie_writes_need_the_csrf_token_and_api_tokens_do_not() {
    let h = Harness::new().await;
    let s = h.login().await;
    h.get("/api/v1/clusters")
        .cookie(&s)
        .send()
        .await
        .ok(StatusCode::OK);
    let p = h
        .post("/api/v1/clusters")
        .cookie(&s)
        .json(&json!({"name": "main"}))
        .send()
        .await
        .problem(StatusCode::FORBIDDEN);
    assert_eq!(
        p["detail"],
        "a write with a session cookie needs the session's X-CSRF-Token header"
    );
    h.post("/api/v1/clusters")
        .cookie(&s)
        .header("x-csrf-token", "not-the-token")
        .json(&json!({"name": "main"}))
        .send()
        .await
        .problem(StatusCode::FORBIDDEN);
    let c = h
        .post("/api/v1/clusters")
        .session(&s)
        .json(&json!({"name": "main"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    let path = format!("/api/v1/clusters/{}", c["id"]);
    h.put(&path)
        .cookie(&s)
        .json(&json!({"name": "renamed"}))
        .send()
        .await
        .problem(StatusCode::FORBIDDEN);
    h.put(&path)
        .session(&s)
        .json(&json!({"name": "renamed"}))
        .send()
        .await
        .ok(StatusCode::OK);
    h.delete(&path)
        .cookie(&s)
        .send()
        .await
        .problem(StatusCode::FORBIDDEN);
    h.delete(&path)
        .session(&s)
        .send()
        .await
        .ok(StatusCode::NO_CONTENT);

    // API tokens: the secret once, then only its listing.
    let created = h
        .post("/api/v1/tokens")
        .session(&s)
        .json(&json!({"name": "ci"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    let secret = created["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("sy_"), "{secret}");
    assert_eq!(created["name"], "ci");
    assert_eq!(created["last_used_ms"], Value::Null);
    let id = created["id"].as_i64().unwrap();
    // No CSRF token with a bearer token.
    h.post("/api/v1/clusters")
        .bearer(&secret)
        .json(&json!({"name": "by-token"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    let list = h.get("/api/v1/tokens").bearer(&secret).send().await;
    let listed = list.ok(StatusCode::OK);
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["id"], id);
    assert_eq!(listed[0]["name"], "ci");
    assert_eq!(listed[0].get("secret"), None);
    let text = list.text();
    assert!(!text.contains(&secret), "{text}");
    assert!(!text.contains(&hash_token(&secret)), "{text}");
    assert!(listed[0]["last_used_ms"].as_i64().is_some(), "{listed}");

    h.post("/api/v1/tokens")
        .session(&s)
        .json(&json!({"name": ""}))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "name");
    h.delete("/api/v1/tokens/999")
        .bearer(&secret)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);
    h.delete(&format!("/api/v1/tokens/{id}"))
        .session(&s)
        .send()
        .await
        .ok(StatusCode::NO_CONTENT);
    h.get("/api/v1/clusters")
        .bearer(&secret)
        .send()
        .await
        .problem(StatusCode::UNAUTHORIZED);
    h.get("/api/v1/clusters")
        .header("authorization", "Basic YWRtaW46eA==")
        .send()
        .await
        .problem(StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn clusters_and_servers_validate_and_name_the_field() {
    let h = Harness::new().await;
    let t = h.token().await;
    let c = h
        .post("/api/v1/clusters")
        .bearer(&t)
        .json(&json!({"name": "main"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    assert_eq!(c["name"], "main");
    let cid = c["id"].as_i64().unwrap();
    h.post("/api/v1/clusters")
        .bearer(&t)
        .json(&json!({"name": "main"}))
        .send()
        .await
        .field_error(StatusCode::CONFLICT, "name");
    h.post("/api/v1/clusters")
        .bearer(&t)
        .json(&json!({"name": " "}))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "name");
    // Unknown fields, not JSON, no body.
    let p = h
        .post("/api/v1/clusters")
        .bearer(&t)
        .json(&json!({"name": "x", "colour": "red"}))
        .send()
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("unknown field `colour`"),
        "{p}"
    );
    assert_eq!(p["errors"][0]["field"], "colour", "{p}");
    h.post("/api/v1/clusters")
        .bearer(&t)
        .json(&json!({}))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "name");
    h.post("/api/v1/clusters")
        .bearer(&t)
        .raw("text/plain", "name=x")
        .send()
        .await
        .problem(StatusCode::UNSUPPORTED_MEDIA_TYPE);
    h.post("/api/v1/clusters")
        .bearer(&t)
        .raw("application/json", "{\"name\":")
        .send()
        .await
        .problem(StatusCode::BAD_REQUEST);
    h.post("/api/v1/clusters")
        .bearer(&t)
        .send()
        .await
        .problem(StatusCode::UNSUPPORTED_MEDIA_TYPE);
    // Past the 1 MiB body limit.
    let big = json!({"name": "x", "pad": "y".repeat(2 << 20)});
    h.post("/api/v1/clusters")
        .bearer(&t)
        .json(&big)
        .send()
        .await
        .problem(StatusCode::PAYLOAD_TOO_LARGE);

    let got = h
        .get(&format!("/api/v1/clusters/{cid}"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(got, c);
    let p = h
        .get("/api/v1/clusters/999")
        .bearer(&t)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);
    assert_eq!(p["detail"], "cluster not found");
    h.put("/api/v1/clusters/999")
        .bearer(&t)
        .json(&json!({"name": "x"}))
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);
    h.get("/api/v1/clusters/abc")
        .bearer(&t)
        .send()
        .await
        .problem(StatusCode::BAD_REQUEST);
    h.get("/api/v1/nothing-here")
        .bearer(&t)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);

    // Servers.
    let server = json!({"cluster_id": cid, "name": "ny-1", "address": "203.0.113.1"});
    let s = h
        .post("/api/v1/servers")
        .bearer(&t)
        .json(&server)
        .send()
        .await
        .ok(StatusCode::CREATED);
    assert_eq!(s["state"], "pending");
    assert_eq!(s["joined"], false);
    assert_eq!(s["allow_private_destinations"], false);
    let sid = s["id"].as_i64().unwrap();
    h.post("/api/v1/servers")
        .bearer(&t)
        .json(&server)
        .send()
        .await
        .field_error(StatusCode::CONFLICT, "name");
    h.post("/api/v1/servers")
        .bearer(&t)
        .json(&json!({"cluster_id": cid, "name": "b", "address": "-bad-"}))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "address");
    h.post("/api/v1/servers")
        .bearer(&t)
        .json(&json!({"cluster_id": 999, "name": "b", "address": "b.example.com"}))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "cluster_id");
    let listed = h
        .get(&format!("/api/v1/servers?cluster_id={cid}"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["id"], sid);
    let changed = h
        .put(&format!("/api/v1/servers/{sid}"))
        .bearer(&t)
        .json(
            &json!({"cluster_id": cid, "name": "ny-2", "address": "ny.example.com",
            "allow_private_destinations": true}),
        )
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(changed["name"], "ny-2");
    assert_eq!(changed["address"], "ny.example.com");
    assert_eq!(changed["allow_private_destinations"], true);
    let join = h
        .post(&format!("/api/v1/servers/{sid}/join"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::CREATED);
    let token = join["token"].as_str().unwrap();
    assert!(token.starts_with("join-"), "{join}");
    assert_eq!(join["command"], format!("switchyard node join {token}"));
    h.post("/api/v1/servers/999/join")
        .bearer(&t)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);

    // A cluster with servers is not deleted.
    h.delete(&format!("/api/v1/clusters/{cid}"))
        .bearer(&t)
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "id");
    h.delete(&format!("/api/v1/servers/{sid}"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::NO_CONTENT);
    h.get(&format!("/api/v1/servers/{sid}"))
        .bearer(&t)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);
    h.delete(&format!("/api/v1/clusters/{cid}"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn inbounds_validate_and_the_first_one_gets_the_default_route() {
    let h = Harness::new().await;
    let t = h.token().await;
    let (cid, sid, first) = seed(&h, &t).await;
    let routes = h
        .get(&format!("/api/v1/clusters/{cid}/routes"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(routes["routes"].as_array().unwrap().len(), 1);
    assert_eq!(routes["routes"][0]["is_default"], true);
    assert_eq!(routes["routes"][0]["inbound_ids"], json!([first]));
    assert_eq!(routes["unattached_inbound_ids"], json!([]));
    assert_eq!(routes["warning"], Value::Null);

    let bad = |body: Value, field: &'static str| {
        let h = &h;
        let t = &t;
        async move {
            h.post("/api/v1/inbounds")
                .bearer(t)
                .json(&body)
                .send()
                .await
                .field_error(StatusCode::UNPROCESSABLE_ENTITY, field);
        }
    };
    bad(vless(sid, "x", 0), "port").await;
    bad(
        json!({"server_id": sid, "name": "ss", "protocol": "shadowsocks", "port": 8388}),
        "method",
    )
    .await;
    bad(
        json!({"server_id": sid, "name": "ss", "protocol": "shadowsocks", "port": 8388,
            "method": "aes-128-gcm"}),
        "method",
    )
    .await;
    bad(
        json!({"server_id": sid, "name": "ws", "protocol": "vless", "port": 80,
            "transport": {"type": "ws", "path": "nope"}}),
        "transport.path",
    )
    .await;
    bad(
        json!({"server_id": sid, "name": "t", "protocol": "trojan", "port": 80,
            "security": {"type": "tls", "certificate": {"source": "files", "cert": "c.pem", "key": "/k.pem"}}}),
        "security.certificate.cert",
    )
    .await;
    bad(
        json!({"server_id": sid, "name": "c", "protocol": "vless", "port": 81, "coefficient": 0.0}),
        "coefficient",
    )
    .await;
    bad(
        json!({"server_id": sid, "name": "h", "protocol": "vless", "port": 81, "host": "a..b"}),
        "host",
    )
    .await;
    // A port past u16 is refused by the JSON reader, which names it too.
    let p = h
        .post("/api/v1/inbounds")
        .bearer(&t)
        .json(&vless(sid, "x", 443).as_object().map_or(json!({}), |o| {
            let mut o = o.clone();
            o.insert("port".into(), json!(70000));
            Value::Object(o)
        }))
        .send()
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(p["errors"][0]["field"], "port", "{p}");
    bad(
        json!({"server_id": sid, "name": "ws", "protocol": "vless", "port": 80,
            "transport": {"type": "ws"}}),
        "transport.path",
    )
    .await;
    bad(
        json!({"server_id": sid, "name": "p", "protocol": "wireguard", "port": 80}),
        "protocol",
    )
    .await;
    h.post("/api/v1/inbounds")
        .bearer(&t)
        .json(&vless(sid, "again", 443))
        .send()
        .await
        .field_error(StatusCode::CONFLICT, "port");
    // An unknown server is a bad field, with a certificate to make or without.
    bad(vless(999, "x", 443), "server_id").await;
    bad(
        json!({"server_id": 999, "name": "x", "protocol": "vless", "port": 443}),
        "server_id",
    )
    .await;

    // A second inbound lands in no route.
    let ss = h
        .post("/api/v1/inbounds")
        .bearer(&t)
        .json(
            &json!({"server_id": sid, "name": "🇩🇪 Frankfurt", "protocol": "shadowsocks",
            "port": 8388, "method": "2022-blake3-aes-128-gcm"}),
        )
        .send()
        .await
        .ok(StatusCode::CREATED);
    assert_eq!(ss["route_id"], Value::Null);
    assert_eq!(ss["coefficient"], 1.0);
    let routes = h
        .get(&format!("/api/v1/clusters/{cid}/routes"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(routes["routes"][0]["inbound_ids"], json!([first]));
    assert_eq!(routes["unattached_inbound_ids"], json!([ss["id"]]));
    assert_eq!(routes["warning"], UNATTACHED);
    h.get("/api/v1/clusters/999/routes")
        .bearer(&t)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);

    let listed = h
        .get(&format!("/api/v1/inbounds?server_id={sid}"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(listed.as_array().unwrap().len(), 2);
    let changed = h
        .put(&format!("/api/v1/inbounds/{first}"))
        .bearer(&t)
        .json(&vless(sid, "🇺🇸 NYC", 8443))
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(changed["name"], "🇺🇸 NYC");
    assert_eq!(changed["port"], 8443);
    h.put("/api/v1/inbounds/999")
        .bearer(&t)
        .json(&vless(sid, "x", 1000))
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);
    h.delete(&format!("/api/v1/inbounds/{}", ss["id"]))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::NO_CONTENT);
    h.get(&format!("/api/v1/inbounds/{}", ss["id"]))
        .bearer(&t)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn users_have_a_computed_status_and_can_be_reset_and_revoked() {
    let h = Harness::new().await;
    let t = h.token().await;
    let now = h.state.now();
    let alice = create_user(&h, &t, json!({"username": "alice"})).await;
    assert_eq!(alice["status"], "active");
    assert_eq!(alice["enabled"], true);
    assert_eq!(alice["traffic_limit"], Value::Null);
    assert_eq!(alice["used_up"], 0);
    assert_eq!(alice["reset_strategy"], "none");
    h.post("/api/v1/users")
        .bearer(&t)
        .json(&json!({"username": "alice"}))
        .send()
        .await
        .field_error(StatusCode::CONFLICT, "username");
    h.post("/api/v1/users")
        .bearer(&t)
        .json(&json!({"username": "alice bob"}))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "username");
    h.post("/api/v1/users")
        .bearer(&t)
        .json(&json!({"username": "x", "on_hold_days": 0}))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "on_hold_days");
    h.post("/api/v1/users")
        .bearer(&t)
        .json(&json!({"username": "x", "expires_ms": -1}))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "expires_ms");

    // A limit of 0 bytes is used up from the start (used 0 >= limit 0).
    let status = |body: Value| {
        let h = &h;
        let t = &t;
        async move { create_user(h, t, body).await["status"].clone() }
    };
    assert_eq!(
        status(json!({"username": "zero", "traffic_limit": 0})).await,
        "limited"
    );
    assert_eq!(
        status(json!({"username": "some", "traffic_limit": 1000})).await,
        "active"
    );
    assert_eq!(
        status(json!({"username": "off", "enabled": false})).await,
        "disabled"
    );
    assert_eq!(
        status(json!({"username": "old", "expires_ms": now - 1000})).await,
        "expired"
    );
    assert_eq!(
        status(json!({"username": "held", "on_hold_days": 30})).await,
        "on_hold"
    );
    // Disabled wins over everything.
    assert_eq!(
        status(
            json!({"username": "all", "enabled": false, "traffic_limit": 0,
            "expires_ms": 0})
        )
        .await,
        "disabled"
    );

    let page = h
        .get("/api/v1/users?search=o&limit=2")
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    // The total is what the search names (4 of the 7 users have an "o"), for paging.
    assert_eq!(page["total"], 4);
    assert_eq!(page["users"].as_array().unwrap().len(), 2);
    let all = h
        .get("/api/v1/users")
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    let with_o = all["users"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["username"].as_str().unwrap().contains('o'))
        .count();
    assert_eq!((all["total"].as_u64(), with_o), (Some(7), 4));
    h.get("/api/v1/users?limit=x")
        .bearer(&t)
        .send()
        .await
        .problem(StatusCode::BAD_REQUEST);

    let id = alice["id"].as_i64().unwrap();
    let path = format!("/api/v1/users/{id}");
    let changed = h
        .put(&path)
        .bearer(&t)
        .json(&json!({"username": "alice", "traffic_limit": 0, "note": "over"}))
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(changed["status"], "limited");
    assert_eq!(changed["note"], "over");
    h.put("/api/v1/users/999")
        .bearer(&t)
        .json(&json!({"username": "ghost"}))
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);
    h.put(&path)
        .bearer(&t)
        .json(&json!({"username": "zero"}))
        .send()
        .await
        .field_error(StatusCode::CONFLICT, "username");

    let reset = h
        .post(&format!("{path}/reset-usage"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(reset["used_up"], 0);
    assert_eq!(reset["used_down"], 0);
    assert!(reset["period_started_ms"].as_i64().unwrap() >= now);
    h.post("/api/v1/users/999/reset-usage")
        .bearer(&t)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);

    let old = alice["subscription_path"].as_str().unwrap().to_owned();
    assert!(old.starts_with("/sub/"), "{old}");
    h.get(&old).send().await.ok(StatusCode::OK);
    let revoked = h
        .post(&format!("{path}/revoke-subscription"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    let new = revoked["subscription_path"].as_str().unwrap().to_owned();
    assert_ne!(new, old);
    let p = h.get(&old).send().await.problem(StatusCode::NOT_FOUND);
    assert_eq!(p["detail"], "no such subscription");
    h.get(&new).send().await.ok(StatusCode::OK);
    h.post("/api/v1/users/999/revoke-subscription")
        .bearer(&t)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);

    h.delete(&path)
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::NO_CONTENT);
    h.get(&path)
        .bearer(&t)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);
    h.get(&new).send().await.problem(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn read_apis_never_show_secrets_and_the_subscription_shows_the_users_own() {
    use switchyard_panel::store::TunnelStore;

    let h = Harness::new().await;
    let t = h.token().await;
    let (cid, sid, _) = seed(&h, &t).await;
    // Each protocol first in a cluster of its own, so each is in a (default) route and
    // in the subscription.
    let ss_server = server_in_new_cluster(&h, &t, "ss").await;
    h.post("/api/v1/inbounds")
        .bearer(&t)
        .json(
            &json!({"server_id": ss_server, "name": "ss", "protocol": "shadowsocks",
            "port": 8388, "method": "2022-blake3-aes-128-gcm"}),
        )
        .send()
        .await
        .ok(StatusCode::CREATED);
    let trojan_server = server_in_new_cluster(&h, &t, "trojan").await;
    h.post("/api/v1/inbounds")
        .bearer(&t)
        .json(
            &json!({"server_id": trojan_server, "name": "trojan", "protocol": "trojan",
            "port": 8443, "security": {"type": "tls", "certificate": {"source": "self_signed"}}}),
        )
        .send()
        .await
        .ok(StatusCode::CREATED);
    let reality_server = server_in_new_cluster(&h, &t, "reality").await;
    let reality = h
        .post("/api/v1/inbounds")
        .bearer(&t)
        .json(
            &json!({"server_id": reality_server, "name": "reality", "protocol": "vless",
            "port": 443, "flow": "xtls-rprx-vision", "security": {"type": "reality",
            "dest": "www.example.com:443", "server_names": ["www.example.com"]}}),
        )
        .send()
        .await
        .ok(StatusCode::CREATED);
    // A tunnel between two of them: its first profile REALITY by default, its keys
    // the panel's.
    let tunnel = h
        .post("/api/v1/tunnels")
        .bearer(&t)
        .json(&json!({"name": "exit", "relay_server_id": reality_server,
            "origin_server_ids": [ss_server]}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    assert_eq!(tunnel["profiles"][0]["security"], "reality");
    let tunnel_id = tunnel["id"].as_i64().unwrap();
    let tunnel_keys = h
        .store
        .tunnel_reality_keys(tunnel_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        tunnel["reality_public_key"],
        tunnel_keys.public_key.as_str()
    );
    let user = create_user(&h, &t, json!({"username": "alice"})).await;
    let token = user["subscription_path"]
        .as_str()
        .unwrap()
        .trim_start_matches("/sub/");
    let (_, creds) = h
        .state
        .store()
        .user_by_token(token, h.state.now())
        .await
        .unwrap()
        .unwrap();
    let mut secrets = Vec::new();
    for c in h.state.store().clusters().await.unwrap() {
        secrets.extend(h.state.store().cluster_inbounds(c.id).await.unwrap());
    }
    assert_eq!(secrets.len(), 4);
    let ss_key = secrets
        .iter()
        .find_map(|(_, s)| s.ss_server_key.clone())
        .unwrap();
    let reality_private = secrets
        .iter()
        .find_map(|(_, s)| s.reality_private_key.clone())
        .unwrap();
    let reality_public = reality["reality_public_key"].as_str().unwrap().to_owned();
    assert_eq!(
        switchyard_proto::reality::PrivateKey::parse(&reality_private)
            .unwrap()
            .public_key()
            .encode(),
        reality_public
    );
    // Its raw bytes, in the other base64 alphabet, are not shown either.
    let reality_private_std = base64::engine::general_purpose::STANDARD.encode(
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&reality_private)
            .unwrap(),
    );
    assert!(!reality.to_string().contains(&reality_private), "{reality}");
    let hash = h
        .state
        .store()
        .admin_by_username("admin")
        .await
        .unwrap()
        .unwrap()
        .1;

    let mut forbidden = vec![
        ss_key.clone(),
        creds.vless_uuid.clone(),
        creds.trojan_password.clone(),
        creds.ss_seed.clone(),
        hash.clone(),
        "PRIVATE KEY".to_owned(),
        "$argon2".to_owned(),
    ];
    forbidden.push(reality_private.clone());
    forbidden.push(reality_private_std.trim_end_matches('=').to_owned());
    forbidden.push(tunnel_keys.private_key.clone());
    forbidden.push(
        base64::engine::general_purpose::STANDARD
            .encode(
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(&tunnel_keys.private_key)
                    .unwrap(),
            )
            .trim_end_matches('=')
            .to_owned(),
    );
    forbidden.push(tunnel_keys.short_id.clone());
    for (_, s) in &secrets {
        forbidden.extend(s.tls_key_pem.clone());
    }
    let s = h.login().await;
    let reads = [
        "/api/v1/inbounds".to_owned(),
        format!("/api/v1/inbounds?cluster_id={cid}"),
        "/api/v1/servers".to_owned(),
        format!("/api/v1/servers/{sid}"),
        "/api/v1/users".to_owned(),
        format!("/api/v1/users/{}", user["id"]),
        format!("/api/v1/clusters/{cid}/routes"),
        "/api/v1/tokens".to_owned(),
        "/api/v1/session".to_owned(),
        "/api/v1/tunnels".to_owned(),
        format!("/api/v1/tunnels/{tunnel_id}"),
        "/api/v1/tunnels/status".to_owned(),
        format!("/api/v1/tunnels/{tunnel_id}/status"),
    ];
    for path in reads {
        let r = h.get(&path).cookie(&s).send().await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.text());
        let text = r.text();
        for f in &forbidden {
            assert!(!text.contains(f.as_str()), "{path} shows a secret: {text}");
        }
    }
    for i in secrets.iter().map(|(i, _)| i.id) {
        let text = h
            .get(&format!("/api/v1/inbounds/{i}"))
            .bearer(&t)
            .send()
            .await
            .text();
        for f in &forbidden {
            assert!(
                !text.contains(f.as_str()),
                "inbound {i} shows a secret: {text}"
            );
        }
    }
    // The write answers too.
    let text = h
        .post(&format!("/api/v1/users/{}/reset-usage", user["id"]))
        .bearer(&t)
        .send()
        .await
        .text();
    assert!(!text.contains(&creds.vless_uuid), "{text}");

    // The user's own subscription carries their credentials (and no private key).
    let sub = h.get(&format!("/sub/{token}?format=sing-box")).send().await;
    assert_eq!(sub.status, StatusCode::OK);
    let text = sub.text();
    assert!(text.contains(&creds.vless_uuid), "{text}");
    assert!(text.contains(&creds.trojan_password), "{text}");
    assert!(text.contains(&ss_key), "{text}");
    assert!(!text.contains("PRIVATE KEY"), "{text}");
    // In every format (and the page) the REALITY entry has the public key, never the
    // private one.
    for format in ["sing-box", "clash", "xray", "links"] {
        let text = h
            .get(&format!("/sub/{token}?format={format}"))
            .send()
            .await
            .text();
        let text = if format == "links" {
            String::from_utf8(
                base64::engine::general_purpose::STANDARD
                    .decode(text.trim())
                    .unwrap(),
            )
            .unwrap()
        } else {
            text
        };
        assert!(text.contains(&reality_public), "{format}: {text}");
        for f in [&reality_private, &reality_private_std] {
            assert!(
                !text.contains(f.trim_end_matches('=')),
                "{format} shows the private key"
            );
        }
    }
    let page = h
        .get(&format!("/sub/{token}"))
        .header("accept", "text/html")
        .send()
        .await
        .text();
    assert!(page.contains(&reality_public), "{page}");
    assert!(!page.contains(&reality_private), "{page}");
}

#[tokio::test]
async fn subscriptions_come_as_links_or_sing_box_json() {
    let h = Harness::new().await;
    let t = h.token().await;
    seed(&h, &t).await;
    let limit = 5_000_000_000u64;
    let expires = 1_893_456_000_000i64; // 2030-01-01
    let user = create_user(
        &h,
        &t,
        json!({"username": "alice", "traffic_limit": limit, "expires_ms": expires}),
    )
    .await;
    let path = user["subscription_path"].as_str().unwrap().to_owned();
    let (_, creds) = h
        .state
        .store()
        .user_by_token(path.trim_start_matches("/sub/"), h.state.now())
        .await
        .unwrap()
        .unwrap();

    let links = h.get(&format!("{path}?format=links")).send().await;
    assert_eq!(links.status, StatusCode::OK, "{}", links.text());
    assert_eq!(
        links.header("content-type").as_deref(),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(
        links.header("subscription-userinfo").as_deref(),
        Some(format!("upload=0; download=0; total={limit}; expire=1893456000").as_str())
    );
    assert_eq!(
        links.header("profile-update-interval").as_deref(),
        Some("12")
    );
    assert_eq!(links.header("cache-control").as_deref(), Some("no-store"));
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(links.text().trim())
        .unwrap();
    let decoded = String::from_utf8(decoded).unwrap();
    assert!(decoded.starts_with("vless://"), "{decoded}");
    let entries = switchyard_proto::share::parse_subscription(&links.text()).unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].name, "🇺🇸 New York");
    assert_eq!(entries[0].server, "203.0.113.1");
    assert_eq!(entries[0].port, 443);
    assert!(
        matches!(&entries[0].protocol, EntryProtocol::Vless { uuid, .. } if *uuid == creds.vless_uuid)
    );
    // Links cannot pin a self-signed certificate.
    assert!(entries[0].tls.as_ref().unwrap().insecure);
    // Another User-Agent gets links too.
    let other = h
        .get(&path)
        .header("user-agent", "v2rayNG/1.8")
        .send()
        .await;
    assert_eq!(other.text(), links.text());

    let json = h.get(&format!("{path}?format=sing-box")).send().await;
    assert_eq!(json.status, StatusCode::OK);
    assert_eq!(
        json.header("content-type").as_deref(),
        Some("application/json; charset=utf-8")
    );
    let config = json.json();
    assert!(config["outbounds"].is_array(), "{config}");
    assert!(json.text().contains("🇺🇸 New York"));
    assert!(json.text().contains("BEGIN CERTIFICATE"));
    // sing-box's apps get JSON without asking; its own apps a VPN config of the same
    // servers (subscriptions.md, "sing-box's own apps").
    for ua in ["sing-box 1.14.4", "SFA/1.11", "SFI/1.11"] {
        let got = h.get(&path).header("user-agent", ua).send().await.json();
        assert_eq!(got["outbounds"], config["outbounds"], "{ua}");
        let tun = got["inbounds"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["type"] == "tun");
        assert_eq!(tun, ua.starts_with("SF"), "{ua}: {got}");
        if !tun {
            assert_eq!(got, config, "{ua}");
        }
    }

    let p = h
        .get(&format!("{path}?format=json"))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "format");
    assert_eq!(
        p["detail"],
        "format: \"json\" is not one of sing-box, clash, xray, links"
    );
    h.get("/sub/no-such-token")
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);

    // Unlimited, never expiring: zeros.
    let bob = create_user(&h, &t, json!({"username": "bob"})).await;
    let r = h
        .get(bob["subscription_path"].as_str().unwrap())
        .send()
        .await;
    assert_eq!(
        r.header("subscription-userinfo").as_deref(),
        Some("upload=0; download=0; total=0; expire=0")
    );
}

/// Every route the router serves, as the OpenAPI document must list it.
const ROUTES: [(&str, &[&str]); 59] = [
    ("/api/v1/session", &["delete", "get", "post"]),
    ("/api/v1/setup", &["get"]),
    ("/api/v1/tokens", &["get", "post"]),
    ("/api/v1/tokens/{id}", &["delete"]),
    ("/api/v1/account/password", &["put"]),
    ("/api/v1/admins", &["get", "post"]),
    ("/api/v1/admins/{id}", &["delete", "get", "put"]),
    ("/api/v1/admins/{id}/password", &["put"]),
    ("/api/v1/audit", &["get"]),
    ("/api/v1/sessions", &["get"]),
    ("/api/v1/sessions/{id}", &["delete"]),
    ("/api/v1/clusters", &["get", "post"]),
    ("/api/v1/clusters/{id}", &["delete", "get", "put"]),
    ("/api/v1/clusters/{id}/routes", &["get", "post"]),
    ("/api/v1/clusters/{id}/routes/order", &["put"]),
    ("/api/v1/clusters/{id}/routing", &["get", "put"]),
    ("/api/v1/dashboard", &["get"]),
    ("/api/v1/users/{id}/routing", &["get", "put"]),
    ("/api/v1/templates/{format}", &["get", "put"]),
    ("/api/v1/routes/{id}", &["delete", "get", "put"]),
    ("/api/v1/routes/{id}/move", &["post"]),
    ("/api/v1/inbounds/{id}/route", &["put"]),
    ("/api/v1/plans", &["get", "post"]),
    ("/api/v1/plans/{id}", &["delete", "get", "put"]),
    ("/api/v1/plans/{id}/users", &["post"]),
    ("/api/v1/users/{id}/devices", &["get"]),
    ("/api/v1/users/{id}/devices/{device}", &["delete"]),
    ("/api/v1/servers", &["get", "post"]),
    ("/api/v1/servers/{id}", &["delete", "get", "put"]),
    ("/api/v1/servers/{id}/join", &["post"]),
    ("/api/v1/servers/{id}/replace", &["post"]),
    ("/api/v1/servers/{id}/ssh-install", &["get", "post"]),
    ("/api/v1/servers/{id}/upgrade", &["get", "post"]),
    ("/api/v1/servers/upgrade", &["get", "post"]),
    ("/api/v1/servers/{id}/history", &["get"]),
    ("/api/v1/inbounds", &["get", "post"]),
    ("/api/v1/inbounds/{id}", &["delete", "get", "put"]),
    ("/api/v1/users", &["get", "post"]),
    ("/api/v1/users/bulk", &["post"]),
    ("/api/v1/users/{id}", &["delete", "get", "put"]),
    ("/api/v1/users/{id}/reset-usage", &["post"]),
    ("/api/v1/users/{id}/revoke-subscription", &["post"]),
    ("/api/v1/users/{id}/subscription", &["get"]),
    ("/api/v1/users/{id}/subscription.svg", &["get"]),
    ("/api/v1/webhooks", &["get", "post"]),
    ("/api/v1/webhooks/{id}", &["delete", "get", "put"]),
    ("/api/v1/webhooks/{id}/deliveries", &["get"]),
    (
        "/api/v1/webhooks/{id}/deliveries/{delivery}/replay",
        &["post"],
    ),
    ("/api/v1/webhooks/{id}/test", &["post"]),
    ("/api/v1/imports/{source}", &["post"]),
    ("/api/v1/tunnels", &["get", "post"]),
    ("/api/v1/tunnels/{id}", &["delete", "get", "put"]),
    ("/api/v1/tunnels/{id}/duplicate", &["post"]),
    ("/api/v1/tunnels/{id}/certificate", &["post"]),
    ("/api/v1/tunnels/status", &["get"]),
    ("/api/v1/tunnels/{id}/status", &["get"]),
    ("/api/v1/tunnels/{id}/reset", &["post"]),
    ("/api/v1/tunnels/{id}/rotate-credentials", &["post"]),
    ("/api/v1/tunnels/{id}/usage", &["get"]),
];

#[tokio::test]
async fn the_openapi_document_lists_every_route() {
    let h = Harness::new().await;
    let r = h.get("/api/openapi.json").send().await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.header("content-type").as_deref(),
        Some("application/json")
    );
    let doc = r.json();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."), "{doc}");
    let mut want: Vec<(String, Vec<String>)> = ROUTES
        .iter()
        .map(|(p, m)| ((*p).to_owned(), m.iter().map(|m| (*m).to_owned()).collect()))
        .collect();
    want.push(("/sub/{token}".into(), vec!["get".into()]));
    want.push(("/sub/{token}/{client}".into(), vec!["get".into()]));
    want.push(("/sub/{name}/{key}/{client}".into(), vec!["get".into()]));
    want.push(("/rules/sing-box/{file}".into(), vec!["get".into()]));
    want.push(("/rules/clash/{file}".into(), vec!["get".into()]));
    want.push(("/rules/xray/{file}".into(), vec!["get".into()]));
    want.sort();
    let mut got: Vec<(String, Vec<String>)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(p, ops)| {
            let mut m: Vec<String> = ops.as_object().unwrap().keys().cloned().collect();
            m.retain(|k| k != "parameters");
            m.sort();
            (p.clone(), m)
        })
        .collect();
    got.sort();
    assert_eq!(got, want);
    // Everything needs a token or a session but logging in and subscriptions.
    assert_eq!(doc["security"], json!([{"token": []}, {"session": []}]));
    assert_eq!(doc["paths"]["/sub/{token}"]["get"]["security"], json!([{}]));
    assert_eq!(
        doc["paths"]["/sub/{token}/{client}"]["get"]["security"],
        json!([{}])
    );
    assert_eq!(
        doc["paths"]["/sub/{name}/{key}/{client}"]["get"]["security"],
        json!([{}])
    );
    assert_eq!(
        doc["paths"]["/api/v1/session"]["post"]["security"],
        json!([{}])
    );
    assert_eq!(
        doc["paths"]["/api/v1/setup"]["get"]["security"],
        json!([{}])
    );
    assert_eq!(doc["paths"]["/api/v1/users"]["get"].get("security"), None);
    // Errors are documented as what they are.
    let responses = &doc["paths"]["/api/v1/inbounds"]["post"]["responses"];
    assert_eq!(
        responses["422"]["content"]["application/problem+json"]["schema"]["$ref"],
        "#/components/schemas/Problem"
    );
    assert_eq!(responses["422"]["content"].get("application/json"), None);
    assert_eq!(
        responses["201"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/Inbound"
    );

    // And the router serves each of them (no 404 from the fallback, no 405).
    let t = h.token().await;
    for (path, methods) in &want {
        let concrete = path.replace("{id}", "1").replace("{token}", "x");
        for m in methods {
            let method = m.to_uppercase().parse().unwrap();
            let r = h.req(method, &concrete).bearer(&t).send().await;
            assert_ne!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{m} {concrete}");
            if r.status == StatusCode::NOT_FOUND {
                assert_ne!(r.json()["detail"], "no such endpoint", "{m} {concrete}");
            }
        }
    }
}

#[tokio::test]
async fn metrics_need_a_token_unless_configured_open() {
    let h = Harness::new().await;
    h.get("/metrics")
        .send()
        .await
        .problem(StatusCode::UNAUTHORIZED);
    let t = h.token().await;
    seed(&h, &t).await;
    let r = h.get("/metrics").bearer(&t).send().await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.header("content-type").as_deref(),
        Some("text/plain; version=0.0.4")
    );
    assert!(
        r.text()
            .contains("switchyard_panel_servers{state=\"pending\"} 1\n"),
        "{}",
        r.text()
    );

    let open = Harness::with(PanelConfig {
        metrics_without_token: true,
        ..PanelConfig::default()
    })
    .await;
    let r = open.get("/metrics").send().await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.text().contains("switchyard_panel_users_online 0\n"));
    assert_eq!(open.get("/healthz").send().await.text(), "ok\n");
}

#[tokio::test]
async fn internal_errors_are_not_shown_to_clients() {
    let h = Harness::new().await;
    let t = h.token().await;
    // An id past i64 is a bad path, not a database error.
    let p = h
        .get("/api/v1/users/999999999999999999999")
        .bearer(&t)
        .send()
        .await
        .problem(StatusCode::BAD_REQUEST);
    let detail = p["detail"].as_str().unwrap();
    assert!(!detail.to_lowercase().contains("sql"), "{detail}");

    let c = h
        .post("/api/v1/clusters")
        .bearer(&t)
        .json(&json!({"name": "main"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    // Break the database under the panel: drop a table behind its back.
    {
        use sqlx::Connection;
        let url = format!("sqlite://{}", h.db.display());
        let mut conn = sqlx::sqlite::SqliteConnection::connect(&url).await.unwrap();
        sqlx::query("DROP TABLE routes")
            .execute(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
    }
    let r = h
        .get(&format!("/api/v1/clusters/{}/routes", c["id"]))
        .bearer(&t)
        .send()
        .await;
    let p = r.problem(StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        p["detail"],
        "internal error; the panel's log has the details"
    );
    let text = r.text().to_lowercase();
    for word in ["sql", "routes", "table", "database"] {
        assert!(!text.contains(word), "{text}");
    }
}
