//! The run added up per phase and written as Markdown: the table, the goals, what
//! each client remembered of the network loss, the switches, and the simulator's
//! models beside the real peers.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant, UNIX_EPOCH};

use anyhow::Result;
use serde_json::Value;

use crate::clients::{Change, Client, Kind};
use crate::{Figures, OWN, PHASES, Phase, Requests, Run};

/// `client`'s figures in `phase`.
pub(crate) fn figures(run: &Run, client: &Client, requests: &Requests, phase: Phase) -> Figures {
    let (from, to) = run.window(phase);
    let (start, end) = (run.at(from), run.at(to));
    let reqs = requests.lock().unwrap_or_else(|p| p.into_inner());
    let mut failed = std::collections::BTreeSet::new();
    let (mut ok, mut all) = (0, 0);
    for (at, passed) in reqs.iter().filter(|(at, _)| *at >= start && *at < end) {
        all += 1;
        if *passed {
            ok += 1;
        } else {
            failed.insert((*at - run.t0).as_secs());
        }
    }
    Figures {
        failed_seconds: failed.len(),
        requests_ok: ok,
        requests: all,
        switches: switches(
            run,
            &client.changes.lock().unwrap_or_else(|p| p.into_inner()),
        )
        .into_iter()
        .filter(|(t, _)| *t >= from && *t < to)
        .collect(),
        probes: client
            .taps
            .iter()
            .map(|(_, tap)| tap.probes_between(start, end))
            .sum(),
    }
}

/// Every change of server after the first choice: `(t, "X → Y (reason)")`.
fn switches(run: &Run, changes: &[Change]) -> Vec<(f64, String)> {
    let mut out = Vec::new();
    for pair in changes.windows(2) {
        let (from, to) = (&pair[0], &pair[1]);
        if from.to == to.to {
            continue;
        }
        let reason = if to.reason.is_empty() {
            String::new()
        } else {
            format!(" ({})", to.reason)
        };
        out.push((
            since(run, to.at),
            format!("{} → {}{reason}", from.to, to.to),
        ));
    }
    out
}

fn since(run: &Run, at: Instant) -> f64 {
    if at >= run.t0 {
        (at - run.t0).as_secs_f64()
    } else {
        -(run.t0 - at).as_secs_f64()
    }
}

/// Unix milliseconds of `secs` into the timeline.
fn wall_ms(run: &Run, secs: f64) -> i64 {
    let at = run.t0_wall + Duration::from_secs_f64(secs);
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// What one client recorded of the network loss, in words, and whether it recorded
/// nothing.
fn penalty(run: &Run, kind: Kind) -> (String, bool) {
    let find = |list: &[(Kind, Value)]| {
        list.iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, v)| v.clone())
            .unwrap_or(Value::Null)
    };
    let (before, after) = (find(&run.memories.before), find(&run.memories.after));
    match kind {
        Kind::Ours => ours_penalty(run, &before, &after),
        Kind::SingBox => sing_box_penalty(&before, &after),
        Kind::MihomoUrlTest | Kind::MihomoFallback => mihomo_penalty(run, &before, &after),
    }
}

/// Each server's `failures` (the unanswered ones among the measurements its score
/// uses) as `status` shows them.
fn ours_failures(memory: &Value) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for sub in memory["status"]["subscriptions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        for s in sub["servers"].as_array().into_iter().flatten() {
            out.push((
                s["name"].as_str().unwrap_or("?").to_owned(),
                s["failures"].as_i64().unwrap_or(0),
            ));
        }
    }
    out.sort();
    out
}

fn ours_penalty(run: &Run, before: &Value, after: &Value) -> (String, bool) {
    let (from, to) = (
        wall_ms(run, run.applied.loss.0),
        wall_ms(run, run.applied.loss.1),
    );
    let mut dated = 0;
    let mut silent = 0;
    for history in after["state"]["history"]
        .as_object()
        .into_iter()
        .flat_map(|m| m.values())
    {
        for m in history.as_array().into_iter().flatten() {
            let at = m["at"].as_i64().unwrap_or(0);
            if at >= from && at < to {
                dated += 1;
                if m["ms"].is_null() {
                    silent += 1;
                }
            }
        }
    }
    let (fb, fa) = (ours_failures(before), ours_failures(after));
    let show = |f: &[(String, i64)]| {
        f.iter()
            .map(|(n, c)| format!("{n} {c}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let clean = dated == 0 && fb == fa;
    (
        format!(
            "failures per server before: {}; after: {}; measurements dated in the loss: \
             {dated} ({silent} unanswered)",
            show(&fb),
            show(&fa)
        ),
        clean,
    )
}

/// A peer's view of one server: alive (mihomo), and its delay history `(time,
/// delay)`, for the group's test URL where mihomo keeps one per URL.
fn peer_view(proxies: &Value, name: &str, url: &str) -> (Option<bool>, Vec<(String, i64)>) {
    let p = &proxies["proxies"][name];
    let scope = match p["extra"].get(url) {
        Some(extra) => extra,
        None => p,
    };
    let history = scope["history"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|h| {
            (
                h["time"].as_str().unwrap_or("").to_owned(),
                h["delay"].as_i64().unwrap_or(0),
            )
        })
        .collect();
    (scope["alive"].as_bool(), history)
}

fn sing_box_penalty(before: &Value, after: &Value) -> (String, bool) {
    let mut dropped = Vec::new();
    let mut failed = Vec::new();
    for (name, _) in OWN {
        let (_, hb) = peer_view(before, name, "");
        let (_, ha) = peer_view(after, name, "");
        if !hb.is_empty() && ha.is_empty() {
            dropped.push(name);
        }
        if ha.iter().any(|h| h.1 == 0 && !hb.contains(h)) {
            failed.push(name);
        }
    }
    let clean = dropped.is_empty() && failed.is_empty();
    let text = if clean {
        "no record dropped".to_owned()
    } else {
        format!(
            "delay records dropped (a failed test deletes them): {}{}",
            list_or_none(&dropped),
            if failed.is_empty() {
                String::new()
            } else {
                format!("; failed tests recorded: {}", failed.join(", "))
            }
        )
    };
    (text, clean)
}

fn mihomo_penalty(run: &Run, before: &Value, after: &Value) -> (String, bool) {
    let mut dead = Vec::new();
    let mut failed = 0;
    for (name, _) in OWN {
        let (ab, hb) = peer_view(before, name, &run.probe_url);
        let (aa, ha) = peer_view(after, name, &run.probe_url);
        if ab != Some(false) && aa == Some(false) {
            dead.push(name);
        }
        failed += ha.iter().filter(|h| h.1 == 0 && !hb.contains(h)).count();
    }
    let clean = dead.is_empty() && failed == 0;
    let text = if clean {
        "no server marked dead, no failed test recorded".to_owned()
    } else {
        format!(
            "marked dead: {}; failed tests added to the delay history: {failed}",
            list_or_none(&dead)
        )
    };
    (text, clean)
}

fn list_or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

/// The whole report.
pub(crate) fn render(run: &Run, binary: &Path, work: &Path) -> Result<String> {
    let mut all = Vec::new();
    for c in &run.clients {
        let requests = run
            .requests
            .iter()
            .find(|(k, _)| *k == c.kind)
            .map(|(_, r)| r.clone())
            .unwrap_or_default();
        let per_phase: Vec<(Phase, Figures)> = PHASES
            .iter()
            .map(|(p, _)| (*p, figures(run, c, &requests, *p)))
            .collect();
        all.push((c.kind, per_phase));
    }
    let get = |kind: Kind, phase: Phase| -> Figures {
        all.iter()
            .find(|(k, _)| *k == kind)
            .and_then(|(_, f)| f.iter().find(|(p, _)| *p == phase))
            .map(|(_, f)| f.clone())
            .unwrap_or_default()
    };

    let mut md = String::new();
    writeln!(
        md,
        "One run of the timeline ({} s; the clients started {} before it, in that order). \
         Seconds are counted from the start of the timeline.\n",
        crate::timeline_end(),
        run.clients
            .iter()
            .map(|c| format!("{} {:.1} s", c.kind.name(), since(run, c.started).abs()))
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    writeln!(md, "What was done, when:")?;
    for (t, what) in &run.applied.log {
        writeln!(md, "- {t:.1} s: {what}")?;
    }
    if !run.applied.on_at_refusal.is_empty() {
        writeln!(
            md,
            "- (at the refusal the clients were on: {})",
            run.applied
                .on_at_refusal
                .iter()
                .map(|(k, on)| format!("{} {}", k.name(), on.as_deref().unwrap_or("?")))
                .collect::<Vec<_>>()
                .join(", ")
        )?;
    }
    writeln!(
        md,
        "\n| phase | client | failed-request s | requests passed / started | switches | probes sent |"
    )?;
    writeln!(md, "|---|---|---:|---:|---:|---:|")?;
    for (phase, secs) in PHASES {
        for kind in Kind::ALL {
            let f = get(kind, phase);
            writeln!(
                md,
                "| {} ({secs} s) | {} | {} | {} / {} | {} | {} |",
                phase.name(),
                kind.name(),
                f.failed_seconds,
                f.requests_ok,
                f.requests,
                f.switches.len(),
                f.probes
            )?;
        }
    }
    writeln!(
        md,
        "\nBefore the timeline (from each client's start): probes sent: {}.",
        run.clients
            .iter()
            .map(|c| {
                let n: usize = c
                    .taps
                    .iter()
                    .map(|(_, tap)| tap.probes_between(c.spawned, run.t0))
                    .sum();
                format!("{} {n}", c.kind.name())
            })
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    writeln!(
        md,
        "\nA request is a 16 KiB download through the client's SOCKS5 port started every \
         200 ms (5 s timeout); a failed-request second is a second in which a request that \
         failed started. Switches: our client's `server:` lines, the peers' selected node \
         (`now` of `GET /proxies/{}` on their Clash API) read every second. Probes: \
         connections each client opened to the probe target, counted at its taps (sent, \
         answered or not; an attempt on a refused port never reaches a tap, so probes of \
         the refusing servers are not in the last phase's count); {} probe requests \
         reached the target in all.",
        crate::GROUP,
        run.probes_answered
    )?;

    // The goals.
    let ours_bh = get(Kind::Ours, Phase::Blackhole).failed_seconds;
    let best_peer = Kind::ALL
        .iter()
        .filter(|k| k.is_peer())
        .map(|k| (get(*k, Phase::Blackhole).failed_seconds, k.name()))
        .min()
        .unwrap_or((0, "none"));
    let bound = best_peer.0 as f64 / 5.0;
    let met = |ok: bool| if ok { "met" } else { "**not met**" };
    let loss_switches = get(Kind::Ours, Phase::NetworkLoss).switches.len();
    let (ours_penalty_text, ours_clean) = penalty(run, Kind::Ours);
    writeln!(md, "\nGoals:")?;
    writeln!(
        md,
        "- A blackholed: ours {ours_bh} failed-request s ≤ one fifth of the best peer's \
         ({}: {} s / 5 = {bound:.1} s): {}",
        best_peer.1,
        best_peer.0,
        met(ours_bh as f64 <= bound)
    )?;
    writeln!(
        md,
        "- network loss: ours {loss_switches} switches (goal 0): {}; no recorded penalty: {}",
        met(loss_switches == 0),
        met(ours_clean)
    )?;
    let ours_refusing = get(Kind::Ours, Phase::Refusing).failed_seconds;
    writeln!(
        md,
        "- current refusing: ours {ours_refusing} failed-request s (goal 0): {}",
        met(ours_refusing == 0)
    )?;

    writeln!(
        md,
        "\nWhat each client remembered of the network loss (read just before it and {} s \
         after it ended):\n",
        crate::AFTER_LOSS.as_secs()
    )?;
    writeln!(md, "| client | recorded penalty | |")?;
    writeln!(md, "|---|---|---|")?;
    for kind in Kind::ALL {
        let (text, clean) = if kind == Kind::Ours {
            (ours_penalty_text.clone(), ours_clean)
        } else {
            penalty(run, kind)
        };
        writeln!(
            md,
            "| {} | {text} | {} |",
            kind.name(),
            if clean { "none" } else { "penalty" }
        )?;
    }

    writeln!(md, "\nSwitches, in seconds from the start of the timeline:")?;
    for c in &run.clients {
        let list = switches(run, &c.changes.lock().unwrap_or_else(|p| p.into_inner()));
        let first = c
            .changes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .first()
            .map_or("?".to_owned(), |c| c.to.clone());
        writeln!(
            md,
            "- {} (started on {first}): {}",
            c.kind.name(),
            if list.is_empty() {
                "none".to_owned()
            } else {
                list.iter()
                    .map(|(t, w)| format!("{t:.1} s {w}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            }
        )?;
    }

    md += &crate::sim::compare(run, binary, work, &|kind, phase| get(kind, phase))?;
    Ok(md)
}
