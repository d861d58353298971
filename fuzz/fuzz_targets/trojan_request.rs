//! Trojan requests from arbitrary bytes, raw and behind a valid hash: no panic, and
//! whatever parses encodes back to the same request.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_proto::trojan::{Request, password_hash};

fn check(buf: &[u8]) {
    if let Ok(Some((request, used))) = Request::parse(buf) {
        assert!(used <= buf.len());
        let mut again = Vec::new();
        request.encode(&mut again);
        assert_eq!(Request::parse(&again), Ok(Some((request, again.len()))));
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    let mut hashed = password_hash("fuzz").to_vec();
    hashed.extend_from_slice(b"\r\n");
    hashed.extend_from_slice(data);
    check(&hashed);
});
