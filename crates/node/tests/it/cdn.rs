//! A node behind a CDN: Debian's nginx stands in for it on 127.0.0.1, ending the
//! user's TLS with its own certificate and passing requests on to the node's plain
//! inbound as a CDN does (the upgrade headers passed on, buffering off). The real
//! Xray 24.11.21 client carries 4 MiB down and 1 MiB up, every byte checked, through
//! nginx and the node, over HTTPUpgrade, WebSocket and gRPC (nginx's `grpc_pass`
//! to the node's cleartext HTTP/2; Xray's gun and multi mode).

use crate::common;
use crate::httpupgrade::{carry, xray};

use std::sync::Arc;

use common::*;
use serde_json::{Value, json};
use switchyard_testkit::nginx::{Nginx, Pass};
use switchyard_testkit::{TestCert, free_port, local};

/// nginx on a free port of 127.0.0.1 with TLS for `cdn.test`, passing `prefix` on to
/// the node's `port` with the upgrade headers.
async fn cdn(prefix: &str, port: u16) -> Nginx {
    let cert = Arc::new(TestCert::new("cdn.test").unwrap());
    let pass = Pass::Upgrade {
        prefix: prefix.into(),
        upstream: local(port),
    };
    Nginx::start(local(free_port().unwrap()), Some(cert), &[pass])
        .await
        .unwrap()
}

/// Xray's VLESS outbound to the CDN at `nginx`, with `network` settings, over TLS
/// with the CDN's name.
fn vless_via(nginx: &Nginx, stream: Value) -> Value {
    let mut stream = stream;
    stream["security"] = json!("tls");
    stream["tlsSettings"] = json!({ "serverName": "cdn.test", "allowInsecure": true });
    json!({
        "tag": "proxy", "protocol": "vless",
        "settings": { "vnext": [{
            "address": "127.0.0.1", "port": nginx.addr().port(),
            "users": [{ "id": ALICE_UUID, "encryption": "none" }]
        }]},
        "streamSettings": stream
    })
}

#[tokio::test]
async fn xray_reaches_a_node_behind_nginx_over_httpupgrade() {
    let f =
        start("protocol = \"vless\"\ntransport = { type = \"httpupgrade\", path = \"/up\" }").await;
    let nginx = cdn("/up", f.port).await;
    let (client, socks) = xray(vless_via(
        &nginx,
        json!({
            "network": "httpupgrade",
            "httpupgradeSettings": { "path": "/up", "host": "cdn.test" },
        }),
    ))
    .await;
    carry(&f, socks, "Xray HTTPUpgrade via nginx", || {
        format!("{}\n--- nginx ---\n{}", client.log_tail(), nginx.log_tail())
    })
    .await;
}

#[tokio::test]
async fn xray_reaches_a_node_behind_nginx_over_websocket() {
    let f = start("protocol = \"vless\"\ntransport = { type = \"ws\", path = \"/ws\" }").await;
    let nginx = cdn("/ws", f.port).await;
    let (client, socks) = xray(vless_via(
        &nginx,
        json!({
            "network": "ws",
            "wsSettings": { "path": "/ws", "host": "cdn.test" },
        }),
    ))
    .await;
    carry(&f, socks, "Xray WebSocket via nginx", || {
        format!("{}\n--- nginx ---\n{}", client.log_tail(), nginx.log_tail())
    })
    .await;
}

/// nginx on a free port of 127.0.0.1 with TLS for `cdn.test` (HTTP/2 offered),
/// passing gRPC service `service` on to the node's `port` over cleartext HTTP/2.
async fn grpc_cdn(service: &str, port: u16) -> Nginx {
    let cert = Arc::new(TestCert::new("cdn.test").unwrap());
    let pass = Pass::Grpc {
        service: service.into(),
        upstream: local(port),
    };
    Nginx::start(local(free_port().unwrap()), Some(cert), &[pass])
        .await
        .unwrap()
}

#[tokio::test]
async fn xray_reaches_a_node_behind_nginx_over_grpc() {
    let f =
        start("protocol = \"vless\"\ntransport = { type = \"grpc\", service_name = \"tun.v1\" }")
            .await;
    let nginx = grpc_cdn("tun.v1", f.port).await;
    for multi in [false, true] {
        let mut outbound = vless_via(
            &nginx,
            json!({
                "network": "grpc",
                "grpcSettings": { "serviceName": "tun.v1", "multiMode": multi },
            }),
        );
        outbound["streamSettings"]["tlsSettings"]["alpn"] = json!(["h2"]);
        let (client, socks) = xray(outbound).await;
        carry(
            &f,
            socks,
            &format!("Xray gRPC via nginx, multi={multi}"),
            || format!("{}\n--- nginx ---\n{}", client.log_tail(), nginx.log_tail()),
        )
        .await;
    }
}

/// Our node closes first when the target does; WebSocket has no half-close, and Xray
/// drops what it holds when a Close frame comes: the node's Close waits (the
/// transport's `ws::LINGER`), so every byte of every download arrives.
#[tokio::test]
async fn xray_gets_every_byte_over_websocket_when_the_node_closes_first() {
    let f = start("protocol = \"vless\"\ntransport = { type = \"ws\", path = \"/ws\" }").await;
    for _ in 0..3 {
        let (client, socks) = xray(json!({
            "tag": "proxy", "protocol": "vless",
            "settings": { "vnext": [{
                "address": "127.0.0.1", "port": f.port,
                "users": [{ "id": ALICE_UUID, "encryption": "none" }]
            }]},
            "streamSettings": { "network": "ws", "wsSettings": { "path": "/ws", "host": "cdn.test" } }
        }))
        .await;
        carry(&f, socks, "Xray WebSocket, no CDN", || client.log_tail()).await;
    }
}
