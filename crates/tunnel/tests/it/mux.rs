//! Streams over real links: in-memory (`tokio::io::duplex`) and loopback TCP.

use std::io::ErrorKind;
use std::net::SocketAddr;

use switchyard_proto::Address;
use switchyard_tunnel::frame::{Network, Open, ResetReason};
use switchyard_tunnel::mux::{INITIAL_WINDOW, Incoming, Mux, MuxConfig, MuxError, MuxHandle, Side};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn open(network: Network, port: u16) -> Open {
    Open {
        network,
        user: "alice".into(),
        destination: Address::Ip(SocketAddr::from(([192, 0, 2, 1], port))),
    }
}

/// The byte at `i` of the stream with `seed`: not periodic in any power of two.
fn pattern(seed: u64, i: u64) -> u8 {
    (i.wrapping_mul(31) ^ (i >> 9) ^ seed.wrapping_mul(0x9e37_79b9)) as u8
}

async fn send_pattern<W: AsyncWrite + Unpin>(w: &mut W, seed: u64, len: u64) {
    let mut buf = vec![0u8; 7919];
    let mut at = 0;
    while at < len {
        let n = (len - at).min(buf.len() as u64) as usize;
        for (k, b) in buf[..n].iter_mut().enumerate() {
            *b = pattern(seed, at + k as u64);
        }
        w.write_all(&buf[..n]).await.unwrap();
        at += n as u64;
    }
    w.shutdown().await.unwrap();
}

async fn check_pattern<R: AsyncRead + Unpin>(r: &mut R, seed: u64, len: u64) {
    let mut buf = vec![0u8; 10_007];
    let mut at = 0;
    loop {
        let n = r.read(&mut buf).await.unwrap();
        if n == 0 {
            break;
        }
        for (k, &b) in buf[..n].iter().enumerate() {
            assert_eq!(
                b,
                pattern(seed, at + k as u64),
                "seed {seed} byte {}",
                at + k as u64
            );
        }
        at += n as u64;
    }
    assert_eq!(at, len, "seed {seed}: length");
}

fn duplex_pair(
    opener: MuxConfig,
    acceptor: MuxConfig,
) -> (MuxHandle, Incoming, MuxHandle, Incoming) {
    let (a, b) = tokio::io::duplex(256 * 1024);
    let (ha, ia) = Mux::start(a, Side::Opener, opener);
    let (hb, ib) = Mux::start(b, Side::Acceptor, acceptor);
    (ha, ia, hb, ib)
}

async fn tcp_pair() -> (MuxHandle, Incoming, MuxHandle, Incoming) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (dialed, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
    let (a, b) = (dialed.unwrap(), accepted.unwrap().0);
    a.set_nodelay(true).unwrap();
    b.set_nodelay(true).unwrap();
    let (ha, ia) = Mux::start(a, Side::Opener, MuxConfig::default());
    let (hb, ib) = Mux::start(b, Side::Acceptor, MuxConfig::default());
    (ha, ia, hb, ib)
}

/// The acceptor checks what each stream sends and answers with its own pattern.
fn serve_patterns(mut incoming: Incoming, len: u64) -> tokio::task::JoinHandle<usize> {
    tokio::spawn(async move {
        let mut tasks = Vec::new();
        while let Some((open, stream)) = incoming.next().await {
            let seed = u64::from(open.destination.port());
            tasks.push(tokio::spawn(async move {
                let (mut r, mut w) = tokio::io::split(stream);
                tokio::join!(
                    check_pattern(&mut r, seed, len),
                    send_pattern(&mut w, seed + 1000, len)
                );
            }));
            if tasks.len() == 100 {
                break;
            }
        }
        let n = tasks.len();
        for t in tasks {
            t.await.unwrap();
        }
        n
    })
}

async fn hundred_streams(opener: MuxHandle, incoming: Incoming) {
    const LEN: u64 = 2 * 1024 * 1024;
    let server = serve_patterns(incoming, LEN);
    let mut clients = Vec::new();
    for i in 0..100u16 {
        let stream = opener.open(open(Network::Tcp, i)).unwrap();
        clients.push(tokio::spawn(async move {
            let (mut r, mut w) = tokio::io::split(stream);
            let seed = u64::from(i);
            tokio::join!(
                send_pattern(&mut w, seed, LEN),
                check_pattern(&mut r, seed + 1000, LEN)
            );
        }));
    }
    for c in clients {
        c.await.unwrap();
    }
    assert_eq!(server.await.unwrap(), 100);
    assert!(opener.bytes_carried() >= 2 * 100 * LEN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_streams_carry_every_byte_both_ways_in_memory() {
    let (ha, _ia, _hb, ib) = duplex_pair(MuxConfig::default(), MuxConfig::default());
    hundred_streams(ha, ib).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_streams_carry_every_byte_both_ways_over_tcp() {
    let (ha, _ia, hb, ib) = tcp_pair().await;
    hundred_streams(ha.clone(), ib).await;
    assert!(!ha.is_closed() && !hb.is_closed());
    assert!(ha.rtt().is_some(), "the first ping measured the round trip");
}

#[tokio::test]
async fn half_close_lets_the_other_direction_finish() {
    let (ha, _ia, _hb, mut ib) = duplex_pair(MuxConfig::default(), MuxConfig::default());
    let mut client = ha.open(open(Network::Tcp, 80)).unwrap();
    client.write_all(b"request").await.unwrap();
    client.shutdown().await.unwrap();
    assert_eq!(
        client.write_all(b"more").await.unwrap_err().kind(),
        ErrorKind::BrokenPipe
    );
    let (got, mut server) = ib.next().await.unwrap();
    assert_eq!(got, open(Network::Tcp, 80));
    let mut request = Vec::new();
    server.read_to_end(&mut request).await.unwrap();
    assert_eq!(request, b"request");
    // The server still writes after the client's Fin.
    server.write_all(b"response").await.unwrap();
    server.shutdown().await.unwrap();
    let mut response = Vec::new();
    client.read_to_end(&mut response).await.unwrap();
    assert_eq!(response, b"response");
    drop((client, server));
    while ha.open_streams() > 0 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn dropping_an_unfinished_stream_resets_it() {
    let (ha, _ia, hb, mut ib) = duplex_pair(MuxConfig::default(), MuxConfig::default());
    let mut client = ha.open(open(Network::Tcp, 80)).unwrap();
    client.write_all(b"partial").await.unwrap();
    let (_, mut server) = ib.next().await.unwrap();
    drop(client);
    let mut buf = [0u8; 64];
    let err = loop {
        match server.read(&mut buf).await {
            Ok(0) => panic!("a reset stream must not end cleanly"),
            Ok(_) => continue,
            Err(e) => break e,
        }
    };
    assert_eq!(err.kind(), ErrorKind::ConnectionReset);
    let inner = err.into_inner().unwrap().downcast::<MuxError>().unwrap();
    assert!(matches!(
        *inner,
        MuxError::StreamReset {
            reason: ResetReason::Abort,
            ..
        }
    ));
    assert_eq!(
        server.write(b"x").await.unwrap_err().kind(),
        ErrorKind::ConnectionReset
    );
    drop(server);
    assert_eq!((ha.open_streams(), hb.open_streams()), (0, 0));
}

#[tokio::test]
async fn an_explicit_reset_carries_its_reason() {
    let (ha, _ia, _hb, mut ib) = duplex_pair(MuxConfig::default(), MuxConfig::default());
    let mut client = ha.open(open(Network::Tcp, 80)).unwrap();
    let (_, server) = ib.next().await.unwrap();
    server.reset(ResetReason::ConnectFailed);
    let err = client.read(&mut [0u8; 8]).await.unwrap_err();
    let inner = err.into_inner().unwrap().downcast::<MuxError>().unwrap();
    assert!(matches!(
        *inner,
        MuxError::StreamReset {
            reason: ResetReason::ConnectFailed,
            ..
        }
    ));
}

#[tokio::test]
async fn a_stream_nobody_reads_blocks_no_other_stream() {
    let (ha, _ia, _hb, mut ib) = duplex_pair(MuxConfig::default(), MuxConfig::default());
    let mut stuck = ha.open(open(Network::Tcp, 1)).unwrap();
    let (_, mut stuck_server) = ib.next().await.unwrap();
    const STUCK: u64 = 4 * INITIAL_WINDOW as u64;
    let stuck_writer = tokio::spawn(async move {
        send_pattern(&mut stuck, 1, STUCK).await;
        stuck
    });
    // Another stream carries 4 MiB each way while the first is stuck at its window.
    let free = ha.open(open(Network::Tcp, 2)).unwrap();
    let (_, free_server) = ib.next().await.unwrap();
    let (mut cr, mut cw) = tokio::io::split(free);
    let (mut sr, mut sw) = tokio::io::split(free_server);
    const LEN: u64 = 4 * 1024 * 1024;
    tokio::join!(
        send_pattern(&mut cw, 2, LEN),
        check_pattern(&mut sr, 2, LEN),
        send_pattern(&mut sw, 3, LEN),
        check_pattern(&mut cr, 3, LEN),
    );
    assert!(
        !stuck_writer.is_finished(),
        "the stuck stream's writer waits for window"
    );
    check_pattern(&mut stuck_server, 1, STUCK).await;
    stuck_writer.await.unwrap();
}

#[tokio::test]
async fn the_stream_limit_fails_fast_here_and_is_refused_there() {
    let small = MuxConfig {
        max_streams: 4,
        ..MuxConfig::default()
    };
    // The opener allows more than the acceptor: the acceptor refuses the fifth.
    let (ha, _ia, _hb, mut ib) = duplex_pair(MuxConfig::default(), small.clone());
    let mut kept = Vec::new();
    for port in 0..4 {
        kept.push(ha.open(open(Network::Tcp, port)).unwrap());
    }
    let mut fifth = ha.open(open(Network::Tcp, 4)).unwrap();
    let err = fifth.read(&mut [0u8; 8]).await.unwrap_err();
    let inner = err.into_inner().unwrap().downcast::<MuxError>().unwrap();
    assert!(matches!(
        *inner,
        MuxError::StreamReset {
            reason: ResetReason::Refused,
            ..
        }
    ));
    for _ in 0..4 {
        ib.next().await.unwrap();
    }
    // An opener that knows the limit does not even ask.
    let (ha, _ia, _hb, _ib) = duplex_pair(small.clone(), small);
    let _kept: Vec<_> = (0..4)
        .map(|p| ha.open(open(Network::Tcp, p)).unwrap())
        .collect();
    assert_eq!(
        ha.open(open(Network::Tcp, 4)).unwrap_err(),
        MuxError::StreamLimit(4)
    );
    assert_eq!(ha.open_streams(), 4);
}

#[tokio::test]
async fn go_away_stops_new_streams_on_both_sides_but_not_old_ones() {
    let (ha, _ia, hb, mut ib) = duplex_pair(MuxConfig::default(), MuxConfig::default());
    let mut old = ha.open(open(Network::Tcp, 1)).unwrap();
    let (_, mut old_server) = ib.next().await.unwrap();
    hb.go_away();
    assert_eq!(
        hb.open(open(Network::Tcp, 2)).unwrap_err(),
        MuxError::GoingAway
    );
    // The opener hears of it once the GoAway arrives.
    while ha.open(open(Network::Tcp, 3)).is_ok() {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        ha.open(open(Network::Tcp, 3)).unwrap_err(),
        MuxError::GoingAway
    );
    old.write_all(b"still here").await.unwrap();
    old.shutdown().await.unwrap();
    let mut got = Vec::new();
    old_server.read_to_end(&mut got).await.unwrap();
    assert_eq!(got, b"still here");
}

#[tokio::test]
async fn close_ends_every_stream_and_both_handles_see_why() {
    let (ha, _ia, hb, mut ib) = duplex_pair(MuxConfig::default(), MuxConfig::default());
    let mut client = ha.open(open(Network::Tcp, 1)).unwrap();
    let (_, mut server) = ib.next().await.unwrap();
    ha.close();
    assert_eq!(ha.closed().await, MuxError::Closed);
    assert_eq!(hb.closed().await, MuxError::PeerClosed);
    assert_eq!(
        client.write(b"x").await.unwrap_err().kind(),
        ErrorKind::ConnectionAborted
    );
    assert!(server.read(&mut [0u8; 4]).await.is_err());
    assert!(ib.next().await.is_none());
    assert_eq!(
        ha.open(open(Network::Tcp, 2)).unwrap_err(),
        MuxError::Closed
    );
}

#[tokio::test]
async fn udp_datagrams_round_trip_with_their_addresses() {
    let (ha, _ia, _hb, mut ib) = duplex_pair(MuxConfig::default(), MuxConfig::default());
    let client = ha.open(open(Network::Udp, 53)).unwrap();
    let dns = Address::Domain("dns.example".into(), 53);
    let ip = Address::Ip(SocketAddr::from(([192, 0, 2, 7], 443)));
    for i in 0..10u8 {
        let to = if i % 2 == 0 { &dns } else { &ip };
        assert!(client.send_to(to, &vec![i; usize::from(i) * 100]).unwrap());
    }
    let (got, server) = ib.next().await.unwrap();
    assert_eq!(got.network, Network::Udp);
    for i in 0..10u8 {
        let (from, data) = server.recv_from().await.unwrap();
        assert_eq!(&from, if i % 2 == 0 { &dns } else { &ip });
        assert_eq!(data, vec![i; usize::from(i) * 100]);
        assert!(server.send_to(&from, &data).unwrap());
    }
    for i in 0..10u8 {
        let (_, data) = client.recv_from().await.unwrap();
        assert_eq!(data, vec![i; usize::from(i) * 100]);
    }
    client.finish().unwrap();
    assert_eq!(
        server.recv_from().await.unwrap_err(),
        MuxError::EndOfDatagrams(server.id())
    );
    // The datagram API is not for byte streams.
    let tcp = ha.open(open(Network::Tcp, 80)).unwrap();
    assert!(matches!(
        tcp.send_to(&dns, b"x").unwrap_err(),
        MuxError::WrongNetwork { .. }
    ));
}

#[tokio::test]
async fn datagrams_beyond_the_window_are_dropped_not_queued() {
    let (ha, _ia, _hb, mut ib) = duplex_pair(MuxConfig::default(), MuxConfig::default());
    let client = ha.open(open(Network::Udp, 53)).unwrap();
    let to = Address::Ip(SocketAddr::from(([192, 0, 2, 7], 53)));
    let mut sent = 0usize;
    for _ in 0..1000 {
        if client.send_to(&to, &[7; 1000]).unwrap() {
            sent += 1;
        }
        tokio::task::yield_now().await;
    }
    // Each datagram costs its data plus a 7-byte address of the window.
    assert!(
        sent < 1000 && sent * 1007 <= INITIAL_WINDOW as usize,
        "sent {sent}"
    );
    let (_, server) = ib.next().await.unwrap();
    for _ in 0..sent {
        assert_eq!(server.recv_from().await.unwrap().1, vec![7; 1000]);
    }
}
