//! Every SOCKS5 message parser on arbitrary bytes, and a whole server-side exchange
//! (greeting, credentials, request) read in sequence: no panic, sane consumed counts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_proto::socks5::{Credentials, Greeting, Request, UdpPacket};

fuzz_target!(|data: &[u8]| {
    let _ = Credentials::parse(data);
    let _ = Request::parse(data);
    if let Ok(packet) = UdpPacket::parse(data) {
        let mut again = Vec::new();
        packet.encode(&mut again);
        assert_eq!(UdpPacket::parse(&again), Ok(packet));
    }
    let mut rest = data;
    let Ok(Some((greeting, used))) = Greeting::parse(rest) else {
        return;
    };
    assert!(used <= rest.len());
    rest = &rest[used..];
    if greeting.select(true) == switchyard_proto::socks5::METHOD_USER_PASS {
        let Ok(Some((_, used))) = Credentials::parse(rest) else {
            return;
        };
        assert!(used <= rest.len());
        rest = &rest[used..];
    }
    if let Ok(Some((request, used))) = Request::parse(rest) {
        assert!(used <= rest.len());
        let mut again = Vec::new();
        request.encode(&mut again);
        assert_eq!(Request::parse(&again), Ok(Some((request, again.len()))));
    }
});
