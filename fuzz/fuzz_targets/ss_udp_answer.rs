//! The client opening a Shadowsocks 2022 server's UDP answers
//! (`switchyard_proto::shadowsocks::udp_client::UdpOpener`): the fuzz bytes as a raw
//! packet (a typed error, never a panic), and as a decrypted body sealed under our
//! key, which opens to what `parse_server_body` says of it, for both method families.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_proto::shadowsocks::keys::ClientKeys;
use switchyard_proto::shadowsocks::udp_client::{ServerSealing, UdpOpener, parse_server_body};
use switchyard_proto::shadowsocks::{Method, PacketError};

const NOW: u64 = 1_764_000_000;
const SESSION: u64 = 0x1122_3344_5566_7788;

fuzz_target!(|data: &[u8]| {
    let mut body = data.to_vec();
    // Half the inputs answer our session at the right time, so they get further.
    if body.len() >= 17 && body[0] & 2 == 0 {
        body[1..9].copy_from_slice(&NOW.to_be_bytes());
        body[9..17].copy_from_slice(&SESSION.to_be_bytes());
    }
    let want = parse_server_body(&body, NOW, SESSION).map(|(a, p)| (a, p.to_vec()));
    for method in [Method::Aes128Gcm, Method::Chacha20Poly1305] {
        let key = vec![6; method.key_len()];
        let keys = ClientKeys::from_parts(method, vec![], key.clone());
        let mut opener = UdpOpener::new(&keys, SESSION).unwrap();
        let _ = opener.open(&mut data.to_vec(), NOW);

        let mut packet = Vec::new();
        ServerSealing {
            method,
            key: &key,
            session_id: 5,
            packet_id: 1,
            nonce: [8; 24],
        }
        .seal_body(&body, &mut packet)
        .unwrap();
        let got = opener
            .open(&mut packet, NOW)
            .map(|p| (p.source, p.payload.to_vec()));
        match (&want, got) {
            (Ok(w), Ok(g)) => assert_eq!(w, &g),
            (Err(PacketError::TooShort { .. }), Err(PacketError::TooShort { .. })) => {}
            (Err(w), Err(g)) => assert_eq!(w, &g),
            (w, g) => panic!("{method:?}: parsed {w:?}, opened {g:?}"),
        }
    }
});
