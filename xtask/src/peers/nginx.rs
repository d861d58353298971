//! nginx for the tests that put a CDN in front of a node: Debian's `nginx` package,
//! from apt when missing.
//!
//! testkit's `nginx` module runs it in the foreground from its own config in a
//! temporary directory, on 127.0.0.1 only; the package's own service is never used.
//! Debian builds it with HTTP/2, TLS and the gRPC proxy, which is all the tests ask.

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::apt;

/// The variable that tells the tests where nginx is (testkit's `nginx::ENV`).
pub(crate) const ENV: &str = "SWITCHYARD_NGINX";

/// Where Debian's package puts it.
const DEBIAN: &str = "/usr/sbin/nginx";

/// nginx, installing Debian's package with apt when it is missing; prints its
/// version. [`ENV`], when set, is taken as it is.
pub(crate) fn nginx() -> Result<PathBuf> {
    let path = apt::program("nginx", ENV, DEBIAN, "nginx")?;
    // `nginx -v` prints "nginx version: nginx/1.22.1" on standard error.
    let out = std::process::Command::new(&path)
        .arg("-v")
        .output()
        .with_context(|| format!("could not run `{} -v`", path.display()))?;
    println!(
        "nginx: {} ({})",
        path.display(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(path)
}
