//! The storage story: one sequence of operations, run against SQLite and PostgreSQL.
//! Every step checks exact values.

use switchyard_panel::model::{
    Credentials, Flow, InboundSecrets, InboundSecurity, InboundTransport, Protocol, ResetStrategy,
    TlsCertificate, UserStatus,
};
use switchyard_panel::store::{
    AccountStore, Changes, InboundInput, InboundStore, JoinRefusal, RouteStore, ServerInput,
    ServerStore, SqlStore, Store, StoreError, TrafficBatch, TrafficStore, UserInput, UserQuery,
    UserStore,
};

const NOW: i64 = 1_796_121_000_000;

fn creds(n: u8) -> Credentials {
    Credentials {
        vless_uuid: format!("00000000-0000-4000-8000-0000000000{n:02}"),
        trojan_password: format!("trojan-{n}"),
        ss_seed: format!("seed-{n}"),
    }
}

fn user(name: &str) -> UserInput {
    UserInput {
        username: name.into(),
        enabled: true,
        note: String::new(),
        traffic_limit: None,
        reset_strategy: ResetStrategy::None,
        expires_ms: None,
        on_hold_days: None,
        device_limit: None,
        address_limit: None,
        clusters: None,
    }
}

fn vless(server_id: i64, port: u16) -> InboundInput {
    InboundInput {
        server_id,
        name: "🇺🇸 New York".into(),
        protocol: Protocol::Vless,
        port,
        transport: InboundTransport::Tcp,
        security: InboundSecurity::Tls {
            certificate: TlsCertificate::SelfSigned,
        },
        host: None,
        sni: Some("vpn.example".into()),
        coefficient: 1.0,
        method: None,
        flow: None,
        hysteria2: None,
        trusted_proxies: Vec::new(),
        rules: Default::default(),
    }
}

async fn story(store: SqlStore) {
    let mut changes = store.changes().subscribe();
    // Settings: the first value wins, a second instance reads it.
    assert_eq!(
        store.setting_or_init("k", "one".into()).await.unwrap(),
        "one"
    );
    assert_eq!(
        store.setting_or_init("k", "two".into()).await.unwrap(),
        "one"
    );

    // Clusters and servers.
    let cluster = store.create_cluster("main", NOW).await.unwrap();
    assert!(matches!(
        store.create_cluster("main", NOW).await,
        Err(StoreError::Conflict(f)) if f.field == "name"
    ));
    let server = store
        .create_server(
            &ServerInput {
                cluster_id: cluster.id,
                name: "ny-1".into(),
                address: "203.0.113.1".into(),
                allow_private_destinations: false,
            },
            NOW,
        )
        .await
        .unwrap();
    assert!(!server.joined);
    assert_eq!(server.state.as_str(), "pending");
    assert!(matches!(
        store
            .create_server(
                &ServerInput {
                    cluster_id: 999,
                    name: "x".into(),
                    address: "x".into(),
                    allow_private_destinations: false
                },
                NOW
            )
            .await,
        Err(StoreError::Refused(f)) if f.field == "cluster_id"
    ));

    // Join tokens: once, before expiry (a newer one revokes it: see join_tokens.rs).
    store
        .create_join_token(server.id, "h2", NOW + 10, NOW)
        .await
        .unwrap();
    assert_eq!(
        store.consume_join_token("h2", NOW + 10).await.unwrap(),
        Err(JoinRefusal::Expired)
    );
    store
        .create_join_token(server.id, "h1", NOW + 60_000, NOW)
        .await
        .unwrap();
    assert_eq!(
        store.consume_join_token("h1", NOW).await.unwrap(),
        Ok(server.id)
    );
    assert_eq!(
        store.consume_join_token("h1", NOW).await.unwrap(),
        Err(JoinRefusal::Used)
    );
    assert_eq!(
        store.consume_join_token("nope", NOW).await.unwrap(),
        Err(JoinRefusal::Unknown)
    );
    store
        .pin_server(server.id, "ab12", "host-1", "0.1.0")
        .await
        .unwrap();
    assert_eq!(
        store.server_by_fingerprint("ab12").await.unwrap(),
        Some(server.id)
    );
    assert_eq!(store.server_by_fingerprint("cd34").await.unwrap(), None);
    assert!(store.server(server.id).await.unwrap().joined);

    // The cluster's first inbound makes the default route; the second stays out.
    let secrets = InboundSecrets {
        tls_cert_pem: Some("CERT".into()),
        tls_key_pem: Some("KEY".into()),
        ..InboundSecrets::default()
    };
    let first = store
        .create_inbound(&vless(server.id, 443), &secrets, NOW)
        .await
        .unwrap();
    let routes = store.routes(cluster.id).await.unwrap();
    assert_eq!(routes.len(), 1);
    assert!(routes[0].is_default);
    assert_eq!(routes[0].inbound_ids, vec![first.id]);
    assert_eq!(first.route_id, Some(routes[0].id));
    assert!(matches!(
        store.create_inbound(&vless(server.id, 443), &secrets, NOW).await,
        Err(StoreError::Conflict(f)) if f.field == "port"
    ));
    let second = store
        .create_inbound(&vless(server.id, 8443), &secrets, NOW)
        .await
        .unwrap();
    assert_eq!(second.route_id, None);
    // A REALITY inbound with the Vision flow (schema v8): its settings, flow and
    // public key read back; the private key only with the secrets; an update
    // without secrets keeps them.
    let mut r = vless(server.id, 9443);
    r.security = InboundSecurity::Reality {
        dest: "www.example.com:443".into(),
        server_names: vec!["www.example.com".into()],
        short_ids: vec!["6ba85179e30d4fc2".into()],
        max_time_diff_ms: 60_000,
        fingerprint: "chrome".into(),
    };
    r.sni = None;
    r.flow = Some(Flow::Vision);
    let reality_secrets = InboundSecrets {
        reality_private_key: Some("PRIVATE".into()),
        reality_public_key: Some("PUBLIC".into()),
        ..InboundSecrets::default()
    };
    let made = store
        .create_inbound(&r, &reality_secrets, NOW)
        .await
        .unwrap();
    assert_eq!(
        (
            &made.security,
            made.flow,
            made.reality_public_key.as_deref()
        ),
        (&r.security, Some(Flow::Vision), Some("PUBLIC"))
    );
    r.flow = None;
    let changed = store.update_inbound(made.id, &r, None).await.unwrap();
    assert_eq!(changed.flow, None);
    assert_eq!(changed.reality_public_key.as_deref(), Some("PUBLIC"));
    let (_, kept) = store
        .cluster_inbounds(cluster.id)
        .await
        .unwrap()
        .into_iter()
        .find(|(i, _)| i.id == made.id)
        .unwrap();
    assert_eq!(kept, reality_secrets);
    store.delete_inbound(made.id).await.unwrap();
    assert_eq!(
        store.routes(cluster.id).await.unwrap()[0].inbound_ids,
        vec![first.id]
    );
    assert_eq!(
        store.inbounds(None, Some(cluster.id)).await.unwrap().len(),
        2
    );

    // Users.
    let alice = store
        .create_user(&user("alice"), &creds(1), "tok-a", NOW)
        .await
        .unwrap();
    assert_eq!(alice.status, UserStatus::Active);
    assert_eq!(alice.subscription_path, "/sub/tok-a");
    assert!(matches!(
        store.create_user(&user("alice"), &creds(2), "tok-b", NOW).await,
        Err(StoreError::Conflict(f)) if f.field == "username"
    ));
    let mut limited = user("bob");
    limited.traffic_limit = Some(1000);
    limited.reset_strategy = ResetStrategy::Day;
    let bob = store
        .create_user(&limited, &creds(2), "tok-b", NOW)
        .await
        .unwrap();
    let (found, found_creds) = store.user_by_token("tok-b", NOW).await.unwrap().unwrap();
    assert_eq!(found.id, bob.id);
    assert_eq!(found_creds, creds(2));
    assert!(store.user_by_token("tok-x", NOW).await.unwrap().is_none());

    // Traffic: a batch counts once; a replayed cursor counts nothing.
    let batch = TrafficBatch {
        cursor: 5,
        users: vec![(bob.id, 600, 400), (alice.id, 1, 2)],
    };
    assert!(
        store
            .record_traffic(server.id, &batch, &[bob.id], NOW)
            .await
            .unwrap()
    );
    assert!(
        !store
            .record_traffic(server.id, &batch, &[bob.id], NOW)
            .await
            .unwrap()
    );
    let bob_now = store.user(bob.id, NOW).await.unwrap();
    assert_eq!((bob_now.used_up, bob_now.used_down), (600, 400));
    assert_eq!(bob_now.lifetime_bytes, 1000);
    assert_eq!(bob_now.status, UserStatus::Limited);
    assert_eq!(bob_now.online_ms, Some(NOW));
    assert_eq!(store.journal_cursor(server.id).await.unwrap(), 5);

    // The day's period starts at midnight: bob is reset once, the next day.
    assert_eq!(store.reset_due(NOW).await.unwrap(), 0);
    let tomorrow = NOW + 86_400_000;
    assert_eq!(store.reset_due(tomorrow).await.unwrap(), 1);
    assert_eq!(store.reset_due(tomorrow).await.unwrap(), 0);
    let bob_reset = store.user(bob.id, tomorrow).await.unwrap();
    assert_eq!((bob_reset.used_up, bob_reset.used_down), (0, 0));
    assert_eq!(bob_reset.lifetime_bytes, 1000);
    assert_eq!(bob_reset.status, UserStatus::Active);

    // Restricted to another cluster: not in this server's snapshot.
    let other = store.create_cluster("other", NOW).await.unwrap();
    let mut carol = user("carol");
    carol.clusters = Some(vec![other.id]);
    let carol = store
        .create_user(&carol, &creds(3), "tok-c", NOW)
        .await
        .unwrap();
    assert_eq!(carol.clusters, Some(vec![other.id]));
    let snapshot = store.server_snapshot(server.id, NOW).await.unwrap();
    let names: Vec<_> = snapshot
        .users
        .iter()
        .map(|(u, _)| u.username.as_str())
        .collect();
    assert_eq!(names, ["alice", "bob"]);
    assert_eq!(snapshot.inbounds.len(), 2);
    assert_eq!(snapshot.inbounds[0].1.tls_key_pem.as_deref(), Some("KEY"));

    // Listing and search.
    let q = UserQuery {
        search: Some("o".into()),
        ..UserQuery::default()
    };
    let found: Vec<_> = store
        .users(&q, NOW)
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.username)
        .collect();
    assert_eq!(found, ["bob", "carol"]);
    assert_eq!(store.user_count().await.unwrap(), 3);

    // Revoking the link.
    store
        .set_subscription_token(alice.id, "tok-a2", NOW)
        .await
        .unwrap();
    assert!(store.user_by_token("tok-a", NOW).await.unwrap().is_none());

    // Admins, sessions, tokens.
    assert_eq!(store.admin_count().await.unwrap(), 0);
    let admin = store
        .create_admin("admin", "$argon2id$x", NOW)
        .await
        .unwrap();
    let (a, hash) = store.admin_by_username("admin").await.unwrap().unwrap();
    assert_eq!((a.id, hash.as_str()), (admin.id, "$argon2id$x"));
    store
        .create_session("s1", admin.id, "csrf1", NOW, NOW + 1000)
        .await
        .unwrap();
    assert_eq!(store.session("s1", NOW).await.unwrap().unwrap().1, "csrf1");
    assert!(store.session("s1", NOW + 1000).await.unwrap().is_none());
    store.delete_session("s1").await.unwrap();
    assert!(store.session("s1", NOW).await.unwrap().is_none());
    let t = store
        .create_api_token(admin.id, "ci", "th", NOW)
        .await
        .unwrap();
    assert_eq!(
        store.api_token_admin("th", NOW).await.unwrap().unwrap().id,
        admin.id
    );
    assert_eq!(
        store.api_tokens(admin.id).await.unwrap()[0].last_used_ms,
        Some(NOW)
    );
    store.delete_api_token(admin.id, t.id).await.unwrap();
    assert!(store.api_token_admin("th", NOW).await.unwrap().is_none());

    // Deleting: a cluster with servers is refused, naming why.
    assert!(matches!(
        store.delete_cluster(cluster.id).await,
        Err(StoreError::Refused(f)) if f.message.contains("1 server")
    ));
    store.delete_inbound(second.id).await.unwrap();
    store.delete_server(server.id).await.unwrap();
    assert!(matches!(
        store.server(server.id).await,
        Err(StoreError::NotFound("server"))
    ));
    store.delete_user(carol.id).await.unwrap();
    store.delete_cluster(other.id).await.unwrap();

    // Writes were announced.
    let mut heard = 0;
    while let Ok(Ok(())) =
        tokio::time::timeout(std::time::Duration::from_secs(2), changes.recv()).await
    {
        heard += 1;
        if heard > 3 {
            break;
        }
    }
    assert!(heard > 3, "changes were announced {heard} times");
}

#[tokio::test]
async fn story_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqlStore::open_sqlite(&dir.path().join("panel.db"), Changes::default())
        .await
        .unwrap();
    story(store.clone()).await;

    // Another process holding the write lock makes the panel wait, not fail: no
    // "database is locked" reaches an operator.
    let url = format!("sqlite://{}", dir.path().join("panel.db").display());
    let mut other = <sqlx::SqliteConnection as sqlx::Connection>::connect(&url)
        .await
        .unwrap();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut other)
        .await
        .unwrap();
    let writer = tokio::spawn({
        let store = store.clone();
        async move { store.create_cluster("while locked", NOW).await }
    });
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert!(!writer.is_finished(), "the write waits for the lock");
    sqlx::query("COMMIT").execute(&mut other).await.unwrap();
    writer
        .await
        .unwrap()
        .expect("the write succeeds once the lock is free");

    // An online backup opens as a database with the same data.
    let copy = dir.path().join("backup.db");
    store.backup(&copy).await.unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let restored = SqlStore::open_sqlite(&copy, Changes::default())
        .await
        .unwrap();
    assert_eq!(restored.user_count().await.unwrap(), 2);
}

#[tokio::test]
async fn story_on_postgres() {
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    let url = pg.fresh_database("story").unwrap();
    let store = SqlStore::open(&url, Changes::default()).await.unwrap();
    story(store.clone()).await;
    // A second instance on the same database sees the data and hears the first's
    // writes through NOTIFY.
    let second = SqlStore::open(&url, Changes::default()).await.unwrap();
    assert_eq!(second.user_count().await.unwrap(), 2);
    let mut heard = second.changes().subscribe();
    // Drain the announcement made when its listener connected.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), heard.recv()).await;
    store.create_cluster("third", NOW).await.unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(1), heard.recv())
        .await
        .expect("the other instance heard the write within a second")
        .unwrap();
    drop(pg);
}

/// Routes, sticky choices, devices and the capacity estimate, on either backend.
async fn routes_story(store: SqlStore) {
    use switchyard_balance::capacity::Capacity;
    use switchyard_panel::model::{Algorithm, Health, HealthSettings};
    use switchyard_panel::store::{
        DeviceOutcome, DeviceSeen, RouteInput, RouteStore, ServerReport,
    };

    let cluster = store.create_cluster("routes", NOW).await.unwrap();
    let server = store
        .create_server(
            &ServerInput {
                cluster_id: cluster.id,
                name: "r-1".into(),
                address: "203.0.113.9".into(),
                allow_private_destinations: false,
            },
            NOW,
        )
        .await
        .unwrap();
    let mut inbounds = Vec::new();
    for port in [1001, 1002, 1003] {
        let i = store
            .create_inbound(&vless(server.id, port), &InboundSecrets::default(), NOW)
            .await
            .unwrap();
        inbounds.push(i.id);
    }
    let default = store.routes(cluster.id).await.unwrap()[0].clone();
    assert_eq!(default.inbound_ids, vec![inbounds[0]]);
    let input = |name: &str, ids: Option<Vec<i64>>| RouteInput {
        name: name.into(),
        flag: Some("🇺🇸".into()),
        algorithm: Algorithm::RoundRobin,
        inbound_ids: ids,
    };
    // A new route takes an inbound from the default route, atomically.
    let usa = store
        .create_route(
            cluster.id,
            &input("USA", Some(vec![inbounds[1], inbounds[0]])),
            NOW,
        )
        .await
        .unwrap();
    assert_eq!(usa.position, 1);
    assert_eq!(usa.inbound_ids, vec![inbounds[1], inbounds[0]]);
    assert!(
        store
            .route(default.id)
            .await
            .unwrap()
            .inbound_ids
            .is_empty()
    );
    // Attach at the end; attaching where it already is keeps its place; detach.
    store
        .attach_inbound(inbounds[2], Some(usa.id))
        .await
        .unwrap();
    store
        .attach_inbound(inbounds[1], Some(usa.id))
        .await
        .unwrap();
    assert_eq!(
        store.route(usa.id).await.unwrap().inbound_ids,
        vec![inbounds[1], inbounds[0], inbounds[2]]
    );
    let detached = store.attach_inbound(inbounds[0], None).await.unwrap();
    assert_eq!(detached.route_id, None);
    // Order: move, set, and positions stay 0..n.
    let japan = store
        .create_route(cluster.id, &input("Japan", None), NOW)
        .await
        .unwrap();
    let ids = |rs: Vec<switchyard_panel::model::Route>| {
        rs.iter().map(|r| (r.id, r.position)).collect::<Vec<_>>()
    };
    assert_eq!(
        ids(store.move_route(japan.id, -1).await.unwrap()),
        vec![(default.id, 0), (japan.id, 1), (usa.id, 2)]
    );
    assert_eq!(
        ids(store
            .order_routes(cluster.id, &[usa.id, japan.id, default.id])
            .await
            .unwrap()),
        vec![(usa.id, 0), (japan.id, 1), (default.id, 2)]
    );
    assert!(matches!(
        store.order_routes(cluster.id, &[usa.id]).await,
        Err(StoreError::Refused(f)) if f.field == "route_ids"
    ));

    // Sticky choices: written in one go, replaced, gone with the route.
    let (u, _) = (
        store
            .create_user(&user("sticky"), &creds(9), "tok-sticky", NOW)
            .await
            .unwrap(),
        (),
    );
    store
        .put_sticky(u.id, &[(usa.id, inbounds[1]), (japan.id, inbounds[2])], NOW)
        .await
        .unwrap();
    store
        .put_sticky(u.id, &[(usa.id, inbounds[2])], NOW)
        .await
        .unwrap();
    let mut sticky = store.sticky_choices(u.id).await.unwrap();
    sticky.sort_unstable();
    let mut want = vec![(usa.id, inbounds[2]), (japan.id, inbounds[2])];
    want.sort_unstable();
    assert_eq!(sticky, want);
    store.delete_route(japan.id).await.unwrap();
    assert_eq!(
        store.sticky_choices(u.id).await.unwrap(),
        vec![(usa.id, inbounds[2])]
    );
    assert_eq!(
        ids(store.routes(cluster.id).await.unwrap()),
        vec![(usa.id, 0), (default.id, 1)]
    );

    // Devices: two within the limit, a third refused, a known one refreshed.
    let seen = |hwid: &str| DeviceSeen {
        hwid: hwid.into(),
        os: Some("iOS".into()),
        model: None,
        user_agent: Some("Happ/2.0".into()),
    };
    assert_eq!(
        store
            .register_device(u.id, &seen("a"), Some(2), NOW)
            .await
            .unwrap(),
        DeviceOutcome::Registered
    );
    assert_eq!(
        store
            .register_device(u.id, &seen("b"), Some(2), NOW + 1)
            .await
            .unwrap(),
        DeviceOutcome::Registered
    );
    assert_eq!(
        store
            .register_device(u.id, &seen("c"), Some(2), NOW + 2)
            .await
            .unwrap(),
        DeviceOutcome::OverLimit
    );
    assert_eq!(
        store
            .register_device(u.id, &seen("a"), Some(2), NOW + 3)
            .await
            .unwrap(),
        DeviceOutcome::Known
    );
    let devices = store.devices(u.id).await.unwrap();
    assert_eq!(
        devices
            .iter()
            .map(|d| (d.hwid.as_str(), d.last_seen_ms))
            .collect::<Vec<_>>(),
        vec![("a", NOW + 3), ("b", NOW + 1)]
    );
    store.delete_device(u.id, devices[1].id).await.unwrap();
    assert!(matches!(
        store.delete_device(u.id, devices[1].id).await,
        Err(StoreError::NotFound("device"))
    ));

    // The capacity estimate: stored with a report, kept by one without it.
    let mut health = Health::new(NOW, HealthSettings::default());
    health.observe(NOW, switchyard_panel::model::Observation::Answered);
    let c = Capacity {
        peak: 1.5e6,
        above_floor_ms: 90_000,
        last_ms: Some(NOW),
    };
    for capacity in [Some(c), None] {
        store
            .report_server(
                server.id,
                &ServerReport {
                    health: health.clone(),
                    config_version: None,
                    users_online: 3,
                    throughput: (10, 20),
                    capacity,
                    node_version: None,
                    binary_sha256: None,
                },
                NOW,
            )
            .await
            .unwrap();
    }
    let s = store.server(server.id).await.unwrap();
    assert_eq!(s.capacity, c);
    assert_eq!(s.capacity_bytes_per_s, Some(1_500_000));

    // The history: averages per step over the heartbeats that found it online, the
    // most users seen; a pending server's report adds nothing; old points go.
    use switchyard_panel::model::tunnel::UsageStep;
    use switchyard_panel::store::ServerPoint;
    let report = |users: u64, up: u64, health: &Health| ServerReport {
        health: health.clone(),
        config_version: None,
        users_online: users,
        throughput: (up, 2 * up),
        capacity: None,
        node_version: None,
        binary_sha256: None,
    };
    let later = NOW + 61_000;
    store
        .report_server(server.id, &report(5, 40, &health), later)
        .await
        .unwrap();
    let pending = Health::new(NOW, HealthSettings::default());
    store
        .report_server(server.id, &report(100, 1000, &pending), later)
        .await
        .unwrap();
    let point = |at_ms, up, users_online, users_max| ServerPoint {
        at_ms,
        up_bytes_per_s: up,
        down_bytes_per_s: 2 * up,
        users_online,
        users_max,
    };
    let minute = UsageStep::Minute;
    assert_eq!(
        store
            .server_history(server.id, minute, NOW - 3_600_000)
            .await
            .unwrap(),
        vec![
            point(minute.start(NOW), 10, 3, 3),
            point(minute.start(later), 40, 5, 5)
        ]
    );
    // (10 + 10 + 40) / 3 = 20 up; (3 + 3 + 5) / 3 = 3 users on average, 5 at most.
    let hour = UsageStep::Hour;
    if hour.start(NOW) == hour.start(later) {
        assert_eq!(
            store
                .server_history(server.id, hour, NOW - 3_600_000)
                .await
                .unwrap(),
            vec![point(hour.start(NOW), 20, 3, 5)]
        );
    }
    let two_days = NOW + 49 * 3_600_000;
    store
        .report_server(server.id, &report(1, 1, &health), two_days)
        .await
        .unwrap();
    assert_eq!(
        store.server_history(server.id, minute, 0).await.unwrap(),
        vec![point(minute.start(two_days), 1, 1, 1)],
        "minute points older than 48 hours are gone"
    );
    assert_eq!(
        store
            .server_history(server.id, hour, 0)
            .await
            .unwrap()
            .len(),
        if hour.start(NOW) == hour.start(later) {
            2
        } else {
            3
        },
        "hourly points are kept 90 days"
    );

    // The subscription token is found by its hash; a wrong one is not.
    assert!(
        store
            .user_by_token("tok-sticky", NOW)
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        store
            .user_by_token("tok-stick", NOW)
            .await
            .unwrap()
            .is_none()
    );
    // A fetch reads the user and their sticky choices in one query.
    store
        .put_sticky(u.id, &[(default.id, inbounds[1])], NOW)
        .await
        .unwrap();
    let sub = store.subscriber("tok-sticky", NOW).await.unwrap().unwrap();
    assert_eq!(sub.user.id, u.id);
    assert_eq!(sub.credentials.trojan_password, "trojan-9");
    let mut sticky = sub.sticky.clone();
    sticky.sort_unstable();
    let mut want = vec![(usa.id, inbounds[2]), (default.id, inbounds[1])];
    want.sort_unstable();
    assert_eq!(sticky, want);
    assert!(store.subscriber("tok-stickz", NOW).await.unwrap().is_none());
    let fresh = store
        .create_user(&user("fresh"), &creds(8), "tok-fresh", NOW)
        .await
        .unwrap();
    let sub = store.subscriber("tok-fresh", NOW).await.unwrap().unwrap();
    assert_eq!((sub.user.id, sub.sticky), (fresh.id, vec![]));
}

#[tokio::test]
async fn routes_story_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("panel.db");
    let store = SqlStore::open_sqlite(&db, Changes::default())
        .await
        .unwrap();
    routes_story(store).await;
    // A user from before schema version 2 has no token hash: the next start fills it.
    let raw = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.display()))
        .await
        .unwrap();
    sqlx::query("UPDATE users SET token_hash = NULL")
        .execute(&raw)
        .await
        .unwrap();
    raw.close().await;
    let again = SqlStore::open_sqlite(&db, Changes::default())
        .await
        .unwrap();
    assert!(
        again
            .user_by_token("tok-sticky", NOW)
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn routes_story_on_postgres() {
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    let url = pg.fresh_database("routes").unwrap();
    let store = SqlStore::open(&url, Changes::default()).await.unwrap();
    routes_story(store).await;
    drop(pg);
}

/// Tunnels: create, read, change, re-issue, the servers they hold, delete.
async fn tunnels_story(store: SqlStore) {
    use switchyard_panel::model::tunnel::{TunnelBalancing, TunnelInput, TunnelMode};
    use switchyard_panel::model::tunnel::{TunnelCertificate, TunnelRealityKeys};
    use switchyard_panel::store::TunnelStore;

    let cluster = store.create_cluster("tunnels", NOW).await.unwrap();
    let mut ids = Vec::new();
    for name in ["relay", "a", "b"] {
        let s = store
            .create_server(
                &ServerInput {
                    cluster_id: cluster.id,
                    name: name.into(),
                    address: "203.0.113.7".into(),
                    allow_private_destinations: false,
                },
                NOW,
            )
            .await
            .unwrap();
        ids.push(s.id);
    }
    let cert = |n: u8| TunnelCertificate {
        cert_pem: format!("cert {n}"),
        key_pem: format!("key {n}"),
        pin: format!("cert:{n:064}"),
    };
    let reality = |n: u8| TunnelRealityKeys {
        private_key: format!("private {n}"),
        public_key: format!("public {n}"),
        short_id: format!("{n:016}"),
    };
    let mut input: TunnelInput = serde_json::from_value(serde_json::json!({
        "name": "story", "relay_server_id": ids[0], "origin_server_ids": [ids[2], ids[1]],
    }))
    .unwrap();
    let t = store
        .create_tunnel(&input, &cert(1), &reality(1), NOW)
        .await
        .unwrap();
    // The REALITY keys are kept with the tunnel; only the public key is in its
    // answers, and a tunnel that has keys keeps them.
    assert_eq!(t.reality_public_key.as_deref(), Some("public 1"));
    assert_eq!(
        store.tunnel_reality_keys(t.id).await.unwrap(),
        Some(reality(1))
    );
    store
        .init_tunnel_reality_keys(t.id, &reality(7))
        .await
        .unwrap();
    assert_eq!(
        store.tunnel_reality_keys(t.id).await.unwrap(),
        Some(reality(1))
    );
    assert!(matches!(
        store.tunnel_reality_keys(t.id + 100).await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(t.name, "story");
    assert_eq!(
        t.origins.iter().map(|o| o.server_id).collect::<Vec<_>>(),
        vec![ids[2], ids[1]]
    );
    assert_eq!(
        (t.mode, t.balancing, t.links, t.window_mib),
        (TunnelMode::Reverse, TunnelBalancing::Distribute, 4, 16)
    );
    assert_eq!(
        (t.certificate_pin.as_str(), t.previous_pin.as_deref()),
        (cert(1).pin.as_str(), None)
    );
    assert_eq!(t.created_ms, NOW);
    assert_eq!(store.tunnels().await.unwrap(), vec![t.clone()]);
    assert!(matches!(
        store
            .create_tunnel(&input, &cert(9), &reality(9), NOW)
            .await,
        Err(StoreError::Conflict(f)) if f.field == "name"
    ));

    input.mode = TunnelMode::Direct;
    input.origin_server_ids = vec![ids[1]];
    input.links = 2;
    input.window_mib = 3;
    let changed = store.update_tunnel(t.id, &input).await.unwrap();
    assert_eq!(
        (
            changed.mode,
            changed.links,
            changed.window_mib,
            changed.origins.len()
        ),
        (TunnelMode::Direct, 2, 3, 1)
    );
    input.name = "renamed".into();
    assert!(matches!(
        store.update_tunnel(t.id, &input).await,
        Err(StoreError::Refused(f)) if f.field == "name"
    ));

    let re = store
        .reissue_tunnel_certificate(t.id, &cert(2))
        .await
        .unwrap();
    assert_eq!(
        (re.certificate_pin.as_str(), re.previous_pin.as_deref()),
        (cert(2).pin.as_str(), Some(cert(1).pin.as_str()))
    );
    assert_eq!(store.tunnel_certificate(t.id).await.unwrap(), cert(2));
    assert_eq!(
        store.tunnel_reality_keys(t.id).await.unwrap(),
        Some(reality(1)),
        "a re-issue leaves the REALITY keys alone"
    );

    // The overlap ends once the relay and every origin run the new pin: an old pin
    // confirmed counts for nothing, a server of the tunnel alone ends nothing.
    let (relay, origin) = (re.relay_server_id, re.origins[0].server_id);
    assert_eq!(re.origins.len(), 1);
    let none: Vec<i64> = Vec::new();
    let new = vec![(t.id, cert(2).pin)];
    let old = vec![(t.id, cert(1).pin)];
    assert_eq!(store.confirm_tunnel_pins(origin, &old).await.unwrap(), none);
    assert_eq!(store.confirm_tunnel_pins(relay, &new).await.unwrap(), none);
    assert_eq!(store.confirm_tunnel_pins(relay, &new).await.unwrap(), none);
    assert!(store.tunnel(t.id).await.unwrap().previous_pin.is_some());
    assert_eq!(
        store.confirm_tunnel_pins(origin, &new).await.unwrap(),
        vec![t.id]
    );
    assert_eq!(store.tunnel(t.id).await.unwrap().previous_pin, None);
    assert_eq!(store.confirm_tunnel_pins(origin, &new).await.unwrap(), none);
    // A second re-issue starts a new overlap, and the old confirmations are gone.
    let again = store
        .reissue_tunnel_certificate(t.id, &cert(3))
        .await
        .unwrap();
    assert_eq!(again.previous_pin.as_deref(), Some(cert(2).pin.as_str()));
    let third = vec![(t.id, cert(3).pin)];
    assert_eq!(
        store.confirm_tunnel_pins(origin, &third).await.unwrap(),
        none
    );
    assert_eq!(
        store.confirm_tunnel_pins(relay, &third).await.unwrap(),
        vec![t.id]
    );

    // Credentials rotate by epoch (0 until the first rotation); the overlap ends like
    // the pins' once the relay and every origin run the current epoch.
    assert_eq!(
        (again.credential_epoch, again.previous_credential_epoch),
        (0, None)
    );
    let rotated = store.rotate_tunnel_credentials(t.id).await.unwrap();
    assert_eq!(
        (rotated.credential_epoch, rotated.previous_credential_epoch),
        (1, Some(0))
    );
    assert_eq!(rotated.certificate_pin, cert(3).pin, "the pin stays");
    let (old, new) = (vec![(t.id, 0)], vec![(t.id, 1)]);
    assert_eq!(
        store
            .confirm_tunnel_credentials(origin, &old)
            .await
            .unwrap(),
        none
    );
    assert_eq!(
        store.confirm_tunnel_credentials(relay, &new).await.unwrap(),
        none
    );
    assert_eq!(
        store.tunnel(t.id).await.unwrap().previous_credential_epoch,
        Some(0)
    );
    assert_eq!(
        store
            .confirm_tunnel_credentials(origin, &new)
            .await
            .unwrap(),
        vec![t.id]
    );
    let done = store.tunnel(t.id).await.unwrap();
    assert_eq!(
        (done.credential_epoch, done.previous_credential_epoch),
        (1, None)
    );
    assert!(matches!(
        store.rotate_tunnel_credentials(9_999).await,
        Err(StoreError::NotFound("tunnel"))
    ));

    // Usage: added up per step, kept 48 hours per minute and 90 days per hour.
    use switchyard_panel::model::tunnel::{UsagePoint, UsageStep};
    let minute = UsageStep::Minute.start(NOW);
    let hour = UsageStep::Hour.start(NOW);
    store.record_tunnel_usage(t.id, 100, NOW).await.unwrap();
    store
        .record_tunnel_usage(t.id, 50, minute + 59_999)
        .await
        .unwrap();
    store
        .record_tunnel_usage(t.id, 0, minute + 60_000)
        .await
        .unwrap();
    store
        .record_tunnel_usage(t.id, 7, minute + 60_000)
        .await
        .unwrap();
    let point = |at_ms, bytes| UsagePoint { at_ms, bytes };
    assert_eq!(
        store
            .tunnel_usage(t.id, UsageStep::Minute, 0)
            .await
            .unwrap(),
        vec![point(minute, 150), point(minute + 60_000, 7)]
    );
    assert_eq!(
        store
            .tunnel_usage(t.id, UsageStep::Minute, minute + 60_000)
            .await
            .unwrap(),
        vec![point(minute + 60_000, 7)]
    );
    let later = NOW + 49 * 3_600_000;
    store.record_tunnel_usage(t.id, 1, later).await.unwrap();
    assert_eq!(
        store
            .tunnel_usage(t.id, UsageStep::Minute, 0)
            .await
            .unwrap(),
        vec![point(UsageStep::Minute.start(later), 1)],
        "minutes older than 48 hours are forgotten"
    );
    let hours = store.tunnel_usage(t.id, UsageStep::Hour, 0).await.unwrap();
    assert_eq!(hours[0], point(hour, 157));
    assert_eq!(hours.last(), Some(&point(UsageStep::Hour.start(later), 1)));
    // 91 days on: the first hour (older than 90 days) is gone, the later one (49 h
    // after it) is still kept.
    let much_later = NOW + 91 * 24 * 3_600_000;
    store
        .record_tunnel_usage(t.id, 2, much_later)
        .await
        .unwrap();
    assert_eq!(
        store.tunnel_usage(t.id, UsageStep::Hour, 0).await.unwrap(),
        vec![
            point(UsageStep::Hour.start(later), 1),
            point(UsageStep::Hour.start(much_later), 2)
        ],
        "hours older than 90 days are forgotten"
    );

    // b left the tunnel and may go; a and the relay may not.
    store.delete_server(ids[2]).await.unwrap();
    for s in [ids[0], ids[1]] {
        assert!(matches!(
            store.delete_server(s).await,
            Err(StoreError::Refused(_))
        ));
    }
    store.delete_tunnel(t.id).await.unwrap();
    assert!(matches!(
        store.tunnel(t.id).await,
        Err(StoreError::NotFound("tunnel"))
    ));
    assert!(matches!(
        store.delete_tunnel(t.id).await,
        Err(StoreError::NotFound("tunnel"))
    ));
    store.delete_server(ids[1]).await.unwrap();
}

#[tokio::test]
async fn tunnels_story_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqlStore::open_sqlite(&dir.path().join("panel.db"), Changes::default())
        .await
        .unwrap();
    tunnels_story(store).await;
}

/// The credentials the rendered configs carry, per server: (tunnel, origin, value).
async fn rendered_credentials(store: &SqlStore, servers: &[i64]) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for s in servers {
        let snapshot = store.server_snapshot(*s, NOW).await.unwrap();
        let config = switchyard_panel::render::render(&snapshot, NOW).unwrap();
        for t in &config.tunnels {
            for o in t.relay.iter().flat_map(|r| &r.origins) {
                out.push((
                    t.name.clone(),
                    o.name.clone(),
                    o.credential.expose().to_owned(),
                ));
            }
            if let Some(o) = &t.origin {
                out.push((
                    t.name.clone(),
                    o.name.clone(),
                    o.credential.expose().to_owned(),
                ));
            }
        }
    }
    out
}

/// The panel's tunnel secret is made once and kept: after a restart (the store
/// reopened on the same file) every node gets exactly the credentials it had.
#[tokio::test]
async fn tunnel_credentials_survive_a_restart() {
    use switchyard_panel::model::tunnel::TunnelInput;
    use switchyard_panel::model::tunnel::{TunnelCertificate, TunnelRealityKeys};
    use switchyard_panel::store::TunnelStore;

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("panel.db");
    let store = SqlStore::open_sqlite(&file, Changes::default())
        .await
        .unwrap();
    let cluster = store.create_cluster("c", NOW).await.unwrap();
    let mut ids = Vec::new();
    for name in ["relay", "a", "b"] {
        let input = ServerInput {
            cluster_id: cluster.id,
            name: name.into(),
            address: "203.0.113.7".into(),
            allow_private_destinations: false,
        };
        ids.push(store.create_server(&input, NOW).await.unwrap().id);
    }
    let issued = switchyard_tunnel::link::cert::issue("keep").unwrap();
    let cert = TunnelCertificate {
        cert_pem: issued.cert_pem,
        key_pem: issued.key_pem,
        pin: issued.pin.to_string(),
    };
    let input: TunnelInput = serde_json::from_value(serde_json::json!({
        "name": "keep", "relay_server_id": ids[0], "origin_server_ids": [ids[1], ids[2]],
    }))
    .unwrap();
    let keys = switchyard_node::reality::generate().unwrap();
    let reality = TunnelRealityKeys {
        private_key: keys.private_key,
        public_key: keys.public_key,
        short_id: keys.short_id,
    };
    store
        .create_tunnel(&input, &cert, &reality, NOW)
        .await
        .unwrap();
    let before = rendered_credentials(&store, &ids).await;
    assert_eq!(
        before.len(),
        4,
        "two on the relay, one on each origin: {before:?}"
    );
    assert_eq!(before[0].2, before[2].2, "the relay and origin a agree");
    assert_ne!(before[0].2, before[1].2, "each origin has its own");
    drop(store);

    let reopened = SqlStore::open_sqlite(&file, Changes::default())
        .await
        .unwrap();
    assert_eq!(rendered_credentials(&reopened, &ids).await, before);
}

#[tokio::test]
async fn tunnels_story_on_postgres() {
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    let url = pg.fresh_database("tunnels").unwrap();
    let store = SqlStore::open(&url, Changes::default()).await.unwrap();
    tunnels_story(store).await;
    drop(pg);
}
