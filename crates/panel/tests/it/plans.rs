//! Plans: made and checked by the owner, a user made from one gets its defaults to
//! the day, a reseller lists them and makes users from them within the quota,
//! changing or deleting a plan leaves its users as they are.

use axum::http::StatusCode;
use serde_json::json;

use crate::common::Harness;

const DAY: i64 = 86_400_000;
const GIB: u64 = 1 << 30;

#[tokio::test]
async fn users_are_made_from_plans_to_the_day_and_within_a_resellers_quota() {
    let h = Harness::new().await;
    let t = h.token().await;
    let eu = h
        .post("/api/v1/clusters")
        .bearer(&t)
        .json(&json!({"name": "eu"}))
        .send()
        .await
        .ok(StatusCode::CREATED)["id"]
        .as_i64()
        .unwrap();
    let monthly = json!({"name": "Monthly", "traffic_limit": 100 * GIB,
        "reset_strategy": "month_from_start", "expiry_days": 30, "device_limit": 3,
        "clusters": [eu]});
    let plan = h
        .post("/api/v1/plans")
        .bearer(&t)
        .json(&monthly)
        .send()
        .await
        .ok(StatusCode::CREATED);
    let id = plan["id"].as_i64().unwrap();
    assert_eq!(plan["clusters"], json!([eu]));
    assert_eq!(plan["on_hold"], false);
    h.post("/api/v1/plans")
        .bearer(&t)
        .json(&monthly)
        .send()
        .await
        .field_error(StatusCode::CONFLICT, "name");
    h.post("/api/v1/plans")
        .bearer(&t)
        .json(&json!({"name": "Held", "on_hold": true}))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "on_hold");

    // A user from the plan: its limit, reset, devices, clusters; expiry 30 days on.
    let before = switchyard_panel::clock::now_ms();
    let alice = h
        .post(&format!("/api/v1/plans/{id}/users"))
        .bearer(&t)
        .json(&json!({"username": "alice", "note": "paid"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    let after = switchyard_panel::clock::now_ms();
    assert_eq!(alice["traffic_limit"], 100 * GIB);
    assert_eq!(alice["reset_strategy"], "month_from_start");
    assert_eq!(alice["device_limit"], 3);
    assert_eq!(alice["clusters"], json!([eu]));
    assert_eq!(alice["note"], "paid");
    let expires = alice["expires_ms"].as_i64().unwrap();
    assert!((before + 30 * DAY..=after + 30 * DAY).contains(&expires));
    // On hold: the clock starts at the first connection.
    let held = h
        .post("/api/v1/plans")
        .bearer(&t)
        .json(&json!({"name": "Trial", "expiry_days": 3, "on_hold": true}))
        .send()
        .await
        .ok(StatusCode::CREATED)["id"]
        .as_i64()
        .unwrap();
    let bob = h
        .post(&format!("/api/v1/plans/{held}/users"))
        .bearer(&t)
        .json(&json!({"username": "bob"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    assert_eq!(
        (bob["status"].as_str(), bob["on_hold_days"].as_u64()),
        (Some("on_hold"), Some(3))
    );

    // A reseller lists the plans and makes a user from one, within the quota.
    let quota = json!({"max_users": 1, "max_expiry_days": 30, "clusters": [eu]});
    let ann = h
        .post("/api/v1/admins")
        .bearer(&t)
        .json(&json!({"username": "ann", "password": "a long enough password", "role": "reseller", "quota": quota}))
        .send()
        .await
        .ok(StatusCode::CREATED)["id"]
        .as_i64()
        .unwrap();
    let login = h
        .post("/api/v1/session")
        .json(&json!({"username": "ann", "password": "a long enough password"}))
        .send()
        .await;
    let csrf = login.json()["csrf_token"].as_str().unwrap().to_owned();
    let cookie = login.header("set-cookie").unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let as_ann = |m: axum::http::Method, path: String, body: serde_json::Value| {
        let (cookie, csrf, h) = (cookie.clone(), csrf.clone(), &h);
        async move {
            h.req(m, &path)
                .header("cookie", &cookie)
                .header("x-csrf-token", &csrf)
                .json(&body)
                .send()
                .await
        }
    };
    let listed = h
        .get("/api/v1/plans")
        .header("cookie", &cookie)
        .send()
        .await
        .ok(StatusCode::OK);
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Monthly", "Trial"]);
    let carol = as_ann(
        axum::http::Method::POST,
        format!("/api/v1/plans/{id}/users"),
        json!({"username": "carol"}),
    )
    .await
    .ok(StatusCode::CREATED);
    assert_eq!(carol["admin_id"], ann);
    as_ann(
        axum::http::Method::POST,
        format!("/api/v1/plans/{id}/users"),
        json!({"username": "dave"}),
    )
    .await
    .field_error(StatusCode::FORBIDDEN, "username");
    // The Trial plan names no cluster: a reseller bound to clusters cannot use it.
    h.put(&format!("/api/v1/admins/{ann}"))
        .bearer(&t)
        .json(&json!({"username": "ann", "role": "reseller", "quota": {"clusters": [eu]}}))
        .send()
        .await
        .ok(StatusCode::OK);
    as_ann(
        axum::http::Method::POST,
        format!("/api/v1/plans/{held}/users"),
        json!({"username": "erin"}),
    )
    .await
    .field_error(StatusCode::FORBIDDEN, "clusters");
    let r = as_ann(
        axum::http::Method::POST,
        "/api/v1/plans".into(),
        monthly.clone(),
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);

    // Changing and deleting the plan leaves its users as they are.
    h.put(&format!("/api/v1/plans/{id}"))
        .bearer(&t)
        .json(&json!({"name": "Monthly", "traffic_limit": GIB}))
        .send()
        .await
        .ok(StatusCode::OK);
    h.delete(&format!("/api/v1/plans/{id}"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::NO_CONTENT);
    let alice_now = h
        .get(&format!("/api/v1/users/{}", alice["id"]))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(alice_now["traffic_limit"], 100 * GIB);
    h.post(&format!("/api/v1/plans/{id}/users"))
        .bearer(&t)
        .json(&json!({"username": "frank"}))
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);

    // The audit log names the user made from a plan.
    let log = h
        .get("/api/v1/audit?kind=plan")
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    let made: Vec<(&str, &str)> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "make user")
        .map(|e| (e["admin"].as_str().unwrap(), e["object"].as_str().unwrap()))
        .collect();
    assert_eq!(
        made,
        [("ann", "carol"), ("admin", "bob"), ("admin", "alice")]
    );
}
