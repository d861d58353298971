//! What the node keeps per inbound tag across rebuilds of that inbound: the
//! pre-authentication limits, the counters of its protections, and the replay state
//! of Shadowsocks and REALITY (a salt, packet or ClientHello replayed into a rebuilt
//! inbound is still refused).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use ::shadowsocks::config::ServerType;
use ::shadowsocks::context::{Context, SharedContext};
use switchyard_proto::reality::ReplayFilter;

use super::shadowsocks::replay::{Salts as SsSalts, Sessions as SsSessions};

/// UDP associations one user may hold at once, over every inbound. 256: each holds a
/// socket (a file descriptor) and a task; an app opens one per UDP flow (a game, a
/// QUIC site), and past this a user's new flows are refused until old ones end or
/// idle out.
pub(crate) const MAX_UDP_PER_USER: usize = 256;

/// Every inbound tag's state, and what users hold across inbounds.
#[derive(Default)]
pub(crate) struct InboundStates {
    by_tag: Mutex<HashMap<String, Arc<InboundState>>>,
    udp: Arc<Mutex<HashMap<String, usize>>>,
    udp_refused: AtomicU64,
}

/// One of a user's UDP associations, counted until dropped.
pub(crate) struct UdpSlot {
    table: Arc<Mutex<HashMap<String, usize>>>,
    user: String,
}

impl Drop for UdpSlot {
    fn drop(&mut self) {
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = table.get_mut(&self.user) {
            *n -= 1;
            if *n == 0 {
                table.remove(&self.user);
            }
        }
    }
}

impl InboundStates {
    /// The state of `tag`, made on first use.
    pub(crate) fn get(&self, tag: &str) -> Arc<InboundState> {
        let mut map = self.by_tag.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(tag.to_owned()).or_default().clone()
    }

    /// A UDP association for `user`, or `None` (logged and counted) when the user
    /// holds [`MAX_UDP_PER_USER`] already.
    pub(crate) fn udp_slot(&self, user: &str) -> Option<UdpSlot> {
        self.udp_slot_with(user, MAX_UDP_PER_USER)
    }

    fn udp_slot_with(&self, user: &str, max: usize) -> Option<UdpSlot> {
        let mut table = self.udp.lock().unwrap_or_else(|p| p.into_inner());
        let held = table.entry(user.to_owned()).or_insert(0);
        if *held >= max {
            self.udp_refused.fetch_add(1, Ordering::Relaxed);
            tracing::info!(%user, "UDP association refused: the user holds {max} already");
            return None;
        }
        *held += 1;
        Some(UdpSlot {
            table: self.udp.clone(),
            user: user.to_owned(),
        })
    }

    /// Appends the protections' Prometheus lines.
    pub(crate) fn write_metrics(&self, out: &mut String) {
        let map = self.by_tag.lock().unwrap_or_else(|p| p.into_inner());
        let mut tags: Vec<_> = map.iter().collect();
        tags.sort_by(|a, b| a.0.cmp(b.0));
        type Metric = (
            &'static str,
            &'static str,
            &'static str,
            fn(&InboundState) -> u64,
        );
        let metrics: [Metric; 8] = [
            (
                "switchyard_inbound_unauthenticated",
                "gauge",
                "Connections in their handshake now, per inbound.",
                |s| s.pending.total() as u64,
            ),
            (
                "switchyard_inbound_handshake_limited_total",
                "counter",
                "Connections closed at once because too many were in their handshake (per inbound or per source).",
                |s| s.limited.load(Ordering::Relaxed),
            ),
            (
                "switchyard_inbound_blocked_total",
                "counter",
                "Users' TCP connections and UDP datagrams a routing rule sent to a block outbound, per inbound.",
                |s| s.blocked.load(Ordering::Relaxed),
            ),
            (
                "switchyard_inbound_task_restarts_total",
                "counter",
                "Times an inbound's accept or receive task failed and was restarted.",
                |s| s.restarts.load(Ordering::Relaxed),
            ),
            (
                "switchyard_inbound_vision_total",
                "counter",
                "VLESS connections that used the xtls-rprx-vision flow, per inbound.",
                |s| s.vision.load(Ordering::Relaxed),
            ),
            (
                "switchyard_inbound_vision_direct_up_total",
                "counter",
                "Vision connections whose client switched to direct copy (its inner TLS 1.3 records raw on TCP), per inbound.",
                |s| s.vision_direct_up.load(Ordering::Relaxed),
            ),
            (
                "switchyard_inbound_vision_direct_down_total",
                "counter",
                "Vision connections on which the node switched to direct copy, per inbound.",
                |s| s.vision_direct_down.load(Ordering::Relaxed),
            ),
            (
                "switchyard_inbound_spliced_total",
                "counter",
                "Connections relayed inside the kernel (splice), raw TCP on both sides: plain inbounds dialing straight out, fallbacks, REALITY's borrowed site, per inbound.",
                |s| s.spliced.load(Ordering::Relaxed),
            ),
        ];
        let _ = writeln!(
            out,
            "# HELP switchyard_udp_associations_refused_total UDP associations refused because the user held too many.\n# TYPE switchyard_udp_associations_refused_total counter\nswitchyard_udp_associations_refused_total {}",
            self.udp_refused.load(Ordering::Relaxed)
        );
        for (name, kind, help, value) in metrics {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for (tag, state) in &tags {
                let _ = writeln!(out, "{name}{{inbound=\"{tag}\"}} {}", value(state));
            }
        }
    }
}

impl std::fmt::Debug for InboundStates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InboundStates").finish_non_exhaustive()
    }
}

/// One inbound tag's state.
#[derive(Default)]
pub(crate) struct InboundState {
    /// Connections in their handshake.
    pub(crate) pending: Arc<Pending>,
    /// Connections closed by the pre-authentication limits.
    pub(crate) limited: AtomicU64,
    /// Users' connections a routing rule blocked.
    pub(crate) blocked: AtomicU64,
    /// Failed tasks restarted.
    pub(crate) restarts: Arc<AtomicU64>,
    /// VLESS connections with the Vision flow.
    pub(crate) vision: AtomicU64,
    /// Vision connections whose uplink (the client's writes) went to direct copy.
    pub(crate) vision_direct_up: AtomicU64,
    /// Vision connections whose downlink (the node's writes) went to direct copy.
    pub(crate) vision_direct_down: AtomicU64,
    /// Connections relayed inside the kernel (`splice(2)`), raw TCP both sides.
    pub(crate) spliced: AtomicU64,
    ss: OnceLock<SsState>,
    reality: OnceLock<Arc<Mutex<ReplayFilter>>>,
}

/// Shadowsocks' replay state of one inbound tag.
pub(crate) struct SsState {
    /// The crate's context: the UDP side's nonce generator.
    pub(crate) context: SharedContext,
    /// TCP requests' salts of the last minute.
    pub(crate) salts: SsSalts,
    /// UDP sessions' packet-id windows.
    pub(crate) sessions: SsSessions,
}

impl InboundState {
    /// The REALITY hellos accepted lately, kept for the tag's lifetime; a rebuild
    /// with another `max_time_diff_ms` changes how long they are kept from now on.
    pub(crate) fn reality_replay(
        &self,
        max_time_diff_ms: u64,
        now_ms: i64,
    ) -> Arc<Mutex<ReplayFilter>> {
        let filter = self
            .reality
            .get_or_init(|| Arc::new(Mutex::new(ReplayFilter::new(max_time_diff_ms, now_ms))));
        filter
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .set_max_time_diff(max_time_diff_ms);
        filter.clone()
    }

    /// The Shadowsocks replay state, kept for the tag's lifetime.
    pub(crate) fn shadowsocks(&self) -> &SsState {
        self.ss.get_or_init(|| SsState {
            context: Context::new_shared(ServerType::Server),
            salts: SsSalts::default(),
            sessions: SsSessions::default(),
        })
    }
}

/// Counts of connections in their handshake, in total and by source.
#[derive(Default)]
pub(crate) struct Pending {
    counts: Mutex<(usize, HashMap<IpAddr, usize>)>,
}

impl Pending {
    fn total(&self) -> usize {
        self.counts.lock().unwrap_or_else(|p| p.into_inner()).0
    }

    /// Admits a connection from `ip` into its handshake, or `None` when `total` are
    /// in theirs already, or `per` from `ip`.
    pub(crate) fn enter(
        self: &Arc<Self>,
        ip: IpAddr,
        total: usize,
        per: usize,
    ) -> Option<Unauthenticated> {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let from = counts.1.get(&ip).copied().unwrap_or(0);
        if counts.0 >= total || from >= per {
            return None;
        }
        counts.0 += 1;
        counts.1.insert(ip, from + 1);
        Some(Unauthenticated {
            pending: Some(self.clone()),
            ip,
        })
    }

    fn leave(&self, ip: IpAddr) {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        counts.0 = counts.0.saturating_sub(1);
        if let Some(n) = counts.1.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                counts.1.remove(&ip);
            }
        }
    }
}

/// A connection counted as in its handshake until it authenticates or ends.
pub(crate) struct Unauthenticated {
    pending: Option<Arc<Pending>>,
    ip: IpAddr,
}

impl Unauthenticated {
    /// The connection authenticated: it no longer counts.
    pub(crate) fn authenticated(&mut self) {
        if let Some(p) = self.pending.take() {
            p.leave(self.ip);
        }
    }
}

impl Drop for Unauthenticated {
    fn drop(&mut self) {
        self.authenticated();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_holds_at_most_the_udp_limit_and_dropping_frees_a_slot() {
        let states = InboundStates::default();
        let mut held: Vec<_> = (0..3)
            .map(|_| states.udp_slot_with("alice", 3).unwrap())
            .collect();
        assert!(states.udp_slot_with("alice", 3).is_none());
        assert!(states.udp_slot_with("bob", 3).is_some(), "per user");
        held.pop();
        let again = states.udp_slot_with("alice", 3);
        assert!(again.is_some());
        drop((held, again));
        assert!(states.udp.lock().unwrap().is_empty());
        assert_eq!(states.udp_refused.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn limits_hold_in_total_and_per_source_and_free_on_authentication() {
        let p = Arc::new(Pending::default());
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        let mut from_a: Vec<_> = (0..2).map(|_| p.enter(a, 3, 2).unwrap()).collect();
        assert!(p.enter(a, 3, 2).is_none(), "per-source limit");
        let from_b = p.enter(b, 3, 2).unwrap();
        assert!(p.enter(b, 3, 2).is_none(), "total limit");
        from_a[0].authenticated();
        assert_eq!(p.total(), 2);
        let again = p.enter(a, 3, 2).unwrap();
        drop(from_b);
        drop(again);
        from_a.clear();
        assert_eq!(p.total(), 0);
        assert!(p.counts.lock().unwrap().1.is_empty());
    }
}
