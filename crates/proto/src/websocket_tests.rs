use proptest::prelude::*;

use super::*;

fn config() -> UpgradeConfig {
    UpgradeConfig {
        path: "/ws".into(),
        host: Some("example.com".into()),
        early_data: EarlyData::Off,
    }
}

/// The request head sing-box's client writes (sagernet/ws `Dialer.Upgrade`), with
/// the key of RFC 6455's example.
fn request(target: &str, extra: &str) -> String {
    format!(
        "GET {target} HTTP/1.1\r\nHost: example.com:443\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nUser-Agent: Go-http-client/1.1\r\n{extra}\r\n"
    )
}

#[test]
fn accepts_and_answers_rfc6455_example() {
    assert_eq!(
        accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
        "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    );
    let head = request("/ws", "");
    let wire = [head.as_bytes(), b"\x82\x00"].concat();
    let (req, used) = parse_upgrade(&wire, &config()).unwrap().unwrap();
    assert_eq!(used, head.len());
    assert_eq!(req.host.as_deref(), Some("example.com:443"));
    assert_eq!(req.early_data, None);
    let mut out = Vec::new();
    req.encode_response(&mut out);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"
    );
}

#[test]
fn early_data_in_sec_websocket_protocol() {
    // A VLESS header in base64url, as Xray and sing-box put it in the header.
    let ed = "AAAAAAAAAAAAAAAAAAAAAAAAAQG7AgtleGFtcGxlLmNvbQ";
    let head = request("/ws?ed=2048", &format!("Sec-WebSocket-Protocol: {ed}\r\n"));
    let mut config = config();
    config.early_data = EarlyData::Header("Sec-WebSocket-Protocol".into());
    let (req, _) = parse_upgrade(head.as_bytes(), &config).unwrap().unwrap();
    let want = [&[0u8; 18][..], &[1, 1, 187, 2, 11], b"example.com"].concat();
    assert_eq!(req.early_data.as_deref(), Some(&want[..]));
    let mut out = Vec::new();
    req.encode_response(&mut out);
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains(&format!("\r\nSec-WebSocket-Protocol: {ed}\r\n")));
    let bad = request("/ws", "Sec-WebSocket-Protocol: not base64!\r\n");
    assert_eq!(
        parse_upgrade(bad.as_bytes(), &config),
        Err(WebSocketError::BadEarlyData)
    );
}

#[test]
fn early_data_in_path() {
    let mut config = config();
    config.early_data = EarlyData::PathSuffix;
    let head = request("/wsAQID", "");
    let (req, _) = parse_upgrade(head.as_bytes(), &config).unwrap().unwrap();
    assert_eq!(req.early_data, Some(vec![1, 2, 3]));
    let head = request("/other", "");
    assert_eq!(
        parse_upgrade(head.as_bytes(), &config),
        Err(WebSocketError::WrongPath("/other".into()))
    );
}

/// The node accepts early data either way: in `Sec-WebSocket-Protocol` (Xray, and
/// sing-box with `early_data_header_name` set) or appended to the path (sing-box
/// without it); a suffix that is not base64url is a wrong path.
#[test]
fn early_data_in_the_header_or_the_path() {
    let mut config = config();
    config.early_data = EarlyData::HeaderOrPath("Sec-WebSocket-Protocol".into());
    let (req, _) = parse_upgrade(request("/wsAQID", "").as_bytes(), &config)
        .unwrap()
        .unwrap();
    assert_eq!(req.early_data, Some(vec![1, 2, 3]));
    let head = request("/ws?ed=2048", "Sec-WebSocket-Protocol: BAUG\r\n");
    let (req, _) = parse_upgrade(head.as_bytes(), &config).unwrap().unwrap();
    assert_eq!(req.early_data, Some(vec![4, 5, 6]));
    let (req, _) = parse_upgrade(request("/ws?ed=2048", "").as_bytes(), &config)
        .unwrap()
        .unwrap();
    assert_eq!(req.early_data, None);
    for wrong in ["/w", "/ws!!", "/other"] {
        assert_eq!(
            parse_upgrade(request(wrong, "").as_bytes(), &config),
            Err(WebSocketError::WrongPath(wrong.into()))
        );
    }
}

#[test]
fn refusals_are_named() {
    let cfg = config();
    let parse = |s: String| parse_upgrade(s.as_bytes(), &cfg);
    assert_eq!(
        parse(request("/x", "")),
        Err(WebSocketError::WrongPath("/x".into()))
    );
    let post = request("/ws", "").replacen("GET", "POST", 1);
    assert_eq!(parse(post), Err(WebSocketError::NotGet("POST".into())));
    let host = request("/ws", "").replace("example.com:443", "evil.com");
    assert_eq!(
        parse(host),
        Err(WebSocketError::WrongHost(Some("evil.com".into())))
    );
    let plain = request("/ws", "").replace("Upgrade: websocket", "Upgrade: h2c");
    assert_eq!(parse(plain), Err(WebSocketError::NotUpgrade));
    let v8 = request("/ws", "").replace("Version: 13", "Version: 8");
    assert_eq!(
        parse(v8),
        Err(WebSocketError::UnsupportedVersion(Some("8".into())))
    );
    let key = request("/ws", "").replace("dGhlIHNhbXBsZSBub25jZQ==", "short");
    assert_eq!(parse(key), Err(WebSocketError::BadKey));
    assert!(matches!(
        parse("\x16\x03\x01".into()),
        Err(WebSocketError::Malformed(_))
    ));
    let huge = format!("GET /ws HTTP/1.1\r\nX: {}\r\n", "a".repeat(MAX_HEAD_LEN));
    assert_eq!(parse(huge), Err(WebSocketError::TooLarge));
    let many = request("/ws", &"X: y\r\n".repeat(70));
    assert_eq!(parse(many), Err(WebSocketError::TooLarge));
    // No host configured: any Host, or none, is fine; Connection may list tokens.
    let open = UpgradeConfig {
        host: None,
        ..config()
    };
    let head = request("/ws", "").replace("Connection: Upgrade", "Connection: keep-alive, Upgrade");
    assert!(parse_upgrade(head.as_bytes(), &open).unwrap().is_some());
}

proptest! {
    #[test]
    fn prefixes_are_incomplete(cut in 0usize..300) {
        let head = request("/ws", "");
        let cut = cut.min(head.len() - 1);
        prop_assert_eq!(parse_upgrade(&head.as_bytes()[..cut], &config()), Ok(None));
    }

    #[test]
    fn arbitrary_bytes_never_panic(buf in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = parse_upgrade(&buf, &config());
        let mut with_head = b"GET /ws HTTP/1.1\r\n".to_vec();
        with_head.extend_from_slice(&buf);
        let _ = parse_upgrade(&with_head, &config());
    }
}
