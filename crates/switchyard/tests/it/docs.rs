//! The generated parts of the docs match what the commands print today.

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn docs_auto_md_holds_the_current_comparison_of_the_examples() {
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["auto", "compare", "--markdown", "examples/auto"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).unwrap();
    let doc = std::fs::read_to_string(root().join("docs/auto.md")).unwrap();
    let begin = doc
        .find("<!-- compare:begin -->")
        .expect("docs/auto.md has the compare markers");
    let end = doc
        .find("<!-- compare:end -->")
        .expect("docs/auto.md has the compare markers");
    assert!(
        doc[begin..end].contains(table.trim_end()),
        "docs/auto.md's comparison is stale: run `cargo xtask docs` and commit it"
    );
}
