//! Bulk throughput of one link over loopback TCP, next to its references, run side by
//! side: a direct TCP copy (the ceiling) and HTTP/2 (the `h2` crate) streams over one
//! connection. A measurement, not a test: `cargo bench -p switchyard-tunnel --bench
//! mux_throughput` prints MB/s and the ratio to the direct copy.

#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "tests, benchmarks and tools time real processes by the wall clock"
)]

use std::future::poll_fn;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use switchyard_proto::Address;
use switchyard_tunnel::frame::{Network, Open};
use switchyard_tunnel::mux::{Mux, MuxConfig, Side};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Bytes carried per measurement, split over the streams.
const TOTAL: usize = 512 * 1024 * 1024;
const CHUNK: usize = 64 * 1024;
const RUNS: usize = 3;

async fn tcp_pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (a, b) = tokio::join!(TcpStream::connect(addr), listener.accept());
    let (a, b) = (a.unwrap(), b.unwrap().0);
    a.set_nodelay(true).unwrap();
    b.set_nodelay(true).unwrap();
    (a, b)
}

async fn drain<R: tokio::io::AsyncRead + Unpin>(mut r: R) -> usize {
    let mut buf = vec![0u8; CHUNK];
    let mut n = 0;
    loop {
        match r.read(&mut buf).await.unwrap() {
            0 => return n,
            k => n += k,
        }
    }
}

async fn fill<W: tokio::io::AsyncWrite + Unpin>(mut w: W, len: usize) {
    let buf = vec![0x5au8; CHUNK];
    let mut left = len;
    while left > 0 {
        let k = left.min(CHUNK);
        w.write_all(&buf[..k]).await.unwrap();
        left -= k;
    }
    w.shutdown().await.unwrap();
}

async fn direct() -> Duration {
    let (a, b) = tcp_pair().await;
    let start = Instant::now();
    let (_, got) = tokio::join!(fill(a, TOTAL), drain(b));
    assert_eq!(got, TOTAL);
    start.elapsed()
}

async fn mux(streams: usize) -> Duration {
    let (a, b) = tcp_pair().await;
    let (opener, _oi) = Mux::start(a, Side::Opener, MuxConfig::default());
    let (_acceptor, mut incoming) = Mux::start(b, Side::Acceptor, MuxConfig::default());
    let start = Instant::now();
    let server = tokio::spawn(async move {
        let mut readers = Vec::new();
        for _ in 0..streams {
            let (_, s) = incoming.next().await.unwrap();
            readers.push(tokio::spawn(drain(s)));
        }
        let mut total = 0;
        for r in readers {
            total += r.await.unwrap();
        }
        total
    });
    let mut writers = Vec::new();
    for i in 0..streams {
        let s = opener
            .open(Open {
                network: Network::Tcp,
                user: "bench".into(),
                destination: Address::Ip(SocketAddr::from(([127, 0, 0, 1], i as u16))),
            })
            .unwrap();
        writers.push(tokio::spawn(fill(s, TOTAL / streams)));
    }
    for w in writers {
        w.await.unwrap();
    }
    assert_eq!(server.await.unwrap(), TOTAL);
    start.elapsed()
}

async fn h2(streams: usize) -> Duration {
    let (a, b) = tcp_pair().await;
    // Windows as large as the mux's maximum, so flow control is not what is compared.
    let window = 16 * 1024 * 1024;
    let server = tokio::spawn(async move {
        let mut conn = h2::server::Builder::new()
            .initial_window_size(window)
            .initial_connection_window_size(window * 4)
            .max_frame_size(16 * 1024)
            .handshake::<_, Bytes>(b)
            .await
            .unwrap();
        let mut readers = Vec::new();
        for _ in 0..streams {
            let (req, mut respond) = conn.accept().await.unwrap().unwrap();
            readers.push(tokio::spawn(async move {
                let mut body = req.into_body();
                let mut n = 0;
                while let Some(data) = body.data().await {
                    let data = data.unwrap();
                    n += data.len();
                    body.flow_control().release_capacity(data.len()).unwrap();
                }
                respond
                    .send_response(http::Response::new(()), true)
                    .unwrap();
                n
            }));
        }
        let driver = tokio::spawn(async move { while conn.accept().await.is_some() {} });
        let mut total = 0;
        for r in readers {
            total += r.await.unwrap();
        }
        (total, driver)
    });
    let (client, conn) = h2::client::Builder::new()
        .initial_window_size(window)
        .initial_connection_window_size(window * 4)
        .handshake::<_, Bytes>(a)
        .await
        .unwrap();
    tokio::spawn(conn);
    let start = Instant::now();
    let chunk = Bytes::from(vec![0x5au8; CHUNK]);
    let mut writers = Vec::new();
    for _ in 0..streams {
        let mut client = client.clone().ready().await.unwrap();
        let req = http::Request::post("http://bench/").body(()).unwrap();
        let (resp, mut send) = client.send_request(req, false).unwrap();
        let chunk = chunk.clone();
        writers.push(tokio::spawn(async move {
            let mut left = TOTAL / streams;
            while left > 0 {
                send.reserve_capacity(left.min(CHUNK));
                let cap = poll_fn(|cx| send.poll_capacity(cx)).await.unwrap().unwrap();
                let k = cap.min(left);
                send.send_data(chunk.slice(..k), false).unwrap();
                left -= k;
            }
            send.send_data(Bytes::new(), true).unwrap();
            resp.await.unwrap();
        }));
    }
    for w in writers {
        w.await.unwrap();
    }
    let elapsed = start.elapsed();
    let (total, driver) = server.await.unwrap();
    driver.abort();
    assert_eq!(total, TOTAL);
    elapsed
}

fn mbps(d: Duration) -> f64 {
    TOTAL as f64 / d.as_secs_f64() / 1e6
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let best = |mut v: Vec<Duration>| {
            v.sort();
            v[v.len() / 2]
        };
        let mut reference = Vec::new();
        for _ in 0..RUNS {
            reference.push(direct().await);
        }
        let reference = mbps(best(reference));
        println!(
            "{:<24} {:>9.0} MB/s  (reference)",
            "direct TCP copy", reference
        );
        for streams in [1, 16] {
            let mut m = Vec::new();
            let mut h = Vec::new();
            for _ in 0..RUNS {
                m.push(mux(streams).await);
                h.push(h2(streams).await);
            }
            for (name, d) in [("mux", best(m)), ("h2", best(h))] {
                let r = mbps(d);
                println!(
                    "{:<24} {r:>9.0} MB/s  {:.2} of direct",
                    format!("{name}, {streams} stream(s)"),
                    r / reference
                );
            }
        }
    });
}
