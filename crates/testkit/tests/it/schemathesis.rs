//! The pinned schemathesis is where `cargo xtask peers` put it, and runs.

use std::process::Command;

use switchyard_testkit::schemathesis;

#[test]
fn the_pinned_schemathesis_runs() {
    let st = schemathesis::binary().unwrap();
    let out = Command::new(&st).arg("--version").output().unwrap();
    assert!(out.status.success(), "{} --version: {out:?}", st.display());
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.trim()
            .ends_with(&format!("version {}", schemathesis::VERSION)),
        "{said}"
    );
}
