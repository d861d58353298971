use proptest::prelude::*;

use super::*;
use crate::testing::{address, bytes};

const NOW: u64 = 1_764_000_000;
const PSK16: [u8; 16] = [7; 16];
const PSK32: [u8; 32] = [9; 32];
const USER16: [u8; 16] = [3; 16];
const USER32: [u8; 32] = [4; 32];

fn sealing(method: Method) -> Sealing<'static> {
    let (psk, user): (&'static [u8], &'static [u8]) = match method {
        Method::Aes128Gcm => (&PSK16, &USER16),
        _ => (&PSK32, &USER32),
    };
    Sealing {
        method,
        psk,
        user_key: Some(user),
        session_id: 0x0102_0304_0506_0708,
        packet_id: 42,
        now: NOW,
        padding: 5,
        nonce: [0x55; 24],
    }
}

/// Opens `packet` as the node does: the header with the server key, then the body
/// with the user's key.
fn open(s: &Sealing<'_>, packet: &mut [u8], now: u64) -> Result<(Address, Vec<u8>), PacketError> {
    let key = s.user_key.unwrap_or(s.psk);
    let opened = if s.method.has_identity() {
        let header = Header::read(s.method, s.psk, packet, s.user_key.is_some())?;
        assert_eq!(header.session_id, s.session_id);
        assert_eq!(header.packet_id, s.packet_id);
        if let Some(identity) = header.identity {
            assert_eq!(identity, blake3::hash(key).as_bytes()[..16]);
        }
        header.open(&s.method.cipher(key, header.session_id), packet, now)?
    } else {
        open_chacha(&s.method.cipher(key, 0), packet, now)?
    };
    assert_eq!(opened.session_id, s.session_id);
    assert_eq!(opened.packet_id, s.packet_id);
    Ok((opened.address, opened.payload.to_vec()))
}

#[test]
fn every_method_round_trips_with_and_without_an_identity_header() {
    let to = Address::domain("example.org", 443).unwrap();
    for method in [
        Method::Aes128Gcm,
        Method::Aes256Gcm,
        Method::Chacha20Poly1305,
    ] {
        for user in [true, false] {
            let mut s = sealing(method);
            if !user {
                s.user_key = None;
            }
            let mut packet = Vec::new();
            s.seal(&to, b"hello", &mut packet).unwrap();
            let got = open(&s, &mut packet, NOW).unwrap();
            assert_eq!(
                got,
                (to.clone(), b"hello".to_vec()),
                "{method:?} user {user}"
            );
        }
    }
}

/// The packet that panics the `shadowsocks` crate's decoder: a domain whose length
/// byte equals the bytes left, so no room for the port.
#[test]
fn a_domain_without_room_for_its_port_is_an_error_not_a_panic() {
    for method in [Method::Aes256Gcm, Method::Chacha20Poly1305] {
        let s = sealing(method);
        let mut body = Vec::new();
        encode_body(
            NOW,
            0,
            &Address::Ip("1.1.1.1:1".parse().unwrap()),
            b"",
            &mut body,
        );
        body.truncate(BODY_FIXED);
        body.extend_from_slice(&[3, 4, b'a', b'b', b'c', b'd']);
        let mut packet = Vec::new();
        s.seal_body(&body, &mut packet).unwrap();
        assert_eq!(
            open(&s, &mut packet, NOW),
            Err(PacketError::TruncatedAddress)
        );
    }
}

#[test]
fn bad_destinations_padding_type_and_time_are_refused_by_name() {
    let s = sealing(Method::Aes128Gcm);
    let body_with = |edit: &dyn Fn(&mut Vec<u8>)| {
        let mut body = Vec::new();
        encode_body(
            NOW,
            0,
            &Address::Ip("1.1.1.1:1".parse().unwrap()),
            b"x",
            &mut body,
        );
        edit(&mut body);
        let mut packet = Vec::new();
        s.seal_body(&body, &mut packet).unwrap();
        open(&s, &mut packet, NOW)
    };
    fn domain(name: &'static [u8]) -> impl Fn(&mut Vec<u8>) {
        move |b: &mut Vec<u8>| {
            b.truncate(BODY_FIXED);
            b.push(3);
            b.push(name.len() as u8);
            b.extend_from_slice(name);
            b.extend_from_slice(&[0, 80]);
        }
    }
    assert_eq!(
        body_with(&domain("é.example".as_bytes())),
        Err(PacketError::Address(AddressError::InvalidDomainByte(0xc3)))
    );
    assert_eq!(
        body_with(&domain(b"")),
        Err(PacketError::Address(AddressError::EmptyDomain))
    );
    assert_eq!(body_with(&|b| b[0] = 1), Err(PacketError::Type(1)));
    assert_eq!(
        body_with(&|b| b[9..11].copy_from_slice(&500u16.to_be_bytes())),
        Err(PacketError::Padding(500))
    );
    assert_eq!(
        body_with(&|b| b[1..9].copy_from_slice(&(NOW - 31).to_be_bytes())),
        Err(PacketError::Timestamp {
            sent: NOW - 31,
            now: NOW
        })
    );
    assert!(body_with(&|b| b[1..9].copy_from_slice(&(NOW + 30).to_be_bytes())).is_ok());
    assert_eq!(
        body_with(&|b| b[10] = 0xff),
        Err(PacketError::Padding(0xff))
    );
}

#[test]
fn wrong_keys_and_tampering_do_not_authenticate() {
    for method in [Method::Aes256Gcm, Method::Chacha20Poly1305] {
        let s = sealing(method);
        let mut packet = Vec::new();
        s.seal(&Address::domain("a.b", 1).unwrap(), b"payload", &mut packet)
            .unwrap();
        let last = packet.len() - 1;
        let mut tampered = packet.clone();
        tampered[last] ^= 1;
        assert_eq!(open(&s, &mut tampered, NOW), Err(PacketError::Decrypt));
        let wrong = Sealing {
            user_key: Some(&PSK32),
            ..s.clone()
        };
        let got = if method.has_identity() {
            let header = Header::read(method, s.psk, &packet, true).unwrap();
            header.open(&method.cipher(&PSK32, header.session_id), &mut packet, NOW)
        } else {
            open_chacha(&method.cipher(&PSK32, 0), &mut packet, NOW)
        };
        assert_eq!(got.map(|_| ()), Err(PacketError::Decrypt), "{wrong:?}");
    }
}

#[test]
fn short_packets_name_the_smallest_length() {
    let header = Header::read(Method::Aes128Gcm, &PSK16, &[0; 10], true);
    assert_eq!(header, Err(PacketError::TooShort { need: 59, got: 10 }));
    let cipher = Method::Chacha20Poly1305.cipher(&PSK32, 0);
    assert_eq!(
        open_chacha(&cipher, &mut [0; 20], NOW).map(|_| ()),
        Err(PacketError::TooShort { need: 67, got: 20 })
    );
}

proptest! {
    /// Any decrypted body parses or fails by name, never panics, and a parsed payload
    /// is the body's tail.
    #[test]
    fn any_body_parses_or_fails_cleanly(body in bytes(400), now in any::<u64>()) {
        if let Ok((_, payload)) = parse_body(&body, now) {
            prop_assert!(body.ends_with(payload));
        }
    }

    /// Whatever a client sends under the right key opens to what it sent.
    #[test]
    fn sealed_packets_open_to_what_was_sealed(
        to in address(),
        payload in bytes(200),
        padding in 0u16..64,
        chacha in any::<bool>(),
    ) {
        let mut s = sealing(if chacha { Method::Chacha20Poly1305 } else { Method::Aes256Gcm });
        s.padding = padding;
        let mut packet = Vec::new();
        s.seal(&to, &payload, &mut packet).unwrap();
        prop_assert_eq!(open(&s, &mut packet, NOW), Ok((to, payload)));
    }

    /// Arbitrary bytes as a packet: an error, never a panic.
    #[test]
    fn arbitrary_packets_fail_cleanly(mut packet in bytes(200)) {
        let _ = Header::read(Method::Aes128Gcm, &PSK16, &packet, true)
            .and_then(|h| h.open(&Method::Aes128Gcm.cipher(&USER16, h.session_id), &mut packet.clone(), NOW).map(|_| ()));
        let _ = open_chacha(&Method::Chacha20Poly1305.cipher(&PSK32, 0), &mut packet, NOW);
    }
}
