//! Remnawave's PostgreSQL database, read as Remnawave 2.3 to 3.3 leave it: its users
//! with their credentials, usage, limits, expiry, status and subscription short ids,
//! their known devices (HWIDs) and device limits, its inbounds (from its config
//! profiles), internal squads, nodes and admins.
//!
//! The database is read in one read-only transaction (a consistent snapshot; nothing
//! is ever written). Its release is told by `_prisma_migrations`
//! ([`super::remnawave_schema`]): a migration Remnawave 3.3.2 does not have, or a
//! release before 2.3, is refused naming it. Every value is checked: a row that does
//! not fit is an error naming the table, the row and the column, never a panic. The
//! database's address is named in errors without its password.

use std::str::FromStr;

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{ConnectOptions, Connection, Row};

use super::remnawave_schema::{self, Layout, Refusal};
use super::report::{InboundSeen, inbound_seen};
use super::source_db::{CONNECT_DEADLINE, READ_DEADLINE, timed_out};
use super::{Field, ImportError};

/// The most users read from one database.
pub const MAX_USERS: i64 = 200_000;
/// The most known devices read from one database.
const MAX_DEVICES: i64 = 1_000_000;
/// The longest text read from a text column (names, passwords, notes, HWIDs).
const MAX_TEXT: usize = 4096;
/// The longest inbound (`raw_inbound`) read.
const MAX_INBOUND: usize = 256 * 1024;
/// The most inbounds, nodes, squads or admins listed.
const MAX_LISTED: i64 = 10_000;

/// One Remnawave user, as stored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceUser {
    /// Its key (`id`, or `t_id` before 3.0).
    pub id: i64,
    /// Its subscription's short id: the last part of its subscription link.
    pub short_uuid: String,
    /// Its name.
    pub username: String,
    /// `ACTIVE`, `DISABLED`, `LIMITED` or `EXPIRED`.
    pub status: String,
    /// Bytes allowed per period; 0 is unlimited.
    pub traffic_limit: u64,
    /// `NO_RESET`, `DAY`, `WEEK`, `MONTH` or `MONTH_ROLLING`.
    pub strategy: String,
    /// When it expires (Unix ms).
    pub expire_ms: i64,
    /// When its link was last revoked (Unix ms).
    pub sub_revoked_ms: Option<i64>,
    /// Trojan password.
    pub trojan_password: String,
    /// VLESS UUID (also its Hysteria 2 password in Remnawave).
    pub vless_uuid: String,
    /// Shadowsocks password (its 2022 key is this text's bytes, base64).
    pub ss_password: String,
    /// The operator's note.
    pub description: String,
    /// Devices at most: none follows the panel's setting, 0 is no limit.
    pub device_limit: Option<i64>,
    /// Unix ms.
    pub created_ms: i64,
    /// Bytes in the current period.
    pub used: u64,
    /// Bytes over its life.
    pub lifetime: u64,
    /// Its internal squads' names.
    pub squads: Vec<String>,
}

/// A device Remnawave saw fetch a user's subscription.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceDevice {
    /// Its user's key.
    pub user: i64,
    /// The app's `x-hwid`.
    pub hwid: String,
    /// Platform and OS version, as the app sent them.
    pub os: String,
    /// Device model.
    pub model: String,
    /// The app's User-Agent.
    pub user_agent: String,
    /// First seen (Unix ms).
    pub created_ms: i64,
    /// Last seen (Unix ms).
    pub updated_ms: i64,
}

/// Remnawave's device-limit setting for users without their own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceSettings {
    /// Whether Remnawave enforces device limits at all.
    pub enabled: bool,
    /// The limit of a user without one of their own; 0 or none: no limit.
    pub fallback: Option<i64>,
}

/// What the database holds.
#[derive(Clone, Debug, Default)]
pub struct Source {
    /// The newest migration (the schema version).
    pub schema: String,
    /// Remnawave's releases with this layout.
    pub releases: &'static str,
    /// Every user, by key.
    pub users: Vec<SourceUser>,
    /// Every known device.
    pub devices: Vec<SourceDevice>,
    /// The device-limit setting.
    pub device_settings: DeviceSettings,
    /// Its inbounds (from its config profiles).
    pub inbounds: Vec<InboundSeen>,
    /// Its internal squads: name and member count.
    pub squads: Vec<(String, i64)>,
    /// Its nodes: name, address, the node service's port.
    pub nodes: Vec<(String, String, i64)>,
    /// Its admins: name, role (`ADMIN`, `API`).
    pub admins: Vec<(String, String)>,
}

/// `url`'s database as errors name it: host, port and name, never the password.
pub fn describe(url: &str) -> String {
    match PgConnectOptions::from_str(url) {
        Ok(o) => format!(
            "postgres://{}:{}/{}",
            o.get_host(),
            o.get_port(),
            o.get_database().unwrap_or("")
        ),
        Err(_) => "the database URL".to_owned(),
    }
}

/// Reads the Remnawave database at `url` (`postgres://user:password@host/db`).
pub async fn read(url: &str) -> Result<Source, ImportError> {
    let database = describe(url);
    let open = |source| ImportError::Database {
        database: database.clone(),
        source,
    };
    let options = PgConnectOptions::from_str(url)
        .map_err(open)?
        .application_name("switchyard-import")
        .disable_statement_logging();
    let mut c = tokio::time::timeout(CONNECT_DEADLINE, PgConnection::connect_with(&options))
        .await
        .map_err(|_| open(timed_out("connecting", CONNECT_DEADLINE)))?
        .map_err(open)?;
    tokio::time::timeout(READ_DEADLINE, read_from(&mut c, &database))
        .await
        .map_err(|_| open(timed_out("reading it", READ_DEADLINE)))?
}

/// [`read`] on the connection `c` to `database` (as errors name it).
async fn read_from(c: &mut PgConnection, database: &str) -> Result<Source, ImportError> {
    let open = |source| ImportError::Database {
        database: database.to_owned(),
        source,
    };
    // One consistent snapshot, and no write can slip through.
    sqlx::query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .execute(&mut *c)
        .await
        .map_err(open)?;
    let has_table: bool =
        sqlx::query_scalar("SELECT to_regclass('public._prisma_migrations') IS NOT NULL")
            .fetch_one(&mut *c)
            .await
            .map_err(open)?;
    if !has_table {
        return Err(ImportError::NotTheSource {
            path: database.into(),
            source_panel: "Remnawave",
            why: "no _prisma_migrations table",
        });
    }
    let applied: Vec<String> = sqlx::query_scalar(
        "SELECT migration_name FROM _prisma_migrations \
         WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL LIMIT 1000",
    )
    .fetch_all(&mut *c)
    .await
    .map_err(open)?;
    let newest = remnawave_schema::latest(&applied).unwrap_or("").to_owned();
    let layout = remnawave_schema::layout(&applied).map_err(|r| match r {
        Refusal::Unknown(name) => ImportError::UnknownSchema {
            source_panel: "Remnawave",
            found: format!("with migration {name}"),
            known: "2.3.0 to 3.3.2".into(),
        },
        Refusal::TooOld(last) => ImportError::UnknownSchema {
            source_panel: "Remnawave",
            found: format!("{last} (before 2.3.0: upgrade Remnawave first)"),
            known: "2.3.0 to 3.3.2".into(),
        },
        Refusal::Empty => ImportError::NotTheSource {
            path: database.into(),
            source_panel: "Remnawave",
            why: "no migration recorded",
        },
    })?;
    let users = users(&mut *c, layout).await.map_err(&open)??;
    let devices = devices(&mut *c, layout).await.map_err(&open)??;
    let device_settings = device_settings(&mut *c).await.map_err(&open)?;
    let inbounds = inbounds(&mut *c).await.map_err(&open)??;
    let squads = sqlx::query(
        "SELECT s.name, (SELECT COUNT(*) FROM internal_squad_members m \
         WHERE m.internal_squad_uuid = s.uuid) FROM internal_squads s \
         ORDER BY s.view_position, s.name LIMIT $1",
    )
    .bind(MAX_LISTED)
    .fetch_all(&mut *c)
    .await
    .map_err(open)?
    .iter()
    .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
    .collect::<Result<_, sqlx::Error>>()
    .map_err(open)?;
    let nodes = sqlx::query(
        "SELECT name, address, COALESCE(port, 0)::bigint FROM nodes ORDER BY name LIMIT $1",
    )
    .bind(MAX_LISTED)
    .fetch_all(&mut *c)
    .await
    .map_err(open)?
    .iter()
    .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
    .collect::<Result<_, sqlx::Error>>()
    .map_err(open)?;
    let admins = pairs(
        &mut *c,
        "SELECT username, role FROM admin ORDER BY username LIMIT $1",
    )
    .await
    .map_err(open)?;
    sqlx::query("COMMIT").execute(&mut *c).await.map_err(open)?;
    Ok(Source {
        schema: newest,
        releases: layout.releases(),
        users,
        devices,
        device_settings,
        inbounds,
        squads,
        nodes,
        admins,
    })
}

/// A timestamp column as Unix ms (Remnawave stores UTC without a zone).
fn ms(column: &str) -> String {
    format!("floor(EXTRACT(EPOCH FROM {column}) * 1000)::bigint")
}

/// A text column of `row`, bounded.
fn text(row: &sqlx::postgres::PgRow, i: usize, f: &Field) -> Result<String, ImportError> {
    let v: Option<String> = row.try_get(i).map_err(|e| f.error(e.to_string()))?;
    let v = v.unwrap_or_default();
    if v.len() > MAX_TEXT {
        return Err(f.error(format!("longer than {MAX_TEXT} bytes")));
    }
    Ok(v)
}

/// A byte count: never negative.
fn bytes(row: &sqlx::postgres::PgRow, i: usize, f: &Field) -> Result<u64, ImportError> {
    let v: i64 = row.try_get(i).map_err(|e| f.error(e.to_string()))?;
    u64::try_from(v).map_err(|_| f.error(format!("{v} is negative")))
}

type Read<T> = Result<Result<T, ImportError>, sqlx::Error>;

async fn users(c: &mut PgConnection, layout: Layout) -> Read<Vec<SourceUser>> {
    let id = layout.user_id();
    let sql = format!(
        "SELECT u.{id}, u.short_uuid, u.username, u.status, u.traffic_limit_bytes, \
         u.traffic_limit_strategy, {}, {}, u.trojan_password, u.vless_uuid::text, \
         u.ss_password, u.description, u.hwid_device_limit::bigint, {}, \
         COALESCE(t.used_traffic_bytes, 0), COALESCE(t.lifetime_used_traffic_bytes, 0), \
         ARRAY(SELECT s.name FROM internal_squad_members m JOIN internal_squads s \
         ON s.uuid = m.internal_squad_uuid WHERE m.user_id = u.{id} ORDER BY s.name) \
         FROM users u LEFT JOIN user_traffic t ON t.{id} = u.{id} ORDER BY u.{id} LIMIT $1",
        ms("u.expire_at"),
        ms("u.sub_revoked_at"),
        ms("u.created_at"),
    );
    let rows = sqlx::query(&sql).bind(MAX_USERS + 1).fetch_all(c).await?;
    if rows.len() as i64 > MAX_USERS {
        return Ok(Err(ImportError::Field {
            table: "users",
            row: 0,
            field: "*",
            message: format!("more than {MAX_USERS} users"),
        }));
    }
    Ok(rows.iter().map(user).collect())
}

fn user(r: &sqlx::postgres::PgRow) -> Result<SourceUser, ImportError> {
    let key: i64 = r.try_get(0).map_err(|e| ImportError::Field {
        table: "users",
        row: 0,
        field: "id",
        message: e.to_string(),
    })?;
    let f = |field| Field {
        table: "users",
        row: key,
        field,
    };
    let get_i64 = |i: usize, name| -> Result<Option<i64>, ImportError> {
        r.try_get(i)
            .map_err(|e: sqlx::Error| f(name).error(e.to_string()))
    };
    let squads: Vec<String> = r
        .try_get(16)
        .map_err(|e| f("internal_squad_members").error(e.to_string()))?;
    Ok(SourceUser {
        id: key,
        short_uuid: text(r, 1, &f("short_uuid"))?,
        username: text(r, 2, &f("username"))?,
        status: text(r, 3, &f("status"))?,
        traffic_limit: bytes(r, 4, &f("traffic_limit_bytes"))?,
        strategy: text(r, 5, &f("traffic_limit_strategy"))?,
        expire_ms: get_i64(6, "expire_at")?.unwrap_or(0),
        sub_revoked_ms: get_i64(7, "sub_revoked_at")?,
        trojan_password: text(r, 8, &f("trojan_password"))?,
        vless_uuid: text(r, 9, &f("vless_uuid"))?,
        ss_password: text(r, 10, &f("ss_password"))?,
        description: text(r, 11, &f("description"))?,
        device_limit: get_i64(12, "hwid_device_limit")?,
        created_ms: get_i64(13, "created_at")?.unwrap_or(0),
        used: bytes(r, 14, &f("used_traffic_bytes"))?,
        lifetime: bytes(r, 15, &f("lifetime_used_traffic_bytes"))?,
        squads,
    })
}

async fn devices(c: &mut PgConnection, layout: Layout) -> Read<Vec<SourceDevice>> {
    let (user, join) = match layout {
        Layout::V2 {
            devices_by_uuid: true,
        } => ("u.t_id", "JOIN users u ON u.uuid = d.user_uuid"),
        _ => ("d.user_id", ""),
    };
    let sql = format!(
        "SELECT {user}, d.hwid, concat_ws(' ', d.platform, d.os_version), d.device_model, \
         d.user_agent, {}, {} FROM hwid_user_devices d {join} ORDER BY 1, d.hwid LIMIT $1",
        ms("d.created_at"),
        ms("d.updated_at"),
    );
    let rows = sqlx::query(&sql).bind(MAX_DEVICES + 1).fetch_all(c).await?;
    if rows.len() as i64 > MAX_DEVICES {
        return Ok(Err(ImportError::Field {
            table: "hwid_user_devices",
            row: 0,
            field: "*",
            message: format!("more than {MAX_DEVICES} devices"),
        }));
    }
    Ok(rows
        .iter()
        .map(|r| {
            let user: i64 = r.try_get(0).map_err(|e| ImportError::Field {
                table: "hwid_user_devices",
                row: 0,
                field: "user_id",
                message: e.to_string(),
            })?;
            let f = |field| Field {
                table: "hwid_user_devices",
                row: user,
                field,
            };
            let when = |i: usize, name| -> Result<i64, ImportError> {
                let v: Option<i64> = r.try_get(i).map_err(|e| f(name).error(e.to_string()))?;
                Ok(v.unwrap_or(0))
            };
            Ok(SourceDevice {
                user,
                hwid: text(r, 1, &f("hwid"))?,
                os: text(r, 2, &f("platform"))?,
                model: text(r, 3, &f("device_model"))?,
                user_agent: text(r, 4, &f("user_agent"))?,
                created_ms: when(5, "created_at")?,
                updated_ms: when(6, "updated_at")?,
            })
        })
        .collect())
}

async fn device_settings(c: &mut PgConnection) -> Result<DeviceSettings, sqlx::Error> {
    let row = sqlx::query(
        "SELECT COALESCE((hwid_settings->>'enabled')::boolean, false), \
         CASE WHEN jsonb_typeof(hwid_settings->'fallbackDeviceLimit') = 'number' \
         THEN (hwid_settings->>'fallbackDeviceLimit')::numeric::bigint END \
         FROM subscription_settings LIMIT 1",
    )
    .fetch_optional(c)
    .await?;
    let Some(row) = row else {
        return Ok(DeviceSettings::default());
    };
    Ok(DeviceSettings {
        enabled: row.try_get(0)?,
        fallback: row.try_get(1)?,
    })
}

async fn inbounds(c: &mut PgConnection) -> Read<Vec<InboundSeen>> {
    let rows = sqlx::query(
        "SELECT tag, type, COALESCE(port, 0)::bigint, raw_inbound::text \
         FROM config_profile_inbounds ORDER BY tag LIMIT $1",
    )
    .bind(MAX_LISTED)
    .fetch_all(c)
    .await?;
    Ok(rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let f = |field| Field {
                table: "config_profile_inbounds",
                row: i as i64,
                field,
            };
            let tag = text(r, 0, &f("tag"))?;
            let protocol = text(r, 1, &f("type"))?;
            let port: i64 = r.try_get(2).map_err(|e| f("port").error(e.to_string()))?;
            let raw: Option<String> = r
                .try_get(3)
                .map_err(|e| f("raw_inbound").error(e.to_string()))?;
            let raw = raw.unwrap_or_default();
            if raw.len() > MAX_INBOUND {
                return Err(f("raw_inbound").error(format!("longer than {MAX_INBOUND} bytes")));
            }
            let value: serde_json::Value = if raw.is_empty() {
                serde_json::Value::Null
            } else {
                serde_json::from_str(&raw).map_err(|e| f("raw_inbound").error(e.to_string()))?
            };
            let mut seen = inbound_seen(
                tag,
                protocol,
                u64::try_from(port).unwrap_or(0),
                value.get("streamSettings"),
            );
            // The profile's inbound, with the port and tag its row has.
            if let serde_json::Value::Object(mut whole) = value {
                whole.insert("tag".into(), seen.tag.clone().into());
                whole.entry("port").or_insert(port.into());
                seen.xray = Some(super::inbound_plan::XrayInbound(whole.into()));
            }
            Ok(seen)
        })
        .collect())
}

async fn pairs(c: &mut PgConnection, sql: &str) -> Result<Vec<(String, String)>, sqlx::Error> {
    sqlx::query(sql)
        .bind(MAX_LISTED)
        .fetch_all(c)
        .await?
        .iter()
        .map(|r| {
            let a: Option<String> = r.try_get(0)?;
            let b: Option<String> = r.try_get(1)?;
            Ok((a.unwrap_or_default(), b.unwrap_or_default()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server on 127.0.0.1 that takes the connection and never answers: the
    /// import ends at the deadline, naming the database without its password.
    #[tokio::test(start_paused = true)]
    async fn a_server_that_does_not_answer_is_an_error_not_a_hung_import() {
        let (port, held) = super::super::source_db::silent_server().await;
        let started = tokio::time::Instant::now();
        let Err(e) = read(&format!("postgres://u:s3cret@127.0.0.1:{port}/remnawave")).await else {
            panic!("connected to nothing")
        };
        assert_eq!(started.elapsed(), CONNECT_DEADLINE);
        assert_eq!(
            e.to_string(),
            format!(
                "postgres://127.0.0.1:{port}/remnawave: error communicating with database: \
                 connecting took longer than 30 s"
            )
        );
        held.abort();
    }
}
