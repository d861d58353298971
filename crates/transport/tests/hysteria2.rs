//! The Hysteria 2 serving side against the real clients: sing-box 1.14.4 and mihomo
//! 1.19.2 authenticate, carry TCP (4 MiB down, 1 MiB up, every byte checked) and UDP
//! (echoed datagrams, fragmented ones among them) through a relay built on
//! [`switchyard_transport::hysteria2`], with and without Salamander; a wrong password
//! gets nowhere; an HTTP/3 prober (the `h3` crate's client) gets a web server's
//! `404 page not found`, whatever it asks, `POST /auth` without credentials included,
//! or, with a proxy masquerade, the answer of the site behind it.

#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "tests time real processes by the wall clock"
)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use switchyard_proto::address::Address;
use switchyard_proto::hysteria2::Salamander;
use switchyard_testkit::{HttpTarget, Mihomo, SingBox, TestCert, UdpEcho, free_port, local};
use switchyard_transport::hysteria2::{
    Authenticated, ServerSettings, endpoint, endpoint_on, handshake,
};
use tokio::net::{TcpStream, UdpSocket};

const PASSWORD: &str = "alice-pass";
const OBFS: &str = "cry_me_a_r1ver";

fn tls(cert: &TestCert) -> rustls::ServerConfig {
    cert.server_config().unwrap()
}

/// A Hysteria 2 relay on a free UDP port of 127.0.0.1: its clients' TCP streams and
/// UDP packets go where they ask (the test's targets on 127.0.0.1).
fn relay(cert: &TestCert, salamander: bool) -> u16 {
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = socket.local_addr().unwrap().port();
    relay_on(cert, salamander, vec![socket]);
    port
}

/// [`relay`] on every socket of `sockets` at once (port hopping).
fn relay_on(cert: &TestCert, salamander: bool, sockets: Vec<std::net::UdpSocket>) {
    let settings = ServerSettings {
        salamander: salamander.then(|| Salamander::new(OBFS.as_bytes())),
        ..ServerSettings::default()
    };
    relay_with(cert, settings, sockets);
}

/// [`relay`] with `settings`, on `sockets`.
fn relay_with(cert: &TestCert, settings: ServerSettings, sockets: Vec<std::net::UdpSocket>) {
    let ep = endpoint_on(sockets, tls(cert), &settings).unwrap();
    tokio::spawn(async move {
        while let Some(incoming) = ep.accept().await {
            let settings = settings.clone();
            tokio::spawn(async move {
                let auth = |a: &str| (a == PASSWORD).then_some("alice");
                if let Ok(conn) = handshake(incoming, &settings, auth).await {
                    serve(Arc::new(conn)).await;
                }
            });
        }
    });
}

async fn serve(conn: Arc<Authenticated<&'static str>>) {
    let udp = conn.clone();
    tokio::spawn(async move {
        let mut sessions: HashMap<u32, Arc<UdpSocket>> = HashMap::new();
        while let Ok(packet) = udp.recv_udp().await {
            let Address::Ip(to) = packet.address else {
                continue;
            };
            let socket = match sessions.get(&packet.session_id) {
                Some(s) => s.clone(),
                None => {
                    let s = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
                    let (back, conn, id) = (s.clone(), udp.clone(), packet.session_id);
                    tokio::spawn(async move {
                        let mut buf = vec![0u8; 65_536];
                        while let Ok((n, from)) = back.recv_from(&mut buf).await {
                            let _ = conn.send_udp(id, &Address::Ip(from), &buf[..n]);
                        }
                    });
                    sessions.insert(packet.session_id, s.clone());
                    s
                }
            };
            let _ = socket.send_to(&packet.payload, to).await;
        }
    });
    while let Ok(pending) = conn.accept_tcp().await {
        tokio::spawn(async move {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
            let Ok(accept) = pending.read(deadline).await else {
                return;
            };
            let Address::Ip(to) = accept.request.address.clone() else {
                return accept.refuse("names are not resolved here").await;
            };
            let Ok(mut target) = TcpStream::connect(to).await else {
                return accept.refuse("connection refused").await;
            };
            if let Ok(mut stream) = accept.ok().await {
                let _ = tokio::io::copy_bidirectional(&mut stream, &mut target).await;
            }
        });
    }
}

/// 4 MiB down and 1 MiB up, every byte checked, and 20 datagrams of 1200 bytes and
/// 5 of 3000 (fragmented in QUIC datagrams) echoed, through the SOCKS5 proxy `proxy`.
async fn carry(proxy: SocketAddr, what: &str, log: impl Fn() -> String) {
    let http = HttpTarget::start().await.unwrap();
    let udp = UdpEcho::start().await.unwrap();
    let run = async {
        http.download_via_socks(proxy, 4 << 20).await?;
        http.upload_via_socks(proxy, 1 << 20).await?;
        udp.check_via_socks(proxy, 20, 1200).await?;
        udp.check_via_socks(proxy, 5, 3000).await
    };
    match tokio::time::timeout(Duration::from_secs(30), run).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("{what}: {e:#}\n{}", log()),
        Err(_) => panic!("{what}: stalled\n{}", log()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_download_rate_switches_the_connection_to_brutal() {
    let cert = TestCert::new("node.test").unwrap();
    for (down_mbps, cap, want) in [
        (None, None, 0),
        (Some(100), None, 12_500_000),
        (Some(100), Some(5_000_000), 5_000_000),
    ] {
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = socket.local_addr().unwrap().port();
        let settings = ServerSettings {
            tx: cap,
            ..ServerSettings::default()
        };
        let ep = endpoint(socket, tls(&cert), &settings).unwrap();
        let mut out = sing_box_outbound(port, PASSWORD, false);
        if let Some(down) = down_mbps {
            out["up_mbps"] = json!(10);
            out["down_mbps"] = json!(down);
        }
        let client = SingBox::client(out).await.unwrap();
        let http = HttpTarget::start().await.unwrap();
        let proxy = client.proxy_addr().unwrap();
        // The client connects on its first request.
        let request = tokio::spawn(async move { http.download_via_socks(proxy, 1024).await });
        let incoming = ep.accept().await.unwrap();
        let conn = handshake(incoming, &settings, |a| (a == PASSWORD).then_some(()))
            .await
            .unwrap();
        let declared = down_mbps.map_or(0, |m| m * 125_000);
        assert_eq!(conn.client_rx(), declared, "{down_mbps:?}");
        assert_eq!(
            switchyard_transport::hysteria2::brutal::rate(conn.connection()),
            Some(want),
            "{down_mbps:?} capped at {cap:?}"
        );
        request.abort();
    }
}

fn sing_box_outbound(port: u16, password: &str, salamander: bool) -> serde_json::Value {
    let mut out = json!({
        "type": "hysteria2", "tag": "proxy",
        "server": "127.0.0.1", "server_port": port, "password": password,
        "tls": { "enabled": true, "server_name": "node.test", "insecure": true },
    });
    if salamander {
        out["obfs"] = json!({ "type": "salamander", "password": OBFS });
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sing_box_carries_tcp_and_udp_with_and_without_salamander() {
    let cert = TestCert::new("node.test").unwrap();
    for salamander in [false, true] {
        let port = relay(&cert, salamander);
        let client = SingBox::client(sing_box_outbound(port, PASSWORD, salamander))
            .await
            .unwrap();
        carry(
            client.proxy_addr().unwrap(),
            &format!("sing-box, salamander={salamander}"),
            || client.log_tail(),
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mihomo_carries_tcp_and_udp_with_and_without_salamander() {
    let cert = TestCert::new("node.test").unwrap();
    for salamander in [false, true] {
        let port = relay(&cert, salamander);
        let obfs = if salamander {
            format!("    obfs: salamander\n    obfs-password: {OBFS}\n")
        } else {
            String::new()
        };
        let mixed = free_port().unwrap();
        let config = format!(
            "log-level: info\nmixed-port: {mixed}\nbind-address: 127.0.0.1\nallow-lan: false\nmode: rule\nipv6: false\n\
             proxies:\n  - name: hy\n    type: hysteria2\n    server: 127.0.0.1\n    port: {port}\n    password: {PASSWORD}\n\
             \x20   sni: node.test\n    skip-cert-verify: true\n    udp: true\n{obfs}rules:\n  - MATCH,hy\n"
        );
        let client = Mihomo::start(&config, local(mixed)).await.unwrap();
        carry(
            client.proxy_addr(),
            &format!("mihomo, salamander={salamander}"),
            || client.log_tail(),
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_or_obfs_gets_nowhere() {
    let cert = TestCert::new("node.test").unwrap();
    let http = HttpTarget::start().await.unwrap();
    let tries = [
        ("wrong", false, false),
        (PASSWORD, false, true),
        (PASSWORD, true, false),
    ]
    .map(|(password, client_obfs, server_obfs)| {
        let (cert, http) = (&cert, &http);
        async move {
            let port = relay(cert, server_obfs);
            let client = SingBox::client(sing_box_outbound(port, password, client_obfs))
                .await
                .unwrap();
            let got = tokio::time::timeout(
                Duration::from_secs(10),
                http.download_via_socks(client.proxy_addr().unwrap(), 1024),
            )
            .await;
            assert!(
                !matches!(got, Ok(Ok(()))),
                "password {password}, obfs client={client_obfs} server={server_obfs}: carried"
            );
        }
    });
    futures_util::future::join_all(tries).await;
    assert_eq!(http.requests(), 0, "nothing reached the target");
}

/// An HTTP/3 client of the relay at `port` trusting `cert`; `(status, body)` of a
/// request for `path` by `method`.
async fn http3(port: u16, cert: &TestCert, method: &str, path: &str) -> (u16, String) {
    let mut tls = cert.client_config().unwrap();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
    let mut ep = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    ep.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    let conn = ep.connect(local(port), "node.test").unwrap().await.unwrap();
    let (mut driver, mut send) = h3::client::new(h3_quinn::Connection::new(conn))
        .await
        .unwrap();
    tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
    let request = http::Request::builder()
        .method(method)
        .uri(format!("https://node.test{path}"))
        .body(())
        .unwrap();
    let mut stream = send.send_request(request).await.unwrap();
    stream.finish().await.unwrap();
    let response = stream.recv_response().await.unwrap();
    let mut body = Vec::new();
    while let Some(mut chunk) = stream.recv_data().await.unwrap() {
        use bytes::Buf;
        while chunk.has_remaining() {
            let part = chunk.chunk();
            body.extend_from_slice(part);
            let n = part.len();
            chunk.advance(n);
        }
    }
    (
        response.status().as_u16(),
        String::from_utf8_lossy(&body).into(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http3_prober_gets_a_web_servers_404() {
    let cert = TestCert::new("node.test").unwrap();
    let port = relay(&cert, false);
    for (method, path) in [("GET", "/"), ("GET", "/index.html"), ("POST", "/auth")] {
        assert_eq!(
            http3(port, &cert, method, path).await,
            (404, "404 page not found\n".to_owned()),
            "{method} {path}"
        );
    }
}

/// A web site on 127.0.0.1 answering every request with [`PAGE`]; the `Host` header
/// of each request it got comes out of the receiver.
async fn site() -> (SocketAddr, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&head).to_lowercase();
                let host = text
                    .lines()
                    .find_map(|l| l.strip_prefix("host: "))
                    .unwrap_or("")
                    .trim()
                    .to_owned();
                let _ = tx.send(host);
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nServer: site\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{PAGE}",
                    PAGE.len()
                );
                let _ = s.write_all(answer.as_bytes()).await;
            });
        }
    });
    (addr, rx)
}

/// What the masquerade's site answers.
const PAGE: &str = "<html><body>a real site</body></html>";

/// With a proxy masquerade a prober gets the site's own answer (over `http://` and
/// `https://`, the site seeing its own name as `Host`); a site that is down gives
/// `502 Bad Gateway`, as a reverse proxy answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http3_prober_gets_the_masquerade_sites_answer() {
    use switchyard_transport::hysteria2::{Masquerade, ProxySite};
    let cert = TestCert::new("node.test").unwrap();
    let (plain, mut hosts) = site().await;
    // The same site behind TLS, for the https:// form.
    let site_cert = TestCert::new("localhost").unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(site_cert.server_config().unwrap()));
    let tls_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let tls_port = tls_listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((s, _)) = tls_listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(s).await else {
                    return;
                };
                let Ok(mut up) = TcpStream::connect(plain).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut up).await;
            });
        }
    });
    let roots = Arc::new(site_cert.client_config().unwrap());
    let dead = free_port().unwrap();
    for (url, want_host, want) in [
        (
            format!("http://{plain}"),
            plain.to_string(),
            (200, PAGE.to_owned()),
        ),
        (
            format!("https://localhost:{tls_port}"),
            format!("localhost:{tls_port}"),
            (200, PAGE.to_owned()),
        ),
        (
            format!("http://127.0.0.1:{dead}"),
            String::new(),
            (502, String::new()),
        ),
    ] {
        let site = ProxySite::new(&url, roots.clone()).unwrap();
        let settings = ServerSettings {
            masquerade: Masquerade::Proxy(site),
            ..ServerSettings::default()
        };
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = socket.local_addr().unwrap().port();
        relay_with(&cert, settings, vec![socket]);
        for (method, path) in [("GET", "/"), ("POST", "/auth")] {
            assert_eq!(
                http3(port, &cert, method, path).await,
                want,
                "{url}: {method} {path}"
            );
            if want.0 == 200 {
                assert_eq!(hosts.recv().await.unwrap(), want_host, "{url}");
            }
        }
    }
}

/// `n` UDP sockets on consecutive ports of 127.0.0.1, and the first port.
fn consecutive(n: u16) -> (Vec<std::net::UdpSocket>, u16) {
    for _ in 0..200 {
        let first = free_port().unwrap();
        if first > u16::MAX - n {
            continue;
        }
        let sockets: Vec<_> = (first..first + n)
            .map_while(|p| std::net::UdpSocket::bind(("127.0.0.1", p)).ok())
            .collect();
        if sockets.len() == usize::from(n) {
            return (sockets, first);
        }
    }
    panic!("no {n} consecutive free UDP ports");
}

/// Transfers spread over about `seconds`, through `proxy`: every half second a
/// 256 KiB download and echoed datagrams.
async fn keep_carrying(proxy: SocketAddr, seconds: u64, what: &str, log: impl Fn() -> String) {
    let http = HttpTarget::start().await.unwrap();
    let udp = UdpEcho::start().await.unwrap();
    for round in 0..seconds * 2 {
        let run = async {
            http.download_via_socks(proxy, 256 << 10).await?;
            udp.check_via_socks(proxy, 3, 1000).await
        };
        match tokio::time::timeout(Duration::from_secs(10), run).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => panic!("{what}, round {round}: {e:#}\n{}", log()),
            Err(_) => panic!("{what}, round {round}: stalled\n{}", log()),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_hopping_across_a_port_range_keep_their_connection() {
    let cert = TestCert::new("node.test").unwrap();
    // sing-box: server_ports and a hop every 5 s (its shortest), with Salamander.
    let (sockets, first) = consecutive(4);
    relay_on(&cert, true, sockets);
    let mut out = sing_box_outbound(first, PASSWORD, true);
    out.as_object_mut().unwrap().remove("server_port");
    out["server_ports"] = json!([format!("{first}:{}", first + 3)]);
    out["hop_interval"] = json!("5s");
    let sing_box = SingBox::client(out).await.unwrap();
    // mihomo: ports and hop-interval.
    let (sockets, first) = consecutive(4);
    relay_on(&cert, false, sockets);
    let mixed = free_port().unwrap();
    let config = format!(
        "log-level: info\nmixed-port: {mixed}\nbind-address: 127.0.0.1\nallow-lan: false\nmode: rule\nipv6: false\n\
         proxies:\n  - name: hy\n    type: hysteria2\n    server: 127.0.0.1\n    port: {first}\n    ports: {first}-{}\n\
         \x20   hop-interval: 5\n    password: {PASSWORD}\n    sni: node.test\n    skip-cert-verify: true\n    udp: true\n\
         rules:\n  - MATCH,hy\n",
        first + 3
    );
    let mihomo = Mihomo::start(&config, local(mixed)).await.unwrap();
    // 13 s each, side by side: at least two hops of each client.
    tokio::join!(
        keep_carrying(
            sing_box.proxy_addr().unwrap(),
            13,
            "sing-box hopping",
            || { sing_box.log_tail() }
        ),
        keep_carrying(mihomo.proxy_addr(), 13, "mihomo hopping", || mihomo
            .log_tail()),
    );
}

/// The masquerade streams the site's answer: a prober gets the first part of a page
/// while the site still holds the rest (the site sends the rest only once the
/// prober has the first part, so an answer held whole would never arrive), and an
/// answer of 20 MiB arrives whole, byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_masquerade_streams_the_sites_answer() {
    use bytes::Buf;
    use switchyard_transport::hysteria2::{Masquerade, ProxySite};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const FIRST: usize = 100_000;
    const WHOLE: usize = 20 << 20;
    let byte = |i: usize| (i % 251) as u8;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let site_addr = listener.local_addr().unwrap();
    let (got_first, mut first_arrived) = tokio::sync::mpsc::unbounded_channel::<()>();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let mut head = vec![0u8; 4096];
            let n = s.read(&mut head).await.unwrap_or(0);
            let request = String::from_utf8_lossy(&head[..n]).to_string();
            let big = request.starts_with("GET /big ");
            let len = if big { WHOLE } else { 2 * FIRST };
            let answer = format!("HTTP/1.1 200 OK\r\ncontent-length: {len}\r\n\r\n");
            s.write_all(answer.as_bytes()).await.unwrap();
            let body: Vec<u8> = (0..len).map(byte).collect();
            if big {
                s.write_all(&body).await.unwrap();
            } else {
                s.write_all(&body[..FIRST]).await.unwrap();
                // The rest only once the prober has the first part.
                first_arrived.recv().await;
                s.write_all(&body[FIRST..]).await.unwrap();
            }
        }
    });
    let cert = TestCert::new("node.test").unwrap();
    let roots = Arc::new(cert.client_config().unwrap());
    let settings = ServerSettings {
        masquerade: Masquerade::Proxy(
            ProxySite::new(&format!("http://{site_addr}"), roots).unwrap(),
        ),
        ..ServerSettings::default()
    };
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = socket.local_addr().unwrap().port();
    relay_with(&cert, settings, vec![socket]);

    let mut tls = cert.client_config().unwrap();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
    let mut ep = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    ep.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    let conn = ep.connect(local(port), "node.test").unwrap().await.unwrap();
    let (mut driver, mut send) = h3::client::new(h3_quinn::Connection::new(conn))
        .await
        .unwrap();
    tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
    for (path, len) in [("/page", 2 * FIRST), ("/big", WHOLE)] {
        let request = http::Request::builder()
            .uri(format!("https://node.test{path}"))
            .body(())
            .unwrap();
        let mut stream = send.send_request(request).await.unwrap();
        stream.finish().await.unwrap();
        let response = tokio::time::timeout(Duration::from_secs(10), stream.recv_response())
            .await
            .expect("the answer's head while the site holds the rest")
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let mut body = Vec::with_capacity(len);
        let mut told = false;
        loop {
            let chunk = tokio::time::timeout(Duration::from_secs(20), stream.recv_data())
                .await
                .unwrap_or_else(|_| panic!("{path}: stalled at {} bytes", body.len()))
                .unwrap();
            let Some(mut chunk) = chunk else { break };
            while chunk.has_remaining() {
                let part = chunk.chunk();
                body.extend_from_slice(part);
                let n = part.len();
                chunk.advance(n);
            }
            if !told && body.len() >= FIRST {
                told = true;
                let _ = got_first.send(());
            }
        }
        assert_eq!(body.len(), len, "{path}");
        assert!(
            body.iter().enumerate().all(|(i, b)| *b == byte(i)),
            "{path}"
        );
    }
}
