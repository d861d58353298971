//! HTTPUpgrade request and response heads from arbitrary bytes: no panic, a consumed
//! count within the head bound, and a response for every accepted request.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_proto::httpupgrade::{Config, MAX_HEAD_LEN, parse_request, parse_response};

fuzz_target!(|data: &[u8]| {
    for host in [None, Some("example.com".to_owned())] {
        let config = Config {
            path: "/up".into(),
            host,
        };
        if let Ok(Some((request, used))) = parse_request(data, &config) {
            assert!(used <= data.len().min(MAX_HEAD_LEN));
            let mut response = Vec::new();
            request.encode_response(&mut response);
            assert!(response.ends_with(b"\r\n\r\n"));
            let (answer, _) = parse_response(&response)
                .expect("our answer parses")
                .expect("our answer is whole");
            assert_eq!(answer.status, 101);
        }
    }
    if let Ok(Some((_, used))) = parse_response(data) {
        assert!(used <= data.len().min(MAX_HEAD_LEN));
    }
});
