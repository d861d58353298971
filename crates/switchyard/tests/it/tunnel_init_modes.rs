//! `switchyard tunnel init` leaves its secrets private even over older, wider files.

use std::os::unix::fs::PermissionsExt as _;
use std::process::Command;

#[test]
fn secrets_are_0600_even_over_wider_files_from_before() {
    let dir = tempfile::tempdir().unwrap();
    let private = ["eu.key", "eu.secret", "relay.toml", "origin-fi.toml"];
    for name in private {
        let p = dir.path().join(name);
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["tunnel", "init", "--name", "eu", "--relay", "127.0.0.1"])
        .args(["--origin", "fi", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    for name in private {
        let p = dir.path().join(name);
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{name}");
        assert_ne!(std::fs::read_to_string(&p).unwrap(), "old", "{name}");
    }
}
