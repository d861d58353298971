//! Headless Chromium and its WebDriver server for the panel's web UI tests: Debian's
//! `chromium` and `chromium-driver` packages, from apt when missing.
//!
//! testkit's `browser` module runs `chromedriver`, which starts `chromium`; both are
//! Debian's, never a browser build downloaded by a tool (nothing but the package
//! registries is reachable). Each is looked for where testkit looks: its variable
//! ([`CHROMIUM_ENV`], [`CHROMEDRIVER_ENV`]) when set, taken as it is, else
//! `/usr/bin/<name>`, else `<name>` on `PATH`. When either is missing both packages
//! are installed in one `apt-get` call, so apt picks a driver of the browser's exact
//! version (chromedriver refuses a browser of another major version).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::{apt, which};
use crate::cmd::Cmd;

/// The variable that tells the tests where the Chromium binary is (testkit's
/// `browser::CHROMIUM_ENV`).
pub(crate) const CHROMIUM_ENV: &str = "SWITCHYARD_CHROMIUM";

/// The variable that tells the tests where chromedriver is (testkit's
/// `browser::CHROMEDRIVER_ENV`).
pub(crate) const CHROMEDRIVER_ENV: &str = "SWITCHYARD_CHROMEDRIVER";

/// The Debian packages holding them.
const PACKAGES: [&str; 2] = ["chromium", "chromium-driver"];

/// A program and where to look for it.
struct Program {
    /// Its file name, as Debian installs it under `/usr/bin`.
    name: &'static str,
    /// The variable overriding its path.
    env: &'static str,
}

const CHROMIUM: Program = Program {
    name: "chromium",
    env: CHROMIUM_ENV,
};

const CHROMEDRIVER: Program = Program {
    name: "chromedriver",
    env: CHROMEDRIVER_ENV,
};

/// Chromium and chromedriver in place, by absolute path.
pub(crate) struct Chromium {
    /// The browser.
    pub(crate) browser: PathBuf,
    /// The WebDriver server that drives it.
    pub(crate) driver: PathBuf,
}

/// Chromium and chromedriver, installing Debian's packages with apt when either is
/// missing; prints the version of each.
pub(crate) fn chromium() -> Result<Chromium> {
    let (browser, driver) = match (CHROMIUM.find()?, CHROMEDRIVER.find()?) {
        (Some(browser), Some(driver)) => (browser, driver),
        _ => {
            println!(
                "chromium: chromium or chromedriver not found, installing Debian's {} with \
                 apt-get",
                PACKAGES.join(" and ")
            );
            apt::install(&PACKAGES).with_context(|| {
                format!(
                    "installing {} with apt-get failed: install them by hand (or set \
                     {CHROMIUM_ENV} and {CHROMEDRIVER_ENV} to the binaries' paths)",
                    PACKAGES.join(" and ")
                )
            })?;
            (CHROMIUM.installed()?, CHROMEDRIVER.installed()?)
        }
    };
    let browser_version = version(&browser)?;
    let driver_version = version(&driver)?;
    println!("chromium: {} ({browser_version})", browser.display());
    println!("chromedriver: {} ({driver_version})", driver.display());
    if major(&browser_version) != major(&driver_version) {
        bail!(
            "{} is {browser_version:?} but {} is {driver_version:?}: chromedriver only drives \
             a browser of its own major version; install Debian's {} together (apt-get \
             install {}), or fix {CHROMIUM_ENV} / {CHROMEDRIVER_ENV}",
            browser.display(),
            driver.display(),
            PACKAGES.join(" and "),
            PACKAGES.join(" ")
        );
    }
    Ok(Chromium { browser, driver })
}

impl Program {
    /// The variable's path when set (an error when nothing is there), else
    /// `/usr/bin/<name>`, else `<name>` on `PATH`; `None` when neither exists.
    fn find(&self) -> Result<Option<PathBuf>> {
        let Self { name, env } = self;
        if let Some(path) = std::env::var_os(env).map(PathBuf::from) {
            if !path.is_file() {
                bail!(
                    "{env}={} but there is no file there: fix or unset it",
                    path.display()
                );
            }
            println!("{name}: {} (from {env})", path.display());
            return Ok(Some(path));
        }
        let debian = Path::new("/usr/bin").join(name);
        Ok(Some(debian).filter(|p| p.is_file()).or_else(|| which(name)))
    }

    /// Where apt put it.
    fn installed(&self) -> Result<PathBuf> {
        self.find()?.with_context(|| {
            format!(
                "apt-get installed {} but {} is neither in /usr/bin nor on PATH",
                PACKAGES.join(" and "),
                self.name
            )
        })
    }
}

/// `program --version`'s first line: "Chromium 148.0.7778.167 built on Debian ...",
/// "ChromeDriver 148.0.7778.167 (...)".
fn version(program: &Path) -> Result<String> {
    let out = Cmd::new(program).args(["--version"]).output()?;
    let text = String::from_utf8_lossy(&out);
    let first = text.lines().next().unwrap_or_default().trim();
    if first.is_empty() {
        bail!("`{} --version` printed nothing", program.display());
    }
    Ok(first.to_owned())
}

/// The major version in a `--version` line: the part before the first dot of the
/// first word that starts with a digit.
fn major(version: &str) -> Option<&str> {
    version
        .split_whitespace()
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))
        .and_then(|w| w.split('.').next())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_major_version_is_read_from_both_programs_lines() {
        let browser = "Chromium 148.0.7778.167 built on Debian GNU/Linux 12 (bookworm)";
        let driver = "ChromeDriver 148.0.7778.167 (4ac5e2ab6a5e-refs/branch-heads/7778@{#2014})";
        assert_eq!(major(browser), Some("148"));
        assert_eq!(major(driver), Some("148"));
        assert_eq!(major("chromium"), None);
    }
}
