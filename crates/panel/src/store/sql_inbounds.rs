//! [`InboundStore`] over sqlx, for both backends (see [`super::inbounds`] for the rules).

use async_trait::async_trait;
use sqlx::Row;

use super::inbounds::{InboundInput, InboundStore};
use super::rows::{self, INBOUND, INBOUND_FROM};
use super::sql::conflict;
use super::{SqlStore, StoreError};
use crate::model::{FieldError, Flow, Id, Inbound, InboundSecrets};

fn json(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

impl SqlStore {
    /// Inbounds matching `filter` (one `$1` parameter, bound to `id`) with their
    /// secrets, for rendering configs and subscriptions.
    pub(super) async fn inbounds_with_secrets(
        &self,
        filter: &str,
        id: Id,
    ) -> Result<Vec<(Inbound, InboundSecrets)>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {INBOUND}, i.ss_server_key, i.tls_cert_pem, i.tls_key_pem, \
             i.reality_private_key, i.hy2_obfs_password FROM {INBOUND_FROM} \
             WHERE {filter} ORDER BY i.id"
        ))
        .bind(id)
        .fetch_all(&self.read)
        .await?;
        Ok(rows
            .iter()
            .map(|r| Ok((rows::inbound(r)?, rows::inbound_secrets(r)?)))
            .collect::<Result<Vec<_>, sqlx::Error>>()?)
    }
}

#[async_trait]
impl InboundStore for SqlStore {
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
             flow, reality_private_key, reality_public_key, hysteria2, hy2_obfs_password, \
             trusted_proxies, rules) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
             $18, $19, $20, $21) RETURNING id",
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
        .bind(input.hysteria2.as_ref().map(|h| json(&h.public())))
        .bind(&secrets.hy2_obfs_password)
        .bind(json(&input.trusted_proxies))
        .bind(json(&input.rules))
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
             security = $5, host = $6, sni = $7, coefficient = $8, method = $9, flow = $10, \
             hysteria2 = $11, trusted_proxies = $12, rules = $13 WHERE id = $14",
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
        .bind(input.hysteria2.as_ref().map(|h| json(&h.public())))
        .bind(json(&input.trusted_proxies))
        .bind(json(&input.rules))
        .bind(id)
        .execute(&mut *tx)
        .await
        .map_err(|e| conflict(e, "port", "another inbound of this server uses this port"))?;
        if let Some(s) = secrets {
            sqlx::query(
                "UPDATE inbounds SET ss_server_key = $1, tls_cert_pem = $2, tls_key_pem = $3, \
                 reality_private_key = $4, reality_public_key = $5, hy2_obfs_password = $6 \
                 WHERE id = $7",
            )
            .bind(&s.ss_server_key)
            .bind(&s.tls_cert_pem)
            .bind(&s.tls_key_pem)
            .bind(&s.reality_private_key)
            .bind(&s.reality_public_key)
            .bind(&s.hy2_obfs_password)
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
}
