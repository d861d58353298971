//! The dashboard's numbers, to the user and the byte: users by status, online now,
//! expiring soon, nearly out of traffic, servers by state, traffic per day from the
//! servers' hourly history; a reseller may not read it.

use axum::http::StatusCode;
use serde_json::json;
use sqlx::any::AnyPoolOptions;

use crate::common::{Harness, one_user};

const DAY: i64 = 86_400_000;

#[tokio::test]
async fn the_dashboard_counts_users_servers_and_traffic() {
    let h = Harness::new().await;
    let t = h.token().await;
    let (_, alice) = one_user(&h, &t).await;
    let now = switchyard_panel::clock::now_ms();
    for body in [
        json!({"username": "bob", "enabled": false}),
        json!({"username": "carol", "expires_ms": now - DAY}),
        json!({"username": "dave", "expires_ms": now + 2 * DAY}),
        json!({"username": "erin", "traffic_limit": 100}),
        json!({"username": "frank", "on_hold_days": 3}),
    ] {
        h.post("/api/v1/users")
            .bearer(&t)
            .json(&body)
            .send()
            .await
            .ok(StatusCode::CREATED);
    }
    let raw = AnyPoolOptions::new()
        .max_connections(1)
        .connect(&format!("sqlite://{}", h.db.display()))
        .await
        .unwrap();
    sqlx::query("UPDATE users SET used_down = 95 WHERE username = 'erin'")
        .execute(&raw)
        .await
        .unwrap();
    sqlx::query("UPDATE users SET online_ms = $1 WHERE id = $2")
        .bind(now - 1000)
        .bind(alice["id"].as_i64().unwrap())
        .execute(&raw)
        .await
        .unwrap();
    // Two days ago, one hour: two heartbeats averaging 1,000 B/s up and 2,000 down.
    let day = now.div_euclid(DAY) * DAY - 2 * DAY;
    sqlx::query(
        "INSERT INTO server_history (server_id, step_ms, at_ms, samples, up_sum, down_sum, \
         users_sum, users_max) SELECT id, 3600000, $1, 2, 2000, 4000, 0, 0 FROM servers",
    )
    .bind(day + 5 * 3_600_000)
    .execute(&raw)
    .await
    .unwrap();

    let d = h
        .get("/api/v1/dashboard")
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(
        d["users"],
        json!({"active": 3, "limited": 0, "expired": 1, "disabled": 1, "on_hold": 1})
    );
    assert_eq!(d["online"], 1);
    assert_eq!(d["expiring"], json!({"count": 1, "names": ["dave"]}));
    assert_eq!(d["nearly_out"], json!({"count": 1, "names": ["erin"]}));
    assert_eq!(d["servers"], json!({"pending": 1}));
    assert_eq!(d["tunnels"], json!({}));
    let traffic = d["traffic"].as_array().unwrap();
    assert_eq!(traffic.len(), 30);
    assert_eq!(traffic[27], json!({"day_ms": day, "bytes": 3000 * 3600}));
    let total: u64 = traffic.iter().map(|t| t["bytes"].as_u64().unwrap()).sum();
    assert_eq!(total, 3000 * 3600);
    assert_eq!(traffic[29]["day_ms"], now.div_euclid(DAY) * DAY);

    // A reseller does not read it.
    h.post("/api/v1/admins")
        .bearer(&t)
        .json(&json!({"username": "ann", "password": "a long enough password", "role": "reseller"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    let login = h
        .post("/api/v1/session")
        .json(&json!({"username": "ann", "password": "a long enough password"}))
        .send()
        .await;
    let cookie = login.header("set-cookie").unwrap();
    let r = h
        .get("/api/v1/dashboard")
        .header("cookie", cookie.split(';').next().unwrap())
        .send()
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
}

/// The same users on PostgreSQL as on SQLite: the same numbers (one pass over the
/// users counts every status, online, expiring and nearly out on both).
#[tokio::test]
async fn the_numbers_are_the_same_on_postgres() {
    use switchyard_panel::store::{Changes, DashboardStore, SqlStore, UserInput, UserStore};
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    let dir = tempfile::tempdir().unwrap();
    let now = switchyard_panel::clock::now_ms();
    let mut numbers = Vec::new();
    for url in [
        pg.fresh_database("dashboard").unwrap(),
        format!("sqlite://{}?mode=rwc", dir.path().join("d.db").display()),
    ] {
        let store = SqlStore::open(&url, Changes::default()).await.unwrap();
        for (i, input) in [
            UserInput::new("alice"),
            UserInput {
                enabled: false,
                ..UserInput::new("bob")
            },
            UserInput {
                expires_ms: Some(now - DAY),
                ..UserInput::new("carol")
            },
            UserInput {
                expires_ms: Some(now + 2 * DAY),
                ..UserInput::new("dave")
            },
            UserInput {
                traffic_limit: Some(100),
                ..UserInput::new("erin")
            },
            UserInput {
                on_hold_days: Some(3),
                ..UserInput::new("frank")
            },
        ]
        .iter()
        .enumerate()
        {
            store
                .create_user(
                    input,
                    &switchyard_panel::service::new_credentials(),
                    &format!("token-{i}-0123456789abcdefghijkl"),
                    now,
                )
                .await
                .unwrap();
        }
        let raw = AnyPoolOptions::new()
            .max_connections(1)
            .connect(&url)
            .await
            .unwrap();
        sqlx::query("UPDATE users SET used_down = 95 WHERE username = 'erin'")
            .execute(&raw)
            .await
            .unwrap();
        let n = store.numbers(now).await.unwrap();
        let v = serde_json::to_value(&n).unwrap();
        assert_eq!(
            v["users"],
            json!({"active": 3, "limited": 0, "expired": 1, "disabled": 1, "on_hold": 1}),
            "{url}"
        );
        assert_eq!(
            v["expiring"],
            json!({"count": 1, "names": ["dave"]}),
            "{url}"
        );
        assert_eq!(
            v["nearly_out"],
            json!({"count": 1, "names": ["erin"]}),
            "{url}"
        );
        numbers.push(v);
    }
    assert_eq!(numbers[0], numbers[1]);
    drop(pg);
}
