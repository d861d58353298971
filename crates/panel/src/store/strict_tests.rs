//! Schema version 11 on SQLite: a database of version 10 (with a usage that an
//! overflow stored as a REAL) is rebuilt STRICT with every column, default, unique
//! constraint, index and foreign key it had, its references intact, and the REAL
//! capped to the largest INTEGER.

use std::borrow::Cow;
use std::collections::BTreeSet;

use sqlx::any::AnyPoolOptions;
use sqlx::{AnyPool, Row};

use super::sql::{Backend, migrator};
use super::{Changes, SqlStore, UserQuery, UserStore};

const NOW: i64 = 1_796_121_000_000;

/// Every column (table, name, type as version 11 spells it, not null, default, key
/// position).
async fn columns(pool: &AnyPool) -> BTreeSet<(String, String, String, i64, String, i64)> {
    let rows = sqlx::query(
        "SELECT m.name, p.name, p.type, p.\"notnull\", COALESCE(p.dflt_value, ''), p.pk \
         FROM sqlite_master m JOIN pragma_table_info(m.name) p \
         WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name <> '_sqlx_migrations'",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    rows.iter()
        .map(|r| {
            let ty: String = r.get(2);
            let ty = match ty.as_str() {
                "BIGINT" | "BOOLEAN" => "INTEGER".to_owned(),
                "DOUBLE PRECISION" => "REAL".to_owned(),
                _ => ty,
            };
            // A STRICT table's key columns are NOT NULL (a legacy table let a TEXT key
            // be NULL).
            let pk: i64 = r.get(5);
            let not_null: i64 = r.get(3);
            (
                r.get(0),
                r.get(1),
                ty,
                not_null.max(i64::from(pk > 0)),
                r.get(4),
                pk,
            )
        })
        .collect()
}

/// Every foreign key (table, column, parent, parent column, on delete).
async fn foreign_keys(pool: &AnyPool) -> BTreeSet<(String, String, String, String, String)> {
    let rows = sqlx::query(
        "SELECT m.name, f.\"from\", f.\"table\", f.\"to\", f.on_delete \
         FROM sqlite_master m JOIN pragma_foreign_key_list(m.name) f WHERE m.type = 'table'",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    rows.iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
        .collect()
}

/// Every index (table, unique, origin, its columns).
async fn indexes(pool: &AnyPool) -> BTreeSet<(String, i64, String, String)> {
    let rows = sqlx::query(
        "SELECT m.name, i.\"unique\", i.origin, \
         (SELECT group_concat(c.name) FROM pragma_index_info(i.name) c) \
         FROM sqlite_master m JOIN pragma_index_list(m.name) i \
         WHERE m.type = 'table' AND m.name <> '_sqlx_migrations'",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    rows.iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect()
}

#[tokio::test]
async fn version_11_keeps_the_schema_and_caps_a_real_usage() {
    sqlx::any::install_default_drivers();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("panel.db");
    let url = format!("sqlite://{}?mode=rwc", path.display());
    let old = AnyPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await
        .unwrap();
    let all = migrator(Backend::Sqlite);
    let mut ten = migrator(Backend::Sqlite);
    ten.migrations = Cow::Owned(
        all.migrations
            .iter()
            .filter(|m| m.version <= 10)
            .cloned()
            .collect(),
    );
    ten.run(&old).await.unwrap();
    for q in [
        "PRAGMA foreign_keys = ON",
        "INSERT INTO clusters (name, created_ms) VALUES ('c', 1)",
        "INSERT INTO servers (cluster_id, name, address, state_since_ms, created_ms) \
         VALUES (1, 's', '127.0.0.1', 1, 1)",
        "INSERT INTO join_tokens VALUES ('h', 1, 1, NULL, 1)",
        "INSERT INTO users (username, period_started_ms, subscription_token, token_hash, \
         vless_uuid, trojan_password, ss_seed, created_ms, used_up) \
         VALUES ('a', 1, 't', 'th', '00000000-0000-4000-8000-000000000001', 'p', 's', 1, \
         9223372036854775807)",
        // The overflow of the field test: SQLite turns the sum into a REAL.
        "UPDATE users SET used_up = used_up + 5, lifetime_bytes = 9223372036854775807",
        "UPDATE users SET lifetime_bytes = lifetime_bytes + 1",
        "INSERT INTO user_clusters VALUES (1, 1)",
    ] {
        sqlx::query(q).execute(&old).await.unwrap();
    }
    let kind: String = sqlx::query("SELECT typeof(used_up) FROM users")
        .fetch_one(&old)
        .await
        .unwrap()
        .get(0);
    assert_eq!(kind, "real", "version 10 stored the overflow as a REAL");
    let (cols, fks, idx) = (
        columns(&old).await,
        foreign_keys(&old).await,
        indexes(&old).await,
    );
    old.close().await;

    let store = SqlStore::open_sqlite(&path, Changes::default())
        .await
        .unwrap();
    let users = store.users(&UserQuery::default(), NOW).await.unwrap();
    assert_eq!(users.len(), 1);
    assert_eq!(users[0].used_up, i64::MAX as u64, "capped, readable");
    assert_eq!(users[0].lifetime_bytes, i64::MAX as u64);
    assert_eq!(store.user_clusters_of(users[0].id).await, vec![1]);

    let new = &store.write;
    let (after_cols, after_fks, after_idx) = (
        columns(new).await,
        foreign_keys(new).await,
        indexes(new).await,
    );
    let missing: Vec<_> = cols.difference(&after_cols).collect();
    assert!(missing.is_empty(), "columns lost or changed: {missing:?}");
    let missing: Vec<_> = fks.difference(&after_fks).collect();
    assert!(missing.is_empty(), "foreign keys lost: {missing:?}");
    // A single INTEGER key is the rowid itself, unique without an index of its own.
    let rowid = |table: &str, col: &str| {
        let keys: Vec<_> = after_cols
            .iter()
            .filter(|c| c.0 == table && c.5 > 0)
            .collect();
        keys.len() == 1 && keys[0].1 == col && keys[0].2 == "INTEGER"
    };
    let missing: Vec<_> = idx
        .difference(&after_idx)
        .filter(|i| !(i.2 == "pk" && rowid(&i.0, &i.3)))
        .collect();
    assert!(missing.is_empty(), "indexes lost: {missing:?}");
    let broken = sqlx::query("PRAGMA foreign_key_check")
        .fetch_all(new)
        .await
        .unwrap();
    assert!(broken.is_empty(), "every reference holds");
    let on: i64 = sqlx::query("PRAGMA foreign_keys")
        .fetch_one(new)
        .await
        .unwrap()
        .get(0);
    assert_eq!(on, 1, "foreign keys are back on after the migration");
    let tables = sqlx::query(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' \
         AND name NOT LIKE 'sqlite_%' AND name <> '_sqlx_migrations'",
    )
    .fetch_all(new)
    .await
    .unwrap();
    assert!(tables.len() >= 20);
    for t in &tables {
        let (name, sql): (String, String) = (t.get(0), t.get(1));
        assert!(sql.trim_end().ends_with("STRICT"), "{name} is STRICT");
        if sql.contains("\n    id INTEGER PRIMARY KEY") {
            assert!(
                sql.contains("AUTOINCREMENT"),
                "{name}'s ids are never reused"
            );
        }
    }
}

impl SqlStore {
    /// The clusters a user is bound to (tests only).
    async fn user_clusters_of(&self, user: i64) -> Vec<i64> {
        sqlx::query("SELECT cluster_id FROM user_clusters WHERE user_id = $1")
            .bind(user)
            .fetch_all(&self.read)
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    }
}
