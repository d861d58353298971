//! Routes and balancing through the API, without a socket: route CRUD, moving
//! inbounds between routes (atomically: an inbound is in at most one route), the
//! order of routes as the order of the subscription's entries, empty routes hidden,
//! the "not in any route" warning, and the balancer's choices from the servers'
//! stored measurements (what the node tasks store every heartbeat), sticky across
//! fetches and persisted. Exact values throughout.

use crate::common;

use axum::http::StatusCode;
use base64::Engine;
use common::{Harness, vless};
use serde_json::{Value, json};
use switchyard_balance::capacity::Capacity;
use switchyard_panel::model::{Health, HealthSettings, Observation};
use switchyard_panel::store::{InboundStore, RouteStore, ServerReport, ServerStore, UserStore};

/// A cluster with two servers and `n` VLESS inbounds on each; (cluster, servers,
/// inbounds per server).
async fn seed(h: &Harness, token: &str, n: usize) -> (i64, Vec<i64>, Vec<Vec<i64>>) {
    let c = h
        .post("/api/v1/clusters")
        .bearer(token)
        .json(&json!({"name": "main"}))
        .send()
        .await
        .ok(StatusCode::CREATED)["id"]
        .as_i64()
        .unwrap();
    let mut servers = Vec::new();
    let mut inbounds = Vec::new();
    for (i, name) in ["ny", "dallas"].iter().enumerate() {
        let s = h
            .post("/api/v1/servers")
            .bearer(token)
            .json(
                &json!({"cluster_id": c, "name": name, "address": format!("203.0.113.{}", i + 1)}),
            )
            .send()
            .await
            .ok(StatusCode::CREATED)["id"]
            .as_i64()
            .unwrap();
        let mut mine = Vec::new();
        for k in 0..n {
            let label = format!("{name}-{k}");
            mine.push(
                h.post("/api/v1/inbounds")
                    .bearer(token)
                    .json(&vless(s, &label, 443 + k as u16))
                    .send()
                    .await
                    .ok(StatusCode::CREATED)["id"]
                    .as_i64()
                    .unwrap(),
            );
        }
        servers.push(s);
        inbounds.push(mine);
    }
    (c, servers, inbounds)
}

async fn user(h: &Harness, token: &str, name: &str) -> String {
    h.post("/api/v1/users")
        .bearer(token)
        .json(&json!({"username": name}))
        .send()
        .await
        .ok(StatusCode::CREATED)["subscription_path"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The inbounds a subscription's entries stand for, in order, by name: which one
/// each route's balancer chose (found by the entry's address and port; entries are
/// named after their routes).
async fn names(h: &Harness, path: &str) -> Vec<String> {
    let body = h.get(&format!("{path}?format=links")).send().await.text();
    let text = base64::engine::general_purpose::STANDARD
        .decode(body.trim())
        .unwrap();
    let servers = h.store.servers(None).await.unwrap();
    let inbounds = h.store.inbounds(None, None).await.unwrap();
    String::from_utf8(text)
        .unwrap()
        .lines()
        .map(|l| {
            let e = switchyard_proto::share::parse_link(l).unwrap();
            let server = servers
                .iter()
                .find(|s| s.address == e.server)
                .unwrap_or_else(|| panic!("no server at {}", e.server));
            inbounds
                .iter()
                .find(|i| i.server_id == server.id && i.port == e.port)
                .unwrap_or_else(|| panic!("no inbound at {}:{}", e.server, e.port))
                .name
                .clone()
        })
        .collect()
}

fn ids(v: &Value) -> Vec<i64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect()
}

fn route_ids(routes: &Value) -> Vec<i64> {
    routes["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn routes_hold_each_inbound_once_and_order_the_subscription() {
    let h = Harness::new().await;
    let t = h.token().await;
    let (c, _servers, inb) = seed(&h, &t, 2).await;
    let sub = user(&h, &t, "alice").await;
    let routes = h
        .get(&format!("/api/v1/clusters/{c}/routes"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    // The first inbound went into the default route; three are outside every route.
    assert_eq!(routes["routes"].as_array().unwrap().len(), 1);
    let default = routes["routes"][0]["id"].as_i64().unwrap();
    assert_eq!(routes["routes"][0]["is_default"], true);
    assert_eq!(ids(&routes["routes"][0]["inbound_ids"]), vec![inb[0][0]]);
    assert_eq!(
        ids(&routes["unattached_inbound_ids"]),
        vec![inb[0][1], inb[1][0], inb[1][1]]
    );
    assert_eq!(
        routes["warning"],
        "3 inbound(s) are not in any route — clients can't see them yet"
    );
    assert_eq!(names(&h, &sub).await, ["ny-0"]);

    // A new route with two inbounds, one taken from the default route: it moves.
    let usa = h
        .post(&format!("/api/v1/clusters/{c}/routes"))
        .bearer(&t)
        .json(
            &json!({"name": "🇺🇸 USA", "flag": "🇺🇸", "algorithm": "round_robin",
            "inbound_ids": [inb[1][0], inb[0][0]]}),
        )
        .send()
        .await
        .ok(StatusCode::CREATED);
    let usa_id = usa["id"].as_i64().unwrap();
    assert_eq!(usa["name"], "🇺🇸 USA");
    assert_eq!(usa["flag"], "🇺🇸");
    assert_eq!(usa["algorithm"], "round_robin");
    assert_eq!(usa["position"], 1);
    assert_eq!(ids(&usa["inbound_ids"]), vec![inb[1][0], inb[0][0]]);
    let default_now = h
        .get(&format!("/api/v1/routes/{default}"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(ids(&default_now["inbound_ids"]), Vec::<i64>::new());
    // The default route is empty now: hidden from the subscription. USA's choice is
    // round-robin over two servers that never connected: the least bad, by pool order.
    assert_eq!(names(&h, &sub).await, ["dallas-0"]);

    // An empty placeholder route, then attaching an inbound brings it alive.
    let japan = h
        .post(&format!("/api/v1/clusters/{c}/routes"))
        .bearer(&t)
        .json(&json!({"name": "🇯🇵 Japan"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    let japan_id = japan["id"].as_i64().unwrap();
    assert_eq!(japan["algorithm"], "least_loaded");
    assert_eq!(japan["position"], 2);
    let moved = h
        .put(&format!("/api/v1/inbounds/{}/route", inb[0][1]))
        .bearer(&t)
        .json(&json!({"route_id": japan_id}))
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(moved["route_id"], japan_id);
    assert_eq!(names(&h, &sub).await, ["dallas-0", "ny-1"]);

    // Moving an inbound from USA to Japan: it leaves USA in the same write.
    h.put(&format!("/api/v1/inbounds/{}/route", inb[1][0]))
        .bearer(&t)
        .json(&json!({"route_id": japan_id}))
        .send()
        .await
        .ok(StatusCode::OK);
    let usa_now = h.store.route(usa_id).await.unwrap();
    assert_eq!(usa_now.inbound_ids, vec![inb[0][0]]);
    let japan_now = h.store.route(japan_id).await.unwrap();
    assert_eq!(japan_now.inbound_ids, vec![inb[0][1], inb[1][0]]);
    assert_eq!(names(&h, &sub).await, ["ny-0", "ny-1"]);

    // Order: Japan first (the arrows), then a full order; the subscription follows.
    let after = h
        .post(&format!("/api/v1/routes/{japan_id}/move"))
        .bearer(&t)
        .json(&json!({"direction": "up"}))
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(route_ids(&after), vec![default, japan_id, usa_id]);
    h.post(&format!("/api/v1/routes/{japan_id}/move"))
        .bearer(&t)
        .json(&json!({"direction": "up"}))
        .send()
        .await
        .ok(StatusCode::OK);
    // At the top it stays.
    let top = h
        .post(&format!("/api/v1/routes/{japan_id}/move"))
        .bearer(&t)
        .json(&json!({"direction": "up"}))
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(route_ids(&top), vec![japan_id, default, usa_id]);
    assert_eq!(names(&h, &sub).await, ["ny-1", "ny-0"]);
    let ordered = h
        .put(&format!("/api/v1/clusters/{c}/routes/order"))
        .bearer(&t)
        .json(&json!({"route_ids": [usa_id, default, japan_id]}))
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(route_ids(&ordered), vec![usa_id, default, japan_id]);
    assert_eq!(
        ordered["warning"],
        "1 inbound(s) are not in any route — clients can't see them yet"
    );
    assert_eq!(names(&h, &sub).await, ["ny-0", "ny-1"]);
    // An order that leaves a route out is refused, naming the field.
    h.put(&format!("/api/v1/clusters/{c}/routes/order"))
        .bearer(&t)
        .json(&json!({"route_ids": [usa_id, japan_id]}))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "route_ids");

    // Rename and replace the pool; inbounds left out are detached.
    let renamed = h
        .put(&format!("/api/v1/routes/{japan_id}"))
        .bearer(&t)
        .json(&json!({"name": "🇯🇵 Tokyo", "algorithm": "least_loaded", "inbound_ids": [inb[1][1]]}))
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(renamed["name"], "🇯🇵 Tokyo");
    assert_eq!(renamed["flag"], Value::Null);
    assert_eq!(ids(&renamed["inbound_ids"]), vec![inb[1][1]]);
    let listed = h
        .get(&format!("/api/v1/clusters/{c}/routes"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(
        ids(&listed["unattached_inbound_ids"]),
        vec![inb[0][1], inb[1][0]]
    );
    // Detach ("Not attached"), then delete a route: its inbounds are detached.
    h.put(&format!("/api/v1/inbounds/{}/route", inb[0][0]))
        .bearer(&t)
        .json(&json!({"route_id": null}))
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(names(&h, &sub).await, ["dallas-1"]);
    h.delete(&format!("/api/v1/routes/{japan_id}"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::NO_CONTENT);
    assert!(names(&h, &sub).await.is_empty());
    let left = h
        .get(&format!("/api/v1/clusters/{c}/routes"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(route_ids(&left), vec![usa_id, default]);
    assert_eq!(left["routes"][0]["position"], 0);
    assert_eq!(left["routes"][1]["position"], 1);
    assert_eq!(
        left["warning"],
        "4 inbound(s) are not in any route — clients can't see them yet"
    );
}

#[tokio::test]
async fn bad_route_input_names_the_field() {
    let h = Harness::new().await;
    let t = h.token().await;
    let (c, _s, inb) = seed(&h, &t, 1).await;
    let other = h
        .post("/api/v1/clusters")
        .bearer(&t)
        .json(&json!({"name": "other"}))
        .send()
        .await
        .ok(StatusCode::CREATED)["id"]
        .as_i64()
        .unwrap();
    let foreign = h
        .post(&format!("/api/v1/clusters/{other}/routes"))
        .bearer(&t)
        .json(&json!({"name": "x"}))
        .send()
        .await
        .ok(StatusCode::CREATED)["id"]
        .as_i64()
        .unwrap();
    let cases = [
        (json!({"name": ""}), "name"),
        (json!({"name": "a", "flag": "x".repeat(17)}), "flag"),
        (json!({"name": "a", "algorithm": "random"}), "algorithm"),
        (
            json!({"name": "a", "inbound_ids": [inb[0][0], inb[0][0]]}),
            "inbound_ids",
        ),
        (json!({"name": "a", "inbound_ids": [999]}), "inbound_ids"),
        (json!({"name": "a", "colour": "red"}), "colour"),
    ];
    for (body, field) in cases {
        h.post(&format!("/api/v1/clusters/{c}/routes"))
            .bearer(&t)
            .json(&body)
            .send()
            .await
            .field_error(StatusCode::UNPROCESSABLE_ENTITY, field);
    }
    // An inbound of another cluster cannot join, neither way.
    h.post(&format!("/api/v1/clusters/{other}/routes"))
        .bearer(&t)
        .json(&json!({"name": "a", "inbound_ids": [inb[0][0]]}))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "inbound_ids");
    h.put(&format!("/api/v1/inbounds/{}/route", inb[0][0]))
        .bearer(&t)
        .json(&json!({"route_id": foreign}))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "route_id");
    h.put(&format!("/api/v1/inbounds/{}/route", inb[0][0]))
        .bearer(&t)
        .json(&json!({"route_id": 12345}))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "route_id");
    h.post(&format!("/api/v1/routes/{foreign}/move"))
        .bearer(&t)
        .json(&json!({"direction": "sideways"}))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "direction");
    h.get("/api/v1/routes/4242")
        .bearer(&t)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);
    h.post("/api/v1/clusters/4242/routes")
        .bearer(&t)
        .json(&json!({"name": "a"}))
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);
}

/// Stores what a heartbeat of `server` would: online, `users` online, `traffic`
/// bytes/s, and a warmed-up capacity estimate of `capacity` bytes/s (or none).
async fn measure(h: &Harness, server: i64, users: u64, traffic: u64, capacity: Option<f64>) {
    let now = h.state.now();
    let mut health = Health::new(now - 10_000, HealthSettings::default());
    health.observe(now - 2_000, Observation::Answered);
    health.observe(now, Observation::Answered);
    let capacity = capacity.map(|peak| Capacity {
        peak,
        above_floor_ms: 3_600_000,
        last_ms: Some(now),
    });
    h.store
        .report_server(
            server,
            &ServerReport {
                health,
                config_version: None,
                users_online: users,
                throughput: (traffic / 2, traffic - traffic / 2),
                capacity: capacity.or(Some(Capacity::default())),
                node_version: None,
                binary_sha256: None,
            },
            now,
        )
        .await
        .unwrap();
    // The next subscription sees it at once (the cache is kept for a second).
    h.state.topology().invalidate();
}

/// Stores `server` as last heard from a minute ago: past the grace, so unavailable.
async fn silence(h: &Harness, server: i64) {
    let stale = h.state.now() - 60_000;
    let mut health = Health::new(stale - 10_000, HealthSettings::default());
    health.observe(stale - 2_000, Observation::Answered);
    health.observe(stale, Observation::Answered);
    let report = ServerReport {
        health,
        config_version: None,
        users_online: 0,
        throughput: (0, 0),
        capacity: None,
        node_version: None,
        binary_sha256: None,
    };
    h.store.report_server(server, &report, stale).await.unwrap();
    h.state.topology().invalidate();
}

#[tokio::test]
async fn the_balancer_chooses_from_fresh_measurements_and_keeps_its_choice() {
    let h = Harness::new().await;
    let t = h.token().await;
    let (c, servers, inb) = seed(&h, &t, 1).await;
    let (ny, dallas) = (servers[0], servers[1]);
    let route = h
        .get(&format!("/api/v1/clusters/{c}/routes"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK)["routes"][0]["id"]
        .as_i64()
        .unwrap();
    h.put(&format!("/api/v1/routes/{route}"))
        .bearer(&t)
        .json(&json!({"name": "USA", "inbound_ids": [inb[0][0], inb[1][0]]}))
        .send()
        .await
        .ok(StatusCode::OK);

    // Least loaded: NY (1000 − 400) / (2 + 1) = 200 per user, Dallas (2000 − 1000) /
    // (3 + 1) = 250: Dallas.
    measure(&h, ny, 2, 400, Some(1000.0)).await;
    measure(&h, dallas, 3, 1000, Some(2000.0)).await;
    let alice = user(&h, &t, "alice").await;
    assert_eq!(names(&h, &alice).await, ["dallas-0"]);
    // Conditions shift a little (NY 220 < 250 × 1.25): alice keeps Dallas, and the
    // choice is in the database.
    measure(&h, ny, 2, 340, Some(1000.0)).await;
    assert_eq!(names(&h, &alice).await, ["dallas-0"]);
    let alice_id = h
        .store
        .user_by_token(alice.trim_start_matches("/sub/"), 0)
        .await
        .unwrap()
        .unwrap()
        .0
        .id;
    assert_eq!(
        h.store.sticky_choices(alice_id).await.unwrap(),
        vec![(route, inb[1][0])]
    );
    // A newcomer gets NY now: 220 < 250? No: Dallas still 250 — but with one user
    // more there (4): (2000 − 1000) / 5 = 200 < 220, so NY.
    measure(&h, dallas, 4, 1000, Some(2000.0)).await;
    let bob = user(&h, &t, "bob").await;
    assert_eq!(names(&h, &bob).await, ["ny-0"]);
    // Dallas saturates (traffic ≥ capacity: 0 per user): alice moves to NY.
    measure(&h, dallas, 4, 2500, Some(2000.0)).await;
    assert_eq!(names(&h, &alice).await, ["ny-0"]);

    // A server without an estimate turns the route to round-robin: 5 users on NY,
    // 4 on Dallas (coefficients 1): Dallas.
    measure(&h, ny, 5, 0, Some(1000.0)).await;
    measure(&h, dallas, 4, 0, None).await;
    let carol = user(&h, &t, "carol").await;
    assert_eq!(names(&h, &carol).await, ["dallas-0"]);
    // Dallas becomes unavailable (no heartbeat for longer than the grace): nobody new
    // gets it, carol leaves it.
    silence(&h, dallas).await;
    let dave = user(&h, &t, "dave").await;
    assert_eq!(names(&h, &dave).await, ["ny-0"]);
    assert_eq!(names(&h, &carol).await, ["ny-0"]);
    // Both unavailable: the route still has its entry (the least bad: carol's last).
    silence(&h, ny).await;
    assert_eq!(names(&h, &carol).await, ["ny-0"]);
}

#[tokio::test]
async fn round_robin_spreads_by_coefficient() {
    let h = Harness::new().await;
    let t = h.token().await;
    let (c, servers, inb) = seed(&h, &t, 1).await;
    // Dallas counts double.
    let mut body = vless(servers[1], "dallas-0", 443);
    body["coefficient"] = json!(2.0);
    h.put(&format!("/api/v1/inbounds/{}", inb[1][0]))
        .bearer(&t)
        .json(&body)
        .send()
        .await
        .ok(StatusCode::OK);
    let route = h
        .post(&format!("/api/v1/clusters/{c}/routes"))
        .bearer(&t)
        .json(&json!({"name": "USA", "algorithm": "round_robin", "inbound_ids": [inb[0][0], inb[1][0]]}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    assert_eq!(route["algorithm"], "round_robin");
    // Each user, once chosen, comes online on the chosen server (as the node reports).
    let mut online = [0u64, 0];
    for i in 0..30 {
        measure(&h, servers[0], online[0], 0, None).await;
        measure(&h, servers[1], online[1], 0, None).await;
        let sub = user(&h, &t, &format!("u{i}")).await;
        let n = names(&h, &sub).await;
        // The default route still holds ny-0? No: the new route took it.
        assert_eq!(n.len(), 1, "{n:?}");
        online[usize::from(n[0] == "dallas-0")] += 1;
    }
    // users / coefficient kept level: 10 on NY, 20 on Dallas.
    assert_eq!(online, [10, 20]);
}

#[tokio::test]
async fn the_capacity_estimate_is_kept_across_restarts() {
    let h = Harness::new().await;
    let t = h.token().await;
    let (_c, servers, _inb) = seed(&h, &t, 1).await;
    let now = h.state.now();
    let warmed = Capacity {
        peak: 12_500_000.0,
        above_floor_ms: 60_000,
        last_ms: Some(now),
    };
    let mut health = Health::new(now, HealthSettings::default());
    health.observe(now, Observation::Answered);
    let report = |capacity| ServerReport {
        health: health.clone(),
        config_version: None,
        users_online: 0,
        throughput: (0, 0),
        capacity,
        node_version: None,
        binary_sha256: None,
    };
    h.store
        .report_server(servers[0], &report(Some(warmed)), now)
        .await
        .unwrap();
    // A report without an estimate (a failed heartbeat) keeps the stored one.
    h.store
        .report_server(servers[0], &report(None), now)
        .await
        .unwrap();
    let api = h
        .get(&format!("/api/v1/servers/{}", servers[0]))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(api["capacity_bytes_per_s"], 12_500_000);
    // Not warmed up yet: no estimate shown.
    assert_eq!(
        h.get(&format!("/api/v1/servers/{}", servers[1]))
            .bearer(&t)
            .send()
            .await
            .ok(StatusCode::OK)["capacity_bytes_per_s"],
        Value::Null
    );
    // Another process opens the database: the estimator's state is there.
    let again = switchyard_panel::store::SqlStore::open_sqlite(
        &h.db,
        switchyard_panel::store::Changes::default(),
    )
    .await
    .unwrap();
    assert_eq!(again.server(servers[0]).await.unwrap().capacity, warmed);
}

#[tokio::test]
async fn users_see_the_routes_of_their_clusters_cluster_by_cluster() {
    let h = Harness::new().await;
    let t = h.token().await;
    // Two clusters, each with one server and two routes (the added route moved to the
    // top): entries come cluster by cluster, oldest first, each in its route order.
    let mut clusters = Vec::new();
    for (c, name) in ["europe", "asia"].iter().enumerate() {
        let id = h
            .post("/api/v1/clusters")
            .bearer(&t)
            .json(&json!({"name": name}))
            .send()
            .await
            .ok(StatusCode::CREATED)["id"]
            .as_i64()
            .unwrap();
        let s = h
            .post("/api/v1/servers")
            .bearer(&t)
            .json(&json!({"cluster_id": id, "name": name, "address": format!("192.0.2.{}", c + 1)}))
            .send()
            .await
            .ok(StatusCode::CREATED)["id"]
            .as_i64()
            .unwrap();
        for k in 0..2 {
            let i = h
                .post("/api/v1/inbounds")
                .bearer(&t)
                .json(&vless(s, &format!("{name}-{k}"), 443 + k))
                .send()
                .await
                .ok(StatusCode::CREATED)["id"]
                .as_i64()
                .unwrap();
            if k == 1 {
                // The second inbound gets a route of its own, put first in its cluster.
                let r = h
                    .post(&format!("/api/v1/clusters/{id}/routes"))
                    .bearer(&t)
                    .json(&json!({"name": format!("{name} extra"), "inbound_ids": [i]}))
                    .send()
                    .await
                    .ok(StatusCode::CREATED)["id"]
                    .as_i64()
                    .unwrap();
                h.post(&format!("/api/v1/routes/{r}/move"))
                    .bearer(&t)
                    .json(&json!({"direction": "up"}))
                    .send()
                    .await
                    .ok(StatusCode::OK);
            }
        }
        clusters.push(id);
    }
    let all = user(&h, &t, "all").await;
    assert_eq!(
        names(&h, &all).await,
        ["europe-1", "europe-0", "asia-1", "asia-0"]
    );
    let asia_only = h
        .post("/api/v1/users")
        .bearer(&t)
        .json(&json!({"username": "asia", "clusters": [clusters[1]]}))
        .send()
        .await
        .ok(StatusCode::CREATED)["subscription_path"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(names(&h, &asia_only).await, ["asia-1", "asia-0"]);
}
