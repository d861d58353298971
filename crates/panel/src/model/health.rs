//! Server health: pending, online, unavailable, with hysteresis so one blip does not
//! flap a server (and with it every route that balances over it).
//!
//! The panel instance that holds a node's channel sends it a heartbeat (a status
//! request) every [`HealthSettings::heartbeat`] and feeds each outcome to
//! [`Health::observe`]; [`Health::tick`] moves time on between outcomes. Pure: time is
//! passed in.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A server's state as operators and the balancer see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ServerState {
    /// Created, never heard from (not joined yet, or joined and never connected).
    Pending,
    /// Answering heartbeats.
    Online,
    /// Missed heartbeats for longer than the grace; excluded from balancing.
    Unavailable,
}

impl ServerState {
    /// Its name in the API and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Online => "online",
            Self::Unavailable => "unavailable",
        }
    }

    /// The state named `s` (unknown names read as pending).
    pub fn parse(s: &str) -> Self {
        match s {
            "online" => Self::Online,
            "unavailable" => Self::Unavailable,
            _ => Self::Pending,
        }
    }
}

/// The timings of health. Defaults: a heartbeat every 2 s; unavailable after 10 s
/// without an answer (four missed heartbeats, so a single lost one or a slow answer
/// never flips it); online again after 2 answers in a row (one lucky answer through a
/// flapping path does not bring it back).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HealthSettings {
    /// Between heartbeats, ms.
    pub heartbeat_ms: i64,
    /// Without an answer for this long, an online server becomes unavailable, ms.
    pub down_after_ms: i64,
    /// Answers in a row that bring an unavailable server back.
    pub up_after: u32,
}

impl Default for HealthSettings {
    fn default() -> Self {
        Self {
            heartbeat_ms: 2_000,
            down_after_ms: 10_000,
            up_after: 2,
        }
    }
}

/// One heartbeat's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Observation {
    /// The node answered.
    Answered,
    /// It did not; why (channel down, timeout, error status).
    Failed(String),
}

/// The health of one server, as its channel's holder tracks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Health {
    /// The state now.
    pub state: ServerState,
    /// Why it is in that state (empty when online).
    pub reason: String,
    /// Since when (Unix ms).
    pub since_ms: i64,
    /// The last answer.
    pub last_answer_ms: Option<i64>,
    /// Why the last heartbeat failed, since the last answer.
    last_failure: Option<String>,
    streak: u32,
    settings: HealthSettings,
}

impl Health {
    /// A server never heard from.
    pub fn new(now_ms: i64, settings: HealthSettings) -> Self {
        Self {
            state: ServerState::Pending,
            reason: "never connected".into(),
            since_ms: now_ms,
            last_answer_ms: None,
            last_failure: None,
            streak: 0,
            settings,
        }
    }

    fn enter(&mut self, state: ServerState, reason: String, now_ms: i64) {
        if self.state != state {
            self.since_ms = now_ms;
        }
        self.state = state;
        self.reason = reason;
    }

    /// Records a heartbeat's outcome at `now_ms`.
    pub fn observe(&mut self, now_ms: i64, observation: Observation) {
        match observation {
            Observation::Answered => {
                self.last_answer_ms = Some(now_ms);
                self.last_failure = None;
                self.streak = self.streak.saturating_add(1);
                let back = match self.state {
                    ServerState::Pending => true,
                    ServerState::Unavailable => self.streak >= self.settings.up_after,
                    ServerState::Online => true,
                };
                if back {
                    self.enter(ServerState::Online, String::new(), now_ms);
                }
            }
            Observation::Failed(reason) => {
                self.streak = 0;
                self.last_failure = Some(reason.clone());
                match self.state {
                    ServerState::Online => {
                        let silent = self.last_answer_ms.map_or(i64::MAX, |t| now_ms - t);
                        if silent >= self.settings.down_after_ms {
                            self.enter(ServerState::Unavailable, reason, now_ms);
                        }
                    }
                    // Keep the state, tell why it is still not online.
                    ServerState::Unavailable | ServerState::Pending => self.reason = reason,
                }
            }
        }
    }

    /// Moves time on with nothing heard: an online server silent for longer than the
    /// grace becomes unavailable, with the last failure's reason if there was one.
    pub fn tick(&mut self, now_ms: i64) {
        if self.state == ServerState::Online {
            let silent = self.last_answer_ms.map_or(i64::MAX, |t| now_ms - t);
            if silent >= self.settings.down_after_ms {
                self.streak = 0;
                let reason = self
                    .last_failure
                    .clone()
                    .unwrap_or_else(|| format!("no heartbeat answered for {} s", silent / 1000));
                self.enter(ServerState::Unavailable, reason, now_ms);
            }
        }
    }
}

/// The state another panel instance should show for a server whose stored state was
/// last refreshed at `refreshed_ms`: if the holder stopped refreshing it (it died, or
/// no instance holds the channel), the server is unavailable.
pub fn stored_state(
    state: ServerState,
    refreshed_ms: Option<i64>,
    now_ms: i64,
    settings: HealthSettings,
) -> (ServerState, Option<&'static str>) {
    match (state, refreshed_ms) {
        (ServerState::Pending, _) => (ServerState::Pending, None),
        (_, Some(t)) if now_ms - t < settings.down_after_ms + settings.heartbeat_ms => {
            (state, None)
        }
        _ => (
            ServerState::Unavailable,
            Some("no panel instance holds the node's channel"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed() -> Observation {
        Observation::Failed("channel down".into())
    }

    #[test]
    fn a_new_server_is_pending_until_it_answers() {
        let mut h = Health::new(0, HealthSettings::default());
        assert_eq!(h.state, ServerState::Pending);
        h.observe(2_000, failed());
        h.tick(60_000);
        assert_eq!(h.state, ServerState::Pending);
        assert_eq!(h.reason, "channel down");
        h.observe(62_000, Observation::Answered);
        assert_eq!((h.state, h.since_ms), (ServerState::Online, 62_000));
    }

    #[test]
    fn one_blip_does_not_flap_it() {
        let mut h = Health::new(0, HealthSettings::default());
        h.observe(0, Observation::Answered);
        // Heartbeats at 2 s steps fail until 8 s: under the 10 s grace.
        for t in [2_000, 4_000, 6_000, 8_000] {
            h.observe(t, failed());
            h.tick(t + 1);
            assert_eq!(h.state, ServerState::Online, "at {t}");
        }
        h.observe(9_999, failed());
        assert_eq!(h.state, ServerState::Online);
        h.observe(10_000, failed());
        assert_eq!((h.state, h.since_ms), (ServerState::Unavailable, 10_000));
        assert_eq!(h.reason, "channel down");
    }

    #[test]
    fn silence_alone_makes_it_unavailable() {
        let mut h = Health::new(0, HealthSettings::default());
        h.observe(1_000, Observation::Answered);
        h.tick(10_999);
        assert_eq!(h.state, ServerState::Online);
        h.tick(11_000);
        assert_eq!(h.state, ServerState::Unavailable);
        assert_eq!(h.reason, "no heartbeat answered for 10 s");
        // A known failure is the better reason.
        let mut h = Health::new(0, HealthSettings::default());
        h.observe(0, Observation::Answered);
        h.observe(1_000, failed());
        h.tick(10_000);
        assert_eq!(
            (h.state, h.reason.as_str()),
            (ServerState::Unavailable, "channel down")
        );
    }

    #[test]
    fn it_comes_back_after_two_answers_in_a_row() {
        let mut h = Health::new(0, HealthSettings::default());
        h.observe(0, Observation::Answered);
        h.tick(20_000);
        assert_eq!(h.state, ServerState::Unavailable);
        h.observe(22_000, Observation::Answered);
        assert_eq!(h.state, ServerState::Unavailable);
        h.observe(24_000, failed());
        h.observe(26_000, Observation::Answered);
        assert_eq!(h.state, ServerState::Unavailable);
        h.observe(28_000, Observation::Answered);
        assert_eq!((h.state, h.since_ms), (ServerState::Online, 28_000));
        assert_eq!(h.reason, "");
    }

    #[test]
    fn a_stale_stored_state_reads_unavailable() {
        let s = HealthSettings::default();
        assert_eq!(
            stored_state(ServerState::Online, Some(0), 11_999, s).0,
            ServerState::Online
        );
        assert_eq!(
            stored_state(ServerState::Online, Some(0), 12_000, s).0,
            ServerState::Unavailable
        );
        assert_eq!(
            stored_state(ServerState::Pending, None, 99_000, s).0,
            ServerState::Pending
        );
    }
}
