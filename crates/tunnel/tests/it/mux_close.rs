//! Closing a link wakes every stream blocked on it.

use std::time::Duration;

use switchyard_proto::Address;
use switchyard_tunnel::frame::{Network, Open};
use switchyard_tunnel::mux::{Mux, MuxConfig, Side};
use tokio::io::AsyncReadExt;

#[tokio::test]
async fn a_pending_read_ends_when_the_link_is_closed() {
    let (a, b) = tokio::io::duplex(1 << 16);
    let (relay, _) = Mux::start(a, Side::Opener, MuxConfig::default());
    let (_origin, mut incoming) = Mux::start(b, Side::Acceptor, MuxConfig::default());
    let open = Open {
        network: Network::Tcp,
        user: "u".into(),
        destination: Address::Domain("x".into(), 1),
    };
    let mut s = relay.open(open).unwrap();
    let _peer = incoming.next().await.unwrap();
    let reader = tokio::spawn(async move {
        let mut buf = [0u8; 16];
        s.read(&mut buf).await
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    relay.close();
    let r = tokio::time::timeout(Duration::from_secs(2), reader)
        .await
        .expect("the read ends")
        .unwrap();
    assert!(r.is_err() || r.unwrap() == 0);
}
