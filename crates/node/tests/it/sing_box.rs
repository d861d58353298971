//! The real sing-box client (1.14) through our node to local targets: bytes arrive
//! intact and the node counts them on the right user.

use crate::common;

use common::*;
use serde_json::{Value, json};
use switchyard_testkit::SingBox;
use switchyard_testkit::config::{tls_client, trojan_outbound, vless_outbound, ws_transport};

const DOWN: u64 = 4 << 20;
const UP: u64 = 1 << 20;

/// Downloads, uploads and echoes UDP through sing-box with `outbound`, then checks
/// Alice's counters against what was carried.
async fn carry(f: &Fixture, outbound: Value, udp: bool) {
    let client = SingBox::client(outbound).await.unwrap();
    let proxy = client.proxy_addr().unwrap();
    f.http.download_via_socks(proxy, DOWN).await.unwrap();
    f.http.upload_via_socks(proxy, UP).await.unwrap();
    if udp {
        f.udp.check_via_socks(proxy, 20, 1200).await.unwrap();
    }
    drop(client);
    // The node counts each chunk as it carries it; let the last ones land.
    let (mut up, mut down) = f.alice();
    for _ in 0..50 {
        if down >= DOWN && up >= UP {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        (up, down) = f.alice();
    }
    let udp_bytes = if udp { 20 * 1200 } else { 0 };
    // Payload plus the HTTP heads (a few hundred bytes per request).
    assert!(
        (DOWN + udp_bytes..DOWN + udp_bytes + 4096).contains(&down),
        "down {down}"
    );
    assert!(
        (UP + udp_bytes..UP + udp_bytes + 4096).contains(&up),
        "up {up}"
    );
}

#[tokio::test]
async fn vless_over_tcp_with_xudp() {
    let f = start("protocol = \"vless\"").await;
    carry(&f, vless_outbound(f.addr(), ALICE_UUID), true).await;
}

#[tokio::test]
async fn vless_over_tls_with_plain_udp() {
    let f = start(
        "protocol = \"vless\"\nsecurity = { type = \"tls\", cert = \"@CERT@\", key = \"@KEY@\" }",
    )
    .await;
    let mut out = vless_outbound(f.addr(), ALICE_UUID);
    out["tls"] = tls_client(&f.cert);
    out["packet_encoding"] = json!("");
    carry(&f, out, true).await;
}

#[tokio::test]
async fn vless_over_websocket_and_tls() {
    let f = start(
        "protocol = \"vless\"\ntransport = { type = \"ws\", path = \"/v\" }\nsecurity = { type = \"tls\", cert = \"@CERT@\", key = \"@KEY@\" }",
    )
    .await;
    let mut out = vless_outbound(f.addr(), ALICE_UUID);
    out["tls"] = tls_client(&f.cert);
    out["transport"] = ws_transport("/v");
    carry(&f, out, true).await;
}

#[tokio::test]
async fn vless_over_plain_websocket() {
    let f = start("protocol = \"vless\"\ntransport = { type = \"ws\", path = \"/v\" }").await;
    let mut out = vless_outbound(f.addr(), ALICE_UUID);
    out["transport"] = ws_transport("/v");
    carry(&f, out, false).await;
}

#[tokio::test]
async fn trojan_over_tls() {
    let f = start(
        "protocol = \"trojan\"\nsecurity = { type = \"tls\", cert = \"@CERT@\", key = \"@KEY@\" }",
    )
    .await;
    carry(
        &f,
        trojan_outbound(f.addr(), "alice-password", tls_client(&f.cert)),
        true,
    )
    .await;
}

#[tokio::test]
async fn trojan_over_websocket_and_tls() {
    let f = start(
        "protocol = \"trojan\"\ntransport = { type = \"ws\", path = \"/t\", host = \"node.test\" }\nsecurity = { type = \"tls\", cert = \"@CERT@\", key = \"@KEY@\" }",
    )
    .await;
    let mut out = trojan_outbound(f.addr(), "alice-password", tls_client(&f.cert));
    out["transport"] = json!({"type": "ws", "path": "/t", "headers": {"Host": "node.test"}});
    carry(&f, out, true).await;
}

#[tokio::test]
async fn socks5_with_password() {
    let f = start("protocol = \"socks\"").await;
    let out = json!({
        "type": "socks", "server": "127.0.0.1", "server_port": f.port,
        "username": "alice", "password": "alice-socks",
    });
    carry(&f, out, true).await;
}

#[tokio::test]
async fn a_wrong_uuid_carries_nothing() {
    let f = start("protocol = \"vless\"").await;
    let client = SingBox::client(vless_outbound(
        f.addr(),
        "11111111-2222-3333-4444-555555555555",
    ))
    .await
    .unwrap();
    let proxy = client.proxy_addr().unwrap();
    assert!(f.http.download_via_socks(proxy, 1024).await.is_err());
    assert_eq!(f.http.requests(), 0);
    assert_eq!(f.alice(), (0, 0));
}

/// sing-box's early data, both forms: in the path (no `early_data_header_name`) and in
/// `Sec-WebSocket-Protocol`; the inbound's path carries a share link's `?ed=2048`.
#[tokio::test]
async fn vless_over_websocket_with_early_data_in_the_path_or_the_header() {
    for header in [None, Some("Sec-WebSocket-Protocol")] {
        let f = start("protocol = \"vless\"\ntransport = { type = \"ws\", path = \"/v?ed=2048\" }")
            .await;
        let mut out = vless_outbound(f.addr(), ALICE_UUID);
        out["transport"] = json!({ "type": "ws", "path": "/v", "max_early_data": 2048 });
        if let Some(name) = header {
            out["transport"]["early_data_header_name"] = json!(name);
        }
        carry(&f, out, false).await;
    }
}
