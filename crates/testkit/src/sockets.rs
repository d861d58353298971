//! Which ports a process listens on, from Linux's `/proc`.
//!
//! A socket shows in `/proc/<pid>/fd` as a link to `socket:[<inode>]`, and in
//! `/proc/<pid>/net/{tcp,tcp6,udp,udp6}` as a line with its local address, state and
//! inode. Matching the inodes gives the process's own sockets.

use std::collections::HashSet;
use std::fs;

use anyhow::{Context, Result};

/// The state column's value for a listening TCP socket.
const TCP_LISTEN: &str = "0A";

/// `(port, is_tcp)` for every listening TCP socket and every bound UDP socket the
/// process `pid` holds.
pub(crate) fn owned_by(pid: u32) -> Result<HashSet<(u16, bool)>> {
    let fd_dir = format!("/proc/{pid}/fd");
    let mut inodes = HashSet::new();
    for entry in fs::read_dir(&fd_dir).with_context(|| format!("reading {fd_dir}"))? {
        let Ok(target) = fs::read_link(entry?.path()) else {
            continue; // closed while we looked
        };
        let target = target.to_string_lossy();
        if let Some(inode) = target
            .strip_prefix("socket:[")
            .and_then(|t| t.strip_suffix(']'))
        {
            inodes.insert(inode.to_owned());
        }
    }
    let mut ports = HashSet::new();
    for (table, tcp) in [
        ("tcp", true),
        ("tcp6", true),
        ("udp", false),
        ("udp6", false),
    ] {
        let path = format!("/proc/{pid}/net/{table}");
        let Ok(text) = fs::read_to_string(&path) else {
            continue; // no IPv6 on this machine
        };
        for line in text.lines().skip(1) {
            if let Some(port) = owned_port(line, tcp, &inodes) {
                ports.insert((port, tcp));
            }
        }
    }
    Ok(ports)
}

/// The local port of a `/proc/net` line when its socket is one of `inodes` (and
/// listening, for TCP).
fn owned_port(line: &str, tcp: bool, inodes: &HashSet<String>) -> Option<u16> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let (local, state, inode) = (fields.get(1)?, fields.get(3)?, fields.get(9)?);
    if (tcp && *state != TCP_LISTEN) || !inodes.contains(*inode) {
        return None;
    }
    let port = local.rsplit_once(':')?.1;
    u16::from_str_radix(port, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_its_own_listening_sockets() {
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let owned = owned_by(std::process::id()).unwrap();
        assert!(owned.contains(&(tcp.local_addr().unwrap().port(), true)));
        assert!(owned.contains(&(udp.local_addr().unwrap().port(), false)));
    }

    #[test]
    fn reads_a_proc_net_line() {
        let line = "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 641 1 0 100 0 0 10 0";
        let inodes: HashSet<String> = ["641".to_owned()].into();
        assert_eq!(owned_port(line, true, &inodes), Some(8080));
        assert_eq!(owned_port(line, true, &HashSet::new()), None);
        let connected = line.replace(" 0A ", " 01 ");
        assert_eq!(owned_port(&connected, true, &inodes), None);
    }
}
