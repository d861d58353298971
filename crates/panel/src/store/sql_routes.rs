//! [`RouteStore`] over sqlx, for both backends (see [`super::routes`] for the rules).

use async_trait::async_trait;
use sqlx::{Any, Row, Transaction};

use subtle::ConstantTimeEq;

use super::routes::{
    Device, DeviceOutcome, DeviceSeen, MAX_DEVICES, RouteInput, RouteStore, Subscriber,
};
use super::rows::{self, USER};
use super::sql::{Backend, conflict};
use super::token_hash::hash_token;
use super::{InboundStore, SqlStore, StoreError};
use crate::model::{FieldError, Id, Inbound, Route};

type Tx = Transaction<'static, Any>;

/// The cluster of `route`, or not found.
async fn route_cluster(tx: &mut Tx, route: Id) -> Result<Id, StoreError> {
    let row = sqlx::query("SELECT cluster_id FROM routes WHERE id = $1")
        .bind(route)
        .fetch_optional(&mut **tx)
        .await?;
    match row {
        Some(r) => Ok(r.try_get(0)?),
        None => Err(StoreError::NotFound("route")),
    }
}

/// Replaces `route`'s pool with `ids` (in that order), moving them from other
/// routes; inbounds of the pool not in `ids` are detached.
async fn set_pool(tx: &mut Tx, route: Id, cluster: Id, ids: &[Id]) -> Result<(), StoreError> {
    for id in ids {
        let row = sqlx::query(
            "SELECT s.cluster_id FROM inbounds i JOIN servers s ON s.id = i.server_id \
             WHERE i.id = $1",
        )
        .bind(*id)
        .fetch_optional(&mut **tx)
        .await?;
        let of: Option<Id> = row.map(|r| r.try_get(0)).transpose()?;
        match of {
            None => {
                return Err(StoreError::Refused(FieldError::new(
                    "inbound_ids",
                    format!("inbound {id} does not exist"),
                )));
            }
            Some(c) if c != cluster => {
                return Err(StoreError::Refused(FieldError::new(
                    "inbound_ids",
                    format!("inbound {id} is in another cluster"),
                )));
            }
            Some(_) => {}
        }
    }
    sqlx::query("DELETE FROM route_inbounds WHERE route_id = $1")
        .bind(route)
        .execute(&mut **tx)
        .await?;
    for (position, id) in ids.iter().enumerate() {
        sqlx::query(
            "INSERT INTO route_inbounds (inbound_id, route_id, position) VALUES ($1, $2, $3) \
             ON CONFLICT (inbound_id) DO UPDATE SET route_id = excluded.route_id, \
             position = excluded.position",
        )
        .bind(*id)
        .bind(route)
        .bind(position as i64)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// Writes positions `0..n` in the order of `ids`.
async fn renumber(tx: &mut Tx, ids: &[Id]) -> Result<(), StoreError> {
    for (position, id) in ids.iter().enumerate() {
        sqlx::query("UPDATE routes SET position = $1 WHERE id = $2")
            .bind(position as i64)
            .bind(*id)
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

/// The cluster's route ids in their order.
async fn order(tx: &mut Tx, cluster: Id) -> Result<Vec<Id>, StoreError> {
    let rows = sqlx::query("SELECT id FROM routes WHERE cluster_id = $1 ORDER BY position, id")
        .bind(cluster)
        .fetch_all(&mut **tx)
        .await?;
    Ok(rows
        .iter()
        .map(|r| r.try_get(0))
        .collect::<Result<_, _>>()?)
}

fn device(r: &sqlx::any::AnyRow) -> Result<Device, sqlx::Error> {
    Ok(Device {
        id: r.try_get("id")?,
        user_id: r.try_get("user_id")?,
        hwid: r.try_get("hwid")?,
        os: r.try_get("os")?,
        model: r.try_get("model")?,
        user_agent: r.try_get("user_agent")?,
        first_seen_ms: r.try_get("first_seen_ms")?,
        last_seen_ms: r.try_get("last_seen_ms")?,
    })
}

#[async_trait]
impl RouteStore for SqlStore {
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

    async fn route(&self, id: Id) -> Result<Route, StoreError> {
        let row = sqlx::query("SELECT cluster_id FROM routes WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.read)
            .await?;
        let Some(row) = row else {
            return Err(StoreError::NotFound("route"));
        };
        let cluster: Id = row.try_get(0)?;
        self.routes(cluster)
            .await?
            .into_iter()
            .find(|r| r.id == id)
            .ok_or(StoreError::NotFound("route"))
    }

    async fn create_route(
        &self,
        cluster: Id,
        input: &RouteInput,
        now_ms: i64,
    ) -> Result<Route, StoreError> {
        let mut tx = self.begin().await?;
        let exists = sqlx::query("SELECT id FROM clusters WHERE id = $1")
            .bind(cluster)
            .fetch_optional(&mut *tx)
            .await?;
        if exists.is_none() {
            return Err(StoreError::NotFound("cluster"));
        }
        let next: i64 =
            sqlx::query("SELECT COALESCE(MAX(position) + 1, 0) FROM routes WHERE cluster_id = $1")
                .bind(cluster)
                .fetch_one(&mut *tx)
                .await?
                .try_get(0)?;
        let row = sqlx::query(
            "INSERT INTO routes (cluster_id, name, flag, algorithm, position, is_default, \
             created_ms) VALUES ($1, $2, $3, $4, $5, 0, $6) RETURNING id",
        )
        .bind(cluster)
        .bind(&input.name)
        .bind(&input.flag)
        .bind(input.algorithm.as_str())
        .bind(next)
        .bind(now_ms)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| conflict(e, "name", "a route with this name exists"))?;
        let id = rows::id(&row)?;
        if let Some(ids) = &input.inbound_ids {
            set_pool(&mut tx, id, cluster, ids).await?;
        }
        self.commit(tx).await?;
        self.route(id).await
    }

    async fn update_route(&self, id: Id, input: &RouteInput) -> Result<Route, StoreError> {
        let mut tx = self.begin().await?;
        let cluster = route_cluster(&mut tx, id).await?;
        sqlx::query("UPDATE routes SET name = $1, flag = $2, algorithm = $3 WHERE id = $4")
            .bind(&input.name)
            .bind(&input.flag)
            .bind(input.algorithm.as_str())
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(|e| conflict(e, "name", "a route with this name exists"))?;
        if let Some(ids) = &input.inbound_ids {
            set_pool(&mut tx, id, cluster, ids).await?;
        }
        self.commit(tx).await?;
        self.route(id).await
    }

    async fn delete_route(&self, id: Id) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        let cluster = route_cluster(&mut tx, id).await?;
        for table in ["route_inbounds", "sticky_choices"] {
            sqlx::query(&format!("DELETE FROM {table} WHERE route_id = $1"))
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        sqlx::query("DELETE FROM routes WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        let rest = order(&mut tx, cluster).await?;
        renumber(&mut tx, &rest).await?;
        self.commit(tx).await
    }

    async fn move_route(&self, id: Id, by: i64) -> Result<Vec<Route>, StoreError> {
        let mut tx = self.begin().await?;
        let cluster = route_cluster(&mut tx, id).await?;
        let mut ids = order(&mut tx, cluster).await?;
        let at = ids.iter().position(|r| *r == id).unwrap_or(0);
        let to = (at as i64 + by).clamp(0, ids.len() as i64 - 1) as usize;
        let moved = ids.remove(at);
        ids.insert(to, moved);
        renumber(&mut tx, &ids).await?;
        self.commit(tx).await?;
        self.routes(cluster).await
    }

    async fn order_routes(&self, cluster: Id, ids: &[Id]) -> Result<Vec<Route>, StoreError> {
        let mut tx = self.begin().await?;
        let mut current = order(&mut tx, cluster).await?;
        let mut given = ids.to_vec();
        current.sort_unstable();
        given.sort_unstable();
        if current != given {
            return Err(StoreError::Refused(FieldError::new(
                "route_ids",
                "must list every route of the cluster exactly once",
            )));
        }
        renumber(&mut tx, ids).await?;
        self.commit(tx).await?;
        self.routes(cluster).await
    }

    async fn attach_inbound(&self, inbound: Id, route: Option<Id>) -> Result<Inbound, StoreError> {
        let mut tx = self.begin().await?;
        let row = sqlx::query(
            "SELECT s.cluster_id FROM inbounds i JOIN servers s ON s.id = i.server_id \
             WHERE i.id = $1",
        )
        .bind(inbound)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            return Err(StoreError::NotFound("inbound"));
        };
        let cluster: Id = row.try_get(0)?;
        match route {
            None => {
                sqlx::query("DELETE FROM route_inbounds WHERE inbound_id = $1")
                    .bind(inbound)
                    .execute(&mut *tx)
                    .await?;
            }
            Some(route) => {
                let of = match route_cluster(&mut tx, route).await {
                    Err(StoreError::NotFound(_)) => {
                        return Err(StoreError::Refused(FieldError::new(
                            "route_id",
                            "no such route",
                        )));
                    }
                    other => other?,
                };
                if of != cluster {
                    return Err(StoreError::Refused(FieldError::new(
                        "route_id",
                        "the route is in another cluster than the inbound",
                    )));
                }
                let next: i64 = sqlx::query(
                    "SELECT COALESCE(MAX(position) + 1, 0) FROM route_inbounds \
                     WHERE route_id = $1 AND inbound_id <> $2",
                )
                .bind(route)
                .bind(inbound)
                .fetch_one(&mut *tx)
                .await?
                .try_get(0)?;
                // Already there: it keeps its place.
                sqlx::query(
                    "INSERT INTO route_inbounds (inbound_id, route_id, position) \
                     VALUES ($1, $2, $3) ON CONFLICT (inbound_id) DO UPDATE SET \
                     route_id = excluded.route_id, position = excluded.position \
                     WHERE route_inbounds.route_id <> excluded.route_id",
                )
                .bind(inbound)
                .bind(route)
                .bind(next)
                .execute(&mut *tx)
                .await?;
            }
        }
        self.commit(tx).await?;
        InboundStore::inbound(self, inbound).await
    }

    async fn subscriber(&self, token: &str, now_ms: i64) -> Result<Option<Subscriber>, StoreError> {
        // `string_agg` is in both backends (SQLite since 3.44; sqlx bundles a newer
        // one); `CAST(.. AS TEXT)` too.
        let row = sqlx::query(&format!(
            "SELECT {USER}, routing, (SELECT string_agg(CAST(s.route_id AS TEXT) || ':' || \
             CAST(s.inbound_id AS TEXT), ',') FROM sticky_choices s WHERE s.user_id = \
             users.id) AS sticky FROM users WHERE token_hash = $1"
        ))
        .bind(hash_token(token))
        .fetch_optional(&self.read)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let stored: String = row.try_get("subscription_token")?;
        if !bool::from(stored.as_bytes().ct_eq(token.as_bytes())) {
            return Ok(None);
        }
        let sticky: Option<String> = row.try_get("sticky")?;
        let sticky = sticky
            .iter()
            .flat_map(|s| s.split(','))
            .filter_map(|pair| {
                let (r, i) = pair.split_once(':')?;
                Some((r.parse().ok()?, i.parse().ok()?))
            })
            .collect();
        let routing = super::sql_routing::decode("users", row.try_get("routing")?)?;
        let mut one = vec![rows::user(&row, now_ms)?];
        self.fill_clusters(&mut one).await?;
        let (user, credentials) = one.remove(0);
        Ok(Some(Subscriber {
            user,
            credentials,
            sticky,
            routing,
        }))
    }

    async fn sticky_choices(&self, user: Id) -> Result<Vec<(Id, Id)>, StoreError> {
        let rows =
            sqlx::query("SELECT route_id, inbound_id FROM sticky_choices WHERE user_id = $1")
                .bind(user)
                .fetch_all(&self.read)
                .await?;
        Ok(rows
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect::<Result<_, sqlx::Error>>()?)
    }

    async fn put_sticky(
        &self,
        user: Id,
        choices: &[(Id, Id)],
        now_ms: i64,
    ) -> Result<(), StoreError> {
        if choices.is_empty() {
            return Ok(());
        }
        let mut tx = self.write.begin().await?;
        for (route, inbound) in choices {
            sqlx::query(
                "INSERT INTO sticky_choices (user_id, route_id, inbound_id, chosen_ms) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (user_id, route_id) DO UPDATE SET \
                 inbound_id = excluded.inbound_id, chosen_ms = excluded.chosen_ms",
            )
            .bind(user)
            .bind(*route)
            .bind(*inbound)
            .bind(now_ms)
            .execute(&mut *tx)
            .await
            .map_err(|e| conflict(e, "route", "no such user or route"))?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn devices(&self, user: Id) -> Result<Vec<Device>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, user_id, hwid, os, model, user_agent, first_seen_ms, last_seen_ms \
             FROM devices WHERE user_id = $1 ORDER BY last_seen_ms DESC, id",
        )
        .bind(user)
        .fetch_all(&self.read)
        .await?;
        Ok(rows.iter().map(device).collect::<Result<_, _>>()?)
    }

    async fn register_device(
        &self,
        user: Id,
        seen: &DeviceSeen,
        limit: Option<u32>,
        now_ms: i64,
    ) -> Result<DeviceOutcome, StoreError> {
        // Not announced: devices change no node's config.
        let mut tx = self.write.begin().await?;
        let known = sqlx::query(
            "UPDATE devices SET last_seen_ms = $1, os = $2, model = $3, user_agent = $4 \
             WHERE user_id = $5 AND hwid = $6",
        )
        .bind(now_ms)
        .bind(&seen.os)
        .bind(&seen.model)
        .bind(&seen.user_agent)
        .bind(user)
        .bind(&seen.hwid)
        .execute(&mut *tx)
        .await?;
        if known.rows_affected() > 0 {
            tx.commit().await?;
            return Ok(DeviceOutcome::Known);
        }
        if self.backend() == Backend::Postgres {
            // Two new devices at once must not both pass the count (SQLite has one
            // writer, so its transactions are serial already).
            sqlx::query("SELECT id FROM users WHERE id = $1 FOR UPDATE")
                .bind(user)
                .execute(&mut *tx)
                .await?;
        }
        let count: i64 = sqlx::query("SELECT COUNT(*) FROM devices WHERE user_id = $1")
            .bind(user)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
        match limit {
            Some(limit) if count >= i64::from(limit) => return Ok(DeviceOutcome::OverLimit),
            Some(_) => {}
            None if count >= i64::from(MAX_DEVICES) => {
                // No limit, but a bounded list: the device seen least recently makes
                // room (an app reinstalled long ago, or a made-up id).
                sqlx::query(
                    "DELETE FROM devices WHERE id IN (SELECT id FROM devices \
                     WHERE user_id = $1 ORDER BY last_seen_ms, id LIMIT $2)",
                )
                .bind(user)
                .bind(count - i64::from(MAX_DEVICES) + 1)
                .execute(&mut *tx)
                .await?;
            }
            None => {}
        }
        // Two first fetches of one device at once: one inserts, the other does nothing.
        sqlx::query(
            "INSERT INTO devices (user_id, hwid, os, model, user_agent, first_seen_ms, \
             last_seen_ms) VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT DO NOTHING",
        )
        .bind(user)
        .bind(&seen.hwid)
        .bind(&seen.os)
        .bind(&seen.model)
        .bind(&seen.user_agent)
        .bind(now_ms)
        .execute(&mut *tx)
        .await
        .map_err(|e| conflict(e, "user", "no such user"))?;
        tx.commit().await?;
        Ok(DeviceOutcome::Registered)
    }

    async fn delete_device(&self, user: Id, id: Id) -> Result<(), StoreError> {
        let done = sqlx::query("DELETE FROM devices WHERE id = $1 AND user_id = $2")
            .bind(id)
            .bind(user)
            .execute(&self.write)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("device"));
        }
        Ok(())
    }
}
