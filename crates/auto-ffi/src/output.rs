//! Outputs as JSON: one object per [`Output`], tagged by `type`.
//!
//! ```json
//! {"type": "probe", "check": 3, "trigger": "stall", "servers": ["vless:1f0c", "vless:77aa"],
//!     "method": "url", "timeout_ms": 5000}
//! {"type": "connect", "server": "vless:77aa", "reason": "switch"}
//! {"type": "check_done", "check": 3, "trigger": "stall",
//!     "answered": [{"server": "vless:77aa", "ms": 180}], "silent": ["vless:1f0c"],
//!     "outcome": "switch", "held": false, "timed_out": false}
//! {"type": "switched", "from": "vless:1f0c", "to": "vless:77aa", "reason": "current_silent"}
//! {"type": "network_lost", "retry_in_ms": 15000}
//! {"type": "no_server", "subscription": "main", "deleted": false}
//! ```
//!
//! Keys come in this order. `trigger`, `reason` and `outcome` take the snake_case
//! names of [`Trigger`], [`ConnectReason`], [`SwitchReason`] and [`Outcome`];
//! durations are whole milliseconds.

use core::time::Duration;

use serde::Serialize;
use switchyard_auto::{
    CheckId, ConnectReason, Method, Outcome, Output, ServerId, SwitchReason, Trigger,
};

/// The JSON text of `output`.
///
/// ```
/// use switchyard_auto::{ConnectReason, Output, ServerId};
/// use switchyard_auto_ffi::output_json;
///
/// let out = Output::Connect { server: ServerId::new("a"), reason: ConnectReason::AutoOn };
/// assert_eq!(output_json(&out), r#"{"type":"connect","server":"a","reason":"auto_on"}"#);
/// ```
pub fn output_json(output: &Output) -> String {
    let view = match output {
        Output::Probe(check) => View::Probe {
            check: check.id,
            trigger: check.trigger,
            servers: &check.servers,
            method: check.method,
            timeout_ms: ms(check.timeout),
        },
        Output::Connect { server, reason } => View::Connect {
            server,
            reason: *reason,
        },
        Output::CheckDone(report) => View::CheckDone {
            check: report.id,
            trigger: report.trigger,
            answered: report
                .answered
                .iter()
                .map(|(server, ms)| Answer { server, ms: *ms })
                .collect(),
            silent: &report.silent,
            outcome: report.outcome,
            held: report.held,
            timed_out: report.timed_out,
        },
        Output::Switched { from, to, reason } => View::Switched {
            from,
            to,
            reason: *reason,
        },
        Output::NetworkLost { retry_in } => View::NetworkLost {
            retry_in_ms: ms(*retry_in),
        },
        Output::NoServer {
            subscription,
            deleted,
        } => View::NoServer {
            subscription,
            deleted: *deleted,
        },
    };
    serde_json::to_string(&view)
        .expect("strings, numbers, booleans and lists of them always serialize")
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum View<'a> {
    Probe {
        check: CheckId,
        trigger: Trigger,
        servers: &'a [ServerId],
        method: Method,
        timeout_ms: u64,
    },
    Connect {
        server: &'a ServerId,
        reason: ConnectReason,
    },
    CheckDone {
        check: CheckId,
        trigger: Trigger,
        answered: Vec<Answer<'a>>,
        silent: &'a [ServerId],
        outcome: Outcome,
        held: bool,
        timed_out: bool,
    },
    Switched {
        from: &'a ServerId,
        to: &'a ServerId,
        reason: SwitchReason,
    },
    NetworkLost {
        retry_in_ms: u64,
    },
    NoServer {
        subscription: &'a str,
        deleted: bool,
    },
}

#[derive(Serialize)]
struct Answer<'a> {
    server: &'a ServerId,
    ms: u32,
}

#[cfg(test)]
mod tests {
    use switchyard_auto::{Check, CheckReport};

    use super::*;

    #[test]
    fn every_output_writes_its_documented_shape() {
        let a = ServerId::new("a");
        let b = ServerId::new("b");
        let check = Check {
            id: CheckId(3),
            trigger: Trigger::Stall,
            servers: vec![a.clone(), b.clone()],
            method: Method::Url,
            timeout: Duration::from_secs(5),
        };
        let report = CheckReport::new(
            &check,
            &[(a.clone(), None), (b.clone(), Some(180))],
            Outcome::Switch,
            false,
        );
        let cases = [
            (
                Output::Probe(check),
                r#"{"type":"probe","check":3,"trigger":"stall","servers":["a","b"],"method":"url","timeout_ms":5000}"#,
            ),
            (
                Output::Connect {
                    server: b.clone(),
                    reason: ConnectReason::SwitchBack,
                },
                r#"{"type":"connect","server":"b","reason":"switch_back"}"#,
            ),
            (
                Output::CheckDone(report),
                r#"{"type":"check_done","check":3,"trigger":"stall","answered":[{"server":"b","ms":180}],"silent":["a"],"outcome":"switch","held":false,"timed_out":false}"#,
            ),
            (
                Output::Switched {
                    from: a,
                    to: b,
                    reason: SwitchReason::CurrentSilent,
                },
                r#"{"type":"switched","from":"a","to":"b","reason":"current_silent"}"#,
            ),
            (
                Output::NetworkLost {
                    retry_in: Duration::from_secs(15),
                },
                r#"{"type":"network_lost","retry_in_ms":15000}"#,
            ),
            (
                Output::NoServer {
                    subscription: "m\"x".into(),
                    deleted: true,
                },
                r#"{"type":"no_server","subscription":"m\"x","deleted":true}"#,
            ),
        ];
        for (output, want) in cases {
            assert_eq!(output_json(&output), want);
        }
    }
}
