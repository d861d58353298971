//! The network namespaces of `testkit::netns`: a listener in `servers` is reached
//! from `client` at 10.77.0.1; a cut link refuses connects at once with "network
//! unreachable" and a restored one carries them again; the bridge carries bytes to
//! the root namespace's 127.0.0.1; nothing is left after drop.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, SocketAddrV4, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use switchyard_testkit::netns::{self, NetNs};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Connects from `client` and reads until the peer closes; the bytes read.
fn fetch_in(ns: &NetNs, to: SocketAddr, send: &'static [u8]) -> std::io::Result<Vec<u8>> {
    ns.run_in(move || {
        let mut s = TcpStream::connect_timeout(&to, Duration::from_secs(5))?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        s.write_all(send)?;
        s.shutdown(Shutdown::Write)?;
        let mut got = Vec::new();
        s.read_to_end(&mut got)?;
        Ok(got)
    })
    .unwrap()
}

fn namespaces() -> String {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_cut_link_is_unreachable_at_once_and_a_restored_one_carries_again() {
    let pair = netns::pair().unwrap();
    let names = [
        pair.servers.name().to_owned(),
        pair.client.name().to_owned(),
    ];
    let pid = std::process::id();
    assert!(
        names.iter().all(|n| n.starts_with(&format!("sy-{pid}-"))),
        "{names:?}"
    );

    // A listener in `servers`, served by a plain thread of the root namespace.
    let listener = pair
        .servers
        .tcp_listener(SocketAddrV4::new(pair.servers_addr(), 0).into())
        .unwrap();
    listener.set_nonblocking(false).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let peer = s
                .peer_addr()
                .map(|a| a.ip().to_string())
                .unwrap_or_default();
            let _ = s.write_all(peer.as_bytes());
        }
    });
    let got = fetch_in(&pair.client, addr, b"").unwrap();
    assert_eq!(got, pair.client_addr().to_string().as_bytes());
    // The root namespace never gets an interface of the pair (and nothing here
    // connects to 10.77.0.1 from it: that would leave the machine).
    let links = Command::new("ip").args(["link"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&links.stdout).contains("sy-client"));

    pair.cut().unwrap();
    let started = Instant::now();
    let err = fetch_in(&pair.client, addr, b"").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NetworkUnreachable, "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );

    pair.restore().unwrap();
    let got = fetch_in(&pair.client, addr, b"").unwrap();
    assert_eq!(got, pair.client_addr().to_string().as_bytes());
    // A second cut and restore behave the same.
    pair.cut().unwrap();
    assert!(fetch_in(&pair.client, addr, b"").is_err());
    pair.restore().unwrap();
    assert!(fetch_in(&pair.client, addr, b"").is_ok());

    drop(pair);
    let left = namespaces();
    for name in &names {
        assert!(
            !left.contains(name.as_str()),
            "{name} is still there: {left}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bridge_carries_bytes_to_the_root_loopback_and_faults_still_apply() {
    // An echo on the root namespace's 127.0.0.1.
    let echo = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let echo_addr = echo.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = echo.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    let pair = netns::pair().unwrap();
    let bridge = pair.bridge(echo_addr).await.unwrap();
    assert_eq!(bridge.addr().ip(), pair.servers_addr());

    // A request from a runtime inside `client`.
    let rt = pair.client.runtime_in().unwrap();
    let to = bridge.addr();
    let payload = switchyard_testkit::pattern::bytes(100_000);
    let sent = payload.clone();
    let back = rt
        .run(async move {
            let mut s = tokio::net::TcpStream::connect(to).await?;
            let local = s.local_addr()?;
            let (mut r, mut w) = s.split();
            let (read, wrote) = tokio::join!(
                async {
                    let mut got = Vec::new();
                    r.read_to_end(&mut got).await.map(|_| got)
                },
                async {
                    w.write_all(&sent).await?;
                    w.shutdown().await
                }
            );
            wrote?;
            Ok::<_, std::io::Error>((local, read?))
        })
        .await
        .unwrap();
    assert_eq!(back.0.ip(), pair.client_addr());
    assert!(back.1 == payload, "the echo came back changed");

    // The bridge is a fault proxy: refused connections close at once.
    bridge.set(switchyard_testkit::fault::Fault::Refuse);
    let closed = rt
        .run(async move {
            let mut s = tokio::net::TcpStream::connect(to).await?;
            let mut buf = [0u8; 1];
            tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf)).await?
        })
        .await;
    assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");

    // A cut link: the runtime's connects fail with "network unreachable".
    pair.cut().unwrap();
    let err = rt
        .run(async move { tokio::net::TcpStream::connect(to).await.map(drop) })
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NetworkUnreachable, "{err}");
    drop(rt);
    drop(bridge);
}

#[test]
fn sysctls_are_set_in_the_namespace_only() {
    let root = std::fs::read_to_string("/proc/sys/net/ipv4/ping_group_range").unwrap();
    let ns = NetNs::new().unwrap();
    ns.sysctl("net.ipv4.ping_group_range", "0 2147483647")
        .unwrap();
    let inside = ns
        .run_in(|| std::fs::read_to_string("/proc/sys/net/ipv4/ping_group_range"))
        .unwrap()
        .unwrap();
    assert_eq!(
        inside.split_whitespace().collect::<Vec<_>>(),
        ["0", "2147483647"]
    );
    let out = ns
        .command("cat")
        .arg("/proc/sys/net/ipv4/ping_group_range")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), inside);
    assert_eq!(
        std::fs::read_to_string("/proc/sys/net/ipv4/ping_group_range").unwrap(),
        root
    );
    assert!(ns.sysctl("kernel.hostname", "x").is_err());
}

#[test]
fn leftovers_of_killed_runs_are_deleted() {
    // A pid above pid_max belongs to no process, now or later.
    let pid_max: u64 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let stale = format!("sy-{}-0", pid_max + 1);
    let out = Command::new("ip")
        .args(["netns", "add", &stale])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ns = NetNs::new().unwrap();
    let left = namespaces();
    assert!(!left.contains(&stale), "{stale} is still there: {left}");
    assert!(left.contains(ns.name()), "{left}");
}
