//! Users brought from 3x-ui 3.6, which keeps clients in a `clients` table linked to
//! inbounds by `client_inbounds` (one client may serve several inbounds) and counts
//! them in `client_traffics` without a lifetime column. Its database is made with
//! the statements its ORM issues for its v3.6.0 models (`import/xui_3.6.sql`; 3x-ui
//! cannot be built here) and filled as its client service fills it.
//!
//! Then `switchyard_panel::import::xui` into a panel with one real node: a client on
//! two inbounds is one user, counted and limited once, keeping both credentials; the
//! old link (`/sub/{subId}`) serves a subscription the real sing-box runs through our
//! node; revoking the link here ends it for good; a second import adds what is new.

use crate::import_common::{all_users, by_name, node_down, singbox_carries};
use crate::live;

use std::path::Path;

use serde_json::json;
use sqlx::{Connection, Executor, SqliteConnection};
use switchyard_panel::import;
use switchyard_panel::model::UserStatus;
use switchyard_testkit::{HttpTarget, free_port};

const GIB: i64 = 1 << 30;
const ALICE_SUB: &str = "v3alicesub000001";
const ALICE_UUID: &str = "5f0c7a1e-3b9d-4e2a-8c6f-1d2e3f4a5b6d";
const CREATED: i64 = 1_770_000_000_000;

/// A 3x-ui 3.6 database at `path` with its admin and subscription settings.
async fn xui3_db(path: &Path) -> SqliteConnection {
    let url = format!("sqlite://{}?mode=rwc", path.display());
    let mut c = SqliteConnection::connect(&url).await.unwrap();
    c.execute(include_str!("import/xui_3.6.sql")).await.unwrap();
    c.execute(
        "INSERT INTO users (username, password) VALUES ('admin', '$2a$10$abcdefghijklmnopqrstuv');
         INSERT INTO history_of_seeders (seeder_name) VALUES ('UserPasswordHash'),
           ('HostsFromExternalProxy'), ('WireguardPeersToClients');
         INSERT INTO settings (key, value) VALUES ('subEnable', 'true'), ('subPath', '/sub/');",
    )
    .await
    .unwrap();
    c
}

/// An inbound as 3x-ui 3.6 stores it (its clients also copied into the settings for
/// Xray, as 3x-ui does); its id.
async fn inbound(c: &mut SqliteConnection, protocol: &str, port: u16, clients: &[&str]) -> i64 {
    let listed: Vec<_> = clients
        .iter()
        .map(|e| json!({"email": e, "enable": true}))
        .collect();
    let settings = json!({"clients": listed, "decryption": "none", "fallbacks": []});
    sqlx::query(
        "INSERT INTO inbounds (user_id, up, down, total, remark, enable, expiry_time, \
         listen, port, protocol, settings, stream_settings, tag, sniffing) \
         VALUES (1, 0, 0, 0, $1, 1, 0, '', $2, $3, $4, $5, $6, '{}')",
    )
    .bind(format!("{protocol} {port}"))
    .bind(i64::from(port))
    .bind(protocol)
    .bind(settings.to_string())
    .bind(json!({"network": "tcp", "security": "none"}).to_string())
    .bind(format!("in-{port}-tcp"))
    .execute(&mut *c)
    .await
    .unwrap()
    .last_insert_rowid()
}

/// A client as 3x-ui 3.6's client service writes it: its row, a link to each
/// inbound, and its counters (kept under the first inbound).
async fn client(
    c: &mut SqliteConnection,
    (email, sub_id, uuid, password): (&str, &str, &str, &str),
    (total, expiry, limit_ip, enable, reset): (i64, i64, i64, bool, i64),
    inbounds: &[i64],
    (up, down): (i64, i64),
) {
    let id = sqlx::query(
        "INSERT INTO clients (email, sub_id, uuid, password, flow, security, limit_ip, \
         total_gb, expiry_time, enable, tg_id, comment, reset, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, '', 'auto', $5, $6, $7, $8, 0, $9, $10, $11, $11)",
    )
    .bind(email)
    .bind(sub_id)
    .bind(uuid)
    .bind(password)
    .bind(limit_ip)
    .bind(total)
    .bind(expiry)
    .bind(enable)
    .bind(if email == "alice" { "paid" } else { "" })
    .bind(reset)
    .bind(CREATED)
    .execute(&mut *c)
    .await
    .unwrap()
    .last_insert_rowid();
    for inbound in inbounds {
        sqlx::query(
            "INSERT INTO client_inbounds (client_id, inbound_id, flow_override, created_at) \
             VALUES ($1, $2, '', $3)",
        )
        .bind(id)
        .bind(inbound)
        .bind(CREATED)
        .execute(&mut *c)
        .await
        .unwrap();
    }
    sqlx::query(
        "INSERT INTO client_traffics (inbound_id, enable, email, up, down, expiry_time, \
         total, reset, last_online) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0)",
    )
    .bind(inbounds[0])
    .bind(enable)
    .bind(email)
    .bind(up)
    .bind(down)
    .bind(expiry)
    .bind(total)
    .bind(reset)
    .execute(&mut *c)
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xui_3_clients_on_several_inbounds_arrive_once_and_their_old_links_work() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x-ui.db");
    let port = free_port().unwrap();
    let mut c = xui3_db(&db).await;
    let vless = inbound(&mut c, "vless", port, &["alice", "bob"]).await;
    let trojan = inbound(&mut c, "trojan", 21_445, &["alice", "carol"]).await;
    let future = live::now() + 30 * 86_400_000;
    let alice = ("alice", ALICE_SUB, ALICE_UUID, "alice-old-trojan");
    client(
        &mut c,
        alice,
        (50 * GIB, future, 2, true, 0),
        &[vless, trojan],
        (3 * GIB, 4 * GIB),
    )
    .await;
    let bob = (
        "bob",
        "v3bobsub00000001",
        "6f0c7a1e-3b9d-4e2a-8c6f-1d2e3f4a5b6d",
        "bob-pw",
    );
    client(&mut c, bob, (0, 0, 0, false, 0), &[vless], (1, 2)).await;
    let carol = (
        "carol",
        "v3carolsub000001",
        "7f0c7a1e-3b9d-4e2a-8c6f-1d2e3f4a5b6d",
        "carol-pw",
    );
    client(&mut c, carol, (GIB, future, 0, true, 30), &[trojan], (0, 0)).await;

    let (panel, http) = live::panel_with(dir.path(), |_| {}).await;
    let store = panel.state.store().clone();
    let service = panel.state.service().clone();
    let cluster = store.create_cluster("c", live::now()).await.unwrap().id;
    let server = live::server(&panel, cluster, "s").await;
    let input = live::vless(server, "Amsterdam", port, false);
    service.create_inbound(&input, live::now()).await.unwrap();
    let mut nodes = live::join_all(&panel, dir.path(), &[server]).await;
    let node = nodes.remove(0);

    let report = import::xui(store.as_ref(), &db, (false, false), live::now())
        .await
        .unwrap();
    assert_eq!(report.schema, "3.x");
    assert_eq!(report.users_read, 3);
    assert_eq!(report.added, ["alice", "bob", "carol"]);
    let reasons: Vec<String> = report
        .not_carried
        .iter()
        .map(|n| format!("{}: {}", n.what, n.reason))
        .collect();
    assert_eq!(
        reasons,
        [
            "user carol: client carol: renewing every 30 days when it expires is not carried: it expires here as the source set it",
            "admin admin: admins are not carried: this panel has one admin for now; log in with its own password",
        ]
    );

    // Alice, on two inbounds, is counted and limited once and keeps both credentials.
    let users = all_users(&panel).await;
    let a = by_name(&users, "alice");
    assert_eq!(a.used_up + a.used_down, 7 * GIB as u64);
    assert_eq!(a.lifetime_bytes, 7 * GIB as u64);
    assert_eq!(a.traffic_limit, Some(50 * GIB as u64));
    assert_eq!(a.expires_ms, Some(future));
    assert_eq!(a.address_limit, Some(2));
    assert_eq!(a.note, "paid");
    assert_eq!(a.created_ms, CREATED);
    let creds = live::credentials(&panel, a).await;
    assert_eq!(creds.vless_uuid, ALICE_UUID);
    assert_eq!(creds.trojan_password, "alice-old-trojan");
    assert_eq!(by_name(&users, "bob").status, UserStatus::Disabled);
    let carol = by_name(&users, "carol");
    assert_eq!(carol.traffic_limit, Some(GIB as u64));
    assert_eq!(
        live::credentials(&panel, carol).await.trojan_password,
        "carol-pw"
    );

    // sing-box runs alice's old link through the node.
    let target = HttpTarget::start().await.unwrap();
    let user_id = a.id;
    let down = node_down(&node, user_id);
    let (status, _, body) =
        live::get_raw(http, &format!("/sub/{ALICE_SUB}?format=sing-box"), "").await;
    assert!(status.contains("200"), "{status}: {body}");
    singbox_carries(&body, &target, down).await;

    // A second import adds what is new; revoking alice's link here ends the old one.
    let dave = (
        "dave",
        "v3davesub0000001",
        "8f0c7a1e-3b9d-4e2a-8c6f-1d2e3f4a5b6d",
        "dave-pw",
    );
    client(&mut c, dave, (0, 0, 0, true, 0), &[vless], (0, 0)).await;
    service
        .revoke_subscription(user_id, live::now())
        .await
        .unwrap();
    let report = import::xui(store.as_ref(), &db, (false, false), live::now())
        .await
        .unwrap();
    assert_eq!(report.added, ["dave"]);
    assert_eq!(report.updated, ["alice", "bob", "carol"]);
    let (status, _, _) = live::get_raw(http, &format!("/sub/{ALICE_SUB}"), "").await;
    assert!(status.contains("404"), "{status}");
    let (status, _, _) = live::get_raw(http, "/sub/v3davesub0000001?format=links", "").await;
    assert!(status.contains("200"), "{status}");

    c.close().await.unwrap();
    node.shutdown().await;
    panel.shutdown().await;
}
