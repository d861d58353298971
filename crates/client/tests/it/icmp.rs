//! ICMP probes for real, in network namespaces (`testkit::netns`): from a runtime
//! inside `client`, allowed unprivileged ICMP sockets, a probe of a server at
//! 10.77.0.1 (the kernel of `servers` answers the echo) is answered; once the link is
//! cut it is not, well within the timeout; restored, it is again. Where the system
//! refuses ICMP sockets (`ping_group_range` "1 0", the kernel's default), the probe
//! says so in words.

use std::sync::Arc;
use std::time::{Duration, Instant};

use switchyard_auto::{Method, ProbeReply};
use switchyard_client::Outbound;
use switchyard_client::probe::icmp::{self, IcmpError};
use switchyard_client::probe::{ProbeUrl, probe};
use switchyard_testkit::netns::{self, NetNs, NsRuntime};

const TIMEOUT: Duration = Duration::from_secs(2);

/// A server entry at `host`: ICMP probes only use its host.
fn server(host: &str) -> Arc<Outbound> {
    let link = format!(
        "vless://b831381d-6324-4d53-ad4f-8cda48b30811@{host}:443?type=tcp&security=none#icmp"
    );
    let entry = switchyard_proto::share::parse_link(&link).unwrap();
    Arc::new(Outbound::new(entry).unwrap())
}

/// `probe(server, icmp)` run inside the namespace of `rt`.
async fn probe_in(rt: &NsRuntime, server: &Arc<Outbound>) -> ProbeReply {
    let (server, url) = (
        server.clone(),
        ProbeUrl::parse("http://127.0.0.1/").unwrap(),
    );
    rt.run(async move { probe(&server, Method::Icmp, &url, TIMEOUT).await })
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_icmp_probe_is_answered_over_the_link_and_not_once_it_is_cut() {
    let pair = netns::pair().unwrap();
    pair.client
        .sysctl("net.ipv4.ping_group_range", "0 2147483647")
        .unwrap();
    let rt = pair.client.runtime_in().unwrap();
    let host = pair.servers_addr().to_string();
    let server = server(&host);

    rt.run(async { icmp::check_available() }).await.unwrap();
    let h = host.clone();
    let round_trip = rt
        .run(async move { icmp::ping(&h, TIMEOUT).await })
        .await
        .unwrap();
    assert!(round_trip < Duration::from_millis(500), "{round_trip:?}");
    match probe_in(&rt, &server).await {
        ProbeReply::Answered {
            total_ms,
            request_ms: None,
            status: None,
        } => assert!((1..500).contains(&total_ms), "{total_ms} ms"),
        other => panic!("no answer over a working link: {other:?}"),
    }

    pair.cut().unwrap();
    let started = Instant::now();
    let h = host.clone();
    let err = rt
        .run(async move { icmp::ping(&h, TIMEOUT).await })
        .await
        .unwrap_err();
    // No route: the socket's connect fails at once, not after the timeout.
    assert!(
        matches!(&err, IcmpError::Network { reason, .. } if reason.contains("unreachable")),
        "{err}"
    );
    assert!(started.elapsed() < TIMEOUT / 2, "{:?}", started.elapsed());
    let started = Instant::now();
    assert_eq!(probe_in(&rt, &server).await, ProbeReply::NoAnswer);
    assert!(started.elapsed() <= TIMEOUT + Duration::from_millis(500));

    pair.restore().unwrap();
    assert!(
        matches!(probe_in(&rt, &server).await, ProbeReply::Answered { .. }),
        "no answer after the link came back"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn where_icmp_sockets_are_refused_the_probe_says_so() {
    let ns = NetNs::new().unwrap();
    ns.sysctl("net.ipv4.ping_group_range", "1 0").unwrap();
    let rt = ns.runtime_in().unwrap();
    let gid = rt
        .run(async {
            std::fs::read_to_string("/proc/self/status")
                .unwrap()
                .lines()
                .find_map(|l| l.strip_prefix("Gid:"))
                .and_then(|ids| ids.split_whitespace().nth(1)?.parse::<u32>().ok())
                .unwrap()
        })
        .await;

    let err = rt.run(async { icmp::check_available() }).await.unwrap_err();
    assert_eq!(
        err,
        IcmpError::Unavailable {
            gid,
            range: Some("1 0".into())
        }
    );
    assert_eq!(
        err.to_string(),
        format!(
            "ICMP is unavailable: this system does not allow unprivileged ICMP sockets for \
             group {gid} (net.ipv4.ping_group_range is \"1 0\"); use --probe url or tcp, or \
             widen the range"
        )
    );
    // A probe says the same, at once, and counts as no answer.
    let started = Instant::now();
    let ping = rt
        .run(async { icmp::ping("127.0.0.1", TIMEOUT).await })
        .await;
    assert_eq!(ping, Err(err));
    assert_eq!(
        probe_in(&rt, &server("127.0.0.1")).await,
        ProbeReply::NoAnswer
    );
    assert!(started.elapsed() < TIMEOUT / 2, "{:?}", started.elapsed());
}
