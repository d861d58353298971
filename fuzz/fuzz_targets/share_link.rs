//! Share links and subscription bodies on arbitrary text: no panic; a link that
//! parses writes a link that parses to the same entry (what a link carries
//! round-trips), and a subscription that parses renders sing-box, Clash and Xray
//! configs.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_proto::share::{parse_link, parse_subscription, subscription_base64, to_link};
use switchyard_proto::singbox::{SingBoxOptions, client_config};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(entry) = parse_link(text) {
        assert_eq!(parse_link(&to_link(&entry)), Ok(entry));
    }
    if let Ok(entries) = parse_subscription(text) {
        assert_eq!(
            parse_subscription(&subscription_base64(&entries)),
            Ok(entries.clone())
        );
        let _ = client_config(&entries, &SingBoxOptions::default());
        let _ = switchyard_proto::clash::client_config(&entries, &Default::default());
        let _ = switchyard_proto::xray::client_configs(&entries, &Default::default());
    }
});
