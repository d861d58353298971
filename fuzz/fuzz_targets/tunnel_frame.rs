//! Tunnel link frames, hellos and Open/datagram payloads from arbitrary bytes: no
//! panic, and whatever parses encodes back to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_tunnel::frame::{Frame, Hello, Open, check_address, parse_datagram};

fuzz_target!(|data: &[u8]| {
    let mut at = 0;
    while let Ok(Some((frame, used))) = Frame::parse(&data[at..]) {
        assert!(used <= data.len() - at);
        let mut again = Vec::new();
        frame.encode(&mut again);
        assert_eq!(&again[..], &data[at..at + used]);
        if let Ok(open) = Open::parse(frame.payload) {
            // The parser yields only destinations the other side would accept.
            assert_eq!(check_address(&open.destination), Ok(()));
            let mut p = Vec::new();
            open.encode(&mut p);
            assert_eq!(Open::parse(&p), Ok(open));
        }
        if let Ok((addr, _)) = parse_datagram(frame.payload) {
            assert_eq!(check_address(&addr), Ok(()));
        }
        at += used;
    }
    if let Ok(Some((hello, used))) = Hello::parse(data) {
        assert!(used <= data.len());
        let mut again = Vec::new();
        hello.encode(&mut again);
        assert_eq!(&again[..], &data[..used]);
    }
});
