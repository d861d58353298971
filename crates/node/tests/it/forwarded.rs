//! A node behind a CDN it trusts (`trusted_proxies`): the user's own address is the
//! one the CDN puts in `X-Forwarded-For`, for the address limit and what the node
//! counts online. Debian's nginx stands in for the CDN on 127.0.0.1 (TLS for
//! `cdn.test`, appending the client's address to `X-Forwarded-For`); the clients dial
//! it from distinct 127.0.0.x source addresses, so the node's TCP peer (nginx,
//! 127.0.0.1) and the user's address differ. A raw HTTPUpgrade client also sends a
//! header of its own (`198.51.100.7`, only a header value: nothing is sent there).
//! Without `trusted_proxies` the header is ignored and every user is nginx.

use crate::common;
use crate::httpupgrade::xray;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use switchyard_proto::vless;
use switchyard_testkit::nginx::{Nginx, Pass};
use switchyard_testkit::{TestCert, free_port, local};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::pki_types::ServerName;

const TRUSTED: &str = "trusted_proxies = [\"127.0.0.1/32\"]\n";

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// nginx with TLS for `cdn.test` on a free port of 127.0.0.1, passing `pass` on.
async fn cdn(pass: Pass) -> (Nginx, Arc<TestCert>) {
    let cert = Arc::new(TestCert::new("cdn.test").unwrap());
    let nginx = Nginx::start(local(free_port().unwrap()), Some(cert.clone()), &[pass])
        .await
        .unwrap();
    (nginx, cert)
}

/// A node with a VLESS HTTPUpgrade inbound on `/up` (trusting 127.0.0.1 when
/// `trusted`; bob's address limit 1) and nginx passing `/up` on to it.
async fn httpupgrade_behind_nginx(trusted: bool) -> (Fixture, Nginx, Arc<TestCert>) {
    let inbound = format!(
        "protocol = \"vless\"\ntransport = {{ type = \"httpupgrade\", path = \"/up\" }}\n{}",
        if trusted { TRUSTED } else { "" }
    );
    let f = start_with(&inbound, "address_limit = 1").await;
    let (nginx, cert) = cdn(Pass::Upgrade {
        prefix: "/up".into(),
        upstream: local(f.port),
    })
    .await;
    (f, nginx, cert)
}

/// A destination that says `hi\n` to each connection and holds it open (a user's
/// connection stays online while the test looks).
async fn holder() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut s, _)) = listener.accept().await {
            let _ = s.write_all(b"hi\n").await;
            held.push(s);
        }
    });
    addr
}

/// Reads from `s` until `want` has come (true), or the end or 10 s (false).
async fn read_until<S: AsyncRead + Unpin>(s: &mut S, got: &mut Vec<u8>, want: &[u8]) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        if got.windows(want.len()).any(|w| w == want) {
            return true;
        }
        match tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
            _ => return false,
        }
    }
}

/// A raw HTTPUpgrade client of `uuid` from `source` through nginx, sending
/// `X-Forwarded-For: forwarded` when given, to `to` ([`holder`]): the stream, and
/// whether the destination's `hi` came (the node admitted it).
async fn upgrade_via(
    to: SocketAddr,
    nginx: &Nginx,
    cert: &TestCert,
    source: &str,
    forwarded: Option<&str>,
    uuid: &str,
) -> (TlsStream<TcpStream>, bool) {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
    let tcp = socket.connect(nginx.addr()).await.unwrap();
    let tls = TlsConnector::from(Arc::new(cert.client_config().unwrap()));
    let name = ServerName::try_from("cdn.test").unwrap();
    let mut s = tls.connect(name, tcp).await.unwrap();
    let header = forwarded.map_or(String::new(), |v| format!("X-Forwarded-For: {v}\r\n"));
    let request = format!(
        "GET /up HTTP/1.1\r\nHost: cdn.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n{header}\r\n"
    );
    s.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    assert!(
        read_until(&mut s, &mut head, b"\r\n\r\n").await,
        "{}",
        nginx.log_tail()
    );
    assert!(
        head.starts_with(b"HTTP/1.1 101"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    let mut request = Vec::new();
    vless::Request {
        uuid: vless::parse_uuid(uuid).unwrap(),
        flow: vless::Flow::None,
        command: vless::Command::Tcp(switchyard_proto::Address::Ip(to)),
    }
    .encode(&mut request);
    s.write_all(&request).await.unwrap();
    let mut answer = Vec::new();
    let served = read_until(&mut s, &mut answer, b"hi\n").await;
    (s, served)
}

/// `user`'s source addresses online and connections refused by the address limit.
fn counted(f: &Fixture, user: &str) -> (Vec<IpAddr>, u64) {
    f.node
        .shared()
        .accounting
        .users()
        .get(user)
        .map(|c| (c.sources.clone(), c.refused_by_address_limit))
        .unwrap_or_default()
}

#[tokio::test]
async fn a_trusted_cdn_names_the_address_the_client_sent_and_an_untrusted_one_does_not() {
    let to = holder().await;
    for (trusted, want) in [(true, "198.51.100.7"), (false, "127.0.0.1")] {
        let (f, nginx, cert) = httpupgrade_behind_nginx(trusted).await;
        // nginx appends 127.0.0.1 (the client's address, trusted: skipped).
        let (_s, served) = upgrade_via(
            to,
            &nginx,
            &cert,
            "127.0.0.1",
            Some("198.51.100.7"),
            ALICE_UUID,
        )
        .await;
        assert!(served, "trusted={trusted}: {}", nginx.log_tail());
        assert_eq!(
            counted(&f, "alice"),
            (vec![ip(want)], 0),
            "trusted={trusted}"
        );
    }
}

#[tokio::test]
async fn the_address_limit_counts_users_behind_a_trusted_cdn_not_the_cdn() {
    let to = holder().await;
    // Trusted: nginx's header names 127.0.0.2, then 127.0.0.3: one more than bob's 1.
    let (f, nginx, cert) = httpupgrade_behind_nginx(true).await;
    let (_first, served) = upgrade_via(to, &nginx, &cert, "127.0.0.2", None, BOB_UUID).await;
    assert!(served, "{}", nginx.log_tail());
    let (_again, served) = upgrade_via(to, &nginx, &cert, "127.0.0.2", None, BOB_UUID).await;
    assert!(served, "the same address again: admitted");
    let (_other, served) = upgrade_via(to, &nginx, &cert, "127.0.0.3", None, BOB_UUID).await;
    assert!(!served, "a second address: refused");
    assert_eq!(counted(&f, "bob"), (vec![ip("127.0.0.2")], 1));
    // Not trusted: every user is nginx, one address.
    let (f, nginx, cert) = httpupgrade_behind_nginx(false).await;
    let (_first, served) = upgrade_via(to, &nginx, &cert, "127.0.0.2", None, BOB_UUID).await;
    assert!(served, "{}", nginx.log_tail());
    let (_other, served) = upgrade_via(to, &nginx, &cert, "127.0.0.3", None, BOB_UUID).await;
    assert!(served, "both are 127.0.0.1 to the node");
    assert_eq!(counted(&f, "bob"), (vec![ip("127.0.0.1")], 0));
}

/// A connection through the SOCKS proxy `socks` to a [`holder`], held open once its
/// `hi` came (the node admitted it).
async fn hold(socks: SocketAddr, log: impl Fn() -> String) -> TcpStream {
    let mut s = switchyard_testkit::socks5::connect(socks, holder().await)
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", log()));
    let mut got = Vec::new();
    assert!(read_until(&mut s, &mut got, b"hi\n").await, "{}", log());
    s
}

/// Xray's VLESS outbound to nginx from 127.0.0.2 (`sendThrough`), TLS for
/// `cdn.test` with `alpn`, `stream`'s transport.
fn xray_via(nginx: &Nginx, mut stream: Value, alpn: &[&str]) -> Value {
    stream["security"] = json!("tls");
    stream["tlsSettings"] =
        json!({ "serverName": "cdn.test", "allowInsecure": true, "alpn": alpn });
    json!({
        "tag": "proxy", "protocol": "vless", "sendThrough": "127.0.0.2",
        "settings": { "vnext": [{
            "address": "127.0.0.1", "port": nginx.addr().port(),
            "users": [{ "id": ALICE_UUID, "encryption": "none" }]
        }]},
        "streamSettings": stream
    })
}

/// The real Xray client from 127.0.0.2 through nginx to a node trusting 127.0.0.1
/// over `transport` (nginx's `pass` to the node's port): the node counts alice at
/// 127.0.0.2.
async fn xray_through_nginx(
    transport: &str,
    pass: impl Fn(u16) -> Pass,
    stream: Value,
    alpn: &[&str],
) {
    let f = start(&format!(
        "protocol = \"vless\"\ntransport = {transport}\n{TRUSTED}"
    ))
    .await;
    let (nginx, _cert) = cdn(pass(f.port)).await;
    let (client, socks) = xray(xray_via(&nginx, stream, alpn)).await;
    let log = || format!("{}\n--- nginx ---\n{}", client.log_tail(), nginx.log_tail());
    let _held = hold(socks, log).await;
    assert_eq!(
        counted(&f, "alice"),
        (vec![ip("127.0.0.2")], 0),
        "{transport}"
    );
}

#[tokio::test]
async fn xray_behind_a_trusted_nginx_is_counted_at_its_own_address_over_websocket() {
    xray_through_nginx(
        "{ type = \"ws\", path = \"/ws\" }",
        |port| Pass::Upgrade {
            prefix: "/ws".into(),
            upstream: local(port),
        },
        json!({ "network": "ws", "wsSettings": { "path": "/ws", "host": "cdn.test" } }),
        &["http/1.1"],
    )
    .await;
}

#[tokio::test]
async fn xray_behind_a_trusted_nginx_is_counted_at_its_own_address_over_httpupgrade() {
    xray_through_nginx(
        "{ type = \"httpupgrade\", path = \"/up\" }",
        |port| Pass::Upgrade {
            prefix: "/up".into(),
            upstream: local(port),
        },
        json!({ "network": "httpupgrade", "httpupgradeSettings": { "path": "/up", "host": "cdn.test" } }),
        &["http/1.1"],
    )
    .await;
}

#[tokio::test]
async fn xray_behind_a_trusted_nginx_is_counted_at_its_own_address_over_grpc() {
    xray_through_nginx(
        "{ type = \"grpc\", service_name = \"tun.v1\" }",
        |port| Pass::Grpc {
            service: "tun.v1".into(),
            upstream: local(port),
        },
        json!({ "network": "grpc", "grpcSettings": { "serviceName": "tun.v1" } }),
        &["h2"],
    )
    .await;
}

#[tokio::test]
async fn xray_behind_a_trusted_nginx_is_counted_at_its_own_address_over_xhttp() {
    xray_through_nginx(
        "{ type = \"xhttp\", path = \"/xh\", host = \"cdn.test\" }",
        |port| Pass::Http {
            prefix: "/xh/".into(),
            upstream: local(port),
        },
        json!({ "network": "xhttp", "xhttpSettings": { "path": "/xh", "mode": "auto", "host": "cdn.test" } }),
        &["h2"],
    )
    .await;
}
