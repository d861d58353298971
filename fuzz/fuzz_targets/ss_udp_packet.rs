//! Shadowsocks 2022 UDP client packets, the node's whole path: the fuzz bytes as a
//! decrypted body are sealed under known keys (so they pass the AEAD) and opened as
//! the node opens them, for both method families; the same bytes as a raw packet are
//! opened too. No panic, and a sealed body opens to what `parse_body` says of it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_proto::shadowsocks::{
    Header, Method, PacketError, Sealing, open_chacha, parse_body,
};

const NOW: u64 = 1_764_000_000;
const PSK: [u8; 32] = [9; 32];
const USER: [u8; 32] = [4; 32];

fuzz_target!(|data: &[u8]| {
    // The body's timestamp is the fuzzer's; make half the inputs current.
    let mut body = data.to_vec();
    if body.len() >= 9 && body[0] & 1 == 0 {
        body[1..9].copy_from_slice(&NOW.to_be_bytes());
    }
    let expected = parse_body(&body, NOW).map(|(a, p)| (a, p.to_vec()));
    for method in [Method::Aes256Gcm, Method::Chacha20Poly1305] {
        let sealing = Sealing {
            method,
            psk: &PSK,
            user_key: Some(&USER),
            session_id: 1,
            packet_id: 2,
            now: NOW,
            padding: 0,
            nonce: [7; 24],
        };
        let mut packet = Vec::new();
        sealing.seal_body(&body, &mut packet).unwrap();
        let opened = if method.has_identity() {
            Header::read(method, &PSK, &packet, true).and_then(|header| {
                header
                    .open(&method.cipher(&USER, header.session_id), &mut packet, NOW)
                    .map(|p| (p.address, p.payload.to_vec()))
            })
        } else {
            open_chacha(&method.cipher(&USER, 0), &mut packet, NOW)
                .map(|p| (p.address, p.payload.to_vec()))
        };
        match (&expected, opened) {
            (Ok(want), Ok(got)) => assert_eq!(want, &got),
            // A body shorter than its fixed part makes a packet shorter than the
            // smallest: both say "too short", with their own lengths.
            (Err(PacketError::TooShort { .. }), Err(PacketError::TooShort { .. })) => {}
            (Err(want), Err(got)) => assert_eq!(want, &got),
            (want, got) => panic!("{method:?}: parse_body {want:?}, opened {got:?}"),
        }
    }
    // The bytes as a raw packet: refused, never a panic.
    let mut raw = data.to_vec();
    if let Ok(header) = Header::read(Method::Aes128Gcm, &PSK[..16], &raw, true) {
        let _ = header.open(&Method::Aes128Gcm.cipher(&USER[..16], 0), &mut raw, NOW);
    }
    let _ = open_chacha(
        &Method::Chacha20Poly1305.cipher(&USER, 0),
        &mut data.to_vec(),
        NOW,
    );
});
