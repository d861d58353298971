//! Probe resistance, handshake deadlines and the per-user address limit, with raw
//! clients on 127.0.0.1 (and 127.0.0.2 for a second source address).

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use common::*;
use switchyard_node::config::parse_uuid;
use switchyard_proto::Address;
use switchyard_proto::vless::{Command, Request};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

/// A local "website": answers any request with a fixed page.
async fn website() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf).await;
                let _ = s
                    .write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
                    )
                    .await;
            });
        }
    });
    addr
}

/// Reads what the server sends within `wait`; `None` if it sent nothing and kept the
/// connection open that long.
async fn read_for(s: &mut TcpStream, wait: Duration) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    match tokio::time::timeout(wait, s.read_to_end(&mut out)).await {
        Ok(_) => Some(out),
        Err(_) if out.is_empty() => None,
        Err(_) => Some(out),
    }
}

#[tokio::test]
async fn a_prober_gets_the_fallback_website_byte_for_byte() {
    let site = website().await;
    let f = start(&format!("protocol = \"vless\"\nfallback = \"{site}\"")).await;
    let mut s = TcpStream::connect(f.addr()).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let got = read_for(&mut s, Duration::from_secs(5)).await.unwrap();
    assert!(got.ends_with(b"hello"), "{}", String::from_utf8_lossy(&got));
    // A well-formed VLESS header with an unknown id goes there too.
    let mut s = TcpStream::connect(f.addr()).await.unwrap();
    let mut header = Vec::new();
    Request {
        uuid: [9; 16],
        flow: switchyard_proto::vless::Flow::None,
        command: Command::Tcp(Address::Ip(f.http.addr())),
    }
    .encode(&mut header);
    s.write_all(&header).await.unwrap();
    let got = read_for(&mut s, Duration::from_secs(5)).await.unwrap();
    assert!(got.starts_with(b"HTTP/1.1 200 OK"));
}

#[tokio::test]
async fn trojan_probes_go_to_the_fallback_too() {
    let site = website().await;
    let f = start(&format!("protocol = \"trojan\"\nfallback = \"{site}\"")).await;
    let mut s = TcpStream::connect(f.addr()).await.unwrap();
    s.write_all(b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let got = read_for(&mut s, Duration::from_secs(5)).await.unwrap();
    assert!(got.ends_with(b"hello"));
}

#[tokio::test]
async fn a_websocket_inbound_sends_other_paths_to_the_fallback() {
    let site = website().await;
    let f = start(&format!("protocol = \"vless\"\ntransport = {{ type = \"ws\", path = \"/secret\" }}\nfallback = \"{site}\"")).await;
    let mut s = TcpStream::connect(f.addr()).await.unwrap();
    s.write_all(
        b"GET /secret-not HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
    )
    .await
    .unwrap();
    let got = read_for(&mut s, Duration::from_secs(5)).await.unwrap();
    assert!(got.ends_with(b"hello"));
}

#[tokio::test]
async fn without_a_fallback_a_prober_is_held_in_silence_then_closed() {
    // The fixture holds for 2 s.
    let f = start("protocol = \"vless\"").await;
    let mut s = TcpStream::connect(f.addr()).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    assert_eq!(
        read_for(&mut s, Duration::from_millis(1500)).await,
        None,
        "held, no answer"
    );
    let closed = read_for(&mut s, Duration::from_secs(5)).await;
    assert_eq!(closed, Some(Vec::new()), "closed without a byte");
}

#[tokio::test]
async fn a_client_that_trickles_its_header_is_cut_at_the_handshake_deadline() {
    let f = start_with("protocol = \"vless\"", "").await;
    let mut s = TcpStream::connect(f.addr()).await.unwrap();
    s.write_all(&[0]).await.unwrap(); // version byte, then nothing
    // The fixture's handshake deadline is 3 s; the connection is closed by then
    // without an answer.
    let got = read_for(&mut s, Duration::from_secs(6)).await;
    assert_eq!(got, Some(Vec::new()));
}

async fn vless_from(source: &str, f: &Fixture, uuid: &str) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
    let mut s = socket.connect(f.addr()).await.unwrap();
    s.write_all(&vless_get(uuid, f.http.addr(), 10))
        .await
        .unwrap();
    s
}

#[tokio::test]
async fn the_address_limit_refuses_one_more_source_address_and_counts_it() {
    let f = start_with("protocol = \"vless\"", "address_limit = 1").await; // applies to bob
    let mut first = vless_from("127.0.0.1", &f, BOB_UUID).await;
    let mut head = [0u8; 2];
    first.read_exact(&mut head).await.unwrap();
    assert_eq!(head, [0, 0], "admitted: VLESS response");
    // Same source again: fine. Another source while the first is online: refused.
    let mut again = vless_from("127.0.0.1", &f, BOB_UUID).await;
    again.read_exact(&mut head).await.unwrap();
    let mut other = vless_from("127.0.0.2", &f, BOB_UUID).await;
    let got = read_for(&mut other, Duration::from_secs(5)).await;
    assert_eq!(got, Some(Vec::new()), "refused: closed without an answer");
    let bob = f.node.shared().accounting.users()["bob"].clone();
    assert_eq!(bob.refused_by_address_limit, 1);
    assert_eq!(
        bob.sources,
        ["127.0.0.1".parse::<std::net::IpAddr>().unwrap()]
    );
    // Alice has no limit.
    let mut a = vless_from("127.0.0.2", &f, ALICE_UUID).await;
    a.read_exact(&mut head).await.unwrap();
    drop((first, again));
    // Once bob's first source is gone, the other one fits.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut later = vless_from("127.0.0.2", &f, BOB_UUID).await;
    later.read_exact(&mut head).await.unwrap();
}

#[tokio::test]
async fn route_rules_pick_the_outbound_per_destination() {
    let f = start("protocol = \"vless\"").await;
    let other = switchyard_testkit::HttpTarget::start().await.unwrap();
    let mut c = f.node.config().await;
    c.route.rules = vec![switchyard_node::route::Rule {
        ip_cidr: vec![switchyard_node::route::Cidr::parse("127.0.0.0/8").unwrap()],
        port: vec![switchyard_node::route::Ports::One(other.addr().port())],
        outbound: "block".into(),
        ..Default::default()
    }];
    f.node.apply(c).await.unwrap();
    let node = f.addr();
    let fetch = |target: SocketAddr| async move {
        let mut s = TcpStream::connect(node).await.unwrap();
        s.write_all(&vless_get(ALICE_UUID, target, 10))
            .await
            .unwrap();
        read_for(&mut s, Duration::from_secs(5))
            .await
            .unwrap_or_default()
    };
    assert!(
        fetch(f.http.addr())
            .await
            .ends_with(&switchyard_testkit::pattern::bytes(10))
    );
    assert!(fetch(other.addr()).await.is_empty(), "blocked by the rule");
    assert_eq!(other.requests(), 0);
}

/// Connects from `source` (a loopback address) to the fixture's inbound.
async fn connect_from(source: &str, f: &Fixture) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
    socket.connect(f.addr()).await.unwrap()
}

/// Without a fallback, a prober sees the same thing whatever it sends: nothing, then
/// a close at the same time after connecting (the fixture: hold 2 s, handshake
/// deadline 3 s, so 3 s), for a cut-short header, a wrong one, and one followed by
/// closing its side.
#[tokio::test]
async fn what_a_prober_sees_does_not_depend_on_what_it_sent() {
    let f = start("protocol = \"vless\"").await;
    let probe = |bytes: &'static [u8], close: bool| {
        let addr = f.addr();
        async move {
            let started = tokio::time::Instant::now();
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.write_all(bytes).await.unwrap();
            if close {
                s.shutdown().await.unwrap();
            }
            let got = read_for(&mut s, Duration::from_secs(8)).await;
            (got, started.elapsed())
        }
    };
    let (partial, wrong, closed) = tokio::join!(
        probe(&[0, 1, 2], false),
        probe(b"GET / HTTP/1.1\r\n\r\n", false),
        probe(&[0, 1, 2], true),
    );
    for (what, (got, after)) in [("partial", partial), ("wrong", wrong), ("closed", closed)] {
        assert_eq!(got, Some(Vec::new()), "{what}: closed without a byte");
        assert!(
            (Duration::from_millis(2900)..Duration::from_millis(4500)).contains(&after),
            "{what}: closed after {after:?}, not at the 3 s every probe gets"
        );
    }
}

/// With a fallback, a header cut short by the client's silence goes to the fallback
/// at the handshake deadline, with exactly the bytes read so far.
#[tokio::test]
async fn a_cut_short_header_goes_to_the_fallback_with_its_bytes() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let site = listener.local_addr().unwrap();
    let f = start(&format!("protocol = \"vless\"\nfallback = \"{site}\"")).await;
    let mut s = TcpStream::connect(f.addr()).await.unwrap();
    s.write_all(&[0, 0xb8, 0x31]).await.unwrap();
    let (mut at_site, _) = tokio::time::timeout(Duration::from_secs(6), listener.accept())
        .await
        .expect("the fallback got the connection")
        .unwrap();
    let mut got = [0u8; 3];
    at_site.read_exact(&mut got).await.unwrap();
    assert_eq!(got, [0, 0xb8, 0x31]);
    at_site.write_all(b"site").await.unwrap();
    let mut answer = [0u8; 4];
    s.read_exact(&mut answer).await.unwrap();
    assert_eq!(&answer, b"site");
}

/// One source holding idle sockets can't fill the inbound's handshake slots: past 256
/// (the default) from one address, new connections from it are closed at once; other addresses are
/// served as usual, and the same one is again once the idle sockets are closed at the
/// handshake deadline (3 s in the fixture).
#[tokio::test]
async fn idle_sockets_from_one_source_do_not_starve_the_rest() {
    let f = start("protocol = \"vless\"").await;
    let mut idle = Vec::new();
    for _ in 0..256 {
        idle.push(connect_from("127.0.0.1", &f).await);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut over = connect_from("127.0.0.1", &f).await;
    let got = read_for(&mut over, Duration::from_millis(1000)).await;
    assert_eq!(got, Some(Vec::new()), "the 257th is closed at once");
    let mut other = vless_from("127.0.0.2", &f, ALICE_UUID).await;
    let mut head = [0u8; 2];
    other.read_exact(&mut head).await.unwrap();
    assert_eq!(head, [0, 0], "another source is served");
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let mut again = vless_from("127.0.0.1", &f, ALICE_UUID).await;
    again.read_exact(&mut head).await.unwrap();
    drop(idle);
}

/// A user holds at most 256 UDP associations: the 257th VLESS UDP request is closed
/// without an answer, and one frees once an association ends.
#[tokio::test]
async fn a_user_holds_at_most_256_udp_associations() {
    let f = start("protocol = \"vless\"").await;
    let uuid = parse_uuid(ALICE_UUID).unwrap();
    let udp_request = || {
        let mut header = Vec::new();
        Request {
            uuid,
            flow: switchyard_proto::vless::Flow::None,
            command: Command::Udp(Address::Ip(f.udp.addr())),
        }
        .encode(&mut header);
        header
    };
    let mut held = Vec::new();
    for _ in 0..256 {
        let mut s = TcpStream::connect(f.addr()).await.unwrap();
        s.write_all(&udp_request()).await.unwrap();
        let mut head = [0u8; 2];
        s.read_exact(&mut head).await.unwrap();
        held.push(s);
    }
    let mut over = TcpStream::connect(f.addr()).await.unwrap();
    over.write_all(&udp_request()).await.unwrap();
    let got = read_for(&mut over, Duration::from_secs(5)).await;
    assert_eq!(got, Some(Vec::new()), "the 257th is refused");
    drop(held.pop());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut again = TcpStream::connect(f.addr()).await.unwrap();
    again.write_all(&udp_request()).await.unwrap();
    let mut head = [0u8; 2];
    again.read_exact(&mut head).await.unwrap();
    assert_eq!(head, [0, 0]);
}

/// A fallback that never answers (its SYNs vanish) is given 5 s, then the prober is
/// held like any other: the connection does not hang on the kernel's SYN retries.
#[tokio::test]
async fn a_fallback_that_never_answers_is_given_up_after_5_s() {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let full = socket.listen(0).unwrap();
    let site = full.local_addr().unwrap();
    let _queued = TcpStream::connect(site).await.unwrap();
    let f = start(&format!("protocol = \"vless\"\nfallback = \"{site}\"")).await;
    let started = tokio::time::Instant::now();
    let mut s = TcpStream::connect(f.addr()).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    let got = read_for(&mut s, Duration::from_secs(15)).await;
    assert_eq!(got, Some(Vec::new()), "closed without a byte");
    let after = started.elapsed();
    assert!(
        (Duration::from_millis(4900)..Duration::from_secs(8)).contains(&after),
        "closed after {after:?}"
    );
}

/// A user never reaches the node's control API, though the fixture allows private
/// destinations: a stand-in listening on the control port accepts nothing, by address
/// or by name, while the HTTP target on the same loopback is served.
#[tokio::test]
async fn a_user_never_reaches_the_control_api() {
    let f = start("protocol = \"vless\"").await;
    let control = f.node.config().await.control.listen;
    let stand_in = TcpListener::bind(control).await.unwrap();
    for target in [control.to_string(), format!("localhost:{}", control.port())] {
        let mut s = TcpStream::connect(f.addr()).await.unwrap();
        let mut header = Vec::new();
        let (host, port) = target.rsplit_once(':').unwrap();
        Request {
            uuid: parse_uuid(ALICE_UUID).unwrap(),
            flow: switchyard_proto::vless::Flow::None,
            command: Command::Tcp(Address::domain(host, port.parse().unwrap()).unwrap()),
        }
        .encode(&mut header);
        s.write_all(&header).await.unwrap();
        let got = read_for(&mut s, Duration::from_secs(5)).await;
        assert_eq!(got, Some(Vec::new()), "{target}: closed without an answer");
    }
    let reached = tokio::time::timeout(Duration::from_millis(300), stand_in.accept()).await;
    assert!(
        reached.is_err(),
        "a user's connection reached the control port"
    );
    let mut s = TcpStream::connect(f.addr()).await.unwrap();
    s.write_all(&vless_get(ALICE_UUID, f.http.addr(), 10))
        .await
        .unwrap();
    let got = read_for(&mut s, Duration::from_secs(5)).await.unwrap();
    assert!(got.ends_with(&switchyard_testkit::pattern::bytes(10)));
}

#[tokio::test]
async fn fallbacks_and_plain_relays_run_inside_the_kernel_byte_for_byte() {
    let site = website().await;
    let f = start(&format!("protocol = \"vless\"\nfallback = \"{site}\"")).await;
    assert_eq!(control::spliced(&f).await, 0);
    // A prober: the fallback site through splice(2).
    let mut s = TcpStream::connect(f.addr()).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let got = read_for(&mut s, Duration::from_secs(5)).await.unwrap();
    assert!(got.ends_with(b"hello"), "{}", String::from_utf8_lossy(&got));
    assert_eq!(control::spliced(&f).await, 1);
    // A user on the plain inbound, dialing straight out: 8 MiB through splice(2),
    // every byte checked and counted on the user.
    let n: u64 = 8 << 20;
    let mut s = TcpStream::connect(f.addr()).await.unwrap();
    s.write_all(&vless_get(ALICE_UUID, f.http.addr(), n))
        .await
        .unwrap();
    let mut two = [0u8; 2];
    s.read_exact(&mut two).await.unwrap();
    assert_eq!(two, [0, 0], "the VLESS response header");
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(s.read_u8().await.unwrap());
    }
    let mut body = Vec::new();
    s.read_to_end(&mut body).await.unwrap();
    assert_eq!(body.len() as u64, n);
    assert_eq!(switchyard_testkit::pattern::first_mismatch(0, &body), None);
    assert_eq!(control::spliced(&f).await, 2);
    let (up, down) = f.alice();
    assert!(down >= n && up > 0, "alice counted up {up}, down {down}");
}
