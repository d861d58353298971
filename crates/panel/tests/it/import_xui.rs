//! Users brought from 3x-ui 2.8. 3x-ui cannot run here (a Go program whose modules
//! this machine cannot fetch), so its database is made with the statements its ORM
//! issues for its v2.8.5 models (`import/xui_2.8.sql`), filled as 3x-ui's own code
//! fills it: clients in each inbound's settings JSON as its UI writes them (numbers
//! as strings where the UI leaves them so), counters in `client_traffics`.
//!
//! Then `switchyard_panel::import::xui` into a panel with one real node, a VLESS
//! inbound on the port 3x-ui's VLESS inbound had: a dry run keeps nothing; the
//! import matches the source client for client (one subscription id is one user);
//! a user's **old** link (`/sub/{subId}`, and the JSON path once configured) serves
//! their subscription, which the real sing-box runs, and the real Xray with only the
//! old `vless://` credentials carries a download through our node too. An email is
//! never a way in. A second import after changes in 3x-ui updates, adds and
//! disables exactly what changed. A hostile file is refused naming the row, and a
//! layout this import does not know by name (3.x is `import_xui3.rs`).

use crate::import_common::{
    SIZE, all_users, by_name, node_down, old_vless_carries, singbox_carries,
};
use crate::live;

use std::path::Path;

use serde_json::{Value, json};
use sqlx::{Connection, Executor, SqliteConnection};
use switchyard_panel::import;
use switchyard_panel::model::UserStatus;
use switchyard_testkit::{HttpTarget, free_port};

const GIB: i64 = 1 << 30;
const ALICE_SUB: &str = "k3j2h4g5f6d7s8a9";
const ALICE_UUID: &str = "5f0c7a1e-3b9d-4e2a-8c6f-1d2e3f4a5b6c";

/// An empty 3x-ui 2.8 database at `path`, with its admin and subscription settings.
pub(crate) async fn xui_db(path: &Path) -> SqliteConnection {
    let url = format!("sqlite://{}?mode=rwc", path.display());
    let mut c = SqliteConnection::connect(&url).await.unwrap();
    let schema = include_str!("import/xui_2.8.sql");
    c.execute(schema).await.unwrap();
    c.execute(
        "INSERT INTO users (username, password) VALUES ('admin', '$2a$10$abcdefghijklmnopqrstuv');
         INSERT INTO history_of_seeders (seeder_name) VALUES ('UserPasswordHash');
         INSERT INTO settings (key, value) VALUES ('subEnable', 'true'), ('subPath', '/sub/'),
           ('subJsonPath', '/json/'), ('subPort', '2096');",
    )
    .await
    .unwrap();
    c
}

/// One inbound as 3x-ui's "add inbound" writes it; its id.
async fn inbound(
    c: &mut SqliteConnection,
    (protocol, port, tag): (&str, u16, &str),
    clients: Value,
    stream: Value,
) -> i64 {
    let mut settings = json!({"clients": clients, "decryption": "none", "fallbacks": []});
    if protocol == "shadowsocks" {
        settings = json!({"method": "chacha20-ietf-poly1305", "password": "", "network": "tcp,udp", "clients": clients});
    }
    sqlx::query(
        "INSERT INTO inbounds (user_id, up, down, total, all_time, remark, enable, expiry_time, \
         traffic_reset, last_traffic_reset_time, listen, port, protocol, settings, \
         stream_settings, tag, sniffing) \
         VALUES (1, 0, 0, 0, 0, $1, 1, 0, 'never', 0, '', $2, $3, $4, $5, $6, \
         '{\"enabled\":false,\"destOverride\":[\"http\",\"tls\",\"quic\",\"fakedns\"]}')",
    )
    .bind(format!("{protocol} {port}"))
    .bind(i64::from(port))
    .bind(protocol)
    .bind(serde_json::to_string_pretty(&settings).unwrap())
    .bind(serde_json::to_string_pretty(&stream).unwrap())
    .bind(tag)
    .execute(&mut *c)
    .await
    .unwrap()
    .last_insert_rowid()
}

/// A client's counters, as 3x-ui keeps them.
async fn traffic(
    c: &mut SqliteConnection,
    inbound: i64,
    email: &str,
    (up, down, all_time): (i64, i64, i64),
    client: &Value,
) {
    let total = client["totalGB"].as_i64().unwrap_or(0);
    let expiry = client["expiryTime"].as_i64().unwrap_or(0);
    let depleted = (total > 0 && up + down >= total) || (expiry > 0 && expiry <= live::now());
    sqlx::query(
        "INSERT INTO client_traffics (inbound_id, enable, email, up, down, all_time, \
         expiry_time, total, reset, last_online) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, 0)",
    )
    .bind(inbound)
    .bind(!depleted)
    .bind(email)
    .bind(up)
    .bind(down)
    .bind(all_time)
    .bind(expiry)
    .bind(total)
    .execute(&mut *c)
    .await
    .unwrap();
}

/// A client as 3x-ui's UI writes it.
fn xui_client(email: &str, sub_id: &str, id: &str, extra: Value) -> Value {
    let mut c = json!({
        "id": id, "flow": "", "email": email, "limitIp": 0, "totalGB": 0, "expiryTime": 0,
        "enable": true, "tgId": "", "subId": sub_id, "comment": "", "reset": 0,
        "created_at": 1_760_000_000_000_i64, "updated_at": 1_760_000_000_000_i64
    });
    for (k, v) in extra.as_object().unwrap() {
        c[k] = v.clone();
    }
    c
}

/// The source: alice on VLESS and Trojan (one subscription), bob switched off,
/// carol starting on first use, dave over his limit, erin expired, frank on VMess.
pub(crate) async fn make_source(path: &Path, vless_port: u16) -> Value {
    let mut c = xui_db(path).await;
    let future = live::now() + 30 * 86_400_000;
    let clients = [
        xui_client(
            "alice",
            ALICE_SUB,
            ALICE_UUID,
            json!({"totalGB": 50 * GIB, "expiryTime": future, "limitIp": 2, "comment": "paid"}),
        ),
        xui_client(
            "bob",
            "b0bsub0000000001",
            "6f0c7a1e-3b9d-4e2a-8c6f-1d2e3f4a5b6c",
            json!({"enable": false}),
        ),
        xui_client(
            "carol",
            "carolsub00000001",
            "7f0c7a1e-3b9d-4e2a-8c6f-1d2e3f4a5b6c",
            json!({"expiryTime": -3 * 86_400_000_i64, "totalGB": "10737418240"}),
        ),
        xui_client(
            "dave",
            "davesub000000001",
            "8f0c7a1e-3b9d-4e2a-8c6f-1d2e3f4a5b6c",
            json!({"totalGB": GIB}),
        ),
        xui_client(
            "erin",
            "erinsub000000001",
            "9f0c7a1e-3b9d-4e2a-8c6f-1d2e3f4a5b6c",
            json!({"expiryTime": live::now() - 86_400_000}),
        ),
    ];
    let vless = inbound(
        &mut c,
        ("vless", vless_port, &format!("inbound-{vless_port}")),
        json!(clients),
        json!({"network": "tcp", "security": "none", "externalProxy": [], "tcpSettings": {"acceptProxyProtocol": false, "header": {"type": "none"}}}),
    )
    .await;
    let used = [
        (3 * GIB, 4 * GIB, 9 * GIB),
        (1, 2, 3),
        (0, 0, 0),
        (GIB, GIB, 2 * GIB),
        (5, 6, 11),
    ];
    for (client, used) in clients.iter().zip(used) {
        traffic(
            &mut c,
            vless,
            client["email"].as_str().unwrap(),
            used,
            client,
        )
        .await;
    }
    let alice_trojan = xui_client(
        "alice-trojan",
        ALICE_SUB,
        "",
        json!({"password": "alice-old-trojan", "totalGB": 10 * GIB, "expiryTime": future - 5}),
    );
    let trojan = inbound(
        &mut c,
        ("trojan", 21443, "inbound-21443"),
        json!([alice_trojan]),
        json!({"network": "ws", "security": "tls", "wsSettings": {"path": "/t"}}),
    )
    .await;
    traffic(
        &mut c,
        trojan,
        "alice-trojan",
        (100, 200, 300),
        &alice_trojan,
    )
    .await;
    let frank = xui_client(
        "frank",
        "franksub00000001",
        "af0c7a1e-3b9d-4e2a-8c6f-1d2e3f4a5b6c",
        json!({"security": "auto"}),
    );
    let vmess = inbound(
        &mut c,
        ("vmess", 21444, "inbound-21444"),
        json!([frank]),
        json!({"network": "tcp"}),
    )
    .await;
    traffic(&mut c, vmess, "frank", (0, 0, 0), &frank).await;
    c.close().await.unwrap();
    json!({"future": future})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xui_clients_arrive_as_users_and_their_old_links_and_configs_work() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x-ui.db");
    let port = free_port().unwrap();
    let source = make_source(&db, port).await;

    let (panel, http) = live::panel_with(dir.path(), |c| {
        c.subscription.old_paths = vec!["json".into()];
    })
    .await;
    let store = panel.state.store().clone();
    let service = panel.state.service().clone();
    let cluster = store.create_cluster("c", live::now()).await.unwrap().id;
    let server = live::server(&panel, cluster, "s").await;
    let input = live::vless(server, "Amsterdam", port, false);
    service.create_inbound(&input, live::now()).await.unwrap();
    let mut nodes = live::join_all(&panel, dir.path(), &[server]).await;
    let node = nodes.remove(0);

    // A dry run says what would happen and keeps nothing.
    let dry = import::xui(store.as_ref(), &db, (true, false), live::now())
        .await
        .unwrap();
    assert!(dry.dry_run);
    assert_eq!(dry.schema, "2.x");
    assert_eq!(
        dry.added,
        ["alice", "bob", "carol", "dave", "erin", "frank"]
    );
    assert!(all_users(&panel).await.is_empty());
    let served: Vec<(&str, &str, bool)> = dry
        .inbounds
        .iter()
        .map(|i| (i.tag.as_str(), i.network.as_str(), i.served))
        .collect();
    let vless_tag = format!("inbound-{port}");
    assert_eq!(
        served,
        [
            (vless_tag.as_str(), "tcp", true),
            ("inbound-21443", "ws", true),
            ("inbound-21444", "tcp", false)
        ]
    );

    let report = import::xui(store.as_ref(), &db, (false, false), live::now())
        .await
        .unwrap();
    assert_eq!(report.users_read, 6);
    assert_eq!(
        report.added,
        ["alice", "bob", "carol", "dave", "erin", "frank"]
    );
    let reasons: Vec<String> = report
        .not_carried
        .iter()
        .map(|n| format!("{}: {}", n.what, n.reason))
        .collect();
    assert_eq!(
        reasons,
        [
            "subscription path /json/: add \"json\" to subscription.old_paths so links under it keep working",
            "user alice: its clients alice-trojan share its subscription: one user here, their usage and limits added up",
            "user frank: client frank: vmess is not served here: its credential was left out",
            "admin admin: admins are not carried: this panel has one admin for now; log in with its own password",
        ]
    );
    let admins: Vec<(&str, bool, usize)> = report
        .admins
        .iter()
        .map(|a| (a.name.as_str(), a.sudo, a.users))
        .collect();
    assert_eq!(admins, [("admin", true, 6)]);

    // Client for client, as 3x-ui counts and limits them.
    let users = all_users(&panel).await;
    assert_eq!(users.len(), 6);
    let alice = by_name(&users, "alice");
    assert_eq!(alice.used_up + alice.used_down, (7 * GIB + 300) as u64);
    assert_eq!(alice.lifetime_bytes, (9 * GIB + 300) as u64);
    assert_eq!(alice.traffic_limit, Some(60 * GIB as u64));
    assert_eq!(alice.expires_ms, source["future"].as_i64());
    assert_eq!(alice.address_limit, Some(2));
    assert_eq!(alice.note, "paid");
    assert_eq!(alice.created_ms, 1_760_000_000_000);
    let statuses: Vec<(&str, UserStatus)> = users
        .iter()
        .map(|u| (u.username.as_str(), u.status))
        .collect();
    assert_eq!(
        statuses,
        [
            ("alice", UserStatus::Active),
            ("bob", UserStatus::Disabled),
            ("carol", UserStatus::OnHold),
            ("dave", UserStatus::Limited),
            ("erin", UserStatus::Expired),
            ("frank", UserStatus::Active),
        ]
    );
    let carol = by_name(&users, "carol");
    assert_eq!(
        (carol.on_hold_days, carol.traffic_limit),
        (Some(3), Some(10 * GIB as u64))
    );
    assert_eq!(
        by_name(&users, "dave").used_up + by_name(&users, "dave").used_down,
        2 * GIB as u64
    );
    let creds = live::credentials(&panel, alice).await;
    assert_eq!(creds.vless_uuid, ALICE_UUID);
    assert_eq!(creds.trojan_password, "alice-old-trojan");

    // An email or anything that is not an imported subscription id is no way in.
    for bad in [
        "alice",
        "email:alice",
        "sub:k3j2h4g5f6d7s8a9",
        "k3j2h4g5f6d7s8a0",
    ] {
        let (status, _, _) = live::get_raw(http, &format!("/sub/{bad}"), "").await;
        assert!(status.contains("404"), "{bad}: {status}");
    }

    let target = HttpTarget::start().await.unwrap();
    let user_id = alice.id;
    let down = node_down(&node, user_id);

    // sing-box runs alice's old link.
    let (status, _, body) =
        live::get_raw(http, &format!("/sub/{ALICE_SUB}?format=sing-box"), "").await;
    assert!(status.contains("200"), "{status}: {body}");
    singbox_carries(&body, &target, down).await;

    // Xray with nothing but the old `vless://` link's credentials: same host and port.
    old_vless_carries(port, ALICE_UUID, &target, down).await;

    // 3x-ui's JSON path, once configured, answers too.
    let (status, _, body) =
        live::get_raw(http, &format!("/json/{ALICE_SUB}?format=links"), "").await;
    assert!(status.contains("200"), "{status}: {body}");

    // A second import after changes in 3x-ui: exactly those.
    let mut c = SqliteConnection::connect(&format!("sqlite://{}", db.display()))
        .await
        .unwrap();
    let settings: String = sqlx::query_scalar("SELECT settings FROM inbounds WHERE port = $1")
        .bind(i64::from(port))
        .fetch_one(&mut c)
        .await
        .unwrap();
    let mut settings: Value = serde_json::from_str(&settings).unwrap();
    let list = settings["clients"].as_array_mut().unwrap();
    list[0]["comment"] = json!("upgraded");
    list.retain(|c| c["email"] != "erin");
    list.push(xui_client(
        "grace",
        "gracesub00000001",
        "bf0c7a1e-3b9d-4e2a-8c6f-1d2e3f4a5b6c",
        json!({}),
    ));
    sqlx::query("UPDATE inbounds SET settings = $1 WHERE port = $2")
        .bind(settings.to_string())
        .bind(i64::from(port))
        .execute(&mut c)
        .await
        .unwrap();
    sqlx::query("UPDATE client_traffics SET down = down + 1000, all_time = all_time + 1000 WHERE email = 'alice'")
        .execute(&mut c)
        .await
        .unwrap();
    sqlx::query("DELETE FROM client_traffics WHERE email = 'erin'")
        .execute(&mut c)
        .await
        .unwrap();
    c.close().await.unwrap();
    live::wait_until("the panel has alice's traffic", 20, || {
        let store = store.clone();
        async move {
            let u = store.user(user_id, live::now()).await.unwrap();
            u.used_up + u.used_down >= (7 * GIB + 300) as u64 + 2 * SIZE
        }
    })
    .await;
    let before = store.user(user_id, live::now()).await.unwrap();
    let report = import::xui(store.as_ref(), &db, (false, true), live::now())
        .await
        .unwrap();
    assert_eq!(report.added, ["grace"]);
    assert_eq!(report.updated, ["alice", "bob", "carol", "dave", "frank"]);
    assert_eq!(report.disabled, ["erin"]);
    let users = all_users(&panel).await;
    assert_eq!(users.len(), 7, "nobody twice");
    let alice = by_name(&users, "alice");
    assert_eq!(alice.note, "upgraded");
    assert_eq!(
        alice.used_up + alice.used_down,
        before.used_up + before.used_down + 1000,
        "3x-ui's 1,000 more bytes, and what our node counted stays"
    );
    assert_eq!(by_name(&users, "erin").status, UserStatus::Disabled);
    let (status, _, _) = live::get_raw(http, "/sub/gracesub00000001?format=links", "").await;
    assert!(status.contains("200"), "{status}");

    node.shutdown().await;
    panel.shutdown().await;
}

#[tokio::test]
async fn a_hostile_xui_file_is_refused_naming_the_row_and_an_unknown_layout_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, _) = live::panel_with(dir.path(), |_| {}).await;
    let store = panel.state.store().clone();
    let refused = |e: import::ImportError| e.to_string();

    // Not 3x-ui at all.
    let other = dir.path().join("other.db");
    let mut c = SqliteConnection::connect(&format!("sqlite://{}?mode=rwc", other.display()))
        .await
        .unwrap();
    c.execute("CREATE TABLE t (x integer)").await.unwrap();
    c.close().await.unwrap();
    let e = refused(
        import::xui(store.as_ref(), &other, (false, false), live::now())
            .await
            .unwrap_err(),
    );
    assert!(
        e.ends_with("no inbounds and client_traffics tables: not a 3x-ui database"),
        "{e}"
    );

    // A clients table without 3.x's links to inbounds: a layout we do not know.
    let v3 = dir.path().join("v3.db");
    let mut c = xui_db(&v3).await;
    c.execute("CREATE TABLE clients (id integer PRIMARY KEY, email text)")
        .await
        .unwrap();
    c.close().await.unwrap();
    let e = refused(
        import::xui(store.as_ref(), &v3, (false, false), live::now())
            .await
            .unwrap_err(),
    );
    assert_eq!(
        e,
        "3x-ui schema with a clients table but no client_inbounds is not one this import knows (known: 2.x, 3.x); upgrade 3x-ui to a known release first, or tell us"
    );

    // Rows that do not fit: named, and nothing written.
    for (what, settings, traffic_up, expected) in [
        (
            "settings",
            "{not json",
            0,
            "inbounds row 1, settings: key must be a string at line 1 column 2",
        ),
        (
            "clients",
            r#"{"clients": {"email": "a"}}"#,
            0,
            "inbounds row 1, settings: \"clients\" is not a list",
        ),
        (
            "negative limit",
            r#"{"clients": [{"email": "a", "totalGB": -5}]}"#,
            0,
            "inbounds row 1, settings: clients[0].totalGB: -5 is negative",
        ),
        (
            "negative usage",
            r#"{"clients": [{"email": "a"}]}"#,
            -1,
            "client_traffics row 1, up: negative",
        ),
    ] {
        let path = dir.path().join(format!("{}.db", what.replace(' ', "-")));
        let mut c = xui_db(&path).await;
        sqlx::query("INSERT INTO inbounds (enable, port, protocol, settings, stream_settings, tag) VALUES (1, 443, 'vless', $1, '{}', 't')")
            .bind(settings)
            .execute(&mut c)
            .await
            .unwrap();
        sqlx::query("INSERT INTO client_traffics (inbound_id, enable, email, up, down, all_time, expiry_time, total) VALUES (1, 1, 'a', $1, 0, 0, 0, 0)")
            .bind(traffic_up)
            .execute(&mut c)
            .await
            .unwrap();
        c.close().await.unwrap();
        let e = refused(
            import::xui(store.as_ref(), &path, (false, false), live::now())
                .await
                .unwrap_err(),
        );
        assert_eq!(e, expected, "{what}");
    }
    assert!(all_users(&panel).await.is_empty());
    assert_eq!(store.import_secret(import::XUI).await.unwrap(), None);
    panel.shutdown().await;
}
