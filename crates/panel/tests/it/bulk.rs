//! Bulk changes on 10,000 users: previewed with the count (nothing changes, nothing
//! is logged), applied in one transaction (a failure on any user changes none), each
//! action to the exact value, by filter and by ids, recorded in the audit log; the
//! owner's and admins' alone.

use axum::http::StatusCode;
use serde_json::{Value, json};
use sqlx::any::AnyPoolOptions;

use crate::common::Harness;

const USERS: i64 = 10_000;
const DAY: i64 = 86_400_000;

/// Makes 10,000 users in one statement: every third expired yesterday, every third
/// never expires, the rest expire in a year; every other one has a 1 GiB limit.
async fn ten_thousand(h: &Harness) -> i64 {
    let now = switchyard_panel::clock::now_ms();
    let raw = AnyPoolOptions::new()
        .max_connections(1)
        .connect(&format!("sqlite://{}", h.db.display()))
        .await
        .unwrap();
    sqlx::query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1) \
         INSERT INTO users (username, enabled, note, reset_strategy, period_started_ms, \
         subscription_token, vless_uuid, trojan_password, ss_seed, created_ms, token_hash, \
         expires_ms, traffic_limit, used_down) \
         SELECT 'u' || i, 1, '', 'none', 0, 'token-' || i, \
         '00000000-0000-4000-8000-000000000000', 'pw-' || i, \
         'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=', 0, 'hash-' || i, \
         CASE i % 3 WHEN 0 THEN $2 - 86400000 WHEN 1 THEN NULL ELSE $2 + 365 * 86400000 END, \
         CASE i % 2 WHEN 0 THEN 1073741824 ELSE NULL END, 7 FROM n",
    )
    .bind(USERS)
    .bind(now)
    .execute(&raw)
    .await
    .unwrap();
    now
}

async fn bulk(h: &Harness, t: &str, body: Value) -> (StatusCode, Value) {
    let r = h
        .post("/api/v1/users/bulk")
        .bearer(t)
        .json(&body)
        .send()
        .await;
    let v = if r.text().is_empty() {
        Value::Null
    } else {
        r.json()
    };
    (r.status, v)
}

async fn user(h: &Harness, t: &str, name: &str) -> Value {
    let page = h
        .get(&format!("/api/v1/users?search={name}&limit=1000"))
        .bearer(t)
        .send()
        .await
        .ok(StatusCode::OK);
    page["users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["username"] == name)
        .unwrap()
        .clone()
}

#[tokio::test]
async fn bulk_changes_on_ten_thousand_users_are_one_transaction() {
    let h = Harness::new().await;
    let t = h.token().await;
    ten_thousand(&h).await;
    let eu = h
        .post("/api/v1/clusters")
        .bearer(&t)
        .json(&json!({"name": "eu"}))
        .send()
        .await
        .ok(StatusCode::CREATED)["id"]
        .as_i64()
        .unwrap();
    let expired = json!({"status": "expired"});

    // A preview counts and changes nothing (nor is it logged).
    let (s, v) = bulk(&h, &t, json!({"filter": expired, "action": {"type": "extend_expiry", "days": 30}, "preview": true})).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        v,
        json!({"count": 3333, "applied": false, "name": "extend expiry by 30 days: 3333 users"})
    );
    let u3 = user(&h, &t, "u3").await;
    assert_eq!(u3["status"], "expired");

    // Extend: each expiry exactly 30 days later; the never-expiring untouched.
    let (s, v) = bulk(
        &h,
        &t,
        json!({"filter": expired, "action": {"type": "extend_expiry", "days": 30}}),
    )
    .await;
    assert_eq!(
        (s, v["count"].clone(), v["applied"].clone()),
        (StatusCode::OK, json!(3333), json!(true))
    );
    let after = user(&h, &t, "u3").await;
    assert_eq!(
        after["expires_ms"].as_i64().unwrap() - u3["expires_ms"].as_i64().unwrap(),
        30 * DAY
    );
    assert_eq!(after["status"], "active");
    assert_eq!(user(&h, &t, "u1").await["expires_ms"], Value::Null);

    // A failure on any user changes none: every user into eu and a cluster that
    // does not exist fails at the second cluster, after the first was written.
    let (s, v) = bulk(
        &h,
        &t,
        json!({"filter": {}, "action": {"type": "set_clusters", "clusters": [eu, 999_999]}}),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(v["errors"][0]["field"], "action.clusters");
    let in_eu = h
        .get(&format!("/api/v1/users?cluster={eu}&limit=1"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(in_eu["total"], USERS, "everyone is still in every cluster");
    assert!(user(&h, &t, "u10").await["clusters"].is_null());

    // Traffic: limited users get exactly 1 GiB more; unlimited stay unlimited.
    let (s, _) = bulk(&h, &t, json!({"filter": {"search": "u1"}, "action": {"type": "add_traffic", "bytes": 1_073_741_824}})).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        user(&h, &t, "u10").await["traffic_limit"],
        2_147_483_648_u64
    );
    assert_eq!(user(&h, &t, "u11").await["traffic_limit"], Value::Null);
    assert_eq!(
        user(&h, &t, "u20").await["traffic_limit"],
        1_073_741_824_u64
    );

    // By ids: two users off, then usage reset, then deleted.
    let ids = [
        user(&h, &t, "u7").await["id"].clone(),
        user(&h, &t, "u8").await["id"].clone(),
    ];
    let (_, v) = bulk(&h, &t, json!({"ids": ids, "action": {"type": "disable"}})).await;
    assert_eq!(v["count"], 2);
    assert_eq!(user(&h, &t, "u7").await["status"], "disabled");
    assert_eq!(user(&h, &t, "u9").await["enabled"], true);
    let (_, v) = bulk(
        &h,
        &t,
        json!({"ids": ids, "action": {"type": "reset_usage"}}),
    )
    .await;
    assert_eq!(v["count"], 2);
    assert_eq!(user(&h, &t, "u8").await["used_down"], 0);
    assert_eq!(user(&h, &t, "u9").await["used_down"], 7);
    let (_, v) = bulk(
        &h,
        &t,
        json!({"filter": {"status": "disabled"}, "ids": ids, "action": {"type": "delete"}}),
    )
    .await;
    assert_eq!(v["count"], 2);
    let left = h
        .get("/api/v1/users?limit=1")
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(left["total"], USERS - 2);
    // Every user into eu, this time whole.
    let (_, v) = bulk(
        &h,
        &t,
        json!({"filter": {}, "action": {"type": "set_clusters", "clusters": [eu]}}),
    )
    .await;
    assert_eq!(v["count"], USERS - 2);
    assert_eq!(user(&h, &t, "u10").await["clusters"], json!([eu]));

    // Refused: no users named, bad numbers.
    let (s, v) = bulk(&h, &t, json!({"action": {"type": "enable"}})).await;
    assert_eq!(
        (s, v["errors"][0]["field"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!("filter"))
    );
    let (s, v) = bulk(
        &h,
        &t,
        json!({"filter": {}, "action": {"type": "extend_expiry", "days": 0}}),
    )
    .await;
    assert_eq!(
        (s, v["errors"][0]["field"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!("action.days"))
    );

    // The audit log has each applied change with its count, no preview.
    let log = h
        .get("/api/v1/audit?kind=user")
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    let names: Vec<&str> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "bulk")
        .map(|e| e["object"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            format!("put in clusters [{eu}]: 9998 users").as_str(),
            "delete: 2 users",
            "reset usage: 2 users",
            "disable: 2 users",
            "add 1073741824 bytes of traffic: 1112 users",
            "extend expiry by 30 days: 3333 users",
        ]
    );

    // A reseller and a read-only admin may not.
    for role in ["reseller", "read_only"] {
        let name = format!("x{role}").replace('_', "");
        h.post("/api/v1/admins")
            .bearer(&t)
            .json(&json!({"username": name, "password": "a long enough password", "role": role}))
            .send()
            .await
            .ok(StatusCode::CREATED);
        let login = h
            .post("/api/v1/session")
            .json(&json!({"username": name, "password": "a long enough password"}))
            .send()
            .await;
        let csrf = login.json()["csrf_token"].as_str().unwrap().to_owned();
        let cookie = login.header("set-cookie").unwrap();
        let r = h
            .post("/api/v1/users/bulk")
            .header("cookie", cookie.split(';').next().unwrap())
            .header("x-csrf-token", &csrf)
            .json(&json!({"filter": {}, "action": {"type": "delete"}}))
            .send()
            .await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{role}");
    }
}
