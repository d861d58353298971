//! `switchyard auto compare [--markdown] PATHS...`.

use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use switchyard_auto_sim::{self as sim, POLICIES, Plan, PolicyError, Summary, format_secs};

use super::InputFileError;

/// Run every policy on each scenario; print one table per scenario.
#[derive(Debug, Args)]
pub(crate) struct Compare {
    /// Print Markdown (a `### <file stem>` section and a table per scenario).
    #[arg(long)]
    markdown: bool,
    /// Scenario files, or directories whose `*.json` files are taken in name order.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

/// One row of a table: a policy's summary.
type Row = (&'static str, Summary);

impl Compare {
    pub(crate) fn run(self) -> anyhow::Result<()> {
        let mut files = Vec::new();
        for path in &self.paths {
            expand(path, &mut files)?;
        }
        // Load everything first: a bad file fails the command before any output.
        let mut plans = Vec::with_capacity(files.len());
        for file in &files {
            plans.push(super::load_plan(file)?);
        }
        let mut out = BufWriter::new(io::stdout().lock());
        for (i, (file, plan)) in files.iter().zip(&plans).enumerate() {
            let name = file.file_stem().map_or_else(
                || file.display().to_string(),
                |s| s.to_string_lossy().into(),
            );
            let rows = POLICIES
                .iter()
                .map(|p| Ok((*p, summarize(p, plan)?)))
                .collect::<Result<Vec<Row>, PolicyError>>()?;
            if i > 0 {
                writeln!(out)?;
            }
            if self.markdown {
                markdown(&mut out, &name, &rows)?;
            } else {
                plain(&mut out, &name, &rows)?;
            }
        }
        out.flush()?;
        Ok(())
    }
}

fn summarize(policy: &str, plan: &Plan) -> Result<Summary, PolicyError> {
    let mut policy = sim::make_policy(policy, plan)?;
    Ok(sim::run(plan, policy.as_mut()).summary)
}

/// Adds `path` (a file) or the `*.json` files of `path` (a directory), sorted by name.
fn expand(path: &Path, files: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let unreadable = |source| InputFileError {
        path: path.to_owned(),
        source,
    };
    if !path.is_dir() {
        files.push(path.to_owned());
        return Ok(());
    }
    let mut found = Vec::new();
    for entry in fs::read_dir(path).map_err(unreadable)? {
        let p = entry.map_err(unreadable)?.path();
        if p.is_file() && p.extension().is_some_and(|e| e == "json") {
            found.push(p);
        }
    }
    found.sort();
    files.extend(found);
    Ok(())
}

const HEADER: [&str; 5] = ["policy", "switches", "outage_s", "probes", "checks"];

fn cells(policy: &str, s: &Summary) -> [String; 5] {
    [
        policy.to_owned(),
        s.switches.to_string(),
        format_secs(s.outage_ms),
        s.probes.to_string(),
        s.checks.to_string(),
    ]
}

fn plain(out: &mut impl Write, name: &str, rows: &[Row]) -> io::Result<()> {
    writeln!(out, "{name}")?;
    let table: Vec<[String; 5]> = std::iter::once(HEADER.map(String::from))
        .chain(rows.iter().map(|(p, r)| cells(p, r)))
        .collect();
    let widths: Vec<usize> = (0..5)
        .map(|c| table.iter().map(|r| r[c].len()).max().unwrap_or(0))
        .collect();
    for row in &table {
        let mut line = format!("  {:<w$}", row[0], w = widths[0]);
        for c in 1..5 {
            line.push_str(&format!("  {:>w$}", row[c], w = widths[c]));
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}

fn markdown(out: &mut impl Write, name: &str, rows: &[Row]) -> io::Result<()> {
    writeln!(out, "### {name}\n")?;
    writeln!(out, "| {} |", HEADER.join(" | "))?;
    writeln!(out, "|---|---:|---:|---:|---:|")?;
    for (p, r) in rows {
        writeln!(out, "| {} |", cells(p, r).join(" | "))?;
    }
    Ok(())
}
