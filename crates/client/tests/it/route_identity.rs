//! A route's balancer moves the user to another inbound: the subscription's entry
//! keeps its route id and name and gets another address. The client keys the server
//! on the route, so Auto sees the same server (its mark kept, nothing removed, no
//! switch) and the proxy follows the new address at once. Three real nodes on
//! 127.0.0.1, a subscription served as share links, the client's proxy and Auto in
//! this process.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use switchyard_client::Proxy;
use switchyard_client::auto::{AutoSettings, Inputs, Status, SubscriptionServers};
use switchyard_client::control::Request;
use switchyard_client::probe::ProbeUrl;
use switchyard_node::{Node, NodeConfig};
use switchyard_proto::entry::{Entry, EntryProtocol, EntryTransport};
use switchyard_testkit::{HttpTarget, free_port};

const UUID: &str = "b831381d-6324-4d53-ad4f-8cda48b30811";

/// A node with one plain VLESS inbound on a free port of 127.0.0.1.
async fn node(dir: &std::path::Path) -> (Arc<Node>, u16) {
    let port = free_port().unwrap();
    let text = format!(
        r#"
version = 1
[node]
state_dir = "{dir}"
allow_private_destinations = true
[control]
listen = "127.0.0.1:{control}"

[[inbounds]]
tag = "main"
name = "main"
listen = "127.0.0.1"
port = {port}
protocol = "vless"

[[users]]
name = "alice"
vless = "{UUID}"
"#,
        dir = dir.display(),
        control = free_port().unwrap(),
    );
    let config = NodeConfig::from_toml(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    (Node::start(config).await.unwrap(), port)
}

/// Serves `entries` as a share-link subscription on 127.0.0.1; its URL.
async fn subscription_server(entries: Arc<Mutex<Vec<Entry>>>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/sub/test", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let body = switchyard_proto::share::links(&entries.lock().unwrap());
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut b = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut b).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&b[..n]),
                    }
                }
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(answer.as_bytes()).await;
            });
        }
    });
    url
}

/// A plain VLESS entry for route `route` at 127.0.0.1:`port`.
fn routed(name: &str, port: u16, route: &str) -> Entry {
    Entry {
        name: name.into(),
        server: "127.0.0.1".into(),
        port,
        protocol: EntryProtocol::Vless {
            uuid: UUID.into(),
            flow: None,
        },
        transport: EntryTransport::Tcp,
        tls: None,
        route: Some(route.into()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebalance_is_an_address_change_not_a_new_server() {
    let dirs = [(); 3].map(|()| tempfile::tempdir().unwrap());
    let (a, port_a) = node(dirs[0].path()).await;
    let (_a2, port_a2) = node(dirs[1].path()).await;
    let (_b, port_b) = node(dirs[2].path()).await;
    let target = HttpTarget::start().await.unwrap();
    let frankfurt = "🇩🇪 Frankfurt";
    let served = Arc::new(Mutex::new(vec![
        routed(frankfurt, port_a, "1"),
        routed("🇯🇵 Tokyo", port_b, "2"),
    ]));
    let url = subscription_server(served.clone()).await;
    let sub =
        SubscriptionServers::from_fetched(&url, switchyard_client::fetch(&url).await.unwrap());
    assert!(sub.servers[0].identity().starts_with("route:"));
    let (_tx, failed) = tokio::sync::mpsc::unbounded_channel();
    let proxy = Proxy::start("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let status = Arc::new(Mutex::new(Status::default()));
    let settings = AutoSettings {
        refresh_every: Some(Duration::from_millis(300)),
        ..AutoSettings::new(
            switchyard_auto::AutoConfig::default(),
            ProbeUrl::parse(&format!("http://{}/bytes/0", target.addr())).unwrap(),
        )
    };
    let (control, control_rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(switchyard_client::auto::run(
        proxy.clone(),
        vec![sub],
        settings,
        Inputs {
            failed,
            control: control_rx,
            network: None,
        },
        status.clone(),
    ));
    let ask = |request: Request| {
        let control = control.clone();
        async move {
            let (tx, rx) = tokio::sync::oneshot::channel();
            control.send((request, tx)).unwrap();
            rx.await.unwrap()
        }
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while status.lock().unwrap().current.as_deref() != Some(frankfurt) {
        assert!(Instant::now() < deadline, "Auto starts on Frankfurt");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The user marks Frankfurt (and does not press Done: Auto stays on it).
    let answer = ask(Request::Mark {
        servers: vec![frankfurt.into()],
    })
    .await;
    assert_eq!(answer["ok"], true, "{answer}");

    // The balancer moves the user to the route's other inbound.
    served.lock().unwrap()[0] = routed(frankfurt, port_a2, "1");
    let deadline = Instant::now() + Duration::from_secs(10);
    while proxy.server().unwrap().entry().port != port_a2 {
        assert!(
            Instant::now() < deadline,
            "the proxy follows the new address"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The old inbound's node goes away: new connections already use the new one.
    a.shutdown().await;
    let via = switchyard_testkit::socks5::connect(proxy.addr(), target.addr())
        .await
        .unwrap();
    assert_eq!(
        switchyard_testkit::http::get_bytes(via, 4096)
            .await
            .unwrap(),
        4096
    );

    let now = ask(Request::Status).await;
    assert_eq!(now["current"], frankfurt, "{now}");
    let servers = now["subscriptions"][0]["servers"].as_array().unwrap();
    let f = servers.iter().find(|s| s["name"] == frankfurt).unwrap();
    assert_eq!(f["marked"], true, "the mark follows the route: {now}");
    assert_eq!(f["current"], true, "{now}");
    assert_eq!(servers.len(), 2, "{now}");
    let log = status.lock().unwrap().log.clone();
    assert!(
        log.iter()
            .any(|l| l
                == &format!("{frankfurt} moved from 127.0.0.1:{port_a} to 127.0.0.1:{port_a2}")),
        "{log:?}"
    );
    assert!(
        !log.iter()
            .any(|l| l.contains("(Removed)") || l.starts_with("switched")),
        "no removal, no switch: {log:?}"
    );
}
