//! Admins with roles: every route of the OpenAPI document called with each role's
//! token (a reseller with another reseller's ids), and a reseller's quota enforced
//! to the byte, on SQLite and PostgreSQL (where two writes for the last place race).

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use switchyard_panel::api::policy::{SELF_SERVICE, owner_only};
use switchyard_panel::store::{Changes, SqlStore};

use crate::common::{Harness, one_user};

const PASSWORD: &str = "a long enough password";
const DAY_MS: i64 = 86_400_000;

/// Adds an admin through the API (as the owner) and returns a token of theirs.
async fn admin_with(
    h: &Harness,
    owner: &str,
    name: &str,
    role: &str,
    quota: Value,
) -> (i64, String) {
    let made = h
        .post("/api/v1/admins")
        .bearer(owner)
        .json(&json!({"username": name, "password": PASSWORD, "role": role, "quota": quota}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    assert_eq!(made["role"], role);
    let login = h
        .post("/api/v1/session")
        .json(&json!({"username": name, "password": PASSWORD}))
        .send()
        .await;
    let body = login.ok(StatusCode::OK);
    assert_eq!(body["admin"]["role"], role);
    let cookie = login.header("set-cookie").unwrap();
    let cookie = cookie.split(';').next().unwrap();
    let token = h
        .post("/api/v1/tokens")
        .header("cookie", cookie)
        .header("x-csrf-token", body["csrf_token"].as_str().unwrap())
        .json(&json!({"name": "mine"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    (
        made["id"].as_i64().unwrap(),
        token["secret"].as_str().unwrap().to_owned(),
    )
}

/// Every authenticated operation of the document: method, path pattern and the
/// roles the document says may call it (`x-roles`).
async fn operations(h: &Harness) -> Vec<(Method, String, Vec<String>)> {
    let doc = h.get("/api/openapi.json").send().await.ok(StatusCode::OK);
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        if !path.starts_with("/api/v1/") {
            continue;
        }
        for (m, op) in item.as_object().unwrap() {
            // Public operations say so with an empty requirement.
            let public = op["security"].as_array().is_some_and(|s| {
                s.iter()
                    .any(|r| r.as_object().is_some_and(|o| o.is_empty()))
            });
            if public {
                continue;
            }
            let roles = serde_json::from_value(op["x-roles"].clone())
                .unwrap_or_else(|e| panic!("{m} {path}: x-roles: {e}"));
            out.push((m.to_uppercase().parse().unwrap(), path.clone(), roles));
        }
    }
    assert!(
        out.len() > 60,
        "the document lists {} operations",
        out.len()
    );
    out
}

/// `pattern` with its parameters filled: `{id}` by `id`, the others by a value of
/// their kind.
fn fill(pattern: &str, id: i64) -> String {
    pattern
        .replace("{id}", &id.to_string())
        .replace("{device}", "1")
        .replace("{delivery}", "1")
        .replace("{source}", "marzban")
        .replace("{format}", "sing-box")
}

async fn call(h: &Harness, token: &str, method: &Method, path: &str) -> StatusCode {
    let req = h.req(method.clone(), path).bearer(token);
    let req = if matches!(*method, Method::POST | Method::PUT) {
        req.json(&json!({}))
    } else {
        req
    };
    req.send().await.status
}

async fn story(h: &Harness) {
    let owner = h.token().await;
    let (cluster, alice) = one_user(h, &owner).await;
    let alice_id = alice["id"].as_i64().unwrap();
    let (_, reseller_a) = admin_with(h, &owner, "ann", "reseller", json!({})).await;
    let (b_id, reseller_b) = admin_with(h, &owner, "ben", "reseller", json!({})).await;
    let (_, reader) = admin_with(h, &owner, "rita", "read_only", json!({})).await;
    let (_, admin) = admin_with(h, &owner, "dan", "admin", json!({})).await;
    let bob = h
        .post("/api/v1/users")
        .bearer(&reseller_b)
        .json(&json!({"username": "bob"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    assert_eq!(bob["admin_id"], b_id);
    let bob_id = bob["id"].as_i64().unwrap();
    let ops = operations(h).await;
    let own = |p: &str| SELF_SERVICE.contains(&p);
    let owners = |p: &str| owner_only(p);
    let users = |p: &str| p == "/api/v1/users" || p.starts_with("/api/v1/users/{id}");

    // A reseller: another reseller's user (and the owner's) is not found by any
    // users' route; every other route but the cluster list is forbidden.
    for (m, p, roles) in ops.iter().filter(|(_, p, _)| !own(p)) {
        let documented = roles.iter().any(|r| r.starts_with("reseller"));
        for id in [bob_id, alice_id] {
            let status = call(h, &reseller_a, m, &fill(p, id)).await;
            let want = if users(p) && p != "/api/v1/users" {
                StatusCode::NOT_FOUND
            } else if p == "/api/v1/users"
                || (matches!(p.as_str(), "/api/v1/clusters" | "/api/v1/plans") && *m == Method::GET)
            {
                continue;
            } else if p == "/api/v1/plans/{id}/users" {
                // Open to a reseller; the empty body is refused before any plan is read.
                assert_eq!(
                    call(h, &reseller_a, m, &fill(p, id)).await,
                    StatusCode::UNPROCESSABLE_ENTITY
                );
                continue;
            } else {
                StatusCode::FORBIDDEN
            };
            assert_eq!(status, want, "reseller: {m} {p} with user {id}");
            // The document says what the calls found.
            assert_eq!(
                documented,
                want != StatusCode::FORBIDDEN,
                "x-roles of {m} {p}"
            );
        }
    }
    let listed = h
        .get("/api/v1/users")
        .bearer(&reseller_a)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(listed, json!({"users": [], "total": 0}));
    // A reseller's empty body is refused for the body, not let through.
    assert_eq!(
        call(h, &reseller_a, &Method::POST, "/api/v1/users").await,
        StatusCode::UNPROCESSABLE_ENTITY
    );

    // Read-only: every write is forbidden, every read but the owner's is not.
    for (m, p, roles) in ops.iter().filter(|(_, p, _)| !own(p)) {
        let status = call(h, &reader, m, &fill(p, alice_id)).await;
        assert_eq!(
            roles.iter().any(|r| r == "read_only"),
            status != StatusCode::FORBIDDEN,
            "x-roles of {m} {p}"
        );
        let reads = *m == Method::GET;
        if owners(p) || !reads {
            assert_eq!(status, StatusCode::FORBIDDEN, "read-only: {m} {p}");
        } else {
            assert_ne!(status, StatusCode::FORBIDDEN, "read-only: {m} {p}");
        }
    }

    // An admin: everything but admins and imports (run last: its writes change
    // things).
    for (m, p, roles) in ops.iter().filter(|(_, p, _)| !own(p)) {
        let status = call(h, &admin, m, &fill(p, alice_id)).await;
        assert_eq!(
            roles.iter().any(|r| r == "admin"),
            status != StatusCode::FORBIDDEN,
            "x-roles of {m} {p}"
        );
        if owners(p) {
            assert_eq!(status, StatusCode::FORBIDDEN, "admin: {m} {p}");
        } else {
            assert_ne!(status, StatusCode::FORBIDDEN, "admin: {m} {p}");
        }
    }
    // Bob is still his reseller's, untouched by the others.
    let bobs = h
        .get("/api/v1/users")
        .bearer(&reseller_b)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(bobs["total"], 1);
    assert_eq!(bobs["users"][0]["username"], "bob");
    let _ = cluster;
}

#[tokio::test]
async fn every_route_keeps_each_role_in_its_place() {
    story(&Harness::new().await).await;
}

async fn quota_story(h: &Harness) {
    let owner = h.token().await;
    let cluster = |name: &'static str| {
        let owner = owner.clone();
        async move {
            h.post("/api/v1/clusters")
                .bearer(&owner)
                .json(&json!({"name": name}))
                .send()
                .await
                .ok(StatusCode::CREATED)["id"]
                .as_i64()
                .unwrap()
        }
    };
    let (c1, c2) = (cluster("eu").await, cluster("us").await);
    let quota =
        json!({"max_users": 2, "max_traffic": 100, "max_expiry_days": 30, "clusters": [c1]});
    let (ann, t) = admin_with(h, &owner, "ann", "reseller", quota.clone()).await;
    let now = switchyard_panel::clock::now_ms();
    let user = |name: &str, limit: u64, days: i64, clusters: Value| {
        json!({"username": name, "traffic_limit": limit,
               "expires_ms": now + days * DAY_MS, "clusters": clusters})
    };
    let create = |body: Value| {
        let t = t.clone();
        async move { h.post("/api/v1/users").bearer(&t).json(&body).send().await }
    };
    let first = create(user("u1", 60, 10, json!([c1])))
        .await
        .ok(StatusCode::CREATED);
    assert_eq!(first["admin_id"], ann);
    let over = create(user("u2", 41, 10, json!([c1]))).await;
    let e = over.field_error(StatusCode::FORBIDDEN, "traffic_limit");
    assert_eq!(
        e["errors"][0]["message"],
        "your quota has 40 of 100 bytes left to hand out"
    );
    create(user("u2", 40, 30, json!([c1])))
        .await
        .ok(StatusCode::CREATED);
    let e = create(user("u3", 0, 1, json!([c1])))
        .await
        .field_error(StatusCode::FORBIDDEN, "username");
    assert_eq!(
        e["errors"][0]["message"],
        "your quota allows 2 users: none is left to make"
    );
    // A change must fit too: another cluster, a longer expiry, no limit.
    let id = first["id"].as_i64().unwrap();
    let put = |body: Value| {
        let t = t.clone();
        async move {
            h.put(&format!("/api/v1/users/{id}"))
                .bearer(&t)
                .json(&body)
                .send()
                .await
        }
    };
    put(user("u1", 60, 10, json!([c2])))
        .await
        .field_error(StatusCode::FORBIDDEN, "clusters");
    put(user("u1", 60, 31, json!([c1])))
        .await
        .field_error(StatusCode::FORBIDDEN, "expires_ms");
    put(json!({"username": "u1", "clusters": [c1], "expires_ms": now + DAY_MS}))
        .await
        .field_error(StatusCode::FORBIDDEN, "traffic_limit");
    put(user("u1", 60, 20, json!([c1])))
        .await
        .ok(StatusCode::OK);
    // The cluster list shows the reseller's alone; the owner sees the use.
    let clusters = h
        .get("/api/v1/clusters")
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(clusters.as_array().unwrap().len(), 1);
    assert_eq!(clusters[0]["id"], c1);
    let view = h
        .get(&format!("/api/v1/admins/{ann}"))
        .bearer(&owner)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(view["used"], json!({"users": 2, "traffic": 100}));
    assert_eq!(view["quota"], quota);
    // The reseller reads their own quota and its use from their session.
    let mine = h
        .get("/api/v1/session")
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(mine["reseller"], view);
    let owners = h
        .get("/api/v1/session")
        .bearer(&owner)
        .send()
        .await
        .ok(StatusCode::OK);
    assert!(owners.get("reseller").is_none());
    // The last owner stays an owner.
    let admins = h
        .get("/api/v1/admins")
        .bearer(&owner)
        .send()
        .await
        .ok(StatusCode::OK);
    let me = admins
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["role"] == "owner")
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    h.put(&format!("/api/v1/admins/{me}"))
        .bearer(&owner)
        .json(&json!({"username": "admin", "role": "admin"}))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "role");
    h.delete(&format!("/api/v1/admins/{me}"))
        .bearer(&owner)
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "id");
    // Only a reseller has a quota.
    h.put(&format!("/api/v1/admins/{ann}"))
        .bearer(&owner)
        .json(&json!({"username": "ann", "role": "admin", "quota": {"max_users": 1}}))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "quota");
    // A role change holds from the next request, for the admin's tokens too.
    h.put(&format!("/api/v1/admins/{ann}"))
        .bearer(&owner)
        .json(&json!({"username": "ann", "role": "read_only"}))
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(
        create(user("u9", 1, 1, json!([c1]))).await.status,
        StatusCode::FORBIDDEN
    );
    // Deleting an admin keeps their users, owned by nobody.
    h.delete(&format!("/api/v1/admins/{ann}"))
        .bearer(&owner)
        .send()
        .await
        .ok(StatusCode::NO_CONTENT);
    assert_eq!(
        h.get("/api/v1/users").bearer(&t).send().await.status,
        StatusCode::UNAUTHORIZED
    );
    let all = h
        .get("/api/v1/users")
        .bearer(&owner)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(all["total"], 2);
    assert!(
        all["users"]
            .as_array()
            .unwrap()
            .iter()
            .all(|u| u["admin_id"].is_null())
    );
}

#[tokio::test]
async fn a_reseller_works_within_the_quota_on_sqlite() {
    quota_story(&Harness::new().await).await;
}

#[tokio::test]
async fn a_reseller_works_within_the_quota_on_postgres() {
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    let url = pg.fresh_database("roles").unwrap();
    let store = SqlStore::open(&url, Changes::default()).await.unwrap();
    let h = Harness::over(store).await;
    quota_story(&h).await;
    // Two writes for a reseller's last place at once: one is made, one refused.
    let owner = h.token().await;
    let (_, t) = admin_with(&h, &owner, "cat", "reseller", json!({"max_users": 1})).await;
    let make = |name: &'static str| {
        let t = t.clone();
        let h = &h;
        async move {
            h.post("/api/v1/users")
                .bearer(&t)
                .json(&json!({"username": name}))
                .send()
                .await
                .status
        }
    };
    let (a, b) = tokio::join!(make("x1"), make("x2"));
    let mut got = [a, b];
    got.sort();
    assert_eq!(got, [StatusCode::CREATED, StatusCode::FORBIDDEN]);
    drop(pg);
}
