//! Auto on real traffic: two real nodes on 127.0.0.1, each behind the fault injector,
//! a subscription of both served as share links, the client's proxy and Auto in this
//! process, and steady request loops through the proxy. Auto starts on the first
//! server; once it is blackholed, the loop's data goes out with nothing back, Auto
//! checks after the stall threshold (5 s), the blackholed server does not answer its
//! URL probe within the probe timeout (5 s) and the other one does: Auto switches,
//! and the loop's requests go through again.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use switchyard_client::auto::{AutoSettings, Inputs, Status, SubscriptionServers};
use switchyard_client::control::Request;
use switchyard_client::probe::ProbeUrl;
use switchyard_client::{Outbound, Proxy};
use switchyard_node::{Node, NodeConfig};
use switchyard_proto::entry::{Entry, EntryProtocol, EntryTransport};
use switchyard_testkit::fault::{Fault, FaultProxy};
use switchyard_testkit::{HttpTarget, free_port};

const UUID: &str = "b831381d-6324-4d53-ad4f-8cda48b30811";

/// A node with one plain VLESS inbound on a free port of 127.0.0.1.
pub(crate) async fn node(dir: &std::path::Path) -> (Arc<Node>, u16) {
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

pub(crate) fn entry(name: &str, addr: SocketAddr) -> Entry {
    Entry {
        name: name.into(),
        server: addr.ip().to_string(),
        port: addr.port(),
        protocol: EntryProtocol::Vless {
            uuid: UUID.into(),
            flow: None,
        },
        transport: EntryTransport::Tcp,
        tls: None,
        route: None,
    }
}

/// Also the switch back: once A answers again, Auto returns to it after it answered
/// two scheduled checks in a row (the driver's clock skipped 5 minutes twice, with
/// traffic all along, so the test need not wait 10 minutes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blackholed_server_is_left_within_the_stall_threshold_plus_the_probe_timeout() {
    let target = HttpTarget::start().await.unwrap();
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let (_a, port_a) = node(dirs[0].path()).await;
    let (_b, port_b) = node(dirs[1].path()).await;
    let fault_a = FaultProxy::start(SocketAddr::from(([127, 0, 0, 1], port_a)))
        .await
        .unwrap();
    let fault_b = FaultProxy::start(SocketAddr::from(([127, 0, 0, 1], port_b)))
        .await
        .unwrap();
    let servers: Vec<Arc<Outbound>> = [entry("A", fault_a.addr()), entry("B", fault_b.addr())]
        .into_iter()
        .map(|e| Arc::new(Outbound::new(e).unwrap()))
        .collect();

    let (failed_tx, failed) = tokio::sync::mpsc::unbounded_channel();
    let proxy = Proxy::start_with("127.0.0.1:0".parse().unwrap(), Some(failed_tx))
        .await
        .unwrap();
    let status = Arc::new(Mutex::new(Status::default()));
    let clock = switchyard_client::auto::Clock::default();
    let settings = AutoSettings {
        clock: clock.clone(),
        ..AutoSettings::new(
            switchyard_auto::AutoConfig::default(),
            ProbeUrl::parse(&format!("http://{}/bytes/0", target.addr())).unwrap(),
        )
    };
    tokio::spawn(switchyard_client::auto::run(
        proxy.clone(),
        vec![SubscriptionServers {
            name: "test".into(),
            url: None,
            update_interval: None,
            servers,
        }],
        settings,
        Inputs {
            failed,
            control: tokio::sync::mpsc::unbounded_channel().1,
            network: None,
        },
        status.clone(),
    ));
    let current = || status.lock().unwrap().current.clone();
    let deadline = Instant::now() + Duration::from_secs(10);
    while current().as_deref() != Some("A") {
        assert!(
            Instant::now() < deadline,
            "Auto starts on A: {:?}",
            current()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // The steady request loop: five loops, each a small download with 2 s and then
    // 100 ms of rest, started 400 ms apart, so that something goes out every second
    // (the stall rule wants data out in every sample).
    let addr = proxy.addr();
    let ok = Arc::new(Mutex::new(Vec::<Instant>::new()));
    let target_addr = target.addr();
    for i in 0..5u64 {
        let loop_ok = ok.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(400 * i)).await;
            loop {
                let once = async {
                    let s = switchyard_testkit::socks5::connect(addr, target_addr).await?;
                    switchyard_testkit::http::get_bytes(s, 16 * 1024).await
                };
                if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(2), once).await
                    && n == 16 * 1024
                {
                    loop_ok.lock().unwrap().push(Instant::now());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
    }
    // And a chatty app: 64 bytes every 250 ms on one connection (to a local echo
    // server), a new one whenever it breaks, as messaging apps keep theirs alive.
    let echo = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let echo_addr = echo.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = echo.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        loop {
            let Ok(Ok(mut s)) = tokio::time::timeout(
                Duration::from_secs(2),
                switchyard_testkit::socks5::connect(addr, echo_addr),
            )
            .await
            else {
                tokio::time::sleep(Duration::from_millis(250)).await;
                continue;
            };
            let (mut r, mut w) = s.split();
            let reader = async {
                let mut buf = [0u8; 1024];
                while let Ok(n) = r.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                }
            };
            let writer = async {
                while w.write_all(&[7u8; 64]).await.is_ok() {
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            };
            tokio::select! { () = reader => {}, () = writer => {} }
        }
    });
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(ok.lock().unwrap().len() >= 3, "requests pass through A");

    // A blackholed: new connections hang, open ones are cut.
    let cut = Instant::now();
    fault_a.set(Fault::Blackhole);
    fault_a.cut();
    let deadline = cut + Duration::from_secs(20);
    while current().as_deref() != Some("B") {
        assert!(
            Instant::now() < deadline,
            "Auto left A within 20 s: {:?}\n{:?}",
            current(),
            status.lock().unwrap().log
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left_after = cut.elapsed();
    eprintln!("Auto left the blackholed server after {left_after:?}");
    // Stall threshold (5 s) + probe timeout (5 s) + the meter's 1 s sampling, and 3 s
    // for a loaded machine (12.0 s measured on an idle one).
    assert!(
        left_after <= Duration::from_secs(14),
        "Auto left A after {left_after:?}"
    );
    let switched = Instant::now();
    let deadline = switched + Duration::from_secs(5);
    loop {
        if ok.lock().unwrap().iter().any(|t| *t > switched) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "requests pass through B after the switch"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A answers again. The first scheduled check (5 minutes on) finds it answering:
    // one answer, Auto stays on B; the second, 5 minutes later, is the second answer
    // in a row, and Auto switches back.
    fault_a.set(Fault::Pass);
    let log = || status.lock().unwrap().log.clone();
    let scheduled_checks = || log().iter().filter(|l| l.contains("(scheduled)")).count();
    for round in 1..=2 {
        clock.skip(Duration::from_secs(300));
        let deadline = Instant::now() + Duration::from_secs(8);
        while scheduled_checks() < round {
            assert!(
                Instant::now() < deadline,
                "scheduled check {round} within 8 s of the skip: {:?}",
                log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if round == 1 {
            assert_eq!(current().as_deref(), Some("B"), "one answer is not enough");
        }
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while current().as_deref() != Some("A") {
        assert!(Instant::now() < deadline, "back on A: {:?}", log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        log().iter().any(|l| l == "connected to A (SwitchBack)"),
        "{:?}",
        log()
    );
    drop(fault_b);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn marks_and_an_update_that_removes_the_current_server_switch_at_once() {
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let (_a, port_a) = node(dirs[0].path()).await;
    let (_b, port_b) = node(dirs[1].path()).await;
    let a = entry("A", SocketAddr::from(([127, 0, 0, 1], port_a)));
    let b = entry("B", SocketAddr::from(([127, 0, 0, 1], port_b)));
    let served = Arc::new(Mutex::new(vec![a.clone(), b]));
    let url = subscription_server(served.clone()).await;
    let sub = switchyard_client::fetch(&url).await.unwrap();
    let sub = SubscriptionServers::from_fetched(&url, sub);
    assert_eq!(sub.servers.len(), 2);
    let (_tx, failed) = tokio::sync::mpsc::unbounded_channel();
    let proxy = Proxy::start("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let status = Arc::new(Mutex::new(Status::default()));
    let settings = AutoSettings {
        refresh_every: Some(Duration::from_millis(300)),
        ..AutoSettings::new(
            switchyard_auto::AutoConfig::default(),
            ProbeUrl::parse("http://127.0.0.1:9/").unwrap(),
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
    let current = || status.lock().unwrap().current.clone();
    let wait_for = |name: &'static str| async move {
        let deadline = Instant::now() + Duration::from_secs(10);
        while current().as_deref() != Some(name) {
            assert!(Instant::now() < deadline, "Auto on {name}: {:?}", current());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    wait_for("A").await;
    // Marking the current server and pressing Done moves Auto off it.
    let answer = ask(Request::Mark {
        servers: vec!["A".into()],
    })
    .await;
    assert_eq!(answer["ok"], true, "{answer}");
    assert_eq!(ask(Request::Done).await["ok"], true);
    wait_for("B").await;
    let status_now = ask(Request::Status).await;
    assert_eq!(status_now["current"], "B", "{status_now}");
    assert_eq!(
        status_now["subscriptions"][0]["servers"][0]["marked"], true,
        "{status_now}"
    );
    assert_eq!(
        ask(Request::Unmark {
            servers: vec!["A".into()]
        })
        .await["ok"],
        true
    );
    // The update drops B, the current server: the next refresh moves Auto back to A
    // at once, no check needed.
    let removed = Instant::now();
    *served.lock().unwrap() = vec![a];
    wait_for("A").await;
    assert!(
        removed.elapsed() < Duration::from_secs(2),
        "switched {:?} after the update was served",
        removed.elapsed()
    );
    let log = status.lock().unwrap().log.clone();
    assert!(
        log.iter().any(|l| l == "connected to B (Marked)"),
        "{log:?}"
    );
    assert!(
        log.iter().any(|l| l == "connected to A (Removed)"),
        "{log:?}"
    );
    assert_eq!(proxy.server().unwrap().entry().name, "A");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn marks_and_history_survive_a_restart() {
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let (_a, port_a) = node(dirs[0].path()).await;
    let (_b, port_b) = node(dirs[1].path()).await;
    let servers = || {
        vec![SubscriptionServers {
            name: "test".into(),
            url: None,
            update_interval: None,
            servers: [
                entry("A", SocketAddr::from(([127, 0, 0, 1], port_a))),
                entry("B", SocketAddr::from(([127, 0, 0, 1], port_b))),
            ]
            .into_iter()
            .map(|e| Arc::new(Outbound::new(e).unwrap()))
            .collect(),
        }]
    };
    let file = dirs[0].path().join("auto-state.json");
    let start = || {
        let settings = AutoSettings {
            data_dir: Some(dirs[0].path().to_owned()),
            ..AutoSettings::new(
                switchyard_auto::AutoConfig::default(),
                ProbeUrl::parse("http://127.0.0.1:9/").unwrap(),
            )
        };
        let servers = servers();
        async move {
            let proxy = Proxy::start("127.0.0.1:0".parse().unwrap()).await.unwrap();
            let (control, control_rx) = tokio::sync::mpsc::unbounded_channel();
            let task = tokio::spawn(switchyard_client::auto::run(
                proxy,
                servers,
                settings,
                Inputs {
                    failed: tokio::sync::mpsc::unbounded_channel().1,
                    control: control_rx,
                    network: None,
                },
                Arc::new(Mutex::new(Status::default())),
            ));
            (task, control)
        }
    };
    let ask = |control: &tokio::sync::mpsc::UnboundedSender<switchyard_client::control::Call>,
               request: Request| {
        let control = control.clone();
        async move {
            let (tx, rx) = tokio::sync::oneshot::channel();
            control.send((request, tx)).unwrap();
            rx.await.unwrap()
        }
    };
    let (task, control) = start().await;
    let answer = ask(
        &control,
        Request::Mark {
            servers: vec!["B".into()],
        },
    )
    .await;
    assert_eq!(answer["ok"], true, "{answer}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !std::fs::read_to_string(&file).is_ok_and(|t| t.contains("\"marks\":[\"vless:")) {
        assert!(Instant::now() < deadline, "the mark is saved");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    task.abort();
    let _ = task.await;

    // A new run on the same file remembers the mark.
    let (task, control) = start().await;
    let status = ask(&control, Request::Status).await;
    let servers = &status["subscriptions"][0]["servers"];
    assert_eq!(
        (&servers[0]["marked"], &servers[1]["marked"]),
        (&serde_json::json!(false), &serde_json::json!(true)),
        "{status}"
    );
    task.abort();
    let _ = task.await;
    // A damaged file is set aside, never fatal.
    std::fs::write(&file, "{not json").unwrap();
    let (_task2, control) = start().await;
    let status = ask(&control, Request::Status).await;
    assert_eq!(status["ok"], true);
    assert!(file.with_extension("bad").exists());
}
