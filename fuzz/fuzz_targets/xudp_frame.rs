//! A stream of Mux.Cool/XUDP frames from arbitrary bytes: no panic, progress on every
//! frame, and each frame re-encodes to bytes that parse to the same frame.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_proto::xudp::Frame;

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    while let Ok(Some((frame, used))) = Frame::parse(rest) {
        assert!(used > 0 && used <= rest.len());
        let mut again = Vec::new();
        frame
            .encode(&mut again)
            .expect("a parsed frame's data fits");
        let (reparsed, n) = Frame::parse(&again).unwrap().unwrap();
        assert_eq!(n, again.len());
        // Target and data survive; skipped metadata bytes and targets of End and
        // KeepAlive frames are not kept, by design.
        assert_eq!(reparsed.session_id, frame.session_id);
        assert_eq!(reparsed.data, frame.data);
        rest = &rest[used..];
    }
});
