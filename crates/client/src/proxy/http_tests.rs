use super::*;

fn req(text: &str) -> ProxyRequest {
    parse_request(text.as_bytes()).unwrap().unwrap()
}

fn head(r: &ProxyRequest) -> &str {
    std::str::from_utf8(&r.head).unwrap()
}

#[test]
fn a_proxy_request_goes_out_in_origin_form_without_hop_by_hop_or_proxy_headers() {
    let text = "GET http://Example.com:8080/a/b?x=1#frag HTTP/1.1\r\nHost: wrong\r\nUser-Agent: curl\r\nProxy-Connection: Keep-Alive\r\nProxy-Authorization: Basic eA==\r\nConnection: keep-alive, X-Drop\r\nX-Drop: 1\r\nKeep-Alive: 5\r\nTE: trailers\r\nAccept: */*\r\n\r\nrest";
    let r = req(text);
    assert_eq!(r.destination, Address::domain("Example.com", 8080).unwrap());
    assert_eq!(r.method, "GET");
    assert_eq!(
        head(&r),
        "GET /a/b?x=1 HTTP/1.1\r\nHost: Example.com:8080\r\nUser-Agent: curl\r\nAccept: */*\r\n\r\n"
    );
    assert_eq!(r.head_len, text.len() - 4);
    assert_eq!(r.body, Body::None);
    assert!(r.keep_alive && !r.upgrade);
}

#[test]
fn urls_read_as_origins_and_targets() {
    let r = req("GET http://127.0.0.1 HTTP/1.1\r\n\r\n");
    assert_eq!(r.destination, Address::Ip("127.0.0.1:80".parse().unwrap()));
    assert!(head(&r).starts_with("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
    let r = req("GET http://[::1]:81?q HTTP/1.1\r\n\r\n");
    assert_eq!(r.destination, Address::Ip("[::1]:81".parse().unwrap()));
    assert!(head(&r).starts_with("GET /?q HTTP/1.1\r\nHost: [::1]:81\r\n"));
    let r = req("GET HTTP://[::1]/ HTTP/1.1\r\n\r\n");
    assert_eq!(r.destination, Address::Ip("[::1]:80".parse().unwrap()));
    for bad in [
        "GET / HTTP/1.1\r\n\r\n",
        "GET https://example.com/ HTTP/1.1\r\n\r\n",
        "GET http:///x HTTP/1.1\r\n\r\n",
        "GET http://user:pw@example.com/ HTTP/1.1\r\n\r\n",
        "GET http://example.com:99999/ HTTP/1.1\r\n\r\n",
        "GET http://[::1/ HTTP/1.1\r\n\r\n",
        "GET ftp://example.com/ HTTP/1.1\r\n\r\n",
    ] {
        let e = parse_request(bad.as_bytes()).unwrap_err();
        assert!(matches!(e, RequestError::Target(_)), "{bad}: {e}");
        assert!(e.answer().starts_with("HTTP/1.1 400 "), "{bad}");
    }
    assert_eq!(
        parse_request(b"GET http://example.com/ HTTP/1.1\r\nHost"),
        Ok(None)
    );
    assert!(matches!(
        parse_request(b"\x01GET junk\r\n\r\n"),
        Err(RequestError::Malformed(_))
    ));
}

#[test]
fn request_bodies_are_framed_or_refused() {
    let r = req("POST http://h/ HTTP/1.1\r\nContent-Length: 5\r\n\r\n");
    assert_eq!(r.body, Body::Length(5));
    assert!(head(&r).contains("Content-Length: 5\r\n"));
    let r = req("POST http://h/ HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n");
    assert_eq!(r.body, Body::Length(5));
    let r = req("POST http://h/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
    assert_eq!(r.body, Body::Chunked);
    assert!(head(&r).contains("Transfer-Encoding: gzip, chunked\r\n"));
    // Framing headers pass even if Connection names them.
    let r =
        req("POST http://h/ HTTP/1.1\r\nConnection: content-length\r\nContent-Length: 2\r\n\r\n");
    assert!(head(&r).contains("Content-Length: 2\r\n"));
    for bad in [
        "POST http://h/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST http://h/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
        "POST http://h/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
        "POST http://h/ HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        "POST http://h/ HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
    ] {
        let e = parse_request(bad.as_bytes()).unwrap_err();
        assert!(matches!(e, RequestError::Framing(_)), "{bad}: {e}");
    }
}

#[test]
fn keep_alive_and_upgrade_follow_the_version_and_connection_header() {
    assert!(!req("GET http://h/ HTTP/1.1\r\nConnection: close\r\n\r\n").keep_alive);
    assert!(!req("GET http://h/ HTTP/1.0\r\n\r\n").keep_alive);
    let r = req("GET http://h/ HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert!(r.keep_alive);
    assert!(head(&r).starts_with("GET / HTTP/1.0\r\n"));
    let r = req("GET http://h/ws HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
    assert!(r.upgrade);
    assert_eq!(
        head(&r),
        "GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n"
    );
    // Upgrade without Connection: upgrade is hop-by-hop noise.
    let r = req("GET http://h/ HTTP/1.1\r\nUpgrade: websocket\r\n\r\n");
    assert!(!r.upgrade);
    assert!(!head(&r).contains("Upgrade"));
}

fn res(text: &str, method: &str, keep: bool) -> ProxyResponse {
    parse_response(text.as_bytes(), method, false, keep)
        .unwrap()
        .unwrap()
}

#[test]
fn responses_are_framed_as_rfc_9112_says() {
    let r = res(
        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\nProxy-Authenticate: Basic\r\nServer: t\r\n\r\nabc",
        "GET",
        true,
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.body, Body::Length(3));
    assert!(r.origin_keeps && r.app_keeps);
    assert_eq!(
        std::str::from_utf8(&r.head).unwrap(),
        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nServer: t\r\n\r\n"
    );
    assert_eq!(r.head_len, r.head_len.min(200));
    let r = res(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        "GET",
        true,
    );
    assert_eq!(r.body, Body::Chunked);
    let r = res("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", "HEAD", true);
    assert_eq!(r.body, Body::None);
    for status in ["100 Continue", "204 No Content", "304 Not Modified"] {
        let r = res(&format!("HTTP/1.1 {status}\r\n\r\n"), "GET", true);
        assert_eq!(r.body, Body::None, "{status}");
    }
    // Up to the close: the app's connection ends with it, and is told so.
    let r = res("HTTP/1.1 200 OK\r\n\r\n", "GET", true);
    assert_eq!(r.body, Body::UntilClose);
    assert!(!r.origin_keeps && !r.app_keeps);
    assert!(
        std::str::from_utf8(&r.head)
            .unwrap()
            .ends_with("Connection: close\r\n\r\n")
    );
    let r = res(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
        "GET",
        true,
    );
    assert_eq!(r.body, Body::UntilClose);
    // The origin closes: the app's connection stays (the next request dials again).
    let r = res(
        "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        "GET",
        true,
    );
    assert!(!r.origin_keeps && r.app_keeps);
    assert!(!std::str::from_utf8(&r.head).unwrap().contains("Connection"));
    let r = res("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", "GET", true);
    assert!(!r.origin_keeps);
    // The app asked to close.
    let r = res("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "GET", false);
    assert!(!r.app_keeps);
    assert!(
        std::str::from_utf8(&r.head)
            .unwrap()
            .contains("Connection: close\r\n")
    );
    // Interim answers never say close.
    let r = res("HTTP/1.1 100 Continue\r\n\r\n", "POST", false);
    assert!(!std::str::from_utf8(&r.head).unwrap().contains("Connection"));
}

#[test]
fn a_switch_of_protocols_keeps_its_upgrade_headers() {
    let text =
        "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n";
    let r = parse_response(text.as_bytes(), "GET", true, true)
        .unwrap()
        .unwrap();
    assert_eq!(
        std::str::from_utf8(&r.head).unwrap(),
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n"
    );
    assert!(!r.app_keeps);
}

#[test]
fn bad_responses_are_refused() {
    assert_eq!(
        parse_response(
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            "GET",
            false,
            true
        ),
        Err(ResponseError::Length)
    );
    assert_eq!(
        parse_response(
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "GET",
            false,
            true
        ),
        Err(ResponseError::Length)
    );
    assert!(matches!(
        parse_response(b"SSH-2.0-x\r\n\r\n", "GET", false, true),
        Err(ResponseError::Malformed(_))
    ));
    let long = format!("HTTP/1.1 200 OK\r\nX: {}", "a".repeat(MAX_RESPONSE_HEAD));
    assert_eq!(
        parse_response(long.as_bytes(), "GET", false, true),
        Err(ResponseError::TooLong)
    );
    assert_eq!(
        parse_response(b"HTTP/1.1 200 OK\r\n", "GET", false, true),
        Ok(None)
    );
}
