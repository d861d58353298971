//! An XHTTP node behind a CDN: Debian's nginx on 127.0.0.1 ends the user's TLS (ALPN
//! `h2` or `http/1.1`) and passes XHTTP's requests on to the node's plain inbound over
//! HTTP/1.1, buffering off both ways (`Pass::Http`). The real Xray 24.11.21 client
//! carries 4 MiB down and 1 MiB up, every byte checked: packet-up with HTTP/1.1 and
//! with HTTP/2 to nginx, and stream-up (Xray's `auto` over TLS with HTTP/2, and
//! HTTP/1.1 with a chunked POST), whose streaming POST nginx passes on chunked as it
//! comes (`proxy_request_buffering off`).

use crate::common;
use crate::httpupgrade::carry;
use crate::xhttp::{xray, xray_stream, xray_vless};

use std::sync::Arc;

use common::*;
use serde_json::json;
use switchyard_testkit::nginx::{Nginx, Pass};
use switchyard_testkit::{TestCert, free_port, local};

/// A node with an XHTTP inbound under `/xh` (mode `auto`: it takes every mode),
/// and nginx with TLS for `cdn.test` passing `/xh/` on to it.
async fn node_behind_nginx() -> (Fixture, Nginx) {
    let f = start(
        "protocol = \"vless\"\ntransport = { type = \"xhttp\", path = \"/xh\", host = \"cdn.test\" }",
    )
    .await;
    let cert = Arc::new(TestCert::new("cdn.test").unwrap());
    let pass = Pass::Http {
        prefix: "/xh/".into(),
        upstream: local(f.port),
    };
    let nginx = Nginx::start(local(free_port().unwrap()), Some(cert), &[pass])
        .await
        .unwrap();
    (f, nginx)
}

/// Xray through nginx in `mode` with ALPN `alpn`; `picked`: the mode Xray must say
/// it used.
async fn through_nginx(mode: &str, alpn: &[&str], picked: &str) {
    let (f, nginx) = node_behind_nginx().await;
    let mut stream = xray_stream("/xh", mode, Some(alpn));
    stream["xhttpSettings"]["host"] = json!("cdn.test");
    stream["tlsSettings"]["serverName"] = json!("cdn.test");
    let (client, socks) = xray(xray_vless(nginx.addr(), stream)).await;
    let what = format!("Xray XHTTP {mode} via nginx, ALPN {alpn:?}");
    carry(&f, socks, &what, || {
        format!("{}\n--- nginx ---\n{}", client.log_tail(), nginx.log_tail())
    })
    .await;
    let used = format!("XHTTP is using mode: {picked}");
    assert!(
        client.log_tail().contains(&used),
        "{what}: {}",
        client.log_tail()
    );
}

#[tokio::test]
async fn xray_packet_up_over_http1_reaches_the_node_through_nginx() {
    through_nginx("packet-up", &["http/1.1"], "packet-up").await;
}

#[tokio::test]
async fn xray_packet_up_over_h2_reaches_the_node_through_nginx() {
    through_nginx("packet-up", &["h2"], "packet-up").await;
}

#[tokio::test]
async fn xray_stream_up_over_h2_reaches_the_node_through_nginx() {
    through_nginx("auto", &["h2", "http/1.1"], "stream-up").await;
}

/// Xray's HTTP/1.1 client streams its POST chunked; nginx passes it on as it comes.
#[tokio::test]
async fn xray_stream_up_over_http1_reaches_the_node_through_nginx() {
    through_nginx("stream-up", &["http/1.1"], "stream-up").await;
}
