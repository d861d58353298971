//! The client reading a subscription server's answer: the HTTP head (through
//! `httparse`), then the body as a sing-box config (serde_json), a Clash config
//! (`clash_yaml` fuzzes that reader alone) or share links. No panic whatever the
//! bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_client::subscription::parse_response;

fuzz_target!(|data: &[u8]| {
    if let Ok((_, body)) = parse_response(data) {
        assert!(body.len() <= data.len());
        let _ = switchyard_client::subscription::parse_body(&String::from_utf8_lossy(body));
    }
});
