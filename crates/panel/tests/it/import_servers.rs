//! PasarGuard and Marzneshin on a database server. PasarGuard 3.1.0's own Alembic migrations and
//! `crud` (the script of the SQLite test, `import/pasarguard.py`) make its database in
//! a private PostgreSQL cluster (through asyncpg) and in a private MariaDB server
//! (through asyncmy), the drivers its lock file pins; the import reads each by URL
//! in one read-only transaction and matches PasarGuard row for row, as from SQLite; a
//! second import updates, never duplicates; a database that is not PasarGuard's is
//! refused naming the database without its password. Marzneshin 0.7.4's own
//! migrations and `crud` (`import/marzneshin.py`) likewise, through psycopg and
//! PyMySQL (what its requirements pin): its users arrive with the credentials its
//! nodes derive from their keys, its nodes and admins listed.

use crate::import_common::{admins, all_users, by_name, marzneshin_rows_match, rows_match};
use crate::live;

use std::path::Path;

use serde_json::Value;
use switchyard_panel::import::{self, marzneshin::Auth};
use switchyard_testkit::mariadb::MariaDb;
use switchyard_testkit::pasarguard::run_on;

/// PasarGuard's migrations and its own script's `make` on the database at
/// `sqlalchemy_url`; what PasarGuard says of its users.
fn make(dir: &Path, sqlalchemy_url: &str) -> Value {
    run_on(dir, sqlalchemy_url, "alembic", &["upgrade", "head"]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/import/pasarguard.py");
    let out = run_on(
        dir,
        sqlalchemy_url,
        "python",
        &[script.to_str().unwrap(), "make"],
    );
    serde_json::from_str(out.lines().last().unwrap()).unwrap()
}

/// Imports PasarGuard's database at `url` into a fresh panel and checks it against
/// what PasarGuard said.
async fn imports_whole(url: &str, source: &Value) {
    let dir = tempfile::tempdir().unwrap();
    let (panel, _http) = live::panel(dir.path()).await;
    let store = panel.state.store().clone();
    let names = ["alice", "bob", "carol", "dave", "erin", "frank"];
    let dry = import::pasarguard_url(store.as_ref(), url, (true, false), live::now())
        .await
        .unwrap();
    assert_eq!((dry.schema.as_str(), dry.dry_run), ("af2d644dda44", true));
    assert_eq!(dry.added, names);
    assert!(all_users(&panel).await.is_empty());
    let report = import::pasarguard_url(store.as_ref(), url, (false, false), live::now())
        .await
        .unwrap();
    assert_eq!(report.added, names);
    assert_eq!(admins(&report), [("owner", true, 4), ("seller", false, 2)]);
    let users = all_users(&panel).await;
    assert_eq!(users.len(), 6);
    rows_match(&users, &source["users"], false);
    let creds = live::credentials(&panel, by_name(&users, "alice")).await;
    let settings = &source["users"]["alice"]["proxy_settings"];
    assert_eq!(creds.vless_uuid, settings["vless"]["id"].as_str().unwrap());
    assert_eq!(
        creds.trojan_password,
        settings["trojan"]["password"].as_str().unwrap()
    );
    let again = import::pasarguard_url(store.as_ref(), url, (false, false), live::now())
        .await
        .unwrap();
    assert_eq!((again.added.len(), again.updated.len()), (0, 6));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pasarguard_on_postgresql_arrives_as_from_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    let url = pg.fresh_database("pasarguard").unwrap();
    let sqlalchemy = url.replacen("postgres://", "postgresql+asyncpg://", 1);
    let source = make(dir.path(), &sqlalchemy);
    imports_whole(&url, &source).await;

    // Another database of the cluster is not PasarGuard's: said without the password.
    let other = pg.fresh_database("empty").unwrap();
    let with_password = other.replacen('@', ":s3cret@", 1);
    assert!(with_password.contains(":s3cret@"), "{with_password}");
    let e = import::pasarguard::read_url(&with_password)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.ends_with("no alembic_version table: not a PasarGuard database"),
        "{e}"
    );
    assert!(!e.contains("s3cret"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pasarguard_on_mariadb_arrives_as_from_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let mysql = MariaDb::start("pasarguard").expect("a private MariaDB server");
    let sqlalchemy = mysql
        .url("pasarguard")
        .replacen("mysql://", "mysql+asyncmy://", 1);
    let source = make(dir.path(), &sqlalchemy);
    imports_whole(&mysql.url("pasarguard"), &source).await;
}

/// Marzneshin's migrations and its own script's `make` on the database at
/// `sqlalchemy_url`, then the import from `url`, checked against what it said.
async fn marzneshin_imports_whole(sqlalchemy_url: &str, url: &str) {
    let dir = tempfile::tempdir().unwrap();
    use switchyard_testkit::marzneshin::run_on;
    run_on(dir.path(), sqlalchemy_url, "alembic", &["upgrade", "head"]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/import/marzneshin.py");
    let out = run_on(
        dir.path(),
        sqlalchemy_url,
        "python",
        &[script.to_str().unwrap(), "make"],
    );
    let source: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    let (panel, _http) = live::panel(dir.path()).await;
    let store = panel.state.store().clone();
    let flags = (false, false);
    let report = import::marzneshin_url(store.as_ref(), url, Auth::Xxh128, flags, live::now())
        .await
        .unwrap();
    assert_eq!(report.schema, "57eba0a293f2");
    assert_eq!(
        report.added,
        ["alice", "bob", "carol", "dave", "erin", "frank"]
    );
    assert_eq!(admins(&report), [("owner", true, 4), ("seller", false, 2)]);
    let nodes: Vec<(&str, i64)> = report
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.port))
        .collect();
    assert_eq!(nodes, [("local", 53042), ("de-1", 62051)]);
    assert_eq!(report.inbounds.len(), 2);
    let users = all_users(&panel).await;
    assert_eq!(users.len(), 6);
    marzneshin_rows_match(&panel, &users, &source["users"]).await;
    let again = import::marzneshin_url(store.as_ref(), url, Auth::Xxh128, flags, live::now())
        .await
        .unwrap();
    assert_eq!((again.added.len(), again.updated.len()), (0, 6));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn marzneshin_on_postgresql_and_mariadb_arrives_as_from_sqlite() {
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    let url = pg.fresh_database("marzneshin").unwrap();
    let sqlalchemy = url.replacen("postgres://", "postgresql+psycopg://", 1);
    marzneshin_imports_whole(&sqlalchemy, &url).await;
    let mysql = MariaDb::start("marzneshin").expect("a private MariaDB server");
    marzneshin_imports_whole(
        &mysql.sqlalchemy_url("marzneshin"),
        &mysql.url("marzneshin"),
    )
    .await;
}
