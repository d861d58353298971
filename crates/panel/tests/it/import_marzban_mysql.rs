//! Marzban on MySQL: a private MariaDB server (Debian's, started by testkit with
//! Marzban's own `utf8mb4`), Marzban 0.8.4's own Alembic migrations and `crud`
//! functions writing the same users as on SQLite (`import/marzban.py`), then
//! `switchyard_panel::import::marzban_url` reading them in one read-only
//! transaction: row for row as Marzban says, the old links answering (a forged or
//! too early one not), a second import after changes syncing exactly those, and a wrong password
//! or a database that is not Marzban's refused naming the database without the
//! password.

use crate::import_common::{admins, admins_carried, all_users, by_name, rows_match};
use crate::live;

use std::path::Path;

use serde_json::Value;
use switchyard_panel::import;
use switchyard_testkit::mariadb::MariaDb;
use switchyard_testkit::marzban::run_on;

const GIB: u64 = 1 << 30;

/// Marzban's own script on the MySQL database: what Marzban says afterwards.
fn marzban_script(dir: &Path, url: &str, phase: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/import/marzban.py");
    let out = run_on(dir, url, "python", &[script.to_str().unwrap(), phase]);
    serde_json::from_str(out.lines().last().unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn marzbans_mysql_database_arrives_as_its_sqlite_one_does() {
    let dir = tempfile::tempdir().unwrap();
    let mysql = MariaDb::start("marzban").unwrap();
    let source_dir = dir.path().join("marzban");
    std::fs::create_dir_all(&source_dir).unwrap();
    std::fs::write(
        source_dir.join("xray_config.json"),
        r#"{"inbounds": [{"tag": "VLESS TCP", "listen": "127.0.0.1", "port": 21001,
            "protocol": "vless", "settings": {"clients": [], "decryption": "none"}}],
            "outbounds": [{"protocol": "freedom", "tag": "DIRECT"}]}"#,
    )
    .unwrap();
    let pyurl = mysql.sqlalchemy_url("marzban");
    run_on(&source_dir, &pyurl, "alembic", &["upgrade", "head"]);
    let source = marzban_script(&source_dir, &pyurl, "make");
    let url = mysql.url("marzban");

    let (panel, http) = live::panel(dir.path()).await;
    let store = panel.state.store().clone();
    let names = ["alice", "bob", "carol", "dave", "erin", "frank"];
    let dry = import::marzban_url(store.as_ref(), &url, None, (true, false), live::now())
        .await
        .unwrap();
    assert_eq!((dry.schema.as_str(), dry.dry_run), ("2b231de97dc3", true));
    assert_eq!(dry.added, names);
    assert!(all_users(&panel).await.is_empty());
    let report = import::marzban_url(store.as_ref(), &url, None, (false, false), live::now())
        .await
        .unwrap();
    assert_eq!(report.added, names);
    assert_eq!(admins(&report), [("owner", true, 4), ("seller", false, 2)]);
    admins_carried(store.as_ref(), &report, ("owner-pw-1", "seller-pw-1")).await;

    let users = all_users(&panel).await;
    let m = &source["users"];
    rows_match(&users, m, true);
    let alice = by_name(&users, "alice");
    assert_eq!(alice.lifetime_bytes, 10 * GIB + 12_345);
    let creds = live::credentials(&panel, alice).await;
    assert_eq!(
        creds.vless_uuid,
        m["alice"]["proxies"]["vless"]["id"].as_str().unwrap()
    );

    // The old links, checked with the secret read from MySQL.
    let token = |name: &str| source["tokens"][name].as_str().unwrap().to_owned();
    let (status, _, body) =
        live::get_raw(http, &format!("/sub/{}?format=links", token("alice")), "").await;
    assert!(status.contains("200"), "{status}: {body}");
    // MySQL keeps whole seconds, so whether the link issued in the second of the
    // revocation still answers is Marzban's rule on those seconds (as Marzban does);
    // a link from before alice was created, or signed with another secret, never.
    let secret = source["secret"].as_str().unwrap();
    for bad in [
        import::marzban_token::issue("alice", 1_000_000_000, secret),
        import::marzban_token::issue("alice", 1_900_000_000, "not the secret"),
    ] {
        let (status, _, _) = live::get_raw(http, &format!("/sub/{bad}"), "").await;
        assert!(status.contains("404"), "{bad}: {status}");
    }

    // A second import after changes in Marzban: exactly those.
    let changed = marzban_script(&source_dir, &pyurl, "change");
    let report = import::marzban_url(store.as_ref(), &url, None, (false, true), live::now())
        .await
        .unwrap();
    assert_eq!(report.added, ["grace"]);
    assert_eq!(report.updated, ["alice", "bob", "carol", "dave", "erin"]);
    assert_eq!(report.disabled, ["frank"]);
    let alice = by_name(&all_users(&panel).await, "alice").clone();
    assert_eq!(
        (alice.traffic_limit, alice.note.as_str()),
        (Some(80 * GIB), "upgraded")
    );
    let grace = changed["tokens"]["grace"].as_str().unwrap();
    let (status, _, _) = live::get_raw(http, &format!("/sub/{grace}?format=links"), "").await;
    assert!(status.contains("200"), "{status}");

    // A wrong password and a database that is not Marzban's, named without the password.
    let port = url.rsplit_once(':').unwrap().1.split('/').next().unwrap();
    let wrong = format!("mysql://root:secret-pw@127.0.0.1:{port}/marzban");
    let e = import::marzban_url(store.as_ref(), &wrong, None, (true, false), live::now())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!("mysql://127.0.0.1:{port}/marzban: ")),
        "{e}"
    );
    assert!(!e.contains("secret-pw"), "{e}");
    let other = format!("mysql://root@127.0.0.1:{port}/mysql");
    let e = import::marzban_url(store.as_ref(), &other, None, (true, false), live::now())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no alembic_version table: not a Marzban database"),
        "{e}"
    );
    drop(mysql);
    panel.shutdown().await;
}
