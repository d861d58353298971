use bytes::BytesMut;
use proptest::prelude::*;
use shadowsocks::config::{ServerType, ServerUser, ServerUserManager};
use shadowsocks::context::Context;
use shadowsocks::relay::socks5::Address as SsAddress;
use shadowsocks::relay::udprelay::crypto_io::{decrypt_client_payload, encrypt_server_payload};
use shadowsocks::relay::udprelay::options::UdpSocketControlData;

use super::*;
use crate::shadowsocks::{Header, open_chacha};

const NOW: u64 = 1_764_000_000;
const CLIENT_SESSION: u64 = 0x0102_0304_0506_0708;

fn key(method: Method, fill: u8) -> Vec<u8> {
    vec![fill; method.key_len()]
}

fn methods() -> [Method; 3] {
    [
        Method::Aes128Gcm,
        Method::Aes256Gcm,
        Method::Chacha20Poly1305,
    ]
}

#[allow(
    clippy::disallowed_methods,
    reason = "a Shadowsocks header carries the wall clock; the real peers check it"
)]
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Single-user keys, and (AES) keys with the server key as identity key.
fn key_sets(method: Method) -> Vec<ClientKeys> {
    let mut sets = vec![ClientKeys::from_parts(method, vec![], key(method, 1))];
    if method.has_identity() {
        sets.push(ClientKeys::from_parts(
            method,
            vec![key(method, 1)],
            key(method, 2),
        ));
    }
    sets
}

#[test]
fn our_packets_open_with_the_nodes_decoder() {
    let to = Address::domain("example.org", 53).unwrap();
    for method in methods() {
        for keys in key_sets(method) {
            let multi = !keys.identities().is_empty();
            let mut sealer = UdpSealer::new(keys.clone(), CLIENT_SESSION).unwrap();
            for packet_id in 0..3u64 {
                let mut packet = Vec::new();
                sealer
                    .seal(&to, b"query", NOW, 4, &[packet_id as u8; 24], &mut packet)
                    .unwrap();
                let opened = if method.has_identity() {
                    let header = Header::read(method, keys.first(), &packet, multi).unwrap();
                    if multi {
                        assert_eq!(
                            header.identity.unwrap(),
                            blake3::hash(keys.user()).as_bytes()[..16]
                        );
                    }
                    let cipher = method.cipher(keys.user(), header.session_id);
                    header.open(&cipher, &mut packet, NOW).unwrap()
                } else {
                    open_chacha(&method.cipher(keys.user(), 0), &mut packet, NOW).unwrap()
                };
                assert_eq!(opened.session_id, CLIENT_SESSION);
                assert_eq!(opened.packet_id, packet_id);
                assert_eq!(opened.address, to);
                assert_eq!(opened.payload, b"query");
            }
        }
    }
}

#[test]
fn our_packets_open_with_the_shadowsocks_crate() {
    let context = Context::new(ServerType::Server);
    let to = Address::Ip("127.0.0.1:5353".parse().unwrap());
    // The crate caches session ciphers by the key's address, which a freed key's
    // successor may reuse: a session id of its own per case keeps them apart.
    let mut session = CLIENT_SESSION;
    for method in methods() {
        for keys in key_sets(method) {
            let multi = !keys.identities().is_empty();
            let mut manager = ServerUserManager::new();
            manager.add_user(ServerUser::new("alice", keys.user().to_vec()));
            session += 1;
            let mut sealer = UdpSealer::new(keys.clone(), session).unwrap();
            let mut packet = Vec::new();
            sealer
                .seal(&to, b"ping", unix_now(), 0, &[3; 24], &mut packet)
                .unwrap();
            let (len, addr, control) = decrypt_client_payload(
                &context,
                method.kind(),
                keys.first(),
                &mut packet,
                multi.then_some(&manager),
            )
            .unwrap_or_else(|e| panic!("{method:?} multi {multi}: {e}"));
            assert_eq!(&packet[..len], b"ping");
            assert_eq!(
                addr,
                SsAddress::SocketAddress("127.0.0.1:5353".parse().unwrap())
            );
            assert_eq!(control.unwrap().client_session_id, session);
        }
    }
}

/// The node answers through the `shadowsocks` crate: we open what it seals.
#[test]
fn we_open_the_crates_answers() {
    let context = Context::new(ServerType::Server);
    let from: std::net::SocketAddr = "192.0.2.7:53".parse().unwrap();
    for method in methods() {
        for keys in key_sets(method) {
            let mut opener = UdpOpener::new(&keys, CLIENT_SESSION).unwrap();
            for (packet_id, payload) in [(0u64, &b"answer"[..]), (1, &[7u8; 1400][..]), (2, b"")] {
                let mut control = UdpSocketControlData::default();
                control.client_session_id = CLIENT_SESSION;
                control.server_session_id = 0xfeed;
                control.packet_id = packet_id;
                let mut out = BytesMut::new();
                encrypt_server_payload(
                    &context,
                    method.kind(),
                    keys.user(),
                    &SsAddress::SocketAddress(from),
                    &control,
                    payload,
                    &mut out,
                );
                let mut packet = out.to_vec();
                let opened = opener
                    .open(&mut packet, unix_now())
                    .unwrap_or_else(|e| panic!("{method:?}: {e}"));
                assert_eq!(opened.session_id, 0xfeed);
                assert_eq!(opened.packet_id, packet_id);
                assert_eq!(opened.source, Address::Ip(from));
                assert_eq!(opened.payload, payload);
            }
        }
    }
}

fn sealed(method: Method, key: &[u8], session: u64, packet_id: u64, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    ServerSealing {
        method,
        key,
        session_id: session,
        packet_id,
        nonce: [packet_id as u8; 24],
    }
    .seal_body(body, &mut out)
    .unwrap();
    out
}

fn body(now: u64, client: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let source = Address::Ip("192.0.2.1:53".parse().unwrap());
    encode_server_body(now, client, 2, &source, payload, &mut out);
    out
}

#[test]
fn every_bad_answer_is_refused_by_name() {
    for method in methods() {
        let k = key(method, 1);
        let keys = ClientKeys::from_parts(method, vec![], k.clone());
        let mut opener = UdpOpener::new(&keys, CLIENT_SESSION).unwrap();
        let mut open = |mut packet: Vec<u8>| opener.open(&mut packet, NOW).map(|p| p.packet_id);
        assert_eq!(
            open(sealed(method, &k, 9, 0, &body(NOW, CLIENT_SESSION, b"a"))),
            Ok(0)
        );
        assert_eq!(
            open(sealed(method, &k, 9, 0, &body(NOW, CLIENT_SESSION, b"a"))),
            Err(PacketError::Replayed(0))
        );
        assert_eq!(
            open(sealed(method, &k, 9, 1, &body(NOW, 77, b"a"))),
            Err(PacketError::OtherSession(77))
        );
        assert_eq!(
            open(sealed(
                method,
                &k,
                9,
                2,
                &body(NOW - 31, CLIENT_SESSION, b"a")
            )),
            Err(PacketError::Timestamp {
                sent: NOW - 31,
                now: NOW
            })
        );
        let mut client_type = body(NOW, CLIENT_SESSION, b"a");
        client_type[0] = 0;
        assert_eq!(
            open(sealed(method, &k, 9, 3, &client_type)),
            Err(PacketError::NotServer(0))
        );
        let mut padding = body(NOW, CLIENT_SESSION, b"");
        padding[17..19].copy_from_slice(&500u16.to_be_bytes());
        assert_eq!(
            open(sealed(method, &k, 9, 4, &padding)),
            Err(PacketError::Padding(500))
        );
        let mut cut = body(NOW, CLIENT_SESSION, b"");
        cut.truncate(cut.len() - 1);
        assert_eq!(
            open(sealed(method, &k, 9, 5, &cut)),
            Err(PacketError::TruncatedAddress)
        );
        let mut tampered = sealed(method, &k, 9, 6, &body(NOW, CLIENT_SESSION, b"a"));
        *tampered.last_mut().unwrap() ^= 1;
        assert_eq!(open(tampered), Err(PacketError::Decrypt));
        let other = key(method, 5);
        assert_eq!(
            open(sealed(
                method,
                &other,
                9,
                7,
                &body(NOW, CLIENT_SESSION, b"a")
            )),
            Err(PacketError::Decrypt)
        );
        assert!(matches!(
            open(vec![0; 20]),
            Err(PacketError::TooShort { got: 20, .. })
        ));
        // The refused ids were not recorded: the real ones still pass.
        assert_eq!(
            open(sealed(method, &k, 9, 1, &body(NOW, CLIENT_SESSION, b"a"))),
            Ok(1)
        );
    }
}

#[test]
fn the_newest_server_sessions_are_kept_and_the_oldest_forgotten() {
    let method = Method::Aes128Gcm;
    let k = key(method, 1);
    let keys = ClientKeys::from_parts(method, vec![], k.clone());
    let mut opener = UdpOpener::new(&keys, CLIENT_SESSION).unwrap();
    let mut open = |session, id| {
        let mut packet = sealed(method, &k, session, id, &body(NOW, CLIENT_SESSION, b"x"));
        opener.open(&mut packet, NOW).map(|p| p.session_id)
    };
    for session in 0..MAX_SERVER_SESSIONS as u64 {
        assert_eq!(open(session, 0), Ok(session));
    }
    // Session 0 is used again, so session 1 is the oldest when a new one comes.
    assert_eq!(open(0, 1), Ok(0));
    assert_eq!(open(100, 0), Ok(100));
    assert_eq!(open(0, 1), Err(PacketError::Replayed(1)));
    // Session 1 was forgotten: its old id passes again (its window is gone).
    assert_eq!(open(1, 0), Ok(1));
}

#[test]
fn bad_keys_are_refused_before_any_packet() {
    let keys = ClientKeys::from_parts(Method::Aes256Gcm, vec![], vec![1; 16]);
    assert_eq!(
        UdpSealer::new(keys.clone(), 1).map(drop),
        Err(PacketError::KeyLength)
    );
    assert_eq!(
        UdpOpener::new(&keys, 1).map(drop),
        Err(PacketError::KeyLength)
    );
    let keys = ClientKeys::from_parts(Method::Aes256Gcm, vec![vec![1; 3]], vec![1; 32]);
    assert_eq!(
        UdpSealer::new(keys, 1).map(drop),
        Err(PacketError::KeyLength)
    );
}

proptest! {
    /// Any bytes as an answer: a typed error, never a panic.
    #[test]
    fn arbitrary_answers_never_panic(mut packet in crate::testing::bytes(512)) {
        for method in methods() {
            let keys = ClientKeys::from_parts(method, vec![], key(method, 1));
            let mut opener = UdpOpener::new(&keys, CLIENT_SESSION).unwrap();
            let _ = opener.open(&mut packet.clone(), NOW);
        }
        packet.clear();
    }

    /// Any body, sealed: the opener says what `parse_server_body` says of it.
    #[test]
    fn sealed_bodies_open_as_parsed(body in crate::testing::bytes(256)) {
        for method in methods() {
            let k = key(method, 1);
            let keys = ClientKeys::from_parts(method, vec![], k.clone());
            let mut opener = UdpOpener::new(&keys, CLIENT_SESSION).unwrap();
            let want = parse_server_body(&body, NOW, CLIENT_SESSION).map(|(a, p)| (a, p.to_vec()));
            let got = opener
                .open(&mut sealed(method, &k, 1, 1, &body), NOW)
                .map(|p| (p.source, p.payload.to_vec()));
            match (want, got) {
                (Ok(w), Ok(g)) => prop_assert_eq!(w, g),
                (Err(PacketError::TooShort { .. }), Err(PacketError::TooShort { .. })) => {}
                (Err(w), Err(g)) => prop_assert_eq!(w, g),
                (w, g) => prop_assert!(false, "{:?}: parsed {:?}, opened {:?}", method, w, g),
            }
        }
    }

    /// Any address and payload make the round trip through our sealer and the node's
    /// decoder.
    #[test]
    fn any_datagram_round_trips(to in crate::testing::address(), payload in crate::testing::bytes(1500), padding in 0u16..64) {
        for method in methods() {
            for keys in key_sets(method) {
                let multi = !keys.identities().is_empty();
                let mut sealer = UdpSealer::new(keys.clone(), 42).unwrap();
                let mut packet = Vec::new();
                sealer.seal(&to, &payload, NOW, padding, &[1; 24], &mut packet).unwrap();
                let opened = if method.has_identity() {
                    let header = Header::read(method, keys.first(), &packet, multi).unwrap();
                    header.open(&method.cipher(keys.user(), 42), &mut packet, NOW).unwrap()
                } else {
                    open_chacha(&method.cipher(keys.user(), 0), &mut packet, NOW).unwrap()
                };
                prop_assert_eq!(&opened.address, &to);
                prop_assert_eq!(opened.payload, &payload[..]);
            }
        }
    }
}
