//! The table: medians of every way and the ratio ours / rathole, with the goals.

use std::time::Duration;

use crate::{BULK_BYTES, BULK_WIDE, FIRST_BYTE_ROUNDS, REPS, ours};

/// Columns: direct, ours, rathole.
const DIRECT: usize = 0;
const OURS: usize = 1;
const RATHOLE: usize = 2;

/// Memory per idle stream the issue allows ours, in KiB.
const MEMORY_GOAL_KIB: f64 = 16.0;

/// What one run measured.
pub(crate) struct Report {
    pub(crate) idle: usize,
    pub(crate) tls_ours: String,
    pub(crate) tls_rathole: String,
    /// MB/s per repetition: `[case][way]`, case 0 one stream, case 1 the wide case.
    pub(crate) bulk: [[Vec<f64>; 3]; 2],
    /// MB per second of the tunnel's CPU time, the same way (pinned runs only).
    pub(crate) carries: [[Vec<f64>; 3]; 2],
    /// Where the processes ran.
    pub(crate) pinning: String,
    pub(crate) first_byte: [Duration; 3],
    pub(crate) mem_ours: f64,
    pub(crate) mem_rathole: f64,
}

impl Report {
    pub(crate) fn new(idle: usize) -> Self {
        Self {
            idle,
            tls_ours: String::new(),
            tls_rathole: String::new(),
            bulk: Default::default(),
            carries: Default::default(),
            pinning: String::new(),
            first_byte: [Duration::ZERO; 3],
            mem_ours: 0.0,
            mem_rathole: 0.0,
        }
    }

    pub(crate) fn markdown(&self) -> String {
        let mut t = String::from(
            "| metric | ours | rathole | direct TCP | ours / rathole | goal |\n\
             |---|---:|---:|---:|---:|---|\n",
        );
        for (case, streams) in [(0, 1), (1, BULK_WIDE)] {
            let all = |way: usize| &self.bulk[case][way];
            let m = |way: usize| median(all(way));
            let ratio = m(OURS) / m(RATHOLE);
            let of_direct = m(OURS) / m(DIRECT);
            // The goals on the wide case: a lead over rathole and most of direct TCP.
            let goal = if case == 1 {
                format!(
                    "≥ 1.50: {}; ≥ 60 % of direct: {} ({:.0} %)",
                    met(ratio >= 1.5),
                    met(of_direct >= 0.6),
                    of_direct * 100.0
                )
            } else {
                format!("≥ 1.00: {}", met(ratio >= 1.0))
            };
            t += &format!(
                "| bulk download, {streams} stream{} | {} | {} | {} | {ratio:.2} | {goal} |\n",
                if streams == 1 { "" } else { "s" },
                with_spread(all(OURS), "MB/s"),
                with_spread(all(RATHOLE), "MB/s"),
                with_spread(all(DIRECT), "MB/s"),
            );
            let carries = |way: usize| &self.carries[case][way];
            if !carries(OURS).is_empty() && !carries(RATHOLE).is_empty() {
                let ratio = median(carries(OURS)) / median(carries(RATHOLE));
                t += &format!(
                    "| its core carries, {streams} stream{} | {} | {} | — | {ratio:.2} | — |\n",
                    if streams == 1 { "" } else { "s" },
                    with_spread(carries(OURS), "MB/s"),
                    with_spread(carries(RATHOLE), "MB/s"),
                );
            }
        }
        let us = |way: usize| self.first_byte[way].as_secs_f64() * 1e6;
        let ratio = us(OURS) / us(RATHOLE);
        t += &format!(
            "| new stream to first byte | {:.0} µs | {:.0} µs | {:.0} µs | {ratio:.2} | < 1.00: {} |\n",
            us(OURS),
            us(RATHOLE),
            us(DIRECT),
            met(ratio < 1.0)
        );
        let ratio = self.mem_ours / self.mem_rathole;
        t += &format!(
            "| memory per idle stream ({} open) | {:.1} KiB | {:.1} KiB | — | {ratio:.2} | ours ≤ {MEMORY_GOAL_KIB:.0} KiB: {} |\n",
            self.idle,
            self.mem_ours,
            self.mem_rathole,
            met(self.mem_ours <= MEMORY_GOAL_KIB)
        );
        t += &format!(
            "\nPinning: {}. Bulk: medians of {REPS} repetitions of {} MiB per case from the \
             local target (MB = 10^6 bytes), the spread (lowest–highest) in parentheses, \
             ours and rathole taking turns going first. Its core carries: the bytes per \
             second of the tunnel's own CPU time (our two halves' threads, rathole's two \
             processes), what the tunnel's one core would carry if it were the limit. \
             First byte: \
             median over {FIRST_BYTE_ROUNDS} opens one after another (ours: a new stream in \
             the warm links, the origin connecting to the target; rathole: a new \
             connection to its forwarded port; direct: a new TCP connection), each asking \
             for one byte. Memory: `VmRSS` growth with {} idle streams open, divided by \
             their number; ours in a fresh process holding the relay half, the origin half \
             ({} links) and the client's streams; rathole's server plus client, fresh \
             processes.\n\n\
             TLS as negotiated, read off the wire (ServerHello):\n\
             - ours (rustls, origin to relay): {}\n\
             - rathole (native-tls/OpenSSL, client to server): {}\n",
            self.pinning,
            BULK_BYTES >> 20,
            self.idle,
            ours::LINKS,
            self.tls_ours,
            self.tls_rathole
        );
        t
    }
}

/// "712 MB/s (690–730)": the median with the lowest and highest after it.
fn with_spread(v: &[f64], unit: &str) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if v.len() > 1 {
        format!("{:.0} {unit} ({lo:.0}–{hi:.0})", median(v))
    } else {
        format!("{:.0} {unit}", median(v))
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "**not met**" }
}
