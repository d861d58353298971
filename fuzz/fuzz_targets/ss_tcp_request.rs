//! The Shadowsocks 2022 TCP request as the node reads it: the fuzz bytes are the
//! decrypted variable-length header (address, padding, first payload), sealed with
//! the crate's own cipher under a known key behind a current fixed header, then read
//! by the `shadowsocks` crate's server stream (what the node runs) and checked as the
//! node checks destinations. No panic, whatever the header holds.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use shadowsocks::config::ServerType;
use shadowsocks::context::Context;
use shadowsocks::crypto::CipherKind;
use shadowsocks::crypto::v2::tcp::TcpCipher;
use shadowsocks::relay::socks5::Address;
use shadowsocks::relay::tcprelay::ProxyServerStream;
use tokio::io::AsyncReadExt;

const KEY: [u8; 32] = [5; 32];
const METHOD: CipherKind = CipherKind::AEAD2022_BLAKE3_CHACHA20_POLY1305;
const TAG: usize = 16;

fuzz_target!(|data: &[u8]| {
    let Ok(len) = u16::try_from(data.len()) else {
        return;
    };
    if len == 0 {
        return;
    }
    let salt = [3u8; 32];
    let mut cipher = TcpCipher::new(METHOD, &KEY, &salt);
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
    let mut variable = data.to_vec();
    variable.extend_from_slice(&[0; TAG]);
    cipher.encrypt_packet(&mut variable);
    wire.extend_from_slice(&variable);

    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let context = Context::new_shared(ServerType::Server);
        let mut stream = ProxyServerStream::from_stream(context, Cursor::new(wire), METHOD, &KEY);
        let Ok(address) = stream.handshake().await else {
            return;
        };
        // The node's check of every destination.
        if let Address::DomainNameAddress(name, port) = &address {
            let _ = switchyard_proto::Address::domain(name, *port);
        }
        let mut first = Vec::new();
        let _ = stream.read_to_end(&mut first).await;
    });
});
