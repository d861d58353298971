//! The Shadowsocks 2022 TCP request as the node reads it: the fuzz bytes are the
//! decrypted variable-length header (address, padding, first payload) followed by
//! whatever the client sends next, sealed under a known key behind a current fixed
//! header, then opened by `tcp_server::open_request` and read to the end through the
//! transport layer's server stream (what the node runs). No panic, whatever the
//! bytes hold.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_proto::shadowsocks::Method;
use switchyard_proto::shadowsocks::aead::TcpAead;
use switchyard_proto::shadowsocks::tcp_server::open_request;
use switchyard_transport::shadowsocks::{PendingResponse, SsStream};
use tokio::io::AsyncReadExt;

const KEY: [u8; 32] = [5; 32];
const METHOD: Method = Method::Chacha20Poly1305;
const TAG: usize = 16;

fuzz_target!(|data: &[u8]| {
    // The first two bytes split the input: the variable header, then raw bytes the
    // stream reads after it (tampered chunks, cut lengths).
    let Some((&[a, b], rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let split = usize::from(u16::from_be_bytes([a, b])).min(rest.len());
    let (header, after) = rest.split_at(split);
    let Ok(len) = u16::try_from(header.len()) else {
        return;
    };
    let salt = [3u8; 32];
    let mut cipher = TcpAead::new(METHOD, &KEY, &salt);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut wire = salt.to_vec();
    let mut fixed = vec![0u8];
    fixed.extend_from_slice(&now.to_be_bytes());
    fixed.extend_from_slice(&len.to_be_bytes());
    fixed.extend_from_slice(&[0; TAG]);
    cipher.encrypt_packet(&mut fixed);
    wire.extend_from_slice(&fixed);
    let mut variable = header.to_vec();
    variable.extend_from_slice(&[0; TAG]);
    cipher.encrypt_packet(&mut variable);
    wire.extend_from_slice(&variable);
    wire.extend_from_slice(after);

    let Ok(Some(head)) = open_request(METHOD, &KEY, 0, &mut wire, now) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let response = PendingResponse {
            method: METHOD,
            key: KEY.to_vec(),
            salt: vec![4; 32],
            request_salt: head.salt.clone(),
        };
        let (near, far) = tokio::io::duplex(1 << 16);
        drop(far);
        let mut stream = SsStream::serve(near, wire, head, response);
        let mut got = Vec::new();
        let _ = stream.read_to_end(&mut got).await;
    });
});
