//! Measurements: what one probe of one server found.

use core::fmt;
use core::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// How a server was measured. The score only mixes measurements of one method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// A TCP connection to the server, timed to the handshake.
    Tcp,
    /// An HTTP request through the server to a test URL (the default; "HTTP ping").
    Url,
    /// An ICMP echo to the server's address.
    Icmp,
}

impl Method {
    /// The lowercase name used in scenario files and reports.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Tcp => "tcp",
            Self::Url => "url",
            Self::Icmp => "icmp",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A method's name that is none of `tcp`, `url`, `icmp`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown method {0:?}: expected tcp, url or icmp")]
pub struct UnknownMethod(pub String);

impl FromStr for Method {
    type Err = UnknownMethod;
    fn from_str(s: &str) -> Result<Self, UnknownMethod> {
        match s {
            "tcp" => Ok(Self::Tcp),
            "url" => Ok(Self::Url),
            "icmp" => Ok(Self::Icmp),
            other => Err(UnknownMethod(other.to_owned())),
        }
    }
}

/// One measurement of a server kept in its history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Measurement {
    /// When the measurement was taken.
    pub at: Timestamp,
    /// How it was taken.
    pub method: Method,
    /// The delay in milliseconds, or `None` when the server did not answer.
    pub ms: Option<u32>,
}

impl Measurement {
    /// An answered measurement.
    pub const fn answered(at: Timestamp, method: Method, ms: u32) -> Self {
        Self {
            at,
            method,
            ms: Some(ms),
        }
    }

    /// A measurement the server did not answer.
    pub const fn silent(at: Timestamp, method: Method) -> Self {
        Self {
            at,
            method,
            ms: None,
        }
    }
}

/// What a probe of one server reports to the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProbeReply {
    /// The server answered.
    Answered {
        /// Whole time of the probe (connection set-up plus request), milliseconds.
        total_ms: u32,
        /// For URL probes: the request alone, timed from the moment the connection
        /// through the server was set up to the response status line.
        request_ms: Option<u32>,
        /// For URL probes: the HTTP status received.
        status: Option<u16>,
    },
    /// No answer: timed out, refused, reset, or failed in any other way.
    NoAnswer,
}

impl ProbeReply {
    /// An answer after `ms` milliseconds, without URL details (TCP or ICMP probes,
    /// and the simulator).
    pub const fn after(ms: u32) -> Self {
        Self::Answered {
            total_ms: ms,
            request_ms: None,
            status: None,
        }
    }
}

/// Which part of a URL probe's time the score uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UrlTiming {
    /// Connection set-up plus request: what a new connection of the user costs.
    #[default]
    Total,
    /// The request alone after the connection is set up: the path's round trip,
    /// without the handshake cost that differs between protocols.
    Request,
}

/// Which HTTP statuses count as an answer for a URL probe.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpectedStatus {
    /// 204 or any other 2xx (the default; generate_204-style endpoints).
    #[default]
    Success,
    /// Exactly one of these statuses.
    OneOf(Vec<u16>),
}

impl ExpectedStatus {
    /// Whether a response with `status` counts as an answer.
    pub fn accepts(&self, status: u16) -> bool {
        match self {
            Self::Success => (200..300).contains(&status),
            Self::OneOf(list) => list.contains(&status),
        }
    }
}

/// How probe replies turn into measurements.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeRules {
    /// Which HTTP statuses count as an answer.
    pub expected_status: ExpectedStatus,
    /// Which time of a URL probe is scored.
    pub url_timing: UrlTiming,
}

impl ProbeRules {
    /// The delay to record for `reply`, or `None` when it counts as no answer (no
    /// reply at all, or a URL probe with an unexpected status).
    pub fn delay(&self, reply: ProbeReply) -> Option<u32> {
        match reply {
            ProbeReply::NoAnswer => None,
            ProbeReply::Answered {
                total_ms,
                request_ms,
                status,
            } => {
                if let Some(status) = status
                    && !self.expected_status.accepts(status)
                {
                    return None;
                }
                match (self.url_timing, request_ms) {
                    (UrlTiming::Request, Some(ms)) => Some(ms),
                    _ => Some(total_ms),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(total_ms: u32, request_ms: u32, status: u16) -> ProbeReply {
        ProbeReply::Answered {
            total_ms,
            request_ms: Some(request_ms),
            status: Some(status),
        }
    }

    #[test]
    fn default_rules_accept_204_and_any_2xx_and_score_total_time() {
        let rules = ProbeRules::default();
        assert_eq!(rules.delay(url(120, 40, 204)), Some(120));
        assert_eq!(rules.delay(url(120, 40, 200)), Some(120));
        assert_eq!(rules.delay(url(120, 40, 299)), Some(120));
        assert_eq!(rules.delay(url(120, 40, 302)), None);
        assert_eq!(rules.delay(url(120, 40, 403)), None);
        assert_eq!(rules.delay(url(120, 40, 503)), None);
        assert_eq!(rules.delay(ProbeReply::NoAnswer), None);
    }

    #[test]
    fn configured_statuses_and_request_timing() {
        let rules = ProbeRules {
            expected_status: ExpectedStatus::OneOf(vec![204]),
            url_timing: UrlTiming::Request,
        };
        assert_eq!(rules.delay(url(120, 40, 204)), Some(40));
        assert_eq!(rules.delay(url(120, 40, 200)), None);
        // Probes without URL details are scored by their whole time.
        assert_eq!(rules.delay(ProbeReply::after(33)), Some(33));
    }

    #[test]
    fn method_names_round_trip() {
        for m in [Method::Tcp, Method::Url, Method::Icmp] {
            assert_eq!(m.as_str().parse::<Method>(), Ok(m));
        }
        let e = "ping".parse::<Method>().unwrap_err();
        assert_eq!(e, UnknownMethod("ping".into()));
        assert_eq!(
            e.to_string(),
            "unknown method \"ping\": expected tcp, url or icmp"
        );
    }
}
