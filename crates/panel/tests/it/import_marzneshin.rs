//! Users brought from Marzneshin 0.7.4, whose database is made by Marzneshin
//! itself: its own Alembic migrations and its own `crud` functions (users with
//! every expiry strategy, limits, reset strategies, usage and a reset, a disabled
//! user, a revoked link, a removed user), and its own key code saying what each
//! user's VLESS UUID and Trojan password are (`import/marzneshin.py`, run with
//! Marzneshin's venv).
//!
//! Then `switchyard_panel::import::marzneshin` into a panel with one real node (a
//! VLESS inbound): the import matches Marzneshin row for row, with the credentials
//! Marzneshin's nodes derive from each key; the user's **old** link
//! (`/sub/NAME/KEY`) serves their subscription, which the real sing-box runs, and
//! the real Xray, given nothing but the derived UUID, carries a download through our
//! node; a revoked key, a wrong name and a forged key are a 404, and so is a link
//! revoked here. A second import after changes in Marzneshin updates, adds and
//! disables exactly what changed.

use crate::import_common::{
    SIZE, admins, admins_carried, all_users, by_name, marzneshin_rows_match, node_down,
    old_vless_carries, singbox_carries,
};
use crate::live;

use std::path::Path;

use serde_json::Value;
use switchyard_panel::import::{self, marzneshin::Auth};
use switchyard_panel::model::{ResetStrategy, UserStatus};
use switchyard_testkit::HttpTarget;
use switchyard_testkit::marzneshin::run;

const GIB: u64 = 1 << 30;

/// Marzneshin's own script: `make` or `change`; what Marzneshin says afterwards.
fn marzneshin_script(dir: &Path, phase: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/import/marzneshin.py");
    let out = run(dir, "python", &[script.to_str().unwrap(), phase]);
    serde_json::from_str(out.lines().last().unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn marzneshins_users_arrive_with_their_keys_credentials_and_old_links() {
    let dir = tempfile::tempdir().unwrap();
    let source_dir = dir.path().join("marzneshin");
    std::fs::create_dir_all(&source_dir).unwrap();
    run(&source_dir, "alembic", &["upgrade", "head"]);
    let source = marzneshin_script(&source_dir, "make");
    let db = source_dir.join("db.sqlite3");

    let (panel, http) = live::panel(dir.path()).await;
    let store = panel.state.store().clone();
    let service = panel.state.service().clone();
    let cluster = store.create_cluster("c", live::now()).await.unwrap().id;
    let server = live::server(&panel, cluster, "s").await;
    let port = switchyard_testkit::free_port().unwrap();
    let input = live::vless(server, "Amsterdam", port, false);
    service.create_inbound(&input, live::now()).await.unwrap();
    let mut nodes = live::join_all(&panel, dir.path(), &[server]).await;
    let node = nodes.remove(0);

    let names = ["alice", "bob", "carol", "dave", "erin", "frank"];
    let dry = import::marzneshin(
        store.as_ref(),
        &db,
        Auth::Xxh128,
        (true, false),
        live::now(),
    )
    .await
    .unwrap();
    assert_eq!(dry.schema, "57eba0a293f2");
    assert_eq!(dry.added, names);
    assert!(all_users(&panel).await.is_empty());

    let report = import::marzneshin(
        store.as_ref(),
        &db,
        Auth::Xxh128,
        (false, false),
        live::now(),
    )
    .await
    .unwrap();
    assert_eq!(report.added, names);
    assert_eq!(admins(&report), [("owner", true, 4), ("seller", false, 2)]);
    admins_carried(store.as_ref(), &report, ("owner-pw-1", "seller-pw-1")).await;
    // Its nodes (the first made by its own migration) and the inbounds one reported,
    // with what serves each here.
    let nodes: Vec<(&str, &str, i64)> = report
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.address.as_str(), n.port))
        .collect();
    assert_eq!(
        nodes,
        [("local", "127.0.0.1", 53042), ("de-1", "127.0.0.1", 62051)]
    );
    let inbounds: Vec<(&str, u64, &str, &str, bool)> = report
        .inbounds
        .iter()
        .map(|i| {
            (
                i.tag.as_str(),
                i.port,
                i.network.as_str(),
                i.security.as_str(),
                i.served,
            )
        })
        .collect();
    assert_eq!(
        inbounds,
        [
            ("VLESS TCP REALITY", 443, "tcp", "reality", true),
            ("VMess WS", 8080, "ws", "none", false)
        ]
    );
    let reasons: Vec<String> = report
        .not_carried
        .iter()
        .map(|n| format!("{}: {}", n.what, n.reason))
        .collect();
    assert!(
        reasons.contains(
            &"1 removed users: Marzneshin keeps removed users without a name: they are not brought"
                .to_owned()
        ),
        "{reasons:#?}"
    );

    // Row for row, as Marzneshin says, with the credentials its nodes derive.
    let users = all_users(&panel).await;
    assert_eq!(users.len(), 6);
    let m = &source["users"];
    marzneshin_rows_match(&panel, &users, m).await;
    let alice = by_name(&users, "alice");
    assert_eq!(alice.lifetime_bytes, 10 * GIB + 12_345);
    assert_eq!(alice.reset_strategy, ResetStrategy::MonthFromStart);
    assert_eq!(by_name(&users, "dave").reset_strategy, ResetStrategy::Week);
    let carol = by_name(&users, "carol");
    assert_eq!(
        (carol.status, carol.on_hold_days),
        (UserStatus::OnHold, Some(3))
    );

    // Old links: `/sub/NAME/KEY`; a revoked key, another's name, a forged key: 404.
    let key = |name: &str| m[name]["key"].as_str().unwrap().to_owned();
    for bad in [
        format!(
            "/sub/alice/{}",
            source["links"]["alice_revoked"].as_str().unwrap()
        ),
        format!("/sub/bob/{}", key("alice")),
        "/sub/alice/0123456789abcdef0123456789abcdef".to_owned(),
        format!("/sub/alice/{}/outline", key("alice")),
    ] {
        let (status, _, _) = live::get_raw(http, &bad, "").await;
        assert!(status.contains("404"), "{bad}: {status}");
    }
    let target = HttpTarget::start().await.unwrap();
    let user_id = alice.id;
    let down = node_down(&node, user_id);
    // sing-box, by its User-Agent on the bare link.
    let (status, _, body) = live::get_raw(
        http,
        &format!("/sub/alice/{}", key("alice")),
        "User-Agent: sing-box 1.14.4\r\n",
    )
    .await;
    assert!(status.contains("200"), "{status}: {body}");
    let uuid = m["alice"]["vless_uuid"].as_str().unwrap();
    assert!(body.contains(uuid), "{body}");
    singbox_carries(&body, &target, down).await;
    // An app that kept its old config: the UUID Marzneshin's node derived.
    old_vless_carries(port, uuid, &target, down).await;
    for kind in [
        "links",
        "base64-links",
        "sing-box",
        "xray",
        "clash",
        "clash-meta",
    ] {
        let path = format!("/sub/alice/{}/{kind}", key("alice"));
        let (status, _, _) = live::get_raw(http, &path, "").await;
        assert!(status.contains("200"), "{path}: {status}");
    }

    live::wait_until("the panel has alice's traffic", 20, || {
        let store = store.clone();
        async move {
            let u = store.user(user_id, live::now()).await.unwrap();
            u.used_up + u.used_down >= 7 * GIB + 12_345 + 2 * SIZE
        }
    })
    .await;
    let ours = {
        let u = store.user(user_id, live::now()).await.unwrap();
        u.used_up + u.used_down - (7 * GIB + 12_345)
    };

    // A second import after changes in Marzneshin: exactly those.
    let changed = marzneshin_script(&source_dir, "change");
    let report = import::marzneshin(
        store.as_ref(),
        &db,
        Auth::Xxh128,
        (false, true),
        live::now(),
    )
    .await
    .unwrap();
    assert_eq!(report.added, ["grace"]);
    assert_eq!(report.updated, ["alice", "bob", "carol", "dave", "erin"]);
    assert_eq!(report.disabled, ["frank"]);
    let users = all_users(&panel).await;
    assert_eq!(users.len(), 7, "nobody twice");
    let alice = by_name(&users, "alice");
    assert_eq!(alice.traffic_limit, Some(80 * GIB));
    assert_eq!(alice.note, "upgraded");
    assert_eq!(
        alice.used_up + alice.used_down,
        7 * GIB + 12_345 + 1000 + ours
    );
    assert_eq!(by_name(&users, "frank").status, UserStatus::Disabled);
    let grace = changed["users"]["grace"]["key"].as_str().unwrap();
    let (status, _, _) = live::get_raw(http, &format!("/sub/grace/{grace}/links"), "").await;
    assert!(status.contains("200"), "{status}");

    // Revoking alice's link here ends her Marzneshin link too, for good.
    let link = format!("/sub/alice/{}/links", key("alice"));
    assert!(live::get_raw(http, &link, "").await.0.contains("200"));
    service
        .revoke_subscription(user_id, live::now())
        .await
        .unwrap();
    assert!(live::get_raw(http, &link, "").await.0.contains("404"));
    import::marzneshin(
        store.as_ref(),
        &db,
        Auth::Xxh128,
        (false, true),
        live::now(),
    )
    .await
    .unwrap();
    assert!(live::get_raw(http, &link, "").await.0.contains("404"));

    node.shutdown().await;
    panel.shutdown().await;
}

#[tokio::test]
async fn an_unknown_marzneshin_schema_and_a_bad_key_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let source_dir = dir.path().join("marzneshin");
    std::fs::create_dir_all(&source_dir).unwrap();
    run(&source_dir, "alembic", &["upgrade", "head"]);
    let db = source_dir.join("db.sqlite3");
    let (panel, _) = live::panel(dir.path()).await;
    let store = panel.state.store().clone();
    let run_import = || {
        import::marzneshin(
            store.as_ref(),
            &db,
            Auth::Xxh128,
            (false, false),
            live::now(),
        )
    };
    let mut c = <sqlx::SqliteConnection as sqlx::Connection>::connect(&format!(
        "sqlite://{}",
        db.display()
    ))
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO users (id, username, key, activated, enabled, removed, used_traffic, \
         lifetime_used_traffic, data_limit_reset_strategy, ip_limit, expire_strategy, \
         created_at) VALUES (7, 'mallory', 'not hex', 1, 1, 0, 0, 0, 'no_reset', -1, 'NEVER', \
         '2026-01-02 03:04:05')",
    )
    .execute(&mut c)
    .await
    .unwrap();
    let e = run_import().await.unwrap_err().to_string();
    assert_eq!(
        e,
        "users row 7, key: not a key of hex digits (Marzneshin's are 32)"
    );
    sqlx::query("UPDATE users SET key = 'abcd', used_traffic = -1")
        .execute(&mut c)
        .await
        .unwrap();
    let e = run_import().await.unwrap_err().to_string();
    assert_eq!(e, "users row 7, used_traffic: -1 is negative");
    assert!(all_users(&panel).await.is_empty());
    sqlx::query("UPDATE alembic_version SET version_num = '20faa9f18c0a'")
        .execute(&mut c)
        .await
        .unwrap();
    let e = run_import().await.unwrap_err().to_string();
    assert!(
        e.starts_with("Marzneshin schema 20faa9f18c0a is not one this import knows (known: b0357faf51c8 (0.4.0), "),
        "{e}"
    );
    panel.shutdown().await;
}
