//! A cluster's and a user's own routing through the API (`/api/v1/clusters/{id}/routing`,
//! `/api/v1/users/{id}/routing`): what is put is read back and reaches the apps'
//! configs at once: the user's own wins, else their cluster's, else the panel's
//! default; `null` clears. Bad entries are refused naming the field; an unknown id is
//! `404`. On SQLite and PostgreSQL.

use crate::common::{Harness, one_user};

use axum::http::StatusCode;
use serde_json::{Value, json};
use switchyard_panel::store::{Changes, SqlStore};

/// The Clash config's `RULE-SET` rules the user at `path` gets.
async fn rule_sets(h: &Harness, path: &str) -> Vec<String> {
    let r = h.get(&format!("{path}?format=clash")).send().await;
    assert_eq!(r.status, StatusCode::OK);
    r.text()
        .lines()
        .filter_map(|l| {
            l.trim()
                .trim_start_matches("- ")
                .strip_prefix("\"RULE-SET,")
        })
        .map(|l| l.trim_end_matches('"').to_owned())
        .collect()
}

async fn story(h: &Harness) {
    let token = h.token().await;
    let t = &token;
    let (c, user) = one_user(h, t).await;
    let (u, path) = (
        user["id"].clone(),
        user["subscription_path"].as_str().unwrap().to_owned(),
    );
    let cluster_url = format!("/api/v1/clusters/{c}/routing");
    let user_url = format!("/api/v1/users/{u}/routing");

    // Nothing of their own: the panel's default, everything through.
    for url in [&cluster_url, &user_url] {
        assert_eq!(
            h.get(url).bearer(t).send().await.ok(StatusCode::OK),
            json!({"routing": null})
        );
    }
    assert_eq!(rule_sets(h, &path).await, Vec::<String>::new());

    let russia = json!({"routing": {"preset": "russia", "block_ads": false, "custom": []}});
    let put =
        |url: String, body: Value| async move { h.put(&url).bearer(t).json(&body).send().await };
    assert_eq!(
        put(cluster_url.clone(), russia.clone())
            .await
            .ok(StatusCode::OK),
        russia
    );
    assert_eq!(
        h.get(&cluster_url)
            .bearer(t)
            .send()
            .await
            .ok(StatusCode::OK),
        russia
    );
    assert_eq!(
        rule_sets(h, &path).await,
        [
            "blocked-ru-domain,Switchyard",
            "blocked-ru-ip,Switchyard",
            "country-ru-domain,DIRECT",
            "country-ru-ip,DIRECT"
        ]
    );

    // The user's own wins.
    let china = json!({"routing": {"preset": "china", "block_ads": true, "custom": [
        {"action": "block", "domain_suffix": ["ads.example"]}
    ]}});
    put(user_url.clone(), china.clone())
        .await
        .ok(StatusCode::OK);
    assert_eq!(
        rule_sets(h, &path).await,
        [
            "ads-domain,REJECT",
            "ads-ip,REJECT",
            "blocked-cn-domain,Switchyard",
            "blocked-cn-ip,Switchyard",
            "country-cn-domain,DIRECT",
            "country-cn-ip,DIRECT"
        ]
    );
    let full = h.get(&user_url).bearer(t).send().await.ok(StatusCode::OK);
    assert_eq!(full["routing"]["custom"][0]["action"], "block");

    // Cleared: the cluster's again.
    put(user_url.clone(), json!({"routing": null}))
        .await
        .ok(StatusCode::OK);
    assert_eq!(rule_sets(h, &path).await.len(), 4);

    // Refused, naming the entry; nothing changes.
    let bad = json!({"routing": {"custom": [{"ip_cidr": ["10.0.0.0/8", "10.0.0.0/33"]}]}});
    put(cluster_url.clone(), bad).await.field_error(
        StatusCode::UNPROCESSABLE_ENTITY,
        "routing.custom[0].ip_cidr[1]",
    );
    let unknown = json!({"routing": {"preset": "mars"}});
    assert_eq!(
        put(cluster_url.clone(), unknown).await.status,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert_eq!(
        h.get(&cluster_url)
            .bearer(t)
            .send()
            .await
            .ok(StatusCode::OK),
        russia
    );
    for url in ["/api/v1/clusters/999/routing", "/api/v1/users/999/routing"] {
        assert_eq!(
            h.get(url).bearer(t).send().await.status,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            put(url.to_owned(), json!({"routing": null})).await.status,
            StatusCode::NOT_FOUND
        );
    }
}

#[tokio::test]
async fn own_routing_on_sqlite() {
    story(&Harness::new().await).await;
}

#[tokio::test]
async fn own_routing_on_postgres() {
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    let url = pg.fresh_database("routing").unwrap();
    let store = SqlStore::open(&url, Changes::default()).await.unwrap();
    story(&Harness::over(store).await).await;
    drop(pg);
}
