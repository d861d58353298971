//! The schema holds its types and never gives an id twice (SQLite and PostgreSQL),
//! and the SQLite file is private.

use std::os::unix::fs::PermissionsExt;

use switchyard_panel::model::Credentials;
use switchyard_panel::store::{Changes, ServerStore, SqlStore, UserStore};

use crate::live::{self, now};

fn creds(n: u8) -> Credentials {
    Credentials {
        vless_uuid: format!("00000000-0000-4000-8000-0000000000{n:02}"),
        trojan_password: format!("trojan-{n}"),
        ss_seed: format!("seed-{n}"),
    }
}

/// The newest cluster and user are deleted, then new ones made: their ids are new.
async fn ids_are_never_reused(store: SqlStore) {
    store.create_cluster("first", now()).await.unwrap();
    let last = store.create_cluster("second", now()).await.unwrap();
    store.delete_cluster(last.id).await.unwrap();
    let next = store.create_cluster("third", now()).await.unwrap();
    assert!(next.id > last.id, "cluster {} after {}", next.id, last.id);

    let a = store
        .create_user(&live::user("a"), &creds(1), "tok-a", now())
        .await
        .unwrap();
    store.delete_user(a.id).await.unwrap();
    let b = store
        .create_user(&live::user("b"), &creds(2), "tok-b", now())
        .await
        .unwrap();
    assert!(b.id > a.id, "user {} after {}", b.id, a.id);
}

#[tokio::test]
async fn ids_are_never_reused_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqlStore::open_sqlite(&dir.path().join("panel.db"), Changes::default())
        .await
        .unwrap();
    ids_are_never_reused(store.clone()).await;
    // And after a restart (SQLite keeps the highest id given in sqlite_sequence).
    drop(store);
    let again = SqlStore::open_sqlite(&dir.path().join("panel.db"), Changes::default())
        .await
        .unwrap();
    let c = again
        .create_user(&live::user("c"), &creds(3), "tok-c", now())
        .await
        .unwrap();
    assert_eq!(c.id, 3);
}

#[tokio::test]
async fn ids_are_never_reused_on_postgres() {
    let pg = switchyard_testkit::Postgres::start().expect("a private PostgreSQL cluster");
    let url = pg.fresh_database("ids").unwrap();
    let store = SqlStore::open(&url, Changes::default()).await.unwrap();
    ids_are_never_reused(store).await;
    // An id of one's own choosing is refused: ids come from the sequence only.
    let raw = sqlx::PgPool::connect(&url).await.unwrap();
    let chosen = sqlx::query("INSERT INTO clusters (id, name, created_ms) VALUES (1000, 'x', 1)")
        .execute(&raw)
        .await;
    assert!(chosen.is_err(), "an explicit id is refused");
    raw.close().await;
    drop(pg);
}

#[tokio::test]
async fn sqlite_refuses_a_value_of_the_wrong_type_and_keeps_its_file_private() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("panel.db");
    let store = SqlStore::open_sqlite(&db, Changes::default())
        .await
        .unwrap();
    let u = store
        .create_user(&live::user("a"), &creds(1), "tok-a", now())
        .await
        .unwrap();
    let raw = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.display()))
        .await
        .unwrap();
    for (q, what) in [
        ("UPDATE users SET used_up = 1.5 WHERE id = $1", "a REAL"),
        ("UPDATE users SET used_up = 'lots' WHERE id = $1", "a TEXT"),
        (
            "UPDATE users SET used_up = used_up + 9223372036854775807 + 1 WHERE id = $1",
            "an overflow",
        ),
    ] {
        let r = sqlx::query(q).bind(u.id).execute(&raw).await;
        assert!(r.is_err(), "{what} in an INTEGER column is refused");
    }
    raw.close().await;
    assert_eq!(store.user(u.id, now()).await.unwrap().used_up, 0);

    // The database, its write-ahead log and shared memory: the owner's only.
    for suffix in ["", "-wal", "-shm"] {
        let path = format!("{}{suffix}", db.display());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{path}");
    }
    // A file an older version left readable by others is made private at start.
    drop(store);
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let _again = SqlStore::open_sqlite(&db, Changes::default())
        .await
        .unwrap();
    let mode = std::fs::metadata(&db).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}
