//! The simulated world: how every server and the network answer at any time.
//!
//! Each server and the network have a piecewise-constant timeline, painted from the
//! scenario's `world` entries in order (a later entry overrides an earlier one where
//! they overlap). Lookups are a binary search; nothing is sampled.

use std::collections::HashMap;

use switchyard_auto::server::ServerId;
use switchyard_auto::time::Timestamp;

/// How one server answers at some moment (the network aside).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerState {
    /// It answers; a probe sees this latency in milliseconds.
    Answers {
        /// Probe latency, milliseconds.
        ms: u32,
    },
    /// It refuses connections: probes and connects fail at once.
    Refuses,
    /// It accepts and never answers: probes time out, traffic stalls. This is also the
    /// state of a server no `world` entry covers.
    Blackhole,
}

/// The device's network at some moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetworkState {
    /// Working.
    Up,
    /// `network: down`: an interface is up but nothing answers; probes time out.
    Down,
    /// `network: none`: no interface at all; probes fail at once.
    Absent,
}

/// One `world` entry after validation, in milliseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct WorldEntry {
    /// What the entry is about.
    pub target: WorldTarget,
    /// Start, inclusive.
    pub from: Timestamp,
    /// End, exclusive.
    pub to: Timestamp,
}

/// What a [`WorldEntry`] sets.
#[derive(Clone, Debug, PartialEq)]
pub enum WorldTarget {
    /// One server (by index into the world's servers), or every server (`None`).
    Server(Option<usize>, ServerState),
    /// The network.
    Network(NetworkState),
}

/// A piecewise-constant value over all of time: `states[i]` holds from `starts[i]` to
/// `starts[i + 1]`. `starts[0]` is `i64::MIN`, so every time has a state.
#[derive(Clone, Debug)]
struct Timeline<S> {
    starts: Vec<i64>,
    states: Vec<S>,
}

impl<S: Copy + PartialEq> Timeline<S> {
    fn new(initial: S) -> Self {
        Self {
            starts: vec![i64::MIN],
            states: vec![initial],
        }
    }

    fn segment(&self, t: i64) -> usize {
        self.starts.partition_point(|&s| s <= t) - 1
    }

    fn at(&self, t: i64) -> S {
        self.states[self.segment(t)]
    }

    /// End of the segment `i`, exclusive.
    fn end(&self, i: usize) -> i64 {
        self.starts.get(i + 1).copied().unwrap_or(i64::MAX)
    }

    /// Sets `state` on `[from, to)`.
    fn paint(&mut self, from: i64, to: i64, state: S) {
        if from >= to {
            return;
        }
        let after = self.at(to);
        let mut starts = Vec::with_capacity(self.starts.len() + 2);
        let mut states = Vec::with_capacity(self.states.len() + 2);
        let mut push = |t: i64, s: S| {
            if states.last() != Some(&s) {
                starts.push(t);
                states.push(s);
            }
        };
        for (&t, &s) in self.starts.iter().zip(&self.states) {
            if t < from {
                push(t, s);
            }
        }
        push(from, state);
        if to != i64::MAX && !self.starts.contains(&to) {
            push(to, after);
        }
        for (&t, &s) in self.starts.iter().zip(&self.states) {
            if t >= to {
                push(t, s);
            }
        }
        self.starts = starts;
        self.states = states;
    }
}

/// The world of a scenario: every server's and the network's timelines.
#[derive(Clone, Debug)]
pub struct World {
    ids: Vec<ServerId>,
    index: HashMap<ServerId, usize>,
    servers: Vec<Timeline<ServerState>>,
    network: Timeline<NetworkState>,
}

impl World {
    /// Builds the world of `servers` (their index is their position) from `entries`
    /// applied in order. Servers nothing covers are [`ServerState::Blackhole`]; the
    /// network is [`NetworkState::Up`] where nothing says otherwise.
    pub fn new(servers: Vec<ServerId>, entries: &[WorldEntry]) -> Self {
        let index = servers
            .iter()
            .enumerate()
            .map(|(i, id)| (id.clone(), i))
            .collect();
        let mut timelines = vec![Timeline::new(ServerState::Blackhole); servers.len()];
        let mut network = Timeline::new(NetworkState::Up);
        for e in entries {
            let (from, to) = (e.from.as_millis(), e.to.as_millis());
            match e.target {
                WorldTarget::Server(Some(i), state) => {
                    if let Some(t) = timelines.get_mut(i) {
                        t.paint(from, to, state);
                    }
                }
                WorldTarget::Server(None, state) => {
                    for t in &mut timelines {
                        t.paint(from, to, state);
                    }
                }
                WorldTarget::Network(state) => network.paint(from, to, state),
            }
        }
        Self {
            ids: servers,
            index,
            servers: timelines,
            network,
        }
    }

    /// The index of a server, if the world knows it.
    pub fn index_of(&self, id: &ServerId) -> Option<usize> {
        self.index.get(id).copied()
    }

    /// The identity of the server at `index`.
    pub fn id(&self, index: usize) -> &ServerId {
        &self.ids[index]
    }

    /// How the server at `index` answers at `t` (unknown indexes: blackhole).
    pub fn server_at(&self, index: usize, t: Timestamp) -> ServerState {
        self.servers
            .get(index)
            .map_or(ServerState::Blackhole, |tl| tl.at(t.as_millis()))
    }

    /// How a server answers at `t`; a server the world does not know never answers.
    pub fn server_state(&self, id: &ServerId, t: Timestamp) -> ServerState {
        self.index_of(id)
            .map_or(ServerState::Blackhole, |i| self.server_at(i, t))
    }

    /// The network at `t`.
    pub fn network_at(&self, t: Timestamp) -> NetworkState {
        self.network.at(t.as_millis())
    }

    /// Whether user traffic through `server` gets answers at `t`: the server answers
    /// and the network is up. `None` (no server) never answers.
    pub fn answers(&self, server: Option<usize>, t: Timestamp) -> bool {
        server.is_some_and(|i| matches!(self.server_at(i, t), ServerState::Answers { .. }))
            && self.network_at(t) == NetworkState::Up
    }

    /// Every change of the network's state after `Timestamp::ZERO`, in time order, with
    /// the new state.
    pub fn network_changes(&self) -> impl Iterator<Item = (Timestamp, NetworkState)> + '_ {
        self.network
            .starts
            .iter()
            .zip(&self.network.states)
            .filter(|&(&t, _)| t > 0)
            .map(|(&t, &s)| (Timestamp(t), s))
    }

    /// Milliseconds within `[from, to)` in which traffic through `server` gets no
    /// answer (see [`answers`](Self::answers)); exact, from the timelines.
    pub fn silent_ms(&self, server: Option<usize>, from: Timestamp, to: Timestamp) -> i64 {
        let (from, to) = (from.as_millis(), to.as_millis());
        if from >= to {
            return 0;
        }
        let Some(tl) = server.and_then(|i| self.servers.get(i)) else {
            return to - from;
        };
        let (mut s, mut n) = (tl.segment(from), self.network.segment(from));
        let (mut t, mut silent) = (from, 0);
        while t < to {
            let end = tl.end(s).min(self.network.end(n)).min(to);
            let up = matches!(tl.states[s], ServerState::Answers { .. })
                && self.network.states[n] == NetworkState::Up;
            if !up {
                silent += end - t;
            }
            t = end;
            if t >= tl.end(s) {
                s += 1;
            }
            if t >= self.network.end(n) {
                n += 1;
            }
        }
        silent
    }
}

impl World {
    /// Milliseconds of traffic without answers over a run: within the `traffic`
    /// intervals (sorted, disjoint), the time the current server did not answer or the
    /// network was not up. `connects` lists when the current server changed (its index,
    /// `None` for a server the world does not know); before the first, there is none.
    /// Exact, from the timelines; nothing is sampled.
    pub fn outage_ms(
        &self,
        traffic: &[(Timestamp, Timestamp)],
        connects: &[(Timestamp, Option<usize>)],
        until: Timestamp,
    ) -> i64 {
        let mut outage = 0;
        let (mut from, mut server) = (Timestamp::ZERO, None);
        for &(t, next) in connects.iter().chain([(until, None)].iter()) {
            let t = t.min(until);
            let first = traffic.partition_point(|&(_, to)| to <= from);
            for &(a, b) in &traffic[first..] {
                if a >= t {
                    break;
                }
                outage += self.silent_ms(server, a.max(from), b.min(t));
            }
            (from, server) = (t, next);
        }
        outage
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_paint_overrides_and_neighbours_survive() {
        let mut t = Timeline::new(0u8);
        t.paint(0, 100, 1);
        t.paint(50, 150, 2);
        t.paint(60, 70, 1);
        let at: Vec<u8> = [-1, 0, 49, 50, 59, 60, 69, 70, 149, 150]
            .iter()
            .map(|&x| t.at(x))
            .collect();
        assert_eq!(at, [0, 1, 1, 2, 2, 1, 1, 2, 2, 0]);
        t.paint(i64::MIN, i64::MAX, 3);
        assert_eq!((t.starts.len(), t.at(0)), (1, 3));
    }

    #[test]
    fn silent_time_counts_server_and_network() {
        let w = World::new(
            vec![ServerId::new("a")],
            &[
                WorldEntry {
                    target: WorldTarget::Server(None, ServerState::Answers { ms: 50 }),
                    from: Timestamp(0),
                    to: Timestamp(10_000),
                },
                WorldEntry {
                    target: WorldTarget::Network(NetworkState::Down),
                    from: Timestamp(2_000),
                    to: Timestamp(3_000),
                },
            ],
        );
        assert_eq!(w.silent_ms(Some(0), Timestamp(0), Timestamp(12_000)), 3_000);
        assert_eq!(
            w.silent_ms(Some(0), Timestamp(2_500), Timestamp(9_000)),
            500
        );
        assert_eq!(w.silent_ms(None, Timestamp(0), Timestamp(5)), 5);
    }
}
