//! The control API's door: every route wants the node's token, reads show no
//! secret, and every file in the state directory is private.

use crate::common;

use std::os::unix::fs::PermissionsExt as _;

use axum::http::StatusCode;
use common::control::*;
use common::*;
use serde_json::json;

const ROUTES: [(&str, &str); 10] = [
    ("GET", "/v1/status"),
    ("GET", "/v1/stats?cursor=0"),
    ("POST", "/v1/stats/ack"),
    ("GET", "/v1/config"),
    ("PUT", "/v1/config"),
    ("GET", "/v1/tunnels"),
    ("GET", "/v1/tunnels/eu"),
    ("POST", "/v1/tunnels/eu/reset"),
    ("GET", "/metrics"),
    ("GET", "/no/such/route"),
];

fn problem(detail: &str) -> String {
    json!({"type": "about:blank", "title": "Unauthorized", "status": 401, "detail": detail})
        .to_string()
}

#[tokio::test]
async fn every_route_wants_the_token_kept_private_in_the_state_directory() {
    let f = start("protocol = \"vless\"").await;
    let token = f.node.control_token().expose().to_owned();
    let file = f.dir.path().join("control.token");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        format!("{token}\n")
    );
    assert_eq!(mode(&file), 0o600);
    assert_eq!(token.len(), 64);
    let wrong = format!("Bearer {}", "0".repeat(64));
    let missing =
        "send `Authorization: Bearer <token>`; `switchyard node token --config FILE` prints it";
    for (method, uri) in ROUTES {
        for (auth, detail) in [
            (None, missing),
            (Some(wrong.as_str()), "the bearer token is not this node's"),
            (Some(token.as_str()), missing), // not a bearer credential
        ] {
            let got = call_with(&f, method, uri, Some(json!({"cursor": 0})), auth).await;
            assert_eq!(
                got,
                (
                    StatusCode::UNAUTHORIZED,
                    "application/problem+json".into(),
                    problem(detail)
                ),
                "{method} {uri} with {auth:?}"
            );
        }
    }
    // The scheme's case doesn't matter.
    let lower = format!("bearer {token}");
    let (code, _, _) = call_with(&f, "GET", "/v1/status", None, Some(&lower)).await;
    assert_eq!(code, StatusCode::OK);
    // With the token every route answers (a tunnel this node doesn't have: 404).
    let (code, _) = call(&f, "GET", "/v1/tunnels/eu", None).await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    // A restarted node keeps its token.
    let again = restart(&f).await;
    assert_eq!(again.control_token().expose(), token);
}

#[tokio::test]
async fn metrics_can_be_opened_without_the_token_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let cert = switchyard_testkit::TestCert::new("node.test").unwrap();
    let port = switchyard_testkit::free_port().unwrap();
    let text = config_text(port, "protocol = \"vless\"", &cert, dir.path(), "")
        .replace("[control]\n", "[control]\nmetrics_without_token = true\n");
    let f = start_text(text, dir, cert, port).await;
    let (code, _, body) = call_with(&f, "GET", "/metrics", None, None).await;
    assert_eq!(code, StatusCode::OK);
    assert!(body.contains("switchyard_node_connections 0"), "{body}");
    let (code, _, _) = call_with(&f, "GET", "/v1/status", None, None).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
}

fn mode(p: &std::path::Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn reads_show_no_secret_and_a_config_read_back_unfilled_is_refused() {
    let ss = format!(
        "\n[[inbounds]]\ntag = \"ss\"\nprotocol = \"shadowsocks\"\nlisten = \"127.0.0.1\"\nport = {}\nmethod = \"2022-blake3-aes-128-gcm\"\npassword = \"c3dpdGNoeWFyZC1zcnZrZQ==\"\n",
        switchyard_testkit::free_port().unwrap()
    );
    let f = start_with("protocol = \"vless\"", &ss).await;
    let secrets = [
        ALICE_UUID,
        BOB_UUID,
        "alice-password",
        "bob-password",
        "alice-socks",
        SS_ALICE_KEY,
        "c3dpdGNoeWFyZC1zcnZrZQ==",
        f.node.control_token().expose(),
    ];
    let mut everything = String::new();
    for (method, uri) in [
        ("GET", "/v1/config"),
        ("GET", "/v1/status"),
        ("GET", "/v1/stats"),
        ("GET", "/metrics"),
    ] {
        everything += &call(&f, method, uri, None).await.1;
    }
    for s in secrets {
        assert!(!everything.contains(s), "{s} shown: {everything}");
    }
    let read = json(&f, "/v1/config").await;
    assert_eq!(read["users"][0]["vless"], "<redacted>");
    assert_eq!(read["users"][0]["trojan"], "<redacted>");
    assert_eq!(read["users"][0]["socks"], "<redacted>");
    assert_eq!(read["users"][0]["shadowsocks"], "<redacted>");
    assert_eq!(read["inbounds"][1]["password"], "<redacted>");
    // Sent back as read, it is refused with the first placeholder named; with the
    // values filled in, taken.
    let (code, body) = call(&f, "PUT", "/v1/config", Some(read)).await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    assert_eq!(
        body,
        json!({"error": "inbounds[1].password: holds \"<redacted>\", what reads show in place of a secret; send the real value"}).to_string()
    );
    let mut full = serde_json::to_value(f.node.config().await).unwrap();
    full["version"] = json!(9);
    let (code, body) = call(&f, "PUT", "/v1/config", Some(full)).await;
    assert_eq!((code, body.as_str()), (StatusCode::OK, r#"{"applied":9}"#));
    assert_eq!(
        f.node.config().await.users[0]
            .trojan
            .as_ref()
            .unwrap()
            .expose(),
        "alice-password"
    );
}

#[tokio::test]
async fn every_state_file_is_private_and_so_is_the_directory() {
    // A state directory an older node (or an operator's umask) left open.
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let cert = switchyard_testkit::TestCert::new("node.test").unwrap();
    let port = switchyard_testkit::free_port().unwrap();
    let text = config_text(port, "protocol = \"vless\"", &cert, dir.path(), "");
    let f = start_text(text, dir, cert, port).await;
    alice_connection(&f).add(1, 2);
    f.node.flush_journal().await.unwrap();
    assert_eq!(mode(f.dir.path()), 0o700);
    let mut names: Vec<String> = std::fs::read_dir(f.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["config.json", "control.token", "journal.jsonl"]);
    for n in names {
        assert_eq!(mode(&f.dir.path().join(&n)), 0o600, "{n}");
    }
}
