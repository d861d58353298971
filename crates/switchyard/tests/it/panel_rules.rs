//! `switchyard panel rules refresh --deb …`, run as the built binary on Debian's real
//! packages (`SWITCHYARD_RULE_DEBS`, from `cargo xtask peers`): it says what it read
//! and wrote, and the lists land under the data directory's
//! `rule-sets/maintained/`; a file that is not a package fails with dpkg-deb's word.

use std::path::PathBuf;
use std::process::Command;

fn debs() -> Vec<PathBuf> {
    let dir = std::env::var_os("SWITCHYARD_RULE_DEBS")
        .map(PathBuf::from)
        .expect(
            "SWITCHYARD_RULE_DEBS is not set: run `cargo xtask peers` and export what it prints",
        );
    let mut debs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "deb"))
        .collect();
    debs.sort();
    debs
}

#[test]
fn rules_refresh_writes_the_maintained_lists_from_the_packages_given() {
    let data = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    cmd.args(["panel", "--data"])
        .arg(data.path())
        .args(["rules", "refresh"]);
    for deb in debs() {
        cmd.arg("--deb").arg(deb);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in [
        "tor-geoipdb ",
        "webext-ublock-origin-firefox ",
        "country-ru: ",
        "ads: ",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(line)),
            "{line}: {stdout}"
        );
    }
    let maintained = data.path().join("rule-sets/maintained");
    for file in [
        "country-ru.txt",
        "country-ir.txt",
        "country-cn.txt",
        "ads.txt",
        "SOURCES",
    ] {
        assert!(maintained.join(file).is_file(), "{file}");
    }

    let bad = data.path().join("bad.deb");
    std::fs::write(&bad, "no").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["panel", "--data"])
        .arg(data.path())
        .args(["rules", "refresh", "--deb"])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("dpkg-deb"), "{stderr}");
}
