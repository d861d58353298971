//! Free ports that no two tests are handed at once, across every test process.
//!
//! A port read from `127.0.0.1:0` and released can be handed to another process a
//! moment later, by the kernel, before the first one's owner binds it. Most owners
//! would then fail to bind ("address already in use"), but a node binds its inbounds
//! with `SO_REUSEPORT`: two nodes of two tests would *both* bind the port, and the
//! kernel would split each test's connections between them. So every port handed out
//! is claimed in a directory shared by the machine's test processes (a file created
//! only if absent), and a port claimed in the last [`CLAIM_FOR`] is skipped.

use std::fs::OpenOptions;
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, bail};

use crate::LOCALHOST;

/// How long a claim holds: longer than any one test.
pub const CLAIM_FOR: Duration = Duration::from_secs(15 * 60);

/// Tries before giving up (each one a port the kernel chose).
const TRIES: usize = 200;

fn claims() -> PathBuf {
    std::env::temp_dir().join("switchyard-test-ports")
}

/// A TCP port on 127.0.0.1 that was free a moment ago and that no other test of this
/// machine was handed in the last [`CLAIM_FOR`].
pub fn free_port() -> Result<u16> {
    let dir = claims();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for _ in 0..TRIES {
        let port = {
            let listener =
                TcpListener::bind((LOCALHOST, 0)).context("binding 127.0.0.1:0 for a free port")?;
            listener.local_addr()?.port()
        };
        if claim(&dir.join(port.to_string()))? {
            return Ok(port);
        }
    }
    bail!("no free port unclaimed by other tests after {TRIES} tries")
}

/// Claims `path`'s port: a new file, or one whose claim has lapsed (touched anew).
fn claim(path: &std::path::Path) -> Result<bool> {
    match OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(_) => return Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e).with_context(|| format!("claiming {}", path.display())),
    }
    let age = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|at| SystemTime::now().duration_since(at).ok());
    match age {
        Some(age) if age >= CLAIM_FOR => {
            // Lapsed: take it over. Two takers at once are possible but need the
            // kernel to hand both the same port within this instant.
            let file = OpenOptions::new().write(true).open(path)?;
            file.set_modified(SystemTime::now())?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_handed_out_are_all_different() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..50 {
            assert!(seen.insert(free_port().unwrap()), "a port handed out twice");
        }
    }
}
