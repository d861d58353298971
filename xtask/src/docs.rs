//! `cargo xtask docs`: regenerates the parts of the docs that commands produce.
//!
//! Today that is the comparison of Auto with sing-box's `urltest` and mihomo's
//! `fallback` on every example scenario, in `docs/auto.md`. A test
//! (`crates/switchyard/tests/docs.rs`) fails when the committed section is stale.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use crate::cmd::Cmd;
use crate::section::Section;

/// The comparison table in `docs/auto.md`.
pub(crate) const COMPARE: Section = Section {
    doc: "docs/auto.md",
    begin: "<!-- compare:begin -->",
    end: "<!-- compare:end -->",
};

/// The command whose output fills the section.
const COMPARE_ARGS: [&str; 9] = [
    "run",
    "--quiet",
    "--package",
    "switchyard",
    "--",
    "auto",
    "compare",
    "--markdown",
    "examples/auto",
];

pub(crate) fn run(root: &Path) -> Result<()> {
    let out = Cmd::cargo(root).args(COMPARE_ARGS).output()?;
    let table = String::from_utf8(out).context("compare printed text that is not UTF-8")?;
    let doc = root.join(COMPARE.doc);
    let old = fs::read_to_string(&doc).with_context(|| format!("reading {}", doc.display()))?;
    let body = format!(
        "Produced by `switchyard auto compare --markdown examples/auto` (summaries of the \
         `auto`, `urltest` and `fallback` policies on each example).\n\n{table}"
    );
    let section = COMPARE.wrap("cargo xtask docs", &body);
    fs::write(&doc, COMPARE.replace(&old, &section)?)
        .with_context(|| format!("writing {}", doc.display()))?;
    println!("wrote {}", COMPARE.doc);
    Ok(())
}
