//! `/enroll` bodies from arbitrary bytes: no panic, and what parses is within bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_channel::EnrollRequest;
use switchyard_channel::enroll::{MAX_HOSTNAME_LEN, MAX_VERSION_LEN};

fuzz_target!(|data: &[u8]| {
    let remote = "127.0.0.1:1".parse().unwrap();
    if let Ok(r) = EnrollRequest::parse(data, remote) {
        assert_eq!(r.public_key.len(), 65);
        assert!(r.hostname.len() <= MAX_HOSTNAME_LEN);
        assert!(r.version.len() <= MAX_VERSION_LEN);
    }
});
