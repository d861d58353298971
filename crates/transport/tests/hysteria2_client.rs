//! The Hysteria 2 dialing side ([`switchyard_transport::hysteria2::connect`]) against
//! our own serving side and against the real sing-box 1.14.4 as the server, with and
//! without Salamander: TCP streams carry 4 MiB down and 1 MiB up (every byte
//! checked), UDP packets come back from an echo (fragmented ones among them); a
//! wrong password is refused with the server's status, a refused destination with
//! the server's message.

#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "tests time real processes by the wall clock"
)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use switchyard_proto::address::Address;
use switchyard_proto::hysteria2::Salamander;
use switchyard_testkit::http::{get_bytes, post_sink};
use switchyard_testkit::{HttpTarget, SingBox, TestCert, UdpEcho, free_port, local};
use switchyard_transport::hysteria2::{
    Client, ClientError, ClientSettings, ServerSettings, connect, endpoint, handshake,
};
use tokio::net::TcpStream;

const PASSWORD: &str = "alice-pass";
const OBFS: &str = "cry_me_a_r1ver";

fn settings(cert: &TestCert, password: &str, salamander: bool) -> ClientSettings {
    let tls = cert.client_config().unwrap();
    ClientSettings {
        tls,
        server_name: "node.test".into(),
        password: password.into(),
        salamander: salamander.then(|| Salamander::new(OBFS.as_bytes())),
        rx: 0,
        timeout: Duration::from_secs(5),
        max_udp_sessions: 16,
        hop: None,
    }
}

/// Our server on a free UDP port: TCP requests to 127.0.0.1 are connected (others
/// refused with a message), UDP is echoed back as if from its destination.
fn our_server(cert: &TestCert, salamander: bool) -> SocketAddr {
    let tls = cert.server_config().unwrap();
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = socket.local_addr().unwrap();
    let settings = ServerSettings {
        salamander: salamander.then(|| Salamander::new(OBFS.as_bytes())),
        ..ServerSettings::default()
    };
    let ep = endpoint(socket, tls, &settings).unwrap();
    tokio::spawn(async move {
        while let Some(incoming) = ep.accept().await {
            let settings = settings.clone();
            tokio::spawn(async move {
                let Ok(conn) =
                    handshake(incoming, &settings, |a| (a == PASSWORD).then_some(())).await
                else {
                    return;
                };
                let conn = Arc::new(conn);
                let udp = conn.clone();
                tokio::spawn(async move {
                    while let Ok(p) = udp.recv_udp().await {
                        let _ = udp.send_udp(p.session_id, &p.address, &p.payload);
                    }
                });
                while let Ok(pending) = conn.accept_tcp().await {
                    tokio::spawn(async move {
                        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
                        let Ok(accept) = pending.read(deadline).await else {
                            return;
                        };
                        match accept.request.address.clone() {
                            Address::Ip(to) if to.ip().is_loopback() => {
                                let Ok(mut target) = TcpStream::connect(to).await else {
                                    return accept.refuse("connection refused").await;
                                };
                                if let Ok(mut s) = accept.ok().await {
                                    let _ =
                                        tokio::io::copy_bidirectional(&mut s, &mut target).await;
                                }
                            }
                            _ => accept.refuse("destination not allowed").await,
                        }
                    });
                }
            });
        }
    });
    addr
}

/// A real sing-box Hysteria 2 server on a free UDP port, with `cert`.
async fn sing_box_server(cert: &TestCert, salamander: bool) -> (SingBox, SocketAddr) {
    let port = free_port().unwrap();
    let mut inbound = json!({
        "type": "hysteria2", "tag": "hy", "listen": "127.0.0.1", "listen_port": port,
        "users": [{ "name": "alice", "password": PASSWORD }],
        "tls": {
            "enabled": true,
            "certificate_path": cert.cert_path(),
            "key_path": cert.key_path(),
        },
    });
    if salamander {
        inbound["obfs"] = json!({ "type": "salamander", "password": OBFS });
    }
    let config = json!({
        "log": { "level": "info" },
        "inbounds": [inbound],
        "outbounds": [{ "type": "direct", "tag": "direct" }],
    });
    (SingBox::start(config).await.unwrap(), local(port))
}

/// 4 MiB down, 1 MiB up through `client` to an HTTP target, every byte checked, and
/// UDP echoes of 100, 1200 and 3000 bytes.
async fn carry(client: &Client, what: &str) {
    let http = HttpTarget::start().await.unwrap();
    let to = Address::Ip(http.addr());
    let n: u64 = 4 << 20;
    let got = get_bytes(client.open_tcp(&to).await.unwrap(), n).await;
    assert_eq!(got.ok(), Some(n), "{what}: download");
    let up = post_sink(client.open_tcp(&to).await.unwrap(), 1 << 20).await;
    assert!(up.is_ok(), "{what}: upload: {up:?}");
    assert_eq!(http.bytes_in(), 1 << 20, "{what}: the sink read every byte");
    let echo = UdpEcho::start().await.unwrap();
    for (session, size) in [(1u32, 100usize), (2, 1200), (3, 3000)] {
        let payload: Vec<u8> = (0..size).map(|i| (i * 13) as u8).collect();
        client
            .send_udp(session, &Address::Ip(echo.addr()), &payload)
            .unwrap();
        let back = tokio::time::timeout(Duration::from_secs(5), client.recv_udp())
            .await
            .unwrap_or_else(|_| panic!("{what}: no UDP echo of {size} bytes"))
            .unwrap();
        assert_eq!(
            (back.session_id, back.address, back.payload),
            (session, Address::Ip(echo.addr()), payload),
            "{what}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_carries_tcp_and_udp_through_our_server_and_sing_box() {
    let cert = TestCert::new("node.test").unwrap();
    for salamander in [false, true] {
        let ours = our_server(&cert, salamander);
        let client = connect(ours, &settings(&cert, PASSWORD, salamander))
            .await
            .unwrap();
        assert!(client.udp());
        carry(&client, &format!("our server, salamander={salamander}")).await;
        let (_server, addr) = sing_box_server(&cert, salamander).await;
        let client = connect(addr, &settings(&cert, PASSWORD, salamander))
            .await
            .unwrap();
        carry(&client, &format!("sing-box, salamander={salamander}")).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_carry_the_servers_words() {
    let cert = TestCert::new("node.test").unwrap();
    let ours = our_server(&cert, false);
    let refused = connect(ours, &settings(&cert, "wrong", false)).await;
    assert!(
        matches!(refused, Err(ClientError::Refused(404))),
        "{refused:?}"
    );
    let client = connect(ours, &settings(&cert, PASSWORD, false))
        .await
        .unwrap();
    let to = Address::domain("example.com", 443).unwrap();
    match client.open_tcp(&to).await {
        Err(ClientError::TcpRefused(why)) => assert_eq!(why, "destination not allowed"),
        other => panic!("{other:?}"),
    }
    // A Salamander client of a plain server never gets through the handshake.
    let obfs = connect(ours, &settings(&cert, PASSWORD, true)).await;
    assert!(matches!(obfs, Err(ClientError::Timeout(_))), "{obfs:?}");
}
