//! The `.deb`: `switchyard package deb` makes a package of this build, and in a fresh
//! Debian server (debootstrap, booted with systemd-nspawn) `dpkg -i` installs it:
//! the binary at /usr/bin, both units (valid, not enabled), the system user; `panel
//! install` from the packaged binary runs the panel without a second copy; `dpkg -P`
//! leaves nothing behind.

use switchyard_testkit::netns;
use switchyard_testkit::vps::Vps;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deb_installs_the_binary_and_units_and_purges_clean() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["package", "deb", "--fast", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let deb = std::path::PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    let name = deb.file_name().unwrap().to_str().unwrap().to_owned();
    assert!(
        name.starts_with(&format!("switchyard_{}_", env!("CARGO_PKG_VERSION")))
            && name.ends_with(".deb"),
        "{name}"
    );

    let pair = netns::pair().unwrap();
    let vps = Vps::boot(&pair.client).unwrap();
    std::fs::copy(&deb, vps.root().join("root").join(&name)).unwrap();
    let said = vps
        .sh_ok(&format!("dpkg -i /root/{name}"))
        .unwrap_or_else(|e| panic!("dpkg -i: {e:#}"));
    assert!(
        said.contains("switchyard: installed; next: `switchyard panel install`"),
        "{said}"
    );
    let version = vps.sh_ok("switchyard --version").unwrap();
    assert_eq!(
        version.trim(),
        format!("switchyard {}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(
        vps.sh_ok("command -v switchyard").unwrap().trim(),
        "/usr/bin/switchyard"
    );
    vps.sh_ok("getent passwd switchyard").unwrap();
    vps.sh_ok(
        "systemd-analyze verify /lib/systemd/system/switchyard-node.service \
         /lib/systemd/system/switchyard-panel.service",
    )
    .unwrap();
    let enabled = vps
        .sh("systemctl is-enabled switchyard-node switchyard-panel")
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&enabled.stdout)
            .split_whitespace()
            .collect::<Vec<_>>(),
        ["disabled", "disabled"]
    );

    // The packaged binary runs the panel in place: no copy in /usr/local/bin.
    let said = vps.sh_ok("switchyard panel install").unwrap();
    assert!(
        said.contains("switchyard: the service runs the packaged /usr/bin/switchyard"),
        "{said}"
    );
    assert!(
        said.contains("switchyard: enabled and started switchyard-panel.service"),
        "{said}"
    );
    assert!(!vps.root().join("usr/local/bin/switchyard").exists());
    let unit = std::fs::read_to_string(
        vps.root()
            .join("etc/systemd/system/switchyard-panel.service"),
    )
    .unwrap();
    assert!(
        unit.contains("\nExecStart=/usr/bin/switchyard panel "),
        "{unit}"
    );
    vps.sh_ok("switchyard panel uninstall --delete-data")
        .unwrap();

    vps.sh_ok("dpkg -P switchyard").unwrap();
    for gone in [
        "usr/bin/switchyard",
        "lib/systemd/system/switchyard-node.service",
        "lib/systemd/system/switchyard-panel.service",
        "var/lib/switchyard",
    ] {
        assert!(!vps.root().join(gone).exists(), "{gone} is left");
    }
    assert!(!vps.sh("getent passwd switchyard").unwrap().status.success());
    drop(vps);
}
