//! Shared by the node's tunnel tests (`#[path]`-included); on its own it tests nothing.
#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use switchyard_node::Node;

/// Links up in the node's half of the tunnel "eu".
pub async fn links(node: &Node) -> u64 {
    node.tunnel("eu")
        .await
        .map_or(0, |v| v["links"].as_u64().unwrap_or(0))
}

/// Waits (real time, up to 10 s) until the node's half of "eu" has `n` links.
pub async fn wait_links(node: &Node, n: u64) {
    for _ in 0..400 {
        if links(node).await == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!(
        "expected {n} links, have {}: {}",
        links(node).await,
        node.tunnel("eu").await.unwrap()
    );
}
