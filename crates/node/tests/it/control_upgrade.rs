//! `POST /v1/upgrade`'s answers without starting a process: `501` when nothing runs
//! the node that could start another (a test's node); `400` naming the field for a
//! body that is not JSON, a drain past a day or a binary that is not a sha256; `404`
//! naming `binary` for one that was never handed over; with the binary listening,
//! the request it gets carries the drain (and no other binary), a second one
//! while it waits is `409` at once, and a failure it reports is `502` with its words.

use crate::common;

use std::time::Duration;

use axum::http::StatusCode;
use common::control::call;
use serde_json::json;

const TLS_INBOUND: &str =
    "protocol = \"vless\"\nsecurity = { type = \"tls\", cert = \"@CERT@\", key = \"@KEY@\" }";

#[tokio::test]
async fn upgrade_requests_are_refused_by_name_and_one_runs_at_a_time() {
    let f = common::start(TLS_INBOUND).await;
    let (status, body) = call(&f, "POST", "/v1/upgrade", None).await;
    assert_eq!(status, StatusCode::NOT_IMPLEMENTED, "{body}");

    let mut requests = f.node.accept_upgrades();
    for (sent, field) in [
        (json!({"drain_s": 86_401}), "drain_s"),
        (json!({"binary": "abc"}), "binary"),
        (json!({"drain_s": "soon"}), "body"),
    ] {
        let (status, body) = call(&f, "POST", "/v1/upgrade", Some(sent.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{sent}: {body}");
        assert!(body.contains(field), "{sent}: {body}");
    }
    let missing = "ab".repeat(32);
    let (status, body) = call(&f, "POST", "/v1/upgrade", Some(json!({"binary": missing}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(body.contains("binary") && body.contains(&missing), "{body}");

    // One at a time: the first waits for the binary's answer, a second is 409.
    let node = f.node.clone();
    let first = tokio::spawn(async move {
        let token = format!("Bearer {}", node.control_token().expose());
        let req = axum::http::Request::builder()
            .method("POST")
            .uri("/v1/upgrade")
            .header("authorization", token)
            .body(axum::body::Body::from(r#"{"drain_s": 30}"#))
            .unwrap();
        let resp = tower::ServiceExt::oneshot(switchyard_node::control::router(node), req)
            .await
            .unwrap();
        let status = resp.status();
        let body = http_body_util::BodyExt::collect(resp.into_body())
            .await
            .unwrap()
            .to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    });
    let request = tokio::time::timeout(Duration::from_secs(5), requests.recv())
        .await
        .expect("the request reaches the binary")
        .unwrap();
    assert_eq!(request.drain, Duration::from_secs(30));
    assert_eq!(request.program, None, "the binary at this process's path");
    // While it runs, another is refused at once.
    let (status, body) = call(&f, "POST", "/v1/upgrade", None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    request
        .reply
        .send(Err("the new process exited: status 1".into()))
        .unwrap();
    let (status, body) = first.await.unwrap();
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert!(body.contains("the new process exited: status 1"), "{body}");
}
