//! [`TunnelStore`] over sqlx, for both backends (see [`super::tunnels`] for the rules).

use async_trait::async_trait;
use sqlx::any::AnyRow;
use sqlx::{Any, Row, Transaction};
use switchyard_tunnel::credentials::{TunnelSecret, certificate_name, tunnel_tag};

use super::rollout::Rollout;
use super::rows;
use super::sql::conflict;
use super::tunnels::TunnelStore;
use super::{ServerStore, SqlStore, Store, StoreError};
use crate::model::snapshot::SnapshotTunnel;
use crate::model::tunnel::{
    DEFAULT_LINKS, Tunnel, TunnelBalancing, TunnelInput, TunnelMode, TunnelOrigin, TunnelProfile,
    UsagePoint, UsageStep, origin_name,
};
use crate::model::tunnel::{TunnelCertificate, TunnelRealityKeys};
use crate::model::{FieldError, Id};

type Tx = Transaction<'static, Any>;

const COLUMNS: &str = "id, name, relay_server_id, mode, balancing, links, window_mib, \
    profiles, rules, enabled, pin, previous_pin, credential_epoch, previous_credential_epoch, \
    reality_public_key, created_ms";

fn mode_str(m: TunnelMode) -> &'static str {
    match m {
        TunnelMode::Reverse => "reverse",
        TunnelMode::Direct => "direct",
    }
}

fn balancing_str(b: TunnelBalancing) -> &'static str {
    match b {
        TunnelBalancing::Distribute => "distribute",
        TunnelBalancing::Priority => "priority",
    }
}

fn decode<T: serde::de::DeserializeOwned>(column: &str, text: &str) -> Result<T, sqlx::Error> {
    serde_json::from_str(text).map_err(|e| sqlx::Error::ColumnDecode {
        index: column.to_owned(),
        source: Box::new(e),
    })
}

fn json(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// A tunnel row, its origins still to fill in.
fn tunnel(r: &AnyRow) -> Result<Tunnel, sqlx::Error> {
    let name: String = r.try_get("name")?;
    let mode: String = r.try_get("mode")?;
    let balancing: String = r.try_get("balancing")?;
    let links = usize::try_from(r.try_get::<i64, _>("links")?).unwrap_or(DEFAULT_LINKS);
    let mut profiles: Vec<TunnelProfile> =
        decode("profiles", &r.try_get::<String, _>("profiles")?)?;
    // Profiles stored before links were per profile have the tunnel's.
    for p in &mut profiles {
        p.links.get_or_insert(links);
    }
    Ok(Tunnel {
        id: r.try_get("id")?,
        tag: tunnel_tag(&name),
        certificate_name: certificate_name(&name),
        name,
        certificate_pin: r.try_get("pin")?,
        previous_pin: r.try_get("previous_pin")?,
        credential_epoch: r.try_get("credential_epoch")?,
        previous_credential_epoch: r.try_get("previous_credential_epoch")?,
        reality_public_key: r.try_get("reality_public_key")?,
        relay_server_id: r.try_get("relay_server_id")?,
        origins: Vec::new(),
        mode: if mode == "direct" {
            TunnelMode::Direct
        } else {
            TunnelMode::Reverse
        },
        balancing: if balancing == "priority" {
            TunnelBalancing::Priority
        } else {
            TunnelBalancing::Distribute
        },
        links,
        window_mib: u32::try_from(r.try_get::<i64, _>("window_mib")?).unwrap_or(16),
        profiles,
        rules: decode("rules", &r.try_get::<String, _>("rules")?)?,
        enabled: r.try_get::<i64, _>("enabled")? != 0,
        created_ms: r.try_get("created_ms")?,
    })
}

/// Refuses servers that don't exist, naming the field.
async fn check_servers(tx: &mut Tx, input: &TunnelInput) -> Result<(), StoreError> {
    let fields = std::iter::once(("relay_server_id".to_owned(), input.relay_server_id)).chain(
        input
            .origin_server_ids
            .iter()
            .enumerate()
            .map(|(i, id)| (format!("origin_server_ids[{i}]"), *id)),
    );
    for (field, id) in fields {
        let found = sqlx::query("SELECT id FROM servers WHERE id = $1")
            .bind(id)
            .fetch_optional(&mut **tx)
            .await?;
        if found.is_none() {
            return Err(StoreError::Refused(FieldError::new(
                field,
                format!("there is no server {id}"),
            )));
        }
    }
    Ok(())
}

/// Refuses a profile port that an inbound of the listening servers holds.
async fn check_ports(tx: &mut Tx, input: &TunnelInput) -> Result<(), StoreError> {
    let listeners: Vec<Id> = match input.mode {
        TunnelMode::Reverse => vec![input.relay_server_id],
        TunnelMode::Direct => input.origin_server_ids.clone(),
    };
    for (i, p) in input.profiles.iter().enumerate() {
        for server in &listeners {
            let taken = sqlx::query("SELECT name FROM inbounds WHERE server_id = $1 AND port = $2")
                .bind(*server)
                .bind(i64::from(p.port))
                .fetch_optional(&mut **tx)
                .await?;
            if let Some(row) = taken {
                let inbound: String = row.try_get(0)?;
                return Err(StoreError::Conflict(FieldError::new(
                    format!("profiles[{i}].port"),
                    format!(
                        "server {server}'s inbound {inbound:?} listens on port {}",
                        p.port
                    ),
                )));
            }
        }
    }
    Ok(())
}

async fn set_origins(tx: &mut Tx, tunnel: Id, input: &TunnelInput) -> Result<(), StoreError> {
    sqlx::query("DELETE FROM tunnel_origins WHERE tunnel_id = $1")
        .bind(tunnel)
        .execute(&mut **tx)
        .await?;
    for (position, server) in (0i64..).zip(&input.origin_server_ids) {
        sqlx::query(
            "INSERT INTO tunnel_origins (tunnel_id, server_id, position, addresses) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(tunnel)
        .bind(*server)
        .bind(position)
        .bind(json(&input.addresses_of(*server)))
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

impl SqlStore {
    async fn fill_origins(&self, tunnels: &mut [Tunnel]) -> Result<(), StoreError> {
        let rows = sqlx::query(
            "SELECT tunnel_id, server_id, addresses FROM tunnel_origins \
             ORDER BY tunnel_id, position",
        )
        .fetch_all(&self.read)
        .await?;
        for r in &rows {
            let (tunnel, server): (Id, Id) = (r.try_get(0)?, r.try_get(1)?);
            if let Some(t) = tunnels.iter_mut().find(|t| t.id == tunnel) {
                t.origins.push(TunnelOrigin {
                    server_id: server,
                    name: origin_name(server),
                    addresses: decode("addresses", &r.try_get::<String, _>(2)?)?,
                });
            }
        }
        Ok(())
    }

    /// The tunnels `server` is the relay or an origin of, with what their halves
    /// need, and the panel's tunnel secret (made on first need, once for every
    /// instance) when there are any.
    pub(super) async fn snapshot_tunnels(
        &self,
        server: Id,
    ) -> Result<(Vec<SnapshotTunnel>, Option<TunnelSecret>), StoreError> {
        let mine: Vec<Tunnel> = self
            .tunnels()
            .await?
            .into_iter()
            .filter(|t| {
                t.relay_server_id == server || t.origins.iter().any(|o| o.server_id == server)
            })
            .collect();
        if mine.is_empty() {
            return Ok((Vec::new(), None));
        }
        let secret = self.tunnel_secret().await?;
        let mut out = Vec::with_capacity(mine.len());
        for tunnel in mine {
            let certificate = self.tunnel_certificate(tunnel.id).await?;
            let reality = self.tunnel_reality_keys(tunnel.id).await?;
            let relay = ServerStore::server(self, tunnel.relay_server_id).await?;
            let mut origins = Vec::with_capacity(tunnel.origins.len());
            for o in &tunnel.origins {
                origins.push(ServerStore::server(self, o.server_id).await?);
            }
            out.push(SnapshotTunnel {
                tunnel,
                certificate,
                reality,
                relay,
                origins,
            });
        }
        Ok((out, Some(secret)))
    }

    /// The panel's tunnel secret: 32 random bytes, made once and kept in `settings`
    /// (every instance on the database agrees on it). It never leaves the panel: nodes
    /// get only the credentials derived from it.
    pub async fn tunnel_secret(&self) -> Result<TunnelSecret, StoreError> {
        // Read first: this runs on every heartbeat of a node in a tunnel, and the
        // secret exists after its first use; only then is a write transaction needed.
        let stored = sqlx::query("SELECT value FROM settings WHERE key = 'tunnel_secret'")
            .fetch_optional(&self.read)
            .await?
            .map(|r| r.try_get::<String, _>(0))
            .transpose()?;
        let text = match stored {
            Some(text) => text,
            None => {
                let mut bytes = [0u8; 32];
                rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut bytes);
                let fresh: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
                Store::setting_or_init(self, "tunnel_secret", fresh).await?
            }
        };
        let mut bytes = [0u8; 32];
        let ok = text.len() == 64
            && bytes.iter_mut().enumerate().all(|(i, b)| {
                u8::from_str_radix(text.get(2 * i..2 * i + 2).unwrap_or("zz"), 16)
                    .map(|v| *b = v)
                    .is_ok()
            });
        if !ok {
            return Err(StoreError::Refused(FieldError::new(
                "settings.tunnel_secret",
                "is not 64 hex digits: the database was edited by hand",
            )));
        }
        Ok(TunnelSecret(bytes))
    }

    /// Refuses `port` for an inbound of `server` when a tunnel listens on it there (a
    /// reverse-mode relay, a direct-mode origin), naming the field and the tunnel.
    pub(super) async fn check_tunnel_port(
        tx: &mut Tx,
        server: Id,
        port: u16,
    ) -> Result<(), StoreError> {
        let rows = sqlx::query(
            "SELECT name, mode, profiles, relay_server_id FROM tunnels WHERE relay_server_id = $1 \
             OR id IN (SELECT tunnel_id FROM tunnel_origins WHERE server_id = $1) ORDER BY id",
        )
        .bind(server)
        .fetch_all(&mut **tx)
        .await?;
        for r in &rows {
            let (name, mode): (String, String) = (r.try_get(0)?, r.try_get(1)?);
            let relay: Id = r.try_get(3)?;
            let listens = (mode == "direct") != (relay == server);
            let profiles: Vec<crate::model::tunnel::TunnelProfile> =
                decode("profiles", &r.try_get::<String, _>(2)?)?;
            if listens && profiles.iter().any(|p| p.port == port) {
                return Err(StoreError::Conflict(FieldError::new(
                    "port",
                    format!("tunnel {name:?} listens on this port on this server"),
                )));
            }
        }
        Ok(())
    }

    /// The tunnels `server` is in (as relay or origin), by name: why it can't go.
    pub(super) async fn tunnels_of_server(
        tx: &mut Tx,
        server: Id,
    ) -> Result<Vec<String>, StoreError> {
        let rows = sqlx::query(
            "SELECT name FROM tunnels WHERE relay_server_id = $1 OR id IN \
             (SELECT tunnel_id FROM tunnel_origins WHERE server_id = $1) ORDER BY id",
        )
        .bind(server)
        .fetch_all(&mut **tx)
        .await?;
        Ok(rows
            .iter()
            .map(|r| r.try_get(0))
            .collect::<Result<_, _>>()?)
    }
}

#[async_trait]
impl TunnelStore for SqlStore {
    async fn tunnels(&self) -> Result<Vec<Tunnel>, StoreError> {
        let rows = sqlx::query(&format!("SELECT {COLUMNS} FROM tunnels ORDER BY id"))
            .fetch_all(&self.read)
            .await?;
        let mut out = rows.iter().map(tunnel).collect::<Result<Vec<_>, _>>()?;
        self.fill_origins(&mut out).await?;
        Ok(out)
    }

    async fn tunnel(&self, id: Id) -> Result<Tunnel, StoreError> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM tunnels WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.read)
            .await?
            .ok_or(StoreError::NotFound("tunnel"))?;
        let mut one = [tunnel(&row)?];
        self.fill_origins(&mut one).await?;
        let [t] = one;
        Ok(t)
    }

    async fn create_tunnel(
        &self,
        input: &TunnelInput,
        certificate: &TunnelCertificate,
        reality: &TunnelRealityKeys,
        now_ms: i64,
    ) -> Result<Tunnel, StoreError> {
        let mut tx = self.begin().await?;
        check_servers(&mut tx, input).await?;
        check_ports(&mut tx, input).await?;
        let row = sqlx::query(
            "INSERT INTO tunnels (name, relay_server_id, mode, balancing, links, profiles, \
             rules, enabled, cert_pem, key_pem, pin, created_ms, window_mib, \
             reality_private_key, reality_public_key, reality_short_id) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) \
             RETURNING id",
        )
        .bind(&input.name)
        .bind(input.relay_server_id)
        .bind(mode_str(input.mode))
        .bind(balancing_str(input.balancing))
        .bind(i64::try_from(input.links).unwrap_or(4))
        .bind(json(&input.profiles))
        .bind(json(&input.rules))
        .bind(i64::from(input.enabled))
        .bind(&certificate.cert_pem)
        .bind(&certificate.key_pem)
        .bind(&certificate.pin)
        .bind(now_ms)
        .bind(i64::from(input.window_mib))
        .bind(&reality.private_key)
        .bind(&reality.public_key)
        .bind(&reality.short_id)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| conflict(e, "name", "a tunnel with this name exists"))?;
        let id = rows::id(&row)?;
        set_origins(&mut tx, id, input).await?;
        self.commit(tx).await?;
        self.tunnel(id).await
    }

    async fn init_tunnel_reality_keys(
        &self,
        id: Id,
        reality: &TunnelRealityKeys,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        sqlx::query(
            "UPDATE tunnels SET reality_private_key = $1, reality_public_key = $2, \
             reality_short_id = $3 WHERE id = $4 AND reality_public_key IS NULL",
        )
        .bind(&reality.private_key)
        .bind(&reality.public_key)
        .bind(&reality.short_id)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        // Nothing a node runs changed yet: the change that uses the keys announces.
        tx.commit().await?;
        Ok(())
    }

    async fn tunnel_reality_keys(&self, id: Id) -> Result<Option<TunnelRealityKeys>, StoreError> {
        let row = sqlx::query(
            "SELECT reality_private_key, reality_public_key, reality_short_id FROM tunnels \
             WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.read)
        .await?
        .ok_or(StoreError::NotFound("tunnel"))?;
        let (private_key, public_key, short_id): (Option<String>, Option<String>, Option<String>) =
            (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
        Ok(match (private_key, public_key, short_id) {
            (Some(private_key), Some(public_key), Some(short_id)) => Some(TunnelRealityKeys {
                private_key,
                public_key,
                short_id,
            }),
            _ => None,
        })
    }

    async fn update_tunnel(&self, id: Id, input: &TunnelInput) -> Result<Tunnel, StoreError> {
        let mut tx = self.begin().await?;
        let row = sqlx::query("SELECT name FROM tunnels WHERE id = $1")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(StoreError::NotFound("tunnel"))?;
        let name: String = row.try_get(0)?;
        if name != input.name {
            return Err(StoreError::Refused(FieldError::new(
                "name",
                format!(
                    "a tunnel's name cannot change after saving (its tag, credentials and \
                     certificate derive from it): this one is {name:?}; duplicate the tunnel \
                     to get one with another name"
                ),
            )));
        }
        check_servers(&mut tx, input).await?;
        check_ports(&mut tx, input).await?;
        sqlx::query(
            "UPDATE tunnels SET relay_server_id = $1, mode = $2, balancing = $3, links = $4, \
             profiles = $5, rules = $6, enabled = $7, window_mib = $8 WHERE id = $9",
        )
        .bind(input.relay_server_id)
        .bind(mode_str(input.mode))
        .bind(balancing_str(input.balancing))
        .bind(i64::try_from(input.links).unwrap_or(4))
        .bind(json(&input.profiles))
        .bind(json(&input.rules))
        .bind(i64::from(input.enabled))
        .bind(i64::from(input.window_mib))
        .bind(id)
        .execute(&mut *tx)
        .await?;
        set_origins(&mut tx, id, input).await?;
        self.commit(tx).await?;
        self.tunnel(id).await
    }

    async fn delete_tunnel(&self, id: Id) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        let done = sqlx::query("DELETE FROM tunnels WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("tunnel"));
        }
        self.commit(tx).await
    }

    async fn reissue_tunnel_certificate(
        &self,
        id: Id,
        certificate: &TunnelCertificate,
    ) -> Result<Tunnel, StoreError> {
        let mut tx = self.begin().await?;
        let done = sqlx::query(
            "UPDATE tunnels SET previous_pin = pin, pin = $1, cert_pem = $2, key_pem = $3 \
             WHERE id = $4",
        )
        .bind(&certificate.pin)
        .bind(&certificate.cert_pem)
        .bind(&certificate.key_pem)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("tunnel"));
        }
        self.commit(tx).await?;
        self.tunnel(id).await
    }

    async fn rotate_tunnel_credentials(&self, id: Id) -> Result<Tunnel, StoreError> {
        let mut tx = self.begin().await?;
        let done = sqlx::query(
            "UPDATE tunnels SET previous_credential_epoch = credential_epoch, \
             credential_epoch = credential_epoch + 1 WHERE id = $1",
        )
        .bind(id)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound("tunnel"));
        }
        sqlx::query("DELETE FROM tunnel_credential_rollout WHERE tunnel_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        self.commit(tx).await?;
        self.tunnel(id).await
    }

    async fn confirm_tunnel_credentials(
        &self,
        server_id: Id,
        epochs: &[(Id, i64)],
    ) -> Result<Vec<Id>, StoreError> {
        self.confirm_rollout(Rollout::CREDENTIALS, server_id, epochs)
            .await
    }

    async fn confirm_tunnel_pins(
        &self,
        server_id: Id,
        pins: &[(Id, String)],
    ) -> Result<Vec<Id>, StoreError> {
        self.confirm_rollout(Rollout::PIN, server_id, pins).await
    }

    async fn record_tunnel_usage(&self, id: Id, bytes: u64, now_ms: i64) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        for step in UsageStep::ALL {
            if bytes > 0 {
                sqlx::query(
                    "INSERT INTO tunnel_usage (tunnel_id, step_ms, at_ms, bytes) \
                     VALUES ($1, $2, $3, $4) ON CONFLICT (tunnel_id, step_ms, at_ms) \
                     DO UPDATE SET bytes = tunnel_usage.bytes + excluded.bytes",
                )
                .bind(id)
                .bind(step.ms())
                .bind(step.start(now_ms))
                .bind(rows::to_i64(bytes))
                .execute(&mut *tx)
                .await
                .map_err(|e| conflict(e, "id", "no such tunnel"))?;
            }
            sqlx::query(
                "DELETE FROM tunnel_usage WHERE tunnel_id = $1 AND step_ms = $2 AND at_ms < $3",
            )
            .bind(id)
            .bind(step.ms())
            .bind(step.start(now_ms - step.kept_ms()))
            .execute(&mut *tx)
            .await?;
        }
        // Traffic, not configuration: committed without an announcement.
        tx.commit().await?;
        Ok(())
    }

    async fn tunnel_usage(
        &self,
        id: Id,
        step: UsageStep,
        since_ms: i64,
    ) -> Result<Vec<UsagePoint>, StoreError> {
        let found = sqlx::query(
            "SELECT at_ms, bytes FROM tunnel_usage WHERE tunnel_id = $1 AND step_ms = $2 \
             AND at_ms >= $3 ORDER BY at_ms",
        )
        .bind(id)
        .bind(step.ms())
        .bind(step.start(since_ms))
        .fetch_all(&self.read)
        .await?;
        Ok(found
            .iter()
            .map(|r| {
                Ok(UsagePoint {
                    at_ms: r.try_get(0)?,
                    bytes: rows::to_u64(r.try_get(1)?),
                })
            })
            .collect::<Result<_, sqlx::Error>>()?)
    }

    async fn tunnel_certificate(&self, id: Id) -> Result<TunnelCertificate, StoreError> {
        let row = sqlx::query("SELECT cert_pem, key_pem, pin FROM tunnels WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.read)
            .await?
            .ok_or(StoreError::NotFound("tunnel"))?;
        Ok(TunnelCertificate {
            cert_pem: row.try_get(0)?,
            key_pem: row.try_get(1)?,
            pin: row.try_get(2)?,
        })
    }
}
