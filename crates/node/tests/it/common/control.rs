//! Calls to the control API through its router, with the node's token.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use switchyard_node::accounting::Admission;
use switchyard_node::{Node, NodeConfig, control};
use tower::ServiceExt;

use super::Fixture;

pub async fn call(
    f: &Fixture,
    method: &str,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, String) {
    let token = format!("Bearer {}", f.node.control_token().expose());
    let (status, _, body) = call_with(f, method, uri, body, Some(&token)).await;
    (status, body)
}

/// A call with `authorization` as the header (none when `None`); the status, the
/// content type and the body.
pub async fn call_with(
    f: &Fixture,
    method: &str,
    uri: &str,
    body: Option<Value>,
    authorization: Option<&str>,
) -> (StatusCode, String, String) {
    let mut req = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json");
    if let Some(a) = authorization {
        req = req.header("authorization", a);
    }
    let req = req
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
        .unwrap();
    let resp = control::router(f.node.clone()).oneshot(req).await.unwrap();
    let status = resp.status();
    let kind = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, kind, String::from_utf8(bytes.to_vec()).unwrap())
}

/// Stops the fixture's node (a clean stop takes a last journal record) and starts
/// one on the same state directory, without inbounds.
pub async fn restart(f: &Fixture) -> Arc<Node> {
    let config = f.node.config().await;
    f.node.shutdown().await;
    Node::start(NodeConfig {
        inbounds: vec![],
        ..config
    })
    .await
    .unwrap()
}

pub async fn json(f: &Fixture, uri: &str) -> Value {
    let (status, body) = call(f, "GET", uri, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// A connection of alice's on the inbound `main`, to count bytes without a client.
pub fn alice_connection(f: &Fixture) -> Admission {
    f.node
        .shared()
        .accounting
        .admit("alice", "main", "127.0.0.1".parse().unwrap(), None)
        .unwrap()
}

/// The main inbound's count of connections relayed inside the kernel (`splice`).
pub async fn spliced(f: &Fixture) -> u64 {
    let (_, text) = call(f, "GET", "/metrics", None).await;
    text.lines()
        .find_map(|l| l.strip_prefix("switchyard_inbound_spliced_total{inbound=\"main\"} "))
        .map_or(0, |v| v.parse().unwrap())
}
