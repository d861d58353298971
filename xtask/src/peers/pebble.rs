//! pebble, Let's Encrypt's ACME test server, for the panel's ACME tests: Debian's
//! `pebble` package, from apt when missing. testkit's `pebble` module runs it on
//! 127.0.0.1 with a config of its own.

use std::path::PathBuf;

use anyhow::Result;

use super::apt;

/// The variable that tells the tests where pebble is (testkit's `pebble::ENV`).
pub(crate) const ENV: &str = "SWITCHYARD_PEBBLE";

/// Where Debian's package puts it.
const DEBIAN: &str = "/usr/bin/pebble";

/// pebble, installing Debian's package with apt when it is missing. [`ENV`], when
/// set, is taken as it is.
pub(crate) fn pebble() -> Result<PathBuf> {
    let path = apt::program("pebble", ENV, DEBIAN, "pebble")?;
    println!("pebble: {} (Debian's package)", path.display());
    Ok(path)
}
