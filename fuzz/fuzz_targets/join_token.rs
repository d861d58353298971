//! Join tokens from arbitrary text: no panic, and whatever parses encodes back to the
//! same token.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_channel::JoinToken;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for candidate in [text.to_string(), format!("syj1.{text}")] {
        if let Ok(token) = JoinToken::parse(&candidate) {
            assert_eq!(JoinToken::parse(&token.encode()), Ok(token));
        }
    }
});
