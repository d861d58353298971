//! `POST` and `GET /api/v1/servers/{id}/ssh-install` without an SSH server: every bad
//! field refused with its name (and no answer holding the password), auth, CSRF and
//! read-only tokens as for every write, one job per server and at most four at once
//! (a listener on 127.0.0.1 that never answers holds them in `connecting`), a pinned
//! host key that only Replace node changes, and a failed `connecting` reported.
//! The real SSH server is `switchyard`'s `install_ssh_vps::` test.

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::{Value, json};
use switchyard_panel::store::ServerStore;
use tokio::net::TcpListener;

use crate::common::{Harness, server};

const SECRET: &str = "s3cret-never-shown";

fn path(id: i64) -> String {
    format!("/api/v1/servers/{id}/ssh-install")
}

/// A listener that takes connections and says nothing: SSH's handshake waits.
async fn silent() -> (String, tokio::task::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = l.accept().await {
            held.push(s);
        }
    });
    (addr, task)
}

#[tokio::test]
async fn bad_fields_are_named_and_the_secret_never_answered() {
    let h = Harness::new().await;
    let t = h.token().await;
    let id = server(&h, &t).await;
    let base = json!({"address": "203.0.113.9", "user": "root", "password": SECRET});
    let with = |k: &str, v: Value| {
        let mut b = base.clone();
        b[k] = v;
        b
    };
    for (body, field) in [
        (with("address", json!("x;rm -rf /")), "address"),
        (with("address", json!("host:0")), "address"),
        (with("user", json!("a b")), "user"),
        (with("user", json!("")), "user"),
        (with("host_key", json!("MD5:00")), "host_key"),
        (with("private_key", json!("not a key")), "password"),
        (with("passphrase", json!("p")), "passphrase"),
        (with("colour", json!("red")), "colour"),
    ] {
        let r = h.post(&path(id)).bearer(&t).json(&body).send().await;
        r.field_error(StatusCode::UNPROCESSABLE_ENTITY, field);
        assert!(!r.text().contains(SECRET), "{}", r.text());
    }
    let mut key = base.clone();
    key.as_object_mut().unwrap().remove("password");
    key["private_key"] = json!("A".repeat(16 * 1024 + 1));
    h.post(&path(id))
        .bearer(&t)
        .json(&key)
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "private_key");

    // No job yet; no such server.
    h.get(&path(id))
        .bearer(&t)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);
    h.get(&path(999))
        .bearer(&t)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);
    h.post(&path(999))
        .bearer(&t)
        .json(&base)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);

    // Auth, CSRF and scope as for every write.
    h.post(&path(id))
        .json(&base)
        .send()
        .await
        .problem(StatusCode::UNAUTHORIZED);
    let s = h.login().await;
    h.post(&path(id))
        .cookie(&s)
        .json(&base)
        .send()
        .await
        .problem(StatusCode::FORBIDDEN);
    let read = h
        .post("/api/v1/tokens")
        .session(&s)
        .json(&json!({"name": "ro", "scope": "read"}))
        .send()
        .await
        .ok(StatusCode::CREATED)["secret"]
        .as_str()
        .unwrap()
        .to_owned();
    h.post(&path(id))
        .bearer(&read)
        .json(&base)
        .send()
        .await
        .problem(StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn a_refused_connection_fails_connecting() {
    let h = Harness::new().await;
    let t = h.token().await;
    let id = server(&h, &t).await;
    // A port nobody listens on.
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = closed.local_addr().unwrap().to_string();
    drop(closed);
    let job = h
        .post(&path(id))
        .bearer(&t)
        .json(&json!({"address": addr, "user": "root"}))
        .send()
        .await
        .ok(StatusCode::ACCEPTED);
    assert_eq!(job["state"], "running");
    assert_eq!(
        job["steps"].as_array().unwrap().len(),
        2,
        "a first request only reads the host key: {job}"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    let job = loop {
        let job = h.get(&path(id)).bearer(&t).send().await.ok(StatusCode::OK);
        if job["state"] != "running" {
            break job;
        }
        assert!(Instant::now() < deadline, "{job}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(job["state"], "failed", "{job}");
    assert_eq!(job["steps"][0]["state"], "failed", "{job}");
    let error = job["error"].as_str().unwrap();
    assert!(
        error.starts_with(&format!("connecting: no TCP connection to {addr}")),
        "{error}"
    );
}

#[tokio::test]
async fn one_job_per_server_four_at_once_and_the_pin_holds() {
    let h = Harness::new().await;
    let t = h.token().await;
    let (addr, _held) = silent().await;
    let body = json!({"address": addr, "user": "root"});
    let mut ids = vec![server(&h, &t).await];
    let cluster = h
        .get(&format!("/api/v1/servers/{}", ids[0]))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK)["cluster_id"]
        .clone();
    for n in 1..5 {
        let s = h
            .post("/api/v1/servers")
            .bearer(&t)
            .json(
                &json!({"cluster_id": cluster, "name": format!("s{n}"), "address": "203.0.113.1"}),
            )
            .send()
            .await
            .ok(StatusCode::CREATED);
        ids.push(s["id"].as_i64().unwrap());
    }
    for &id in &ids[..4] {
        let job = h
            .post(&path(id))
            .bearer(&t)
            .json(&body)
            .send()
            .await
            .ok(StatusCode::ACCEPTED);
        assert_eq!(job["steps"][0]["name"], "connecting", "{job}");
    }
    h.post(&path(ids[0]))
        .bearer(&t)
        .json(&body)
        .send()
        .await
        .problem(StatusCode::CONFLICT);
    let full = h.post(&path(ids[4])).bearer(&t).json(&body).send().await;
    full.problem(StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(full.header("retry-after").as_deref(), Some("10"));
    let job = h
        .get(&path(ids[0]))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(job["state"], "running", "{job}");
    assert_eq!(job["steps"][0]["state"], "running", "{job}");
    assert_eq!(job["address"], json!(addr));

    // A pinned key is the one expected; another is refused before anything runs,
    // and Replace node forgets it.
    let pinned = format!("SHA256:{}", "A".repeat(43));
    h.store.pin_ssh_host_key(ids[4], &pinned).await.unwrap();
    let other = json!({"address": addr, "user": "root", "password": SECRET,
        "host_key": format!("SHA256:{}", "B".repeat(43))});
    let r = h.post(&path(ids[4])).bearer(&t).json(&other).send().await;
    let p = r.field_error(StatusCode::UNPROCESSABLE_ENTITY, "host_key");
    assert!(p["detail"].as_str().unwrap().contains(&pinned), "{p}");
    assert!(
        h.store
            .pin_ssh_host_key(ids[4], &format!("SHA256:{}", "B".repeat(43)))
            .await
            .is_err(),
        "a pin is never overwritten"
    );
    h.post(&format!("/api/v1/servers/{}/replace", ids[4]))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::CREATED);
    assert_eq!(h.store.ssh_host_key(ids[4]).await.unwrap(), None);
}
