use std::net::UdpSocket;

use super::*;

const MINUTE: Duration = Duration::from_secs(60);

#[test]
fn the_schedule_hops_to_another_port_each_time_the_same_for_the_same_seed() {
    let schedule = HopSchedule::new(443, 20000..=20003, DEFAULT_HOP_INTERVAL, 7);
    assert_eq!(schedule.len(), 5, "the range and the main port outside it");
    let mut ports = vec![schedule.port(0, None)];
    for hop in 1..16 {
        let previous = ports[ports.len() - 1];
        ports.push(schedule.port(hop, Some(previous)));
    }
    assert_eq!(ports, PORTS_SEED_7);
    for pair in ports.windows(2) {
        assert_ne!(pair[0], pair[1], "a hop that stays: {ports:?}");
    }
    // By time: every interval a hop.
    assert_eq!(schedule.hop_at(Duration::ZERO), 0);
    assert_eq!(schedule.hop_at(Duration::from_millis(29_999)), 0);
    assert_eq!(schedule.hop_at(Duration::from_secs(30)), 1);
    assert_eq!(schedule.hop_at(Duration::from_secs(95)), 3);
    assert_eq!(schedule.port_at(Duration::from_secs(29)), ports[0]);
    assert_eq!(schedule.port_at(Duration::from_secs(95)), ports[3]);
    assert_eq!(schedule.port_at(Duration::from_secs(9 * 30)), ports[9]);
    // Another seed, another order.
    let other = HopSchedule::new(443, 20000..=20003, DEFAULT_HOP_INTERVAL, 8);
    let first_four = [0, 30, 60, 90].map(|s| other.port_at(Duration::from_secs(s)));
    assert_eq!(first_four, PORTS_SEED_8);
}

/// Seed 7's first 16 ports: the main port (443) among them.
const PORTS_SEED_7: [u16; 16] = [
    20002, 20003, 20001, 20000, 20003, 20000, 20003, 20001, 20003, 20000, 443, 20000, 20003, 443,
    20002, 20003,
];
const PORTS_SEED_8: [u16; 4] = [20002, 443, 20001, 20002];

#[test]
fn the_main_port_counts_once_and_a_range_of_one_never_moves() {
    // The main port inside the range: the range alone.
    let inside = HopSchedule::new(20001, 20000..=20002, MINUTE, 1);
    assert_eq!(inside.len(), 3);
    let mut seen = std::collections::BTreeSet::new();
    let mut port = inside.port(0, None);
    for hop in 1..64 {
        seen.insert(port);
        port = inside.port(hop, Some(port));
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), [20000, 20001, 20002]);
    // No other port: it stays.
    let one = HopSchedule::new(443, 443..=443, MINUTE, 1);
    assert_eq!(one.port_at(Duration::ZERO), 443);
    assert_eq!(one.port_at(10 * MINUTE), 443);
    // An empty range: the main port.
    #[allow(clippy::reversed_empty_ranges)]
    let empty = HopSchedule::new(443, 5..=4, MINUTE, 1);
    assert_eq!(empty.port_at(10 * MINUTE), 443);
    // A zero interval is 1 ms.
    assert_eq!(
        HopSchedule::new(443, 1..=2, Duration::ZERO, 1).interval(),
        MIN_HOP_INTERVAL
    );
}

/// `n` UDP sockets on consecutive ports of 127.0.0.1, non-blocking.
fn consecutive_sockets(n: u16) -> Vec<UdpSocket> {
    for _ in 0..200 {
        let first = UdpSocket::bind("127.0.0.1:0").unwrap();
        let start = first.local_addr().unwrap().port();
        if start > u16::MAX - n {
            continue;
        }
        let mut sockets = vec![first];
        for port in start + 1..start + n {
            match UdpSocket::bind(("127.0.0.1", port)) {
                Ok(s) => sockets.push(s),
                Err(_) => break,
            }
        }
        if sockets.len() == usize::from(n) {
            for s in &sockets {
                s.set_nonblocking(true).unwrap();
            }
            return sockets;
        }
    }
    panic!("no {n} consecutive free UDP ports");
}

/// `f` polled (with a waker that does nothing) until ready, letting the runtime
/// run its I/O in between without moving its clock.
async fn ready<T>(mut f: impl FnMut(&mut Context<'_>) -> Poll<T>) -> T {
    for _ in 0..10_000 {
        if let Poll::Ready(v) = f(&mut Context::from_waker(Waker::noop())) {
            return v;
        }
        tokio::task::yield_now().await;
    }
    panic!("never ready");
}

/// Sends `data` to QUIC's fixed address through `socket`.
async fn send(socket: &Arc<ClientHopSocket>, data: &[u8]) {
    let mut poller = socket.clone().create_io_poller();
    ready(|cx| poller.as_mut().poll_writable(cx)).await.unwrap();
    socket
        .try_send(&Transmit {
            destination: socket.fixed,
            ecn: None,
            contents: data,
            segment_size: None,
            src_ip: None,
        })
        .unwrap();
}

/// The one datagram waiting on `server`'s sockets: which socket, its source and
/// content; none waits on the others.
fn received(server: &[UdpSocket]) -> (usize, SocketAddr, Vec<u8>) {
    let mut got = None;
    for (i, s) in server.iter().enumerate() {
        let mut buf = [0u8; 64];
        if let Ok((n, from)) = s.recv_from(&mut buf) {
            assert!(got.is_none(), "two sockets got datagrams");
            got = Some((i, from, buf[..n].to_vec()));
        }
    }
    got.expect("no socket got the datagram")
}

/// The next datagram QUIC would read: its source as QUIC sees it and content
/// (empty: dropped).
async fn recv(socket: &ClientHopSocket) -> (SocketAddr, Vec<u8>) {
    let mut buf = [0u8; 64];
    let mut meta = [RecvMeta::default()];
    ready(|cx| {
        let mut bufs = [IoSliceMut::new(&mut buf)];
        socket.poll_recv(cx, &mut bufs, &mut meta)
    })
    .await
    .unwrap();
    (meta[0].addr, buf[..meta[0].len].to_vec())
}

/// Waits for hop `n` (the driver's task runs on the runtime's own clock).
async fn hop_number(socket: &ClientHopSocket, n: u64) {
    ready(|_| {
        if socket.current().1 == n {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn the_socket_hops_on_time_from_a_new_local_port_and_hears_the_last_one() {
    let server = consecutive_sockets(3);
    let first = server[0].local_addr().unwrap().port();
    let fixed = SocketAddr::from(([127, 0, 0, 1], first));
    let schedule = HopSchedule::new(first, first..=first + 2, DEFAULT_HOP_INTERVAL, 3);
    let runtime = quinn::default_runtime().unwrap();
    let bind = "127.0.0.1:0".parse().unwrap();
    let socket = ClientHopSocket::with_schedule(bind, fixed, schedule.clone(), runtime).unwrap();
    let index = |port: u16| usize::from(port - first);

    // Hop 0: the schedule's first port.
    let p0 = schedule.port_at(Duration::ZERO);
    assert_eq!(socket.current(), (p0, 0));
    send(&socket, b"hop 0").await;
    let (at, s0, data) = received(&server);
    assert_eq!((at, data.as_slice()), (index(p0), &b"hop 0"[..]));
    // Answers from any port of the range are the fixed address's; a stranger's
    // are dropped.
    let other = (index(p0) + 1) % 3;
    server[index(p0)].send_to(b"from p0", s0).unwrap();
    assert_eq!(recv(&socket).await, (fixed, b"from p0".to_vec()));
    server[other].send_to(b"from other", s0).unwrap();
    assert_eq!(recv(&socket).await, (fixed, b"from other".to_vec()));
    let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
    stranger.send_to(b"stranger", s0).unwrap();
    assert_eq!(recv(&socket).await.1, b"");

    // Not yet at 29 s; at 30 s hop 1, to the schedule's port, from a new local port.
    tokio::time::advance(Duration::from_secs(29)).await;
    tokio::task::yield_now().await;
    assert_eq!(socket.current(), (p0, 0));
    tokio::time::advance(Duration::from_secs(1)).await;
    hop_number(&socket, 1).await;
    let p1 = schedule.port_at(Duration::from_secs(30));
    assert_ne!(p1, p0);
    assert_eq!(socket.current(), (p1, 1));
    send(&socket, b"hop 1").await;
    let (at, s1, data) = received(&server);
    assert_eq!((at, data.as_slice()), (index(p1), &b"hop 1"[..]));
    assert_ne!(s1, s0, "the same local port after a hop");
    // The previous local socket still hears the server.
    server[index(p0)].send_to(b"late", s0).unwrap();
    assert_eq!(recv(&socket).await, (fixed, b"late".to_vec()));
    server[index(p1)].send_to(b"new", s1).unwrap();
    assert_eq!(recv(&socket).await, (fixed, b"new".to_vec()));

    // Hop 2: the socket of hop 0 is closed (its port free again).
    tokio::time::advance(DEFAULT_HOP_INTERVAL).await;
    hop_number(&socket, 2).await;
    assert_eq!(
        socket.current().0,
        schedule.port_at(Duration::from_secs(60))
    );
    UdpSocket::bind(s0).expect("hop 0's socket still open after hop 2");

    // The driver ends with the socket.
    let weak = Arc::downgrade(&socket);
    drop(socket);
    assert!(weak.upgrade().is_none());
}
