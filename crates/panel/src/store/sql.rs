//! [`SqlStore`]: the [`Store`] over sqlx, for SQLite and PostgreSQL.

use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::{Any, AnyPool, Executor, Row, Transaction};

use super::rows::{self, INBOUND, INBOUND_FROM, SERVER, USER, to_i64, to_u64};
use super::{
    ApiToken, Changes, InboundInput, JoinRefusal, ServerInput, ServerPoint, ServerReport,
    ServerSnapshot, Store, StoreError, TrafficBatch, UserInput, UserQuery,
};
use crate::model::ServerState;
use crate::model::tunnel::UsageStep;
use crate::model::{
    Admin, Cluster, Credentials, FieldError, Flow, Id, Inbound, InboundSecrets, Route, Server,
    User, period_start,
};
use crate::service::hash_token;

/// Adds one heartbeat's load to the server's history at `step`, and forgets points
/// older than the step keeps.
async fn record_history(
    tx: &mut Transaction<'static, Any>,
    id: Id,
    step: UsageStep,
    report: &ServerReport,
    now_ms: i64,
) -> Result<(), StoreError> {
    let users = to_i64(report.users_online);
    sqlx::query(
        "INSERT INTO server_history \
         (server_id, step_ms, at_ms, samples, up_sum, down_sum, users_sum, users_max) \
         VALUES ($1, $2, $3, 1, $4, $5, $6, $6) ON CONFLICT (server_id, step_ms, at_ms) \
         DO UPDATE SET samples = server_history.samples + 1, \
         up_sum = server_history.up_sum + excluded.up_sum, \
         down_sum = server_history.down_sum + excluded.down_sum, \
         users_sum = server_history.users_sum + excluded.users_sum, \
         users_max = CASE WHEN excluded.users_max > server_history.users_max \
         THEN excluded.users_max ELSE server_history.users_max END",
    )
    .bind(id)
    .bind(step.ms())
    .bind(step.start(now_ms))
    .bind(to_i64(report.throughput.0))
    .bind(to_i64(report.throughput.1))
    .bind(users)
    .execute(&mut **tx)
    .await?;
    sqlx::query("DELETE FROM server_history WHERE server_id = $1 AND step_ms = $2 AND at_ms < $3")
        .bind(id)
        .bind(step.ms())
        .bind(step.start(now_ms - step.kept_ms()))
        .execute(&mut **tx)
        .await?;
    Ok(())
}

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

fn json(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap_or_default()
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

    async fn one<T>(
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

    pub(super) async fn fill_clusters(
        &self,
        users: &mut [(User, Credentials)],
    ) -> Result<(), StoreError> {
        for (u, _) in users.iter_mut().filter(|(u, _)| u.clusters.is_some()) {
            let rows = sqlx::query(
                "SELECT cluster_id FROM user_clusters WHERE user_id = $1 ORDER BY cluster_id",
            )
            .bind(u.id)
            .fetch_all(&self.read)
            .await?;
            u.clusters = Some(
                rows.iter()
                    .map(|r| r.try_get::<i64, _>(0))
                    .collect::<Result<_, _>>()?,
            );
        }
        Ok(())
    }

    async fn set_clusters(
        tx: &mut Transaction<'static, Any>,
        user: Id,
        clusters: &Option<Vec<Id>>,
    ) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM user_clusters WHERE user_id = $1")
            .bind(user)
            .execute(&mut **tx)
            .await?;
        sqlx::query("UPDATE users SET all_clusters = $1 WHERE id = $2")
            .bind(i64::from(clusters.is_none()))
            .bind(user)
            .execute(&mut **tx)
            .await?;
        for c in clusters.iter().flatten() {
            sqlx::query(
                "INSERT INTO user_clusters (user_id, cluster_id) VALUES ($1, $2) \
                 ON CONFLICT DO NOTHING",
            )
            .bind(user)
            .bind(*c)
            .execute(&mut **tx)
            .await
            .map_err(|e| conflict(e, "clusters", "no such cluster"))?;
        }
        Ok(())
    }

    /// Inbounds matching `filter` (one `$1` parameter, bound to `id`) with their
    /// secrets, for rendering configs and subscriptions.
    async fn inbounds_with_secrets(
        &self,
        filter: &str,
        id: Id,
    ) -> Result<Vec<(Inbound, InboundSecrets)>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {INBOUND}, i.ss_server_key, i.tls_cert_pem, i.tls_key_pem, \
             i.reality_private_key FROM {INBOUND_FROM} WHERE {filter} ORDER BY i.id"
        ))
        .bind(id)
        .fetch_all(&self.read)
        .await?;
        Ok(rows
            .iter()
            .map(|r| Ok((rows::inbound(r)?, rows::inbound_secrets(r)?)))
            .collect::<Result<Vec<_>, sqlx::Error>>()?)
    }

    async fn user_full(&self, id: Id, now_ms: i64) -> Result<(User, Credentials), StoreError> {
        let row = sqlx::query(&format!("SELECT {USER} FROM users WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.read)
            .await?;
        let mut one = vec![self.one("user", row, |r| rows::user(r, now_ms)).await?];
        self.fill_clusters(&mut one).await?;
        Ok(one.remove(0))
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

    async fn clusters(&self) -> Result<Vec<Cluster>, StoreError> {
        let rows = sqlx::query("SELECT id, name, created_ms FROM clusters ORDER BY id")
            .fetch_all(&self.read)
            .await?;
        Ok(rows.iter().map(rows::cluster).collect::<Result<_, _>>()?)
    }

    async fn cluster(&self, id: Id) -> Result<Cluster, StoreError> {
        let row = sqlx::query("SELECT id, name, created_ms FROM clusters WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.read)
            .await?;
        self.one("cluster", row, rows::cluster).await
    }

    async fn create_cluster(&self, name: &str, now_ms: i64) -> Result<Cluster, StoreError> {
        let mut tx = self.begin().await?;
        let row =
            sqlx::query("INSERT INTO clusters (name, created_ms) VALUES ($1, $2) RETURNING id")
                .bind(name)
                .bind(now_ms)
                .fetch_one(&mut *tx)
                .await
                .map_err(|e| conflict(e, "name", "a cluster with this name exists"))?;
        let id = rows::id(&row)?;
        self.commit(tx).await?;
        self.cluster(id).await
    }

    async fn rename_cluster(&self, id: Id, name: &str) -> Result<Cluster, StoreError> {
        let mut tx = self.begin().await?;
        let done = sqlx::query("UPDATE clusters SET name = $1 WHERE id = $2")
            .bind(name)
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(|e| conflict(e, "name", "a cluster with this name exists"))?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("cluster"));
        }
        self.commit(tx).await?;
        self.cluster(id).await
    }

    async fn delete_cluster(&self, id: Id) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        let servers: i64 = sqlx::query("SELECT COUNT(*) FROM servers WHERE cluster_id = $1")
            .bind(id)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
        if servers > 0 {
            return Err(StoreError::Refused(FieldError::new(
                "id",
                format!("the cluster still has {servers} server(s); delete them first"),
            )));
        }
        sqlx::query("DELETE FROM routes WHERE cluster_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        let done = sqlx::query("DELETE FROM clusters WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("cluster"));
        }
        self.commit(tx).await
    }

    async fn servers(&self, cluster: Option<Id>) -> Result<Vec<Server>, StoreError> {
        let rows = match cluster {
            Some(c) => {
                sqlx::query(&format!(
                    "SELECT {SERVER} FROM servers WHERE cluster_id = $1 ORDER BY id"
                ))
                .bind(c)
                .fetch_all(&self.read)
                .await?
            }
            None => {
                sqlx::query(&format!("SELECT {SERVER} FROM servers ORDER BY id"))
                    .fetch_all(&self.read)
                    .await?
            }
        };
        Ok(rows.iter().map(rows::server).collect::<Result<_, _>>()?)
    }

    async fn server(&self, id: Id) -> Result<Server, StoreError> {
        let row = sqlx::query(&format!("SELECT {SERVER} FROM servers WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.read)
            .await?;
        self.one("server", row, rows::server).await
    }

    async fn create_server(&self, input: &ServerInput, now_ms: i64) -> Result<Server, StoreError> {
        let mut tx = self.begin().await?;
        let row = sqlx::query(
            "INSERT INTO servers (cluster_id, name, address, allow_private, state_since_ms, \
             created_ms) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
        )
        .bind(input.cluster_id)
        .bind(&input.name)
        .bind(&input.address)
        .bind(i64::from(input.allow_private_destinations))
        .bind(now_ms)
        .bind(now_ms)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| {
            match conflict(e, "name", "a server with this name exists in the cluster") {
                StoreError::Refused(_) => {
                    StoreError::Refused(FieldError::new("cluster_id", "no such cluster"))
                }
                other => other,
            }
        })?;
        let id = rows::id(&row)?;
        self.commit(tx).await?;
        self.server(id).await
    }

    async fn update_server(&self, id: Id, input: &ServerInput) -> Result<Server, StoreError> {
        let current = self.server(id).await?;
        if current.cluster_id != input.cluster_id {
            return Err(StoreError::Refused(FieldError::new(
                "cluster_id",
                "a server cannot move to another cluster",
            )));
        }
        let mut tx = self.begin().await?;
        sqlx::query("UPDATE servers SET name = $1, address = $2, allow_private = $3 WHERE id = $4")
            .bind(&input.name)
            .bind(&input.address)
            .bind(i64::from(input.allow_private_destinations))
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(|e| conflict(e, "name", "a server with this name exists in the cluster"))?;
        self.commit(tx).await?;
        self.server(id).await
    }

    async fn delete_server(&self, id: Id) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        let tunnels = Self::tunnels_of_server(&mut tx, id).await?;
        if !tunnels.is_empty() {
            return Err(StoreError::Refused(FieldError::new(
                "id",
                format!(
                    "the server is in tunnel(s) {}: take it out of them (or delete them) first",
                    tunnels.join(", ")
                ),
            )));
        }
        sqlx::query("DELETE FROM inbounds WHERE server_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        let done = sqlx::query("DELETE FROM servers WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("server"));
        }
        self.commit(tx).await
    }

    async fn server_by_fingerprint(&self, fingerprint: &str) -> Result<Option<Id>, StoreError> {
        let row = sqlx::query("SELECT id FROM servers WHERE fingerprint = $1")
            .bind(fingerprint)
            .fetch_optional(&self.read)
            .await?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    }

    async fn pin_server(
        &self,
        id: Id,
        fingerprint: &str,
        hostname: &str,
        version: &str,
    ) -> Result<(), StoreError> {
        self.pin_server_tx(id, fingerprint, hostname, version).await
    }

    async fn server_pin(&self, id: Id) -> Result<Option<String>, StoreError> {
        self.server_pin_of(id).await
    }

    async fn report_server(
        &self,
        id: Id,
        report: &ServerReport,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        // Not announced: health and load change no node's config.
        let mut tx = self.begin().await?;
        sqlx::query(
            "UPDATE servers SET state = $1, state_reason = $2, state_since_ms = $3, \
             refreshed_ms = $4, config_version = $5, users_online = $6, up_bps = $7, \
             down_bps = $8, capacity_peak = COALESCE($9, capacity_peak), \
             capacity_above_floor_ms = COALESCE($10, capacity_above_floor_ms), \
             capacity_last_ms = COALESCE($11, capacity_last_ms) WHERE id = $12",
        )
        .bind(report.health.state.as_str())
        .bind(&report.health.reason)
        .bind(report.health.since_ms)
        .bind(now_ms)
        .bind(report.config_version.map(|v| v as i64))
        .bind(to_i64(report.users_online))
        .bind(to_i64(report.throughput.0))
        .bind(to_i64(report.throughput.1))
        .bind(report.capacity.map(|c| c.peak))
        .bind(report.capacity.map(|c| c.above_floor_ms))
        .bind(report.capacity.and_then(|c| c.last_ms))
        .bind(id)
        .execute(&mut *tx)
        .await?;
        if report.health.state == ServerState::Online {
            for step in UsageStep::ALL {
                record_history(&mut tx, id, step, report, now_ms).await?;
            }
        }
        tx.commit().await?;
        Ok(())
    }

    async fn server_history(
        &self,
        id: Id,
        step: UsageStep,
        since_ms: i64,
    ) -> Result<Vec<ServerPoint>, StoreError> {
        let rows = sqlx::query(
            "SELECT at_ms, samples, up_sum, down_sum, users_sum, users_max FROM server_history \
             WHERE server_id = $1 AND step_ms = $2 AND at_ms >= $3 ORDER BY at_ms",
        )
        .bind(id)
        .bind(step.ms())
        .bind(step.start(since_ms))
        .fetch_all(&self.read)
        .await?;
        rows.iter()
            .map(|r| {
                let samples = to_u64(r.try_get("samples")?).max(1);
                let avg = |column: &str| -> Result<u64, sqlx::Error> {
                    Ok(to_u64(r.try_get(column)?) / samples)
                };
                Ok(ServerPoint {
                    at_ms: r.try_get("at_ms")?,
                    up_bytes_per_s: avg("up_sum")?,
                    down_bytes_per_s: avg("down_sum")?,
                    users_online: avg("users_sum")?,
                    users_max: to_u64(r.try_get("users_max")?),
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(Into::into)
    }

    async fn journal_cursor(&self, id: Id) -> Result<u64, StoreError> {
        let row = sqlx::query("SELECT journal_cursor FROM servers WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.write)
            .await?;
        self.one("server", row, |r| r.try_get::<i64, _>(0).map(to_u64))
            .await
    }

    async fn create_join_token(
        &self,
        server_id: Id,
        secret_hash: &str,
        expires_ms: i64,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        self.create_join_token_tx(server_id, secret_hash, expires_ms, now_ms)
            .await
    }

    async fn replace_node(
        &self,
        server_id: Id,
        secret_hash: &str,
        expires_ms: i64,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        self.replace_node_tx(server_id, secret_hash, expires_ms, now_ms)
            .await
    }

    async fn consume_join_token(
        &self,
        secret_hash: &str,
        now_ms: i64,
    ) -> Result<Result<Id, JoinRefusal>, StoreError> {
        self.consume_join_token_tx(secret_hash, now_ms).await
    }

    async fn inbounds(
        &self,
        server: Option<Id>,
        cluster: Option<Id>,
    ) -> Result<Vec<Inbound>, StoreError> {
        let base = format!("SELECT {INBOUND} FROM {INBOUND_FROM}");
        let rows =
            match (server, cluster) {
                (Some(s), _) => {
                    sqlx::query(&format!("{base} WHERE i.server_id = $1 ORDER BY i.id"))
                        .bind(s)
                        .fetch_all(&self.read)
                        .await?
                }
                (None, Some(c)) => sqlx::query(&format!(
                    "{base} WHERE i.server_id IN (SELECT id FROM servers WHERE cluster_id = $1) \
                     ORDER BY i.id"
                ))
                .bind(c)
                .fetch_all(&self.read)
                .await?,
                (None, None) => {
                    sqlx::query(&format!("{base} ORDER BY i.id"))
                        .fetch_all(&self.read)
                        .await?
                }
            };
        Ok(rows.iter().map(rows::inbound).collect::<Result<_, _>>()?)
    }

    async fn inbound(&self, id: Id) -> Result<Inbound, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {INBOUND} FROM {INBOUND_FROM} WHERE i.id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.read)
        .await?;
        self.one("inbound", row, rows::inbound).await
    }

    async fn create_inbound(
        &self,
        input: &InboundInput,
        secrets: &InboundSecrets,
        now_ms: i64,
    ) -> Result<Inbound, StoreError> {
        let mut tx = self.begin().await?;
        let cluster: Option<i64> = sqlx::query("SELECT cluster_id FROM servers WHERE id = $1")
            .bind(input.server_id)
            .fetch_optional(&mut *tx)
            .await?
            .map(|r| r.try_get(0))
            .transpose()?;
        let Some(cluster) = cluster else {
            return Err(StoreError::Refused(FieldError::new(
                "server_id",
                "no such server",
            )));
        };
        Self::check_tunnel_port(&mut tx, input.server_id, input.port).await?;
        let row = sqlx::query(
            "INSERT INTO inbounds (server_id, name, protocol, port, transport, security, host, \
             sni, coefficient, method, ss_server_key, tls_cert_pem, tls_key_pem, created_ms, \
             flow, reality_private_key, reality_public_key) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) \
             RETURNING id",
        )
        .bind(input.server_id)
        .bind(&input.name)
        .bind(input.protocol.as_str())
        .bind(i64::from(input.port))
        .bind(json(&input.transport))
        .bind(json(&input.security))
        .bind(&input.host)
        .bind(&input.sni)
        .bind(input.coefficient)
        .bind(&input.method)
        .bind(&secrets.ss_server_key)
        .bind(&secrets.tls_cert_pem)
        .bind(&secrets.tls_key_pem)
        .bind(now_ms)
        .bind(input.flow.map(Flow::as_str))
        .bind(&secrets.reality_private_key)
        .bind(&secrets.reality_public_key)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| conflict(e, "port", "another inbound of this server uses this port"))?;
        let id = rows::id(&row)?;
        // The cluster's first inbound goes into the default route, made now if the
        // cluster has no route yet, so a fresh install works with zero settings.
        let others: i64 = sqlx::query(
            "SELECT COUNT(*) FROM inbounds WHERE id <> $1 AND server_id IN \
             (SELECT id FROM servers WHERE cluster_id = $2)",
        )
        .bind(id)
        .bind(cluster)
        .fetch_one(&mut *tx)
        .await?
        .try_get(0)?;
        if others == 0 {
            let existing =
                sqlx::query("SELECT id FROM routes WHERE cluster_id = $1 AND is_default = 1")
                    .bind(cluster)
                    .fetch_optional(&mut *tx)
                    .await?;
            let route: Option<i64> = match existing {
                Some(r) => Some(r.try_get(0)?),
                None => {
                    let any: i64 = sqlx::query("SELECT COUNT(*) FROM routes WHERE cluster_id = $1")
                        .bind(cluster)
                        .fetch_one(&mut *tx)
                        .await?
                        .try_get(0)?;
                    if any == 0 {
                        let r = sqlx::query(
                            "INSERT INTO routes (cluster_id, name, algorithm, position, \
                             is_default, created_ms) VALUES ($1, $3, 'least_loaded', \
                             0, 1, $2) RETURNING id",
                        )
                        .bind(cluster)
                        .bind(now_ms)
                        // Named after the inbound: users see what they saw before
                        // any route was set up; the operator renames it at will.
                        .bind(&input.name)
                        .fetch_one(&mut *tx)
                        .await?;
                        Some(rows::id(&r)?)
                    } else {
                        None
                    }
                }
            };
            if let Some(route) = route {
                sqlx::query(
                    "INSERT INTO route_inbounds (inbound_id, route_id, position) \
                     VALUES ($1, $2, 0)",
                )
                .bind(id)
                .bind(route)
                .execute(&mut *tx)
                .await?;
            }
        }
        self.commit(tx).await?;
        self.inbound(id).await
    }

    async fn update_inbound(
        &self,
        id: Id,
        input: &InboundInput,
        secrets: Option<&InboundSecrets>,
    ) -> Result<Inbound, StoreError> {
        let current = self.inbound(id).await?;
        if current.server_id != input.server_id {
            return Err(StoreError::Refused(FieldError::new(
                "server_id",
                "an inbound cannot move to another server; create a new one",
            )));
        }
        let mut tx = self.begin().await?;
        Self::check_tunnel_port(&mut tx, input.server_id, input.port).await?;
        sqlx::query(
            "UPDATE inbounds SET name = $1, protocol = $2, port = $3, transport = $4, \
             security = $5, host = $6, sni = $7, coefficient = $8, method = $9, flow = $10 \
             WHERE id = $11",
        )
        .bind(&input.name)
        .bind(input.protocol.as_str())
        .bind(i64::from(input.port))
        .bind(json(&input.transport))
        .bind(json(&input.security))
        .bind(&input.host)
        .bind(&input.sni)
        .bind(input.coefficient)
        .bind(&input.method)
        .bind(input.flow.map(Flow::as_str))
        .bind(id)
        .execute(&mut *tx)
        .await
        .map_err(|e| conflict(e, "port", "another inbound of this server uses this port"))?;
        if let Some(s) = secrets {
            sqlx::query(
                "UPDATE inbounds SET ss_server_key = $1, tls_cert_pem = $2, tls_key_pem = $3, \
                 reality_private_key = $4, reality_public_key = $5 WHERE id = $6",
            )
            .bind(&s.ss_server_key)
            .bind(&s.tls_cert_pem)
            .bind(&s.tls_key_pem)
            .bind(&s.reality_private_key)
            .bind(&s.reality_public_key)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        }
        self.commit(tx).await?;
        self.inbound(id).await
    }

    async fn delete_inbound(&self, id: Id) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        sqlx::query("DELETE FROM route_inbounds WHERE inbound_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        let done = sqlx::query("DELETE FROM inbounds WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("inbound"));
        }
        self.commit(tx).await
    }

    async fn cluster_inbounds(
        &self,
        cluster: Id,
    ) -> Result<Vec<(Inbound, InboundSecrets)>, StoreError> {
        self.inbounds_with_secrets(
            "i.server_id IN (SELECT id FROM servers WHERE cluster_id = $1)",
            cluster,
        )
        .await
    }

    async fn routes(&self, cluster: Id) -> Result<Vec<Route>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, cluster_id, name, flag, algorithm, position, is_default FROM routes \
             WHERE cluster_id = $1 ORDER BY position, id",
        )
        .bind(cluster)
        .fetch_all(&self.read)
        .await?;
        let mut routes: Vec<Route> = rows.iter().map(rows::route).collect::<Result<_, _>>()?;
        let members = sqlx::query(
            "SELECT ri.route_id, ri.inbound_id FROM route_inbounds ri \
             JOIN routes r ON r.id = ri.route_id WHERE r.cluster_id = $1 \
             ORDER BY ri.position, ri.inbound_id",
        )
        .bind(cluster)
        .fetch_all(&self.read)
        .await?;
        for m in &members {
            let (route, inbound): (i64, i64) = (m.try_get(0)?, m.try_get(1)?);
            if let Some(r) = routes.iter_mut().find(|r| r.id == route) {
                r.inbound_ids.push(inbound);
            }
        }
        Ok(routes)
    }

    async fn users(&self, query: &UserQuery, now_ms: i64) -> Result<Vec<User>, StoreError> {
        let limit = query.limit.unwrap_or(100).clamp(1, 1000);
        let offset = query.offset.unwrap_or(0);
        let rows = match &query.search {
            Some(s) if !s.is_empty() => {
                let pattern = format!(
                    "%{}%",
                    s.replace('\\', "\\\\")
                        .replace('%', "\\%")
                        .replace('_', "\\_")
                );
                sqlx::query(&format!(
                    "SELECT {USER} FROM users WHERE username LIKE $1 ESCAPE '\\' \
                     ORDER BY id LIMIT $2 OFFSET $3"
                ))
                .bind(pattern)
                .bind(to_i64(limit))
                .bind(to_i64(offset))
                .fetch_all(&self.read)
                .await?
            }
            _ => {
                sqlx::query(&format!(
                    "SELECT {USER} FROM users ORDER BY id LIMIT $1 OFFSET $2"
                ))
                .bind(to_i64(limit))
                .bind(to_i64(offset))
                .fetch_all(&self.read)
                .await?
            }
        };
        let mut users = rows
            .iter()
            .map(|r| rows::user(r, now_ms))
            .collect::<Result<Vec<_>, _>>()?;
        self.fill_clusters(&mut users).await?;
        Ok(users.into_iter().map(|(u, _)| u).collect())
    }

    async fn user_count(&self) -> Result<u64, StoreError> {
        let row = sqlx::query("SELECT COUNT(*) FROM users")
            .fetch_one(&self.read)
            .await?;
        Ok(to_u64(row.try_get(0)?))
    }

    async fn user(&self, id: Id, now_ms: i64) -> Result<User, StoreError> {
        Ok(self.user_full(id, now_ms).await?.0)
    }

    async fn user_by_token(
        &self,
        token: &str,
        now_ms: i64,
    ) -> Result<Option<(User, Credentials)>, StoreError> {
        // The subscription's lookup (by hash, compared in constant time) without
        // the sticky choices.
        Ok(super::RouteStore::subscriber(self, token, now_ms)
            .await?
            .map(|s| (s.user, s.credentials)))
    }

    async fn create_user(
        &self,
        input: &UserInput,
        credentials: &Credentials,
        token: &str,
        now_ms: i64,
    ) -> Result<User, StoreError> {
        let mut tx = self.begin().await?;
        let row = sqlx::query(
            "INSERT INTO users (username, enabled, note, traffic_limit, reset_strategy, \
             expires_ms, on_hold_days, period_started_ms, subscription_token, vless_uuid, \
             trojan_password, ss_seed, created_ms, token_hash, device_limit, address_limit) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) \
             RETURNING id",
        )
        .bind(&input.username)
        .bind(i64::from(input.enabled))
        .bind(&input.note)
        .bind(input.traffic_limit.map(to_i64))
        .bind(input.reset_strategy.as_str())
        .bind(input.expires_ms)
        .bind(input.on_hold_days.map(i64::from))
        .bind(now_ms)
        .bind(token)
        .bind(&credentials.vless_uuid)
        .bind(&credentials.trojan_password)
        .bind(&credentials.ss_seed)
        .bind(now_ms)
        .bind(hash_token(token))
        .bind(input.device_limit.map(i64::from))
        .bind(input.address_limit.map(i64::from))
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| conflict(e, "username", "a user with this name exists"))?;
        let id = rows::id(&row)?;
        Self::set_clusters(&mut tx, id, &input.clusters).await?;
        self.commit(tx).await?;
        self.user(id, now_ms).await
    }

    async fn update_user(
        &self,
        id: Id,
        input: &UserInput,
        now_ms: i64,
    ) -> Result<User, StoreError> {
        let mut tx = self.begin().await?;
        let done = sqlx::query(
            "UPDATE users SET username = $1, enabled = $2, note = $3, traffic_limit = $4, \
             reset_strategy = $5, expires_ms = $6, on_hold_days = $7, device_limit = $8, \
             address_limit = $9 WHERE id = $10",
        )
        .bind(&input.username)
        .bind(i64::from(input.enabled))
        .bind(&input.note)
        .bind(input.traffic_limit.map(to_i64))
        .bind(input.reset_strategy.as_str())
        .bind(input.expires_ms)
        .bind(input.on_hold_days.map(i64::from))
        .bind(input.device_limit.map(i64::from))
        .bind(input.address_limit.map(i64::from))
        .bind(id)
        .execute(&mut *tx)
        .await
        .map_err(|e| conflict(e, "username", "a user with this name exists"))?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("user"));
        }
        Self::set_clusters(&mut tx, id, &input.clusters).await?;
        self.commit(tx).await?;
        self.user(id, now_ms).await
    }

    async fn delete_user(&self, id: Id) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        let done = sqlx::query("DELETE FROM users WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("user"));
        }
        self.commit(tx).await
    }

    async fn set_subscription_token(
        &self,
        id: Id,
        token: &str,
        now_ms: i64,
    ) -> Result<User, StoreError> {
        let mut tx = self.begin().await?;
        let done =
            sqlx::query("UPDATE users SET subscription_token = $1, token_hash = $2 WHERE id = $3")
                .bind(token)
                .bind(hash_token(token))
                .bind(id)
                .execute(&mut *tx)
                .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("user"));
        }
        tx.commit().await?;
        self.user(id, now_ms).await
    }

    async fn reset_usage(&self, id: Id, now_ms: i64) -> Result<User, StoreError> {
        let mut tx = self.begin().await?;
        let done = sqlx::query(
            "UPDATE users SET used_up = 0, used_down = 0, period_started_ms = $1 WHERE id = $2",
        )
        .bind(now_ms)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("user"));
        }
        self.commit(tx).await?;
        self.user(id, now_ms).await
    }

    async fn reset_due(&self, now_ms: i64) -> Result<u64, StoreError> {
        let rows = sqlx::query(
            "SELECT id, reset_strategy, created_ms, period_started_ms FROM users \
             WHERE reset_strategy <> 'none'",
        )
        .fetch_all(&self.read)
        .await?;
        let mut due = Vec::new();
        for r in &rows {
            let strategy: String = r.try_get(1)?;
            let Some(strategy) = crate::model::ResetStrategy::parse(&strategy) else {
                continue;
            };
            let (created, started): (i64, i64) = (r.try_get(2)?, r.try_get(3)?);
            if let Some(start) = period_start(strategy, created, now_ms)
                && start > started
            {
                due.push((r.try_get::<i64, _>(0)?, start));
            }
        }
        if due.is_empty() {
            return Ok(0);
        }
        let mut tx = self.begin().await?;
        for (id, start) in &due {
            sqlx::query(
                "UPDATE users SET used_up = 0, used_down = 0, period_started_ms = $1 \
                 WHERE id = $2 AND period_started_ms < $1",
            )
            .bind(*start)
            .bind(*id)
            .execute(&mut *tx)
            .await?;
        }
        self.commit(tx).await?;
        Ok(due.len() as u64)
    }

    async fn record_traffic(
        &self,
        server_id: Id,
        batch: &TrafficBatch,
        online: &[Id],
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let mut tx = self.begin().await?;
        let moved = sqlx::query(
            "UPDATE servers SET journal_cursor = $1 WHERE id = $2 AND journal_cursor < $1",
        )
        .bind(to_i64(batch.cursor))
        .bind(server_id)
        .execute(&mut *tx)
        .await?
        .rows_affected()
            == 1;
        if moved {
            for (user, up, down) in &batch.users {
                sqlx::query(super::sql_traffic::ADD_USAGE)
                    .bind(to_i64(*up))
                    .bind(to_i64(*down))
                    .bind(to_i64(up.saturating_add(*down)))
                    .bind(*user)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        let mut started = 0;
        for user in online {
            started += sqlx::query(
                "UPDATE users SET first_connected_ms = $1 \
                 WHERE id = $2 AND first_connected_ms IS NULL",
            )
            .bind(now_ms)
            .bind(*user)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            sqlx::query("UPDATE users SET online_ms = $1 WHERE id = $2")
                .bind(now_ms)
                .bind(*user)
                .execute(&mut *tx)
                .await?;
        }
        // Usage moves statuses (limits) and a first connection starts an on-hold
        // clock: announce, so nodes get the users they should have.
        if (moved && !batch.users.is_empty()) || started > 0 {
            self.commit(tx).await?;
        } else {
            tx.commit().await?;
        }
        Ok(moved)
    }

    async fn server_snapshot(&self, id: Id, now_ms: i64) -> Result<ServerSnapshot, StoreError> {
        let server = self.server(id).await?;
        let inbounds = self.inbounds_with_secrets("i.server_id = $1", id).await?;
        let rows = sqlx::query(&format!(
            "SELECT {USER} FROM users WHERE all_clusters = 1 OR id IN \
             (SELECT user_id FROM user_clusters WHERE cluster_id = $1) ORDER BY id"
        ))
        .bind(server.cluster_id)
        .fetch_all(&self.read)
        .await?;
        let users = rows
            .iter()
            .map(|r| rows::user(r, now_ms))
            .collect::<Result<Vec<_>, _>>()?;
        let (tunnels, tunnel_secret) = self.snapshot_tunnels(id).await?;
        Ok(ServerSnapshot {
            server,
            inbounds,
            users,
            tunnels,
            tunnel_secret,
        })
    }

    async fn admin_count(&self) -> Result<u64, StoreError> {
        let row = sqlx::query("SELECT COUNT(*) FROM admins")
            .fetch_one(&self.write)
            .await?;
        Ok(to_u64(row.try_get(0)?))
    }

    async fn create_admin(
        &self,
        username: &str,
        password_hash: &str,
        now_ms: i64,
    ) -> Result<Admin, StoreError> {
        let mut tx = self.begin().await?;
        let row = sqlx::query(
            "INSERT INTO admins (username, password_hash, created_ms) VALUES ($1, $2, $3) \
             RETURNING id",
        )
        .bind(username)
        .bind(password_hash)
        .bind(now_ms)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| conflict(e, "username", "an admin with this name exists"))?;
        let id = rows::id(&row)?;
        tx.commit().await?;
        Ok(Admin {
            id,
            username: username.into(),
            created_ms: now_ms,
        })
    }

    async fn admin_by_username(
        &self,
        username: &str,
    ) -> Result<Option<(Admin, String)>, StoreError> {
        let row = sqlx::query(
            "SELECT id, username, created_ms, password_hash FROM admins WHERE username = $1",
        )
        .bind(username)
        .fetch_optional(&self.read)
        .await?;
        Ok(row
            .map(|r| -> Result<_, sqlx::Error> {
                Ok((
                    Admin {
                        id: r.try_get(0)?,
                        username: r.try_get(1)?,
                        created_ms: r.try_get(2)?,
                    },
                    r.try_get(3)?,
                ))
            })
            .transpose()?)
    }

    async fn create_session(
        &self,
        id_hash: &str,
        admin_id: Id,
        csrf: &str,
        now_ms: i64,
        expires_ms: i64,
    ) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM sessions WHERE expires_ms <= $1")
            .bind(now_ms)
            .execute(&self.write)
            .await?;
        sqlx::query(
            "INSERT INTO sessions (id_hash, admin_id, csrf, created_ms, expires_ms) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(id_hash)
        .bind(admin_id)
        .bind(csrf)
        .bind(now_ms)
        .bind(expires_ms)
        .execute(&self.write)
        .await?;
        Ok(())
    }

    async fn session(
        &self,
        id_hash: &str,
        now_ms: i64,
    ) -> Result<Option<(Admin, String)>, StoreError> {
        let row = sqlx::query(
            "SELECT a.id, a.username, a.created_ms, s.csrf FROM sessions s \
             JOIN admins a ON a.id = s.admin_id WHERE s.id_hash = $1 AND s.expires_ms > $2",
        )
        .bind(id_hash)
        .bind(now_ms)
        .fetch_optional(&self.read)
        .await?;
        Ok(row
            .map(|r| -> Result<_, sqlx::Error> {
                Ok((
                    Admin {
                        id: r.try_get(0)?,
                        username: r.try_get(1)?,
                        created_ms: r.try_get(2)?,
                    },
                    r.try_get(3)?,
                ))
            })
            .transpose()?)
    }

    async fn delete_session(&self, id_hash: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM sessions WHERE id_hash = $1")
            .bind(id_hash)
            .execute(&self.write)
            .await?;
        Ok(())
    }

    async fn create_api_token(
        &self,
        admin_id: Id,
        name: &str,
        token_hash: &str,
        now_ms: i64,
    ) -> Result<ApiToken, StoreError> {
        let row = sqlx::query(
            "INSERT INTO api_tokens (name, token_hash, admin_id, created_ms) \
             VALUES ($1, $2, $3, $4) RETURNING id",
        )
        .bind(name)
        .bind(token_hash)
        .bind(admin_id)
        .bind(now_ms)
        .fetch_one(&self.write)
        .await?;
        Ok(ApiToken {
            id: rows::id(&row)?,
            name: name.into(),
            created_ms: now_ms,
            last_used_ms: None,
            expires_ms: None,
            scope: super::TokenScope::Full,
        })
    }

    async fn api_tokens(&self) -> Result<Vec<ApiToken>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, name, created_ms, last_used_ms, expires_ms, scope FROM api_tokens \
             ORDER BY id",
        )
        .fetch_all(&self.read)
        .await?;
        Ok(rows
            .iter()
            .map(|r| -> Result<_, sqlx::Error> {
                Ok(ApiToken {
                    id: r.try_get(0)?,
                    name: r.try_get(1)?,
                    created_ms: r.try_get(2)?,
                    last_used_ms: r.try_get(3)?,
                    expires_ms: r.try_get(4)?,
                    scope: super::account::scope(r.try_get(5)?),
                })
            })
            .collect::<Result<_, _>>()?)
    }

    async fn api_token_admin(
        &self,
        token_hash: &str,
        now_ms: i64,
    ) -> Result<Option<Admin>, StoreError> {
        let row = sqlx::query(
            "SELECT a.id, a.username, a.created_ms, t.id FROM api_tokens t \
             JOIN admins a ON a.id = t.admin_id WHERE t.token_hash = $1 \
             AND (t.expires_ms IS NULL OR t.expires_ms > $2)",
        )
        .bind(token_hash)
        .bind(now_ms)
        .fetch_optional(&self.read)
        .await?;
        let Some(r) = row else { return Ok(None) };
        let token: i64 = r.try_get(3)?;
        sqlx::query("UPDATE api_tokens SET last_used_ms = $1 WHERE id = $2")
            .bind(now_ms)
            .bind(token)
            .execute(&self.write)
            .await?;
        Ok(Some(Admin {
            id: r.try_get(0)?,
            username: r.try_get(1)?,
            created_ms: r.try_get(2)?,
        }))
    }

    async fn delete_api_token(&self, id: Id) -> Result<(), StoreError> {
        let done = sqlx::query("DELETE FROM api_tokens WHERE id = $1")
            .bind(id)
            .execute(&self.write)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("api token"));
        }
        Ok(())
    }
}
