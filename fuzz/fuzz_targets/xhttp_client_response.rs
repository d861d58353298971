//! Bytes from the server of an XHTTP outbound: our client (`xhttp::client::Pool`)
//! opens a stream over an in-memory connection whose server half writes the input
//! (and reads and discards what the client sends), then writes and reads the stream
//! to its end. The first byte picks the mode (`packet-up`, `stream-up`, `stream-one`
//! or `auto`), HTTP/1.1 or HTTP/2, whether `auto` means stream-up, and whether a valid
//! start (a status line, or HTTP/2's SETTINGS and its ACK) comes before the input, so
//! the fuzzer reaches what follows. Time is paused: the client's own timeouts run at
//! once. No panic, no hang, and the stream never reads more than the server sent.
#![no_main]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use switchyard_proto::xhttp::{Mode, Range, Settings};
use switchyard_transport::BoxIo;
use switchyard_transport::xhttp::Dialed;
use switchyard_transport::xhttp::client::{Dial, Pool, Target};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

/// An HTTP/2 server's empty SETTINGS frame, then its ACK of the client's.
const H2_START: &[u8] = &[0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0];
const H1_START: &[u8] = b"HTTP/1.1 200 OK\r\n";

fuzz_target!(|data: &[u8]| {
    let Some((&how, data)) = data.split_first() else {
        return;
    };
    let mode = match how & 3 {
        0 => Mode::PacketUp,
        1 => Mode::StreamUp,
        2 => Mode::StreamOne,
        _ => Mode::Auto,
    };
    let h2 = how & 4 != 0;
    let mut input = match (how & 8 != 0, h2) {
        (false, _) => Vec::new(),
        (true, true) => H2_START.to_vec(),
        (true, false) => H1_START.to_vec(),
    };
    input.extend_from_slice(data);
    let sent = input.len();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async move {
        let (client_half, server_half) = tokio::io::duplex(64 * 1024);
        tokio::spawn(serve(server_half, input));
        // The one connection: later dials (packet-up's POSTs over HTTP/1.1) fail.
        let once = Arc::new(Mutex::new(Some(client_half)));
        let dial: Dial<String> = Arc::new(move || {
            let io = once.lock().unwrap().take();
            Box::pin(async move {
                let io: BoxIo = Box::new(io.ok_or("no more connections")?);
                Ok(Dialed { io, h2 })
            })
        });
        let mut settings = Settings::new("/xh");
        settings.mode = mode;
        settings.sc_max_each_post_bytes = Range::fixed(4096);
        let target = Target {
            settings: &settings,
            host: "node.test",
            tls: h2,
            stream_up_auto: how & 16 != 0,
        };
        let pool = Pool::default();
        let client = async {
            let Ok(stream) = pool.open(&target, dial, |e| e.to_string()).await else {
                return 0;
            };
            let (mut down, mut up) = tokio::io::split(stream);
            let upload = async {
                for _ in 0..3 {
                    if up.write_all(&[7u8; 20_000]).await.is_err() {
                        break;
                    }
                }
                let _ = up.shutdown().await;
            };
            let download = async {
                let mut got = 0;
                let mut buf = vec![0u8; 8192];
                while let Ok(n) = down.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    got += n;
                }
                got
            };
            tokio::join!(upload, download).1
        };
        if let Ok(got) = tokio::time::timeout(Duration::from_secs(60), client).await {
            assert!(got <= sent, "read {got} bytes of a server that sent {sent}");
        }
    });
});

/// The server's side: writes `input`, ends its writing, and reads what the client
/// sends until the client goes.
async fn serve(server: DuplexStream, input: Vec<u8>) {
    let (mut read, mut write) = tokio::io::split(server);
    let writer = async move {
        let _ = write.write_all(&input).await;
        let _ = write.shutdown().await;
    };
    let reader = async move {
        let mut sink = vec![0u8; 16 * 1024];
        while let Ok(n) = read.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    };
    tokio::join!(writer, reader);
}
