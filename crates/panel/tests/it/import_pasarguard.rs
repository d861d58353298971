//! Users brought from PasarGuard, whose database is made by PasarGuard itself:
//! 3.1.0's own Alembic migrations, its own `crud` functions (users with every field
//! set: limits, reset strategies, expiry past and future, on hold, disabled,
//! limited, a reset logged, a revoked link) and its own subscription tokens
//! (`import/pasarguard.py`, run with PasarGuard's venv); then, for the device
//! tables, 5.2.1's own migrations and models (`import/pasarguard5.py`).
//!
//! Then `switchyard_panel::import::pasarguard` into a panel with one real node (a
//! VLESS inbound): a dry run keeps nothing; the import matches PasarGuard row for
//! row; each user's **old** link on our panel serves their subscription in the
//! format PasarGuard's path names, which the real sing-box runs and the real Xray,
//! given nothing but the old credentials, carries a download through our node; a
//! revoked or forged link is a 404, and so is one revoked here. A second import
//! after changes in PasarGuard updates, adds and disables exactly what changed.

use crate::import_common::{
    SIZE, admins, admins_carried, all_users, by_name, node_down, old_vless_carries, rows_match,
    singbox_carries,
};
use crate::live;

use std::path::Path;

use serde_json::Value;
use switchyard_panel::import::{self, pasarguard_token};
use switchyard_panel::model::{ResetStrategy, UserStatus};
use switchyard_testkit::HttpTarget;
use switchyard_testkit::pasarguard::{Release, run};

const GIB: u64 = 1 << 30;

/// PasarGuard's own script: `make` or `change`; what PasarGuard says afterwards.
fn pasarguard_script(dir: &Path, phase: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/import/pasarguard.py");
    let out = run(
        dir,
        Release::V3,
        "python",
        &[script.to_str().unwrap(), phase],
    );
    serde_json::from_str(out.lines().last().unwrap()).unwrap()
}

/// A PasarGuard 3.1 database made by PasarGuard, and what it says of its users.
fn pasarguard_source(dir: &Path) -> Value {
    run(dir, Release::V3, "alembic", &["upgrade", "head"]);
    pasarguard_script(dir, "make")
}

/// PasarGuard 5.2.1's own code on the database in `dir`: `migrate` or `devices`.
fn pasarguard5(dir: &Path, phase: &str) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/import/pasarguard5.py");
    run(
        dir,
        Release::V5,
        "python",
        &[script.to_str().unwrap(), phase],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pasarguards_users_arrive_whole_and_their_old_links_run_in_real_clients() {
    let dir = tempfile::tempdir().unwrap();
    let source_dir = dir.path().join("pasarguard");
    std::fs::create_dir_all(&source_dir).unwrap();
    let source = pasarguard_source(&source_dir);
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

    // A dry run says what would happen and keeps nothing.
    let names = ["alice", "bob", "carol", "dave", "erin", "frank"];
    let dry = import::pasarguard(store.as_ref(), &db, (true, false), live::now())
        .await
        .unwrap();
    assert!(dry.dry_run);
    assert_eq!(dry.schema, "af2d644dda44");
    assert_eq!(dry.added, names);
    assert!(all_users(&panel).await.is_empty());
    assert_eq!(store.import_secret(import::PASARGUARD).await.unwrap(), None);
    // PasarGuard's default core config, as its migrations write it.
    let served: Vec<(&str, bool)> = dry
        .inbounds
        .iter()
        .map(|i| (i.tag.as_str(), i.served))
        .collect();
    assert_eq!(served, [("Shadowsocks TCP", false)]);

    let report = import::pasarguard(store.as_ref(), &db, (false, false), live::now())
        .await
        .unwrap();
    assert_eq!(report.added, names);
    assert_eq!(admins(&report), [("owner", true, 4), ("seller", false, 2)]);
    admins_carried(
        store.as_ref(),
        &report,
        ("Owner-PW-1234!x", "Seller-PW-1234!x"),
    )
    .await;
    assert!(
        report.not_carried.iter().any(|n| n.what == "every user"
            && n.reason
                .starts_with("PasarGuard's vmess, shadowsocks, wireguard, hysteria")),
        "{:#?}",
        report.not_carried
    );

    // Row for row, as PasarGuard says.
    let users = all_users(&panel).await;
    assert_eq!(users.len(), 6);
    let p = &source["users"];
    rows_match(&users, p, false);
    for u in &users {
        assert_eq!(
            u.device_limit, None,
            "{}: 3.1 has no device limits",
            u.username
        );
    }
    let alice = by_name(&users, "alice");
    assert_eq!(alice.lifetime_bytes, 10 * GIB + 12_345);
    assert_eq!(alice.reset_strategy, ResetStrategy::MonthFromStart);
    assert_eq!(by_name(&users, "dave").reset_strategy, ResetStrategy::Week);
    assert_eq!(by_name(&users, "carol").on_hold_days, Some(3));
    let creds = live::credentials(&panel, alice).await;
    let settings = &p["alice"]["proxy_settings"];
    assert_eq!(creds.vless_uuid, settings["vless"]["id"].as_str().unwrap());
    assert_eq!(
        creds.trojan_password,
        settings["trojan"]["password"].as_str().unwrap()
    );

    // Old links: the revoked one and forged ones are refused as PasarGuard refuses them.
    let token = |name: &str| source["tokens"][name].as_str().unwrap().to_owned();
    let secret = source["secret"].as_str().unwrap();
    assert_eq!(
        store
            .import_secret(import::PASARGUARD)
            .await
            .unwrap()
            .as_deref(),
        Some(secret)
    );
    for bad in [
        token("alice_revoked"),
        pasarguard_token::issue_short(1, 1_900_000_000, "not the secret"),
        pasarguard_token::issue(1, 1_900_000_000, "not the secret"),
        // Signed, but issued before alice was.
        pasarguard_token::issue(1, 1_000_000_000, secret),
        // Signed, for a user PasarGuard never had.
        pasarguard_token::issue(99, 1_900_000_000, secret),
    ] {
        let (status, _, _) = live::get_raw(http, &format!("/sub/{bad}"), "").await;
        assert!(status.contains("404"), "{bad}: {status}");
    }
    // PasarGuard 5's form of alice's link (its HMAC), signed with the same secret.
    let (status, _, _) = live::get_raw(
        http,
        &format!(
            "/sub/{}/links",
            pasarguard_token::issue(1, 1_900_000_000, secret)
        ),
        "",
    )
    .await;
    assert!(status.contains("200"), "{status}");

    let target = HttpTarget::start().await.unwrap();
    let user_id = alice.id;
    let down = node_down(&node, user_id);

    // sing-box, as an app asks: PasarGuard's path for it.
    let (status, _, body) =
        live::get_raw(http, &format!("/sub/{}/sing_box", token("alice")), "").await;
    assert!(status.contains("200"), "{status}: {body}");
    assert!(body.contains(creds.vless_uuid.as_str()), "{body}");
    singbox_carries(&body, &target, down).await;
    // An app that kept its old config: nothing but the old UUID, through the node.
    old_vless_carries(
        port,
        settings["vless"]["id"].as_str().unwrap(),
        &target,
        down,
    )
    .await;
    for kind in ["clash_meta", "xray", "links_base64"] {
        let (status, _, body) =
            live::get_raw(http, &format!("/sub/{}/{kind}", token("alice")), "").await;
        assert!(status.contains("200"), "{kind}: {status}: {body}");
    }
    // Bob is disabled: his link answers with no servers and says why.
    let (status, headers, _) =
        live::get_raw(http, &format!("/sub/{}?format=sing-box", token("bob")), "").await;
    assert!(status.contains("200"), "{status}");
    assert!(headers.to_lowercase().contains("disabled"), "{headers}");

    // Our node's counts reach the panel before the second import.
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

    // A second import after changes in PasarGuard: exactly those.
    let changed = pasarguard_script(&source_dir, "change");
    let report = import::pasarguard(store.as_ref(), &db, (false, true), live::now())
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
    let grace = changed["tokens"]["grace"].as_str().unwrap();
    let (status, _, _) = live::get_raw(http, &format!("/sub/{grace}?format=links"), "").await;
    assert!(status.contains("200"), "{status}");

    // Revoking alice's link here ends her PasarGuard links too, and an import does
    // not bring them back.
    let link = format!("/sub/{}?format=links", token("alice"));
    assert!(live::get_raw(http, &link, "").await.0.contains("200"));
    service
        .revoke_subscription(user_id, live::now())
        .await
        .unwrap();
    assert!(live::get_raw(http, &link, "").await.0.contains("404"));
    import::pasarguard(store.as_ref(), &db, (false, true), live::now())
        .await
        .unwrap();
    assert!(live::get_raw(http, &link, "").await.0.contains("404"));

    node.shutdown().await;
    panel.shutdown().await;
}

#[tokio::test]
async fn pasarguard_5_device_limits_and_devices_arrive_and_a_re_import_keeps_them_once() {
    let dir = tempfile::tempdir().unwrap();
    let source_dir = dir.path().join("pasarguard");
    std::fs::create_dir_all(&source_dir).unwrap();
    pasarguard_source(&source_dir);
    pasarguard5(&source_dir, "migrate");
    pasarguard5(&source_dir, "devices");
    let db = source_dir.join("db.sqlite3");
    let (panel, _) = live::panel(dir.path()).await;
    let store = panel.state.store().clone();
    for _ in 0..2 {
        let report = import::pasarguard(store.as_ref(), &db, (false, false), live::now())
            .await
            .unwrap();
        assert_eq!(report.schema, "fb32155473c1");
        // 5.x's roles: the owner's is what sudo was; the seller became an operator.
        assert_eq!(admins(&report), [("owner", true, 4), ("seller", false, 2)]);
        admins_carried(
            store.as_ref(),
            &report,
            ("Owner-PW-1234!x", "Seller-PW-1234!x"),
        )
        .await;
        let users = all_users(&panel).await;
        assert_eq!(users.len(), 6);
        let alice = by_name(&users, "alice");
        assert_eq!(alice.device_limit, Some(2));
        assert_eq!(by_name(&users, "bob").device_limit, None);
        let devices = store.devices(alice.id).await.unwrap();
        let seen: Vec<(&str, Option<&str>, Option<&str>)> = devices
            .iter()
            .map(|d| (d.hwid.as_str(), d.os.as_deref(), d.model.as_deref()))
            .collect();
        assert_eq!(
            seen,
            [
                ("a2-laptop", Some("Windows 11"), None),
                ("a1-phone", Some("Android 15"), Some("Pixel 8"))
            ]
        );
        let bob = store.devices(by_name(&users, "bob").id).await.unwrap();
        assert_eq!(bob.len(), 1);
    }
    panel.shutdown().await;
}

#[tokio::test]
async fn an_unknown_pasarguard_schema_is_refused_by_name_and_a_bad_row_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let source_dir = dir.path().join("pasarguard");
    std::fs::create_dir_all(&source_dir).unwrap();
    run(&source_dir, Release::V3, "alembic", &["upgrade", "head"]);
    let db = source_dir.join("db.sqlite3");
    let (panel, _) = live::panel(dir.path()).await;
    let store = panel.state.store().clone();
    let run_import = || import::pasarguard(store.as_ref(), &db, (false, false), live::now());
    let mut c = <sqlx::SqliteConnection as sqlx::Connection>::connect(&format!(
        "sqlite://{}",
        db.display()
    ))
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO users (id, username, status, used_traffic, created_at, \
         data_limit_reset_strategy, proxy_settings) VALUES (7, 'mallory', 'active', 0, \
         '2026-01-02 03:04:05', 'no_reset', '[1, 2]')",
    )
    .execute(&mut c)
    .await
    .unwrap();
    let e = run_import().await.unwrap_err().to_string();
    assert_eq!(e, "users row 7, proxy_settings: not a JSON object");
    sqlx::query("UPDATE users SET proxy_settings = '{}', expire = 'soon'")
        .execute(&mut c)
        .await
        .unwrap();
    let e = run_import().await.unwrap_err().to_string();
    assert_eq!(e, "users row 7, expire: \"soon\" is not a date");
    assert!(all_users(&panel).await.is_empty());
    sqlx::query("UPDATE alembic_version SET version_num = 'ffffffffffff'")
        .execute(&mut c)
        .await
        .unwrap();
    let e = run_import().await.unwrap_err().to_string();
    assert!(
        e.starts_with("PasarGuard schema ffffffffffff is not one this import knows (known: 084b8004104c (1.0.0-1.3.1), "),
        "{e}"
    );
    // Marzban's database is not PasarGuard's.
    sqlx::query("CREATE TABLE proxies (id INTEGER)")
        .execute(&mut c)
        .await
        .unwrap();
    let e = run_import().await.unwrap_err().to_string();
    assert!(
        e.ends_with("(import it as Marzban): not a PasarGuard database"),
        "{e}"
    );
    panel.shutdown().await;
}
