//! [`ServerStore`] over sqlx, for both backends (see [`super::servers`] for the rules).

use async_trait::async_trait;
use sqlx::{Any, Row, Transaction};

use super::rows::{self, SERVER, USER, to_i64, to_u64};
use super::servers::{JoinRefusal, ServerInput, ServerPoint, ServerReport, ServerStore};
use super::sql::conflict;
use super::{SqlStore, StoreError};
use crate::model::snapshot::ServerSnapshot;
use crate::model::tunnel::UsageStep;
use crate::model::{Cluster, FieldError, Id, Server, ServerState};

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

#[async_trait]
impl ServerStore for SqlStore {
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
             capacity_last_ms = COALESCE($11, capacity_last_ms), \
             node_version = COALESCE($12, node_version), \
             node_binary_sha256 = COALESCE($13, node_binary_sha256) WHERE id = $14",
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
        .bind(report.node_version.as_deref())
        .bind(report.binary_sha256.as_deref())
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

    async fn server_pin(&self, id: Id) -> Result<Option<String>, StoreError> {
        self.server_pin_of(id).await
    }

    async fn ssh_host_key(&self, id: Id) -> Result<Option<String>, StoreError> {
        self.ssh_host_key_of(id).await
    }

    async fn pin_ssh_host_key(&self, id: Id, fingerprint: &str) -> Result<(), StoreError> {
        self.pin_ssh_host_key_of(id, fingerprint).await
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

    async fn consume_join_token(
        &self,
        secret_hash: &str,
        now_ms: i64,
    ) -> Result<Result<Id, JoinRefusal>, StoreError> {
        self.consume_join_token_tx(secret_hash, now_ms).await
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
}
