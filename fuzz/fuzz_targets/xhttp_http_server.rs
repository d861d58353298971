//! Bytes from a peer of an XHTTP inbound: our first-request check, then hyper's
//! HTTP/1.1 or HTTP/2 server under our `xhttp::Server::serve` (sessions, packets
//! put back in order, stream-up and stream-one bodies), every stream read to its
//! end. The input is fed as it comes, after a valid first request or HTTP/2's
//! preface (picked by the first byte), so the fuzzer reaches what follows. No panic,
//! no hang past the deadline, and the payload handed up is never more than the peer
//! sent.
#![no_main]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use switchyard_proto::xhttp::{Range, Settings};
use switchyard_transport::xhttp::server::PREFACE;
use switchyard_transport::xhttp::{Server, ServerStream};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const FIRST: &[u8] = b"POST /xh/s1/0?x_padding=0 HTTP/1.1\r\nHost: n\r\nContent-Length: 1\r\n\r\nx";

fuzz_target!(|data: &[u8]| {
    let Some((&how, data)) = data.split_first() else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut settings = Settings::new("/xh");
        settings.x_padding_bytes = Range::new(0, 100).unwrap();
        settings.sc_max_each_post_bytes = Range::fixed(4096);
        settings.sc_max_buffered_posts = 8;
        let server = Arc::new(Server::new(settings));
        let (ours, mut peer) = tokio::io::duplex(64 * 1024);
        let mut input = match how % 3 {
            0 => PREFACE.to_vec(),
            1 => FIRST.to_vec(),
            _ => Vec::new(),
        };
        let sent = data.len() + input.len();
        input.extend_from_slice(data);
        let writer = async move {
            let _ = peer.write_all(&input).await;
            let _ = peer.shutdown().await;
            let mut sink = Vec::new();
            let _ = peer.read_to_end(&mut sink).await;
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
        let got = Arc::new(AtomicUsize::new(0));
        let serving = async {
            let Ok(first) = server.read_first(ours, deadline).await else {
                return;
            };
            let counted = got.clone();
            // Each stream is read to its end in its own task, as the node does.
            let each = move |mut s: ServerStream| {
                let got = counted.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    while let Ok(n) = s.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        got.fetch_add(n, Ordering::Relaxed);
                    }
                });
            };
            let _ = server
                .serve(first, deadline, Duration::from_secs(1), each)
                .await;
        };
        let _ = tokio::time::timeout(Duration::from_secs(2), async {
            tokio::join!(writer, serving)
        })
        .await;
        assert!(
            got.load(Ordering::Relaxed) <= sent,
            "more payload than the peer sent"
        );
    });
});
