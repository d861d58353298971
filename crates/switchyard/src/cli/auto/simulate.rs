//! `switchyard auto simulate SCENARIO.json [--policy auto|urltest|fallback]`.

use std::io::{self, BufWriter, Write as _};
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use switchyard_auto_sim::{self as sim, POLICIES};

/// Replay a scenario against one policy; print its JSON lines and the summary.
#[derive(Debug, Args)]
pub(crate) struct Simulate {
    /// The scenario file (JSON, see docs/auto.md, "Simulator scenarios and output").
    scenario: PathBuf,
    /// The policy to run.
    #[arg(long, default_value = "auto", value_parser = POLICIES)]
    policy: String,
}

impl Simulate {
    pub(crate) fn run(self) -> anyhow::Result<()> {
        let plan = super::load_plan(&self.scenario)?;
        let mut policy = sim::make_policy(&self.policy, &plan)
            .with_context(|| format!("--policy {}", self.policy))?;
        let report = sim::run(&plan, policy.as_mut());
        let mut out = BufWriter::new(io::stdout().lock());
        report.write_json_lines(&mut out)?;
        out.flush()?;
        Ok(())
    }
}
