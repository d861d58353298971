//! Webhooks against a real HTTP receiver on 127.0.0.1: users' changes arrive signed
//! (checked here with HMAC-SHA256 on our own), a receiver that fails and recovers
//! gets each event once it answers, retried on the back-off's schedule (stepped with
//! the worker's clock, no sleeping), a delivery left by a stopped panel is sent after
//! a restart (its lease ended), one that never gets through is given up after twelve
//! attempts, a private address is refused unless the hook allows it; on PostgreSQL
//! two panel instances deliver each event once.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, StatusCode};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use switchyard_panel::model::webhook::Thresholds;
use switchyard_panel::store::{Changes, SqlStore, Store, WebhookStore};
use switchyard_panel::webhooks::{LEASE_MS, Sender, deliver_due};

use crate::common::Harness;

/// What the receiver got: delivery id, event, body, signature check, and the status
/// it answered.
#[derive(Clone, Debug)]
pub(crate) struct Got {
    pub(crate) delivery: i64,
    pub(crate) event: String,
    pub(crate) body: Value,
    pub(crate) signed: bool,
    pub(crate) answered: u16,
}

impl Receiver {
    /// What each delivery received so far says, in order.
    fn seen<T>(&self, f: impl Fn(&Got) -> T) -> Vec<T> {
        self.got.lock().unwrap().iter().map(f).collect()
    }
}

/// A pool on `url` for writing what nodes would report, straight to the database.
async fn raw(url: &str) -> sqlx::AnyPool {
    sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .unwrap()
}

#[derive(Clone)]
pub(crate) struct Receiver {
    pub(crate) got: Arc<Mutex<Vec<Got>>>,
    /// Requests to fail (500) before answering 200.
    pub(crate) fail_first: Arc<Mutex<u32>>,
    pub(crate) secret: Arc<Mutex<String>>,
}

async fn receive(
    axum::extract::State(r): axum::extract::State<Receiver>,
    headers: HeaderMap,
    body: String,
) -> StatusCode {
    let h = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(r.secret.lock().unwrap().as_bytes()).unwrap();
    mac.update(format!("{}.{body}", h("x-switchyard-timestamp")).as_bytes());
    let want: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let status = {
        let mut left = r.fail_first.lock().unwrap();
        if *left > 0 {
            *left -= 1;
            StatusCode::INTERNAL_SERVER_ERROR
        } else {
            StatusCode::OK
        }
    };
    r.got.lock().unwrap().push(Got {
        delivery: h("x-switchyard-delivery").parse().unwrap(),
        event: h("x-switchyard-event"),
        body: serde_json::from_str(&body).unwrap(),
        signed: h("x-switchyard-signature") == format!("sha256={want}"),
        answered: status.as_u16(),
    });
    status
}

/// A receiver on 127.0.0.1 (`POST /hook`) that checks signatures with its secret.
pub(crate) async fn receiver() -> (Receiver, SocketAddr) {
    let r = Receiver {
        got: Arc::default(),
        fail_first: Arc::default(),
        secret: Arc::default(),
    };
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(receive))
        .with_state(r.clone());
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    (r, addr)
}

async fn hook(
    h: &Harness,
    t: &str,
    url: &str,
    events: &[&str],
    allow_private: bool,
) -> (i64, String) {
    let made = h
        .post("/api/v1/webhooks")
        .bearer(t)
        .json(&json!({"url": url, "events": events, "allow_private": allow_private}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    (
        made["id"].as_i64().unwrap(),
        made["secret"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn events_are_signed_retried_until_received_and_survive_a_restart() {
    let h = Harness::new().await;
    let t = h.token().await;
    let (rx, addr) = receiver().await;
    let url = format!("http://{addr}/hook");
    let (id, secret) = hook(
        &h,
        &t,
        &url,
        &["user.created", "user.changed", "user.deleted"],
        true,
    )
    .await;
    *rx.secret.lock().unwrap() = secret.clone();
    // Its secret is shown once: the hook as listed has none.
    let listed = h
        .get("/api/v1/webhooks")
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert!(!listed.to_string().contains(&secret));
    let sender = Sender::new().unwrap();
    let store: &dyn Store = h.state.store().as_ref();

    // The receiver fails twice: retried 10 s, then 30 s later, then received.
    *rx.fail_first.lock().unwrap() = 2;
    let alice = h
        .post("/api/v1/users")
        .bearer(&t)
        .json(&json!({"username": "alice"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    let now = switchyard_panel::clock::now_ms();
    assert_eq!(deliver_due(store, &sender, now).await.unwrap(), 1);
    assert_eq!(deliver_due(store, &sender, now + 9_999).await.unwrap(), 0);
    assert_eq!(deliver_due(store, &sender, now + 10_000).await.unwrap(), 1);
    assert_eq!(deliver_due(store, &sender, now + 39_999).await.unwrap(), 0);
    assert_eq!(deliver_due(store, &sender, now + 40_000).await.unwrap(), 1);
    assert_eq!(
        deliver_due(store, &sender, now + 1_000_000).await.unwrap(),
        0
    );
    let got = rx.got.lock().unwrap().clone();
    assert_eq!(got.len(), 3);
    assert!(got.iter().all(|g| g.signed && g.event == "user.created"));
    assert!(got.iter().all(|g| g.delivery == got[0].delivery));
    assert_eq!(
        got.iter().map(|g| g.answered).collect::<Vec<_>>(),
        [500, 500, 200]
    );
    assert_eq!(got[2].body["by"], "admin");
    assert_eq!(got[2].body["data"]["username"], "alice");
    assert_eq!(got[2].body["data"]["id"], alice["id"]);
    let deliveries = h
        .get(&format!("/api/v1/webhooks/{id}/deliveries"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(
        (
            deliveries[0]["state"].as_str(),
            deliveries[0]["attempts"].as_u64(),
            deliveries[0]["last_status"].as_u64()
        ),
        (Some("delivered"), Some(3), Some(200))
    );
    // A hook to a private address without allow_private is refused at delivery.
    let (guarded, _) = hook(&h, &t, &url, &["user.created"], false).await;
    h.post(&format!("/api/v1/webhooks/{guarded}/test"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::ACCEPTED);
    let before = rx.got.lock().unwrap().len();
    assert_eq!(
        deliver_due(store, &sender, now + 1_100_000).await.unwrap(),
        1
    );
    assert_eq!(
        rx.got.lock().unwrap().len(),
        before,
        "nothing reached the receiver"
    );
    let refused = h
        .get(&format!("/api/v1/webhooks/{guarded}/deliveries"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(refused[0]["state"], "pending");
    assert!(
        refused[0]["last_error"]
            .as_str()
            .unwrap()
            .contains("not a global address"),
        "{refused}"
    );
    h.delete(&format!("/api/v1/webhooks/{guarded}"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::NO_CONTENT);

    // A change queued while the panel is down is sent after a restart; one a
    // stopped worker had taken waits for its lease to end.
    h.put(&format!("/api/v1/users/{}", alice["id"]))
        .bearer(&t)
        .json(&json!({"username": "alice", "note": "paid"}))
        .send()
        .await
        .ok(StatusCode::OK);
    let t0 = now + 2_000_000;
    let taken = store.take_due(t0, 16, LEASE_MS).await.unwrap();
    assert_eq!(
        taken.len(),
        1,
        "the stopped worker took it and never finished"
    );
    let restarted = SqlStore::open_sqlite(&h.db, Changes::default())
        .await
        .unwrap();
    assert_eq!(
        deliver_due(&restarted, &sender, t0 + 1_000).await.unwrap(),
        0
    );
    assert_eq!(
        deliver_due(&restarted, &sender, t0 + LEASE_MS)
            .await
            .unwrap(),
        1
    );
    let last = rx.got.lock().unwrap().last().unwrap().clone();
    assert_eq!(
        (last.event.as_str(), last.body["data"]["note"].as_str()),
        ("user.changed", Some("paid"))
    );

    // Deleted: the id; replayed: the same delivery again; a test event to this hook.
    h.delete(&format!("/api/v1/users/{}", alice["id"]))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::NO_CONTENT);
    deliver_due(store, &sender, t0 + 100_000).await.unwrap();
    let last = rx.got.lock().unwrap().last().unwrap().clone();
    assert_eq!(
        (last.event.as_str(), &last.body["data"]),
        ("user.deleted", &json!({"id": alice["id"]}))
    );
    h.post(&format!(
        "/api/v1/webhooks/{id}/deliveries/{}/replay",
        last.delivery
    ))
    .bearer(&t)
    .send()
    .await
    .ok(StatusCode::NO_CONTENT);
    h.post(&format!("/api/v1/webhooks/{id}/test"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::ACCEPTED);
    assert_eq!(deliver_due(store, &sender, t0 + 200_000).await.unwrap(), 2);
    let events: Vec<String> = rx
        .got
        .lock()
        .unwrap()
        .iter()
        .rev()
        .take(2)
        .map(|g| g.event.clone())
        .collect();
    assert_eq!(events, ["webhook.test", "user.deleted"]);

    // A receiver that never recovers: given up after the twelfth attempt.
    *rx.fail_first.lock().unwrap() = u32::MAX;
    h.post(&format!("/api/v1/webhooks/{id}/test"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::ACCEPTED);
    let mut at = t0 + 300_000;
    for _ in 0..12 {
        assert_eq!(deliver_due(store, &sender, at).await.unwrap(), 1);
        at += 3_600_000;
    }
    assert_eq!(deliver_due(store, &sender, at).await.unwrap(), 0);
    let d = h
        .get(&format!("/api/v1/webhooks/{id}/deliveries"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(
        (d[0]["state"].as_str(), d[0]["attempts"].as_u64()),
        (Some("failed"), Some(12))
    );
    // Thirty days after they are done, deliveries are forgotten (the list stays
    // bounded); the pending are kept.
    let done_at = switchyard_panel::clock::now_ms();
    deliver_due(store, &sender, done_at + 30 * 86_400_000 - 60_000)
        .await
        .unwrap();
    let kept = h
        .get(&format!("/api/v1/webhooks/{id}/deliveries"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert!(!kept.as_array().unwrap().is_empty());
    deliver_due(store, &sender, done_at + 30 * 86_400_000 + 60_000)
        .await
        .unwrap();
    let forgotten = h
        .get(&format!("/api/v1/webhooks/{id}/deliveries"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(forgotten, json!([]));
    assert_eq!(d[0]["last_error"], "the receiver answered 500");
}

/// A hook to `url` for `event`, private addresses allowed, made in `store`.
async fn stored_hook(store: &SqlStore, url: &str, event: &str) {
    let input = switchyard_panel::model::WebhookInput {
        url: url.into(),
        events: vec![event.into()],
        enabled: true,
        allow_private: true,
    };
    store
        .create_webhook(&input, "a secret of sixteen", 0)
        .await
        .unwrap();
}

#[tokio::test]
async fn two_instances_on_postgres_deliver_each_event_once() {
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    let url = pg.fresh_database("webhooks").unwrap();
    let one = SqlStore::open(&url, Changes::default()).await.unwrap();
    let two = SqlStore::open(&url, Changes::default()).await.unwrap();
    let (rx, addr) = receiver().await;
    stored_hook(&one, &format!("http://{addr}/hook"), "user.created").await;
    *rx.secret.lock().unwrap() = "a secret of sixteen".into();
    let now = switchyard_panel::clock::now_ms();
    for i in 0..40 {
        one.enqueue("user.created", &json!({"n": i}).to_string(), None, now)
            .await
            .unwrap();
    }
    let sender = Sender::new().unwrap();
    let (a, b) = tokio::join!(
        async {
            let mut n = 0;
            for _ in 0..10 {
                n += deliver_due(&one, &sender, now).await.unwrap();
            }
            n
        },
        async {
            let mut n = 0;
            for _ in 0..10 {
                n += deliver_due(&two, &sender, now).await.unwrap();
            }
            n
        }
    );
    assert_eq!(a + b, 40, "each delivery sent by one instance: {a} + {b}");
    let got = rx.got.lock().unwrap().clone();
    let mut per: HashMap<i64, usize> = HashMap::new();
    for g in &got {
        assert!(g.signed);
        *per.entry(g.delivery).or_default() += 1;
    }
    assert_eq!(per.len(), 40);
    assert!(per.values().all(|n| *n == 1), "{per:?}");
    drop(pg);
}

/// Sets `column` of user `name` through the database, as the traffic and
/// connections the nodes report would.
async fn set(url: &str, name: &str, column: &str, value: i64) {
    let raw = raw(url).await;
    sqlx::query(&format!(
        "UPDATE users SET {column} = $1 WHERE username = $2"
    ))
    .bind(value)
    .bind(name)
    .execute(&raw)
    .await
    .unwrap();
}

/// The default thresholds: 80 % of the limit, three days to the expiry.
const AT: Thresholds = Thresholds {
    usage_percent: 80,
    expiring_days: 3,
};

#[tokio::test]
async fn changes_the_panel_sees_happen_are_told_once() {
    let h = Harness::new().await;
    let t = h.token().await;
    let (rx, addr) = receiver().await;
    let url = format!("http://{addr}/hook");
    let events = [
        "user.limited",
        "user.expired",
        "user.usage_high",
        "user.expiring",
        "user.hold_started",
    ];
    let (_, secret) = hook(&h, &t, &url, &events, true).await;
    *rx.secret.lock().unwrap() = secret;
    let now = switchyard_panel::clock::now_ms();
    const DAY: i64 = 86_400_000;
    for body in [
        json!({"username": "u1", "traffic_limit": 100}),
        json!({"username": "u2", "expires_ms": now + 5 * DAY}),
        json!({"username": "u3", "on_hold_days": 10}),
    ] {
        h.post("/api/v1/users")
            .bearer(&t)
            .json(&body)
            .send()
            .await
            .ok(StatusCode::CREATED);
    }
    let store: &dyn Store = h.state.store().as_ref();
    let db = format!("sqlite://{}", h.db.display());
    // The first look tells nothing.
    assert_eq!(store.watch_users(now, &AT).await.unwrap(), 0);
    set(&db, "u1", "used_down", 85).await;
    assert_eq!(store.watch_users(now, &AT).await.unwrap(), 1, "past 80 %");
    assert_eq!(store.watch_users(now, &AT).await.unwrap(), 0, "told once");
    set(&db, "u1", "used_down", 100).await;
    assert_eq!(store.watch_users(now, &AT).await.unwrap(), 1, "limited");
    // Two and a half days on, u2 expires within three; five days on, it has.
    assert_eq!(store.watch_users(now + 5 * DAY / 2, &AT).await.unwrap(), 1);
    assert_eq!(store.watch_users(now + 5 * DAY + 1, &AT).await.unwrap(), 1);
    // u3 connects for the first time: its ten days start.
    set(&db, "u3", "first_connected_ms", now + 5 * DAY).await;
    assert_eq!(
        store.watch_users(now + 5 * DAY + 2, &AT).await.unwrap(),
        1,
        "the hold's clock started"
    );
    let sender = Sender::new().unwrap();
    deliver_due(store, &sender, now + 6 * DAY).await.unwrap();
    let got: Vec<(String, String)> = rx.seen(|g| {
        (
            g.event.clone(),
            g.body["data"]["username"].as_str().unwrap().to_owned(),
        )
    });
    let want: Vec<(String, String)> = [
        ("user.usage_high", "u1"),
        ("user.limited", "u1"),
        ("user.expiring", "u2"),
        ("user.expired", "u2"),
        ("user.hold_started", "u3"),
    ]
    .iter()
    .map(|(e, u)| ((*e).to_owned(), (*u).to_owned()))
    .collect();
    assert_eq!(got, want);
    assert!(
        rx.got
            .lock()
            .unwrap()
            .iter()
            .all(|g| g.signed && g.body["by"] == "panel")
    );
}

#[tokio::test]
async fn two_instances_on_postgres_tell_a_users_change_once() {
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    let url = pg.fresh_database("watch").unwrap();
    let one = SqlStore::open(&url, Changes::default()).await.unwrap();
    let two = SqlStore::open(&url, Changes::default()).await.unwrap();
    stored_hook(&one, "http://127.0.0.1:9/hook", "user.limited").await;
    let now = switchyard_panel::clock::now_ms();
    for i in 0..20 {
        let user = switchyard_panel::store::UserInput {
            traffic_limit: Some(100),
            ..switchyard_panel::store::UserInput::new(format!("u{i}"))
        };
        switchyard_panel::store::UserStore::create_user(
            &one,
            &user,
            &switchyard_panel::service::new_credentials(),
            &format!("token-{i}-0123456789abcdefghijkl"),
            now,
        )
        .await
        .unwrap();
    }
    assert_eq!(one.watch_users(now, &AT).await.unwrap(), 0);
    let raw = raw(&url).await;
    sqlx::query("UPDATE users SET used_down = 100")
        .execute(&raw)
        .await
        .unwrap();
    let (a, b) = tokio::join!(one.watch_users(now, &AT), two.watch_users(now, &AT));
    assert_eq!(
        a.unwrap() + b.unwrap(),
        20,
        "each user's change told by one instance"
    );
    let hooks = one.webhooks().await.unwrap();
    assert_eq!(one.deliveries(hooks[0].id, 1000).await.unwrap().len(), 20);
    drop(pg);
}

#[tokio::test]
async fn a_server_coming_and_going_is_told_once_each_time() {
    let h = Harness::new().await;
    let t = h.token().await;
    let (rx, addr) = receiver().await;
    let url = format!("http://{addr}/hook");
    let (_, secret) = hook(&h, &t, &url, &["server.online", "server.unavailable"], true).await;
    *rx.secret.lock().unwrap() = secret;
    let server = crate::common::server(&h, &t).await;
    let store: &dyn Store = h.state.store().as_ref();
    let now = switchyard_panel::clock::now_ms();
    assert_eq!(store.watch_servers(now).await.unwrap(), 0, "a first look");
    let raw = raw(&format!("sqlite://{}", h.db.display())).await;
    for (state, told) in [
        ("online", 1),
        ("online", 0),
        ("unavailable", 1),
        ("online", 1),
    ] {
        sqlx::query("UPDATE servers SET state = $1 WHERE id = $2")
            .bind(state)
            .bind(server)
            .execute(&raw)
            .await
            .unwrap();
        assert_eq!(store.watch_servers(now).await.unwrap(), told, "{state}");
    }
    deliver_due(store, &Sender::new().unwrap(), now + 1000)
        .await
        .unwrap();
    let got: Vec<(String, String)> = rx.seen(|g| {
        (
            g.event.clone(),
            g.body["data"]["state"].as_str().unwrap().to_owned(),
        )
    });
    assert_eq!(
        got,
        [
            ("server.online".to_owned(), "online".to_owned()),
            ("server.unavailable".to_owned(), "unavailable".to_owned()),
            ("server.online".to_owned(), "online".to_owned()),
        ]
    );
}

#[tokio::test]
async fn a_node_upgraded_is_told_once_with_both_versions() {
    let h = Harness::new().await;
    let t = h.token().await;
    let (rx, addr) = receiver().await;
    let url = format!("http://{addr}/hook");
    let (_, secret) = hook(&h, &t, &url, &["node.upgraded"], true).await;
    *rx.secret.lock().unwrap() = secret;
    let server = crate::common::server(&h, &t).await;
    let store: &dyn Store = h.state.store().as_ref();
    let now = switchyard_panel::clock::now_ms();
    let raw = raw(&format!("sqlite://{}", h.db.display())).await;
    // The version each node reports when it connects, and none when it is gone.
    for (version, told) in [
        (Some("0.9.0"), 0),
        (Some("0.9.0"), 0),
        (None, 0),
        (Some("0.10.0"), 1),
        (Some("0.10.0"), 0),
        (Some("0.10.1"), 1),
    ] {
        sqlx::query("UPDATE servers SET node_version = $1 WHERE id = $2")
            .bind(version)
            .bind(server)
            .execute(&raw)
            .await
            .unwrap();
        assert_eq!(store.watch_servers(now).await.unwrap(), told, "{version:?}");
    }
    deliver_due(store, &Sender::new().unwrap(), now + 1000)
        .await
        .unwrap();
    let got: Vec<(String, Value, Value)> = rx.seen(|g| {
        (
            g.event.clone(),
            g.body["data"]["from"].clone(),
            g.body["data"]["to"].clone(),
        )
    });
    assert_eq!(
        got,
        [
            ("node.upgraded".to_owned(), json!("0.9.0"), json!("0.10.0")),
            ("node.upgraded".to_owned(), json!("0.10.0"), json!("0.10.1")),
        ]
    );
}

#[tokio::test]
async fn the_thresholds_are_the_operators() {
    let h = Harness::new().await;
    let t = h.token().await;
    let (_rx, addr) = receiver().await;
    let url = format!("http://{addr}/hook");
    hook(&h, &t, &url, &["user.usage_high", "user.expiring"], true).await;
    let now = switchyard_panel::clock::now_ms();
    const DAY: i64 = 86_400_000;
    for body in [
        json!({"username": "u1", "traffic_limit": 1000}),
        json!({"username": "u2", "expires_ms": now + 10 * DAY}),
    ] {
        h.post("/api/v1/users")
            .bearer(&t)
            .json(&body)
            .send()
            .await
            .ok(StatusCode::CREATED);
    }
    let store: &dyn Store = h.state.store().as_ref();
    let db = format!("sqlite://{}", h.db.display());
    let at = Thresholds {
        usage_percent: 95,
        expiring_days: 7,
    };
    assert_eq!(store.watch_users(now, &at).await.unwrap(), 0);
    set(&db, "u1", "used_down", 949).await;
    assert_eq!(
        store.watch_users(now, &at).await.unwrap(),
        0,
        "94.9 % of 95"
    );
    set(&db, "u1", "used_down", 950).await;
    assert_eq!(store.watch_users(now, &at).await.unwrap(), 1, "95 %");
    // Ten days away: not yet; three days later, seven days away: told.
    assert_eq!(store.watch_users(now + 3 * DAY - 1, &at).await.unwrap(), 0);
    assert_eq!(store.watch_users(now + 3 * DAY, &at).await.unwrap(), 1);
    let hooks = store.webhooks().await.unwrap();
    let events: Vec<String> = store
        .deliveries(hooks[0].id, 10)
        .await
        .unwrap()
        .into_iter()
        .rev()
        .map(|d| d.event)
        .collect();
    assert_eq!(events, ["user.usage_high", "user.expiring"]);
}

#[tokio::test]
async fn a_panel_keeps_at_most_64_hooks() {
    let h = Harness::new().await;
    let t = h.token().await;
    for i in 0..switchyard_panel::api::webhooks::MAX_WEBHOOKS {
        hook(
            &h,
            &t,
            &format!("https://hooks.example/{i}"),
            &["user.created"],
            false,
        )
        .await;
    }
    h.post("/api/v1/webhooks")
        .bearer(&t)
        .json(&json!({"url": "https://hooks.example/one-more", "events": ["user.created"]}))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "url");
}
