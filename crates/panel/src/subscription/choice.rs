//! One route's choice for one user: the route's pool turned into
//! [`switchyard_balance::Candidate`]s with the fresh measurements of their servers,
//! and [`switchyard_balance::choose`]'s answer. Pure: the caller passes its `now`
//! (servers are judged at it, [`Server::state_at`]) and the user's previous choice.
//!
//! The measurements are the server's, since an inbound shares its machine's channel
//! with the server's other inbounds: capacity (the estimate, none until warmed up),
//! traffic (both directions, bytes/s, at the last heartbeat), users online (seen in
//! the last three minutes, [`WINDOW_MS`]); the coefficient is the
//! inbound's. Only online servers are available: a pending server has never carried
//! traffic, and an unavailable one stopped; when no inbound of the route is on an
//! online server, the balancer still gives the least-bad one, so the entry stays.

use switchyard_balance::{Algorithm as Balance, Candidate, Choice, Previous, Settings, choose};

use crate::model::{
    Algorithm, HealthSettings, Id, Inbound, InboundSecrets, Route, Server, ServerState,
};

/// How long a user seen online keeps counting among their server's users: 3 minutes.
/// The nodes' accounting counts a server's users online over the same window.
pub const WINDOW_MS: i64 = 180_000;

/// The inbound a route gives a user, with what the entry is made of.
#[derive(Clone, Copy, Debug)]
pub struct Picked<'a> {
    /// The chosen inbound.
    pub inbound: &'a Inbound,
    /// Its secrets.
    pub secrets: &'a InboundSecrets,
    /// Its server.
    pub server: &'a Server,
    /// The balancer's answer (why, by which algorithm).
    pub choice: Choice,
}

/// The balancer's algorithm for a route's.
pub fn algorithm(a: Algorithm) -> Balance {
    match a {
        Algorithm::LeastLoaded => Balance::LeastLoaded,
        Algorithm::RoundRobin => Balance::RoundRobin,
    }
}

/// The candidate for `inbound` on `server` (whose state is `state`), at position
/// `position` of the pool.
pub fn candidate(
    inbound: &Inbound,
    server: &Server,
    state: ServerState,
    position: u32,
) -> Candidate {
    Candidate {
        inbound: inbound.id,
        position,
        available: state == ServerState::Online,
        capacity: server.capacity_bytes_per_s.map(|c| c as f64),
        traffic: server
            .up_bytes_per_s
            .saturating_add(server.down_bytes_per_s) as f64,
        users: server.users_online,
        coefficient: inbound.coefficient,
    }
}

/// The cluster a route's pool is drawn from, judged at `now_ms`.
#[derive(Clone, Copy, Debug)]
pub struct Pool<'a> {
    /// The cluster's inbounds with their secrets.
    pub inbounds: &'a [(Inbound, InboundSecrets)],
    /// The cluster's servers, as stored.
    pub servers: &'a [Server],
    /// When the servers are judged (Unix ms).
    pub now_ms: i64,
    /// How they are judged.
    pub health: HealthSettings,
}

/// Picks `route`'s inbound for a user whose previous choice for it was `previous`.
/// None when the route has no inbound that exists (an empty route).
pub fn pick<'a>(
    route: &Route,
    cluster: Pool<'a>,
    previous: Option<Previous>,
    settings: &Settings,
) -> Option<Picked<'a>> {
    let Pool {
        inbounds,
        servers,
        now_ms,
        health,
    } = cluster;
    let mut pool = Vec::with_capacity(route.inbound_ids.len());
    let mut parts = Vec::with_capacity(route.inbound_ids.len());
    for (position, id) in route.inbound_ids.iter().enumerate() {
        let Some((inbound, secrets)) = inbounds.iter().find(|(i, _)| i.id == *id) else {
            continue;
        };
        let Some(server) = servers.iter().find(|s| s.id == inbound.server_id) else {
            continue;
        };
        let state = server.state_at(now_ms, health);
        pool.push(candidate(inbound, server, state, position as u32));
        parts.push((inbound, secrets, server));
    }
    let choice = choose(algorithm(route.algorithm), &pool, previous, settings)?;
    let at = pool.iter().position(|c| c.inbound == choice.inbound)?;
    let (inbound, secrets, server) = parts[at];
    Some(Picked {
        inbound,
        secrets,
        server,
        choice,
    })
}

/// The previous choice as the balancer takes it: `counted` when the user was seen
/// online within the window (so they are among its server's users).
pub fn previous(inbound: Option<Id>, user_online_ms: Option<i64>, now_ms: i64) -> Option<Previous> {
    let counted = user_online_ms.is_some_and(|t| now_ms - t < WINDOW_MS);
    inbound.map(|inbound| Previous { inbound, counted })
}

#[cfg(test)]
mod tests {
    use switchyard_balance::Reason;

    use super::*;
    use crate::model::{InboundSecurity, InboundTransport, Protocol};

    fn server(id: Id, state: ServerState, users: u64, traffic: u64, cap: Option<u64>) -> Server {
        Server {
            id,
            cluster_id: 1,
            name: format!("s{id}"),
            address: "127.0.0.1".into(),
            allow_private_destinations: false,
            state,
            state_reason: String::new(),
            state_since_ms: 0,
            refreshed_ms: Some(0),
            joined: true,
            hostname: None,
            node_version: None,
            binary_sha256: None,
            upgrade_available: false,
            config_version: None,
            users_online: users,
            up_bytes_per_s: traffic / 2,
            down_bytes_per_s: traffic - traffic / 2,
            capacity_bytes_per_s: cap,
            capacity: Default::default(),
            created_ms: 0,
        }
    }

    fn inbound(id: Id, server_id: Id, coefficient: f64) -> (Inbound, InboundSecrets) {
        (
            Inbound {
                id,
                server_id,
                name: format!("in{id}"),
                protocol: Protocol::Vless,
                port: 443,
                transport: InboundTransport::Tcp,
                security: InboundSecurity::None,
                host: None,
                sni: None,
                coefficient,
                method: None,
                flow: None,
                reality_public_key: None,
                route_id: Some(1),
                created_ms: 0,
                hysteria2: None,
                trusted_proxies: Vec::new(),
                rules: Default::default(),
            },
            InboundSecrets::default(),
        )
    }

    fn pool<'a>(inbounds: &'a [(Inbound, InboundSecrets)], servers: &'a [Server]) -> Pool<'a> {
        Pool {
            inbounds,
            servers,
            now_ms: 0,
            health: HealthSettings::default(),
        }
    }

    fn route(algorithm: Algorithm, pool: Vec<Id>) -> Route {
        Route {
            id: 1,
            cluster_id: 1,
            name: "r".into(),
            flag: None,
            algorithm,
            position: 0,
            is_default: false,
            inbound_ids: pool,
        }
    }

    #[test]
    fn least_loaded_takes_the_most_free_bandwidth_per_user() {
        // Server 1: (1000 - 400) / (2 + 1) = 200; server 2: (900 - 100) / (3 + 1) = 200
        // ties go to the pool order; server 3: (2000 - 1000) / (3 + 1) = 250 wins.
        let servers = [
            server(1, ServerState::Online, 2, 400, Some(1000)),
            server(2, ServerState::Online, 3, 100, Some(900)),
            server(3, ServerState::Online, 3, 1000, Some(2000)),
        ];
        let inbounds = [
            inbound(11, 1, 1.0),
            inbound(12, 2, 1.0),
            inbound(13, 3, 1.0),
        ];
        let r = route(Algorithm::LeastLoaded, vec![11, 12, 13]);
        let p = pick(&r, pool(&inbounds, &servers), None, &Settings::default()).unwrap();
        assert_eq!(p.inbound.id, 13);
        assert_eq!(p.choice.metric, 250.0);
        assert_eq!(p.choice.applied, Balance::LeastLoaded);
        assert_eq!(p.server.id, 3);
    }

    #[test]
    fn a_server_without_estimate_makes_the_route_round_robin() {
        let servers = [
            server(1, ServerState::Online, 4, 0, Some(10_000)),
            server(2, ServerState::Online, 3, 0, None),
        ];
        let inbounds = [inbound(11, 1, 2.0), inbound(12, 2, 1.0)];
        let r = route(Algorithm::LeastLoaded, vec![11, 12]);
        let p = pick(&r, pool(&inbounds, &servers), None, &Settings::default()).unwrap();
        // 4 / 2.0 = 2 < 3 / 1.0 = 3.
        assert_eq!(p.inbound.id, 11);
        assert_eq!(p.choice.applied, Balance::RoundRobin);
        assert_eq!(p.choice.metric, 2.0);
    }

    #[test]
    fn pending_and_unavailable_servers_are_not_candidates_until_nothing_else_is_left() {
        let mut servers = vec![
            server(1, ServerState::Unavailable, 0, 0, None),
            server(2, ServerState::Pending, 0, 0, None),
            server(3, ServerState::Online, 50, 0, None),
        ];
        let inbounds = [
            inbound(11, 1, 1.0),
            inbound(12, 2, 1.0),
            inbound(13, 3, 1.0),
        ];
        let r = route(Algorithm::RoundRobin, vec![11, 12, 13]);
        let p = pick(&r, pool(&inbounds, &servers), None, &Settings::default()).unwrap();
        assert_eq!((p.inbound.id, p.choice.reason), (13, Reason::Best));
        servers[2].state = ServerState::Unavailable;
        let p = pick(&r, pool(&inbounds, &servers), None, &Settings::default()).unwrap();
        assert_eq!(p.choice.reason, Reason::LeastBad);
    }

    #[test]
    fn the_previous_choice_is_kept_unless_beaten_by_the_margin() {
        let servers = [
            server(1, ServerState::Online, 4, 0, None),
            server(2, ServerState::Online, 3, 0, None),
        ];
        let inbounds = [inbound(11, 1, 1.0), inbound(12, 2, 1.0)];
        let r = route(Algorithm::RoundRobin, vec![11, 12]);
        // The user is one of server 1's 4: judged as 3 there, the same as server 2.
        let prev = previous(Some(11), Some(1_000), 2_000);
        let p = pick(&r, pool(&inbounds, &servers), prev, &Settings::default()).unwrap();
        assert_eq!((p.inbound.id, p.choice.reason), (11, Reason::Kept));
        // Not seen for longer than the window: judged with 4; 3 × 1.25 = 3.75 < 4.
        let prev = previous(Some(11), Some(0), WINDOW_MS);
        let p = pick(&r, pool(&inbounds, &servers), prev, &Settings::default()).unwrap();
        assert_eq!((p.inbound.id, p.choice.reason), (12, Reason::Moved));
    }

    #[test]
    fn missing_inbounds_and_empty_routes_give_nothing() {
        let servers = [server(1, ServerState::Online, 0, 0, None)];
        let inbounds = [inbound(11, 1, 1.0)];
        assert!(
            pick(
                &route(Algorithm::RoundRobin, vec![]),
                pool(&inbounds, &servers),
                None,
                &Settings::default()
            )
            .is_none()
        );
        let p = pick(
            &route(Algorithm::RoundRobin, vec![99, 11]),
            pool(&inbounds, &servers),
            None,
            &Settings::default(),
        )
        .unwrap();
        assert_eq!(p.inbound.id, 11);
    }
}
