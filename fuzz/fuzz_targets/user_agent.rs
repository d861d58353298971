//! The panel's reading of a subscription request's User-Agent and `?format=` on
//! arbitrary text: no panic, and the same text always picks the same format (with
//! the built-in table, and with an operator rule whose `since` is the text itself).
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_panel::subscription::agents::{AgentRule, Format, format_for};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (ua, since) = text.split_once('\n').unwrap_or((text, "1.0"));
    let rules = [AgentRule {
        app: "fuzz".into(),
        prefix: Some("fuzz/".into()),
        contains: None,
        format: Format::Xray,
        since: Some(since.to_owned()),
        older: Some(Format::Clash),
        lacks: Vec::new(),
        runs: Vec::new(),
    }];
    assert_eq!(format_for(ua, &[]), format_for(ua, &[]));
    let picked = format_for(&format!("fuzz/{ua}"), &rules);
    assert!(matches!(picked, Format::Xray | Format::Clash));
    let _ = Format::parse(ua);
});
