//! The client's local proxy reading a plain HTTP proxy request (`GET http://…`) from
//! an app and an origin's response head (both through `httparse`): no panic whatever
//! the bytes; a head taken is within the input; the request rewritten for the origin
//! reads back as one whole origin-form request with the same method and carries no
//! `Proxy-*` header; a response rewritten for the app reads back as a response.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_client::proxy::http::{MAX_REQUEST_HEADERS, parse_request, parse_response};

fuzz_target!(|data: &[u8]| {
    if let Ok(Some(request)) = parse_request(data) {
        assert!(request.head_len <= data.len());
        let mut headers = [httparse::EMPTY_HEADER; MAX_REQUEST_HEADERS + 2];
        let mut again = httparse::Request::new(&mut headers);
        let used = again.parse(&request.head);
        assert_eq!(used, Ok(httparse::Status::Complete(request.head.len())));
        assert_eq!(again.method, Some(request.method.as_str()));
        assert!(again.path.is_some_and(|p| p.starts_with('/')));
        assert!(
            again
                .headers
                .iter()
                .all(|h| !h.name.to_ascii_lowercase().starts_with("proxy-"))
        );
    }
    for (method, upgrade, keep) in [("GET", false, true), ("HEAD", true, false)] {
        if let Ok(Some(response)) = parse_response(data, method, upgrade, keep) {
            assert!(response.head_len <= data.len());
            let mut headers = [httparse::EMPTY_HEADER; 256];
            let mut again = httparse::Response::new(&mut headers);
            assert!(matches!(
                again.parse(&response.head),
                Ok(httparse::Status::Complete(_))
            ));
        }
    }
});
