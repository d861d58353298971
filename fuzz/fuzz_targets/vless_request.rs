//! VLESS request headers and UDP packets from arbitrary bytes: no panic, a consumed
//! count within the buffer, and whatever parses encodes back to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_proto::vless::{Request, parse_udp_packet};

fuzz_target!(|data: &[u8]| {
    if let Ok(Some((request, used))) = Request::parse(data) {
        assert!(used <= data.len());
        let mut again = Vec::new();
        request.encode(&mut again);
        assert_eq!(Request::parse(&again), Ok(Some((request, again.len()))));
    }
    let mut rest = data;
    while let Some((payload, used)) = parse_udp_packet(rest) {
        assert_eq!(used, payload.len() + 2);
        rest = &rest[used..];
    }
});
