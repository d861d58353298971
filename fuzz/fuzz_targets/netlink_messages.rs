//! The client's network watch reading a netlink datagram from the kernel: no panic,
//! and the changes counted never exceed the messages a datagram of this size can hold.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_client::network::rtnetlink_changes;

fuzz_target!(|data: &[u8]| {
    if let Ok(changes) = rtnetlink_changes(data) {
        assert!(changes <= data.len() / 16);
    }
});
