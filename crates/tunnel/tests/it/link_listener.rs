//! The listening side under a flood: idle sockets from one source take only that
//! source's share of the pending handshakes, so an origin elsewhere still gets in.

use crate::link_support as support;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use switchyard_tunnel::link::handshake::send_hello;
use switchyard_tunnel::link::listener::{MAX_PENDING_PER_SOURCE, source_key};
use switchyard_tunnel::link::transport::connect;
use switchyard_tunnel::link::{Transport, issue};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpSocket, TcpStream};

use support::*;

const DEADLINE: Duration = Duration::from_secs(10);

/// Whether the listening side has closed `s` (it read end of stream).
async fn closed(s: &mut TcpStream) -> bool {
    let mut b = [0u8; 1];
    matches!(
        tokio::time::timeout(Duration::from_millis(1), s.read(&mut b)).await,
        Ok(Ok(0) | Err(_))
    )
}

#[tokio::test]
async fn idle_sockets_from_one_source_cannot_starve_other_origins() {
    let cert = issue(TUNNEL).unwrap();
    let (addr, _listener, mut links) = relay(&cert, Transport::Tls, admit(&["fi"])).await;
    // 300 sockets from 127.0.0.2 that never say anything: more than the listener's
    // 256 handshake slots in all.
    let mut idle = Vec::new();
    for _ in 0..300 {
        let s = TcpSocket::new_v4().unwrap();
        s.bind("127.0.0.2:0".parse().unwrap()).unwrap();
        idle.push(s.connect(addr).await.unwrap());
    }
    // The listener keeps exactly its per-source share and closes the rest at once.
    let mut open = idle.len();
    for _ in 0..400 {
        open = 0;
        for s in &mut idle {
            open += usize::from(!closed(s).await);
        }
        if open == MAX_PENDING_PER_SOURCE {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(open, MAX_PENDING_PER_SOURCE);
    // An origin from 127.0.0.1 is admitted meanwhile.
    let t = target(addr, cert.pin, Transport::Tls);
    let stream = connect(&t, DEADLINE).await.unwrap();
    let mut ok = send_hello(stream, &hello("fi"), DEADLINE).await.unwrap();
    let link = links.recv().await.unwrap();
    assert_eq!(link.origin, "fi");
    echo(link);
    assert_eq!(round_trip(&mut ok, b"in").await, b"in");
}

#[test]
fn sources_are_ipv4_addresses_and_ipv6_slash_64s() {
    let v4 = IpAddr::V4(Ipv4Addr::new(198, 51, 100, 7));
    assert_eq!(source_key(v4), v4);
    let mapped = IpAddr::V6(Ipv4Addr::new(198, 51, 100, 7).to_ipv6_mapped());
    assert_eq!(source_key(mapped), v4);
    let v6: Ipv6Addr = "2001:db8:1:2:aaaa:bbbb:cccc:dddd".parse().unwrap();
    assert_eq!(
        source_key(IpAddr::V6(v6)),
        "2001:db8:1:2::".parse::<IpAddr>().unwrap()
    );
}
