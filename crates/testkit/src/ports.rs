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
use std::net::{TcpListener, UdpSocket};
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

/// A port on 127.0.0.1 that was free over TCP and UDP a moment ago and that no other
/// test of this machine was handed in the last [`CLAIM_FOR`].
pub fn free_port() -> Result<u16> {
    let dir = claims();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for _ in 0..TRIES {
        let port = {
            let listener =
                TcpListener::bind((LOCALHOST, 0)).context("binding 127.0.0.1:0 for a free port")?;
            let port = listener.local_addr()?.port();
            // Free over UDP too: owners of Shadowsocks and Hysteria 2 inbounds bind
            // both, and another test's UDP socket (a QUIC client's) may hold the
            // number the kernel just handed out over TCP.
            if UdpSocket::bind((LOCALHOST, port)).is_err() {
                continue;
            }
            port
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

    #[test]
    fn a_port_whose_udp_number_is_taken_is_not_handed_out() {
        // Hold UDP sockets on 800 ports of the ~28,000 the kernel hands out; none of
        // their numbers may come back while they are held (the TCP side of each is
        // free): 100 ports drawn would meet about three of them otherwise.
        let held: Vec<UdpSocket> = (0..800)
            .filter_map(|_| UdpSocket::bind((LOCALHOST, 0)).ok())
            .collect();
        let numbers: std::collections::HashSet<u16> = held
            .iter()
            .map(|s| s.local_addr().unwrap().port())
            .collect();
        for _ in 0..100 {
            let port = free_port().unwrap();
            assert!(!numbers.contains(&port), "{port} is held over UDP");
        }
    }
}
