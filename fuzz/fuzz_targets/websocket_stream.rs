//! WebSocket frames from a peer, read as the node's WebSocket inbounds and the
//! tunnel's WebSocket profiles read them: tungstenite's framing under our
//! `WsStream`, with the settings both use (1 MiB messages, 16 KiB reads). No panic,
//! and the bytes handed up are never more than the peer sent.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::Role;

fuzz_target!(|data: &[u8]| {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (ours, mut peer) = tokio::io::duplex(64 * 1024);
        let mut config = switchyard_transport::ws::config();
        config.read_buffer_size = 16 * 1024;
        let ws = WebSocketStream::from_raw_socket(ours, Role::Server, Some(config)).await;
        let mut stream = switchyard_transport::ws::WsStream::new(ws);
        let input = data.to_vec();
        let writer = async move {
            let _ = peer.write_all(&input).await;
            let _ = peer.shutdown().await;
            // Keep the peer open for our answers (pongs, closes) until the reader ends.
            let mut sink = Vec::new();
            let _ = peer.read_to_end(&mut sink).await;
        };
        let reader = async {
            let mut got = 0usize;
            let mut buf = vec![0u8; 4096];
            while let Ok(n) = stream.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                got += n;
                assert!(got <= data.len(), "more payload than the peer sent");
            }
            drop(stream);
        };
        tokio::join!(writer, reader);
    });
});
