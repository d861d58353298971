//! The same timeline through the simulator (`switchyard auto simulate SCENARIO
//! --policy auto|urltest|fallback`), beside what the real clients did.
//!
//! Each policy's scenario is the applied timeline shifted by the time its real client
//! ran before the timeline started, so the models' timers (sing-box's 3-minute ticker,
//! mihomo's 300 s one, both started with the client) fall where the real ones did.
//! The real network loss (every server and the neighbours blackholed) is the
//! scenario's `{"network": "down"}`; `A`'s blackhole is a `blackhole` outage from its
//! start to the end of the loss; the refusing servers are `refuse` outages to the end.
//! Servers answer with their taps' distances. The simulator has no model of mihomo's
//! `url-test`, so that client has no model row.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::clients::Kind;
use crate::{Figures, NEIGHBOURS, OWN, PHASES, Phase, Run};

/// The scenario of the run for a client that started `lead` seconds before it and
/// carried its first request `first` seconds after its start.
fn scenario(run: &Run, lead: f64, first: f64) -> Value {
    let shift = |t: f64| ((t + lead) * 10.0).round() / 10.0;
    let first = (first * 10.0).round() / 10.0;
    let traffic = if first > 0.0 {
        json!([{ "from": first }])
    } else {
        json!([{}])
    };
    let a = &run.applied;
    let mut world = vec![json!({ "server": "*", "ms": 100 })];
    for (name, ms) in OWN.iter().chain(NEIGHBOURS.iter()) {
        world.push(json!({ "server": name, "ms": ms }));
    }
    world.push(json!({
        "server": OWN[0].0, "from": shift(a.blackhole_at), "to": shift(a.loss.1),
        "down": true, "how": "blackhole",
    }));
    world.push(json!({ "network": "down", "from": shift(a.loss.0), "to": shift(a.loss.1) }));
    for name in &a.refused {
        world.push(json!({
            "server": name, "from": shift(a.refusing_at), "down": true, "how": "refuse",
        }));
    }
    json!({
        "platform": "desktop",
        "until": shift(crate::timeline_end()),
        "probe_timeout": 5,
        "subscriptions": [
            { "name": "Own", "servers": OWN.iter().map(|(n, _)| *n).collect::<Vec<_>>() },
            { "name": "Neighbour", "servers": NEIGHBOURS.iter().map(|(n, _)| *n).collect::<Vec<_>>() },
        ],
        "auto": "Own",
        "world": world,
        "traffic": traffic,
    })
}

/// A model's figures in one phase (its clock shifted back to the timeline's).
#[derive(Debug, Default)]
struct Modelled {
    switches: Vec<(f64, String)>,
    probes: usize,
    checks: usize,
    outage_s: f64,
}

/// Whether `server`'s port is closed at `t` (timeline seconds).
fn refused(run: &Run, server: &str, t: f64) -> bool {
    run.applied.refused.iter().any(|r| r == server) && t >= run.applied.refusing_at
}

/// Whether the modelled world has `server` silent at `t` (timeline seconds).
fn down(run: &Run, server: &str, t: f64) -> bool {
    let a = &run.applied;
    (t >= a.loss.0 && t < a.loss.1)
        || (server == OWN[0].0 && t >= a.blackhole_at && t < a.loss.1)
        || refused(run, server, t)
}

fn modelled(run: &Run, lines: &[Value], lead: f64, phase: Phase) -> Modelled {
    let (from, to) = run.window(phase);
    let t_of = |l: &Value| l["t"].as_f64().unwrap_or(f64::NAN) - lead;
    let in_phase = |l: &Value| {
        let t = t_of(l);
        t >= from && t < to
    };
    let mut m = Modelled::default();
    for l in lines.iter().filter(|l| in_phase(l)) {
        match l["event"].as_str() {
            Some("switch") => m.switches.push((
                t_of(l),
                format!(
                    "{} → {} ({})",
                    l["from"].as_str().unwrap_or("?"),
                    l["to"].as_str().unwrap_or("?"),
                    l["reason"].as_str().unwrap_or("?")
                ),
            )),
            Some("check") => {
                m.checks += 1;
                let t = t_of(l);
                let probes = l["probes"].as_array().into_iter().flatten();
                // A refused connection never reaches a tap, so the real count leaves
                // those probes out: so does this one.
                m.probes += probes
                    .filter(|s| !refused(run, s.as_str().unwrap_or(""), t))
                    .count();
            }
            _ => {}
        }
    }
    // Outage: traffic all along, so every 0.1 s on a silent current server counts.
    let connects: Vec<(f64, String)> = lines
        .iter()
        .filter(|l| l["event"] == "connect")
        .map(|l| (t_of(l), l["server"].as_str().unwrap_or("").to_owned()))
        .collect();
    let mut t = from;
    let mut tenths = 0u32;
    while t < to {
        let current = connects
            .iter()
            .rev()
            .find(|(at, _)| *at <= t)
            .map(|(_, s)| s.as_str());
        if current.is_some_and(|s| down(run, s, t)) {
            tenths += 1;
        }
        t += 0.1;
    }
    m.outage_s = f64::from(tenths) / 10.0;
    m
}

/// Runs `binary auto simulate FILE --policy POLICY`; its JSON lines.
fn simulate(binary: &Path, file: &Path, policy: &str) -> Result<Vec<Value>> {
    let out = Command::new(binary)
        .args(["auto", "simulate"])
        .arg(file)
        .args(["--policy", policy])
        .output()
        .with_context(|| format!("running {} auto simulate", binary.display()))?;
    if !out.status.success() {
        bail!(
            "`switchyard auto simulate {} --policy {policy}` failed: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).with_context(|| format!("a simulator line: {l}")))
        .collect()
}

fn times(list: &[(f64, String)]) -> String {
    if list.is_empty() {
        "none".to_owned()
    } else {
        list.iter()
            .map(|(t, w)| format!("{t:.1} s {w}"))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// The comparison section of the report.
pub(crate) fn compare(
    run: &Run,
    binary: &Path,
    work: &Path,
    real: &dyn Fn(Kind, Phase) -> Figures,
) -> Result<String> {
    let mut md = String::new();
    writeln!(
        md,
        "\nThe simulator on the same timeline (`switchyard auto simulate FILE --policy P`; \
         each policy's scenario is the applied timeline shifted by the time its real client \
         ran before the timeline started, so the models' timers fall where the real ones \
         did, and its traffic starts when the real client's first request went through; the \
         files are kept in the bench's work directory). Model outage: seconds on a silent \
         server while traffic flows; real: failed-request seconds. Probes to a refused \
         port are left out of both counts (a refused connection never reaches a tap). \
         The simulator has no model of mihomo's `url-test`.\n"
    )?;
    writeln!(
        md,
        "| phase | policy vs client | switches model / real | probes model / real | outage model / failed-request s real |"
    )?;
    writeln!(md, "|---|---|---:|---:|---:|")?;
    let mut differences = Vec::new();
    let mut probe_differences = Vec::new();
    let mut models = Vec::new();
    for c in &run.clients {
        let Some(policy) = c.kind.policy() else {
            continue;
        };
        let lead = (run.t0 - c.started).as_secs_f64();
        let first = c.first_request.map_or(0.0, |t| {
            t.saturating_duration_since(c.started).as_secs_f64()
        });
        let file = work.join(format!("scenario-{policy}.json"));
        std::fs::write(
            &file,
            serde_json::to_string_pretty(&scenario(run, lead, first))?,
        )?;
        let lines = simulate(binary, &file, policy)?;
        std::fs::write(
            work.join(format!("simulated-{policy}.jsonl")),
            lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
        )?;
        models.push((c.kind, policy, lead, lines));
    }
    for (phase, _) in PHASES {
        for (kind, policy, lead, lines) in &models {
            let m = modelled(run, lines, *lead, phase);
            let r = real(*kind, phase);
            writeln!(
                md,
                "| {} | `{policy}` vs {} | {} / {} | {} / {} | {:.1} / {} |",
                phase.name(),
                kind.name(),
                m.switches.len(),
                r.switches.len(),
                m.probes,
                r.probes,
                m.outage_s,
                r.failed_seconds
            )?;
            let same_switches = m.switches.len() == r.switches.len()
                && m.switches
                    .iter()
                    .zip(&r.switches)
                    .all(|(a, b)| (a.0 - b.0).abs() <= 5.0);
            if m.probes != r.probes {
                probe_differences.push(format!(
                    "{}, `{policy}` vs {}: model {} probes in {} checks; real {} probes",
                    phase.name(),
                    kind.name(),
                    m.probes,
                    m.checks,
                    r.probes
                ));
            }
            if !same_switches {
                differences.push(format!(
                    "{}, `{policy}` vs {}: model {}; real {}",
                    phase.name(),
                    kind.name(),
                    times(&m.switches),
                    times(&r.switches)
                ));
            }
        }
    }
    writeln!(
        md,
        "\nWhere the switches differ (in count, or in time by more than 5 s):"
    )?;
    if differences.is_empty() {
        writeln!(md, "- nowhere")?;
    }
    for d in differences {
        writeln!(md, "- {d}")?;
    }
    writeln!(md, "\nWhere the probes differ:")?;
    if probe_differences.is_empty() {
        writeln!(md, "- nowhere")?;
    }
    for d in probe_differences {
        writeln!(md, "- {d}")?;
    }
    Ok(md)
}
