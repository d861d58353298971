//! The client's ICMP probe reading what its ICMP socket received (an echo reply, with
//! or without an IPv4 header): no panic; a reply read is within the input; a request
//! built from the input is answered by its own bytes turned into a reply, and by no
//! other sequence number.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_client::probe::icmp::{EchoRequest, Family, parse_echo_reply};

fuzz_target!(|data: &[u8]| {
    for family in [Family::V4, Family::V6] {
        if let Some(reply) = parse_echo_reply(data, family) {
            assert!(reply.payload.len() + 8 <= data.len());
        }
        if data.len() >= 4 {
            let request = EchoRequest {
                identifier: u16::from_be_bytes([data[0], data[1]]),
                sequence: u16::from_be_bytes([data[2], data[3]]),
                payload: data[4..].to_vec(),
            };
            let mut reply = request.encode(family);
            reply[0] = match family {
                Family::V4 => 0,
                Family::V6 => 129,
            };
            assert!(request.is_answered_by(&reply, family));
            reply[7] ^= 1;
            assert!(!request.is_answered_by(&reply, family));
        }
    }
});
