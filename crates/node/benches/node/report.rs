//! Medians, ratios and the Markdown table.

use crate::server::Side;
use crate::{
    BULK_BYTES, BULK_WIDE, CPS_BODY, CPS_REQUESTS, IDLE_CONNECTIONS, MEM_REPS, Protocol, REPS,
};

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

    /// The goal for the ratio ours / sing-box, and whether `ratio` meets it.
    fn goal(self, ratio: f64) -> String {
        let (goal, met) = match self {
            Self::Bulk1 | Self::BulkWide => ("≥ 1.00", ratio >= 1.0),
            Self::IdleMem => ("≤ 0.50", ratio <= 0.5),
            Self::CpuPerGb | Self::Cps => return "—".to_owned(),
        };
        format!("{goal}: {}", if met { "met" } else { "**not met**" })
    }
}

/// One metric of one protocol: every repetition's value per side.
pub(crate) struct Row {
    protocol: Protocol,
    metric: Metric,
    ours: Vec<f64>,
    sing_box: Vec<f64>,
}

impl Row {
    pub(crate) fn new(protocol: Protocol, metric: Metric) -> Self {
        Self {
            protocol,
            metric,
            ours: Vec::new(),
            sing_box: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, side: Side, value: f64) {
        match side {
            Side::Ours => self.ours.push(value),
            Side::SingBox => self.sing_box.push(value),
        }
    }
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

/// The table, what each metric is, and the TLS suites seen.
pub(crate) fn markdown(rows: &[Row], suites: &[String], ours_serves_ss: bool) -> String {
    let mut t = String::from(
        "| protocol | metric | ours | sing-box | ours / sing-box | goal |\n\
         |---|---|---:|---:|---:|---|\n",
    );
    for row in rows {
        let ours = median(&row.ours);
        let theirs = median(&row.sing_box);
        let show = |v: Option<f64>| match v {
            Some(v) => row.metric.value(v),
            None => "n/a (not in this build)".to_owned(),
        };
        let (ratio, goal) = match (ours, theirs) {
            (Some(o), Some(s)) if s != 0.0 => (format!("{:.2}", o / s), row.metric.goal(o / s)),
            _ => ("n/a".to_owned(), "—".to_owned()),
        };
        t += &format!(
            "| {} | {} | {} | {} | {ratio} | {goal} |\n",
            row.protocol.name(),
            row.metric.label(),
            show(ours),
            show(theirs),
        );
    }
    t += &format!(
        "\nMedians of {REPS} repetitions (MB = 10^6 bytes). Download: {} MiB per case from \
         the local HTTP target, every byte checked. Server CPU: the server process's user and system time \
         (`/proc/PID/stat`) over both downloads, per GB; lower is better. New connections: {CPS_REQUESTS} \
         sequential requests for {CPS_BODY} bytes, each on a new connection through the \
         client and the server. Memory: the server's VmRSS growth with {IDLE_CONNECTIONS} \
         idle proxied connections open, divided by {IDLE_CONNECTIONS}, in a fresh server \
         process per repetition, median of {MEM_REPS}.\n",
        BULK_BYTES >> 20
    );
    if !ours_serves_ss {
        t += "\nShadowsocks-2022: our node's inbound is not in this build; sing-box alone \
              (`OURS_SERVES_SHADOWSOCKS` in `crates/node/benches/node/main.rs` turns ours \
              on).\n";
    }
    if !suites.is_empty() {
        t += "\nTLS as negotiated with the sing-box client (read from the ServerHello):\n";
        for s in suites {
            t += &format!("- {s}\n");
        }
    }
    t
}
