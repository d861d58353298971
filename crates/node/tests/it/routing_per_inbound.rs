//! Routing rules for some inbounds' users: a rule that names the inbound `free`
//! blocks the target for the users who come in by it, while the same user through
//! the inbound `paid` reaches it; the blocked connection is counted on `free` in the
//! metrics; a rule naming an inbound the config lacks is refused, naming the field.

use crate::common;

use std::time::Duration;

use common::control::call;
use common::*;
use switchyard_testkit::free_port;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// `GET /bytes/{n}` through plain VLESS on `port`: the bytes that came back.
async fn through(port: u16, target: std::net::SocketAddr, n: u64) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    s.write_all(&vless_get(ALICE_UUID, target, n))
        .await
        .unwrap();
    let mut got = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut got)).await;
    got
}

#[tokio::test]
async fn a_rule_naming_an_inbound_blocks_its_users_alone_and_is_counted() {
    let paid = free_port().unwrap();
    let extra = format!(
        "[[inbounds]]\ntag = \"paid\"\nlisten = \"127.0.0.1\"\nport = {paid}\nprotocol = \"vless\"\n\
         [[route.rules]]\nip_cidr = [\"127.0.0.1/32\"]\ninbound = [\"main\"]\noutbound = \"block\"\n"
    );
    let f = start_with("protocol = \"vless\"", &extra).await;
    let target = f.http.addr();

    let blocked = through(f.port, target, 1000).await;
    assert!(
        !String::from_utf8_lossy(&blocked).contains("200 OK"),
        "through the inbound the rule names: nothing ({} bytes)",
        blocked.len()
    );
    let carried = through(paid, target, 1000).await;
    assert!(
        String::from_utf8_lossy(&carried).contains("HTTP/1.1 200"),
        "through the other inbound: the answer"
    );

    let (_, metrics) = call(&f, "GET", "/metrics", None).await;
    assert!(
        metrics.contains("switchyard_inbound_blocked_total{inbound=\"main\"} 1\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("switchyard_inbound_blocked_total{inbound=\"paid\"} 0\n"),
        "{metrics}"
    );

    let mut c = f.node.config().await;
    c.version = 2;
    c.route.rules[0].inbound = vec!["nope".into()];
    let e = f.node.apply(c).await.unwrap_err().to_string();
    assert!(
        e.contains("route.rules[0].inbound[0]: no inbound is tagged \"nope\""),
        "{e}"
    );
}
