//! [`SqlStore`]: the [`Store`] over sqlx, for SQLite and PostgreSQL.

use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::{Any, AnyPool, Executor, Row, Transaction};

use super::token_hash::hash_token;
use super::{Changes, Store, StoreError};
use crate::model::FieldError;

/// The database behind a [`SqlStore`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// A SQLite file.
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

/// How long a SQLite connection waits for a lock held by another process (a backup, a
/// second tool) before giving up. 10 s: far past any write the panel makes, so an
/// operator never meets "database is locked"; writes inside the panel never contend,
/// since they share one connection.
const SQLITE_BUSY_TIMEOUT_MS: u32 = 10_000;

/// The store over sqlx. Cheap to clone.
#[derive(Clone, Debug)]
pub struct SqlStore {
    pub(super) write: AnyPool,
    pub(super) read: AnyPool,
    backend: Backend,
    changes: Changes,
}

fn sqlite_pool(url: &str, max: u32, read_only: bool) -> AnyPoolOptions {
    let _ = url;
    AnyPoolOptions::new()
        .max_connections(max)
        .acquire_timeout(Duration::from_secs(30))
        // No ping before each use: a SQLite connection is a file, not a socket that
        // can go stale, and the ping was a second hand-off to the connection's thread
        // on every query (a quarter of a subscription fetch's time).
        .test_before_acquire(false)
        .after_connect(move |conn, _meta| {
            Box::pin(async move {
                conn.execute(
                    format!(
                        "PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}; \
                         PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
                         PRAGMA foreign_keys = ON;{}",
                        if read_only {
                            " PRAGMA query_only = ON;"
                        } else {
                            ""
                        }
                    )
                    .as_str(),
                )
                .await?;
                Ok(())
            })
        })
}

/// The versioned migrations of `backend`, embedded in the binary. Built at run time
/// rather than by `sqlx::migrate!`, which would bring sqlx's proc-macro crates (and a
/// second build of the drivers) into every build for one directory listing. The
/// checksums are sqlx's own (SHA-384 of the text), so databases migrated either way
/// agree.
pub(super) fn migrator(backend: Backend) -> sqlx::migrate::Migrator {
    use sqlx::migrate::{Migration, MigrationType, Migrator};
    use std::borrow::Cow;
    let files = match backend {
        Backend::Sqlite => [
            include_str!("../../migrations/sqlite/0001_init.sql"),
            include_str!("../../migrations/sqlite/0002_balancing.sql"),
            include_str!("../../migrations/sqlite/0003_tunnels.sql"),
            include_str!("../../migrations/sqlite/0004_tunnel_usage.sql"),
            include_str!("../../migrations/sqlite/0005_tunnel_window.sql"),
            include_str!("../../migrations/sqlite/0006_tunnel_pin_rollout.sql"),
            include_str!("../../migrations/sqlite/0007_server_history.sql"),
            include_str!("../../migrations/sqlite/0008_reality.sql"),
            include_str!("../../migrations/sqlite/0009_tunnel_credential_epoch.sql"),
            include_str!("../../migrations/sqlite/0010_tunnel_reality.sql"),
            include_str!("../../migrations/sqlite/0011_strict.sql"),
            include_str!("../../migrations/sqlite/0012_account.sql"),
            include_str!("../../migrations/sqlite/0013_tunnel_origin_addresses.sql"),
            include_str!("../../migrations/sqlite/0014_address_limit_join_tokens.sql"),
            include_str!("../../migrations/sqlite/0015_default_route_name.sql"),
            include_str!("../../migrations/sqlite/0016_hysteria2.sql"),
            include_str!("../../migrations/sqlite/0017_trusted_proxies.sql"),
            include_str!("../../migrations/sqlite/0018_ssh_host_key.sql"),
            include_str!("../../migrations/sqlite/0019_node_binary.sql"),
            include_str!("../../migrations/sqlite/0020_inbound_rules.sql"),
            include_str!("../../migrations/sqlite/0021_routing.sql"),
            include_str!("../../migrations/sqlite/0022_imports.sql"),
            include_str!("../../migrations/sqlite/0023_import_links.sql"),
            include_str!("../../migrations/sqlite/0024_roles.sql"),
            include_str!("../../migrations/sqlite/0025_audit.sql"),
            include_str!("../../migrations/sqlite/0026_plans.sql"),
            include_str!("../../migrations/sqlite/0027_webhooks.sql"),
            include_str!("../../migrations/sqlite/0028_user_watch.sql"),
            include_str!("../../migrations/sqlite/0029_server_watch.sql"),
            include_str!("../../migrations/sqlite/0030_watch_more.sql"),
        ],
        Backend::Postgres => [
            include_str!("../../migrations/postgres/0001_init.sql"),
            include_str!("../../migrations/postgres/0002_balancing.sql"),
            include_str!("../../migrations/postgres/0003_tunnels.sql"),
            include_str!("../../migrations/postgres/0004_tunnel_usage.sql"),
            include_str!("../../migrations/postgres/0005_tunnel_window.sql"),
            include_str!("../../migrations/postgres/0006_tunnel_pin_rollout.sql"),
            include_str!("../../migrations/postgres/0007_server_history.sql"),
            include_str!("../../migrations/postgres/0008_reality.sql"),
            include_str!("../../migrations/postgres/0009_tunnel_credential_epoch.sql"),
            include_str!("../../migrations/postgres/0010_tunnel_reality.sql"),
            include_str!("../../migrations/postgres/0011_strict.sql"),
            include_str!("../../migrations/postgres/0012_account.sql"),
            include_str!("../../migrations/postgres/0013_tunnel_origin_addresses.sql"),
            include_str!("../../migrations/postgres/0014_address_limit_join_tokens.sql"),
            include_str!("../../migrations/postgres/0015_default_route_name.sql"),
            include_str!("../../migrations/postgres/0016_hysteria2.sql"),
            include_str!("../../migrations/postgres/0017_trusted_proxies.sql"),
            include_str!("../../migrations/postgres/0018_ssh_host_key.sql"),
            include_str!("../../migrations/postgres/0019_node_binary.sql"),
            include_str!("../../migrations/postgres/0020_inbound_rules.sql"),
            include_str!("../../migrations/postgres/0021_routing.sql"),
            include_str!("../../migrations/postgres/0022_imports.sql"),
            include_str!("../../migrations/postgres/0023_import_links.sql"),
            include_str!("../../migrations/postgres/0024_roles.sql"),
            include_str!("../../migrations/postgres/0025_audit.sql"),
            include_str!("../../migrations/postgres/0026_plans.sql"),
            include_str!("../../migrations/postgres/0027_webhooks.sql"),
            include_str!("../../migrations/postgres/0028_user_watch.sql"),
            include_str!("../../migrations/postgres/0029_server_watch.sql"),
            include_str!("../../migrations/postgres/0030_watch_more.sql"),
        ],
    };
    // Versions are the files' numbers (one entry per file above, in the same order),
    // so a number once given never moves.
    let names = [
        (1, "init"),
        (2, "balancing"),
        (3, "tunnels"),
        (4, "tunnel_usage"),
        (5, "tunnel_window"),
        (6, "tunnel_pin_rollout"),
        (7, "server_history"),
        (8, "reality"),
        (9, "tunnel_credential_epoch"),
        (10, "tunnel_reality"),
        (11, "strict"),
        (12, "account"),
        (13, "tunnel_origin_addresses"),
        (14, "address_limit_join_tokens"),
        (15, "default_route_name"),
        (16, "hysteria2"),
        (17, "trusted_proxies"),
        (18, "ssh_host_key"),
        (19, "node_binary"),
        (20, "inbound_rules"),
        (21, "routing"),
        (22, "imports"),
        (23, "import_links"),
        (24, "roles"),
        (25, "audit"),
        (26, "plans"),
        (27, "webhooks"),
        (28, "user_watch"),
        (29, "server_watch"),
        (30, "watch_more"),
    ];
    let migrations = files
        .iter()
        .zip(names)
        .map(|(sql, (version, name))| {
            Migration::new(
                version,
                Cow::Borrowed(name),
                MigrationType::Simple,
                Cow::Borrowed(*sql),
                false,
            )
        })
        .collect();
    // The fields are public (for `migrate!`); sqlx is pinned by Cargo.lock.
    Migrator {
        migrations: Cow::Owned(migrations),
        ..Migrator::DEFAULT
    }
}

pub(super) fn conflict(e: sqlx::Error, field: &str, message: &str) -> StoreError {
    match e.as_database_error() {
        Some(d) if d.is_unique_violation() => StoreError::Conflict(FieldError::new(field, message)),
        Some(d) if d.is_foreign_key_violation() => StoreError::Refused(FieldError::new(
            field,
            "refers to something that does not exist",
        )),
        _ => StoreError::Database(e),
    }
}

impl SqlStore {
    /// Opens `url` (`sqlite://PATH` or `postgres://...`) and runs the migrations.
    pub async fn open(url: &str, changes: Changes) -> Result<Self, StoreError> {
        sqlx::any::install_default_drivers();
        let store = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let pool = AnyPoolOptions::new()
                .max_connections(16)
                .acquire_timeout(Duration::from_secs(30))
                .connect(url)
                .await?;
            changes.listen_postgres(url.to_owned());
            Self {
                write: pool.clone(),
                read: pool,
                backend: Backend::Postgres,
                changes,
            }
        } else {
            let url = if url.contains('?') {
                url.to_owned()
            } else {
                format!("{url}?mode=rwc")
            };
            super::sqlite_file::restrict(&url)?;
            let write = sqlite_pool(&url, 1, false).connect(&url).await?;
            // Migrate before readers open, so they see the schema.
            super::sqlite_file::migrate(&write, &migrator(Backend::Sqlite)).await?;
            let read = sqlite_pool(&url, 4, true).connect(&url).await?;
            let store = Self {
                write,
                read,
                backend: Backend::Sqlite,
                changes,
            };
            store.fill_token_hashes().await?;
            return Ok(store);
        };
        migrator(Backend::Postgres).run(&store.write).await?;
        store.fill_token_hashes().await?;
        Ok(store)
    }

    /// Users made before schema version 2 have no token hash: compute them (once).
    async fn fill_token_hashes(&self) -> Result<(), StoreError> {
        let rows = sqlx::query("SELECT id, subscription_token FROM users WHERE token_hash IS NULL")
            .fetch_all(&self.write)
            .await?;
        for r in &rows {
            let (id, token): (i64, String) = (r.try_get(0)?, r.try_get(1)?);
            sqlx::query("UPDATE users SET token_hash = $1 WHERE id = $2")
                .bind(hash_token(&token))
                .bind(id)
                .execute(&self.write)
                .await?;
        }
        Ok(())
    }

    /// Opens (creating) the SQLite file at `path`.
    pub async fn open_sqlite(path: &Path, changes: Changes) -> Result<Self, StoreError> {
        Self::open(&format!("sqlite://{}", path.display()), changes).await
    }

    /// Which database this is.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Where writes are announced.
    pub fn changes(&self) -> &Changes {
        &self.changes
    }

    /// Writes a consistent copy of a SQLite database to `path` while the panel runs
    /// (`VACUUM INTO`), mode `0600`. PostgreSQL operators use `pg_dump`.
    pub async fn backup(&self, path: &Path) -> Result<(), StoreError> {
        if self.backend != Backend::Sqlite {
            return Err(StoreError::Refused(FieldError::new(
                "backup",
                "online backup is for SQLite; back PostgreSQL up with pg_dump",
            )));
        }
        sqlx::query("VACUUM INTO $1")
            .bind(path.display().to_string())
            .execute(&self.write)
            .await?;
        // It holds every secret the panel has: readable by its owner only.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| StoreError::Database(sqlx::Error::Io(e)))?;
        Ok(())
    }

    pub(super) async fn begin(&self) -> Result<Transaction<'static, Any>, StoreError> {
        Ok(self.write.begin().await?)
    }

    /// Commits and announces the change.
    pub(super) async fn commit(&self, mut tx: Transaction<'static, Any>) -> Result<(), StoreError> {
        if self.backend == Backend::Postgres {
            sqlx::query("SELECT pg_notify('switchyard', '')")
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        if self.backend == Backend::Sqlite {
            self.changes.announce();
        }
        Ok(())
    }

    pub(super) async fn one<T>(
        &self,
        what: &'static str,
        row: Option<AnyRow>,
        f: impl FnOnce(&AnyRow) -> Result<T, sqlx::Error>,
    ) -> Result<T, StoreError> {
        match row {
            Some(r) => Ok(f(&r)?),
            None => Err(StoreError::NotFound(what)),
        }
    }
}

#[async_trait]
impl Store for SqlStore {
    async fn setting_or_init(&self, key: &str, init: String) -> Result<String, StoreError> {
        let mut tx = self.begin().await?;
        sqlx::query("INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT DO NOTHING")
            .bind(key)
            .bind(&init)
            .execute(&mut *tx)
            .await?;
        let row = sqlx::query("SELECT value FROM settings WHERE key = $1")
            .bind(key)
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(row.try_get(0)?)
    }

    async fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
        let row = sqlx::query("SELECT value FROM settings WHERE key = $1")
            .bind(key)
            .fetch_optional(&self.read)
            .await?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    }

    async fn put_setting(&self, key: &str, value: &str) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        sqlx::query(
            "INSERT INTO settings (key, value) VALUES ($1, $2) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        )
        .bind(key)
        .bind(value)
        .execute(&mut *tx)
        .await?;
        self.commit(tx).await
    }
}
