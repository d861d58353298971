//! XHTTP and gRPC profiles on loopback: the listening side serves HTTP, every stream
//! a link whose pinned TLS and hello come inside it. (Through a real CDN: the node's
//! `tunnel_cdn` tests, with nginx.)

use crate::link_support as support;

use std::time::Duration;

use switchyard_proto::xhttp::Mode;
use switchyard_tunnel::link::handshake::send_hello;
use switchyard_tunnel::link::transport::{ConnectError, connect};
use switchyard_tunnel::link::{OuterTls, Transport, issue};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use support::*;

const DEADLINE: Duration = Duration::from_secs(10);

fn xhttp(path: &str, mode: Mode) -> Transport {
    Transport::Xhttp {
        path: path.into(),
        host: "cdn.example".into(),
        mode,
        outer: None,
    }
}

fn grpc(service_name: &str) -> Transport {
    Transport::Grpc {
        service_name: service_name.into(),
        host: "cdn.example".into(),
        outer: None,
    }
}

#[tokio::test]
async fn the_hello_rides_xhttp_and_grpc_profiles_end_to_end() {
    let cert = issue(TUNNEL).unwrap();
    let profiles = [
        xhttp("/eu-xh", Mode::PacketUp),
        xhttp("/eu-xh", Mode::StreamUp),
        // auto without a CDN's TLS: packet-up over HTTP/1.1.
        xhttp("/eu-xh", Mode::Auto),
        grpc("eu.Tunnel"),
    ];
    for transport in profiles {
        // The listening side takes any XHTTP mode: the dialing side picks.
        let listening = match &transport {
            Transport::Xhttp { path, .. } => xhttp(path, Mode::Auto),
            t => t.clone(),
        };
        let (addr, _listener, mut links) = relay(&cert, listening, admit(&["fi", "de"])).await;
        // Two links from two origins at once, each on its own connection.
        let mut streams = Vec::new();
        for origin in ["fi", "de"] {
            let s = connect(&target(addr, cert.key_pin, transport.clone()), DEADLINE)
                .await
                .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
            streams.push(send_hello(s, &hello(origin), DEADLINE).await.unwrap());
            let link = links.recv().await.unwrap();
            assert_eq!(link.origin, origin, "{transport:?}");
            echo(link);
        }
        for (i, s) in streams.iter_mut().enumerate() {
            let data: Vec<u8> = (0..300_000u32).map(|n| (n as u8) ^ (i as u8)).collect();
            assert_eq!(round_trip(s, &data).await, data, "{transport:?}");
        }
    }
}

#[tokio::test]
async fn another_path_or_service_is_refused_before_tls_and_named() {
    let cert = issue(TUNNEL).unwrap();
    let (addr, _l, _links) = relay(&cert, xhttp("/eu-xh", Mode::Auto), admit(&["fi"])).await;
    for mode in [Mode::PacketUp, Mode::StreamUp] {
        let err = connect(&target(addr, cert.pin, xhttp("/other", mode)), DEADLINE)
            .await
            .err()
            .unwrap();
        assert!(matches!(err, ConnectError::Xhttp { .. }), "{err}");
        assert!(
            err.to_string().contains("check the profile's path"),
            "{err}"
        );
        assert!(err.to_string().starts_with("xhttp://"), "{err}");
    }
    let (addr, _l, _links) = relay(&cert, grpc("eu.Tunnel"), admit(&["fi"])).await;
    let err = connect(&target(addr, cert.pin, grpc("other.Tunnel")), DEADLINE)
        .await
        .err()
        .unwrap();
    assert!(matches!(err, ConnectError::Grpc { .. }), "{err}");
    assert!(err.to_string().contains("service name"), "{err}");
}

#[tokio::test]
async fn a_wrong_pin_inside_xhttp_or_grpc_is_a_pin_error() {
    let cert = issue(TUNNEL).unwrap();
    let other = issue("other").unwrap();
    for transport in [xhttp("/eu-xh", Mode::PacketUp), grpc("eu.Tunnel")] {
        let (addr, _l, _links) = relay(&cert, transport.clone(), admit(&["fi"])).await;
        let err = connect(&target(addr, other.pin, transport.clone()), DEADLINE)
            .await
            .err()
            .unwrap();
        assert!(
            matches!(err, ConnectError::Pin { .. }),
            "{transport:?}: {err}"
        );
    }
}

#[tokio::test]
async fn a_prober_of_an_xhttp_or_grpc_profile_gets_a_plain_404() {
    let cert = issue(TUNNEL).unwrap();
    for transport in [xhttp("/eu-xh", Mode::Auto), grpc("eu.Tunnel")] {
        let (addr, _l, _links) = relay(&cert, transport.clone(), admit(&["fi"])).await;
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(b"GET / HTTP/1.1\r\nHost: cdn.example\r\n\r\n")
            .await
            .unwrap();
        let mut answer = Vec::new();
        tokio::time::timeout(DEADLINE, tcp.read_to_end(&mut answer))
            .await
            .unwrap()
            .unwrap();
        assert!(
            answer.starts_with(b"HTTP/1.1 404"),
            "{transport:?}: {}",
            String::from_utf8_lossy(&answer)
        );
    }
}

#[tokio::test]
async fn an_outer_tls_to_a_plain_xhttp_listener_fails_as_the_cdns_tls() {
    let cert = issue(TUNNEL).unwrap();
    let (addr, _l, _links) = relay(&cert, xhttp("/eu-xh", Mode::Auto), admit(&["fi"])).await;
    let behind_a_cdn = Transport::Xhttp {
        path: "/eu-xh".into(),
        host: "cdn.example".into(),
        mode: Mode::Auto,
        outer: Some(OuterTls::new("cdn.example".into(), None)),
    };
    let err = connect(&target(addr, cert.pin, behind_a_cdn), DEADLINE)
        .await
        .err()
        .unwrap();
    assert!(matches!(err, ConnectError::OuterTls { .. }), "{err}");
    assert!(err.to_string().starts_with("xhttps://"), "{err}");
}
