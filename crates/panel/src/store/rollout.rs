//! Roll-outs of a tunnel's secrets, one algorithm for both kinds:
//! - a re-issued certificate ([`Rollout::PIN`]): the previous pin stays accepted;
//! - rotated credentials ([`Rollout::CREDENTIALS`]): the relay accepts the previous
//!   epoch's credentials too.
//!
//! Either way the previous value is kept until every server of the tunnel (its relay
//! and each origin) is known to run the current one, then dropped, so no half is ever
//! refused by the other while the nodes take their new configs one by one. What each
//! server runs is recorded in the roll-out's table, keyed by (tunnel, server); a value
//! that is no longer the tunnel's current one counts for nothing.

use sqlx::{Any, Row};

use super::{SqlStore, StoreError};
use crate::model::Id;

/// Where one kind of roll-out keeps its state.
#[derive(Clone, Copy, Debug)]
pub(super) struct Rollout {
    /// The `tunnels` column holding the current value.
    current: &'static str,
    /// The `tunnels` column holding the previous value while the roll-out lasts
    /// (NULL: none under way).
    previous: &'static str,
    /// The table recording which value each server runs (`tunnel_id`, `server_id`
    /// and [`Self::value`], one row per tunnel and server).
    table: &'static str,
    /// The table's value column.
    value: &'static str,
}

impl Rollout {
    /// A re-issued certificate: the pins (`cert:<hex>`).
    pub(super) const PIN: Self = Self {
        current: "pin",
        previous: "previous_pin",
        table: "tunnel_pin_rollout",
        value: "pin",
    };

    /// Rotated credentials: the epochs.
    pub(super) const CREDENTIALS: Self = Self {
        current: "credential_epoch",
        previous: "previous_credential_epoch",
        table: "tunnel_credential_rollout",
        value: "epoch",
    };
}

/// Whether a roll-out is over: every member of the tunnel runs the current value.
fn everyone_runs(members: &[Id], running: &[Id]) -> bool {
    members.iter().all(|m| running.contains(m))
}

impl SqlStore {
    /// Records that `server_id` runs these tunnels' values (`(tunnel id, value)`),
    /// ignoring a value that is not its tunnel's current one or a tunnel with no
    /// roll-out under way. A tunnel whose relay and origins all run its current value
    /// drops the previous one and forgets the records. Returns those tunnels; announces
    /// a change only for them (the rest is bookkeeping: nothing a node runs changed).
    pub(super) async fn confirm_rollout<T>(
        &self,
        rollout: Rollout,
        server_id: Id,
        values: &[(Id, T)],
    ) -> Result<Vec<Id>, StoreError>
    where
        T: for<'q> sqlx::Encode<'q, Any> + sqlx::Type<Any> + Clone + Send + Sync + 'static,
    {
        let Rollout {
            current,
            previous,
            table,
            value: column,
        } = rollout;
        let mut tx = self.begin().await?;
        let mut ended = Vec::new();
        for (id, value) in values {
            let row = sqlx::query(&format!(
                "SELECT relay_server_id FROM tunnels \
                 WHERE id = $1 AND {current} = $2 AND {previous} IS NOT NULL"
            ))
            .bind(id)
            .bind(value.clone())
            .fetch_optional(&mut *tx)
            .await?;
            let Some(row) = row else { continue };
            let relay: Id = row.try_get(0)?;
            sqlx::query(&format!(
                "INSERT INTO {table} (tunnel_id, server_id, {column}) VALUES ($1, $2, $3) \
                 ON CONFLICT (tunnel_id, server_id) DO UPDATE SET {column} = excluded.{column}"
            ))
            .bind(id)
            .bind(server_id)
            .bind(value.clone())
            .execute(&mut *tx)
            .await?;
            let mut members: Vec<Id> =
                sqlx::query("SELECT server_id FROM tunnel_origins WHERE tunnel_id = $1")
                    .bind(id)
                    .fetch_all(&mut *tx)
                    .await?
                    .iter()
                    .map(|r| r.try_get::<Id, _>(0))
                    .collect::<Result<_, _>>()?;
            members.push(relay);
            let running: Vec<Id> = sqlx::query(&format!(
                "SELECT server_id FROM {table} WHERE tunnel_id = $1 AND {column} = $2"
            ))
            .bind(id)
            .bind(value.clone())
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|r| r.try_get::<Id, _>(0))
            .collect::<Result<_, _>>()?;
            if everyone_runs(&members, &running) {
                sqlx::query(&format!(
                    "UPDATE tunnels SET {previous} = NULL WHERE id = $1"
                ))
                .bind(id)
                .execute(&mut *tx)
                .await?;
                sqlx::query(&format!("DELETE FROM {table} WHERE tunnel_id = $1"))
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                ended.push(*id);
            }
        }
        if ended.is_empty() {
            // Bookkeeping only: nothing any node runs changed.
            tx.commit().await?;
        } else {
            self.commit(tx).await?;
        }
        Ok(ended)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tunnel::{TunnelCertificate, TunnelInput, TunnelRealityKeys};
    use crate::store::{Changes, ServerInput, Store};

    const NOW: i64 = 1_796_121_000_000;

    #[test]
    fn over_once_every_member_runs_it() {
        assert!(everyone_runs(&[3, 1], &[1, 3]));
        assert!(everyone_runs(&[3, 1], &[1, 2, 3]));
        assert!(!everyone_runs(&[3, 1], &[1]));
        assert!(!everyone_runs(&[3, 1], &[]));
    }

    /// A store with a tunnel of relay `servers[0]` and origins `servers[1..]`, its
    /// certificate re-issued and its credentials rotated: both roll-outs under way.
    async fn tunnel_in_rollouts(dir: &std::path::Path) -> (SqlStore, Id, Vec<Id>) {
        let sql = SqlStore::open_sqlite(&dir.join("panel.db"), Changes::default())
            .await
            .unwrap();
        let store: &dyn Store = &sql;
        let cluster = store.create_cluster("c", NOW).await.unwrap();
        let mut servers = Vec::new();
        for name in ["relay", "a", "b"] {
            let input = ServerInput {
                cluster_id: cluster.id,
                name: name.into(),
                address: "203.0.113.7".into(),
                allow_private_destinations: false,
            };
            servers.push(store.create_server(&input, NOW).await.unwrap().id);
        }
        let input: TunnelInput = serde_json::from_value(serde_json::json!({
            "name": "t", "relay_server_id": servers[0], "origin_server_ids": &servers[1..],
        }))
        .unwrap();
        let cert = |n: u8| TunnelCertificate {
            cert_pem: format!("cert {n}"),
            key_pem: format!("key {n}"),
            pin: format!("cert:{n:064}"),
        };
        let reality = TunnelRealityKeys {
            private_key: "private".into(),
            public_key: "public".into(),
            short_id: "0102030405060708".into(),
        };
        let t = store
            .create_tunnel(&input, &cert(1), &reality, NOW)
            .await
            .unwrap();
        store
            .reissue_tunnel_certificate(t.id, &cert(2))
            .await
            .unwrap();
        store.rotate_tunnel_credentials(t.id).await.unwrap();
        (sql, t.id, servers)
    }

    /// What `server` confirming `value` for `tunnel` ended.
    async fn confirm<T>(
        sql: &SqlStore,
        rollout: Rollout,
        tunnel: Id,
        server: Id,
        value: &T,
    ) -> Vec<Id>
    where
        T: for<'q> sqlx::Encode<'q, Any> + sqlx::Type<Any> + Clone + Send + Sync + 'static,
    {
        sql.confirm_rollout(rollout, server, &[(tunnel, value.clone())])
            .await
            .unwrap()
    }

    /// The same steps end either roll-out at the same moment: a stale value counts for
    /// nothing, a confirmation twice is one, and the last member to run the current
    /// value ends it (once).
    async fn steps<T>(sql: &SqlStore, rollout: Rollout, tunnel: Id, servers: &[Id], old: T, new: T)
    where
        T: for<'q> sqlx::Encode<'q, Any> + sqlx::Type<Any> + Clone + Send + Sync + 'static,
    {
        let none: Vec<Id> = Vec::new();
        let (relay, a, b) = (servers[0], servers[1], servers[2]);
        assert_eq!(confirm(sql, rollout, tunnel, a, &old).await, none);
        assert_eq!(confirm(sql, rollout, tunnel, relay, &new).await, none);
        assert_eq!(confirm(sql, rollout, tunnel, relay, &new).await, none);
        assert_eq!(confirm(sql, rollout, tunnel, a, &new).await, none);
        assert_eq!(confirm(sql, rollout, tunnel, b, &old).await, none);
        assert_eq!(confirm(sql, rollout, tunnel, b, &new).await, vec![tunnel]);
        // Over: nothing more to end.
        assert_eq!(confirm(sql, rollout, tunnel, b, &new).await, none);
        assert_eq!(confirm(sql, rollout, tunnel, relay, &new).await, none);
    }

    #[tokio::test]
    async fn one_algorithm_for_pins_and_credentials() {
        let dir = tempfile::tempdir().unwrap();
        let (sql, tunnel, servers) = tunnel_in_rollouts(dir.path()).await;
        let store: &dyn Store = &sql;
        let t = store.tunnel(tunnel).await.unwrap();
        assert!(t.previous_pin.is_some() && t.previous_credential_epoch.is_some());

        let (old_pin, new_pin) = (format!("cert:{:064}", 1), format!("cert:{:064}", 2));
        steps(&sql, Rollout::PIN, tunnel, &servers, old_pin, new_pin).await;
        let t = store.tunnel(tunnel).await.unwrap();
        assert_eq!(t.previous_pin, None);
        assert_eq!(
            t.previous_credential_epoch,
            Some(0),
            "the other roll-out goes on"
        );

        steps(&sql, Rollout::CREDENTIALS, tunnel, &servers, 0i64, 1i64).await;
        let t = store.tunnel(tunnel).await.unwrap();
        assert_eq!((t.credential_epoch, t.previous_credential_epoch), (1, None));
    }
}
