//! The client reading a Shadowsocks 2022 server's TCP response
//! (`switchyard_proto::shadowsocks::tcp::Opener`), two ways:
//! - the fuzz bytes as the raw response, fed in splits the input picks: a typed error
//!   or payloads, never a panic, never past the buffer;
//! - the fuzz bytes as what a server under our key seals (type, clock skew, whether
//!   it echoes our salt, the payloads): the opener gives back exactly the payloads
//!   when the header is right, and the header's error otherwise.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_proto::Address;
use switchyard_proto::shadowsocks::Method;
use switchyard_proto::shadowsocks::keys::ClientKeys;
use switchyard_proto::shadowsocks::tcp::{self, Opener, Response, TcpError};

const NOW: u64 = 1_764_000_000;

fn opener(method: Method) -> (ClientKeys, Vec<u8>, Opener) {
    let keys = ClientKeys::from_parts(
        method,
        vec![vec![1; method.key_len()]],
        vec![2; method.key_len()],
    );
    let salt = vec![3; method.key_len()];
    let to = Address::Ip("127.0.0.1:80".parse().unwrap());
    let request = tcp::Request {
        destination: &to,
        padding: 1,
        payload: &[],
        now: NOW,
    };
    let (_, opener) = tcp::request(&keys, &salt, &request, &mut Vec::new()).unwrap();
    (keys, salt, opener)
}

/// Feeds `wire` in pieces of `split`; the payloads, or the first error.
fn read_all(opener: &mut Opener, wire: &[u8], split: usize) -> Result<Vec<u8>, TcpError> {
    let mut buf = Vec::new();
    let mut out = Vec::new();
    for piece in wire.chunks(split.max(1)) {
        buf.extend_from_slice(piece);
        while let Some(chunk) = opener.open(&mut buf, NOW)? {
            assert!(chunk.consumed <= buf.len() && chunk.payload.end <= chunk.consumed);
            out.extend_from_slice(&buf[chunk.payload.clone()]);
            buf.drain(..chunk.consumed);
        }
    }
    Ok(out)
}

fuzz_target!(|data: &[u8]| {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let method = match control % 3 {
        0 => Method::Aes128Gcm,
        1 => Method::Aes256Gcm,
        _ => Method::Chacha20Poly1305,
    };
    let split = usize::from(control >> 2) + 1;
    let (keys, salt, mut raw) = opener(method);
    let _ = read_all(&mut raw, rest, split);

    let Some((&[kind, skew, echo], payload)) = rest.split_first_chunk::<3>() else {
        return;
    };
    let skew = i64::from(skew as i8);
    let sent = NOW.saturating_add_signed(skew);
    let other = vec![9; salt.len()];
    let response = Response {
        method,
        key: keys.user(),
        salt: &[4; 32][..method.key_len()],
        request_salt: if echo & 1 == 0 { &salt } else { &other },
        kind: kind & 1,
        now: sent,
    };
    let (first, later) = payload.split_at(payload.len().min(usize::from(echo >> 1)));
    let mut wire = Vec::new();
    let mut sealer = response.seal(first, &mut wire).unwrap();
    for piece in later.chunks(usize::from(kind) + 1) {
        sealer.seal(piece, &mut wire);
    }
    let (_, _, mut sealed) = opener(method);
    let got = read_all(&mut sealed, &wire, split);
    let want = if kind & 1 != 1 {
        Err(TcpError::Type(kind & 1))
    } else if sent.abs_diff(NOW) > 30 {
        Err(TcpError::Timestamp { sent, now: NOW })
    } else if echo & 1 != 0 {
        Err(TcpError::RequestSalt)
    } else {
        Ok(payload.to_vec())
    };
    assert_eq!(got, want);
});
