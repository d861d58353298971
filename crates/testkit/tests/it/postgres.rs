//! The private PostgreSQL cluster: it starts, answers on its URL, gives isolated
//! databases, and leaves nothing behind when dropped.

use std::net::TcpStream;

use switchyard_testkit::Postgres;
use switchyard_testkit::postgres::{DATABASE, MAX_CONNECTIONS, USER};

#[test]
fn a_cluster_starts_serves_fresh_databases_and_is_gone_after_drop() {
    let pg = Postgres::start().expect("starting a private PostgreSQL");
    let port = pg.port();
    assert_eq!(
        pg.url(),
        format!("postgres://{USER}@127.0.0.1:{port}/{DATABASE}")
    );

    // The default database exists and the settings took.
    let row = pg
        .psql(
            DATABASE,
            "SELECT current_database(), current_user, current_setting('max_connections'), \
             current_setting('fsync')",
        )
        .unwrap();
    assert_eq!(
        row.trim(),
        format!("{DATABASE}|{USER}|{MAX_CONNECTIONS}|off")
    );

    // Fresh databases are separate: a table in one is not in the other.
    let a = pg.fresh_database("story_a").unwrap();
    let b = pg.fresh_database("story_b").unwrap();
    assert_eq!(a, format!("postgres://{USER}@127.0.0.1:{port}/story_a"));
    assert_eq!(b, pg.database_url("story_b"));
    pg.psql(
        "story_a",
        "CREATE TABLE users (name text); INSERT INTO users VALUES ('ada')",
    )
    .unwrap();
    assert_eq!(
        pg.psql("story_a", "SELECT name FROM users").unwrap().trim(),
        "ada"
    );
    let err = pg
        .psql("story_b", "SELECT name FROM users")
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not exist"), "{err}");

    // Names are checked, and a database is fresh only once.
    assert!(pg.fresh_database("bad-name; DROP").is_err());
    let err = format!("{:#}", pg.fresh_database("story_a").unwrap_err());
    assert!(err.contains("already exists"), "{err}");

    // Dropping stops the server and removes its directory.
    let dir = pg.dir().to_path_buf();
    assert!(dir.join("data/PG_VERSION").is_file());
    drop(pg);
    assert!(!dir.exists(), "{} is left behind", dir.display());
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "something still listens on {port}"
    );
}

#[test]
fn two_clusters_run_side_by_side() {
    let one = Postgres::start().unwrap();
    let two = Postgres::start().unwrap();
    assert_ne!(one.port(), two.port());
    one.psql(DATABASE, "CREATE TABLE only_in_one (x int)")
        .unwrap();
    let tables = two
        .psql(
            DATABASE,
            "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_one'",
        )
        .unwrap();
    assert_eq!(tables.trim(), "0");
}
