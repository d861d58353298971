//! Hysteria 2's messages from arbitrary bytes: TCP requests and responses (a taken
//! count within the input, a request read again from its own encoding), UDP messages
//! (re-encoded and read back the same) through the reassembler, and Salamander
//! packets (deobfuscated, then obfuscated back to the same bytes). No panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_proto::hysteria2::{
    Defragger, SALT_LEN, Salamander, TcpRequest, TcpResponse, UdpMessage,
};

fuzz_target!(|data: &[u8]| {
    if let Ok(Some((request, used))) = TcpRequest::parse(data) {
        assert!(used <= data.len());
        let mut again = Vec::new();
        request.encode(&[], &mut again);
        let (read, _) = TcpRequest::parse(&again)
            .expect("our encoding parses")
            .expect("our encoding is whole");
        assert_eq!(read, request);
    }
    if let Ok(Some((_, used))) = TcpResponse::parse(data) {
        assert!(used <= data.len());
    }
    let mut defrag = Defragger::default();
    for datagram in data.chunks(97) {
        if let Ok(message) = UdpMessage::parse(datagram) {
            let mut again = Vec::new();
            message.encode(&mut again);
            assert_eq!(
                UdpMessage::parse(&again).expect("our encoding parses"),
                message
            );
            if let Some(whole) = defrag.feed(&message) {
                assert!(whole.len() <= switchyard_proto::hysteria2::MAX_UDP_PACKET);
            }
        }
    }
    let s = Salamander::new(b"fuzz");
    let mut packet = data.to_vec();
    if s.deobfuscate_in_place(&mut packet).is_ok() {
        let salt: [u8; SALT_LEN] = data[..SALT_LEN].try_into().expect("8 bytes");
        let mut back = Vec::new();
        s.obfuscate(salt, &packet[SALT_LEN..], &mut back);
        assert_eq!(back, data);
    }
});
