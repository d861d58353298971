//! The admin's account through the router: a password change needs the current
//! password and ends every other session; sessions are listed (this one marked,
//! never a secret) and revoked; API tokens expire and may be read-only; the public
//! setup hint names no path.

use axum::http::StatusCode;
use serde_json::json;
use switchyard_panel::store::token_hash::hash_token;
use switchyard_panel::store::{AccountStore, Changes, NewSession, SqlStore, TokenScope};

use crate::common::{ADMIN, Harness, PASSWORD, Session};

async fn login_as(h: &Harness, password: &str, peer: &str, agent: &str) -> Option<Session> {
    let r = h
        .post("/api/v1/session")
        .peer(peer)
        .header("user-agent", agent)
        .json(&json!({"username": ADMIN, "password": password}))
        .send()
        .await;
    if r.status != StatusCode::OK {
        return None;
    }
    let cookie = r
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    Some(Session {
        cookie,
        csrf: r.json()["csrf_token"].as_str().unwrap().to_owned(),
    })
}

#[tokio::test]
async fn a_password_change_needs_the_current_one_and_ends_the_other_sessions() {
    let h = Harness::new().await;
    let here = login_as(&h, PASSWORD, "192.0.2.1:1000", "Firefox")
        .await
        .unwrap();
    let there = login_as(&h, PASSWORD, "192.0.2.2:1000", "Chrome")
        .await
        .unwrap();
    let token = h.token().await;
    let change =
        |current: &str, new: &str| json!({"current_password": current, "new_password": new});
    const NEW: &str = "a much longer pass phrase";
    // Without CSRF, wrong current, too short, the same: refused, naming the field.
    h.put("/api/v1/account/password")
        .cookie(&here)
        .json(&change(PASSWORD, NEW))
        .send()
        .await
        .problem(StatusCode::FORBIDDEN);
    h.put("/api/v1/account/password")
        .session(&here)
        .json(&change("not it", NEW))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "current_password");
    h.put("/api/v1/account/password")
        .session(&here)
        .json(&change(PASSWORD, "short"))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "new_password");
    h.put("/api/v1/account/password")
        .session(&here)
        .json(&change(PASSWORD, PASSWORD))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "new_password");
    let done = h
        .put("/api/v1/account/password")
        .session(&here)
        .json(&change(PASSWORD, NEW))
        .send()
        .await
        .ok(StatusCode::OK);
    // The session from the other browser, and the harness's own login for the token.
    assert_eq!(done, json!({"sessions_ended": 2}));
    h.get("/api/v1/session")
        .cookie(&there)
        .send()
        .await
        .problem(StatusCode::UNAUTHORIZED);
    h.get("/api/v1/session")
        .cookie(&here)
        .send()
        .await
        .ok(StatusCode::OK);
    // Tokens are separate credentials: they go on.
    h.get("/api/v1/users")
        .bearer(&token)
        .send()
        .await
        .ok(StatusCode::OK);
    assert!(login_as(&h, PASSWORD, "192.0.2.3:1", "x").await.is_none());
    assert!(login_as(&h, NEW, "192.0.2.3:1", "x").await.is_some());
}

#[tokio::test]
async fn sessions_are_listed_without_secrets_and_revoked_one_by_one() {
    let h = Harness::new().await;
    let here = login_as(&h, PASSWORD, "192.0.2.1:1000", "Firefox/128")
        .await
        .unwrap();
    let long_agent = format!("Chrome/{}", "1".repeat(500));
    let there = login_as(&h, PASSWORD, "[2001:db8::7]:1000", &long_agent)
        .await
        .unwrap();
    let r = h.get("/api/v1/sessions").cookie(&here).send().await;
    let list = r.ok(StatusCode::OK);
    let text = r.text();
    for secret in [&here.cookie, &there.cookie, &here.csrf, &there.csrf] {
        let value = secret.split('=').next_back().unwrap();
        assert!(!text.contains(value), "{text}");
        assert!(!text.contains(&hash_token(value)), "{text}");
    }
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2);
    let mine = list.iter().find(|s| s["current"] == true).unwrap();
    let other = list.iter().find(|s| s["current"] == false).unwrap();
    assert_eq!(mine["address"], "192.0.2.1");
    assert_eq!(mine["user_agent"], "Firefox/128");
    assert_eq!(other["address"], "2001:db8::7");
    // Kept to a bounded length.
    assert_eq!(other["user_agent"], long_agent[..200]);
    for s in list {
        assert!(s["created_ms"].as_i64().unwrap() <= s["last_seen_ms"].as_i64().unwrap());
        assert!(s["expires_ms"].as_i64().unwrap() > s["created_ms"].as_i64().unwrap());
    }
    let other_id = other["id"].as_str().unwrap();
    // A write: CSRF as ever.
    h.delete(&format!("/api/v1/sessions/{other_id}"))
        .cookie(&here)
        .send()
        .await
        .problem(StatusCode::FORBIDDEN);
    h.delete(&format!("/api/v1/sessions/{other_id}"))
        .session(&here)
        .send()
        .await
        .ok(StatusCode::NO_CONTENT);
    h.get("/api/v1/session")
        .cookie(&there)
        .send()
        .await
        .problem(StatusCode::UNAUTHORIZED);
    h.delete(&format!("/api/v1/sessions/{other_id}"))
        .session(&here)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);
    let list = h
        .get("/api/v1/sessions")
        .cookie(&here)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(list.as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn tokens_expire_and_a_read_only_token_only_reads() {
    let h = Harness::new().await;
    let s = h.login().await;
    let now = switchyard_node::accounting::now_ms();
    // Expiry in the past: refused, naming the field.
    h.post("/api/v1/tokens")
        .session(&s)
        .json(&json!({"name": "old", "expires_ms": now - 1000}))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "expires_ms");
    h.post("/api/v1/tokens")
        .session(&s)
        .json(&json!({"name": "odd", "scope": "admin"}))
        .send()
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
    let made = h
        .post("/api/v1/tokens")
        .session(&s)
        .json(&json!({"name": "grafana", "scope": "read", "expires_ms": now + 86_400_000}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    assert_eq!(made["scope"], "read");
    assert_eq!(made["expires_ms"], now + 86_400_000);
    let read = made["secret"].as_str().unwrap();
    // Reads work; every write is 403 naming the scope.
    h.get("/api/v1/users")
        .bearer(read)
        .send()
        .await
        .ok(StatusCode::OK);
    h.req(axum::http::Method::HEAD, "/api/v1/users")
        .bearer(read)
        .send()
        .await
        .ok(StatusCode::OK);
    for (method, path, body) in [
        ("POST", "/api/v1/clusters", json!({"name": "x"})),
        ("DELETE", "/api/v1/tokens/1", json!(null)),
        ("PUT", "/api/v1/account/password", json!({})),
        ("POST", "/api/v1/tokens", json!({"name": "escalate"})),
    ] {
        let mut r = h.req(method.parse().unwrap(), path).bearer(read);
        if !body.is_null() {
            r = r.json(&body);
        }
        let p = r.send().await.problem(StatusCode::FORBIDDEN);
        assert!(
            p["detail"].as_str().unwrap().contains("read scope"),
            "{method} {path}: {p}"
        );
    }
    // A token past its expiry is refused like an unknown one (stored directly: the API
    // does not make expired tokens).
    let admin = h.store.admin_by_username(ADMIN).await.unwrap().unwrap().0;
    h.store
        .create_scoped_token(
            admin.id,
            "expired",
            &hash_token("sy_expired"),
            now - 2000,
            Some(now - 1000),
            TokenScope::Full,
        )
        .await
        .unwrap();
    h.get("/api/v1/users")
        .bearer("sy_expired")
        .send()
        .await
        .problem(StatusCode::UNAUTHORIZED);
    // The list shows scope and expiry, never a secret.
    let r = h.get("/api/v1/tokens").cookie(&s).send().await;
    let list = r.ok(StatusCode::OK);
    assert!(!r.text().contains(read));
    let by_name = |n: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == n)
            .cloned()
            .unwrap()
    };
    assert_eq!(by_name("grafana")["scope"], "read");
    assert_eq!(by_name("expired")["expires_ms"], now - 1000);
    assert_eq!(by_name("expired")["scope"], "full");
}

#[tokio::test]
async fn the_public_setup_hint_names_the_file_not_its_path() {
    let h = Harness::new().await;
    let dir = h.state.config().data_dir.clone();
    let file = dir.join(switchyard_panel::run::PASSWORD_FILE);
    std::fs::write(&file, "username: admin\n").unwrap();
    let r = h.get("/api/v1/setup").send().await;
    let setup = r.ok(StatusCode::OK);
    assert_eq!(setup["password_file"], switchyard_panel::run::PASSWORD_FILE);
    let dir = dir.display().to_string();
    assert!(!r.text().contains(&dir), "{}", r.text());
    assert!(!r.text().contains('/'), "{}", r.text());
}

/// Sessions and tokens in the store, the same on both backends.
async fn account_story(store: SqlStore) {
    const NOW: i64 = 1_000_000;
    let admin = store.create_admin("root", "hash0", NOW).await.unwrap();
    let open = |hash: &'static str, public: &'static str, at: i64| {
        let store = store.clone();
        async move {
            store
                .open_session(&NewSession {
                    id_hash: hash,
                    public_id: public,
                    admin_id: admin.id,
                    csrf: "c",
                    now_ms: at,
                    expires_ms: at + 10_000,
                    address: "192.0.2.1",
                    user_agent: "ua",
                })
                .await
                .unwrap();
        }
    };
    open("h1", "p1", NOW).await;
    open("h2", "p2", NOW + 1).await;
    open("h3", "p3", NOW + 2).await;
    let live = store.live_session("h1", NOW).await.unwrap().unwrap();
    assert_eq!(
        (live.public_id.as_str(), live.last_seen_ms),
        ("p1", Some(NOW))
    );
    assert!(
        store
            .live_session("h1", NOW + 10_000)
            .await
            .unwrap()
            .is_none()
    );
    store.session_seen("h1", NOW + 5).await.unwrap();
    let list = store
        .admin_sessions(admin.id, Some("p1"), NOW + 5)
        .await
        .unwrap();
    let ids: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["p3", "p2", "p1"]);
    assert!(list[2].current && !list[0].current);
    assert_eq!(list[2].last_seen_ms, NOW + 5);
    store.revoke_session(admin.id, "p2").await.unwrap();
    assert!(matches!(
        store.revoke_session(admin.id, "p2").await,
        Err(switchyard_panel::store::StoreError::NotFound(_))
    ));
    // Someone else's session is not found either.
    let other = store.create_admin("other", "hash", NOW).await.unwrap();
    assert!(store.revoke_session(other.id, "p3").await.is_err());
    // A new password ends every session but the one kept.
    assert_eq!(
        store
            .set_admin_password(admin.id, "hash1", Some("h1"))
            .await
            .unwrap(),
        1
    );
    assert!(store.live_session("h3", NOW).await.unwrap().is_none());
    assert!(store.live_session("h1", NOW).await.unwrap().is_some());
    assert_eq!(
        store.admin_by_username("root").await.unwrap().unwrap().1,
        "hash1"
    );
    // Tokens: scope and expiry.
    let t = store
        .create_scoped_token(admin.id, "ro", "th", NOW, Some(NOW + 100), TokenScope::Read)
        .await
        .unwrap();
    assert_eq!((t.scope, t.expires_ms), (TokenScope::Read, Some(NOW + 100)));
    let (who, scope) = store.token_auth("th", NOW + 99).await.unwrap().unwrap();
    assert_eq!((who.id, scope), (admin.id, TokenScope::Read));
    assert!(store.token_auth("th", NOW + 100).await.unwrap().is_none());
    assert!(
        store
            .api_token_admin("th", NOW + 100)
            .await
            .unwrap()
            .is_none()
    );
    let listed = store.api_tokens(admin.id).await.unwrap();
    assert_eq!(listed[0].last_used_ms, Some(NOW + 99));
    assert_eq!(listed[0].scope, TokenScope::Read);
}

#[tokio::test]
async fn account_story_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqlStore::open_sqlite(&dir.path().join("panel.db"), Changes::default())
        .await
        .unwrap();
    account_story(store).await;
}

#[tokio::test]
async fn account_story_on_postgres() {
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    let url = pg.fresh_database("account").unwrap();
    let store = SqlStore::open(&url, Changes::default()).await.unwrap();
    account_story(store).await;
    drop(pg);
}
