//! Auto's settings and the spec's fixed numbers, each in one place.

use core::time::Duration;

use serde::{Deserialize, Serialize};

use crate::measurement::{Method, ProbeRules};

/// The kind of device; it sets the stall threshold and whether checks wait for a
/// network.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    /// A computer: 5 s stall threshold.
    #[default]
    Desktop,
    /// A phone or TV (Android): 2 s stall threshold; no check without any network.
    Mobile,
}

impl Platform {
    /// How long data must go out with nothing coming back before a check starts.
    pub const fn stall_threshold(self) -> Duration {
        match self {
            Self::Desktop => Duration::from_secs(5),
            Self::Mobile => Duration::from_secs(2),
        }
    }
}

/// What a user or app may configure about Auto.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AutoConfig {
    /// Device kind.
    pub platform: Platform,
    /// How checks probe servers. Default: URL ("the same way as HTTP ping").
    pub method: Method,
    /// Each probe counts as no answer past this. Default 5 s: long enough for a TLS
    /// handshake plus a request over a slow mobile link, short enough that a stalled
    /// user notices little.
    #[serde(with = "secs")]
    pub probe_timeout: Duration,
    /// How URL probe replies become measurements.
    pub probe_rules: ProbeRules,
}

/// A setting of [`AutoConfig`] that can't work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `probe_timeout` is zero or longer than a minute.
    #[error("probe_timeout: {got_ms} ms is out of range; use 100 ms to 60 s (default 5 s)")]
    ProbeTimeout {
        /// The value given, in milliseconds.
        got_ms: u128,
    },
    /// `probe_rules.expected_status` lists no status, or one that is not an HTTP status.
    #[error("probe_rules.expected_status: {problem}")]
    ExpectedStatus {
        /// What is wrong.
        problem: String,
    },
}

impl AutoConfig {
    /// Checks every setting; the error names the field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let ms = self.probe_timeout.as_millis();
        if !(100..=60_000).contains(&ms) {
            return Err(ConfigError::ProbeTimeout { got_ms: ms });
        }
        if let crate::measurement::ExpectedStatus::OneOf(list) = &self.probe_rules.expected_status {
            if list.is_empty() {
                return Err(ConfigError::ExpectedStatus {
                    problem: "the list is empty; list at least one status, or use \"success\" for any 2xx".into(),
                });
            }
            if let Some(bad) = list.iter().find(|s| !(100..=599).contains(*s)) {
                return Err(ConfigError::ExpectedStatus {
                    problem: format!("{bad} is not an HTTP status (100-599)"),
                });
            }
        }
        Ok(())
    }
}

impl Default for AutoConfig {
    fn default() -> Self {
        Self {
            platform: Platform::Desktop,
            method: Method::Url,
            probe_timeout: Duration::from_secs(5),
            probe_rules: ProbeRules::default(),
        }
    }
}

/// How long after a check's probe timeout the engine waits for the driver's
/// [`Event::ProbeResults`](crate::Event::ProbeResults) before it ends the check with every
/// probed server unanswered. The driver reports when its slowest probe times out, so the
/// results are due at the probe timeout; the grace covers the driver's own delay. Longer
/// keeps Auto idle behind a driver that lost a check; shorter risks ending a check whose
/// replies are on their way (they are then dropped).
pub const RESULTS_GRACE: Duration = Duration::from_secs(1);

/// The longest a driver holds an app's new connection for the verdict of the check a
/// failed connect started ([`Engine::hold_until`](crate::Engine::hold_until)). The
/// longest such wait under the spec's limits, with the default probe timeout, is the
/// quiet time after a check (15 s) plus the check (5 s) and its grace (1 s): 21 s;
/// the rest is room for the driver. A check that would end later (a longer probe
/// timeout) is not waited for: connections fail at once, as without holding. Longer
/// keeps apps waiting on a verdict that may be "stay" (they then fail that much later);
/// shorter fails the connections that come right after a check, the case holding is for.
pub const HOLD_LIMIT: Duration = Duration::from_secs(25);

/// How many servers a held connection may be carried by while it waits
/// ([`Engine::standby`](crate::Engine::standby)): the best two after the current one.
/// A check would most likely settle on the first; the second covers a first that
/// refuses too. More would spend the app's patience dialling servers in turn.
pub const STANDBY: usize = 2;

/// History, marks and speed results of a server that is in no subscription are
/// forgotten once it has been absent this long (strictly longer). A day keeps a server
/// that a provider drops for one update and brings back the next (its history and marks
/// survive), and no longer than its measurements stay usable (24 h) anyway.
pub const PRUNE_AFTER: Duration = Duration::from_secs(24 * 3600);

/// The numbers `docs/auto.md` fixes. They are not settings: changing one changes the
/// product's promised behaviour.
pub mod spec {
    use core::time::Duration;

    /// Measurements kept per server.
    pub const HISTORY_LEN: usize = 5;
    /// Measurements older than this are not used.
    pub const HISTORY_MAX_AGE: Duration = Duration::from_secs(24 * 3600);
    /// Score penalty per unanswered measurement.
    pub const SILENT_PENALTY: u64 = 1000;
    /// Best servers probed besides the current one in a regular check.
    pub const CHECK_BEST: usize = 9;
    /// Best servers probed besides the current and return ones in a scheduled check.
    pub const SCHEDULED_BEST: usize = 2;
    /// Servers probed by a wide check, current included.
    pub const WIDE_SIZE: usize = 30;
    /// Best servers probed in each neighbouring subscription.
    pub const NEIGHBOUR_BEST: usize = 2;
    /// Nothing in for this long although something was sent: a check.
    pub const NO_INBOUND: Duration = Duration::from_secs(30);
    /// Period of the scheduled check (when there was traffic).
    pub const SCHEDULED_EVERY: Duration = Duration::from_secs(300);
    /// A wide check comes at the latest this long after the check before it.
    pub const WIDE_WITHIN: Duration = Duration::from_secs(300);
    /// On a neighbour's server, the own subscription is checked this often.
    pub const OWN_SUBSCRIPTION_EVERY: Duration = Duration::from_secs(60);
    /// Failed own-subscription checks in a row before they pause.
    pub const OWN_SUBSCRIPTION_FAILURES: u32 = 5;
    /// The pause after that many failures.
    pub const OWN_SUBSCRIPTION_PAUSE: Duration = Duration::from_secs(15 * 60);
    /// Answers in a row the return server needs before Auto switches back.
    pub const SWITCH_BACK_ANSWERS: u32 = 2;
    /// At most this many switches ...
    pub const SWITCH_LIMIT: usize = 3;
    /// ... in any window of this length.
    pub const SWITCH_WINDOW: Duration = Duration::from_secs(180);
    /// No automatic check this long after a switch.
    pub const AFTER_SWITCH: Duration = Duration::from_secs(5);
    /// No automatic check this long after a check.
    pub const AFTER_CHECK: Duration = Duration::from_secs(15);
    /// First network-loss pause; it doubles per attempt ...
    pub const NETWORK_LOST_FIRST: Duration = Duration::from_secs(15);
    /// ... up to this.
    pub const NETWORK_LOST_MAX: Duration = Duration::from_secs(120);

    /// The pause after the `k`-th "network gone" in a row (k ≥ 1):
    /// `T_k = min(15 · 2^(k−1), 120)` seconds.
    pub fn network_lost_pause(k: u32) -> Duration {
        let k = k.max(1);
        let secs = NETWORK_LOST_FIRST
            .as_secs()
            .saturating_mul(1u64 << (k - 1).min(32));
        Duration::from_secs(secs.min(NETWORK_LOST_MAX.as_secs()))
    }
}

mod secs {
    use core::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let v = f64::deserialize(d)?;
        Duration::try_from_secs_f64(v).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::spec::network_lost_pause;
    use super::*;

    #[test]
    fn network_lost_pause_is_15_30_60_then_every_2_minutes() {
        let secs: Vec<u64> = (1..=7).map(|k| network_lost_pause(k).as_secs()).collect();
        assert_eq!(secs, [15, 30, 60, 120, 120, 120, 120]);
        assert_eq!(network_lost_pause(1000).as_secs(), 120);
    }

    #[test]
    fn config_validation_names_the_field() {
        assert_eq!(AutoConfig::default().validate(), Ok(()));
        let zero = AutoConfig {
            probe_timeout: Duration::ZERO,
            ..AutoConfig::default()
        };
        assert!(
            zero.validate()
                .unwrap_err()
                .to_string()
                .starts_with("probe_timeout:")
        );
        let mut c = AutoConfig::default();
        c.probe_rules.expected_status = crate::measurement::ExpectedStatus::OneOf(vec![]);
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .starts_with("probe_rules.expected_status:")
        );
        c.probe_rules.expected_status = crate::measurement::ExpectedStatus::OneOf(vec![204, 999]);
        assert!(c.validate().unwrap_err().to_string().contains("999"));
    }

    #[test]
    fn config_reads_from_json_and_refuses_unknown_fields() {
        let c: AutoConfig =
            serde_json::from_str(r#"{"platform":"mobile","probe_timeout":2.5}"#).unwrap();
        assert_eq!(c.platform, Platform::Mobile);
        assert_eq!(c.probe_timeout, Duration::from_millis(2500));
        let err = serde_json::from_str::<AutoConfig>(r#"{"probe_timout":2}"#).unwrap_err();
        assert!(err.to_string().contains("probe_timout"), "{err}");
    }

    #[test]
    fn stall_threshold_is_2_s_on_mobile_and_5_s_on_a_computer() {
        assert_eq!(Platform::Mobile.stall_threshold(), Duration::from_secs(2));
        assert_eq!(Platform::Desktop.stall_threshold(), Duration::from_secs(5));
    }
}
