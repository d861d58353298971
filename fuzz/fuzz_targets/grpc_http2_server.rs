//! Bytes from a peer of a gRPC inbound after its preface: our reading ahead of its
//! first SETTINGS frame (`proto::h2_settings`), then the h2 crate's HTTP/2 server
//! under our `grpc::serve`, with the node's settings, every gun stream read to its
//! end. No panic, no hang past the deadline, and the payload handed up is never
//! more than the peer sent.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use switchyard_transport::grpc::server::PREFACE;
use switchyard_transport::grpc::{Settings, serve};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fuzz_target!(|data: &[u8]| {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (ours, mut peer) = tokio::io::duplex(64 * 1024);
        let mut input = PREFACE.to_vec();
        input.extend_from_slice(data);
        let writer = async move {
            let _ = peer.write_all(&input).await;
            let _ = peer.shutdown().await;
            let mut sink = Vec::new();
            let _ = peer.read_to_end(&mut sink).await;
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
        let got = Arc::new(AtomicUsize::new(0));
        let server = async {
            // Each gun stream is read to its end in its own task, as the node does.
            let each = |mut s: switchyard_transport::grpc::GrpcStream| {
                let got = got.clone();
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
            let _ = serve(ours, "svc", &Settings::default(), deadline, each).await;
        };
        let _ = tokio::time::timeout(Duration::from_secs(2), async {
            tokio::join!(writer, server)
        })
        .await;
        assert!(
            got.load(Ordering::Relaxed) <= data.len(),
            "more payload than the peer sent"
        );
    });
});
