//! Rows to domain types. Counters are BIGINT (signed) in both backends; they are
//! clamped into `u64` on the way out and into `i64` on the way in.

use sqlx::Row;
use sqlx::any::AnyRow;
use switchyard_balance::capacity::{Capacity, EstimatorSettings};

use crate::model::{
    Algorithm, Cluster, Credentials, Flow, Id, Inbound, InboundSecrets, Protocol, ResetStrategy,
    Route, Server, ServerState, User,
};

pub(super) const SERVER: &str = "id, cluster_id, name, address, allow_private, fingerprint, \
    hostname, node_version, state, state_reason, state_since_ms, refreshed_ms, \
    config_version, users_online, up_bps, down_bps, created_ms, capacity_peak, \
    capacity_above_floor_ms, capacity_last_ms, node_binary_sha256";

pub(super) const INBOUND: &str = "i.id, i.server_id, i.name, i.protocol, i.port, \
    i.transport, i.security, i.host, i.sni, i.coefficient, i.method, i.created_ms, \
    i.flow, i.reality_public_key, i.hysteria2, i.trusted_proxies, i.rules, ri.route_id";

pub(super) const INBOUND_FROM: &str =
    "inbounds i LEFT JOIN route_inbounds ri ON ri.inbound_id = i.id";

pub(super) const USER: &str = "id, username, enabled, note, traffic_limit, reset_strategy, \
    expires_ms, on_hold_days, first_connected_ms, used_up, used_down, period_started_ms, \
    lifetime_bytes, online_ms, subscription_token, all_clusters, created_ms, \
    vless_uuid, trojan_password, ss_seed, device_limit, address_limit, admin_id";

pub(super) fn to_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

pub(super) fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

pub(super) fn cluster(r: &AnyRow) -> Result<Cluster, sqlx::Error> {
    Ok(Cluster {
        id: r.try_get("id")?,
        name: r.try_get("name")?,
        created_ms: r.try_get("created_ms")?,
    })
}

pub(super) fn server(r: &AnyRow) -> Result<Server, sqlx::Error> {
    let state: String = r.try_get("state")?;
    let fingerprint: Option<String> = r.try_get("fingerprint")?;
    let capacity = Capacity {
        peak: r.try_get("capacity_peak")?,
        above_floor_ms: r.try_get("capacity_above_floor_ms")?,
        last_ms: r.try_get("capacity_last_ms")?,
    };
    Ok(Server {
        id: r.try_get("id")?,
        cluster_id: r.try_get("cluster_id")?,
        name: r.try_get("name")?,
        address: r.try_get("address")?,
        allow_private_destinations: r.try_get::<i64, _>("allow_private")? != 0,
        state: ServerState::parse(&state),
        state_reason: r.try_get("state_reason")?,
        state_since_ms: r.try_get("state_since_ms")?,
        refreshed_ms: r.try_get("refreshed_ms")?,
        joined: fingerprint.is_some(),
        hostname: r.try_get("hostname")?,
        node_version: r.try_get("node_version")?,
        binary_sha256: r.try_get("node_binary_sha256")?,
        upgrade_available: false,
        config_version: r
            .try_get::<Option<i64>, _>("config_version")?
            .map(|v| v as u64),
        users_online: to_u64(r.try_get("users_online")?),
        up_bytes_per_s: to_u64(r.try_get("up_bps")?),
        down_bytes_per_s: to_u64(r.try_get("down_bps")?),
        capacity_bytes_per_s: capacity
            .estimate(&EstimatorSettings::default())
            .map(|c| c as u64),
        capacity,
        created_ms: r.try_get("created_ms")?,
    })
}

fn decode_json<T: serde::de::DeserializeOwned>(r: &AnyRow, col: &str) -> Result<T, sqlx::Error> {
    let text: String = r.try_get(col)?;
    serde_json::from_str(&text).map_err(|e| sqlx::Error::ColumnDecode {
        index: col.into(),
        source: Box::new(e),
    })
}

fn bad(col: &str, what: String) -> sqlx::Error {
    sqlx::Error::ColumnDecode {
        index: col.into(),
        source: what.into(),
    }
}

pub(super) fn inbound(r: &AnyRow) -> Result<Inbound, sqlx::Error> {
    let protocol: String = r.try_get("protocol")?;
    Ok(Inbound {
        id: r.try_get("id")?,
        server_id: r.try_get("server_id")?,
        name: r.try_get("name")?,
        protocol: Protocol::parse(&protocol)
            .ok_or_else(|| bad("protocol", format!("unknown protocol {protocol:?}")))?,
        port: u16::try_from(r.try_get::<i64, _>("port")?).unwrap_or(0),
        transport: decode_json(r, "transport")?,
        security: decode_json(r, "security")?,
        host: r.try_get("host")?,
        sni: r.try_get("sni")?,
        coefficient: r.try_get("coefficient")?,
        method: r.try_get("method")?,
        flow: match r.try_get::<Option<String>, _>("flow")?.as_deref() {
            None => None,
            Some("xtls-rprx-vision") => Some(Flow::Vision),
            Some(other) => return Err(bad("flow", format!("unknown flow {other:?}"))),
        },
        reality_public_key: r.try_get("reality_public_key")?,
        hysteria2: match r.try_get::<Option<String>, _>("hysteria2")? {
            None => None,
            Some(text) => Some(
                serde_json::from_str(&text)
                    .map_err(|e| bad("hysteria2", format!("not Hysteria 2 settings: {e}")))?,
            ),
        },
        trusted_proxies: decode_json(r, "trusted_proxies")?,
        rules: decode_json(r, "rules")?,
        route_id: r.try_get("route_id")?,
        created_ms: r.try_get("created_ms")?,
    })
}

pub(super) fn inbound_secrets(r: &AnyRow) -> Result<InboundSecrets, sqlx::Error> {
    Ok(InboundSecrets {
        ss_server_key: r.try_get("ss_server_key")?,
        tls_cert_pem: r.try_get("tls_cert_pem")?,
        tls_key_pem: r.try_get("tls_key_pem")?,
        reality_private_key: r.try_get("reality_private_key")?,
        reality_public_key: r.try_get("reality_public_key")?,
        hy2_obfs_password: r.try_get("hy2_obfs_password")?,
    })
}

pub(super) fn route(r: &AnyRow) -> Result<Route, sqlx::Error> {
    let algorithm: String = r.try_get("algorithm")?;
    Ok(Route {
        id: r.try_get("id")?,
        cluster_id: r.try_get("cluster_id")?,
        name: r.try_get("name")?,
        flag: r.try_get("flag")?,
        algorithm: Algorithm::parse(&algorithm).unwrap_or_default(),
        position: r.try_get("position")?,
        is_default: r.try_get::<i64, _>("is_default")? != 0,
        inbound_ids: Vec::new(),
    })
}

/// A user (status computed at `now_ms`) and their credentials. `clusters` is filled
/// by the caller for users restricted to some clusters.
pub(super) fn user(r: &AnyRow, now_ms: i64) -> Result<(User, Credentials), sqlx::Error> {
    let strategy: String = r.try_get("reset_strategy")?;
    let token: String = r.try_get("subscription_token")?;
    let mut user = User {
        id: r.try_get("id")?,
        username: r.try_get("username")?,
        status: crate::model::UserStatus::Active,
        enabled: r.try_get::<i64, _>("enabled")? != 0,
        note: r.try_get("note")?,
        traffic_limit: r.try_get::<Option<i64>, _>("traffic_limit")?.map(to_u64),
        reset_strategy: ResetStrategy::parse(&strategy).unwrap_or_default(),
        expires_ms: r.try_get("expires_ms")?,
        on_hold_days: r
            .try_get::<Option<i64>, _>("on_hold_days")?
            .map(|d| u32::try_from(d).unwrap_or(u32::MAX)),
        first_connected_ms: r.try_get("first_connected_ms")?,
        used_up: to_u64(r.try_get("used_up")?),
        used_down: to_u64(r.try_get("used_down")?),
        period_started_ms: r.try_get("period_started_ms")?,
        lifetime_bytes: to_u64(r.try_get("lifetime_bytes")?),
        online_ms: r.try_get("online_ms")?,
        subscription_path: format!("/sub/{token}"),
        created_ms: r.try_get("created_ms")?,
        device_limit: r
            .try_get::<Option<i64>, _>("device_limit")?
            .map(|d| u32::try_from(d).unwrap_or(u32::MAX)),
        address_limit: r
            .try_get::<Option<i64>, _>("address_limit")?
            .map(|a| u32::try_from(a).unwrap_or(u32::MAX)),
        clusters: if r.try_get::<i64, _>("all_clusters")? != 0 {
            None
        } else {
            Some(Vec::new())
        },
        admin_id: r.try_get("admin_id")?,
    };
    user.status = user.standing().status(now_ms);
    let credentials = Credentials {
        vless_uuid: r.try_get("vless_uuid")?,
        trojan_password: r.try_get("trojan_password")?,
        ss_seed: r.try_get("ss_seed")?,
    };
    Ok((user, credentials))
}

/// The id column of an `INSERT ... RETURNING id`.
pub(super) fn id(r: &AnyRow) -> Result<Id, sqlx::Error> {
    r.try_get(0)
}
