//! The client's local proxy reading an HTTP CONNECT head from an app (through
//! `httparse`): no panic; a head taken is within the input and names a destination.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_client::proxy::parse_connect;

fuzz_target!(|data: &[u8]| {
    if let Ok(Some((_, used))) = parse_connect(data) {
        assert!(used <= data.len());
    }
});
