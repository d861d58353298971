//! The emulated lossy link of `testkit::lossy`: TCP gets every byte across a link that
//! loses frames (its retransmissions are seen as losses counted), a link that loses
//! everything carries nothing, and the namespaces are gone after drop.

use std::net::SocketAddr;
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::Duration;

use switchyard_testkit::lossy::{CLIENT_ADDR, LossyLink, SERVERS_ADDR, Shape};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn shape(loss_ppm: u32) -> Shape {
    Shape {
        loss_ppm,
        delay: Duration::from_millis(5),
        rate_bps: 200_000_000,
        queue: Duration::from_millis(50),
        seed: 7,
    }
}

/// A server in `servers` that sends `n` bytes to whoever connects.
fn serve(link: &LossyLink, n: usize) -> SocketAddr {
    let std = link
        .servers
        .tcp_listener(SocketAddr::from((SERVERS_ADDR, 0)))
        .unwrap();
    let addr = std.local_addr().unwrap();
    let listener = TcpListener::from_std(std).unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let body: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
                let _ = s.write_all(&body).await;
                let _ = s.shutdown().await;
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_gets_every_byte_across_a_lossy_link() {
    let link = LossyLink::new(shape(20_000)).await.unwrap();
    let addr = serve(&link, 4 << 20);
    let client = link.client.runtime_in().unwrap();
    let got = client
        .run(async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            assert_eq!(s.local_addr().unwrap().ip(), CLIENT_ADDR);
            let mut got = Vec::new();
            s.read_to_end(&mut got).await.unwrap();
            got
        })
        .await;
    assert_eq!(got.len(), 4 << 20);
    assert!(got.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
    let counts = link.counts();
    assert!(
        counts.lost.load(Ordering::Relaxed) > 0,
        "2 % of frames lost"
    );
    assert!(counts.carried.load(Ordering::Relaxed) > 2_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_that_loses_everything_carries_nothing_and_is_removed() {
    let link = LossyLink::new(shape(1_000_000)).await.unwrap();
    let names = [
        link.servers.name().to_owned(),
        link.client.name().to_owned(),
    ];
    let addr = serve(&link, 10);
    let client = link.client.runtime_in().unwrap();
    let connected =
        client
            .run(async move {
                tokio::time::timeout(Duration::from_secs(2), TcpStream::connect(addr)).await
            })
            .await;
    assert!(connected.is_err(), "no handshake crosses");
    assert_eq!(link.counts().carried.load(Ordering::Relaxed), 0);
    drop(client);
    drop(link);
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let list = String::from_utf8_lossy(&out.stdout);
    for name in names {
        assert!(!list.contains(&name), "{name} is left");
    }
}
