//! Trojan over XHTTP over REALITY against the real Xray 24.11.21 client: in
//! packet-up and in stream-up (HTTP/2, REALITY's ALPN), Xray carries 4 MiB down and
//! 1 MiB up (every byte checked) and UDP (20 datagrams echoed, every byte checked)
//! through the node's Trojan user, and the REALITY target sees none of it.

use crate::common;
use crate::httpupgrade::carry;
use crate::reality_support::{SHORT_ID, TargetSite};
use crate::xhttp::{udp, xray, xray_stream};

use common::*;
use serde_json::json;

/// Xray's Trojan outbound as Alice to the node at `f`, over XHTTP in `mode` under
/// `/xh`, over REALITY with `public_key`.
fn xray_trojan_reality(f: &Fixture, mode: &str, public_key: &str) -> serde_json::Value {
    let mut stream = xray_stream("/xh", mode, None);
    stream["security"] = json!("reality");
    stream["realitySettings"] = json!({
        "serverName": "target.test", "fingerprint": "chrome",
        "publicKey": public_key, "shortId": SHORT_ID, "spiderX": "/"
    });
    json!({
        "tag": "proxy", "protocol": "trojan",
        "settings": { "servers": [{
            "address": "127.0.0.1", "port": f.port, "password": "alice-password"
        }]},
        "streamSettings": stream
    })
}

/// A node with one Trojan inbound over XHTTP (`/xh`, every mode) over REALITY in
/// front of `target`; Xray in `mode` carries TCP both ways and UDP through it.
async fn trojan_over_xhttp_in_reality(mode: &str) {
    let target = TargetSite::start().await;
    let keys = switchyard_node::reality::generate().unwrap();
    let f = start(&format!(
        r#"protocol = "trojan"
transport = {{ type = "xhttp", path = "/xh" }}
security = {{ type = "reality", dest = "{}", server_names = ["target.test"], private_key = "{}", short_ids = ["{SHORT_ID}"] }}"#,
        target.addr, keys.private_key
    ))
    .await;
    let (client, socks) = xray(xray_trojan_reality(&f, mode, &keys.public_key)).await;
    let what = format!("Xray Trojan XHTTP {mode} over REALITY");
    carry(&f, socks, &what, || client.log_tail()).await;
    udp(&f, socks, &what, || client.log_tail()).await;
    let used = format!("XHTTP is using mode: {mode}");
    assert!(
        client.log_tail().contains(&used),
        "{what}: {}",
        client.log_tail()
    );
    assert_eq!(
        target.hellos(),
        0,
        "the target saw none of Xray's connections"
    );
}

#[tokio::test]
async fn xray_carries_trojan_over_xhttp_packet_up_in_reality() {
    trojan_over_xhttp_in_reality("packet-up").await;
}

#[tokio::test]
async fn xray_carries_trojan_over_xhttp_stream_up_in_reality() {
    trojan_over_xhttp_in_reality("stream-up").await;
}
