//! Marzneshin's database, SQLite (`db.sqlite3`) or on a server (PostgreSQL, MySQL,
//! MariaDB, named by URL), read as Marzneshin 0.4 to 0.7 write it: its users (name, subscription key, usage, limits, expiry strategy, status),
//! its admins, services, nodes and inbounds.
//!
//! Marzneshin is Marzban's fork with another user: no proxies table; each user has
//! one secret `key` from which its nodes derive every credential (see
//! [`credentials`]), and the subscription link is `/sub/NAME/KEY`. The file is opened
//! read-only; its schema version (Alembic's `alembic_version`) must be the head of
//! a release this reader knows, else the import is refused naming it. Every value
//! is checked: a row that does not fit is an error naming the table, the row and the
//! column.

use std::path::Path;

use sqlx::Row;

use super::cells::Cells;
use super::report::{InboundSeen, inbound_seen};
use super::source_db::{Bind, Dialect, Fetch, read_in_file, read_on_server, texts};
use super::{Field, ImportError};

/// The schema versions (Alembic heads) this reader knows, with their releases.
pub const KNOWN_SCHEMAS: &[(&str, &str)] = &[
    ("b0357faf51c8", "0.4.0"),
    ("5410d8ec78ff", "0.4.1"),
    ("fd423c19f682", "0.5.x"),
    ("1992c49c5990", "0.6.0-0.6.2"),
    ("79271458a973", "0.6.3-0.6.5"),
    ("57eba0a293f2", "0.7.x"),
];

/// The most users read.
pub const MAX_USERS: usize = 200_000;
/// The longest inbound description read (Marzneshin's column holds 512 bytes).
const MAX_INBOUND_CONFIG: usize = 64 * 1024;

/// How Marzneshin derived credentials from a user's key: its
/// `AUTH_GENERATION_ALGORITHM` (an environment setting of the old server, not in
/// the database).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Auth {
    /// `xxh128`, Marzneshin's default: the UUID is the key's XXH3-128 digest, the
    /// password its hex.
    #[default]
    Xxh128,
    /// `plain`: the key itself, as a UUID and as the password.
    Plain,
}

/// A user's VLESS UUID and Trojan password, as Marzneshin's nodes derive them from
/// `key`; `None` when `key` cannot be one (`plain` needs 32 hex digits).
pub fn credentials(key: &str, auth: Auth) -> Option<(String, String)> {
    let uuid = |b: [u8; 16]| {
        let h: String = b.iter().map(|b| format!("{b:02x}")).collect();
        format!(
            "{}-{}-{}-{}-{}",
            &h[..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..]
        )
    };
    match auth {
        Auth::Xxh128 => {
            let digest = xxhash_rust::xxh3::xxh3_128(key.as_bytes()).to_be_bytes();
            Some((
                uuid(digest),
                format!("{:032x}", u128::from_be_bytes(digest)),
            ))
        }
        Auth::Plain => {
            let hex: String = key.chars().filter(|c| *c != '-').collect();
            if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            let n = u128::from_str_radix(&hex, 16).ok()?;
            Some((uuid(n.to_be_bytes()), key.to_owned()))
        }
    }
}

/// One Marzneshin user, as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceUser {
    /// Its id.
    pub id: i64,
    /// Its name.
    pub username: String,
    /// Its secret: the link's last part and every credential's seed.
    pub key: String,
    /// Not disabled by an admin.
    pub enabled: bool,
    /// Bytes in the current period.
    pub used_traffic: u64,
    /// Bytes ever.
    pub lifetime_used_traffic: u64,
    /// Bytes allowed per period; none: unlimited.
    pub data_limit: Option<u64>,
    /// `no_reset`, `day`, `week`, `month` or `year`.
    pub reset_strategy: String,
    /// `never`, `fixed_date` or `start_on_first_use`.
    pub expire_strategy: String,
    /// Fixed date: when (Unix ms).
    pub expire_ms: Option<i64>,
    /// Start on first use: seconds of validity.
    pub usage_duration: Option<i64>,
    /// Start on first use: when the clock starts anyway (Unix ms).
    pub activation_deadline_ms: Option<i64>,
    /// Unix ms.
    pub created_ms: i64,
    /// The operator's note.
    pub note: Option<String>,
    /// The admin who owns the user.
    pub admin: Option<String>,
}

/// What the database holds.
#[derive(Clone, Debug, Default)]
pub struct Source {
    /// Alembic's head.
    pub schema: String,
    /// Every user not removed.
    pub users: Vec<SourceUser>,
    /// How many users Marzneshin removed (kept by it without a name).
    pub removed: usize,
    /// Its admins.
    pub admins: Vec<super::source_admin::SourceAdmin>,
    /// `(name, members)`.
    pub services: Vec<(String, i64)>,
    /// `(name, address, port, 0)`.
    pub nodes: Vec<(String, String, i64, i64)>,
    /// The inbounds of its nodes.
    pub inbounds: Vec<InboundSeen>,
}

/// Reads the Marzneshin database at `path` (SQLite).
pub async fn read(path: &Path) -> Result<Source, ImportError> {
    read_in_file!(path, read_from, "Marzneshin")
}

/// Reads the Marzneshin database at `url` (PostgreSQL, MySQL or MariaDB:
/// `postgres://USER:PASSWORD@HOST:PORT/DB`, `mysql://…`) in one read-only
/// transaction.
pub async fn read_url(url: &str) -> Result<Source, ImportError> {
    read_on_server!(url, read_from, "Marzneshin", mysql: true, postgres: true)
}

/// What every database of Marzneshin holds, read the same way.
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
    if !has("alembic_version") || !has("users_services") {
        return Err(ImportError::Missing {
            why: "no alembic_version or users_services table",
        });
    }
    let schema = texts(
        &c.all(
            &d.sql("SELECT CAST(version_num AS {text}) FROM alembic_version"),
            None,
        )
        .await
        .map_err(open)?,
    )
    .pop()
    .unwrap_or_default();
    if !KNOWN_SCHEMAS.iter().any(|(s, _)| *s == schema) {
        return Err(ImportError::UnknownSchema {
            source_panel: "Marzneshin",
            found: schema,
            known: KNOWN_SCHEMAS
                .iter()
                .map(|(s, r)| format!("{s} ({r})"))
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let flag = |column: &str| format!("CAST(CASE WHEN {column} THEN 1 ELSE 0 END AS {{int}})");
    let rows = c
        .all(
            &d.sql(&format!(
                "SELECT CAST(u.id AS {{int}}), CAST(u.username AS {{text}}), \
                 CAST(u.key AS {{text}}), {}, {}, CAST(u.used_traffic AS {{int}}), \
                 CAST(u.lifetime_used_traffic AS {{int}}), CAST(u.data_limit AS {{int}}), \
                 CAST(u.data_limit_reset_strategy AS {{text}}), \
                 CAST(u.expire_strategy AS {{text}}), CAST(u.expire_date AS {{text}}), \
                 CAST(u.usage_duration AS {{int}}), CAST(u.activation_deadline AS {{text}}), \
                 CAST(u.created_at AS {{text}}), CAST(u.note AS {{text}}), \
                 CAST(a.username AS {{text}}) \
                 FROM users u LEFT JOIN admins a ON a.id = u.admin_id ORDER BY u.id LIMIT {{p1}}",
                flag("u.enabled"),
                flag("u.removed"),
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
    let mut source = Source {
        schema,
        ..Source::default()
    };
    for row in &rows {
        match user(row)? {
            Some(u) => source.users.push(u),
            None => source.removed += 1,
        }
    }
    let admins = listed(
        c,
        d,
        open,
        format!(
            "SELECT CAST(username AS {{text}}), CAST(COALESCE(hashed_password, '') AS {{text}}), \
             {} FROM admins ORDER BY id {{listed}}",
            flag("is_sudo")
        ),
        "admins",
    )
    .await?;
    source.admins = admins
        .into_iter()
        .map(|(name, hash, sudo)| super::source_admin::SourceAdmin {
            name,
            sudo: sudo != 0,
            password_hash: Some(hash).filter(|h| !h.is_empty()),
        })
        .collect();
    let services = listed(
        c,
        d,
        open,
        "SELECT CAST(s.name AS {text}), '', CAST((SELECT COUNT(*) FROM users_services us \
         JOIN users u ON u.id = us.user_id WHERE us.service_id = s.id AND NOT u.removed) \
         AS {int}) FROM services s ORDER BY s.id {listed}"
            .into(),
        "services",
    )
    .await?;
    source.services = services.into_iter().map(|(n, _, k)| (n, k)).collect();
    let nodes = listed(
        c,
        d,
        open,
        "SELECT CAST(name AS {text}), CAST(address AS {text}), CAST(port AS {int}) \
         FROM nodes ORDER BY id {listed}"
            .into(),
        "nodes",
    )
    .await?;
    source.nodes = nodes.into_iter().map(|(n, a, p)| (n, a, p, 0)).collect();
    for row in c
        .all(
            &d.sql(
                "SELECT CAST(id AS {int}), CAST(tag AS {text}), CAST(protocol AS {text}), \
                 CAST(config AS {text}) FROM inbounds ORDER BY id {listed}",
            ),
            None,
        )
        .await
        .map_err(open)?
    {
        let id = Cells::new(&row, "inbounds", 0)
            .number(0, "id")?
            .unwrap_or(0);
        let cells = Cells::new(&row, "inbounds", id);
        let config = cells.text(3, "config")?.unwrap_or_else(|| "{}".into());
        if config.len() > MAX_INBOUND_CONFIG {
            return Err(cells.error("config", format!("longer than {MAX_INBOUND_CONFIG} bytes")));
        }
        let config: serde_json::Value =
            serde_json::from_str(&config).map_err(|e| cells.error("config", e.to_string()))?;
        // The node's description of the inbound: its port, network and TLS.
        let text = |k: &str| config.get(k).and_then(|v| v.as_str()).unwrap_or("");
        let stream = serde_json::json!({"network": text("network"), "security": text("tls")});
        // The column holds the enum's name (`VLESS`, `VMess`, `Trojan`…), whose
        // lower case is the protocol its node reported in the description.
        let protocol = match text("protocol") {
            "" => cells.text(2, "protocol")?.unwrap_or_default(),
            p => p.to_owned(),
        };
        source.inbounds.push(inbound_seen(
            cells.text(1, "tag")?.unwrap_or_default(),
            protocol.to_ascii_lowercase(),
            config.get("port").and_then(|p| p.as_u64()).unwrap_or(0),
            Some(&stream),
        ));
    }
    Ok(source)
}

/// The rows of `sql`, each a text, a text and a number, of `table`.
async fn listed<C: Fetch>(
    c: &mut C,
    d: Dialect,
    open: &impl Fn(sqlx::Error) -> ImportError,
    sql: String,
    table: &'static str,
) -> Result<Vec<(String, String, i64)>, ImportError>
where
    usize: sqlx::ColumnIndex<C::Row>,
    String:
        for<'r> sqlx::Decode<'r, <C::Row as Row>::Database> + sqlx::Type<<C::Row as Row>::Database>,
    i64:
        for<'r> sqlx::Decode<'r, <C::Row as Row>::Database> + sqlx::Type<<C::Row as Row>::Database>,
{
    let rows = c.all(&d.sql(&sql), None).await.map_err(open)?;
    let mut out = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let cells = Cells::new(row, table, i64::try_from(i).unwrap_or(0));
        out.push((
            cells.text(0, "name")?.unwrap_or_default(),
            cells.text(1, "address")?.unwrap_or_default(),
            cells.number(2, "number")?.unwrap_or(0),
        ));
    }
    Ok(out)
}

/// The user in `row`; `None` for one Marzneshin removed.
fn user<R>(row: &R) -> Result<Option<SourceUser>, ImportError>
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
    let flag = |i, field| cells.flag(i, field);
    let bytes = |i, field| cells.bytes(i, field);
    let time = |i, field| cells.time(i, field);
    if flag(4, "removed")? {
        return Ok(None);
    }
    let Some(username) = text(1, "username")? else {
        return Ok(None);
    };
    let key = text(2, "key")?.unwrap_or_default();
    if key.is_empty() || key.len() > 64 || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(cells.error(
            "key",
            "not a key of hex digits (Marzneshin's are 32)".into(),
        ));
    }
    Ok(Some(SourceUser {
        id,
        username,
        key,
        enabled: flag(3, "enabled")?,
        used_traffic: bytes(5, "used_traffic")?.unwrap_or(0),
        lifetime_used_traffic: bytes(6, "lifetime_used_traffic")?.unwrap_or(0),
        data_limit: bytes(7, "data_limit")?.filter(|n| *n > 0),
        // SQLAlchemy keeps an enum by its member's name: `FIXED_DATE`, `no_reset`.
        reset_strategy: text(8, "data_limit_reset_strategy")?
            .unwrap_or_default()
            .to_ascii_lowercase(),
        expire_strategy: text(9, "expire_strategy")?
            .unwrap_or_default()
            .to_ascii_lowercase(),
        expire_ms: time(10, "expire_date")?,
        usage_duration: number(11, "usage_duration")?.filter(|n| *n > 0),
        activation_deadline_ms: time(12, "activation_deadline")?,
        created_ms: time(13, "created_at")?.unwrap_or(0),
        note: text(14, "note")?.filter(|n| !n.is_empty()),
        admin: text(15, "admin")?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_derived_from_the_key_as_marzneshin_derives_them() {
        // xxhash.xxh128(b"abc").hexdigest(), as Python's xxhash computes it.
        let (uuid, password) = credentials("abc", Auth::Xxh128).unwrap();
        assert_eq!(password, "06b05ab6733a618578af5f94892f3950");
        assert_eq!(uuid, "06b05ab6-733a-6185-78af-5f94892f3950");
        let key = "0123456789abcdef0123456789abcdef";
        assert_eq!(
            credentials(key, Auth::Plain),
            Some((
                "01234567-89ab-cdef-0123-456789abcdef".into(),
                key.to_owned()
            ))
        );
        assert_eq!(credentials("abc", Auth::Plain), None);
    }
}
