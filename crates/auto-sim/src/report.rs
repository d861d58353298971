//! What a run prints: one JSON object per line (`docs/auto.md`, "Simulator scenarios and output").
//!
//! Lines are written by hand, not through a map, so the keys keep the documented order
//! (`t`, `event`, then the event's fields) and the output is byte-identical across runs.

use core::fmt::{self, Write as _};
use core::time::Duration;
use std::io;

use switchyard_auto::event::{ConnectReason, Event, Outcome, SwitchReason, Trigger};
use switchyard_auto::server::ServerId;
use switchyard_auto::time::Timestamp;

/// One output line at a time of the run.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// When, on the run's clock.
    pub t: Timestamp,
    /// What happened.
    pub kind: LineKind,
}

/// The events a run reports.
#[derive(Clone, Debug, PartialEq)]
pub enum LineKind {
    /// `connect`: the policy connected to a server.
    Connect {
        /// The server.
        server: ServerId,
        /// Why.
        reason: ConnectReason,
    },
    /// `check`: the policy started a check.
    Check {
        /// What started it.
        trigger: Trigger,
        /// The servers probed, in probe order.
        probes: Vec<ServerId>,
    },
    /// `check_result`: a check finished.
    CheckResult {
        /// Servers that answered with their delay, in probe order.
        answered: Vec<(ServerId, u32)>,
        /// Servers that did not answer, in probe order.
        silent: Vec<ServerId>,
        /// What the policy decided.
        outcome: Outcome,
        /// A switch was due but the switch limit held it back.
        held: bool,
        /// The results never came: the check ended on its deadline.
        timed_out: bool,
    },
    /// `auto_paused` with `reason: "no_server"`: Auto's subscription was emptied or
    /// deleted.
    NoServer {
        /// The subscription.
        subscription: String,
        /// It was deleted (Auto is off), not emptied.
        deleted: bool,
    },
    /// `switch`: the policy left `from` for `to`.
    Switch {
        /// The server left.
        from: ServerId,
        /// The server now used.
        to: ServerId,
        /// Why.
        reason: SwitchReason,
    },
    /// `network_lost`: the policy decided the network is gone.
    NetworkLost {
        /// The pause before the next attempt.
        retry_in: Duration,
    },
    /// `refused`: the policy refused an input event; the run went on.
    Refused {
        /// The input's name (`mark`, `update`, `traffic`, ...).
        input: &'static str,
        /// The policy's message.
        error: String,
    },
}

/// The last line: what the run added up to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// The policy's name.
    pub policy: &'static str,
    /// `Switched` outputs.
    pub switches: u64,
    /// Time in traffic intervals during which the current server did not answer or the
    /// network was down or absent, in milliseconds (exact).
    pub outage_ms: i64,
    /// Servers probed, counted per check.
    pub probes: u64,
    /// `Probe` outputs.
    pub checks: u64,
}

/// A whole run: its lines in time order, then the summary.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Output lines in time order.
    pub lines: Vec<Line>,
    /// The summary.
    pub summary: Summary,
}

impl Report {
    /// Writes every line, then the summary, one JSON object per line.
    pub fn write_json_lines(&self, out: &mut impl io::Write) -> io::Result<()> {
        for line in &self.lines {
            writeln!(out, "{line}")?;
        }
        writeln!(out, "{}", self.summary)
    }
}

/// Seconds from milliseconds as the output prints them: an integer when whole (`605`),
/// otherwise the shortest exact decimal (`605.5`, `0.005`).
pub fn format_secs(ms: i64) -> String {
    let sign = if ms < 0 { "-" } else { "" };
    let (whole, frac) = (ms.unsigned_abs() / 1000, ms.unsigned_abs() % 1000);
    if frac == 0 {
        format!("{sign}{whole}")
    } else {
        let digits = format!("{frac:03}");
        format!("{sign}{whole}.{}", digits.trim_end_matches('0'))
    }
}

fn duration_ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A JSON string literal.
struct Str<'a>(&'a str);

impl fmt::Display for Str<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_char('"')?;
        for c in self.0.chars() {
            match c {
                '"' => f.write_str("\\\"")?,
                '\\' => f.write_str("\\\\")?,
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                '\t' => f.write_str("\\t")?,
                c if (c as u32) < 0x20 => write!(f, "\\u{:04x}", c as u32)?,
                c => f.write_char(c)?,
            }
        }
        f.write_char('"')
    }
}

fn list(f: &mut fmt::Formatter<'_>, ids: &[ServerId]) -> fmt::Result {
    f.write_char('[')?;
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            f.write_char(',')?;
        }
        write!(f, "{}", Str(id.as_str()))?;
    }
    f.write_char(']')
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{\"t\":{},", format_secs(self.t.as_millis()))?;
        match &self.kind {
            LineKind::Connect { server, reason } => write!(
                f,
                "\"event\":\"connect\",\"server\":{},\"reason\":\"{}\"",
                Str(server.as_str()),
                reason.as_str()
            )?,
            LineKind::Check { trigger, probes } => {
                write!(
                    f,
                    "\"event\":\"check\",\"trigger\":\"{}\",\"probes\":",
                    trigger.as_str()
                )?;
                list(f, probes)?;
            }
            LineKind::CheckResult {
                answered,
                silent,
                outcome,
                held,
                timed_out,
            } => {
                f.write_str("\"event\":\"check_result\",\"answered\":{")?;
                for (i, (id, ms)) in answered.iter().enumerate() {
                    if i > 0 {
                        f.write_char(',')?;
                    }
                    write!(f, "{}:{ms}", Str(id.as_str()))?;
                }
                f.write_str("},\"silent\":")?;
                list(f, silent)?;
                write!(f, ",\"outcome\":\"{}\"", outcome.as_str())?;
                if *held {
                    f.write_str(",\"held\":true")?;
                }
                if *timed_out {
                    f.write_str(",\"timed_out\":true")?;
                }
            }
            LineKind::NoServer {
                subscription,
                deleted,
            } => {
                write!(
                    f,
                    "\"event\":\"auto_paused\",\"reason\":\"no_server\",\"subscription\":{}",
                    Str(subscription)
                )?;
                if *deleted {
                    f.write_str(",\"deleted\":true")?;
                }
            }
            LineKind::Switch { from, to, reason } => write!(
                f,
                "\"event\":\"switch\",\"from\":{},\"to\":{},\"reason\":\"{}\"",
                Str(from.as_str()),
                Str(to.as_str()),
                reason.as_str()
            )?,
            LineKind::NetworkLost { retry_in } => write!(
                f,
                "\"event\":\"network_lost\",\"retry_in\":{}",
                format_secs(duration_ms(*retry_in))
            )?,
            LineKind::Refused { input, error } => write!(
                f,
                "\"event\":\"refused\",\"input\":\"{input}\",\"error\":{}",
                Str(error)
            )?,
        }
        f.write_char('}')
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{{\"event\":\"summary\",\"policy\":{},\"switches\":{},\"outage_s\":{},\"probes\":{},\"checks\":{}}}",
            Str(self.policy),
            self.switches,
            format_secs(self.outage_ms),
            self.probes,
            self.checks
        )
    }
}

/// The name a refused input is reported under (the scenario's word where there is one).
pub(crate) fn input_name(event: &Event) -> &'static str {
    match event {
        Event::Subscriptions(_) => "subscriptions",
        Event::SubscriptionUpdated(_) => "update",
        Event::AutoOn { .. } => "auto_on",
        Event::Traffic { .. } => "traffic",
        Event::ConnectFailed { .. } => "connect_failed",
        Event::ProbeResults { .. } => "probe_results",
        Event::NetworkAvailable(_) => "network_available",
        Event::NetworkChanged => "network_change",
        Event::Mark(_) => "mark",
        Event::Unmark(_) => "unmark",
        Event::MarksDone => "done",
        Event::SpeedTest { .. } => "speed_test",
        Event::Measured { .. } => "measured",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_print_as_integers_when_whole() {
        let got: Vec<String> = [0, 605_000, 605_500, 605_050, 5, -1_500]
            .iter()
            .map(|&ms| format_secs(ms))
            .collect();
        assert_eq!(got, ["0", "605", "605.5", "605.05", "0.005", "-1.5"]);
    }

    #[test]
    fn lines_are_valid_json_in_the_documented_key_order() {
        let line = Line {
            t: Timestamp(610_000),
            kind: LineKind::CheckResult {
                answered: vec![(ServerId::new("nl"), 80), (ServerId::new("a\"b"), 9)],
                silent: vec![ServerId::new("fi")],
                outcome: Outcome::Switch,
                held: false,
                timed_out: false,
            },
        };
        let text = line.to_string();
        assert_eq!(
            text,
            r#"{"t":610,"event":"check_result","answered":{"nl":80,"a\"b":9},"silent":["fi"],"outcome":"switch"}"#
        );
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["answered"]["a\"b"], 9);
    }
}
