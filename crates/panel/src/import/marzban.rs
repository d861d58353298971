//! Marzban's SQLite database, read as Marzban 0.8 writes it: its users with their
//! proxies' credentials, usage, limits, expiry and status, its admins, nodes and JWT
//! secret, and (from its `xray_config.json`, optional) its inbounds.
//!
//! The file is opened read-only; its schema version (Alembic's `alembic_version`)
//! must be one this reader knows, else the import is refused naming it. Every value
//! is checked: a row that does not fit is an error naming the table, the row and
//! the column, never a panic.

use std::path::Path;

use sqlx::{Connection, Row};

use super::cells::Cells;
use super::{Field, ImportError};

/// The schema versions (Alembic heads) this reader knows, with the Marzban releases
/// that have them.
pub const KNOWN_SCHEMAS: &[(&str, &str)] = &[("2b231de97dc3", "0.8.x")];

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
    /// `(name, is_sudo)`.
    pub admins: Vec<(String, bool)>,
    /// `(name, address, port, api_port)`.
    pub nodes: Vec<(String, String, i64, i64)>,
    /// Inbound tags the database names.
    pub inbound_tags: Vec<String>,
}

/// Reads the Marzban database at `path`.
pub async fn read(path: &Path) -> Result<Source, ImportError> {
    let open = |source| ImportError::Open {
        path: path.to_owned(),
        source,
    };
    let mut c = super::open_read_only(path).await?;
    let schema: String = sqlx::query("SELECT version_num FROM alembic_version")
        .fetch_one(&mut c)
        .await
        .map_err(|_| ImportError::NotTheSource {
            path: path.to_owned(),
            source_panel: "Marzban",
            why: "no alembic_version table",
        })?
        .try_get(0)
        .map_err(open)?;
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
    let secret: String = sqlx::query("SELECT secret_key FROM jwt ORDER BY id LIMIT 1")
        .fetch_one(&mut c)
        .await
        .map_err(open)?
        .try_get(0)
        .map_err(open)?;
    let mut source = Source {
        schema,
        secret,
        ..Source::default()
    };
    let rows = sqlx::query(
        "SELECT u.id, u.username, u.status, u.used_traffic, u.data_limit, u.expire, \
         CAST(u.created_at AS TEXT), u.data_limit_reset_strategy, \
         CAST(u.sub_revoked_at AS TEXT), u.note, u.on_hold_expire_duration, \
         CAST(u.on_hold_timeout AS TEXT), a.username, \
         (SELECT COALESCE(SUM(l.used_traffic_at_reset), 0) FROM user_usage_logs l \
          WHERE l.user_id = u.id) \
         FROM users u LEFT JOIN admins a ON a.id = u.admin_id ORDER BY u.id",
    )
    .fetch_all(&mut c)
    .await
    .map_err(open)?;
    for row in rows {
        let id: i64 = row.try_get(0).map_err(open)?;
        let cells = Cells::new(&row, "users", id);
        let text = |i, field| cells.text(i, field);
        let number = |i, field| cells.number(i, field);
        let bytes = |i, field| cells.bytes(i, field);
        let time = |i, field| cells.time(i, field);
        let username =
            text(1, "username")?.ok_or_else(|| cells.error("username", "empty".into()))?;
        source.users.push(SourceUser {
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
        });
        let proxies =
            sqlx::query("SELECT id, type, settings FROM proxies WHERE user_id = $1 ORDER BY id")
                .bind(id)
                .fetch_all(&mut c)
                .await
                .map_err(open)?;
        let user = source.users.last_mut().ok_or(ImportError::Internal)?;
        for p in proxies {
            let pid: i64 = p.try_get(0).map_err(open)?;
            let field = Field {
                table: "proxies",
                row: pid,
                field: "settings",
            };
            let kind: String = p.try_get(1).map_err(|e| field.error(e.to_string()))?;
            let settings: String = p.try_get(2).map_err(|e| field.error(e.to_string()))?;
            if settings.len() > MAX_SETTINGS {
                return Err(field.error(format!("longer than {MAX_SETTINGS} bytes")));
            }
            let settings =
                serde_json::from_str(&settings).map_err(|e| field.error(e.to_string()))?;
            user.proxies.push((kind, settings));
        }
    }
    for row in sqlx::query("SELECT username, COALESCE(is_sudo, 0) FROM admins ORDER BY id")
        .fetch_all(&mut c)
        .await
        .map_err(open)?
    {
        let name: String = row.try_get(0).map_err(open)?;
        let sudo: bool = row.try_get(1).map_err(open)?;
        source.admins.push((name, sudo));
    }
    for row in
        sqlx::query("SELECT COALESCE(name, ''), address, port, api_port FROM nodes ORDER BY id")
            .fetch_all(&mut c)
            .await
            .map_err(open)?
    {
        source.nodes.push((
            row.try_get(0).map_err(open)?,
            row.try_get(1).map_err(open)?,
            row.try_get(2).map_err(open)?,
            row.try_get(3).map_err(open)?,
        ));
    }
    for row in sqlx::query("SELECT tag FROM inbounds ORDER BY id")
        .fetch_all(&mut c)
        .await
        .map_err(open)?
    {
        source.inbound_tags.push(row.try_get(0).map_err(open)?);
    }
    c.close().await.map_err(open)?;
    Ok(source)
}

/// Unix ms of a naive UTC time as SQLAlchemy stores it in SQLite:
/// `2026-12-04 15:48:17.805931` (fraction optional, `T` allowed, and a UTC offset,
/// `+00:00` or `Z`, as a zone-aware column may hold it).
pub fn datetime_ms(text: &str) -> Option<i64> {
    let text = text.trim();
    let text = text
        .strip_suffix("+00:00")
        .or_else(|| text.strip_suffix('Z'))
        .unwrap_or(text);
    let (date, clock) = text.split_once([' ', 'T'])?;
    let mut d = date.splitn(3, '-');
    let year: i32 = d.next()?.parse().ok()?;
    let month: u8 = d.next()?.parse().ok()?;
    let day: u8 = d.next()?.parse().ok()?;
    let (hms, fraction) = clock.split_once('.').unwrap_or((clock, ""));
    let mut t = hms.splitn(3, ':');
    let hour: u8 = t.next()?.parse().ok()?;
    let minute: u8 = t.next()?.parse().ok()?;
    let second: u8 = t.next()?.parse().ok()?;
    let micros: u32 = if fraction.is_empty() {
        0
    } else {
        let digits: String = fraction.chars().take(6).collect();
        if !digits.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        format!("{digits:0<6}").parse().ok()?
    };
    let date =
        time::Date::from_calendar_date(year, time::Month::try_from(month).ok()?, day).ok()?;
    let clock = time::Time::from_hms_micro(hour, minute, second, micros).ok()?;
    let at = time::PrimitiveDateTime::new(date, clock).assume_utc();
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlalchemy_times_are_read_as_utc() {
        assert_eq!(datetime_ms("1970-01-01 00:00:01"), Some(1000));
        assert_eq!(
            datetime_ms("2026-12-04 15:48:17.805931"),
            Some(1_796_399_297_805)
        );
        assert_eq!(
            datetime_ms("2026-12-04T15:48:17.8"),
            Some(1_796_399_297_800)
        );
        assert_eq!(datetime_ms("2026-13-04 15:48:17"), None);
        assert_eq!(datetime_ms("2026-12-04 15:48:17.x"), None);
        assert_eq!(datetime_ms("1970-01-01 00:00:01+00:00"), Some(1000));
        assert_eq!(datetime_ms("1970-01-01T00:00:01Z"), Some(1000));
        assert_eq!(datetime_ms("1970-01-01 00:00:01+03:00"), None);
        assert_eq!(datetime_ms("yesterday"), None);
        assert_eq!(datetime_ms(""), None);
    }
}
