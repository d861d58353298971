//! PasarGuard's database, SQLite (`db.sqlite3`) or on a server (PostgreSQL, MySQL,
//! MariaDB, named by URL), read as PasarGuard 1.0 to 5.2 write it: its users with the credentials in their `proxy_settings`, usage, limits,
//! expiry, status and (from 4.0) device limit and known devices; its admins, nodes,
//! JWT secret and the inbounds of its core configs.
//!
//! PasarGuard is Marzban's fork: the users keep Marzban's fields, but the
//! credentials moved into one JSON column, the expiry became a date, and its
//! subscription tokens name the user's id. The file is opened read-only; its schema
//! version (Alembic's `alembic_version`) must be the head of a release this reader
//! knows, else the import is refused naming it. Every value is checked: a row that
//! does not fit is an error naming the table, the row and the column.

use std::path::Path;

use sqlx::Row;

use super::cells::Cells;
use super::report::{self, InboundSeen};
use super::source_db::{Bind, Dialect, Fetch, read_in_file, read_on_server, texts};
use super::{Field, ImportError};

/// How the tables this reader reads are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// 1.0 to 3.2: no devices.
    Groups,
    /// 4.0 on: `users.hwid_limit` and `user_hwids`.
    Devices,
}

/// The schema versions (Alembic heads) this reader knows: the releases that end on
/// each, and the layout.
pub const KNOWN_SCHEMAS: &[(&str, &str, Layout)] = &[
    ("084b8004104c", "1.0.0-1.3.1", Layout::Groups),
    ("8350e561677a", "1.3.2", Layout::Groups),
    ("5943013d0e49", "1.4.x", Layout::Groups),
    ("797420faec8d", "1.5.0-1.6.1", Layout::Groups),
    ("99076844dee6", "1.7.x", Layout::Groups),
    ("a0a1125e46b1", "1.8.x", Layout::Groups),
    ("ee97c01bfbaf", "1.9.0-1.11.0", Layout::Groups),
    ("5213b80a795c", "2.0.0-2.0.1", Layout::Groups),
    ("2a1176f0c666", "2.0.2", Layout::Groups),
    ("20e2a5cf1e40", "2.1.0-2.2.0", Layout::Groups),
    ("a1b2c3d4e5f6", "3.0.x", Layout::Groups),
    ("af2d644dda44", "3.1.0", Layout::Groups),
    ("73c78c6a9b24", "3.2.x", Layout::Groups),
    ("f02194c811d6", "4.0.x", Layout::Devices),
    ("6a7e2f9c1d4b", "5.0.0", Layout::Devices),
    ("f9c69a49f544", "5.0.1", Layout::Devices),
    ("a3b4c5d6e7f8", "5.0.2-5.0.3", Layout::Devices),
    ("f976bfcf4738", "5.1.0", Layout::Devices),
    ("fb32155473c1", "5.2.x", Layout::Devices),
];

/// The most users read.
pub const MAX_USERS: usize = 200_000;
/// The most devices read.
pub const MAX_DEVICES: usize = 1_000_000;
/// The longest `proxy_settings` read (PasarGuard's are UUIDs, passwords and a
/// WireGuard key pair: well under this).
const MAX_SETTINGS: usize = 16 * 1024;
/// The longest core config read for its inbounds.
const MAX_CORE_CONFIG: usize = 4 * 1024 * 1024;

/// One PasarGuard user, as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceUser {
    /// Its id (what its subscription tokens name).
    pub id: i64,
    /// Its name.
    pub username: String,
    /// `active`, `disabled`, `limited`, `expired` or `on_hold`.
    pub status: String,
    /// Bytes in the current period.
    pub used_traffic: u64,
    /// Bytes in earlier periods (the reset log).
    pub reset_traffic: u64,
    /// Bytes allowed per period; none: unlimited.
    pub data_limit: Option<u64>,
    /// `no_reset`, `day`, `week`, `month` or `year`.
    pub reset_strategy: String,
    /// Unix ms; none: never.
    pub expire_ms: Option<i64>,
    /// Unix ms.
    pub created_ms: i64,
    /// Unix ms.
    pub sub_revoked_ms: Option<i64>,
    /// The operator's note.
    pub note: Option<String>,
    /// On hold: seconds of validity once the user first connects.
    pub on_hold_expire_duration: Option<i64>,
    /// On hold: when PasarGuard would start the clock anyway (Unix ms).
    pub on_hold_timeout_ms: Option<i64>,
    /// The admin who owns the user.
    pub admin: Option<String>,
    /// Devices allowed (4.0 on); none or 0: no limit.
    pub hwid_limit: Option<i64>,
    /// `{"vless": {"id", "flow"}, "trojan": {"password"}, "shadowsocks": …}`.
    pub proxy_settings: serde_json::Value,
}

/// A device PasarGuard knew for a user (4.0 on).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceDevice {
    /// The user's id.
    pub user: i64,
    /// The app's `x-hwid`.
    pub hwid: String,
    /// Operating system and its version, as the app named them.
    pub os: Option<String>,
    /// Device model.
    pub model: Option<String>,
    /// First seen (Unix ms).
    pub created_ms: i64,
    /// Last seen (Unix ms).
    pub last_used_ms: i64,
}

/// What the database holds.
#[derive(Clone, Debug)]
pub struct Source {
    /// Alembic's head.
    pub schema: String,
    /// The layout that head has.
    pub layout: Layout,
    /// Signs subscription tokens.
    pub secret: String,
    /// Every user.
    pub users: Vec<SourceUser>,
    /// Every known device.
    pub devices: Vec<SourceDevice>,
    /// Its admins.
    pub admins: Vec<super::source_admin::SourceAdmin>,
    /// `(name, address, port, api_port)`.
    pub nodes: Vec<(String, String, i64, i64)>,
    /// The inbounds of its core configs.
    pub inbounds: Vec<InboundSeen>,
}

/// The layout of schema `head`, if this reader knows it.
pub fn layout_of(head: &str) -> Option<Layout> {
    KNOWN_SCHEMAS
        .iter()
        .find(|(h, _, _)| *h == head)
        .map(|(_, _, l)| *l)
}

/// Reads the PasarGuard database at `path` (SQLite).
pub async fn read(path: &Path) -> Result<Source, ImportError> {
    read_in_file!(path, read_from, "PasarGuard")
}

/// Reads the PasarGuard database at `url` (PostgreSQL, MySQL or MariaDB:
/// `postgres://USER:PASSWORD@HOST:PORT/DB`, `mysql://…`) in one read-only
/// transaction.
pub async fn read_url(url: &str) -> Result<Source, ImportError> {
    read_on_server!(url, read_from, "PasarGuard", mysql: true, postgres: true)
}

/// What every database of PasarGuard holds, read the same way.
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
    let tables = texts(&c.all(d.tables(), None).await.map_err(open)?);
    let has = |t: &str| tables.iter().any(|n| n == t);
    if !has("alembic_version") {
        return Err(ImportError::Missing {
            why: "no alembic_version table",
        });
    }
    if !has("core_configs") || has("proxies") {
        return Err(ImportError::Missing {
            why: "no core_configs table, or Marzban's proxies table (import it as Marzban)",
        });
    }
    let one = |rows: Vec<C::Row>, table: &'static str, field: &'static str| match rows.first() {
        Some(row) => Cells::new(row, table, 0).text(0, field),
        None => Ok(None),
    };
    let schema = one(
        c.all(
            &d.sql("SELECT CAST(version_num AS {text}) FROM alembic_version"),
            None,
        )
        .await
        .map_err(open)?,
        "alembic_version",
        "version_num",
    )?
    .unwrap_or_default();
    let Some(layout) = layout_of(&schema) else {
        return Err(ImportError::UnknownSchema {
            source_panel: "PasarGuard",
            found: schema,
            known: KNOWN_SCHEMAS
                .iter()
                .map(|(s, r, _)| format!("{s} ({r})"))
                .collect::<Vec<_>>()
                .join(", "),
        });
    };
    let secret = one(
        c.all(
            &d.sql("SELECT CAST(secret_key AS {text}) FROM jwt ORDER BY id LIMIT 1"),
            None,
        )
        .await
        .map_err(open)?,
        "jwt",
        "secret_key",
    )?
    .ok_or_else(|| {
        Field {
            table: "jwt",
            row: 0,
            field: "secret_key",
        }
        .error("no secret".into())
    })?;
    let hwid_limit = match layout {
        Layout::Groups => "NULL",
        Layout::Devices => "u.hwid_limit",
    };
    let rows = c
        .all(
            &d.sql(&format!(
                "SELECT CAST(u.id AS {{int}}), CAST(u.username AS {{text}}), \
                 CAST(u.status AS {{text}}), CAST(u.used_traffic AS {{int}}), \
                 CAST(u.data_limit AS {{int}}), CAST(u.expire AS {{text}}), \
                 CAST(u.created_at AS {{text}}), CAST(u.data_limit_reset_strategy AS {{text}}), \
                 CAST(u.sub_revoked_at AS {{text}}), CAST(u.note AS {{text}}), \
                 CAST(u.on_hold_expire_duration AS {{int}}), \
                 CAST(u.on_hold_timeout AS {{text}}), CAST(a.username AS {{text}}), \
                 CAST((SELECT COALESCE(SUM(l.used_traffic_at_reset), 0) FROM user_usage_logs l \
                  WHERE l.user_id = u.id) AS {{int}}), CAST({hwid_limit} AS {{int}}), \
                 CAST(u.proxy_settings AS {{text}}) \
                 FROM users u LEFT JOIN admins a ON a.id = u.admin_id ORDER BY u.id LIMIT {{p1}}"
            )),
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
    let mut users = Vec::with_capacity(rows.len());
    for row in &rows {
        users.push(user(row)?);
    }
    let devices = match layout {
        Layout::Groups => Vec::new(),
        Layout::Devices => devices(c, d, open).await?,
    };
    let admin_columns = texts(
        &c.all(d.columns(), Some(Bind::Text("admins")))
            .await
            .map_err(open)?,
    );
    // Before 5.0 an admin is sudo or not; from 5.0 it has a role, and the built-in
    // owner and administrator roles are what sudo was.
    let admins_query = if admin_columns.iter().any(|c| c == "is_sudo") {
        "SELECT CAST(username AS {text}), CAST(CASE WHEN is_sudo THEN 1 ELSE 0 END AS {int}), \
         CAST(hashed_password AS {text}) FROM admins ORDER BY id {listed}"
    } else {
        "SELECT CAST(a.username AS {text}), \
         CAST(CASE WHEN r.is_owner OR r.name = 'administrator' THEN 1 ELSE 0 END AS {int}), \
         CAST(a.hashed_password AS {text}) FROM admins a LEFT JOIN admin_roles r ON r.id = a.role_id ORDER BY a.id {listed}"
    };
    let mut admins = Vec::new();
    for (i, row) in c
        .all(&d.sql(admins_query), None)
        .await
        .map_err(open)?
        .iter()
        .enumerate()
    {
        let cells = Cells::new(row, "admins", i64::try_from(i).unwrap_or(0));
        admins.push(super::source_admin::SourceAdmin {
            name: cells.text(0, "username")?.unwrap_or_default(),
            sudo: cells.flag(1, "is_sudo")?,
            password_hash: cells.text(2, "hashed_password")?,
        });
    }
    let mut nodes = Vec::new();
    for (i, row) in c
        .all(
            &d.sql(
                "SELECT CAST(COALESCE(name, '') AS {text}), CAST(address AS {text}), \
                 CAST(port AS {int}), CAST(api_port AS {int}) FROM nodes ORDER BY id {listed}",
            ),
            None,
        )
        .await
        .map_err(open)?
        .iter()
        .enumerate()
    {
        let cells = Cells::new(row, "nodes", i64::try_from(i).unwrap_or(0));
        nodes.push((
            cells.text(0, "name")?.unwrap_or_default(),
            cells.text(1, "address")?.unwrap_or_default(),
            cells.number(2, "port")?.unwrap_or(0),
            cells.number(3, "api_port")?.unwrap_or(0),
        ));
    }
    let mut inbounds = Vec::new();
    for row in c
        .all(
            &d.sql(
                "SELECT CAST(id AS {int}), CAST(config AS {text}) FROM core_configs \
                 WHERE CAST(type AS {text}) = 'xray' ORDER BY id LIMIT 64",
            ),
            None,
        )
        .await
        .map_err(open)?
    {
        let id = Cells::new(&row, "core_configs", 0)
            .number(0, "id")?
            .unwrap_or(0);
        let cells = Cells::new(&row, "core_configs", id);
        let text = cells.text(1, "config")?.unwrap_or_default();
        if text.len() > MAX_CORE_CONFIG {
            return Err(cells.error("config", format!("longer than {MAX_CORE_CONFIG} bytes")));
        }
        let config: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| cells.error("config", e.to_string()))?;
        for seen in report::inbounds_in(&config).map_err(|e| cells.error("config", e))? {
            if !inbounds.iter().any(|i: &InboundSeen| i.tag == seen.tag) {
                inbounds.push(seen);
            }
        }
    }
    Ok(Source {
        schema,
        layout,
        secret,
        users,
        devices,
        admins,
        nodes,
        inbounds,
    })
}

fn user<R>(row: &R) -> Result<SourceUser, ImportError>
where
    R: Row,
    usize: sqlx::ColumnIndex<R>,
    String: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    i64: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let id = Cells::new(row, "users", 0).number(0, "id")?.unwrap_or(0);
    let cells = Cells::new(row, "users", id);
    let text = |i, field| cells.text(i, field);
    let number = |i, field| cells.number(i, field);
    let bytes = |i, field| cells.bytes(i, field);
    let time = |i, field| cells.time(i, field);
    let username = text(1, "username")?.ok_or_else(|| cells.error("username", "empty".into()))?;
    let settings = text(15, "proxy_settings")?.unwrap_or_else(|| "{}".into());
    if settings.len() > MAX_SETTINGS {
        return Err(cells.error(
            "proxy_settings",
            format!("longer than {MAX_SETTINGS} bytes"),
        ));
    }
    let proxy_settings: serde_json::Value = serde_json::from_str(&settings)
        .map_err(|e| cells.error("proxy_settings", e.to_string()))?;
    if !proxy_settings.is_object() {
        return Err(cells.error("proxy_settings", "not a JSON object".into()));
    }
    Ok(SourceUser {
        id,
        username,
        status: text(2, "status")?.unwrap_or_default(),
        used_traffic: bytes(3, "used_traffic")?.unwrap_or(0),
        data_limit: bytes(4, "data_limit")?.filter(|n| *n > 0),
        expire_ms: time(5, "expire")?,
        created_ms: time(6, "created_at")?.unwrap_or(0),
        reset_strategy: text(7, "data_limit_reset_strategy")?.unwrap_or_default(),
        sub_revoked_ms: time(8, "sub_revoked_at")?,
        note: text(9, "note")?.filter(|n| !n.is_empty()),
        on_hold_expire_duration: number(10, "on_hold_expire_duration")?.filter(|n| *n > 0),
        on_hold_timeout_ms: time(11, "on_hold_timeout")?,
        admin: text(12, "admin")?,
        reset_traffic: bytes(13, "user_usage_logs.used_traffic_at_reset")?.unwrap_or(0),
        hwid_limit: number(14, "hwid_limit")?,
        proxy_settings,
    })
}

async fn devices<C: Fetch>(
    c: &mut C,
    d: Dialect,
    open: &impl Fn(sqlx::Error) -> ImportError,
) -> Result<Vec<SourceDevice>, ImportError>
where
    usize: sqlx::ColumnIndex<C::Row>,
    String:
        for<'r> sqlx::Decode<'r, <C::Row as Row>::Database> + sqlx::Type<<C::Row as Row>::Database>,
    i64:
        for<'r> sqlx::Decode<'r, <C::Row as Row>::Database> + sqlx::Type<<C::Row as Row>::Database>,
{
    let rows = c
        .all(
            &d.sql(
                "SELECT CAST(id AS {int}), CAST(user_id AS {int}), CAST(hwid AS {text}), \
                 CAST(device_os AS {text}), CAST(os_version AS {text}), \
                 CAST(device_model AS {text}), CAST(created_at AS {text}), \
                 CAST(last_used_at AS {text}) FROM user_hwids \
                 ORDER BY user_id, id LIMIT {p1}",
            ),
            Some(Bind::Int(
                i64::try_from(MAX_DEVICES + 1).unwrap_or(i64::MAX),
            )),
        )
        .await
        .map_err(open)?;
    if rows.len() > MAX_DEVICES {
        return Err(Field {
            table: "user_hwids",
            row: 0,
            field: "id",
        }
        .error(format!("more than {MAX_DEVICES} devices")));
    }
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        let id = Cells::new(row, "user_hwids", 0)
            .number(0, "id")?
            .unwrap_or(0);
        let cells = Cells::new(row, "user_hwids", id);
        let text = |i, field| cells.text(i, field);
        let time = |i, field| -> Result<i64, ImportError> {
            cells
                .time(i, field)?
                .ok_or_else(|| cells.error(field, "empty".into()))
        };
        let os = match (text(3, "device_os")?, text(4, "os_version")?) {
            (Some(os), Some(v)) if !v.is_empty() => Some(format!("{os} {v}")),
            (os, _) => os,
        };
        out.push(SourceDevice {
            user: cells
                .number(1, "user_id")?
                .ok_or_else(|| cells.error("user_id", "empty".into()))?,
            hwid: text(2, "hwid")?.unwrap_or_default(),
            os,
            model: text(5, "device_model")?,
            created_ms: time(6, "created_at")?,
            last_used_ms: time(7, "last_used_at")?,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_known_head_has_one_release_and_the_devices_start_at_4_0() {
        for (i, (head, release, layout)) in KNOWN_SCHEMAS.iter().enumerate() {
            assert_eq!(head.len(), 12, "{head}");
            assert!(
                KNOWN_SCHEMAS[i + 1..].iter().all(|(h, _, _)| h != head),
                "{head} twice"
            );
            assert_eq!(
                *layout == Layout::Devices,
                !release.starts_with(['1', '2', '3']),
                "{release}"
            );
        }
        assert_eq!(layout_of("fb32155473c1"), Some(Layout::Devices));
        assert_eq!(layout_of("af2d644dda44"), Some(Layout::Groups));
        assert_eq!(layout_of("2b231de97dc3"), None);
    }
}
