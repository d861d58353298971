//! `switchyard panel import marzban`, run as the built binary on a database made by
//! Marzban 0.8.4's own migrations and code (`SWITCHYARD_MARZBAN`, from `cargo xtask
//! peers`; the script is the panel's import test's): `--server` naming no server here
//! is refused before anything is imported, the dry run's JSON report says what would
//! be added and keeps nothing, the import adds it, a second says it updates and,
//! with `--server`, makes Marzban's inbound on that server. `… import pasarguard` likewise, on a database made by PasarGuard 3.1.0's
//! own migrations and code (`SWITCHYARD_PASARGUARD`), and `… import marzneshin` on
//! one made by Marzneshin 0.7.4's (`SWITCHYARD_MARZNESHIN`), with and without
//! `--auth-generation-algorithm plain`. `… import 3x-ui` likewise, on a 3x-ui 2.8 database made with the panel's
//! import test's schema, and `… import remnawave` on a Remnawave 3.3 database (the
//! panel's import test's schema, in a private PostgreSQL cluster) named by
//! `REMNAWAVE_DATABASE_URL`. `… import marzban` without `--db` reads Marzban's
//! MySQL database named by `MARZBAN_DATABASE_URL` (made by Marzban's own migrations
//! and code in a private MariaDB server); `… import pasarguard` without `--db` reads
//! the PostgreSQL database named by `PASARGUARD_DATABASE_URL` (PasarGuard's own
//! migrations).

use std::path::Path;
use std::process::Command;

fn marzban(dir: &Path, program: &str, args: &[&str]) {
    switchyard_testkit::marzban::run(dir, program, args);
}

fn import(data: &Path, db: &Path, extra: &[&str]) -> String {
    import_from("marzban", data, db, extra)
}

fn import_from(source: &str, data: &Path, db: &Path, extra: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["panel", "--data"])
        .arg(data)
        .args(["import", source, "--db"])
        .arg(db)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `switchyard panel import SOURCE EXTRA…` with the database's URL (or none) in the
/// environment variable the command reads it from.
fn import_by_url(
    data: &Path,
    source: &str,
    (var, url): (&str, Option<&str>),
    extra: &[&str],
) -> std::process::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    c.args(["panel", "--data"])
        .arg(data)
        .args(["import", source])
        .args(extra)
        .env_remove(var);
    if let Some(url) = url {
        c.env(var, url);
    }
    c.output().unwrap()
}

#[test]
fn the_import_command_reports_a_dry_run_then_imports_then_updates() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("marzban");
    std::fs::create_dir_all(&source).unwrap();
    std::fs::write(
        source.join("xray_config.json"),
        r#"{"inbounds": [{"tag": "VLESS TCP", "listen": "127.0.0.1", "port": 21001,
            "protocol": "vless", "settings": {"clients": [], "decryption": "none"}}],
            "outbounds": [{"protocol": "freedom", "tag": "DIRECT"}]}"#,
    )
    .unwrap();
    marzban(&source, "alembic", &["upgrade", "head"]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../panel/tests/it/import/marzban.py");
    marzban(&source, "python", &[script.to_str().unwrap(), "make"]);
    let db = source.join("db.sqlite3");
    let data = dir.path().join("panel");
    // Inbounds to be made on a server this panel does not have: refused first.
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["panel", "--data"])
        .arg(&data)
        .args(["import", "marzban", "--server", "nowhere", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no server named \"nowhere\" here"),
        "{stderr}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&import(&data, &db, &["--dry-run", "--json"])).unwrap();
    assert_eq!(report["dry_run"], true);
    assert_eq!(report["added"].as_array().unwrap().len(), 6, "{report}");
    let text = import(&data, &db, &[]);
    assert!(
        text.contains("users added: 6, updated: 0, disabled: 0"),
        "{text}"
    );
    // The second import makes Marzban's inbound on a server of this panel.
    server_named(&data, "fra");
    let xray = source.join("xray_config.json");
    let out = import(
        &data,
        &db,
        &["--server", "fra", "--xray-config", xray.to_str().unwrap()],
    );
    assert!(
        out.contains("users added: 0, updated: 6, disabled: 0"),
        "{out}"
    );
    assert!(
        out.contains(
            "inbound \"VLESS TCP\": vless over tcp (none), port 21001: made here as inbound "
        ),
        "{out}"
    );
}

/// Adds a server named `name` to the panel whose data directory is `data`, as its
/// API would.
fn server_named(data: &Path, name: &str) {
    use switchyard_panel::config::PanelConfig;
    use switchyard_panel::store::{Changes, ServerInput, SqlStore};
    let config = PanelConfig {
        data_dir: data.to_owned(),
        ..PanelConfig::default()
    };
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let store = SqlStore::open(&config.database(), Changes::default())
                .await
                .unwrap();
            let store: std::sync::Arc<dyn switchyard_panel::store::Store> =
                std::sync::Arc::new(store);
            let service = switchyard_panel::service::Service::new(store.clone());
            let cluster = store.create_cluster("c", 0).await.unwrap();
            let input = ServerInput {
                cluster_id: cluster.id,
                name: name.into(),
                address: "127.0.0.1".into(),
                allow_private_destinations: false,
            };
            service.create_server(&input, 0).await.unwrap();
        });
}

#[test]
fn the_import_command_takes_a_pasarguard_database() {
    use switchyard_testkit::pasarguard::{Release, run};
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("pasarguard");
    std::fs::create_dir_all(&source).unwrap();
    run(&source, Release::V3, "alembic", &["upgrade", "head"]);
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../panel/tests/it/import/pasarguard.py");
    run(
        &source,
        Release::V3,
        "python",
        &[script.to_str().unwrap(), "make"],
    );
    let db = source.join("db.sqlite3");
    let data = dir.path().join("panel");
    let report: serde_json::Value = serde_json::from_str(&import_from(
        "pasarguard",
        &data,
        &db,
        &["--dry-run", "--json"],
    ))
    .unwrap();
    assert_eq!(report["source"], "pasarguard");
    assert_eq!(report["schema"], "af2d644dda44");
    assert_eq!(report["added"].as_array().unwrap().len(), 6, "{report}");
    let text = import_from("pasarguard", &data, &db, &[]);
    assert!(
        text.starts_with("pasarguard (schema af2d644dda44): 6 users read\nusers added: 6,"),
        "{text}"
    );
    let text = import_from("pasarguard", &data, &db, &[]);
    assert!(text.contains("updated: 6,"), "{text}");
}

#[test]
fn the_import_command_takes_a_marzneshin_database_and_its_key_algorithm() {
    use switchyard_testkit::marzneshin::run;
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("marzneshin");
    std::fs::create_dir_all(&source).unwrap();
    run(&source, "alembic", &["upgrade", "head"]);
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../panel/tests/it/import/marzneshin.py");
    run(&source, "python", &[script.to_str().unwrap(), "make"]);
    let db = source.join("db.sqlite3");
    let data = dir.path().join("panel");
    let report: serde_json::Value = serde_json::from_str(&import_from(
        "marzneshin",
        &data,
        &db,
        &["--dry-run", "--json"],
    ))
    .unwrap();
    assert_eq!(report["source"], "marzneshin");
    assert_eq!(report["added"].as_array().unwrap().len(), 6, "{report}");
    // Marzneshin's keys are 32 hex digits: `plain` takes them as they are.
    let plain = import_from(
        "marzneshin",
        &data,
        &db,
        &["--auth-generation-algorithm", "plain", "--dry-run"],
    );
    assert!(plain.contains("users would be added: 6,"), "{plain}");
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["panel", "--data"])
        .arg(&data)
        .args([
            "import",
            "marzneshin",
            "--auth-generation-algorithm",
            "md5",
            "--db",
        ])
        .arg(&db)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text = import_from("marzneshin", &data, &db, &[]);
    assert!(
        text.contains("users added: 6, updated: 0, disabled: 0"),
        "{text}"
    );
}

#[test]
fn the_import_command_takes_a_3x_ui_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x-ui.db");
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("../panel/tests/it/import/xui_2.8.sql");
    let fill = r#"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.executescript(open(sys.argv[2]).read())
c.execute("INSERT INTO inbounds (enable, port, protocol, settings, stream_settings, tag) "
          "VALUES (1, 443, 'vless', ?, '{\"network\": \"tcp\"}', 'inbound-443')",
          ('{"clients": [{"id": "5f0c7a1e-3b9d-4e2a-8c6f-1d2e3f4a5b6c", "email": "alice", '
           '"subId": "k3j2h4g5f6d7s8a9", "enable": true, "totalGB": 0, "expiryTime": 0}]}',))
c.execute("INSERT INTO client_traffics (inbound_id, enable, email, up, down, all_time, "
          "expiry_time, total) VALUES (1, 1, 'alice', 5, 6, 11, 0, 0)")
c.commit()
"#;
    let out = Command::new("python3")
        .args(["-c", fill])
        .arg(&db)
        .arg(&schema)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let data = dir.path().join("panel");
    let report: serde_json::Value =
        serde_json::from_str(&import_from("3x-ui", &data, &db, &["--dry-run", "--json"])).unwrap();
    assert_eq!(report["source"], "3x-ui");
    assert_eq!(report["added"], serde_json::json!(["alice"]), "{report}");
    let text = import_from("3x-ui", &data, &db, &[]);
    assert!(
        text.starts_with("3x-ui (schema 2.x): 1 users read"),
        "{text}"
    );
    assert!(
        text.contains("users added: 1, updated: 0, disabled: 0"),
        "{text}"
    );
}

#[test]
fn the_import_command_reads_remnawave_by_the_url_in_its_environment() {
    let dir = tempfile::tempdir().unwrap();
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    let url = pg.fresh_database("remnawave").unwrap();
    let schema = include_str!("../../../panel/tests/it/import/remnawave_3.3.sql");
    pg.psql("remnawave", schema).unwrap();
    pg.psql(
        "remnawave",
        "INSERT INTO users (short_uuid, username, expire_at, trojan_password, vless_uuid, \
         ss_password) VALUES ('annaShort0000001', 'anna', TIMESTAMP '2030-01-01', 't-pw', \
         'cf0c7a1e-3b9d-4e2a-8c6f-1d2e3f4a5b6c', 'A1b2C3d4E5f6G7h8J9k0L1m2N3p4Q5r6')",
    )
    .unwrap();
    let data = dir.path().join("panel");
    let run = |url: Option<&str>, extra: &[&str]| {
        import_by_url(&data, "remnawave", ("REMNAWAVE_DATABASE_URL", url), extra)
    };
    let out = run(None, &["--dry-run"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("set REMNAWAVE_DATABASE_URL"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(Some(&url), &["--dry-run", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["source"], "remnawave");
    assert_eq!(report["added"], serde_json::json!(["anna"]), "{report}");
    let out = run(Some(&url), &[]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with(
            "remnawave (schema 20260815170000_add_shared_lists (Remnawave 3.0–3.3)): 1 users read"
        ),
        "{text}"
    );
    assert!(
        text.contains("users added: 1, updated: 0, disabled: 0"),
        "{text}"
    );
}

#[test]
fn the_import_command_reads_marzban_on_mysql_by_the_url_in_its_environment() {
    use switchyard_testkit::mariadb::MariaDb;
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("marzban");
    std::fs::create_dir_all(&source).unwrap();
    std::fs::write(
        source.join("xray_config.json"),
        r#"{"inbounds": [{"tag": "VLESS TCP", "listen": "127.0.0.1", "port": 21001,
            "protocol": "vless", "settings": {"clients": [], "decryption": "none"}}],
            "outbounds": [{"protocol": "freedom", "tag": "DIRECT"}]}"#,
    )
    .unwrap();
    let mysql = MariaDb::start("marzban").expect("a private MariaDB server");
    let run = |program: &str, args: &[&str]| {
        switchyard_testkit::marzban::run_on(
            &source,
            &mysql.sqlalchemy_url("marzban"),
            program,
            args,
        );
    };
    run("alembic", &["upgrade", "head"]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../panel/tests/it/import/marzban.py");
    run("python", &[script.to_str().unwrap(), "make"]);
    let data = dir.path().join("panel");
    let import = |url: Option<&str>, extra: &[&str]| {
        import_by_url(&data, "marzban", ("MARZBAN_DATABASE_URL", url), extra)
    };
    // Neither --db nor the URL: the error says what to give.
    let out = import(None, &["--dry-run"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("set MARZBAN_DATABASE_URL"), "{stderr}");
    assert!(stderr.contains("or give --db FILE"), "{stderr}");
    let url = mysql.url("marzban");
    let out = import(Some(&url), &["--dry-run", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["source"], "marzban");
    assert_eq!(report["added"].as_array().unwrap().len(), 6, "{report}");
    let text = String::from_utf8(import(Some(&url), &[]).stdout).unwrap();
    assert!(
        text.contains("users added: 6, updated: 0, disabled: 0"),
        "{text}"
    );
    let text = String::from_utf8(import(Some(&url), &[]).stdout).unwrap();
    assert!(
        text.contains("users added: 0, updated: 6, disabled: 0"),
        "{text}"
    );
}

#[test]
fn the_import_command_reads_pasarguard_on_a_server_by_the_url_in_its_environment() {
    let dir = tempfile::tempdir().unwrap();
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    let url = pg.fresh_database("pasarguard").unwrap();
    switchyard_testkit::pasarguard::run_on(
        dir.path(),
        &url.replacen("postgres://", "postgresql+asyncpg://", 1),
        "alembic",
        &["upgrade", "head"],
    );
    let data = dir.path().join("panel");
    let var = "PASARGUARD_DATABASE_URL";
    let import =
        |url: Option<&str>, extra: &[&str]| import_by_url(&data, "pasarguard", (var, url), extra);
    let out = import(None, &["--dry-run"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("set PASARGUARD_DATABASE_URL"), "{stderr}");
    let out = import(Some(&url), &["--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["source"], "pasarguard");
    assert_eq!(report["schema"], "af2d644dda44");
    assert_eq!(report["users_read"], 0);
}
