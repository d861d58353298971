use std::sync::Arc;

use proptest::prelude::*;
use shadowsocks::config::{ServerType, ServerUser, ServerUserManager};
use shadowsocks::context::Context;
use shadowsocks::relay::socks5::Address as SsAddress;
use shadowsocks::relay::tcprelay::ProxyServerStream;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::shadowsocks::keys::{ClientKeys, KeyError};

const NOW: u64 = 1_764_000_000;

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

/// Bytes that differ from one place to the next.
fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 31 % 251) as u8).collect()
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

/// Reads the whole response in `wire` (any split), the payloads concatenated.
fn open_all(opener: &mut Opener, wire: &[u8], now: u64, split: usize) -> Result<Vec<u8>, TcpError> {
    let mut buf = Vec::new();
    let mut out = Vec::new();
    for piece in wire.chunks(split.max(1)) {
        buf.extend_from_slice(piece);
        loop {
            let wants = opener.wants();
            let Some(chunk) = opener.open(&mut buf, now)? else {
                break;
            };
            assert_eq!(chunk.consumed, wants, "a step takes what it said it wants");
            out.extend_from_slice(&buf[chunk.payload.clone()]);
            buf.drain(..chunk.consumed);
        }
    }
    assert!(buf.is_empty(), "{} bytes left over", buf.len());
    Ok(out)
}

/// The client's request to the `shadowsocks` crate's server (what the node runs),
/// single-user and with an identity header, and its answer back, for every method.
#[tokio::test]
async fn the_crates_server_reads_our_request_and_we_read_its_answer() {
    let to = Address::domain("example.org", 443).unwrap();
    for method in methods() {
        for multi in [false, true] {
            if multi && !method.has_identity() {
                continue;
            }
            let (server_key, user_key) = (key(method, 1), key(method, 2));
            let keys = if multi {
                ClientKeys::from_parts(method, vec![server_key.clone()], user_key.clone())
            } else {
                ClientKeys::from_parts(method, vec![], server_key.clone())
            };
            let salt = key(method, 0x5a);
            let mut head = Vec::new();
            let (mut sealer, mut opener) = request(
                &keys,
                &salt,
                &Request {
                    destination: &to,
                    padding: 17,
                    payload: b"hello ",
                    now: unix_now(),
                },
                &mut head,
            )
            .unwrap();
            sealer.seal(b"world", &mut head);
            let big = pattern(200_000);
            sealer.seal(&big, &mut head);

            let (client, server) = tokio::io::duplex(1 << 20);
            let context = Context::new_shared(ServerType::Server);
            let manager = multi.then(|| {
                let mut m = ServerUserManager::new();
                m.add_user(ServerUser::new("alice", user_key.clone()));
                Arc::new(m)
            });
            let mut stream = ProxyServerStream::from_stream_with_user_manager(
                context,
                server,
                method.kind(),
                &server_key,
                manager,
            );
            let mut client = client;
            client.write_all(&head).await.unwrap();
            let target = stream.handshake().await.unwrap();
            assert_eq!(
                target,
                SsAddress::DomainNameAddress("example.org".into(), 443)
            );
            let mut got = vec![0u8; 11 + big.len()];
            stream.read_exact(&mut got).await.unwrap();
            assert_eq!(&got[..11], b"hello world");
            assert_eq!(&got[11..], &big[..], "{method:?} multi {multi}");

            let answer = pattern(150_000);
            stream.write_all(&answer).await.unwrap();
            stream.flush().await.unwrap();
            drop(stream);
            let mut wire = Vec::new();
            client.read_to_end(&mut wire).await.unwrap();
            let back = open_all(&mut opener, &wire, unix_now(), 4096).unwrap();
            assert_eq!(back, answer, "{method:?} multi {multi}");
            assert!(opener.at_boundary());
        }
    }
}

fn pair(method: Method) -> (ClientKeys, Vec<u8>, Opener) {
    let keys = ClientKeys::from_parts(method, vec![], key(method, 3));
    let salt = key(method, 0x11);
    let to = Address::Ip("127.0.0.1:80".parse().unwrap());
    let (_, opener) = request(
        &keys,
        &salt,
        &Request {
            destination: &to,
            padding: 1,
            payload: b"",
            now: NOW,
        },
        &mut Vec::new(),
    )
    .unwrap();
    (keys, salt, opener)
}

fn response<'a>(method: Method, key: &'a [u8], request_salt: &'a [u8]) -> Response<'a> {
    Response {
        method,
        key,
        salt: &[0x77; 32][..method.key_len()],
        request_salt,
        kind: 1,
        now: NOW,
    }
}

#[test]
fn every_prefix_is_incomplete_and_leaves_the_buffer_alone() {
    for method in methods() {
        let (keys, salt, opener) = pair(method);
        let mut wire = Vec::new();
        let mut sealer = response(method, keys.user(), &salt)
            .seal(b"first", &mut wire)
            .unwrap();
        sealer.seal(b"second", &mut wire);
        for split in 1..wire.len() {
            let mut o = clone(&opener);
            assert_eq!(open_all(&mut o, &wire, NOW, split).unwrap(), b"firstsecond");
        }
        for end in 0..opener.header_len() {
            let mut o = clone(&opener);
            let mut buf = wire[..end].to_vec();
            assert_eq!(o.open(&mut buf, NOW), Ok(None));
            assert_eq!(buf, wire[..end]);
        }
    }
}

/// A fresh opener in the same state (openers hold a cipher, so no `Clone`).
fn clone(o: &Opener) -> Opener {
    Opener {
        method: o.method,
        key: o.key.clone(),
        request_salt: o.request_salt.clone(),
        cipher: None,
        next: Next::Header,
    }
}

#[test]
fn a_bad_response_header_is_refused_by_name_and_the_error_sticks() {
    let method = Method::Aes128Gcm;
    let (keys, salt, opener) = pair(method);
    let cases: Vec<(Response<'_>, TcpError)> = vec![
        (
            Response {
                kind: 0,
                ..response(method, keys.user(), &salt)
            },
            TcpError::Type(0),
        ),
        (
            Response {
                now: NOW - 31,
                ..response(method, keys.user(), &salt)
            },
            TcpError::Timestamp {
                sent: NOW - 31,
                now: NOW,
            },
        ),
        (
            Response {
                request_salt: &[0x12; 16],
                ..response(method, keys.user(), &salt)
            },
            TcpError::RequestSalt,
        ),
        (
            response(method, &[9; 16], &salt),
            TcpError::Decrypt("response header"),
        ),
    ];
    for (r, want) in cases {
        let mut wire = Vec::new();
        r.seal(b"x", &mut wire).unwrap();
        let mut o = clone(&opener);
        assert_eq!(o.open(&mut wire.clone(), NOW), Err(want.clone()));
        assert_eq!(o.open(&mut wire, NOW), Err(want));
        assert_eq!(o.wants(), 0, "a failed stream wants nothing more");
    }
    // 30 s either way is still fine.
    for now in [NOW - 30, NOW + 30] {
        let mut wire = Vec::new();
        response(method, keys.user(), &salt)
            .seal(b"x", &mut wire)
            .unwrap();
        assert_eq!(open_all(&mut clone(&opener), &wire, now, 64).unwrap(), b"x");
    }
}

#[test]
fn a_tampered_chunk_is_refused() {
    let method = Method::Aes256Gcm;
    let (keys, salt, opener) = pair(method);
    let mut wire = Vec::new();
    let mut sealer = response(method, keys.user(), &salt)
        .seal(b"first", &mut wire)
        .unwrap();
    let first_len = wire.len();
    sealer.seal(b"second", &mut wire);
    let mut length = wire.clone();
    length[first_len] ^= 1;
    assert_eq!(
        open_all(&mut clone(&opener), &length, NOW, 4096),
        Err(TcpError::Decrypt("length chunk"))
    );
    let mut payload = wire.clone();
    *payload.last_mut().unwrap() ^= 1;
    assert_eq!(
        open_all(&mut clone(&opener), &payload, NOW, 4096),
        Err(TcpError::Decrypt("payload chunk"))
    );
    let mut first = wire;
    first[first_len - 1] ^= 1;
    assert_eq!(
        open_all(&mut clone(&opener), &first, NOW, 4096),
        Err(TcpError::Decrypt("payload chunk"))
    );
}

#[test]
fn requests_that_cannot_be_made_are_refused() {
    let method = Method::Aes128Gcm;
    let keys = ClientKeys::from_parts(method, vec![], key(method, 3));
    let to = Address::Ip("127.0.0.1:80".parse().unwrap());
    let req = |padding, payload| Request {
        destination: &to,
        padding,
        payload,
        now: NOW,
    };
    let mut out = Vec::new();
    assert_eq!(
        request(&keys, &[0; 32], &req(1, b""), &mut out).map(drop),
        Err(TcpError::SaltLength { got: 32, want: 16 })
    );
    assert_eq!(
        request(&keys, &[0; 16], &req(0, b""), &mut out).map(drop),
        Err(TcpError::NoPadding)
    );
    let big = vec![0u8; MAX_CHUNK];
    assert_eq!(
        request(&keys, &[0; 16], &req(0, &big), &mut out).map(drop),
        Err(TcpError::HeaderTooLarge(7 + 2 + MAX_CHUNK))
    );
    let short = ClientKeys::from_parts(method, vec![], vec![1; 5]);
    assert_eq!(
        request(&short, &[0; 16], &req(1, b""), &mut out).map(drop),
        Err(TcpError::KeyLength)
    );
    assert!(out.is_empty(), "{} bytes written", out.len());
}

/// Identity headers chain: each decrypts, under its layer's subkey, to the hash of
/// the next key, the last to the user's.
#[test]
fn identity_headers_name_the_next_key_at_every_layer() {
    use aes::cipher::{BlockDecrypt, KeyInit};
    let method = Method::Aes256Gcm;
    let (i0, i1, user) = (key(method, 1), key(method, 2), key(method, 3));
    let keys = ClientKeys::from_parts(method, vec![i0.clone(), i1.clone()], user.clone());
    let salt = key(method, 9);
    let to = Address::Ip("127.0.0.1:80".parse().unwrap());
    let mut out = Vec::new();
    request(
        &keys,
        &salt,
        &Request {
            destination: &to,
            padding: 3,
            payload: b"",
            now: NOW,
        },
        &mut out,
    )
    .unwrap();
    for (layer, (ipsk, next)) in [(&i0, &i1), (&i1, &user)].into_iter().enumerate() {
        let subkey = blake3::derive_key(IDENTITY_SUBKEY, &[ipsk.as_slice(), &salt].concat());
        let at = 32 + 16 * layer;
        let mut block = aes::Block::clone_from_slice(&out[at..at + 16]);
        aes::Aes256::new_from_slice(&subkey)
            .unwrap()
            .decrypt_block(&mut block);
        assert_eq!(
            block[..],
            blake3::hash(next).as_bytes()[..16],
            "layer {layer}"
        );
    }
}

#[test]
fn passwords_are_read_into_keys_or_refused_by_name() {
    use base64_text as b64;
    let k16 = b64(&[1; 16]);
    let k32 = b64(&[2; 32]);
    let keys = ClientKeys::parse(Method::Aes128Gcm, &k16).unwrap();
    assert!(keys.identities().is_empty());
    assert_eq!(keys.user(), [1; 16]);
    let keys = ClientKeys::parse(Method::Aes128Gcm, &format!("{k16}:{}", b64(&[3; 16]))).unwrap();
    assert_eq!(keys.identities(), [vec![1; 16]]);
    assert_eq!(keys.user(), [3; 16]);
    assert_eq!(keys.first(), [1; 16]);
    // ChaCha has no identity headers: the user's key alone.
    let keys = ClientKeys::parse(
        Method::Chacha20Poly1305,
        &format!("{k32}:{}", b64(&[5; 32])),
    )
    .unwrap();
    assert!(keys.identities().is_empty());
    assert_eq!(keys.user(), [5; 32]);
    assert_eq!(
        ClientKeys::parse(Method::Aes256Gcm, &k16),
        Err(KeyError::Length {
            index: 1,
            got: 16,
            want: 32,
            method: "2022-blake3-aes-256-gcm"
        })
    );
    assert_eq!(
        ClientKeys::parse(Method::Aes128Gcm, &format!("{k16}:not base64!")),
        Err(KeyError::Base64(2))
    );
    assert_eq!(
        ClientKeys::parse(Method::Aes128Gcm, ""),
        Err(KeyError::Base64(1))
    );
    let six = [k16.as_str(); 6].join(":");
    assert_eq!(
        ClientKeys::parse(Method::Aes128Gcm, &six),
        Err(KeyError::TooManyIdentities(5))
    );
    let debug = format!("{:?}", ClientKeys::parse(Method::Aes128Gcm, &k16).unwrap());
    assert!(!debug.contains("[1, 1"), "{debug}");
    assert_eq!(
        Method::from_name("2022-blake3-aes-256-gcm"),
        Some(Method::Aes256Gcm)
    );
    assert_eq!(Method::from_name("aes-256-gcm"), None);
}

fn base64_text(key: &[u8]) -> String {
    crate::base64::encode_standard(key)
}

proptest! {
    /// Whatever a server sends, the opener gives payloads or a typed error, never a
    /// panic, and never more bytes than it was given.
    #[test]
    fn arbitrary_bytes_never_panic(wire in crate::testing::bytes(2048), split in 1usize..64) {
        let (_, _, mut opener) = pair(Method::Aes128Gcm);
        let mut buf = Vec::new();
        for piece in wire.chunks(split) {
            buf.extend_from_slice(piece);
            match opener.open(&mut buf, NOW) {
                Ok(Some(chunk)) => {
                    prop_assert!(chunk.consumed <= buf.len());
                    prop_assert!(chunk.payload.end <= buf.len());
                    buf.drain(..chunk.consumed);
                }
                Ok(None) => {}
                Err(_) => break,
            }
        }
    }

    /// Whatever the payloads, they come back in order and whole, in any split.
    #[test]
    fn payloads_round_trip(
        first in crate::testing::bytes(300),
        rest in proptest::collection::vec(crate::testing::bytes(3000), 0..5),
        split in 1usize..5000,
    ) {
        let method = Method::Aes128Gcm;
        let (keys, salt, mut opener) = pair(method);
        let mut wire = Vec::new();
        let mut sealer = response(method, keys.user(), &salt).seal(&first, &mut wire).unwrap();
        let mut want = first.clone();
        for r in &rest {
            sealer.seal(r, &mut wire);
            want.extend_from_slice(r);
        }
        prop_assert_eq!(open_all(&mut opener, &wire, NOW, split).unwrap(), want);
    }
}

#[test]
fn a_chunk_sealed_in_place_is_what_seal_appends() {
    for method in methods() {
        let key = key(method, 5);
        let request_salt = key.clone();
        let answer = response(method, &key, &request_salt);
        let mut head = Vec::new();
        let mut appended = answer.seal(b"x", &mut head).unwrap();
        let mut laid = answer.seal(b"x", &mut Vec::new()).unwrap();
        for len in [1, 1000, MAX_CHUNK] {
            let payload = pattern(len);
            let mut want = Vec::new();
            appended.seal(&payload, &mut want);
            let mut chunk = vec![0u8; LENGTH_CHUNK + len + TAG_LEN];
            chunk[LENGTH_CHUNK..LENGTH_CHUNK + len].copy_from_slice(&payload);
            assert_eq!(laid.seal_laid_out(&mut chunk), Some(()));
            assert_eq!(chunk, want, "{method:?}, {len} bytes");
        }
        // Out of range: nothing sealed, the nonce not spent.
        assert_eq!(laid.seal_laid_out(&mut [0u8; LENGTH_CHUNK + TAG_LEN]), None);
        let too_long = LENGTH_CHUNK + MAX_CHUNK + 1 + TAG_LEN;
        assert_eq!(laid.seal_laid_out(&mut vec![0u8; too_long]), None);
        let (mut want, mut chunk) = (Vec::new(), vec![0u8; LENGTH_CHUNK + 3 + TAG_LEN]);
        appended.seal(&[0, 0, 0], &mut want);
        assert_eq!(laid.seal_laid_out(&mut chunk), Some(()));
        assert_eq!(chunk, want);
    }
}
