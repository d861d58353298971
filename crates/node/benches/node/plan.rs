//! How much to measure, and which cases: the full sizes by default, a smoke run's
//! with [`QUICK_ENV`], a subset of the cases with [`CASES_ENV`].

use anyhow::{Result, bail};

use crate::case::{CASES, Case};

/// Set to `1`: a smoke run, every size cut down so that each case runs end to end in
/// seconds. Its numbers only show that everything works.
pub(crate) const QUICK_ENV: &str = "SWITCHYARD_NODE_BENCH_QUICK";
/// Comma-separated words: only the cases whose name (`VLESS+TLS / Xray`,
/// `VLESS+REALITY+Vision / Xray (inner TLS 1.3)`, `VLESS+XHTTP-stream-up+REALITY / Xray`
/// for `xhttp-stream`, …) holds one of them, ignoring case;
/// the word `lossy` also runs the lossy path ([`crate::lossy`]), which a filter
/// without it leaves out.
pub(crate) const CASES_ENV: &str = "SWITCHYARD_NODE_BENCH_CASES";
/// Mebibytes per bulk download instead of the plan's (a partial run, for profiling:
/// a long download gives a profiler time to attach).
pub(crate) const BULK_ENV: &str = "SWITCHYARD_NODE_BENCH_BULK_MIB";

/// Parallel connections of the wide bulk case.
pub(crate) const BULK_WIDE: u64 = 32;
/// The body each new-connection request fetches.
pub(crate) const CPS_BODY: u64 = 1024;

/// The sizes and repetitions of one run.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// Bytes downloaded per bulk case (split evenly over its connections).
    pub(crate) bulk_bytes: u64,
    /// Sequential requests per connection-rate measurement.
    pub(crate) cps_requests: u32,
    /// Idle proxied connections held open for the memory measurement.
    pub(crate) idle_connections: usize,
    /// Repetitions of each measurement; the median is reported.
    pub(crate) reps: usize,
    /// Repetitions of the memory measurement, each with fresh processes: its spread
    /// is small, and each costs a thousand TLS handshakes.
    pub(crate) mem_reps: usize,
    /// A smoke run ([`QUICK_ENV`]).
    pub(crate) quick: bool,
    /// The words of [`CASES_ENV`], lower case; empty: every case.
    pub(crate) only: Vec<String>,
}

impl Plan {
    /// The full run: what `docs/benchmarks.md` shows.
    const FULL: Self = Self {
        bulk_bytes: 256 << 20,
        cps_requests: 500,
        idle_connections: 1000,
        reps: 5,
        mem_reps: 3,
        quick: false,
        only: Vec::new(),
    };

    /// A smoke run: every path exercised, nothing worth comparing.
    const QUICK: Self = Self {
        bulk_bytes: 32 << 20,
        cps_requests: 50,
        idle_connections: 100,
        reps: 1,
        mem_reps: 1,
        quick: true,
        only: Vec::new(),
    };

    /// The plan the environment asks for.
    pub(crate) fn from_env() -> Result<Self> {
        let mut plan = match std::env::var(QUICK_ENV).as_deref().map(str::trim) {
            Err(_) | Ok("" | "0") => Self::FULL,
            Ok("1") => Self::QUICK,
            Ok(other) => bail!("{QUICK_ENV}={other:?}: set it to 1 (a smoke run) or unset it"),
        };
        if let Ok(words) = std::env::var(CASES_ENV) {
            plan.only = words
                .split(',')
                .map(|w| w.trim().to_lowercase())
                .filter(|w| !w.is_empty())
                .collect();
        }
        if let Ok(mib) = std::env::var(BULK_ENV) {
            let mib: u64 = match mib.trim().parse() {
                Ok(m) if (1..=1 << 20).contains(&m) => m,
                _ => bail!("{BULK_ENV}={mib:?}: a number of MiB, 1 to 1048576"),
            };
            plan.bulk_bytes = mib << 20;
        }
        if plan.cases().is_empty() && !plan.wants("lossy") {
            bail!(
                "{CASES_ENV}={:?} matches no case; the cases are: {}; and `lossy` (the \
                 lossy path)",
                plan.only.join(","),
                CASES.map(Case::name).join("; ")
            );
        }
        Ok(plan)
    }

    /// The cases this run measures, in order.
    pub(crate) fn cases(&self) -> Vec<Case> {
        CASES
            .into_iter()
            .filter(|c| {
                let name = c.name().to_lowercase();
                self.only.is_empty() || self.only.iter().any(|w| name.contains(w.as_str()))
            })
            .collect()
    }

    /// Whether this run measures what `word` names beside the cases (`lossy`): every
    /// full run does, a filtered one when a word of its filter is in `word`.
    pub(crate) fn wants(&self, word: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|w| word.contains(w.as_str()))
    }

    /// Whether this is less than the full run (smaller or fewer cases).
    pub(crate) fn partial(&self) -> bool {
        self.quick || !self.only.is_empty() || self.bulk_bytes != Self::FULL.bulk_bytes
    }
}
