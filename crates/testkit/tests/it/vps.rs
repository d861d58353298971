//! The fresh VPS of `testkit::vps`: a Debian bookworm booted with systemd in the
//! `client` namespace of a pair reaches a listener in `servers` with curl; files
//! cross between the host and the copy; scripts have a deadline; nothing is left
//! after drop, nor of a killed run.

use std::io::{Read, Write};
use std::net::SocketAddrV4;
use std::path::Path;
use std::time::{Duration, Instant};

use switchyard_testkit::netns;
use switchyard_testkit::vps::Vps;

#[test]
fn a_booted_bookworm_reaches_the_servers_side_with_curl() {
    let pair = netns::pair().unwrap();
    let started = Instant::now();
    let vps = Vps::boot(&pair.client).unwrap();
    eprintln!("{} booted in {:?}", vps.machine(), started.elapsed());

    let release = vps.sh_ok("cat /etc/os-release").unwrap();
    assert!(release.contains("VERSION_CODENAME=bookworm"), "{release}");
    let state = vps.sh("systemctl is-system-running").unwrap();
    let state = String::from_utf8_lossy(&state.stdout);
    assert!(
        matches!(state.trim(), "running" | "degraded"),
        "{state}\n{}",
        vps.log_tail()
    );
    // PID 1 is systemd, and the install script's tools are there.
    assert_eq!(vps.sh_ok("cat /proc/1/comm").unwrap().trim(), "systemd");
    vps.sh_ok("command -v useradd && command -v runuser && command -v systemctl")
        .unwrap();
    let addrs = vps.sh_ok("ip -4 -o addr show").unwrap();
    assert!(
        addrs.contains(&format!("{}/30", pair.client_addr())),
        "{addrs}"
    );

    // A listener in `servers`, served by a plain thread of the root namespace.
    let body = switchyard_testkit::pattern::bytes(50_000);
    let listener = pair
        .servers
        .tcp_listener(SocketAddrV4::new(pair.servers_addr(), 0).into())
        .unwrap();
    listener.set_nonblocking(false).unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = body.clone();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                served.len()
            );
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(&served);
        }
    });
    let got = vps
        .sh(&format!(
            "curl -fsS --max-time 10 http://{}:{port}/",
            pair.servers_addr()
        ))
        .unwrap();
    assert!(
        got.status.success(),
        "curl: {}",
        String::from_utf8_lossy(&got.stderr)
    );
    assert!(
        got.stdout == body,
        "curl got {} bytes, not the {} served",
        got.stdout.len(),
        body.len()
    );
    drop(vps);
}

#[test]
fn files_cross_scripts_have_a_deadline_and_nothing_is_left_after_drop() {
    // A killed run's leftover: a pid above pid_max belongs to no process.
    let pid_max: u64 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let stale = std::env::temp_dir().join(format!("sy-vps-{}-0", pid_max + 1));
    std::fs::create_dir_all(stale.join("root/etc")).unwrap();
    std::fs::write(stale.join("root/etc/hostname"), "stale\n").unwrap();

    let pair = netns::pair().unwrap();
    let vps = Vps::boot(&pair.client).unwrap();
    assert!(!stale.exists(), "{} is still there", stale.display());
    let root = vps.root().to_path_buf();
    let dir = root.parent().unwrap().to_path_buf();
    let nspawn = vps.nspawn_pid().unwrap();

    // Host to container and back.
    std::fs::write(root.join("root/from-host"), "hello from the host\n").unwrap();
    assert_eq!(
        vps.sh_ok("cat /root/from-host").unwrap(),
        "hello from the host\n"
    );
    vps.sh_ok("echo made inside > /tmp/from-inside").unwrap();
    // systemd mounts a tmpfs on /tmp inside: the host sees the root's files, not it.
    vps.sh_ok("echo made inside > /root/from-inside").unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("root/from-inside")).unwrap(),
        "made inside\n"
    );
    // The script's own environment, and its failures.
    assert_eq!(vps.sh_ok("echo $HOME $(id -u)").unwrap().trim(), "/root 0");
    let err = vps
        .sh_ok("echo out; echo err >&2; exit 3")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("exit 3") && err.contains("out") && err.contains("err"),
        "{err}"
    );
    let started = Instant::now();
    let err = vps
        .sh_within("echo before; sleep 30", Duration::from_secs(1))
        .unwrap_err()
        .to_string();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(
        err.contains("did not finish") && err.contains("before"),
        "{err}"
    );
    // Nothing of the killed script is left inside, not even a zombie (the
    // container's systemd would wait for it when powering off).
    let comms = vps
        .sh_ok("cat /proc/[0-9]*/comm 2>/dev/null; true")
        .unwrap();
    assert!(!comms.lines().any(|c| c == "sleep"), "{comms}");
    let zombies = vps
        .sh_ok("grep -l '^State:.*zombie' /proc/[0-9]*/status 2>/dev/null; true")
        .unwrap();
    assert_eq!(zombies, "", "zombies inside");
    assert!(
        vps.log_tail().contains("Debian GNU/Linux 12"),
        "{}",
        vps.log_tail()
    );

    let stopping = Instant::now();
    drop(vps);
    assert!(
        stopping.elapsed() < Duration::from_secs(8),
        "stopping took {:?}",
        stopping.elapsed()
    );
    assert!(!dir.exists(), "{} is still there", dir.display());
    assert!(
        !Path::new(&format!("/proc/{nspawn}")).exists(),
        "systemd-nspawn {nspawn} is still running"
    );
    drop(pair);
}
