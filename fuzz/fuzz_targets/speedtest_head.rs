//! The client's speed test reading a server's response head (through `httparse`):
//! no panic whatever the bytes, a head never longer than what came, and a prefix of
//! a whole head is never an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_client::speedtest::{MAX_HEAD, response_head};

fuzz_target!(|data: &[u8]| {
    if let Ok(Some(len)) = response_head(data) {
        assert!(len <= data.len());
        if len > MAX_HEAD {
            return;
        }
        for cut in [len / 2, len.saturating_sub(1)] {
            assert!(
                response_head(&data[..cut]).is_ok(),
                "a prefix of a 2xx head"
            );
        }
    }
});
