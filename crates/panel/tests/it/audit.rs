//! The audit log: every change an admin makes through the API, with who, what and
//! which object, filtered by admin, object and time, paged; reads and refused writes
//! leave nothing; no password or token reaches it; a reseller may not read it.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::common::{Harness, PASSWORD, one_user};

/// `(admin, action, kind, object)` of each entry.
fn rows(entries: &Value) -> Vec<(String, String, String, String)> {
    entries
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap().to_owned();
            (s("admin"), s("action"), s("kind"), s("object"))
        })
        .collect()
}

fn row(admin: &str, action: &str, kind: &str, object: &str) -> (String, String, String, String) {
    (admin.into(), action.into(), kind.into(), object.into())
}

#[tokio::test]
async fn changes_are_logged_with_who_what_and_which_and_never_a_secret() {
    let h = Harness::new().await;
    let owner = h.token().await;
    let (_, alice) = one_user(&h, &owner).await;
    let alice_id = alice["id"].as_i64().unwrap();
    let get = |path: String, t: String| {
        let h = &h;
        async move { h.get(&path).bearer(&t).send().await.ok(StatusCode::OK) }
    };
    let before_changes = get("/api/v1/audit".into(), owner.clone()).await;
    let last = before_changes[0]["id"].as_i64().unwrap();
    assert_eq!(
        rows(&before_changes)[..2],
        [
            row("admin", "create", "user", "alice"),
            row("admin", "create", "inbound", "Frankfurt"),
        ]
    );
    // A change, a refused change and a read.
    h.put(&format!("/api/v1/users/{alice_id}"))
        .bearer(&owner)
        .json(&json!({"username": "alice", "note": "paid"}))
        .send()
        .await
        .ok(StatusCode::OK);
    h.put(&format!("/api/v1/users/{alice_id}"))
        .bearer(&owner)
        .json(&json!({"username": "no spaces"}))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "username");
    h.get("/api/v1/users")
        .bearer(&owner)
        .send()
        .await
        .ok(StatusCode::OK);
    // A reseller with a password, who logs in and makes a user.
    let ann = h
        .post("/api/v1/admins")
        .bearer(&owner)
        .json(&json!({"username": "ann", "password": "ann's long password", "role": "reseller"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    let login = h
        .post("/api/v1/session")
        .json(&json!({"username": "ann", "password": "ann's long password"}))
        .send()
        .await;
    let session = login.ok(StatusCode::OK);
    let cookie = login.header("set-cookie").unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let token = h
        .post("/api/v1/tokens")
        .header("cookie", &cookie)
        .header("x-csrf-token", session["csrf_token"].as_str().unwrap())
        .json(&json!({"name": "ann's script"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    let ann_token = token["secret"].as_str().unwrap().to_owned();
    h.post("/api/v1/users")
        .bearer(&ann_token)
        .json(&json!({"username": "bob"}))
        .send()
        .await
        .ok(StatusCode::CREATED);

    let log = get("/api/v1/audit".into(), owner.clone()).await;
    assert!(log[0]["id"].as_i64().unwrap() > last);
    let newest: Vec<_> = rows(&log).into_iter().take(5).collect();
    assert_eq!(
        newest,
        [
            row("ann", "create", "user", "bob"),
            row("ann", "create", "token", "ann's script"),
            row("ann", "log in", "session", "ann"),
            row("admin", "create", "admin", "ann"),
            row("admin", "update", "user", "alice"),
        ]
    );
    let text = log.to_string();
    for secret in [
        PASSWORD,
        "ann's long password",
        ann_token.as_str(),
        owner.as_str(),
    ] {
        assert!(!text.contains(secret), "the log holds a secret");
    }

    // Filters: by admin, by object, by time; pages by id.
    let anns = get(
        format!("/api/v1/audit?admin_id={}", ann["id"]),
        owner.clone(),
    )
    .await;
    assert_eq!(rows(&anns).len(), 3);
    let alices = get(
        format!("/api/v1/audit?kind=user&object_id={alice_id}"),
        owner.clone(),
    )
    .await;
    assert_eq!(
        rows(&alices),
        [
            row("admin", "update", "user", "alice"),
            row("admin", "create", "user", "alice"),
        ]
    );
    let at = log[0]["at_ms"].as_i64().unwrap();
    let later = get(format!("/api/v1/audit?since_ms={}", at + 1), owner.clone()).await;
    assert_eq!(later, json!([]));
    let until = get(format!("/api/v1/audit?until_ms={at}"), owner.clone()).await;
    let until = until.as_array().unwrap();
    assert!(until.iter().all(|e| e["at_ms"].as_i64().unwrap() < at));
    assert!(until.len() < log.as_array().unwrap().len());
    let one = get("/api/v1/audit?limit=1".into(), owner.clone()).await;
    let next = get(
        format!("/api/v1/audit?limit=1&before={}", one[0]["id"]),
        owner.clone(),
    )
    .await;
    assert_eq!(rows(&next), [row("ann", "create", "token", "ann's script")]);

    // A reseller does not read it.
    assert_eq!(
        h.get("/api/v1/audit")
            .bearer(&ann_token)
            .send()
            .await
            .status,
        StatusCode::FORBIDDEN
    );
}
