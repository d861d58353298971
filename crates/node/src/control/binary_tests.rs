//! `PUT /v1/binary` and `POST /v1/upgrade {"binary"}` through the control router (as
//! loopback serves it, with the token), on a node without inbounds.

use std::os::unix::fs::PermissionsExt as _;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use bytes::Bytes;
use http_body_util::BodyExt as _;
use sha2::{Digest as _, Sha256};
use tower::ServiceExt as _;

use super::{MAX_BYTES, SHA256_HEADER, bin_dir, binary_path};
use crate::{Node, NodeConfig};

async fn node(dir: &std::path::Path) -> Arc<Node> {
    let mut config = NodeConfig::default();
    config.node.state_dir = dir.to_owned();
    config.control.listen = "127.0.0.1:0".parse().unwrap();
    Node::start(config).await.unwrap()
}

fn sha(data: &[u8]) -> String {
    switchyard_config::hex::encode(&Sha256::digest(data))
}

async fn send(node: &Arc<Node>, request: Request<Body>) -> (StatusCode, serde_json::Value) {
    let r = crate::control::router(node.clone())
        .oneshot(request)
        .await
        .unwrap();
    let status = r.status();
    let body = r.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
    )
}

fn put(node: &Arc<Node>, sha256: &str, body: Body) -> Request<Body> {
    Request::put("/v1/binary")
        .header(
            "authorization",
            format!("Bearer {}", node.control_token().expose()),
        )
        .header(SHA256_HEADER, sha256)
        .body(body)
        .unwrap()
}

#[tokio::test]
async fn an_upload_is_kept_0755_under_its_hash() {
    let dir = tempfile::tempdir().unwrap();
    let n = node(dir.path()).await;
    let data = vec![7u8; 3 << 20];
    let (status, body) = send(&n, put(&n, &sha(&data), Body::from(data.clone()))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["sha256"], sha(&data));
    assert_eq!(body["bytes"], 3 << 20, "past axum's default limit of 2 MB");
    let kept = binary_path(dir.path(), &sha(&data));
    assert_eq!(std::fs::read(&kept).unwrap(), data);
    assert_eq!(
        std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777,
        0o755
    );
    // Over the query too, lowercase or not.
    let (status, _) = send(
        &n,
        Request::put(format!("/v1/binary?sha256={}", sha(b"x").to_uppercase()))
            .header(
                "authorization",
                format!("Bearer {}", n.control_token().expose()),
            )
            .body(Body::from("x"))
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(!kept.exists(), "the older binary was removed");
    n.shutdown().await;
}

#[tokio::test]
async fn a_wrong_hash_is_422_and_leaves_no_part_file() {
    let dir = tempfile::tempdir().unwrap();
    let n = node(dir.path()).await;
    let (status, body) = send(&n, put(&n, &sha(b"good"), Body::from("evil"))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(body["error"].as_str().unwrap().starts_with("sha256: "));
    let left: Vec<_> = std::fs::read_dir(bin_dir(dir.path())).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    // No hash, a bad one: 400 naming it.
    let (status, body) = send(&n, put(&n, "abc", Body::from("x"))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"].as_str().unwrap().starts_with("sha256: "));
    n.shutdown().await;
}

#[tokio::test]
async fn a_body_claiming_more_than_256_mib_is_413_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let n = node(dir.path()).await;
    // It says it is larger, and never sends a byte.
    let never = Body::from_stream(futures_util::stream::pending::<Result<Bytes, std::io::Error>>());
    let mut request = put(&n, &sha(b"x"), never);
    request.headers_mut().insert(
        "content-length",
        (MAX_BYTES + 1).to_string().parse().unwrap(),
    );
    let (status, body) = send(&n, request).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    n.shutdown().await;
}

#[tokio::test]
async fn a_second_upload_while_one_runs_is_409() {
    let dir = tempfile::tempdir().unwrap();
    let n = node(dir.path()).await;
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(1);
    let slow = Body::from_stream(tokio_stream_from(rx));
    let first = tokio::spawn({
        let n = n.clone();
        let request = put(&n, &sha(b"ab"), slow);
        async move { send(&n, request).await }
    });
    tx.send(Ok(Bytes::from_static(b"a"))).await.unwrap();
    // The first holds the slot once its part file is there.
    let part = bin_dir(dir.path()).join(format!("switchyard-{}.part", sha(b"ab")));
    for _ in 0..500 {
        if part.exists() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(part.exists(), "the first upload started");
    let (status, body) = send(&n, put(&n, &sha(b"c"), Body::from("c"))).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    tx.send(Ok(Bytes::from_static(b"b"))).await.unwrap();
    drop(tx);
    let (status, body) = first.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    n.shutdown().await;
}

fn tokio_stream_from(
    mut rx: tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

#[tokio::test]
async fn an_upgrade_to_a_binary_not_handed_over_is_404_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let n = node(dir.path()).await;
    let upgrade = |body: String| {
        Request::post("/v1/upgrade")
            .header(
                "authorization",
                format!("Bearer {}", n.control_token().expose()),
            )
            .body(Body::from(body))
            .unwrap()
    };
    let (status, body) = send(
        &n,
        upgrade(format!(r#"{{"binary":"{}","drain_s":5}}"#, "a".repeat(64))),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(body["error"].as_str().unwrap().starts_with("binary: "));
    let (status, body) = send(&n, upgrade(r#"{"binary":"nope"}"#.into())).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"].as_str().unwrap().starts_with("binary: "));
    // Handed over, it goes on to the upgrade, which a node nothing runs cannot do.
    let (status, _) = send(&n, put(&n, &sha(b"bin"), Body::from("bin"))).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = send(&n, upgrade(format!(r#"{{"binary":"{}"}}"#, sha(b"bin")))).await;
    assert_eq!(status, StatusCode::NOT_IMPLEMENTED, "{body}");
    // The status says what this executable is, once hashed.
    let status = loop {
        let (_, s) = send(
            &n,
            Request::get("/v1/status")
                .header(
                    "authorization",
                    format!("Bearer {}", n.control_token().expose()),
                )
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        if !s["binary_sha256"].is_null() {
            break s;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(status["binary_sha256"].as_str().unwrap().len(), 64);
    assert_eq!(status["node_version"], env!("CARGO_PKG_VERSION"));
    n.shutdown().await;
}
