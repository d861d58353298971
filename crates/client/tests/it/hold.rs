//! Connections held while Auto waits for a check's verdict: two real nodes behind
//! the fault injector, Auto on the first. Right after a scheduled check (so in the
//! spec's 15 s quiet time, when no check may start) the first server's port closes.
//! Every connection the app opens from then on is held for the check the refusal
//! starts when the quiet time ends, for a second at most: then the second server,
//! standing by, carries it. None fails within an app's usual 5 s, and Auto itself
//! moves only when the quiet time allows.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use switchyard_client::auto::{AutoSettings, Inputs, Status, SubscriptionServers};
use switchyard_client::probe::ProbeUrl;
use switchyard_client::{Outbound, Proxy};
use switchyard_testkit::HttpTarget;
use switchyard_testkit::fault::FaultProxy;

use crate::auto_live::{entry, node};

/// One 16 KiB download through the proxy's SOCKS5 port, within `timeout`.
async fn request(proxy: SocketAddr, target: SocketAddr, timeout: Duration) -> bool {
    let once = async {
        let s = switchyard_testkit::socks5::connect(proxy, target).await?;
        switchyard_testkit::http::get_bytes(s, 16 * 1024).await
    };
    matches!(tokio::time::timeout(timeout, once).await, Ok(Ok(n)) if n == 16 * 1024)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_opened_while_the_current_server_refuses_in_the_quiet_time_all_pass() {
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
    let log = || status.lock().unwrap().log.clone();
    let deadline = Instant::now() + Duration::from_secs(10);
    while current().as_deref() != Some("A") {
        assert!(Instant::now() < deadline, "Auto starts on A: {:?}", log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (addr, target_addr) = (proxy.addr(), target.addr());
    assert!(request(addr, target_addr, Duration::from_secs(5)).await);
    // Once more after the driver's first traffic sample (its baseline), so that the
    // traffic counts as the device in use.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(request(addr, target_addr, Duration::from_secs(5)).await);

    // A scheduled check (the driver's clock 5 minutes on; there was traffic): A
    // answers, Auto stays, and no check may start for the next 15 s.
    clock.skip(Duration::from_secs(300));
    let deadline = Instant::now() + Duration::from_secs(8);
    while !log().iter().any(|l| l.contains("(scheduled): stay")) {
        assert!(Instant::now() < deadline, "a scheduled check: {:?}", log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // A's port closes: connections to it are refused. The app opens one connection
    // every 300 ms for 6 s, each allowed 5 s (the quiet time's end plus the check
    // is up to 21 s away: only a server standing by can answer in time).
    let refused = Instant::now();
    let a_addr = fault_a.addr();
    drop(fault_a);
    // The injector's listener closes with its task, a moment later: a connection in
    // that moment would be accepted and reset, not refused.
    while tokio::net::TcpStream::connect(a_addr).await.is_ok() {
        assert!(
            refused.elapsed() < Duration::from_secs(5),
            "A's port closes"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut requests = Vec::new();
    for _ in 0..20 {
        requests.push(tokio::spawn(async move {
            let started = Instant::now();
            let ok = request(addr, target_addr, Duration::from_secs(5)).await;
            (ok, started.elapsed())
        }));
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let mut failures = 0;
    let mut longest = Duration::ZERO;
    for r in requests {
        let (ok, took) = r.await.unwrap();
        failures += usize::from(!ok);
        longest = longest.max(took);
    }
    assert_eq!(failures, 0, "no connection fails: {:?}", log());
    assert!(
        longest < Duration::from_secs(3),
        "a held connection waits a second, then a standby carries it: {longest:?}"
    );
    // Auto itself moves once the quiet time lets the refusal's check start.
    let deadline = Instant::now() + Duration::from_secs(25);
    while !log()
        .iter()
        .any(|l| l.contains("(connect_failure): switch"))
    {
        assert!(Instant::now() < deadline, "{:?}", log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!(
        "switched after {:?}; the longest request took {longest:?}",
        refused.elapsed()
    );
    assert_eq!(current().as_deref(), Some("B"), "{:?}", log());
    assert!(
        log()
            .iter()
            .any(|l| l.contains("(connect_failure): switch")),
        "the refusal's check moved Auto: {:?}",
        log()
    );
    assert!(request(addr, target_addr, Duration::from_secs(5)).await);
    drop(fault_b);
}
