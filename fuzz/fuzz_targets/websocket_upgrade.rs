//! WebSocket upgrade heads from arbitrary bytes, under each early-data setting: no
//! panic, a consumed count within the head bound, and a response for every accepted one.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_proto::websocket::{EarlyData, MAX_HEAD_LEN, UpgradeConfig, parse_upgrade};

fuzz_target!(|data: &[u8]| {
    let configs = [
        EarlyData::Off,
        EarlyData::Header("Sec-WebSocket-Protocol".into()),
        EarlyData::PathSuffix,
    ];
    for early_data in configs {
        let config = UpgradeConfig {
            path: "/ws".into(),
            host: Some("example.com".into()),
            early_data,
        };
        if let Ok(Some((request, used))) = parse_upgrade(data, &config) {
            assert!(used <= data.len().min(MAX_HEAD_LEN));
            let mut response = Vec::new();
            request.encode_response(&mut response);
            assert!(response.ends_with(b"\r\n\r\n"));
        }
    }
});
