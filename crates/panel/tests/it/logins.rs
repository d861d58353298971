//! Logins under attack, through the router: a hundred wrong logins at once cost a
//! bounded number of password hashes (counted by the panel's own counter, not by
//! memory), the real admin logs in from another address while an attacker hammers
//! the name, and `X-Forwarded-For` counts only from a trusted proxy.

use axum::http::StatusCode;
use futures_util::future::join_all;
use serde_json::json;
use switchyard_panel::PanelConfig;
use switchyard_panel::config::{AuthSettings, HttpSettings};

use crate::common::{ADMIN, Harness, PASSWORD, Reply};

fn config(auth: AuthSettings, http: HttpSettings) -> PanelConfig {
    PanelConfig {
        public_url: Some("http://panel.test".into()),
        auth,
        http,
        ..PanelConfig::default()
    }
}

async fn attempt(h: &Harness, peer: &str, forwarded: Option<&str>, password: &str) -> Reply {
    let mut r = h
        .post("/api/v1/session")
        .peer(peer)
        .json(&json!({"username": ADMIN, "password": password}));
    if let Some(f) = forwarded {
        r = r.header("x-forwarded-for", f);
    }
    r.send().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_wrong_logins_at_once_cost_a_bounded_number_of_hashes() {
    let h = Harness::with(config(
        AuthSettings {
            login_burst: 10,
            max_password_checks: 2,
            // Long enough that no check of the burst misses its turn on a busy machine.
            password_check_wait_s: 60,
            ..AuthSettings::default()
        },
        HttpSettings::default(),
    ))
    .await;
    // From one address: the slots are taken before hashing, so only the burst is
    // hashed; the rest are refused at once.
    let replies = join_all((0..100).map(|_| attempt(&h, "192.0.2.7:4000", None, "wrong"))).await;
    let unauthorized = replies
        .iter()
        .filter(|r| r.status == StatusCode::UNAUTHORIZED)
        .count();
    let limited = replies
        .iter()
        .filter(|r| r.status == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert_eq!((unauthorized, limited), (10, 90));
    let checks = h.state.password_checks();
    assert_eq!(checks.count(), 10, "password hashes for 100 attempts");
    assert!(checks.peak() <= 2, "{} hashes at once", checks.peak());
    assert!(
        replies
            .iter()
            .filter(|r| r.status == StatusCode::TOO_MANY_REQUESTS)
            .all(|r| r.header("retry-after").is_some())
    );

    // From a hundred addresses: each may try, but never more than two hashes run at
    // once; those that find no turn in time are answered 503 with Retry-After.
    let replies = join_all((0..100).map(|i| {
        let peer = format!("198.51.100.{}:4000", i + 1);
        let h = &h;
        async move { attempt(h, &peer, None, "wrong").await }
    }))
    .await;
    for r in &replies {
        match r.status {
            StatusCode::UNAUTHORIZED => {}
            StatusCode::SERVICE_UNAVAILABLE => {
                r.problem(StatusCode::SERVICE_UNAVAILABLE);
                assert!(r.header("retry-after").is_some());
            }
            other => panic!("{other}: {}", r.text()),
        }
    }
    assert!(checks.peak() <= 2, "{} hashes at once", checks.peak());
    assert!(checks.count() <= 110, "{}", checks.count());
    // The count is a metric too.
    let token = h.token().await;
    let metrics = h.get("/metrics").bearer(&token).send().await.text();
    let line = format!("switchyard_panel_password_checks_total {}", checks.count());
    assert!(metrics.contains(&line), "{metrics}");
}

#[tokio::test]
async fn the_admin_logs_in_from_another_address_while_an_attacker_hammers() {
    let h = Harness::with(config(
        AuthSettings {
            login_burst: 3,
            login_refill_s: 30,
            ..AuthSettings::default()
        },
        HttpSettings::default(),
    ))
    .await;
    // The attacker spreads over addresses; the name's burst is soon spent, and then
    // every address that failed it is held back, even with credit of its own.
    for i in 0..6 {
        attempt(&h, &format!("203.0.113.{i}:5000"), None, "guess")
            .await
            .problem(StatusCode::UNAUTHORIZED);
    }
    let held = attempt(&h, "203.0.113.1:5001", None, "guess").await;
    let p = held.problem(StatusCode::TOO_MANY_REQUESTS);
    assert!(
        p["detail"].as_str().unwrap().contains("for this name"),
        "{p}"
    );
    // While it goes on, the real admin, from an address that never failed, gets in.
    let (attacks, admin) = tokio::join!(
        async {
            let mut statuses = Vec::new();
            for i in 0..10 {
                let r = attempt(&h, &format!("203.0.113.{}:5002", i % 6), None, "guess").await;
                statuses.push(r.status);
            }
            statuses
        },
        attempt(&h, "198.51.100.5:6000", None, PASSWORD)
    );
    admin.ok(StatusCode::OK);
    assert!(
        attacks.iter().all(|s| *s == StatusCode::TOO_MANY_REQUESTS),
        "{attacks:?}"
    );
}

#[tokio::test]
async fn forwarded_for_is_ignored_by_default_and_believed_from_a_trusted_proxy() {
    let auth = AuthSettings {
        login_burst: 3,
        login_refill_s: 30,
        ..AuthSettings::default()
    };
    // Off: everyone behind the proxy is the proxy, whatever the header says.
    let h = Harness::with(config(auth.clone(), HttpSettings::default())).await;
    for i in 0..3 {
        attempt(
            &h,
            "127.0.0.1:7000",
            Some(&format!("203.0.113.{i}")),
            "guess",
        )
        .await
        .problem(StatusCode::UNAUTHORIZED);
    }
    attempt(&h, "127.0.0.1:7000", Some("198.51.100.5"), PASSWORD)
        .await
        .problem(StatusCode::TOO_MANY_REQUESTS);

    // Trusted: the right-most address the proxy did not write itself is the client;
    // what a client prepends proves nothing.
    let h = Harness::with(config(
        auth,
        HttpSettings {
            trusted_proxies: vec!["127.0.0.1".into()],
            ..HttpSettings::default()
        },
    ))
    .await;
    for _ in 0..3 {
        attempt(
            &h,
            "127.0.0.1:7000",
            Some("198.51.100.5, 203.0.113.9"),
            "guess",
        )
        .await
        .problem(StatusCode::UNAUTHORIZED);
    }
    attempt(
        &h,
        "127.0.0.1:7000",
        Some("198.51.100.5, 203.0.113.9"),
        PASSWORD,
    )
    .await
    .problem(StatusCode::TOO_MANY_REQUESTS);
    let r = attempt(&h, "127.0.0.1:7000", Some("198.51.100.5"), PASSWORD).await;
    r.ok(StatusCode::OK);
    // The session remembers the client, not the proxy.
    let cookie = r
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let sessions = h
        .get("/api/v1/sessions")
        .header("cookie", &cookie)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(sessions[0]["address"], "198.51.100.5", "{sessions}");
    // A connection from elsewhere is itself, whatever it claims.
    let r = attempt(&h, "192.0.2.50:7000", Some("198.51.100.77"), PASSWORD).await;
    r.ok(StatusCode::OK);
    let sessions = h
        .get("/api/v1/sessions")
        .header("cookie", &cookie)
        .send()
        .await
        .ok(StatusCode::OK);
    let mut addresses: Vec<&str> = sessions
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["address"].as_str().unwrap())
        .collect();
    addresses.sort_unstable();
    assert_eq!(addresses, ["192.0.2.50", "198.51.100.5"], "{sessions}");
}
