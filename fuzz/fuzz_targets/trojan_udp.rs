//! A stream of Trojan UDP packets from arbitrary bytes: no panic, progress on every
//! packet, and each packet re-encodes to the bytes it was read from.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_proto::trojan::UdpPacket;

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    while let Ok(Some((packet, used))) = UdpPacket::parse(rest) {
        assert!(used > 0 && used <= rest.len());
        let mut again = Vec::new();
        packet.encode(&mut again).expect("a parsed payload fits");
        assert_eq!(UdpPacket::parse(&again), Ok(Some((packet, again.len()))));
        rest = &rest[used..];
    }
});
