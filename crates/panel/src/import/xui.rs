//! 3x-ui's SQLite database (`x-ui.db`), read as 3x-ui 2.x writes it: its inbounds,
//! the clients listed in each inbound's settings (credentials, limits, expiry,
//! subscription id), their counters from `client_traffics`, and the subscription
//! paths from `settings`.
//!
//! 3x-ui keeps no schema version: its tables are made by GORM from its models. The
//! layout is told by the tables and columns present: 2.x lists each inbound's
//! clients in its settings; 3.x keeps them in a `clients` table linked to inbounds by
//! `client_inbounds` (and still copies them into the settings for Xray: the table is
//! what this reader takes). The file is opened read-only. Every value is checked: a row that does not fit is an error naming the
//! table, the row and the column, never a panic.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;
use sqlx::{Connection, Row};

use super::{Field, ImportError};

/// The layouts this reader knows, as the report names them.
pub const KNOWN_LAYOUTS: &[&str] = &["2.x", "3.x"];

/// The longest settings or stream settings read from one inbound (a thousand clients
/// take about 250 KiB).
const MAX_SETTINGS: usize = 4 * 1024 * 1024;

/// The most clients read from one database.
pub const MAX_CLIENTS: usize = 200_000;

/// One client of one inbound, as its settings list it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceClient {
    /// Its email: 3x-ui's key for the client, unique across inbounds.
    pub email: String,
    /// The subscription id grouping one person's clients across inbounds.
    pub sub_id: String,
    /// VLESS or VMess id.
    pub id: String,
    /// Trojan or Shadowsocks password.
    pub password: String,
    /// Whether the operator has it on.
    pub enable: bool,
    /// Bytes allowed; 0 is unlimited.
    pub total: u64,
    /// Unix ms; 0 never; negative: that many ms from the first connection.
    pub expiry_ms: i64,
    /// Addresses at once; 0 is no limit.
    pub limit_ip: u32,
    /// Days after which an expired client is renewed; 0 never.
    pub reset_days: u32,
    /// The operator's comment.
    pub comment: String,
    /// Unix ms; 0 when 3x-ui did not record it.
    pub created_ms: i64,
}

/// One inbound with its clients.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SourceInbound {
    /// Its row id.
    pub id: i64,
    /// The operator's name for it.
    pub remark: String,
    /// `vless`, `vmess`, `trojan`, `shadowsocks`...
    pub protocol: String,
    /// Its port.
    pub port: u64,
    /// Its Xray tag.
    pub tag: String,
    /// Whether it is on.
    pub enable: bool,
    /// Its own traffic limit (all clients together); 0 is none.
    pub total: u64,
    /// Its own expiry (Unix ms); 0 is none.
    pub expiry_ms: i64,
    /// The Shadowsocks method, for Shadowsocks.
    pub method: String,
    /// Its stream settings.
    pub stream: Value,
    /// Whether any of its clients (VLESS) uses XTLS Vision.
    pub vision: bool,
    /// Its clients, in the order the settings list them.
    pub clients: Vec<SourceClient>,
}

/// A client's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Bytes since the last reset.
    pub used: u64,
    /// Bytes over the client's life (`used` when the layout has no `all_time`).
    pub all_time: u64,
    /// Whether 3x-ui still lets the client connect (off once it ran out or expired).
    pub enable: bool,
}

/// What the database holds.
#[derive(Clone, Debug, Default)]
pub struct Source {
    /// The layout, one of [`KNOWN_LAYOUTS`].
    pub layout: String,
    /// Every inbound.
    pub inbounds: Vec<SourceInbound>,
    /// Counters by email.
    pub traffic: HashMap<String, Traffic>,
    /// The subscription paths (`subPath`, `subJsonPath`), without slashes.
    pub sub_paths: Vec<String>,
    /// The panel's own logins (3x-ui has no owners: each sees every client).
    pub admins: Vec<String>,
}

/// Reads the 3x-ui database at `path`.
pub async fn read(path: &Path) -> Result<Source, ImportError> {
    let open = |source| ImportError::Open {
        path: path.to_owned(),
        source,
    };
    let mut c = super::open_read_only(path).await?;
    let tables: Vec<String> =
        sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table'")
            .fetch_all(&mut c)
            .await
            .map_err(open)?;
    let has = |t: &str| tables.iter().any(|n| n == t);
    if !has("inbounds") || !has("client_traffics") {
        return Err(ImportError::NotTheSource {
            path: path.to_owned(),
            source_panel: "3x-ui",
            why: "no inbounds and client_traffics tables",
        });
    }
    let v3 = has("clients");
    if v3 && !has("client_inbounds") {
        return Err(ImportError::UnknownSchema {
            source_panel: "3x-ui",
            found: "with a clients table but no client_inbounds".into(),
            known: KNOWN_LAYOUTS.join(", "),
        });
    }
    let traffic_columns: Vec<String> =
        sqlx::query_scalar("SELECT name FROM pragma_table_info('client_traffics')")
            .fetch_all(&mut c)
            .await
            .map_err(open)?;
    let all_time = if traffic_columns.iter().any(|n| n == "all_time") {
        "all_time"
    } else {
        "0"
    };
    let mut source = Source {
        layout: KNOWN_LAYOUTS[usize::from(v3)].to_owned(),
        ..Source::default()
    };
    let rows = sqlx::query(&format!(
        "SELECT id, email, up, down, {all_time}, enable FROM client_traffics ORDER BY id"
    ))
    .fetch_all(&mut c)
    .await
    .map_err(open)?;
    for row in rows {
        let id: i64 = row.try_get(0).map_err(open)?;
        let at = |field| Field {
            table: "client_traffics",
            row: id,
            field,
        };
        let email: String = row
            .try_get::<Option<String>, _>(1)
            .map_err(|e| at("email").error(e.to_string()))?
            .unwrap_or_default();
        let bytes = |i: usize, field| -> Result<u64, ImportError> {
            let n: Option<i64> = row.try_get(i).map_err(|e| at(field).error(e.to_string()))?;
            u64::try_from(n.unwrap_or(0)).map_err(|_| at(field).error("negative".into()))
        };
        let up = bytes(2, "up")?;
        let down = bytes(3, "down")?;
        let used = up
            .checked_add(down)
            .ok_or_else(|| at("down").error("up + down does not fit 64 bits".into()))?;
        let enable: Option<bool> = row
            .try_get(5)
            .map_err(|e| at("enable").error(e.to_string()))?;
        source.traffic.insert(
            email,
            Traffic {
                used,
                all_time: bytes(4, "all_time")?.max(used),
                enable: enable.unwrap_or(true),
            },
        );
    }
    let rows = sqlx::query(
        "SELECT id, COALESCE(remark, ''), COALESCE(protocol, ''), COALESCE(port, 0), \
         COALESCE(tag, ''), COALESCE(enable, 1), COALESCE(total, 0), \
         COALESCE(expiry_time, 0), COALESCE(settings, ''), COALESCE(stream_settings, '') \
         FROM inbounds ORDER BY id",
    )
    .fetch_all(&mut c)
    .await
    .map_err(open)?;
    let mut clients = 0usize;
    for row in rows {
        let id: i64 = row.try_get(0).map_err(open)?;
        let at = |field| Field {
            table: "inbounds",
            row: id,
            field,
        };
        let get_text = |i: usize, field| -> Result<String, ImportError> {
            row.try_get(i).map_err(|e| at(field).error(e.to_string()))
        };
        let get_number = |i: usize, field| -> Result<i64, ImportError> {
            row.try_get(i).map_err(|e| at(field).error(e.to_string()))
        };
        let json = |i: usize, field| -> Result<Value, ImportError> {
            let text = get_text(i, field)?;
            if text.len() > MAX_SETTINGS {
                return Err(at(field).error(format!("longer than {MAX_SETTINGS} bytes")));
            }
            if text.trim().is_empty() {
                return Ok(Value::Null);
            }
            serde_json::from_str(&text).map_err(|e| at(field).error(e.to_string()))
        };
        let settings = json(8, "settings")?;
        let port = get_number(3, "port")?;
        let mut inbound = SourceInbound {
            id,
            remark: get_text(1, "remark")?,
            protocol: get_text(2, "protocol")?,
            port: u64::try_from(port)
                .ok()
                .filter(|p| *p <= 65_535)
                .ok_or_else(|| at("port").error(format!("{port} is not a port")))?,
            tag: get_text(4, "tag")?,
            enable: get_number(5, "enable")? != 0,
            total: u64::try_from(get_number(6, "total")?)
                .map_err(|_| at("total").error("negative".into()))?,
            expiry_ms: get_number(7, "expiry_time")?,
            method: text(settings.get("method")),
            stream: json(9, "stream_settings")?,
            vision: settings
                .get("clients")
                .and_then(Value::as_array)
                .is_some_and(|c| c.iter().any(super::report::is_vision)),
            clients: Vec::new(),
        };
        inbound.clients = if v3 {
            client_rows(&mut c, id).await?
        } else {
            read_clients(&settings).map_err(|m| at("settings").error(m))?
        };
        clients = clients.saturating_add(inbound.clients.len());
        if clients > MAX_CLIENTS {
            return Err(at("settings").error(format!("more than {MAX_CLIENTS} clients")));
        }
        source.inbounds.push(inbound);
    }
    if has("users") {
        source.admins = sqlx::query_scalar("SELECT COALESCE(username, '') FROM users ORDER BY id")
            .fetch_all(&mut c)
            .await
            .map_err(open)?;
    }
    if has("settings") {
        let rows = sqlx::query(
            "SELECT key, value FROM settings WHERE key IN ('subPath', 'subJsonPath') ORDER BY id",
        )
        .fetch_all(&mut c)
        .await
        .map_err(open)?;
        for row in rows {
            let value: Option<String> = row.try_get(1).map_err(open)?;
            let path = value.unwrap_or_default().trim_matches('/').to_owned();
            if !path.is_empty() && !source.sub_paths.contains(&path) {
                source.sub_paths.push(path);
            }
        }
    }
    c.close().await.map_err(open)?;
    Ok(source)
}

/// 3.x: the clients of inbound `inbound`, from the `clients` table.
async fn client_rows(
    c: &mut sqlx::SqliteConnection,
    inbound: i64,
) -> Result<Vec<SourceClient>, ImportError> {
    let rows = sqlx::query(
        "SELECT c.id, COALESCE(c.email, ''), COALESCE(c.sub_id, ''), COALESCE(c.uuid, ''), \
         COALESCE(c.password, ''), COALESCE(c.enable, 1), COALESCE(c.total_gb, 0), \
         COALESCE(c.expiry_time, 0), COALESCE(c.limit_ip, 0), COALESCE(c.reset, 0), \
         COALESCE(c.comment, ''), COALESCE(c.created_at, 0) FROM clients c \
         JOIN client_inbounds l ON l.client_id = c.id WHERE l.inbound_id = $1 \
         ORDER BY c.id LIMIT $2",
    )
    .bind(inbound)
    .bind(MAX_CLIENTS as i64 + 1)
    .fetch_all(&mut *c)
    .await
    .map_err(|e| ImportError::Field {
        table: "clients",
        row: 0,
        field: "*",
        message: e.to_string(),
    })?;
    if rows.len() > MAX_CLIENTS {
        return Err(ImportError::Field {
            table: "client_inbounds",
            row: inbound,
            field: "inbound_id",
            message: format!("more than {MAX_CLIENTS} clients"),
        });
    }
    rows.iter()
        .map(|row| {
            let id: i64 = row.try_get(0).unwrap_or(0);
            let at = |field| Field {
                table: "clients",
                row: id,
                field,
            };
            let get_text = |i: usize, field| -> Result<String, ImportError> {
                row.try_get(i).map_err(|e| at(field).error(e.to_string()))
            };
            let get_number = |i: usize, field| -> Result<i64, ImportError> {
                row.try_get(i).map_err(|e| at(field).error(e.to_string()))
            };
            let email = get_text(1, "email")?;
            if email.is_empty() {
                return Err(at("email").error("empty".into()));
            }
            let total = get_number(6, "total_gb")?;
            Ok(SourceClient {
                email,
                sub_id: get_text(2, "sub_id")?,
                id: get_text(3, "uuid")?,
                password: get_text(4, "password")?,
                enable: get_number(5, "enable")? != 0,
                total: u64::try_from(total)
                    .map_err(|_| at("total_gb").error(format!("{total} is negative")))?,
                expiry_ms: get_number(7, "expiry_time")?,
                limit_ip: u32::try_from(get_number(8, "limit_ip")?.max(0)).unwrap_or(u32::MAX),
                reset_days: u32::try_from(get_number(9, "reset")?.max(0)).unwrap_or(u32::MAX),
                comment: get_text(10, "comment")?,
                created_ms: get_number(11, "created_at")?.max(0),
            })
        })
        .collect()
}

/// A string field, or "" when absent or not a string.
fn text(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).unwrap_or_default().to_owned()
}

/// The clients an inbound's settings list; the error names the client and field.
pub fn read_clients(settings: &Value) -> Result<Vec<SourceClient>, String> {
    let list = match settings.get("clients") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => return Err("\"clients\" is not a list".into()),
    };
    if list.len() > MAX_CLIENTS {
        return Err(format!("more than {MAX_CLIENTS} clients"));
    }
    list.iter()
        .enumerate()
        .map(|(i, c)| read_client(c).map_err(|m| format!("clients[{i}].{m}")))
        .collect()
}

/// One client object of an inbound's settings; the error names the field.
fn read_client(v: &Value) -> Result<SourceClient, String> {
    if !v.is_object() {
        return Err("(the client) is not an object".into());
    }
    // 3x-ui's UI has written numbers as strings in some releases (`tgId: ""`): take
    // both, and a missing one as 0.
    let number = |key: &str| -> Result<i64, String> {
        match v.get(key) {
            None | Some(Value::Null) => Ok(0),
            Some(Value::Number(n)) => n
                .as_i64()
                .ok_or_else(|| format!("{key}: {n} is not a whole number that fits")),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(0),
            Some(Value::String(s)) => s
                .trim()
                .parse()
                .map_err(|_| format!("{key}: {s:?} is not a number")),
            Some(other) => Err(format!("{key}: {other} is not a number")),
        }
    };
    let email = text(v.get("email"));
    if email.is_empty() {
        return Err("email: empty".into());
    }
    let total = number("totalGB")?;
    let limit_ip = number("limitIp")?;
    let reset = number("reset")?;
    Ok(SourceClient {
        email,
        sub_id: text(v.get("subId")),
        id: text(v.get("id")),
        password: text(v.get("password")),
        enable: v.get("enable").and_then(Value::as_bool).unwrap_or(true),
        total: u64::try_from(total).map_err(|_| format!("totalGB: {total} is negative"))?,
        expiry_ms: number("expiryTime")?,
        limit_ip: u32::try_from(limit_ip.max(0)).unwrap_or(u32::MAX),
        reset_days: u32::try_from(reset.max(0)).unwrap_or(u32::MAX),
        comment: text(v.get("comment")),
        created_ms: number("created_at")?.max(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_client_is_read_with_numbers_as_numbers_or_strings() {
        let c = read_client(&json!({
            "id": "9b2a0a3e-1f0c-4c8b-9a51-2c7d0f3e6a11", "email": "alice", "limitIp": "2",
            "totalGB": 1073741824, "expiryTime": -259200000, "enable": false, "tgId": "",
            "subId": "k3j2h4g5f6d7s8a9", "comment": "paid", "reset": 30,
            "created_at": 1700000000123_i64
        }))
        .unwrap();
        assert_eq!(c.email, "alice");
        assert_eq!(c.limit_ip, 2);
        assert_eq!(c.total, 1_073_741_824);
        assert_eq!(c.expiry_ms, -259_200_000);
        assert!(!c.enable);
        assert_eq!(c.reset_days, 30);
        assert_eq!(c.created_ms, 1_700_000_000_123);
        assert_eq!(c.sub_id, "k3j2h4g5f6d7s8a9");
    }

    #[test]
    fn a_client_that_does_not_fit_is_named_by_its_field() {
        let err = |v| read_client(&v).unwrap_err();
        assert_eq!(err(json!("x")), "(the client) is not an object");
        assert_eq!(err(json!({"id": "x"})), "email: empty");
        assert_eq!(
            err(json!({"email": "a", "totalGB": -1})),
            "totalGB: -1 is negative"
        );
        assert_eq!(
            err(json!({"email": "a", "expiryTime": "soon"})),
            "expiryTime: \"soon\" is not a number"
        );
        assert_eq!(
            err(json!({"email": "a", "reset": 1.5})),
            "reset: 1.5 is not a whole number that fits"
        );
        assert_eq!(
            err(json!({"email": "a", "limitIp": [1]})),
            "limitIp: [1] is not a number"
        );
    }
}
