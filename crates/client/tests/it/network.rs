//! The network watch on a real link: in a network namespace of the test's own, the
//! watch (netlink, from a thread inside) says the network is there, then gone when the
//! link goes down, then back when it comes up, each within a second or two.

use std::time::Duration;

use switchyard_client::network::{self, NetworkEvent};
use switchyard_testkit::netns;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watch_sees_the_link_go_and_come_back() {
    let pair = netns::pair().unwrap();
    let inside = pair.client.runtime_in().unwrap();
    // Started from the namespace's thread, so it watches the namespace.
    let mut events = inside.run(async { network::watch() }).await;
    let next = async |events: &mut tokio::sync::mpsc::UnboundedReceiver<NetworkEvent>| {
        tokio::time::timeout(Duration::from_secs(5), events.recv())
            .await
            .expect("an event within 5 s")
            .expect("the watch runs")
    };
    assert_eq!(next(&mut events).await, NetworkEvent { available: true });
    pair.cut().unwrap();
    assert_eq!(next(&mut events).await, NetworkEvent { available: false });
    pair.restore().unwrap();
    // The link's return may come as more than one settled burst: the last says up.
    let mut last = next(&mut events).await;
    while let Ok(Some(e)) = tokio::time::timeout(Duration::from_millis(800), events.recv()).await {
        last = e;
    }
    assert_eq!(last, NetworkEvent { available: true });
    drop(events);
    drop(inside);
}
