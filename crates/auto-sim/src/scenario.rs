//! A scenario file as written (`docs/auto.md`, "Simulator scenarios and output").
//!
//! These types mirror the JSON one to one and check only its shape (serde, unknown
//! fields refused). Names of things (platform, method, `how`, `network`) stay text
//! here so that [`Scenario::validate`] can say which field holds a bad one; that step
//! turns a `Scenario` into a runnable [`Plan`](super::Plan).

use core::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::error::ScenarioError;

/// A whole scenario file, as written. Times are seconds; `until` is required, the
/// lists default to empty.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// `desktop` (the default) or `mobile`.
    #[serde(default = "default_platform")]
    pub platform: String,
    /// Seconds of simulated time; the run covers `[0, until)`.
    pub until: f64,
    /// Seconds each probe waits for an answer. Default 5.
    #[serde(default = "default_probe_timeout")]
    pub probe_timeout: f64,
    /// Subscriptions in list order.
    pub subscriptions: Vec<SubscriptionSpec>,
    /// The subscription Auto is turned on in at t = 0.
    pub auto: String,
    /// Measurements taken before t = 0.
    #[serde(default)]
    pub history: Vec<HistorySpec>,
    /// How servers and the network answer over time; later entries override earlier
    /// ones where they overlap.
    #[serde(default)]
    pub world: Vec<WorldSpec>,
    /// Intervals in which the user sends data.
    #[serde(default)]
    pub traffic: Vec<IntervalSpec>,
    /// User actions at given times.
    #[serde(default)]
    pub actions: Vec<ActionSpec>,
}

fn default_platform() -> String {
    "desktop".to_owned()
}

const fn default_probe_timeout() -> f64 {
    5.0
}

impl Scenario {
    /// Parses a scenario from JSON text. A malformed file gives serde's message with
    /// its line and column.
    pub fn from_json(text: &str) -> Result<Self, ScenarioError> {
        serde_json::from_str(text).map_err(|e| ScenarioError::Json(e.to_string()))
    }
}

/// One subscription: a name and its servers in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubscriptionSpec {
    /// Unique name of the subscription.
    pub name: String,
    /// Servers in subscription order.
    pub servers: Vec<ServerSpec>,
}

/// A server entry: written as a bare name or as `{"name": .., "speed_mbps": ..}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    /// The server's name, unique across the scenario; it is the server's identity.
    pub name: String,
    /// A speed-test result in Mbit/s, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed_mbps: Option<f64>,
}

/// The object form of [`ServerSpec`], so its unknown fields are refused by name.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerObject {
    name: String,
    #[serde(default)]
    speed_mbps: Option<f64>,
}

impl<'de> Deserialize<'de> for ServerSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ServerVisitor;
        impl<'de> Visitor<'de> for ServerVisitor {
            type Value = ServerSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a server name or an object with name and speed_mbps")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ServerSpec, E> {
                Ok(ServerSpec {
                    name: v.to_owned(),
                    speed_mbps: None,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ServerSpec, A::Error> {
                let o = ServerObject::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(ServerSpec {
                    name: o.name,
                    speed_mbps: o.speed_mbps,
                })
            }
        }
        d.deserialize_any(ServerVisitor)
    }
}

/// A subscription update: the subscription now holds these servers, in this order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateSpec {
    /// The subscription's name.
    pub subscription: String,
    /// Its servers from now on; new names join the scenario's servers.
    pub servers: Vec<ServerSpec>,
}

/// A measurement taken before the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistorySpec {
    /// The measured server.
    pub server: String,
    /// When, in seconds (≤ 0).
    pub at: f64,
    /// `tcp`, `url` or `icmp`.
    pub method: String,
    /// The delay in milliseconds; `null` means no answer.
    pub ms: Option<f64>,
}

/// One entry of `world`: about one server (or `"*"`), or about the network.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorldSpec {
    /// A server name or `"*"` (every server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// `"down"` (nothing answers) or `"none"` (no network at all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// The latency a probe sees, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<f64>,
    /// `true`: the server does not answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down: Option<bool>,
    /// How a down server fails: `"blackhole"` (the default) or `"refuse"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub how: Option<String>,
    /// Start, inclusive, in seconds; default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<f64>,
    /// End, exclusive, in seconds; default the end of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<f64>,
}

/// A time interval in seconds: `from` inclusive (default 0), `to` exclusive (default
/// the end of the run).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntervalSpec {
    /// Start, inclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<f64>,
    /// End, exclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<f64>,
}

/// A user action at `at` seconds. Exactly one of the other fields must be given.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionSpec {
    /// When, in seconds from the start.
    pub at: f64,
    /// Servers to mark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark: Option<Vec<String>>,
    /// Servers to unmark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmark: Option<Vec<String>>,
    /// `true`: the user pressed "Done" after marking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done: Option<bool>,
    /// A subscription update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<UpdateSpec>,
    /// `true`: the device moved to another network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_change: Option<bool>,
    /// The user turned Auto on in this subscription.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_on: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_entries_are_names_or_objects() {
        let s: Vec<ServerSpec> =
            serde_json::from_str(r#"["fi", {"name": "nl", "speed_mbps": 40}]"#).unwrap();
        assert_eq!(s[0].name, "fi");
        assert_eq!(s[0].speed_mbps, None);
        assert_eq!(s[1].speed_mbps, Some(40.0));
        let bad = serde_json::from_str::<Vec<ServerSpec>>(r#"[{"name": "x", "speed": 1}]"#);
        assert!(bad.unwrap_err().to_string().contains("speed"));
        assert!(serde_json::from_str::<Vec<ServerSpec>>("[3]").is_err());
    }
}
