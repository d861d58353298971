//! The messages of an upgrade's handover (`switchyard_channel::handover`), as the
//! other process's packets: no panic, and whatever decodes encodes back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_channel::handover::Message;

fuzz_target!(|data: &[u8]| {
    if let Ok(message) = Message::decode(data) {
        let packet = message.encode().expect("a decoded message encodes");
        assert_eq!(Message::decode(&packet), Ok(message));
    }
});
