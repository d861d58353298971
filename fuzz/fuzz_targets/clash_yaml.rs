//! Clash (mihomo) configs on arbitrary text, as the client reads a subscription
//! body: no panic, work within the reader's bounds (size, depth, alias expansion);
//! what reads as entries writes a Clash config that reads back as as many entries,
//! none skipped, and renders sing-box and Xray configs.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_proto::clash::{self, ClashOptions, MAX_YAML};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(read) = clash::read(text) else {
        return;
    };
    for entry in &read.entries {
        assert!(entry.port != 0 && !entry.server.is_empty(), "{entry:?}");
    }
    let written = clash::client_config(&read.entries, &ClashOptions::default());
    if written.len() <= MAX_YAML {
        let again = clash::read(&written).expect("a written config reads");
        assert_eq!(again.entries.len(), read.entries.len());
        assert!(again.skipped.is_empty(), "{:?}", again.skipped);
    }
    let _ = switchyard_proto::singbox::client_config(&read.entries, &Default::default());
    let _ = switchyard_proto::xray::client_configs(&read.entries, &Default::default());
});
