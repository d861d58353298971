//! Medians, ratios and the Markdown tables: ours against sing-box, ours against Xray,
//! and our Vision against our VLESS+TLS.

use crate::case::Side;
use crate::case::{Case, Inner, Peer, Protocol};
use crate::plan::{BULK_WIDE, CPS_BODY, Plan, QUICK_ENV};

/// What a row measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Metric {
    /// Download over one connection, MB/s.
    Bulk1,
    /// Download over [`BULK_WIDE`] connections at once, MB/s.
    BulkWide,
    /// What one server core carries over one connection: the bytes of that download
    /// per second of the server's CPU time, MB/s. With the server pinned to a core
    /// of its own, the download's rate when that core is the limit.
    Core1,
    /// The same over [`BULK_WIDE`] connections.
    CoreWide,
    /// The server's CPU time over both downloads per second of them, percent: 100 %
    /// when the server's one core was the limit.
    Busy,
    /// The server's CPU time per GB downloaded, milliseconds.
    CpuPerGb,
    /// New proxied connections per second.
    Cps,
    /// Server resident memory per idle proxied connection, bytes.
    IdleMem,
}

impl Metric {
    /// What a case measures: the idle connections only with the plain target (with
    /// the TLS one they would be the same connections).
    pub(crate) fn of(case: Case) -> Vec<Self> {
        let mut all = vec![
            Self::Bulk1,
            Self::BulkWide,
            Self::Core1,
            Self::CoreWide,
            Self::Busy,
            Self::CpuPerGb,
            Self::Cps,
        ];
        if case.inner == Inner::Http {
            all.push(Self::IdleMem);
        }
        all
    }

    fn label(self) -> String {
        match self {
            Self::Bulk1 => "download, 1 connection".to_owned(),
            Self::BulkWide => format!("download, {BULK_WIDE} connections"),
            Self::Core1 => "one server core carries, 1 connection".to_owned(),
            Self::CoreWide => format!("one server core carries, {BULK_WIDE} connections"),
            Self::Busy => "server core busy during downloads".to_owned(),
            Self::CpuPerGb => "server CPU per GB downloaded".to_owned(),
            Self::Cps => "new connections".to_owned(),
            Self::IdleMem => "memory per idle connection".to_owned(),
        }
    }

    fn value(self, v: f64) -> String {
        match self {
            Self::Bulk1 | Self::BulkWide | Self::Core1 | Self::CoreWide => {
                format!("{v:.0} MB/s")
            }
            Self::Busy => format!("{v:.0} %"),
            Self::CpuPerGb => format!("{v:.0} ms"),
            Self::Cps => format!("{v:.0} conn/s"),
            Self::IdleMem => format!("{:.1} KiB", v / 1024.0),
        }
    }

    /// The goal for the ratio ours / the case's peer, one server core against one
    /// (`docs/benchmarks.md`), and whether `ratio` meets it: a fifth more of what
    /// one server core carries, at most 0.7 of the CPU time per GB, at most half the
    /// memory. The downloads' own rates have none: the client's core sets them
    /// (server core busy below 100 %), the same for both servers.
    fn goal(self, ratio: f64) -> String {
        let (goal, met) = match self {
            Self::Core1 | Self::CoreWide => ("≥ 1.20", ratio >= 1.2),
            Self::CpuPerGb => ("≤ 0.70", ratio <= 0.7),
            Self::IdleMem => ("≤ 0.50", ratio <= 0.5),
            Self::Bulk1 | Self::BulkWide | Self::Busy | Self::Cps => return "—".to_owned(),
        };
        met_or_not(goal, met)
    }
}

fn met_or_not(goal: &str, met: bool) -> String {
    format!("{goal}: {}", if met { "met" } else { "**not met**" })
}

/// One metric of one case: every repetition's value per side.
pub(crate) struct Row {
    case: Case,
    metric: Metric,
    ours: Vec<f64>,
    reference: Vec<f64>,
    /// The same straight from the target (downloads only).
    direct: Vec<f64>,
}

impl Row {
    pub(crate) fn new(case: Case, metric: Metric) -> Self {
        Self {
            case,
            metric,
            ours: Vec::new(),
            reference: Vec::new(),
            direct: Vec::new(),
        }
    }

    pub(crate) fn push_direct(&mut self, value: f64) {
        self.direct.push(value);
    }

    pub(crate) fn metric(&self) -> Metric {
        self.metric
    }

    pub(crate) fn push(&mut self, side: Side, value: f64) {
        match side {
            Side::Ours => self.ours.push(value),
            Side::SingBox | Side::Xray => self.reference.push(value),
        }
    }
}

/// What the report says besides the rows.
#[derive(Default)]
pub(crate) struct Notes {
    /// "VLESS+TLS with ours: TLS 1.3, TLS_AES_128_GCM_SHA256", per client peer.
    pub(crate) suites: Vec<(Peer, String)>,
    /// Cases our node did not serve, and what went wrong.
    pub(crate) refused: Vec<(Case, String)>,
    /// Repetitions of a Vision case that failed and were measured again: which
    /// side, and the error.
    pub(crate) retried: Vec<(Case, Side, String)>,
    /// Where the processes ran ([`switchyard_testkit::pin::Cores::describe`]).
    pub(crate) pinning: String,
}

/// The median of `values`; `None` when there are none.
fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// The tables, what each metric is, and the TLS suites seen.
pub(crate) fn markdown(rows: &[Row], notes: &Notes, plan: &Plan) -> String {
    let mut t = String::new();
    if plan.partial() {
        t += &format!(
            "**A partial run** ({}): not the full benchmark; its numbers only show that \
             the cases work.\n\n",
            if plan.quick {
                format!("{QUICK_ENV}=1, reduced sizes")
            } else {
                "a subset of the cases".to_owned()
            }
        );
    }
    for peer in Peer::ALL {
        let of_peer: Vec<&Row> = rows.iter().filter(|r| r.case.peer == peer).collect();
        if !of_peer.is_empty() {
            t += &peer_table(peer, &of_peer, notes);
            t += "\n";
        }
    }
    t += &vision_table(rows);
    t += &footnote(plan, &notes.pinning);
    if !crate::OURS_SERVES_SHADOWSOCKS {
        t += "\nShadowsocks-2022: our node's inbound is not in this build; sing-box alone \
              (`OURS_SERVES_SHADOWSOCKS` in `crates/node/benches/node/main.rs` turns ours \
              on).\n";
    }
    if rows.iter().any(|r| r.case.protocol.xhttp_mode().is_some()) {
        t += "\nXHTTP: the Xray client in front of both servers, the same path and mode \
              on every side, HTTP/2 inside REALITY. No stream-one row: Xray 24.11.21's \
              client refuses `\"mode\": \"stream-one\"` by name (\"unsupported mode: \
              stream-one\"); our node's own tests speak it.\n";
    }
    for (case, why) in &notes.refused {
        t += &format!(
            "\n{}: our node did not serve it in this build (its rows show n/a): {}\n",
            case.name(),
            why.replace('\n', " ")
        );
    }
    for (case, side, why) in &notes.retried {
        t += &format!(
            "\n{}: a repetition through {} failed and was measured again: {}\n",
            case.name(),
            side.name(),
            without_links(&why.replace('\n', " "))
        );
    }
    for peer in Peer::ALL {
        let suites: Vec<&String> = notes
            .suites
            .iter()
            .filter(|(p, _)| *p == peer)
            .map(|(_, s)| s)
            .collect();
        if !suites.is_empty() {
            t += &format!(
                "\nTLS as negotiated with the {} client (read from the ServerHello):\n",
                peer.side().name()
            );
            for s in suites {
                t += &format!("- {s}\n");
            }
        }
    }
    t
}

/// The spread of `values`, `min–max` in `metric`'s unit; empty for one value.
fn spread(metric: Metric, values: &[f64]) -> String {
    let min = values.iter().copied().reduce(f64::min);
    let max = values.iter().copied().reduce(f64::max);
    match (min, max) {
        (Some(lo), Some(hi)) if values.len() > 1 => {
            let unit = metric.value(hi);
            let number = unit.split(' ').next().unwrap_or_default();
            let lo = metric.value(lo);
            let lo = lo.split(' ').next().unwrap_or_default();
            format!(" ({lo}–{number})")
        }
        _ => String::new(),
    }
}

/// `| protocol | metric | ours | PEER | ours / PEER | direct TCP | goal |` for
/// `peer`'s cases, each value the median with the spread (min–max) after it.
fn peer_table(peer: Peer, rows: &[&Row], notes: &Notes) -> String {
    let name = peer.side().name();
    let mut t = format!(
        "| protocol | metric | ours | {name} | ours / {name} | direct TCP | goal |\n\
         |---|---|---:|---:|---:|---:|---|\n"
    );
    for row in rows {
        let ours = median(&row.ours);
        let theirs = median(&row.reference);
        let refused = notes.refused.iter().any(|(c, _)| *c == row.case);
        let show = |v: Option<f64>, all: &[f64]| match v {
            Some(v) => format!("{}{}", row.metric.value(v), spread(row.metric, all)),
            None if refused => "n/a (refused, see below)".to_owned(),
            None => "n/a (not in this build)".to_owned(),
        };
        let (ratio, goal) = match (ours, theirs) {
            (Some(o), Some(s)) if s != 0.0 => (format!("{:.2}", o / s), row.metric.goal(o / s)),
            _ => ("n/a".to_owned(), "—".to_owned()),
        };
        let direct = median(&row.direct).map_or_else(
            || "—".to_owned(),
            |d| format!("{}{}", row.metric.value(d), spread(row.metric, &row.direct)),
        );
        t += &format!(
            "| {} | {} | {} | {} | {ratio} | {direct} | {goal} |\n",
            row.case.label(),
            row.metric.label(),
            show(ours, &row.ours),
            show(theirs, &row.reference),
        );
    }
    t
}

/// Our VLESS+REALITY+Vision against our VLESS+TLS, both behind the Xray client, per
/// target: the goal is within 10 % of TLS's throughput. Empty when a side is missing.
fn vision_table(rows: &[Row]) -> String {
    let ours = |protocol: Protocol, inner: Inner, metric: Metric| {
        rows.iter()
            .find(|r| r.case == Case::new(protocol, Peer::Xray, inner) && r.metric == metric)
            .and_then(|r| median(&r.ours))
    };
    let mut t = String::new();
    for inner in [Inner::Http, Inner::Tls13] {
        for metric in [Metric::Bulk1, Metric::BulkWide, Metric::CpuPerGb] {
            let vision = ours(Protocol::VlessRealityVision, inner, metric);
            let tls = ours(Protocol::VlessTls, inner, metric);
            let (Some(vision), Some(tls)) = (vision, tls) else {
                continue;
            };
            let ratio = vision / tls;
            let goal = match metric {
                Metric::Bulk1 | Metric::BulkWide => met_or_not("≥ 0.90", ratio >= 0.9),
                _ => "—".to_owned(),
            };
            let target = match inner {
                Inner::Http => "plain HTTP",
                Inner::Tls13 => "inner TLS 1.3",
            };
            t += &format!(
                "| {target} | {} | {} | {} | {ratio:.2} | {goal} |\n",
                metric.label(),
                metric.value(vision),
                metric.value(tls),
            );
        }
    }
    if t.is_empty() {
        return t;
    }
    format!(
        "Our node's VLESS+REALITY+Vision against its own VLESS+TLS (the rows above, \
         Xray client):\n\n\
         | traffic inside | metric | ours, Vision | ours, VLESS+TLS | Vision / TLS | goal |\n\
         |---|---|---:|---:|---:|---|\n{t}\n"
    )
}

fn footnote(plan: &Plan, pinning: &str) -> String {
    format!(
        "Pinning: {pinning}. Medians of {reps} repetitions, the spread (lowest–highest) in \
         parentheses (MB = 10^6 bytes); ours and the peer alternate which goes first. \
         Direct TCP: the same downloads straight from the target, no proxy and no \
         client program, the machine's own ceiling for the measuring side. Server core \
         busy: the server's CPU time over both downloads per second of them; below 100 % \
         the client side, not the server, set the pace, and the CPU per GB is the \
         server's figure. Download: {bulk} MiB per case from \
         the local HTTP target, every byte checked. Server CPU: the server's threads' time on \
         a CPU (`/proc/PID/task/*/schedstat`, nanoseconds) over both downloads, per GB; \
         lower is better. New \
         connections: {cps} sequential requests for {CPS_BODY} bytes, each on a new \
         connection through the client and the server. Memory: the server's VmRSS growth \
         with {idle} idle proxied connections open, divided by {idle}, in a fresh server \
         process per repetition, median of {mem}. \"Inner TLS 1.3\": the same through a TLS \
         1.3 site in front of the target, the bench's client speaking TLS to it through the \
         proxy, so that Vision's direct copy engages; without it Vision carries plain HTTP \
         (padding, then plain copy inside REALITY's TLS).\n",
        reps = plan.reps,
        bulk = plan.bulk_bytes >> 20,
        cps = plan.cps_requests,
        idle = plan.idle_connections,
        mem = plan.mem_reps,
    )
}

/// `text` without the web addresses some errors carry (rustls names a page of its
/// manual): the project's docs link nowhere outside the repository.
fn without_links(text: &str) -> String {
    text.split(' ')
        .filter(|w| !w.starts_with("http://") && !w.starts_with("https://"))
        .collect::<Vec<_>>()
        .join(" ")
        .trim_end_matches([':', ' '])
        .to_owned()
}
