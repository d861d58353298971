use proptest::prelude::*;

use super::*;

fn config() -> Config {
    Config {
        path: "/up".into(),
        host: Some("example.com".into()),
    }
}

/// What the pinned Xray 24.11.21, sing-box 1.14.4 and mihomo 1.19.2 clients all
/// write, byte for byte (captured from each; Go's `Request.Write` with `Connection`
/// and `Upgrade` set: Host, Go's User-Agent, the other headers sorted). Sources:
/// Xray `transport/internet/httpupgrade/dialer.go`, sing-box
/// `transport/v2rayhttpupgrade/client.go`, mihomo `transport/vmess/websocket.go`.
const PINNED_CLIENTS: &str = "GET /up HTTP/1.1\r\nHost: example.com\r\n\
    User-Agent: Go-http-client/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n";

/// What newer Xray writes (its `dialer.go` after 24.11.21): its default browser
/// headers, a random `Sec-WebSocket-Key` and version 13, canonicalized and sorted by
/// Go.
const XRAY_NEWER: &str = "GET /up HTTP/1.1\r\nHost: example.com\r\n\
    User-Agent: Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/122.0.0.0 Safari/537.36\r\n\
    Connection: Upgrade\r\nSec-Websocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
    Sec-Websocket-Version: 13\r\nUpgrade: websocket\r\n\r\n";

/// A WebSocket-style request (mihomo's plain `ws` head with the port in `Host`),
/// whose client checks the accept value.
const WEBSOCKET_STYLE: &str = "GET /up HTTP/1.1\r\nHost: example.com:443\r\n\
    User-Agent: Go-http-client/1.1\r\nConnection: Upgrade\r\n\
    Sec-Websocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-Websocket-Version: 13\r\n\
    Upgrade: websocket\r\n\r\n";

#[test]
fn accepts_what_the_pinned_clients_send_and_answers_without_accept() {
    let wire = [PINNED_CLIENTS.as_bytes(), b"\x00\x01payload"].concat();
    let (req, used) = parse_request(&wire, &config()).unwrap().unwrap();
    assert_eq!(used, PINNED_CLIENTS.len());
    assert_eq!(&wire[used..], b"\x00\x01payload");
    assert_eq!(
        req,
        Request {
            target: "/up".into(),
            host: Some("example.com".into()),
            key: None,
        }
    );
    let mut out = Vec::new();
    req.encode_response(&mut out);
    assert_eq!(
        out,
        b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
    );
}

#[test]
fn a_client_that_sends_a_key_gets_its_accept_value() {
    for head in [XRAY_NEWER, WEBSOCKET_STYLE] {
        let (req, used) = parse_request(head.as_bytes(), &config()).unwrap().unwrap();
        assert_eq!(used, head.len());
        assert_eq!(req.key.as_deref(), Some("dGhlIHNhbXBsZSBub25jZQ=="));
        let mut out = Vec::new();
        req.encode_response(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
             Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"
        );
    }
}

#[test]
fn a_query_is_ignored_and_any_host_accepted_when_none_is_configured() {
    let head = PINNED_CLIENTS.replace("GET /up ", "GET /up?ed=2048 ");
    let open = Config {
        path: "/up".into(),
        host: None,
    };
    let (req, _) = parse_request(head.as_bytes(), &open).unwrap().unwrap();
    assert_eq!(req.target, "/up?ed=2048");
    let other = PINNED_CLIENTS.replace("Host: example.com", "Host: other.test");
    assert!(parse_request(other.as_bytes(), &open).unwrap().is_some());
    let none = PINNED_CLIENTS.replace("Host: example.com\r\n", "");
    assert!(parse_request(none.as_bytes(), &open).unwrap().is_some());
}

#[test]
fn each_wrong_request_names_what_is_wrong() {
    let cfg = config();
    let cases = [
        (
            PINNED_CLIENTS.replace("GET /up ", "GET /down "),
            HttpUpgradeError::WrongPath("/down".into()),
        ),
        (
            PINNED_CLIENTS.replace("GET /up ", "GET /up/ "),
            HttpUpgradeError::WrongPath("/up/".into()),
        ),
        (
            PINNED_CLIENTS.replace("GET ", "POST "),
            HttpUpgradeError::NotGet("POST".into()),
        ),
        (
            PINNED_CLIENTS.replace("Host: example.com", "Host: other.test"),
            HttpUpgradeError::WrongHost(Some("other.test".into())),
        ),
        (
            PINNED_CLIENTS.replace("Host: example.com\r\n", ""),
            HttpUpgradeError::WrongHost(None),
        ),
        (
            PINNED_CLIENTS.replace("Upgrade: websocket\r\n", ""),
            HttpUpgradeError::NotUpgrade,
        ),
        (
            PINNED_CLIENTS.replace("Connection: Upgrade", "Connection: keep-alive"),
            HttpUpgradeError::NotUpgrade,
        ),
        (
            "GET /up HTTP/1.1\r\nHost: example.com\r\n\r\n".to_owned(),
            HttpUpgradeError::NotUpgrade,
        ),
    ];
    for (head, want) in cases {
        assert_eq!(
            parse_request(head.as_bytes(), &cfg),
            Err(want.clone()),
            "{head}"
        );
    }
    assert_eq!(
        HttpUpgradeError::WrongPath("/down".into()).to_string(),
        "path \"/down\" is not the configured HTTPUpgrade path"
    );
    assert!(matches!(
        parse_request(b"\x16\x03\x01\x02\x00\x01", &cfg),
        Err(HttpUpgradeError::Malformed(_))
    ));
}

#[test]
fn host_compared_without_port_or_case() {
    let cfg = config();
    for host in ["EXAMPLE.com", "example.com:8443"] {
        let head = PINNED_CLIENTS.replace("Host: example.com", &format!("Host: {host}"));
        assert!(
            parse_request(head.as_bytes(), &cfg).unwrap().is_some(),
            "{host}"
        );
    }
    let v6 = Config {
        path: "/up".into(),
        host: Some("::1".into()),
    };
    let head = PINNED_CLIENTS.replace("Host: example.com", "Host: [::1]:443");
    assert!(parse_request(head.as_bytes(), &v6).unwrap().is_some());
}

#[test]
fn partial_heads_wait_and_long_ones_are_refused() {
    let cfg = config();
    for cut in 0..PINNED_CLIENTS.len() {
        assert_eq!(
            parse_request(&PINNED_CLIENTS.as_bytes()[..cut], &cfg),
            Ok(None),
            "cut at {cut}"
        );
    }
    let mut long = b"GET /up HTTP/1.1\r\nX-Pad: ".to_vec();
    long.resize(MAX_HEAD_LEN, b'a');
    assert_eq!(parse_request(&long, &cfg), Err(HttpUpgradeError::TooLarge));
    let mut many = String::from("GET /up HTTP/1.1\r\n");
    for i in 0..65 {
        many.push_str(&format!("X-{i}: a\r\n"));
    }
    many.push_str("\r\n");
    assert_eq!(
        parse_request(many.as_bytes(), &cfg),
        Err(HttpUpgradeError::TooLarge)
    );
}

#[test]
fn our_request_is_accepted_and_answers_are_read() {
    let mut out = Vec::new();
    encode_request("/up", "example.com", &mut out);
    assert_eq!(
        out,
        b"GET /up HTTP/1.1\r\nHost: example.com\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
    );
    let (req, used) = parse_request(&out, &config()).unwrap().unwrap();
    assert_eq!((req.key, used), (None, out.len()));
    // Xray's answer (Go's `Response.Write`), then the first tunnelled bytes.
    let xray =
        b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n";
    let wire = [&xray[..], b"\x00\x00"].concat();
    let (resp, used) = parse_response(&wire).unwrap().unwrap();
    assert_eq!(
        (resp.status, resp.reason.as_str(), used),
        (101, "Switching Protocols", xray.len())
    );
    assert_eq!(parse_response(&xray[..20]), Ok(None));
    let refused = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    let err = parse_response(refused).unwrap_err();
    assert_eq!(
        err,
        HttpUpgradeError::Status {
            status: 404,
            reason: "Not Found".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "server answered 404 Not Found, not 101 Switching Protocols"
    );
    assert_eq!(
        parse_response(b"HTTP/1.1 101 Switching Protocols\r\n\r\n"),
        Err(HttpUpgradeError::NotUpgrade)
    );
    assert!(matches!(
        parse_response(b"SSH-2.0-OpenSSH\r\n\r\n"),
        Err(HttpUpgradeError::Malformed(_))
    ));
}

proptest! {
    /// Arbitrary bytes never panic; an accepted head is within the bound.
    #[test]
    fn arbitrary_bytes_are_handled(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(Some((_, used))) = parse_request(&data, &config()) {
            prop_assert!(used <= data.len().min(MAX_HEAD_LEN));
        }
        if let Ok(Some((_, used))) = parse_response(&data) {
            prop_assert!(used <= data.len().min(MAX_HEAD_LEN));
        }
    }
}
