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
        let mut all = vec![Self::Bulk1, Self::BulkWide, Self::CpuPerGb, Self::Cps];
        if case.inner == Inner::Http {
            all.push(Self::IdleMem);
        }
        all
    }

    fn label(self) -> String {
        match self {
            Self::Bulk1 => "download, 1 connection".to_owned(),
            Self::BulkWide => format!("download, {BULK_WIDE} connections"),
            Self::CpuPerGb => "server CPU per GB downloaded".to_owned(),
            Self::Cps => "new connections".to_owned(),
            Self::IdleMem => "memory per idle connection".to_owned(),
        }
    }

    fn value(self, v: f64) -> String {
        match self {
            Self::Bulk1 | Self::BulkWide => format!("{v:.0} MB/s"),
            Self::CpuPerGb => format!("{v:.0} ms"),
            Self::Cps => format!("{v:.0} conn/s"),
            Self::IdleMem => format!("{:.1} KiB", v / 1024.0),
        }
    }

    /// The issues' goal for the ratio ours / the case's peer, and whether `ratio`
    /// meets it: Xray's throughput by 10 %, sing-box's at least (by 10 % for
    /// Shadowsocks 2022 and the transports of issue 22: gRPC, Hysteria 2; XHTTP is
    /// against Xray only); half the memory of either.
    fn goal(self, case: Case, ratio: f64) -> String {
        let tenth_more = case.peer == Peer::Xray
            || matches!(
                case.protocol,
                Protocol::Shadowsocks | Protocol::VlessGrpcTls | Protocol::Hysteria2
            );
        let (goal, met) = match self {
            Self::Bulk1 | Self::BulkWide if tenth_more => ("≥ 1.10", ratio >= 1.1),
            Self::Bulk1 | Self::BulkWide => ("≥ 1.00", ratio >= 1.0),
            Self::IdleMem => ("≤ 0.50", ratio <= 0.5),
            Self::CpuPerGb | Self::Cps => return "—".to_owned(),
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
}

impl Row {
    pub(crate) fn new(case: Case, metric: Metric) -> Self {
        Self {
            case,
            metric,
            ours: Vec::new(),
            reference: Vec::new(),
        }
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
    t += &footnote(plan);
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

/// `| protocol | metric | ours | PEER | ours / PEER | goal |` for `peer`'s cases.
fn peer_table(peer: Peer, rows: &[&Row], notes: &Notes) -> String {
    let name = peer.side().name();
    let mut t = format!(
        "| protocol | metric | ours | {name} | ours / {name} | goal |\n\
         |---|---|---:|---:|---:|---|\n"
    );
    for row in rows {
        let ours = median(&row.ours);
        let theirs = median(&row.reference);
        let refused = notes.refused.iter().any(|(c, _)| *c == row.case);
        let show = |v: Option<f64>| match v {
            Some(v) => row.metric.value(v),
            None if refused => "n/a (refused, see below)".to_owned(),
            None => "n/a (not in this build)".to_owned(),
        };
        let (ratio, goal) = match (ours, theirs) {
            (Some(o), Some(s)) if s != 0.0 => {
                (format!("{:.2}", o / s), row.metric.goal(row.case, o / s))
            }
            _ => ("n/a".to_owned(), "—".to_owned()),
        };
        t += &format!(
            "| {} | {} | {} | {} | {ratio} | {goal} |\n",
            row.case.label(),
            row.metric.label(),
            show(ours),
            show(theirs),
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

fn footnote(plan: &Plan) -> String {
    format!(
        "Medians of {reps} repetitions (MB = 10^6 bytes). Download: {bulk} MiB per case from \
         the local HTTP target, every byte checked. Server CPU: the server process's user and \
         system time (`/proc/PID/stat`) over both downloads, per GB; lower is better. New \
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
