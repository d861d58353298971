//! `switchyard auto ...`: the simulator of Auto and of peers' policies.

mod compare;
mod simulate;

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::Subcommand;
use switchyard_auto_sim::Plan;

/// `switchyard auto` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum AutoCommand {
    /// Replay a scenario against a policy and print what it did, as JSON lines.
    Simulate(simulate::Simulate),
    /// Run every policy on each scenario and print a table per scenario.
    Compare(compare::Compare),
}

impl AutoCommand {
    pub(crate) fn run(self) -> anyhow::Result<()> {
        match self {
            Self::Simulate(cmd) => cmd.run(),
            Self::Compare(cmd) => cmd.run(),
        }
    }
}

/// A scenario file or directory that could not be read.
#[derive(Debug)]
pub(crate) struct InputFileError {
    path: PathBuf,
    source: std::io::Error,
}

impl std::fmt::Display for InputFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: can't read: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for InputFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Reads and validates the scenario at `path`; errors name the file (and the field).
fn load_plan(path: &Path) -> anyhow::Result<Plan> {
    let text = fs::read_to_string(path).map_err(|source| InputFileError {
        path: path.to_owned(),
        source,
    })?;
    Plan::from_json(&text).with_context(|| path.display().to_string())
}
