//! Users brought from Remnawave 3.3 and 2.8. Remnawave is a Node.js program whose
//! dependencies this machine cannot fetch, so it cannot run in the tests; its
//! database is its own Prisma migrations applied to an empty PostgreSQL
//! (`import/remnawave_3.3.sql`, `import/remnawave_2.8.sql`, made as their headers
//! say) in a private cluster, and its users are written here as Remnawave's code
//! writes them: a `users` row, its `user_traffic` row, its internal squad, its known
//! devices (HWIDs).
//!
//! Then `switchyard_panel::import::remnawave` into a panel with one real node, a VLESS
//! inbound on the port Remnawave's VLESS inbound had: a dry run keeps nothing; the
//! import matches the source user for user; a user's **old** link (Remnawave's
//! `/api/sub/{shortUuid}` and `/api/sub/{shortUuid}/{client}`, once `api/sub` is an
//! old path) serves their subscription, which the real sing-box runs, and the real
//! Xray with only the old `vless://` credentials carries a download through our node
//! too. Revoking the link here ends the old one. A second import after changes in
//! Remnawave updates, adds and disables exactly what changed. A Remnawave newer than
//! this import knows, or not Remnawave at all, is refused naming why.

use crate::import_common::{
    SIZE, all_users, by_name, node_down, old_vless_carries, singbox_carries,
};
use crate::live;

use serde_json::json;
use sqlx::Connection;
use sqlx::postgres::PgConnection;
use switchyard_panel::import;
use switchyard_panel::model::{ResetStrategy, UserStatus};
use switchyard_testkit::{HttpTarget, Postgres, free_port};

const GIB: i64 = 1 << 30;
const ALICE_SHORT: &str = "Xk3J2h4G5f6D7s8A";
const ALICE_UUID: &str = "5f0c7a1e-3b9d-4e2a-8c6f-1d2e3f4a5b6c";
const ALICE_SS: &str = "Q9w8E7r6T5y4U3i2O1p0A9s8D7f6G5h4";

/// A fresh Remnawave database `name` in `pg`, made by `schema`'s migrations.
pub(crate) async fn remnawave_db(
    pg: &Postgres,
    name: &str,
    schema: &str,
) -> (String, PgConnection) {
    let url = pg.fresh_database(name).unwrap();
    let mut c = PgConnection::connect(&url).await.unwrap();
    sqlx::raw_sql(schema).execute(&mut c).await.unwrap();
    // A fresh connection: the dump leaves its session's search path empty.
    c.close().await.unwrap();
    (url.clone(), PgConnection::connect(&url).await.unwrap())
}

/// One user as Remnawave's create-user writes it (and its counters row, unless
/// `traffic` is none), in the Default-Squad; `id` is its key column (`id` in 3.x,
/// `t_id` in 2.x).
pub(crate) struct RwUser<'a> {
    short: &'a str,
    name: &'a str,
    status: &'a str,
    limit: i64,
    strategy: &'a str,
    expire_ms: i64,
    vless: &'a str,
    trojan: &'a str,
    ss: &'a str,
    note: Option<&'a str>,
    devices: Option<i32>,
    traffic: Option<(i64, i64)>,
}

pub(crate) async fn add_user(c: &mut PgConnection, id: &str, u: &RwUser<'_>) -> i64 {
    let key: i64 = sqlx::query_scalar(&format!(
        "INSERT INTO users (short_uuid, username, status, traffic_limit_bytes, \
         traffic_limit_strategy, expire_at, trojan_password, vless_uuid, ss_password, \
         description, hwid_device_limit, created_at) VALUES ($1, $2, $3, $4, $5, \
         to_timestamp($6 / 1000.0) AT TIME ZONE 'UTC', $7, $8::uuid, $9, $10, $11, \
         TIMESTAMP '2026-01-02 03:04:05.678') RETURNING {id}"
    ))
    .bind(u.short)
    .bind(u.name)
    .bind(u.status)
    .bind(u.limit)
    .bind(u.strategy)
    .bind(u.expire_ms as f64)
    .bind(u.trojan)
    .bind(u.vless)
    .bind(u.ss)
    .bind(u.note)
    .bind(u.devices)
    .fetch_one(&mut *c)
    .await
    .unwrap();
    if let Some((used, lifetime)) = u.traffic {
        sqlx::query(&format!(
            "INSERT INTO user_traffic ({id}, used_traffic_bytes, lifetime_used_traffic_bytes) \
             VALUES ($1, $2, $3)"
        ))
        .bind(key)
        .bind(used)
        .bind(lifetime)
        .execute(&mut *c)
        .await
        .unwrap();
    }
    sqlx::query(
        "INSERT INTO internal_squad_members (internal_squad_uuid, user_id) \
         SELECT uuid, $1 FROM internal_squads WHERE name = 'Default-Squad'",
    )
    .bind(key)
    .execute(&mut *c)
    .await
    .unwrap();
    key
}

/// Remnawave's settings, an admin, a node and a config profile whose VLESS inbound is
/// on `vless_port` (and a Trojan one over WebSocket and TLS), both in the squad.
pub(crate) async fn panel_rows(c: &mut PgConnection, vless_port: u16, settings_extra: &str) {
    let vless = json!({"tag": "VLESS_TCP", "port": vless_port, "protocol": "vless",
        "settings": {"clients": [], "decryption": "none"},
        "streamSettings": {"network": "raw", "security": "none"}});
    let trojan = json!({"tag": "TROJAN_WS", "port": 8443, "protocol": "trojan",
        "settings": {"clients": []},
        "streamSettings": {"network": "ws", "security": "tls", "wsSettings": {"path": "/t"}}});
    let config = json!({"log": {"loglevel": "none"}, "inbounds": [vless, trojan], "outbounds": [{"protocol": "freedom", "tag": "DIRECT"}]});
    sqlx::raw_sql(
        &format!(
            "INSERT INTO subscription_settings (hwid_settings, custom_remarks{settings_extra}) \
             VALUES ('{{\"enabled\": true, \"fallbackDeviceLimit\": 5, \"maxDevicesAnnounce\": null}}', '{{}}'{})",
            if settings_extra.is_empty() { "" } else { ", 'Remnawave', '', 12" }
        ),
    )
    .execute(&mut *c)
    .await
    .unwrap();
    sqlx::raw_sql(
        "INSERT INTO admin (username, password_hash, role) VALUES \
         ('root', 'aa:bb', 'ADMIN'), ('bot', 'cc:dd', 'API');
         INSERT INTO nodes (name, address, port) VALUES ('Frankfurt', 'de.example.net', 2222);",
    )
    .execute(&mut *c)
    .await
    .unwrap();
    let profile: String = sqlx::query_scalar(
        "INSERT INTO config_profiles (name, config) VALUES ('Default-Profile', $1::jsonb) \
         RETURNING uuid::text",
    )
    .bind(config.to_string())
    .fetch_one(&mut *c)
    .await
    .unwrap();
    for (inbound, network, security) in [(&vless, "raw", "none"), (&trojan, "ws", "tls")] {
        sqlx::query(
            "WITH i AS (INSERT INTO config_profile_inbounds (profile_uuid, tag, type, network, \
             security, port, raw_inbound) VALUES ($1::uuid, $2, $3, $4, $5, $6, $7::jsonb) RETURNING uuid) \
             INSERT INTO internal_squad_inbounds (internal_squad_uuid, inbound_uuid) \
             SELECT s.uuid, i.uuid FROM internal_squads s, i WHERE s.name = 'Default-Squad'",
        )
        .bind(&profile)
        .bind(inbound["tag"].as_str())
        .bind(inbound["protocol"].as_str())
        .bind(network)
        .bind(security)
        .bind(inbound["port"].as_i64().map(|p| p as i32))
        .bind(inbound.to_string())
        .execute(&mut *c)
        .await
        .unwrap();
    }
}

async fn add_device(c: &mut PgConnection, user: i64, hwid: &str, seen: &str) {
    sqlx::query(
        "INSERT INTO hwid_user_devices (hwid, user_id, platform, os_version, device_model, \
         user_agent, created_at, updated_at) VALUES ($1, $2, 'Android', '14', 'Pixel 8', \
         'Happ/3.1.0', TIMESTAMP '2026-02-01 00:00:00', $3::timestamp)",
    )
    .bind(hwid)
    .bind(user)
    .bind(seen)
    .execute(&mut *c)
    .await
    .unwrap();
}

/// The cluster for this file's tests (started off the runtime: it blocks).
/// A Remnawave 3.3 database in `pg` with one user, anna, and the panel's rows
/// (its VLESS inbound on `port`).
pub(crate) async fn anna_db(pg: &Postgres, port: u16) -> (String, PgConnection) {
    let (url, mut c) =
        remnawave_db(pg, "remnawave", include_str!("import/remnawave_3.3.sql")).await;
    panel_rows(&mut c, port, "").await;
    add_user(
        &mut c,
        "id",
        &rw_user(
            "annaShort0000001",
            "anna",
            "cf0c7a1e-3b9d-4e2a-8c6f-1d2e3f4a5b6c",
        ),
    )
    .await;
    (url, c)
}

pub(crate) async fn cluster() -> Postgres {
    tokio::task::spawn_blocking(|| Postgres::start().expect("a private PostgreSQL cluster"))
        .await
        .unwrap()
}

pub(crate) fn rw_user<'a>(short: &'a str, name: &'a str, vless: &'a str) -> RwUser<'a> {
    RwUser {
        short,
        name,
        status: "ACTIVE",
        limit: 0,
        strategy: "NO_RESET",
        expire_ms: live::now() + 365 * 86_400_000,
        vless,
        trojan: "trojan-password-of-remnawave-0001",
        ss: "A1b2C3d4E5f6G7h8J9k0L1m2N3p4Q5r6",
        note: None,
        devices: None,
        traffic: Some((0, 0)),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remnawave_users_arrive_with_devices_and_their_old_links_and_configs_work() {
    let pg = cluster().await;
    let (url, mut c) =
        remnawave_db(&pg, "remnawave", include_str!("import/remnawave_3.3.sql")).await;
    let port = free_port().unwrap();
    panel_rows(&mut c, port, "").await;
    let future = live::now() + 30 * 86_400_000;
    let alice = add_user(
        &mut c,
        "id",
        &RwUser {
            limit: 50 * GIB,
            strategy: "MONTH",
            expire_ms: future,
            trojan: "alice-old-trojan",
            ss: ALICE_SS,
            note: Some("paid"),
            devices: Some(2),
            traffic: Some((7 * GIB, 9 * GIB)),
            ..rw_user(ALICE_SHORT, "alice", ALICE_UUID)
        },
    )
    .await;
    add_device(&mut c, alice, "hwid-alice-phone-01", "2026-03-01 10:00:00").await;
    add_device(&mut c, alice, "hwid-alice-tablet-2", "2026-03-02 10:00:00").await;
    add_user(
        &mut c,
        "id",
        &RwUser {
            status: "DISABLED",
            traffic: None,
            ..rw_user(
                "b0bShort00000001",
                "bob",
                "6f0c7a1e-3b9d-4e2a-8c6f-1d2e3f4a5b6c",
            )
        },
    )
    .await;
    add_user(
        &mut c,
        "id",
        &RwUser {
            status: "LIMITED",
            limit: GIB,
            strategy: "MONTH_ROLLING",
            devices: Some(0),
            traffic: Some((GIB, 3 * GIB)),
            ..rw_user(
                "daveShort0000001",
                "dave",
                "8f0c7a1e-3b9d-4e2a-8c6f-1d2e3f4a5b6c",
            )
        },
    )
    .await;
    add_user(
        &mut c,
        "id",
        &RwUser {
            status: "EXPIRED",
            expire_ms: live::now() - 86_400_000,
            strategy: "WEEK",
            ..rw_user(
                "erinShort0000001",
                "erin",
                "9f0c7a1e-3b9d-4e2a-8c6f-1d2e3f4a5b6c",
            )
        },
    )
    .await;

    let data = tempfile::tempdir().unwrap();
    let (panel, http) = live::panel_with(data.path(), |c| {
        c.subscription.old_paths = vec!["api/sub".into()];
    })
    .await;
    let store = panel.state.store().clone();
    let service = panel.state.service().clone();
    let cluster_id = store.create_cluster("c", live::now()).await.unwrap().id;
    let server = live::server(&panel, cluster_id, "s").await;
    let input = live::vless(server, "Amsterdam", port, false);
    service.create_inbound(&input, live::now()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut nodes = live::join_all(&panel, dir.path(), &[server]).await;
    let node = nodes.remove(0);

    // A dry run says what would happen and keeps nothing.
    let dry = import::remnawave(store.as_ref(), &url, (true, false), live::now())
        .await
        .unwrap();
    assert!(dry.dry_run);
    assert_eq!(
        dry.schema,
        "20260815170000_add_shared_lists (Remnawave 3.0–3.3)"
    );
    assert_eq!(dry.added, ["alice", "bob", "dave", "erin"]);
    assert!(all_users(&panel).await.is_empty());

    let report = import::remnawave(store.as_ref(), &url, (false, false), live::now())
        .await
        .unwrap();
    assert_eq!(report.users_read, 4);
    assert_eq!(report.added, ["alice", "bob", "dave", "erin"]);
    let reasons: Vec<String> = report
        .not_carried
        .iter()
        .map(|n| format!("{}: {}", n.what, n.reason))
        .collect();
    assert_eq!(
        reasons,
        [
            "admin bot: admins are not carried: this panel has one admin for now; log in with its own password",
            "admin root: admins are not carried: this panel has one admin for now; log in with its own password",
            "internal squad Default-Squad: squads are not carried: its 4 members get the routes of their clusters here (all routes, unless the operator puts them in clusters)",
        ]
    );
    let admins: Vec<(&str, bool)> = report
        .admins
        .iter()
        .map(|a| (a.name.as_str(), a.sudo))
        .collect();
    assert_eq!(admins, [("bot", false), ("root", true)]);
    let nodes_seen: Vec<(&str, &str, i64)> = report
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.address.as_str(), n.port))
        .collect();
    assert_eq!(nodes_seen, [("Frankfurt", "de.example.net", 2222)]);
    let served: Vec<(&str, &str, &str, u64, bool)> = report
        .inbounds
        .iter()
        .map(|i| {
            (
                i.tag.as_str(),
                i.network.as_str(),
                i.security.as_str(),
                i.port,
                i.served,
            )
        })
        .collect();
    assert_eq!(
        served,
        [
            ("TROJAN_WS", "ws", "tls", 8443, true),
            ("VLESS_TCP", "raw", "none", u64::from(port), true)
        ]
    );

    // User for user, as Remnawave counts and limits them.
    let users = all_users(&panel).await;
    assert_eq!(users.len(), 4);
    let a = by_name(&users, "alice");
    assert_eq!(a.used_up + a.used_down, 7 * GIB as u64);
    assert_eq!(a.lifetime_bytes, 9 * GIB as u64);
    assert_eq!(a.traffic_limit, Some(50 * GIB as u64));
    assert_eq!(a.reset_strategy, ResetStrategy::Month);
    assert_eq!(a.expires_ms, Some(future));
    assert_eq!(a.note, "paid");
    assert_eq!(a.device_limit, Some(2));
    assert_eq!(a.created_ms, 1_767_323_045_678);
    let statuses: Vec<(&str, UserStatus)> = users
        .iter()
        .map(|u| (u.username.as_str(), u.status))
        .collect();
    assert_eq!(
        statuses,
        [
            ("alice", UserStatus::Active),
            ("bob", UserStatus::Disabled),
            ("dave", UserStatus::Limited),
            ("erin", UserStatus::Expired),
        ]
    );
    let dave = by_name(&users, "dave");
    assert_eq!(
        (dave.reset_strategy, dave.device_limit, dave.lifetime_bytes),
        (ResetStrategy::MonthFromStart, None, 3 * GIB as u64)
    );
    // No limit of her own: Remnawave's fallback of 5. No counters row: nothing used.
    let bob = by_name(&users, "bob");
    assert_eq!(
        (bob.device_limit, bob.used_up + bob.used_down),
        (Some(5), 0)
    );
    assert_eq!(by_name(&users, "erin").reset_strategy, ResetStrategy::Week);
    let devices: Vec<(String, Option<String>, Option<String>)> = store
        .devices(a.id)
        .await
        .unwrap()
        .into_iter()
        .map(|d| (d.hwid, d.os, d.model))
        .collect();
    assert_eq!(
        devices,
        [
            (
                "hwid-alice-tablet-2".into(),
                Some("Android 14".into()),
                Some("Pixel 8".into())
            ),
            (
                "hwid-alice-phone-01".into(),
                Some("Android 14".into()),
                Some("Pixel 8".into())
            ),
        ]
    );
    let creds = live::credentials(&panel, a).await;
    assert_eq!(creds.vless_uuid, ALICE_UUID);
    assert_eq!(creds.trojan_password, "alice-old-trojan");
    assert_eq!(
        switchyard_panel::service::ss_user_key(&creds, "2022-blake3-aes-256-gcm").as_deref(),
        Some(base64_of(ALICE_SS).as_str()),
        "Remnawave's 2022 key: the password's bytes"
    );

    // Nothing but an imported short id is a way in.
    for bad in ["alice", "id:1", "Xk3J2h4G5f6D7s8B", "api"] {
        let (status, _, _) = live::get_raw(http, &format!("/api/sub/{bad}"), "").await;
        assert!(status.contains("404"), "{bad}: {status}");
    }
    let (status, _, _) = live::get_raw(http, &format!("/api/sub/{ALICE_SHORT}/info"), "").await;
    assert!(status.contains("404"), "{status}");

    let target = HttpTarget::start().await.unwrap();
    let user_id = a.id;
    let down = node_down(&node, user_id);

    // Her two devices are known here: a third one is past her limit of 2.
    let (status, headers, _) = live::get_raw(
        http,
        &format!("/api/sub/{ALICE_SHORT}"),
        "x-hwid: hwid-alice-laptop3\r\n",
    )
    .await;
    assert!(status.contains("200"), "{status}");
    assert!(
        headers.contains("already used on 2 device(s), its limit"),
        "{headers}"
    );

    // sing-box on her phone runs her old link, with Remnawave's kind of app in the path.
    const PHONE: &str = "x-hwid: hwid-alice-phone-01\r\n";
    let (status, _, body) =
        live::get_raw(http, &format!("/api/sub/{ALICE_SHORT}/singbox"), PHONE).await;
    assert!(status.contains("200"), "{status}: {body}");
    singbox_carries(&body, &target, down).await;
    for kind in ["mihomo", "stash", "json", "v2ray-json"] {
        let (status, _, body) =
            live::get_raw(http, &format!("/api/sub/{ALICE_SHORT}/{kind}"), PHONE).await;
        assert!(status.contains("200"), "{kind}: {status}: {body}");
        let right = if kind.contains("json") {
            serde_json::from_str::<serde_json::Value>(&body).is_ok()
        } else {
            body.contains("\"proxies\":")
        };
        assert!(right, "{kind}: {body}");
    }

    // Xray with nothing but the old `vless://` link's credentials: same host and port.
    old_vless_carries(port, ALICE_UUID, &target, down).await;

    // A second import after changes in Remnawave: exactly those. Alice used 1,000
    // more bytes there and got a new note; erin is gone; frank is new.
    sqlx::raw_sql(
        "UPDATE user_traffic SET used_traffic_bytes = used_traffic_bytes + 1000, \
         lifetime_used_traffic_bytes = lifetime_used_traffic_bytes + 1000 \
         WHERE id = (SELECT id FROM users WHERE username = 'alice');
         UPDATE users SET description = 'upgraded' WHERE username = 'alice';
         DELETE FROM users WHERE username = 'erin';",
    )
    .execute(&mut c)
    .await
    .unwrap();
    add_user(
        &mut c,
        "id",
        &rw_user(
            "frankShort000001",
            "frank",
            "af0c7a1e-3b9d-4e2a-8c6f-1d2e3f4a5b6c",
        ),
    )
    .await;
    live::wait_until("the panel has alice's traffic", 20, || {
        let store = store.clone();
        async move {
            let u = store.user(user_id, live::now()).await.unwrap();
            u.used_up + u.used_down >= 7 * GIB as u64 + 2 * SIZE
        }
    })
    .await;
    let before = store.user(user_id, live::now()).await.unwrap();
    let report = import::remnawave(store.as_ref(), &url, (false, true), live::now())
        .await
        .unwrap();
    assert_eq!(report.added, ["frank"]);
    assert_eq!(report.updated, ["alice", "bob", "dave"]);
    assert_eq!(report.disabled, ["erin"]);
    let users = all_users(&panel).await;
    assert_eq!(users.len(), 5, "nobody twice");
    let a = by_name(&users, "alice");
    assert_eq!(a.note, "upgraded");
    assert_eq!(
        a.used_up + a.used_down,
        before.used_up + before.used_down + 1000,
        "Remnawave's 1,000 more bytes, and what our node counted stays"
    );
    assert_eq!(
        store.devices(a.id).await.unwrap().len(),
        2,
        "no device twice"
    );
    assert_eq!(by_name(&users, "erin").status, UserStatus::Disabled);
    // Remnawave's links under `/sub/` need no old path.
    let (status, _, _) = live::get_raw(http, "/sub/frankShort000001?format=links", "").await;
    assert!(status.contains("200"), "{status}");
    let (status, _, body) = live::get_raw(http, "/api/sub/frankShort000001/clash", "").await;
    assert!(body.contains("\"proxies\":"), "{body}");
    assert!(status.contains("200"), "{status}");

    // Revoking alice's link here ends her old Remnawave link too, and a later
    // import does not bring it back.
    service
        .revoke_subscription(user_id, live::now())
        .await
        .unwrap();
    import::remnawave(store.as_ref(), &url, (false, false), live::now())
        .await
        .unwrap();
    let (status, _, _) = live::get_raw(http, &format!("/api/sub/{ALICE_SHORT}"), "").await;
    assert!(status.contains("404"), "{status}");

    c.close().await.unwrap();
    node.shutdown().await;
    panel.shutdown().await;
}

fn base64_of(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remnawave_2_8_is_read_by_its_own_keys_and_other_databases_are_refused() {
    let pg = cluster().await;
    let dir = tempfile::tempdir().unwrap();
    let (panel, _) = live::panel_with(dir.path(), |_| {}).await;
    let store = panel.state.store().clone();

    // 2.8: users keyed by `t_id` (and a `uuid`), counters by `t_id`.
    let (url, mut c) = remnawave_db(
        &pg,
        "remnawave_28",
        include_str!("import/remnawave_2.8.sql"),
    )
    .await;
    panel_rows(
        &mut c,
        20443,
        ", profile_title, support_link, profile_update_interval",
    )
    .await;
    let grace = add_user(
        &mut c,
        "t_id",
        &RwUser {
            limit: 3 * GIB,
            strategy: "DAY",
            traffic: Some((GIB, 2 * GIB)),
            ..rw_user(
                "graceShort000001",
                "grace",
                "bf0c7a1e-3b9d-4e2a-8c6f-1d2e3f4a5b6c",
            )
        },
    )
    .await;
    add_device(&mut c, grace, "hwid-grace-laptop1", "2026-03-03 10:00:00").await;
    let report = import::remnawave(store.as_ref(), &url, (false, false), live::now())
        .await
        .unwrap();
    assert_eq!(
        report.schema,
        "20260625200530_add_external_squad_index (Remnawave 2.3–2.8)"
    );
    assert_eq!(report.added, ["grace"]);
    let users = all_users(&panel).await;
    let g = by_name(&users, "grace");
    assert_eq!(
        (
            g.used_up + g.used_down,
            g.lifetime_bytes,
            g.traffic_limit,
            g.reset_strategy
        ),
        (
            GIB as u64,
            2 * GIB as u64,
            Some(3 * GIB as u64),
            ResetStrategy::Day
        )
    );
    assert_eq!(store.devices(g.id).await.unwrap().len(), 1);

    // A migration this import does not know (a newer Remnawave): refused naming it.
    sqlx::raw_sql(
        "INSERT INTO _prisma_migrations (id, checksum, finished_at, migration_name) \
         VALUES ('x', 'y', now(), '20260822150859_host_exclusion_modes')",
    )
    .execute(&mut c)
    .await
    .unwrap();
    let e = import::remnawave(store.as_ref(), &url, (false, false), live::now())
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "Remnawave schema with migration 20260822150859_host_exclusion_modes is not one this \
         import knows (known: 2.3.0 to 3.3.2); upgrade Remnawave to a known release first, or tell us"
    );
    c.close().await.unwrap();

    // Not Remnawave at all; a wrong password is named without the password.
    let other = pg.fresh_database("other").unwrap();
    let e = import::remnawave(store.as_ref(), &other, (false, false), live::now())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.ends_with("no _prisma_migrations table: not a Remnawave database"),
        "{e}"
    );
    let e = import::remnawave(
        store.as_ref(),
        &format!("postgres://nobody:s3cret-pass@127.0.0.1:{}/none", pg.port()),
        (false, false),
        live::now(),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with(&format!("postgres://127.0.0.1:{}/none: ", pg.port())),
        "{e}"
    );
    assert!(!e.contains("s3cret"), "{e}");
    assert_eq!(all_users(&panel).await.len(), 1);
    panel.shutdown().await;
}
