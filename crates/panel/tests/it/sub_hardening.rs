//! `GET /sub/{token}` against someone who holds a token: a device limit that a fetch
//! without `x-hwid` cannot pass, a bounded device list without a limit, fetches
//! limited per token (`429` with `Retry-After`), and the browser page shown inline
//! with its security headers (in a real headless Chromium too). Also what apps show:
//! every format names an entry after its route (flag first, unique), and carries the
//! route's id, which stays when the balancer moves the user to another inbound.

use crate::common;
use crate::live;

use axum::http::StatusCode;
use base64::Engine;
use common::{Harness, vless};
use serde_json::{Value, json};
use switchyard_panel::PanelConfig;
use switchyard_panel::store::{ServerStore, UserStore};

async fn cluster(h: &Harness, t: &str, name: &str) -> i64 {
    h.post("/api/v1/clusters")
        .bearer(t)
        .json(&json!({"name": name}))
        .send()
        .await
        .ok(StatusCode::CREATED)["id"]
        .as_i64()
        .unwrap()
}

async fn server(h: &Harness, t: &str, cluster: i64, name: &str, address: &str) -> i64 {
    h.post("/api/v1/servers")
        .bearer(t)
        .json(&json!({"cluster_id": cluster, "name": name, "address": address}))
        .send()
        .await
        .ok(StatusCode::CREATED)["id"]
        .as_i64()
        .unwrap()
}

async fn inbound(h: &Harness, t: &str, server: i64, name: &str, port: u16) -> i64 {
    h.post("/api/v1/inbounds")
        .bearer(t)
        .json(&vless(server, name, port))
        .send()
        .await
        .ok(StatusCode::CREATED)["id"]
        .as_i64()
        .unwrap()
}

/// One cluster, server and inbound (in the default route).
async fn seed(h: &Harness, t: &str) {
    let c = cluster(h, t, "main").await;
    let s = server(h, t, c, "ny-1", "203.0.113.1").await;
    inbound(h, t, s, "ny", 443).await;
}

async fn user(h: &Harness, t: &str, body: Value) -> (i64, String) {
    let u = h
        .post("/api/v1/users")
        .bearer(t)
        .json(&body)
        .send()
        .await
        .ok(StatusCode::CREATED);
    (
        u["id"].as_i64().unwrap(),
        u["subscription_path"].as_str().unwrap().to_owned(),
    )
}

/// The share links of a `?format=links` answer.
fn links(body: &str) -> Vec<String> {
    let text = base64::engine::general_purpose::STANDARD
        .decode(body.trim())
        .unwrap();
    String::from_utf8(text)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn no_limit() -> PanelConfig {
    let mut config = PanelConfig::default();
    config.subscription.fetch_burst = 0;
    config
}

#[tokio::test]
async fn a_device_limit_is_not_passed_by_sending_no_hwid() {
    let h = Harness::new().await;
    let t = h.token().await;
    seed(&h, &t).await;
    let (_, limited) = user(&h, &t, json!({"username": "alice", "device_limit": 1})).await;
    let (_, free) = user(&h, &t, json!({"username": "bob"})).await;
    // By default: no servers, and the reason, as for a device over the limit.
    let r = h.get(&format!("{limited}?format=links")).send().await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(links(&r.text()).len(), 0);
    assert_eq!(
        r.header("announce").unwrap(),
        "This app does not identify the device; use an app that sends x-hwid (Happ, v2RayTun, FlClashX...)."
    );
    // With x-hwid the device counts and gets its servers; without a limit nothing
    // changes for apps that send none.
    let r = h
        .get(&format!("{limited}?format=links"))
        .header("x-hwid", "phone")
        .send()
        .await;
    assert_eq!(links(&r.text()).len(), 1);
    let r = h.get(&format!("{free}?format=links")).send().await;
    assert_eq!(links(&r.text()).len(), 1);

    // The operator may choose to serve them anyway.
    let mut config = PanelConfig::default();
    config.subscription.without_hwid = switchyard_panel::config::WithoutHwid::Serve;
    let h = Harness::with(config).await;
    let t = h.token().await;
    seed(&h, &t).await;
    let (_, limited) = user(&h, &t, json!({"username": "alice", "device_limit": 1})).await;
    let r = h.get(&format!("{limited}?format=links")).send().await;
    assert_eq!(links(&r.text()).len(), 1);
}

#[tokio::test]
async fn devices_are_bounded_without_a_limit() {
    let h = Harness::with(no_limit()).await;
    let t = h.token().await;
    seed(&h, &t).await;
    let (id, sub) = user(&h, &t, json!({"username": "alice"})).await;
    let max = switchyard_panel::store::MAX_DEVICES as usize;
    for i in 0..max + 6 {
        let r = h
            .get(&format!("{sub}?format=links"))
            .header("x-hwid", &format!("made-up-{i}"))
            .send()
            .await;
        // Nobody is refused for it.
        assert_eq!(links(&r.text()).len(), 1, "device {i}");
    }
    let devices = h
        .get(&format!("/api/v1/users/{id}/devices"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    let hwids: Vec<&str> = devices
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["hwid"].as_str().unwrap())
        .collect();
    assert_eq!(hwids.len(), max);
    // The ones seen least recently made room.
    for gone in 0..6 {
        assert!(
            !hwids.contains(&format!("made-up-{gone}").as_str()),
            "{hwids:?}"
        );
    }
    assert!(hwids.contains(&format!("made-up-{}", max + 5).as_str()));
}

#[tokio::test]
async fn each_token_is_limited_with_retry_after() {
    let mut config = PanelConfig::default();
    config.subscription.fetch_burst = 3;
    config.subscription.fetch_refill_s = 3600;
    let h = Harness::with(config).await;
    let t = h.token().await;
    seed(&h, &t).await;
    let (_, alice) = user(&h, &t, json!({"username": "alice"})).await;
    let (_, bob) = user(&h, &t, json!({"username": "bob"})).await;
    for _ in 0..3 {
        assert_eq!(h.get(&alice).send().await.status, StatusCode::OK);
    }
    let r = h.get(&alice).send().await;
    let p = r.problem(StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(r.header("retry-after").as_deref(), Some("3600"));
    assert!(
        p["detail"].as_str().unwrap().contains("fetched too often"),
        "{p}"
    );
    // Made-up device ids get no further.
    let r = h.get(&alice).header("x-hwid", "another").send().await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    // Other tokens are not concerned; unknown ones stay a plain 404, however many.
    assert_eq!(h.get(&bob).send().await.status, StatusCode::OK);
    for _ in 0..10 {
        h.get("/sub/not-a-token")
            .send()
            .await
            .problem(StatusCode::NOT_FOUND);
    }

    // The default: 60 fetches at once pass (a household starting its apps together,
    // a user tapping "update"); the 61st waits 10 s.
    let h = Harness::new().await;
    let t = h.token().await;
    seed(&h, &t).await;
    let (_, alice) = user(&h, &t, json!({"username": "alice"})).await;
    for i in 0..60 {
        assert_eq!(
            h.get(&alice).send().await.status,
            StatusCode::OK,
            "fetch {i}"
        );
    }
    let r = h.get(&alice).send().await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(r.header("retry-after").as_deref(), Some("10"));
}

#[tokio::test]
async fn the_page_is_shown_inline_with_its_security_headers() {
    let h = Harness::new().await;
    let t = h.token().await;
    seed(&h, &t).await;
    let (_, sub) = user(&h, &t, json!({"username": "alice"})).await;
    let r = h.get(&sub).header("accept", "text/html").send().await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.header("content-type").unwrap(),
        "text/html; charset=utf-8"
    );
    assert_eq!(r.header("content-disposition"), None);
    let csp = r.header("content-security-policy").unwrap();
    assert!(csp.starts_with("default-src 'none';"), "{csp}");
    assert!(csp.ends_with("; frame-ancestors 'none'"), "{csp}");
    assert!(csp.contains("script-src 'sha256-"), "{csp}");
    assert_eq!(r.header("x-content-type-options").unwrap(), "nosniff");
    assert_eq!(r.header("x-frame-options").unwrap(), "DENY");
    assert_eq!(r.header("referrer-policy").unwrap(), "no-referrer");
    // Apps still get their file.
    let r = h.get(&format!("{sub}?format=clash")).send().await;
    assert_eq!(
        r.header("content-disposition").unwrap(),
        "attachment; filename=\"switchyard.yaml\""
    );
}

/// Headless Chromium opens the subscription URL and shows the page (an attachment
/// would be downloaded and leave nothing to see); the script the CSP allows runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_shows_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, http) = live::panel(dir.path()).await;
    let service = panel.state.service().clone();
    let cluster = panel
        .state
        .store()
        .create_cluster("Europe", live::now())
        .await
        .unwrap()
        .id;
    let de = live::server(&panel, cluster, "de-1").await;
    service
        .create_inbound(&live::vless(de, "Frankfurt", 8443, true), live::now())
        .await
        .unwrap();
    let alice = service
        .create_user(&live::user("alice"), live::now())
        .await
        .unwrap();
    let b = switchyard_testkit::Browser::start().await.unwrap();
    let url = format!("http://{http}{}", alice.subscription_path);
    b.goto(&url).await.unwrap();
    let title = b
        .wait_for("h1", switchyard_testkit::browser::DEFAULT_WAIT)
        .await
        .unwrap();
    assert_eq!(title.text().await.unwrap(), "Switchyard");
    assert_eq!(b.current_url().await.unwrap(), url);
    let shown = b
        .execute(
            "return [document.contentType, document.querySelectorAll('svg').length, \
             document.body.innerText.includes('Frankfurt')];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(shown[0], "text/html");
    assert!(shown[1].as_u64().unwrap() >= 2, "{shown}");
    assert_eq!(shown[2], true, "{shown}");
    // The copy script runs (its hash is in the CSP header): the button answers.
    b.find("button[data-copy]")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    b.wait_until_text(
        "button[data-copy]",
        "Copied",
        switchyard_testkit::browser::DEFAULT_WAIT,
    )
    .await
    .unwrap();
    // No CSP violation or other error (the browser's own favicon request aside).
    let errors: Vec<String> = b
        .console_errors()
        .await
        .unwrap()
        .into_iter()
        .filter(|e| !e.contains("favicon.ico"))
        .collect();
    assert_eq!(errors, Vec::<String>::new());
}

/// Routes "Frankfurt" (flag `DE`) in two clusters and "Tokyo" (flag 🇯🇵, already in
/// its name): the path of alice's subscription and each route's id.
async fn two_frankfurts(h: &Harness, t: &str) -> (String, [i64; 3]) {
    let mut ids = Vec::new();
    for (n, (c, name, flag)) in [
        ("eu", "Frankfurt", "DE"),
        ("eu-2", "Frankfurt", "🇩🇪"),
        ("asia", "🇯🇵 Tokyo", "🇯🇵"),
    ]
    .into_iter()
    .enumerate()
    {
        let c = cluster(h, t, c).await;
        let s = server(h, t, c, &format!("s{n}"), &format!("203.0.113.{}", n + 1)).await;
        let i = inbound(h, t, s, &format!("inbound-{n}"), 443).await;
        let r = h
            .post(&format!("/api/v1/clusters/{c}/routes"))
            .bearer(t)
            .json(&json!({"name": name, "flag": flag, "inbound_ids": [i]}))
            .send()
            .await
            .ok(StatusCode::CREATED);
        ids.push(r["id"].as_i64().unwrap());
    }
    let (_, sub) = user(h, t, json!({"username": "alice"})).await;
    (sub, [ids[0], ids[1], ids[2]])
}

const NAMES: [&str; 3] = ["🇩🇪 Frankfurt", "🇩🇪 Frankfurt 2", "🇯🇵 Tokyo"];

#[tokio::test]
async fn every_format_names_entries_after_their_routes_and_carries_the_route_id() {
    let h = Harness::with(no_limit()).await;
    let t = h.token().await;
    let (sub, routes) = two_frankfurts(&h, &t).await;
    let get = |format: &str| {
        let path = format!("{sub}?format={format}");
        let h = &h;
        async move { h.get(&path).send().await.text() }
    };
    let ids: Vec<String> = routes.iter().map(i64::to_string).collect();

    // Share links: the #fragment, and `route=ID`.
    let links = links(&get("links").await);
    let read: Vec<_> = links
        .iter()
        .map(|l| switchyard_proto::share::parse_link(l).unwrap())
        .collect();
    assert_eq!(
        read.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(),
        NAMES
    );
    assert_eq!(
        read.iter()
            .map(|e| e.route.clone().unwrap())
            .collect::<Vec<_>>(),
        ids
    );
    assert!(
        links[0].ends_with(&format!(
            "&route={}#%F0%9F%87%A9%F0%9F%87%AA%20Frankfurt",
            ids[0]
        )),
        "{}",
        links[0]
    );

    // sing-box: the outbound tags, and the rules that carry the ids.
    let config: Value = serde_json::from_str(&get("sing-box").await).unwrap();
    let tags: Vec<&str> = config["outbounds"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["type"] == "vless")
        .map(|o| o["tag"].as_str().unwrap())
        .collect();
    assert_eq!(tags, NAMES);
    let entries = switchyard_proto::singbox::entries(&config).unwrap();
    assert_eq!(
        entries
            .iter()
            .map(|e| e.route.clone().unwrap())
            .collect::<Vec<_>>(),
        ids
    );
    assert_eq!(
        config["outbounds"][0]["outbounds"],
        json!(["Fastest", NAMES[0], NAMES[1], NAMES[2]])
    );

    // Clash: the proxies' names, and `switchyard-route`.
    let read = switchyard_proto::clash::read(&get("clash").await).unwrap();
    assert_eq!(
        read.entries
            .iter()
            .map(|e| e.name.as_str())
            .collect::<Vec<_>>(),
        NAMES
    );
    assert_eq!(
        read.entries
            .iter()
            .map(|e| e.route.clone().unwrap())
            .collect::<Vec<_>>(),
        ids
    );

    // Xray: `remarks`, what v2rayN, v2rayNG, Happ and Streisand list.
    let xray: Value = serde_json::from_str(&get("xray").await).unwrap();
    let remarks: Vec<&str> = xray
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["remarks"].as_str().unwrap())
        .collect();
    assert_eq!(remarks, NAMES);

    // The page: each link's heading.
    let page = h
        .get(&sub)
        .header("accept", "text/html")
        .send()
        .await
        .text();
    for name in NAMES {
        assert!(page.contains(&format!(">{name}<")), "{name}: {page}");
    }
}

#[tokio::test]
async fn a_rebalance_keeps_the_route_id_and_changes_the_address() {
    let h = Harness::with(no_limit()).await;
    let t = h.token().await;
    let c = cluster(&h, &t, "eu").await;
    let a = server(&h, &t, c, "fra-1", "203.0.113.1").await;
    let b = server(&h, &t, c, "fra-2", "203.0.113.2").await;
    let ia = inbound(&h, &t, a, "fra-1 vless", 443).await;
    let ib = inbound(&h, &t, b, "fra-2 vless", 8443).await;
    let route = h
        .post(&format!("/api/v1/clusters/{c}/routes"))
        .bearer(&t)
        .json(&json!({"name": "Frankfurt", "flag": "DE", "inbound_ids": [ia, ib]}))
        .send()
        .await
        .ok(StatusCode::CREATED)["id"]
        .as_i64()
        .unwrap();
    let (_, sub) = user(&h, &t, json!({"username": "alice"})).await;
    let fetch = || async {
        let body = h.get(&format!("{sub}?format=links")).send().await.text();
        links(&body)
            .iter()
            .map(|l| switchyard_proto::share::parse_link(l).unwrap())
            .find(|e| e.route == Some(route.to_string()))
            .unwrap()
    };
    let before = fetch().await;
    // The chosen inbound leaves the route: the balancer moves alice to the other.
    let chosen = if before.server == "203.0.113.1" {
        ia
    } else {
        ib
    };
    let other = if chosen == ia { ib } else { ia };
    h.put(&format!("/api/v1/routes/{route}"))
        .bearer(&t)
        .json(&json!({"name": "Frankfurt", "flag": "DE", "inbound_ids": [other]}))
        .send()
        .await
        .ok(StatusCode::OK);
    let after = fetch().await;
    assert_ne!(
        (&before.server, before.port),
        (&after.server, after.port),
        "the address changes"
    );
    assert_eq!(after.route, before.route, "the route id stays");
    assert_eq!(after.name, "🇩🇪 Frankfurt");
    assert_eq!(before.name, "🇩🇪 Frankfurt");
}

/// The device bound in the store itself, on SQLite and PostgreSQL: without a limit a
/// new device beyond `MAX_DEVICES` replaces the one seen least recently (a known
/// one refreshed first keeps its place); with a limit the limit holds.
async fn device_bound_story(store: switchyard_panel::store::SqlStore) {
    use switchyard_panel::model::{Credentials, ResetStrategy};
    use switchyard_panel::store::{DeviceOutcome, DeviceSeen, MAX_DEVICES, RouteStore, UserInput};
    const NOW: i64 = 1_796_121_000_000;
    let input = UserInput {
        username: "alice".into(),
        enabled: true,
        note: String::new(),
        traffic_limit: None,
        reset_strategy: ResetStrategy::None,
        expires_ms: None,
        on_hold_days: None,
        device_limit: None,
        address_limit: None,
        clusters: None,
    };
    let creds = Credentials {
        vless_uuid: "00000000-0000-4000-8000-000000000001".into(),
        trojan_password: "trojan-1".into(),
        ss_seed: "seed-1".into(),
    };
    let u = store
        .create_user(&input, &creds, "tok-a", NOW)
        .await
        .unwrap();
    let seen = |hwid: String| DeviceSeen {
        hwid,
        ..DeviceSeen::default()
    };
    let max = i64::from(MAX_DEVICES);
    for i in 0..max {
        let outcome = store
            .register_device(u.id, &seen(format!("d{i}")), None, NOW + i)
            .await
            .unwrap();
        assert_eq!(outcome, DeviceOutcome::Registered);
    }
    // d0 comes back: it is now the most recent, d1 the least.
    store
        .register_device(u.id, &seen("d0".into()), None, NOW + max)
        .await
        .unwrap();
    for (k, hwid) in ["new-1", "new-2"].into_iter().enumerate() {
        let at = NOW + max + 1 + i64::try_from(k).unwrap();
        let outcome = store
            .register_device(u.id, &seen(hwid.into()), None, at)
            .await
            .unwrap();
        assert_eq!(outcome, DeviceOutcome::Registered);
    }
    let hwids: Vec<String> = store
        .devices(u.id)
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.hwid)
        .collect();
    assert_eq!(hwids.len(), MAX_DEVICES as usize);
    assert_eq!(&hwids[..3], ["new-2", "new-1", "d0"]);
    assert!(!hwids.contains(&"d1".to_owned()) && !hwids.contains(&"d2".to_owned()));
    // With a limit under the count, new devices are refused and nothing is forgotten.
    let outcome = store
        .register_device(u.id, &seen("limited".into()), Some(3), NOW + 2 * max)
        .await
        .unwrap();
    assert_eq!(outcome, DeviceOutcome::OverLimit);
    assert_eq!(
        store.devices(u.id).await.unwrap().len(),
        MAX_DEVICES as usize
    );
}

#[tokio::test]
async fn devices_are_bounded_in_the_store_on_sqlite() {
    use switchyard_panel::store::{Changes, SqlStore};
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("panel.db").display());
    device_bound_story(SqlStore::open(&url, Changes::default()).await.unwrap()).await;
}

#[tokio::test]
async fn devices_are_bounded_in_the_store_on_postgres() {
    use switchyard_panel::store::{Changes, SqlStore};
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    let url = pg.fresh_database("devices").unwrap();
    device_bound_story(SqlStore::open(&url, Changes::default()).await.unwrap()).await;
    drop(pg);
}

/// Before entries were named after their routes, a default route was made as
/// "Default": migration 15 names such a route after its first inbound (what its users
/// saw), and leaves a default route without inbounds as it is. `rewind` turns the
/// database back (the names, and migration 15 not applied) by raw SQL.
async fn default_route_migration_story<F, Fut>(url: &str, rewind: F)
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    use std::sync::Arc;
    use switchyard_panel::service::Service;
    use switchyard_panel::store::{Changes, RouteStore, SqlStore};
    let store = SqlStore::open(url, Changes::default()).await.unwrap();
    let service = Service::new(Arc::new(store.clone()));
    let mut clusters = Vec::new();
    for (name, inbound) in [("us", "🇺🇸 New York"), ("eu", "Frankfurt")] {
        let c = store.create_cluster(name, live::now()).await.unwrap().id;
        let s = service
            .create_server(
                &switchyard_panel::store::ServerInput {
                    cluster_id: c,
                    name: format!("{name}-1"),
                    address: "203.0.113.1".into(),
                    allow_private_destinations: false,
                },
                live::now(),
            )
            .await
            .unwrap()
            .id;
        let i = service
            .create_inbound(&live::vless(s, inbound, 443, true), live::now())
            .await
            .unwrap();
        clusters.push((c, i.id));
    }
    // The new default routes are named after their inbounds already.
    assert_eq!(
        store.routes(clusters[0].0).await.unwrap()[0].name,
        "🇺🇸 New York"
    );
    // eu's default route loses its inbound.
    store.attach_inbound(clusters[1].1, None).await.unwrap();
    drop(service);
    drop(store);
    rewind().await;
    let again = SqlStore::open(url, Changes::default()).await.unwrap();
    let names = |routes: Vec<switchyard_panel::model::Route>| {
        routes.into_iter().map(|r| r.name).collect::<Vec<_>>()
    };
    assert_eq!(
        names(again.routes(clusters[0].0).await.unwrap()),
        ["🇺🇸 New York"]
    );
    assert_eq!(
        names(again.routes(clusters[1].0).await.unwrap()),
        ["Default"]
    );
}

const REWIND: &str = "UPDATE routes SET name = 'Default' WHERE is_default = 1; \
    DELETE FROM _sqlx_migrations WHERE version = 15";

#[tokio::test]
async fn old_default_routes_are_named_after_their_inbound_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("panel.db").display());
    default_route_migration_story(&url, || async {
        let raw = sqlx::SqlitePool::connect(&url).await.unwrap();
        for sql in REWIND.split(';') {
            sqlx::query(sql).execute(&raw).await.unwrap();
        }
        raw.close().await;
    })
    .await;
}

#[tokio::test]
async fn old_default_routes_are_named_after_their_inbound_on_postgres() {
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    let url = pg.fresh_database("default_route").unwrap();
    default_route_migration_story(&url, || async {
        pg.psql("default_route", REWIND).unwrap();
    })
    .await;
    drop(pg);
}
