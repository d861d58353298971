//! Operators' templates (JSON and YAML, read by the panel from its API) on arbitrary
//! text: no panic, what reads is a mapping, and putting the panel's config in it
//! works whatever the template holds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::json;
use switchyard_proto::template::{clash, parse_json, parse_yaml, singbox, xray};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let ours =
        json!({"outbounds": [{"tag": "proxy"}], "proxies": [], "proxy-groups": [], "remarks": "x"});
    for parsed in [parse_json(text), parse_yaml(text)] {
        if let Ok(t) = parsed {
            assert!(t.is_object());
            let _ = singbox(&t, &ours, "G");
            let _ = clash(&t, &ours, "G");
            let _ = xray(&t, &ours);
        }
    }
});
