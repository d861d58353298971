use super::*;
use crate::shadowsocks::keys::ClientKeys;
use crate::shadowsocks::tcp::{self, Response};

const NOW: u64 = 1_800_000_000;

fn to() -> Address {
    Address::Domain("example.com".into(), 443)
}

/// A request head sealed by hand: salt, the fixed header with `kind` and `stamp`,
/// the variable header `variable` as given.
fn by_hand(method: Method, key: &[u8], kind: u8, stamp: u64, variable: &[u8]) -> Vec<u8> {
    let salt = vec![9u8; method.key_len()];
    let mut cipher = TcpAead::new(method, key, &salt);
    let mut out = salt;
    let mut fixed = vec![kind];
    fixed.extend_from_slice(&stamp.to_be_bytes());
    fixed.extend_from_slice(&(variable.len() as u16).to_be_bytes());
    fixed.resize(fixed.len() + TAG_LEN, 0);
    cipher.encrypt_packet(&mut fixed);
    out.extend_from_slice(&fixed);
    let mut var = variable.to_vec();
    var.resize(var.len() + TAG_LEN, 0);
    cipher.encrypt_packet(&mut var);
    out.extend_from_slice(&var);
    out
}

fn variable(padding: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    to().encode_socks(&mut v);
    v.extend_from_slice(&padding.to_be_bytes());
    v.resize(v.len() + usize::from(padding), 0);
    v.extend_from_slice(payload);
    v
}

#[test]
fn a_clients_request_opens_with_its_payload_and_chunks() {
    for method in [
        Method::Aes128Gcm,
        Method::Aes256Gcm,
        Method::Chacha20Poly1305,
    ] {
        let user = vec![3u8; method.key_len()];
        let (identities, keys) = match method {
            Method::Chacha20Poly1305 => (0, ClientKeys::from_parts(method, vec![], user.clone())),
            _ => (
                1,
                ClientKeys::from_parts(method, vec![vec![4u8; method.key_len()]], user.clone()),
            ),
        };
        let salt = vec![5u8; method.key_len()];
        let mut wire = Vec::new();
        let (mut sealer, _) = tcp::request(
            &keys,
            &salt,
            &tcp::Request {
                destination: &to(),
                padding: 0,
                payload: b"GET / HTTP/1.1\r\n",
                now: NOW,
            },
            &mut wire,
        )
        .unwrap();
        let head_len = wire.len();
        sealer.seal(b"more", &mut wire);
        // Every prefix of the head is "not yet", and leaves the bytes alone.
        for cut in 0..head_len {
            let mut part = wire[..cut].to_vec();
            let before = part.clone();
            assert!(
                open_request(method, &user, identities, &mut part, NOW)
                    .unwrap()
                    .is_none(),
                "{method:?} cut {cut}"
            );
            assert_eq!(part, before);
        }
        let mut buf = wire.clone();
        let head = open_request(method, &user, identities, &mut buf, NOW + 30)
            .unwrap()
            .unwrap();
        assert_eq!(head.destination, to());
        assert_eq!(&buf[head.payload.clone()], b"GET / HTTP/1.1\r\n");
        assert_eq!(head.consumed, head_len);
        assert_eq!(head.salt, salt);
        let mut opener = head.opener;
        let rest = &mut buf[head.consumed..];
        let len = opener.open(rest, NOW).unwrap().unwrap();
        let rest = &mut rest[len.consumed..];
        let chunk = opener.open(rest, NOW).unwrap().unwrap();
        assert_eq!(&rest[chunk.payload], b"more");
        assert!(opener.at_boundary());
    }
}

#[test]
fn the_response_to_it_is_what_the_client_opens() {
    let method = Method::Aes128Gcm;
    let user = vec![3u8; 16];
    let keys = ClientKeys::from_parts(method, vec![], user.clone());
    let salt = vec![5u8; 16];
    let mut wire = Vec::new();
    let (_, mut client) = tcp::request(
        &keys,
        &salt,
        &tcp::Request {
            destination: &to(),
            padding: 7,
            payload: b"",
            now: NOW,
        },
        &mut wire,
    )
    .unwrap();
    let head = open_request(method, &user, 0, &mut wire, NOW)
        .unwrap()
        .unwrap();
    assert!(head.payload.is_empty());
    let mut answer = Vec::new();
    Response {
        method,
        key: &user,
        salt: &[6u8; 16],
        request_salt: &head.salt,
        kind: 1,
        now: NOW,
    }
    .seal(b"hi", &mut answer)
    .unwrap();
    let first = client.open(&mut answer, NOW).unwrap().unwrap();
    let body = client
        .open(&mut answer[first.consumed..], NOW)
        .unwrap()
        .unwrap();
    assert_eq!(&answer[first.consumed..][body.payload], b"hi");
}

#[test]
fn bad_heads_are_refused_by_reason() {
    let method = Method::Aes128Gcm;
    let key = [3u8; 16];
    let open =
        |mut wire: Vec<u8>| open_request(method, &key, 0, &mut wire, NOW).map(|h| h.is_some());
    assert_eq!(
        open(by_hand(method, &key, 0, NOW, &variable(1, b""))),
        Ok(true)
    );
    assert_eq!(
        open(by_hand(method, &[4u8; 16], 0, NOW, &variable(1, b""))),
        Err(RequestError::Decrypt("fixed header"))
    );
    assert_eq!(
        open(by_hand(method, &key, 1, NOW, &variable(1, b""))),
        Err(RequestError::Type(1))
    );
    assert_eq!(
        open(by_hand(method, &key, 0, NOW - 31, &variable(1, b""))),
        Err(RequestError::Timestamp {
            sent: NOW - 31,
            now: NOW
        })
    );
    assert_eq!(
        open(by_hand(method, &key, 0, NOW, &variable(0, b""))),
        Err(RequestError::NoPadding)
    );
    assert_eq!(
        open(by_hand(method, &key, 0, NOW, &variable(0, b"x"))),
        Ok(true)
    );
    assert_eq!(
        open(by_hand(method, &key, 0, NOW, &variable(901, b""))),
        Err(RequestError::Padding(901))
    );
    let mut cut = variable(5, b"");
    cut.truncate(cut.len() - 1);
    assert_eq!(
        open(by_hand(method, &key, 0, NOW, &cut)),
        Err(RequestError::Malformed("padding runs past the header"))
    );
    assert_eq!(
        open(by_hand(method, &key, 0, NOW, &[3, 200])),
        Err(RequestError::Malformed("the address is cut short"))
    );
    let mut tampered = by_hand(method, &key, 0, NOW, &variable(1, b"abc"));
    let last = tampered.len() - 1;
    tampered[last] ^= 1;
    assert_eq!(
        open(tampered),
        Err(RequestError::Decrypt("variable header"))
    );
    assert_eq!(
        open_request(method, &[0u8; 32], 0, &mut [0u8; 100], NOW).map(|h| h.is_some()),
        Err(RequestError::KeyLength)
    );
}
