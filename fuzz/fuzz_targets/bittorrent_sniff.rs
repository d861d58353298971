//! Telling BitTorrent from a connection's first bytes (TCP) and from datagrams (UDP),
//! on arbitrary bytes: no panic, and a TCP verdict never changes its mind once it has
//! one (more bytes after a decided prefix give the same answer).
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_proto::bittorrent::{Sniff, is_bittorrent_udp, sniff_tcp};

fuzz_target!(|data: &[u8]| {
    let _ = is_bittorrent_udp(data);
    let whole = sniff_tcp(data);
    for cut in 0..data.len().min(64) {
        match sniff_tcp(&data[..cut]) {
            Sniff::NeedMore => {}
            decided => assert_eq!(decided, whole, "decided at {cut} bytes"),
        }
    }
});
