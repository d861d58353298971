//! Marzban's database, SQLite or MySQL (MariaDB), read as Marzban 0.8 writes it: its
//! users with their proxies' credentials, usage, limits, expiry and status, its
//! admins, nodes and JWT secret, and (from its `xray_config.json`, optional) its
//! inbounds.
//!
//! A file is opened read-only, a MySQL database read in one read-only transaction;
//! its schema version (Alembic's `alembic_version`)
//! must be one this reader knows, else the import is refused naming it. Every value
//! is checked: a row that does not fit is an error naming the table, the row and
//! the column, never a panic.

use std::path::Path;

use sqlx::Row;

use super::cells::Cells;
use super::source_db::{Bind, Dialect, Fetch, read_in_file, read_on_server};
use super::{Field, ImportError};

/// The schema versions (Alembic heads) this reader knows, with the Marzban releases
/// that have them.
pub const KNOWN_SCHEMAS: &[(&str, &str)] = &[("2b231de97dc3", "0.8.x")];

/// The most users read.
pub const MAX_USERS: usize = 200_000;

/// The longest proxy settings read (Marzban's are a UUID or a password and a flow or
/// method: well under this).
const MAX_SETTINGS: usize = 16 * 1024;

/// One Marzban user, as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceUser {
    /// Its name (Marzban's key).
    pub username: String,
    /// `active`, `disabled`, `limited`, `expired` or `on_hold`.
    pub status: String,
    /// Bytes in the current period.
    pub used_traffic: u64,
    /// Bytes in earlier periods (Marzban's reset log).
    pub reset_traffic: u64,
    /// Bytes allowed per period; 0 or none: unlimited.
    pub data_limit: Option<u64>,
    /// `no_reset`, `day`, `week`, `month` or `year`.
    pub reset_strategy: String,
    /// Unix seconds; 0 or none: never.
    pub expire: Option<i64>,
    /// Unix ms.
    pub created_ms: i64,
    /// Unix ms.
    pub sub_revoked_ms: Option<i64>,
    /// The operator's note.
    pub note: Option<String>,
    /// On hold: seconds of validity once the user first connects.
    pub on_hold_expire_duration: Option<i64>,
    /// On hold: when Marzban would start the clock anyway (Unix ms).
    pub on_hold_timeout_ms: Option<i64>,
    /// The admin who owns the user.
    pub admin: Option<String>,
    /// `(type, settings JSON)` per proxy: `VLESS`, `VMess`, `Trojan`, `Shadowsocks`.
    pub proxies: Vec<(String, serde_json::Value)>,
}

/// What the database holds.
#[derive(Clone, Debug, Default)]
pub struct Source {
    /// Alembic's head.
    pub schema: String,
    /// Signs subscription tokens.
    pub secret: String,
    /// Every user.
    pub users: Vec<SourceUser>,
    /// Its admins.
    pub admins: Vec<super::source_admin::SourceAdmin>,
    /// `(name, address, port, api_port)`.
    pub nodes: Vec<(String, String, i64, i64)>,
    /// Inbound tags the database names.
    pub inbound_tags: Vec<String>,
}

/// Reads the Marzban database at `path` (SQLite).
pub async fn read(path: &Path) -> Result<Source, ImportError> {
    read_in_file!(path, read_from, "Marzban")
}

/// Reads the Marzban database at `url` (MySQL or MariaDB:
/// `mysql://USER:PASSWORD@HOST:PORT/DB`) in one read-only transaction.
pub async fn read_url(url: &str) -> Result<Source, ImportError> {
    read_on_server!(url, read_from, "Marzban", mysql: true, postgres: false)
}

/// What both databases hold, read the same way: every value cast to text or a
/// 64-bit integer, so one reading serves both.
async fn read_from<C: Fetch>(
    c: &mut C,
    d: Dialect,
    open: &impl Fn(sqlx::Error) -> ImportError,
) -> Result<Source, ImportError>
where
    usize: sqlx::ColumnIndex<C::Row>,
    String:
        for<'r> sqlx::Decode<'r, <C::Row as Row>::Database> + sqlx::Type<<C::Row as Row>::Database>,
    i64:
        for<'r> sqlx::Decode<'r, <C::Row as Row>::Database> + sqlx::Type<<C::Row as Row>::Database>,
{
    let one = |rows: Vec<C::Row>| -> Result<Option<String>, ImportError> {
        match rows.first() {
            Some(row) => Cells::new(row, "alembic_version", 0).text(0, "version_num"),
            None => Ok(None),
        }
    };
    let schema = match c
        .all(
            &d.sql("SELECT CAST(version_num AS {text}) FROM alembic_version"),
            None,
        )
        .await
    {
        Ok(rows) => one(rows)?.unwrap_or_default(),
        Err(_) => {
            return Err(ImportError::Missing {
                why: "no alembic_version table",
            });
        }
    };
    if !KNOWN_SCHEMAS.iter().any(|(s, _)| *s == schema) {
        return Err(ImportError::UnknownSchema {
            source_panel: "Marzban",
            found: schema,
            known: KNOWN_SCHEMAS
                .iter()
                .map(|(s, r)| format!("{s} ({r})"))
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let secret = c
        .all(
            &d.sql("SELECT CAST(secret_key AS {text}) FROM jwt ORDER BY id LIMIT 1"),
            None,
        )
        .await
        .map_err(open)?;
    let secret = match secret.first() {
        Some(row) => Cells::new(row, "jwt", 1).text(0, "secret_key")?,
        None => None,
    }
    .ok_or_else(|| {
        Field {
            table: "jwt",
            row: 0,
            field: "secret_key",
        }
        .error("no secret".into())
    })?;
    let mut source = Source {
        schema,
        secret,
        ..Source::default()
    };
    let rows = c
        .all(
            &d.sql(
                "SELECT CAST(u.id AS {int}), CAST(u.username AS {text}), \
                 CAST(u.status AS {text}), CAST(u.used_traffic AS {int}), \
                 CAST(u.data_limit AS {int}), CAST(u.expire AS {int}), \
                 CAST(u.created_at AS {text}), CAST(u.data_limit_reset_strategy AS {text}), \
                 CAST(u.sub_revoked_at AS {text}), CAST(u.note AS {text}), \
                 CAST(u.on_hold_expire_duration AS {int}), CAST(u.on_hold_timeout AS {text}), \
                 CAST(a.username AS {text}), \
                 CAST((SELECT COALESCE(SUM(l.used_traffic_at_reset), 0) FROM user_usage_logs l \
                  WHERE l.user_id = u.id) AS {int}) \
                 FROM users u LEFT JOIN admins a ON a.id = u.admin_id ORDER BY u.id \
                 LIMIT {p1}",
            ),
            Some(Bind::Int(i64::try_from(MAX_USERS + 1).unwrap_or(i64::MAX))),
        )
        .await
        .map_err(open)?;
    if rows.len() > MAX_USERS {
        return Err(Field {
            table: "users",
            row: 0,
            field: "id",
        }
        .error(format!("more than {MAX_USERS} users: import them in parts")));
    }
    let proxies_sql = d.sql(
        "SELECT CAST(id AS {int}), CAST(type AS {text}), CAST(settings AS {text}) \
         FROM proxies WHERE user_id = {p1} ORDER BY id {listed}",
    );
    for row in rows {
        let id = Cells::new(&row, "users", 0)
            .number(0, "id")?
            .unwrap_or_default();
        let cells = Cells::new(&row, "users", id);
        let text = |i, field| cells.text(i, field);
        let number = |i, field| cells.number(i, field);
        let bytes = |i, field| cells.bytes(i, field);
        let time = |i, field| cells.time(i, field);
        let username =
            text(1, "username")?.ok_or_else(|| cells.error("username", "empty".into()))?;
        let mut user = SourceUser {
            username,
            status: text(2, "status")?.unwrap_or_default(),
            used_traffic: bytes(3, "used_traffic")?.unwrap_or(0),
            data_limit: bytes(4, "data_limit")?.filter(|n| *n > 0),
            expire: number(5, "expire")?.filter(|n| *n > 0),
            created_ms: time(6, "created_at")?.unwrap_or(0),
            reset_strategy: text(7, "data_limit_reset_strategy")?.unwrap_or_default(),
            sub_revoked_ms: time(8, "sub_revoked_at")?,
            note: text(9, "note")?.filter(|n| !n.is_empty()),
            on_hold_expire_duration: number(10, "on_hold_expire_duration")?.filter(|n| *n > 0),
            on_hold_timeout_ms: time(11, "on_hold_timeout")?,
            admin: text(12, "admin")?,
            reset_traffic: bytes(13, "user_usage_logs.used_traffic_at_reset")?.unwrap_or(0),
            proxies: Vec::new(),
        };
        for p in c
            .all(&proxies_sql, Some(Bind::Int(id)))
            .await
            .map_err(open)?
        {
            let pid = Cells::new(&p, "proxies", 0)
                .number(0, "id")?
                .unwrap_or_default();
            let cells = Cells::new(&p, "proxies", pid);
            let kind = cells.text(1, "type")?.unwrap_or_default();
            let settings = cells.text(2, "settings")?.unwrap_or_default();
            if settings.len() > MAX_SETTINGS {
                return Err(cells.error("settings", format!("longer than {MAX_SETTINGS} bytes")));
            }
            let settings = serde_json::from_str(&settings)
                .map_err(|e| cells.error("settings", e.to_string()))?;
            user.proxies.push((kind, settings));
        }
        source.users.push(user);
    }
    let admins = d.sql(
        "SELECT CAST(id AS {int}), CAST(username AS {text}), \
         CAST(COALESCE(is_sudo, 0) AS {int}), CAST(hashed_password AS {text}) \
         FROM admins ORDER BY id {listed}",
    );
    for row in c.all(&admins, None).await.map_err(open)? {
        let cells = Cells::new(&row, "admins", 0);
        let id = cells.number(0, "id")?.unwrap_or_default();
        let cells = Cells::new(&row, "admins", id);
        source.admins.push(super::source_admin::SourceAdmin {
            name: cells.text(1, "username")?.unwrap_or_default(),
            sudo: cells.flag(2, "is_sudo")?,
            password_hash: cells.text(3, "hashed_password")?,
        });
    }
    let nodes = d.sql(
        "SELECT CAST(id AS {int}), CAST(COALESCE(name, '') AS {text}), \
         CAST(address AS {text}), CAST(port AS {int}), CAST(api_port AS {int}) \
         FROM nodes ORDER BY id {listed}",
    );
    for row in c.all(&nodes, None).await.map_err(open)? {
        let id = Cells::new(&row, "nodes", 0)
            .number(0, "id")?
            .unwrap_or_default();
        let cells = Cells::new(&row, "nodes", id);
        source.nodes.push((
            cells.text(1, "name")?.unwrap_or_default(),
            cells.text(2, "address")?.unwrap_or_default(),
            cells.number(3, "port")?.unwrap_or_default(),
            cells.number(4, "api_port")?.unwrap_or_default(),
        ));
    }
    let inbounds = d.sql("SELECT CAST(tag AS {text}) FROM inbounds ORDER BY id {listed}");
    for row in c.all(&inbounds, None).await.map_err(open)? {
        let tag = Cells::new(&row, "inbounds", 0).text(0, "tag")?;
        source.inbound_tags.push(tag.unwrap_or_default());
    }
    Ok(source)
}
