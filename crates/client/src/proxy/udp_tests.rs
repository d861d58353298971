use std::net::SocketAddr;
use std::time::Duration;

use switchyard_proto::entry::{Entry, EntryProtocol, EntryTransport};
use switchyard_proto::trojan;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;

fn ip(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn header(address: &Address, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    UdpPacket {
        address: address.clone(),
        payload,
    }
    .encode(&mut out);
    out
}

#[test]
fn datagrams_are_read_or_dropped_and_counted() {
    let counters = UdpCounters::default();
    let to = Address::Ip(ip("192.0.2.1:53"));
    let wire = header(&to, b"query");
    let packet = read_datagram(&wire, &counters).unwrap();
    assert_eq!(
        (packet.address, packet.payload),
        (to.clone(), &b"query"[..])
    );
    let mut fragment = wire.clone();
    fragment[2] = 1;
    assert!(read_datagram(&fragment, &counters).is_none());
    assert!(read_datagram(&wire[..6], &counters).is_none());
    assert!(read_datagram(&[0, 0], &counters).is_none());
    assert!(read_datagram(&[0, 0, 0, 9, 1, 2], &counters).is_none());
    let mut empty_domain = vec![0, 0, 0, 3, 0, 0, 53];
    empty_domain.extend_from_slice(b"x");
    assert!(read_datagram(&empty_domain, &counters).is_none());
    // An empty payload is a datagram like any other.
    assert!(read_datagram(&header(&to, b""), &counters).is_some());
    assert_eq!(
        counters.stats(),
        UdpStats {
            fragments: 1,
            malformed: 4,
            ..UdpStats::default()
        }
    );
}

#[test]
fn only_the_app_is_heard() {
    let control = ip("127.0.0.1:40000");
    // "I don't know yet": the control connection's IP, the first datagram's port.
    let mut peer = Peer::new(control, &Address::Ip(ip("0.0.0.0:0")));
    assert!(!peer.admit(ip("127.0.0.2:5000")));
    assert!(peer.admit(ip("127.0.0.1:5000")));
    assert!(peer.admit(ip("127.0.0.1:5000")));
    assert!(!peer.admit(ip("127.0.0.1:5001")));
    // A port named in the request is the only one.
    let mut peer = Peer::new(control, &Address::Ip(ip("0.0.0.0:6000")));
    assert!(!peer.admit(ip("127.0.0.1:5000")));
    assert!(peer.admit(ip("127.0.0.1:6000")));
    // An IP named in the request, and its IPv4-mapped form.
    let mut peer = Peer::new(control, &Address::Ip(ip("127.0.0.9:0")));
    assert!(!peer.admit(ip("127.0.0.1:5000")));
    assert!(peer.admit(ip("[::ffff:127.0.0.9]:5000")));
    let mut peer = Peer::new(control, &Address::domain("app.local", 7000).unwrap());
    assert!(peer.admit(ip("127.0.0.1:7000")));
}

fn trojan_entry(addr: SocketAddr) -> Arc<Outbound> {
    Arc::new(
        Outbound::new(Entry {
            name: "T".into(),
            server: addr.ip().to_string(),
            port: addr.port(),
            protocol: EntryProtocol::Trojan {
                password: "pw".into(),
            },
            transport: EntryTransport::Tcp,
            tls: None,
            route: None,
        })
        .unwrap(),
    )
}

/// A Trojan "server" that answers every UDP packet with its payload reversed, from
/// the destination it was sent to.
async fn trojan_reverser() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let mut requested = false;
                loop {
                    let n = s.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if !requested {
                        let Some((r, used)) = trojan::Request::parse(&buf).unwrap() else {
                            continue;
                        };
                        assert_eq!(r.command, trojan::Command::UdpAssociate);
                        buf.drain(..used);
                        requested = true;
                    }
                    while let Some((p, used)) = trojan::UdpPacket::parse(&buf).unwrap() {
                        let mut back: Vec<u8> = p.payload.to_vec();
                        back.reverse();
                        let mut out = Vec::new();
                        trojan::UdpPacket {
                            address: p.address,
                            payload: &back,
                        }
                        .encode(&mut out)
                        .unwrap();
                        buf.drain(..used);
                        s.write_all(&out).await.unwrap();
                    }
                }
            });
        }
    });
    addr
}

/// A control connection to `associate` run directly (so a test picks the idle
/// timeout): the app's end, the reply's bound address, and the association's task.
async fn start(
    proxy: &Proxy,
    idle: Duration,
) -> (
    TcpStream,
    Option<SocketAddr>,
    JoinHandle<Result<(), ServeError>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut app = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (control, _) = listener.accept().await.unwrap();
    let p = proxy.clone();
    let task =
        tokio::spawn(
            async move { associate(&p, control, Address::Ip(ip("0.0.0.0:0")), idle).await },
        );
    let mut reply = [0u8; 10];
    let bound = match app.read_exact(&mut reply).await {
        Ok(_) if reply[1] == 0 => Some(SocketAddr::from((
            [reply[4], reply[5], reply[6], reply[7]],
            u16::from_be_bytes([reply[8], reply[9]]),
        ))),
        _ => None,
    };
    (app, bound, task)
}

async fn proxy() -> Proxy {
    Proxy::start("127.0.0.1:0".parse().unwrap()).await.unwrap()
}

#[tokio::test]
async fn without_a_server_the_association_is_refused() {
    let proxy = proxy().await;
    let (_app, bound, task) = start(&proxy, UDP_IDLE_TIMEOUT).await;
    assert_eq!(bound, None);
    assert_eq!(
        task.await.unwrap().map_err(|e| e.to_string()),
        Err("no server chosen".into())
    );
}

#[tokio::test]
async fn datagrams_go_through_and_back_counted_and_strangers_are_dropped() {
    let proxy = proxy().await;
    proxy.set_server(Some(trojan_entry(trojan_reverser().await)));
    let (_app, bound, _task) = start(&proxy, UDP_IDLE_TIMEOUT).await;
    let relay = bound.unwrap();
    assert_eq!(relay.ip(), ip("127.0.0.1:0").ip());
    let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let to = Address::Ip(ip("192.0.2.1:53"));
    let mut buf = vec![0u8; 2048];
    for size in [1usize, 2, 100, 1400] {
        let payload: Vec<u8> = (0..size).map(|i| i as u8).collect();
        socket.send_to(&header(&to, &payload), relay).await.unwrap();
        let (n, from) = tokio::time::timeout(Duration::from_secs(5), socket.recv_from(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(from, relay);
        let back = UdpPacket::parse(&buf[..n]).unwrap();
        assert_eq!(back.address, to);
        let mut want = payload.clone();
        want.reverse();
        assert_eq!(back.payload, want);
    }
    assert_eq!(proxy.meter().totals(), (1503, 1503));
    // Another port of the app's host is not the app.
    let stranger = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    stranger.send_to(&header(&to, b"x"), relay).await.unwrap();
    let mut fragment = header(&to, b"x");
    fragment[2] = 2;
    socket.send_to(&fragment, relay).await.unwrap();
    socket.send_to(&header(&to, b"ok"), relay).await.unwrap();
    let (n, _) = socket.recv_from(&mut buf).await.unwrap();
    assert_eq!(UdpPacket::parse(&buf[..n]).unwrap().payload, b"ko");
    let stats = proxy.udp_stats();
    assert_eq!(
        (stats.associations, stats.strangers, stats.fragments),
        (1, 1, 1)
    );
}

#[tokio::test]
async fn the_association_ends_with_its_control_connection() {
    let proxy = proxy().await;
    proxy.set_server(Some(trojan_entry(trojan_reverser().await)));
    let (app, bound, task) = start(&proxy, UDP_IDLE_TIMEOUT).await;
    assert!(bound.is_some());
    drop(app);
    let r = tokio::time::timeout(Duration::from_secs(5), task).await;
    assert_eq!(r.unwrap().unwrap().map_err(|e| e.to_string()), Ok(()));
}

#[tokio::test]
async fn an_idle_association_ends_and_closes_its_control_connection() {
    let proxy = proxy().await;
    proxy.set_server(Some(trojan_entry(trojan_reverser().await)));
    let (mut app, bound, task) = start(&proxy, Duration::from_millis(300)).await;
    assert!(bound.is_some());
    let r = tokio::time::timeout(Duration::from_secs(5), task).await;
    assert_eq!(
        r.unwrap().unwrap().map_err(|e| e.to_string()),
        Err("idle for 300ms".into())
    );
    assert_eq!(app.read(&mut [0u8; 8]).await.unwrap(), 0);
}

#[tokio::test]
async fn a_switch_that_closes_connections_ends_the_association() {
    let proxy = proxy().await;
    let server = trojan_entry(trojan_reverser().await);
    proxy.set_server(Some(server.clone()));
    let (_app, _, task) = start(&proxy, UDP_IDLE_TIMEOUT).await;
    proxy.switch(server.clone(), false);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !task.is_finished(),
        "a switch that keeps connections keeps it"
    );
    proxy.switch(server, true);
    let r = tokio::time::timeout(Duration::from_secs(5), task).await;
    assert_eq!(
        r.unwrap().unwrap().map_err(|e| e.to_string()),
        Err("closed by a switch of server".into())
    );
}

/// A server that cannot be reached: Auto hears of it, the meter counts the app's
/// attempt, and the association ends (its control connection closed).
#[tokio::test]
async fn an_unreachable_server_ends_the_association_and_is_reported() {
    let dead = {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap()
    };
    let (failed_tx, mut failed) = mpsc::unbounded_channel();
    let proxy = Proxy::start_with("127.0.0.1:0".parse().unwrap(), Some(failed_tx))
        .await
        .unwrap();
    let server = trojan_entry(dead);
    proxy.set_server(Some(server.clone()));
    let (mut app, bound, task) = start(&proxy, UDP_IDLE_TIMEOUT).await;
    let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let to = Address::Ip(ip("192.0.2.1:53"));
    socket
        .send_to(&header(&to, b"hello"), bound.unwrap())
        .await
        .unwrap();
    let r = tokio::time::timeout(Duration::from_secs(15), task).await;
    let e = r.unwrap().unwrap().unwrap_err().to_string();
    assert!(e.contains("server \"T\": tcp:"), "{e}");
    assert_eq!(failed.recv().await, Some(server.identity()));
    assert_eq!(proxy.meter().totals(), (5, 0));
    assert_eq!(app.read(&mut [0u8; 8]).await.unwrap(), 0);
}
