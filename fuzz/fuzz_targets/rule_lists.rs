//! The panel's reading of the packages' lists (tor's `geoip`/`geoip6`, Adblock lists)
//! on arbitrary text: no panic, every network written is one the node's parser takes
//! back, every domain has a dot and no bad character.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_panel::rule_data::{adblock_domains, tor_geoip};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for ipv6 in [false, true] {
        for nets in tor_geoip(&text, ipv6, &["ru", "ir", "cn", "??"]).values() {
            for n in nets {
                assert!(switchyard_config::route::Cidr::parse(n).is_some(), "{n}");
            }
        }
    }
    for d in adblock_domains(&text) {
        assert!(d.contains('.') && !d.starts_with('.'), "{d}");
    }
});
