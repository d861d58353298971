//! `switchyard up` on a directory whose node state is gone while the panel still has
//! the node's pin: the new local node takes the old one's place through an explicit
//! replacement (a join token alone would be refused for a server whose node has
//! joined), and the same subscription works through it.

use std::time::{Duration, Instant};

use crate::up::up;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_replaces_its_node_when_the_node_s_state_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let first = up(dir.path()).await;
    let sub = first.subscription.clone();
    drop(first);
    tokio::time::sleep(Duration::from_millis(500)).await;
    std::fs::remove_dir_all(dir.path().join("node")).unwrap();

    let second = up(dir.path()).await;
    let path = |s: &str| s.rsplit_once("/sub/").unwrap().1.to_owned();
    assert_eq!(path(&second.subscription), path(&sub));
    assert!(
        dir.path()
            .join("node")
            .join(switchyard_channel::ENROLLMENT_FILE)
            .exists(),
        "the new node enrolled"
    );
    // The subscription lists the local node's inbound.
    let url = second
        .subscription
        .strip_prefix("http://")
        .unwrap()
        .to_owned();
    let (host, path) = url.split_once('/').unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let body = get(host, &format!("/{path}?format=sing-box")).await;
        if body.contains("\"vless\"") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the subscription has the node's inbound: {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn get(host: &str, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(host).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    String::from_utf8_lossy(&raw).into_owned()
}
