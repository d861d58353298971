//! The dialer: back-off figures on paused time with a scripted connector, the rest on
//! real loopback TLS.

use crate::link_support as support;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchyard_tunnel::credentials::tunnel_tag;
use switchyard_tunnel::link::dialer::{Connecting, Connector, DialError};
use switchyard_tunnel::link::handshake::HandshakeError;
use switchyard_tunnel::link::transport::ConnectError;
use switchyard_tunnel::link::{Dialer, DialerConfig, Link, Target, Transport, issue};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::time::Instant;

use support::*;

/// Fails unless the script says otherwise; records when each attempt started.
#[derive(Clone, Default)]
struct Scripted {
    script: Arc<Mutex<VecDeque<bool>>>,
    attempts: Arc<Mutex<Vec<Instant>>>,
    far_ends: Arc<Mutex<Vec<tokio::io::DuplexStream>>>,
}

impl Connector for Scripted {
    fn connect(&self, target: &Target) -> Connecting {
        self.attempts.lock().unwrap().push(Instant::now());
        let ok = self.script.lock().unwrap().pop_front().unwrap_or(false);
        let (near, far) = tokio::io::duplex(64);
        self.far_ends.lock().unwrap().push(far);
        let target = target.to_string();
        Box::pin(async move {
            if ok {
                Ok(Box::new(near) as _)
            } else {
                Err(DialError::Connect(ConnectError::Tcp {
                    target,
                    kind: std::io::ErrorKind::ConnectionRefused,
                    reason: "refused".into(),
                }))
            }
        })
    }
}

impl Scripted {
    /// When attempts started; a healthy address dials all its missing links at once,
    /// so a wave counts once.
    fn attempts(&self) -> Vec<Instant> {
        let mut at = self.attempts.lock().unwrap().clone();
        at.dedup();
        at
    }

    /// Lets virtual time run until attempts were made at `n` different times.
    async fn until_attempts(&self, n: usize) {
        while self.attempts().len() < n {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn fake_target() -> Target {
    target(
        "127.0.0.1:9".parse().unwrap(),
        issue(TUNNEL).unwrap().pin,
        Transport::Tls,
    )
}

fn gaps(at: &[Instant]) -> Vec<Duration> {
    at.windows(2).map(|w| w[1] - w[0]).collect()
}

/// A wait for the k-th failure in a row is between half and all of 1 s · 2^(k−1),
/// capped at 60 s.
fn assert_backoff(gaps: &[Duration]) {
    for (k, gap) in gaps.iter().enumerate() {
        let full = Duration::from_secs(1 << k.min(6)).min(Duration::from_secs(60));
        // The test sleeps in 100 ms steps, but attempts are stamped by the connector.
        assert!(
            *gap >= full / 2 && *gap <= full,
            "wait {k}: {gap:?} for {full:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_failing_address_backs_off_from_one_second_to_a_minute() {
    let c = Scripted::default();
    let (dialer, _links) = Dialer::with_connector(vec![fake_target()], &[4], c.clone());
    c.until_attempts(10).await;
    let at = c.attempts();
    assert_backoff(&gaps(&at));
    let s = &dialer.status()[0];
    assert_eq!((s.wanted, s.connected), (4, 0));
    assert!(s.failures >= 9, "{s:?}");
    assert!(s.next_attempt_in.unwrap() <= Duration::from_secs(60));
    assert!(matches!(
        s.last_error,
        Some(DialError::Connect(ConnectError::Tcp { .. }))
    ));
}

#[tokio::test(start_paused = true)]
async fn a_stable_link_resets_the_back_off_and_a_flap_does_not() {
    let c = Scripted::default();
    c.script.lock().unwrap().extend([false, false, false, true]);
    let (dialer, mut links) = Dialer::with_connector(vec![fake_target()], &[1], c.clone());
    let link: Link = links.recv().await.unwrap();
    assert_backoff(&gaps(&c.attempts()));
    assert_eq!(dialer.status()[0].connected, 1);
    // Up past STABLE, then dropped: the next failures start from 1 s again.
    tokio::time::sleep(Duration::from_secs(11)).await;
    let dropped_at = Instant::now();
    drop(link);
    c.until_attempts(7).await;
    let after: Vec<_> = c.attempts()[4..].to_vec();
    assert_eq!(after[0], dropped_at, "redialed at once");
    assert_backoff(&gaps(&after));

    // A link that flaps counts as a failure: no redial at once.
    c.script.lock().unwrap().push_back(true);
    let n = c.attempts().len();
    c.until_attempts(n + 1).await;
    let flap = links.recv().await.unwrap();
    drop(flap);
    let dropped_at = Instant::now();
    c.until_attempts(n + 2).await;
    assert!(c.attempts()[n + 1] > dropped_at);
}

#[tokio::test(start_paused = true)]
async fn reset_makes_a_waiting_address_try_at_once() {
    let c = Scripted::default();
    let (dialer, _links) = Dialer::with_connector(vec![fake_target()], &[2], c.clone());
    c.until_attempts(6).await;
    assert!(dialer.status()[0].next_attempt_in.unwrap() > Duration::ZERO);
    let now = Instant::now();
    dialer.reset();
    c.until_attempts(7).await;
    assert_eq!(c.attempts()[6], now);
    // The back-off starts over too.
    c.until_attempts(9).await;
    assert_backoff(&gaps(&c.attempts()[6..]));
}

/// Waits for `n` links and echoes-checks each.
async fn take_links(links: &mut mpsc::UnboundedReceiver<Link>, n: usize) -> Vec<Link> {
    let mut got = Vec::new();
    for _ in 0..n {
        let mut link = links.recv().await.unwrap();
        assert_eq!(round_trip(&mut link.stream, b"ping").await, b"ping");
        got.push(link);
    }
    got
}

/// Echoes every link a relay admits.
fn echo_all(mut rx: mpsc::Receiver<switchyard_tunnel::link::Accepted>) {
    tokio::spawn(async move {
        while let Some(link) = rx.recv().await {
            echo(link);
        }
    });
}

#[tokio::test]
async fn refusals_and_pin_mismatches_show_in_status() {
    let cert = issue(TUNNEL).unwrap();
    let (addr, listener, rx) = relay(&cert, Transport::Tls, admit(&["fi", "de"])).await;
    echo_all(rx);
    let good = target(addr, cert.pin, Transport::Tls);
    let mut wrong_tag = hello("fi");
    wrong_tag.tag = tunnel_tag("us");
    let mut bad_credential = hello("fi");
    bad_credential.credential = hello("de").credential;
    for (i, h) in [wrong_tag, hello("pl"), bad_credential]
        .into_iter()
        .enumerate()
    {
        let (dialer, _links) = Dialer::start(DialerConfig::new(vec![good.clone()], h));
        eventually(|| {
            let s = &dialer.status()[0];
            matches!(
                &s.last_error,
                Some(DialError::Handshake {
                    error: HandshakeError::Refused,
                    ..
                })
            ) && s.connected == 0
        })
        .await;
        let r = listener.gate().refusals();
        let counts = [r.wrong_tag, r.unknown_origin, r.bad_credential];
        assert!(
            counts[i] >= 1 && counts.iter().sum::<u64>() == r.total(),
            "{r:?}"
        );
    }
    let other = issue(TUNNEL).unwrap();
    let pinned_wrong = target(addr, other.pin, Transport::Tls);
    let (dialer, _links) = Dialer::start(DialerConfig::new(vec![pinned_wrong], hello("fi")));
    eventually(|| {
        let s = &dialer.status()[0];
        s.last_error
            .as_ref()
            .is_some_and(|e| e.to_string().contains("pin mismatch"))
    })
    .await;
}

#[tokio::test]
async fn a_refusing_address_waits_while_the_others_carry_the_links() {
    let cert = issue(TUNNEL).unwrap();
    let impostor = issue(TUNNEL).unwrap();
    let (bad, _l0, rx0) = relay(&impostor, Transport::Tls, admit(&["fi"])).await;
    let (tls, _l1, rx1) = relay(&cert, Transport::Tls, admit(&["fi"])).await;
    let (ws_addr, _l2, rx2) = relay(&cert, ws(), admit(&["fi"])).await;
    for rx in [rx0, rx1, rx2] {
        echo_all(rx);
    }
    let targets = vec![
        target(bad, cert.pin, Transport::Tls),
        target(tls, cert.pin, Transport::Tls),
        target(ws_addr, cert.pin, ws()),
    ];
    let mut config = DialerConfig::new(targets, hello("fi"));
    config.wanted = vec![2; config.targets.len()];
    let (dialer, mut links) = Dialer::start(config);
    let got = take_links(&mut links, 4).await;
    let mut by_target: Vec<_> = got.iter().map(|l| l.target).collect();
    by_target.sort();
    assert_eq!(by_target, [1, 1, 2, 2]);
    eventually(|| dialer.status()[0].failures > 0).await;
    let s = dialer.status();
    assert_eq!((s[0].connected, s[1].connected, s[2].connected), (0, 2, 2));
    assert!(matches!(
        s[0].last_error,
        Some(DialError::Connect(ConnectError::Pin { .. }))
    ));
    assert!(s[0].next_attempt_in.is_some() || s[0].failures > 0);
}

#[tokio::test]
async fn an_address_that_comes_back_is_used_again() {
    let cert = issue(TUNNEL).unwrap();
    let spot = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = spot.local_addr().unwrap();
    drop(spot);
    let mut config = DialerConfig::new(vec![target(addr, cert.pin, Transport::Tls)], hello("fi"));
    config.wanted = vec![2; config.targets.len()];
    let (dialer, mut links) = Dialer::start(config);
    eventually(|| dialer.status()[0].failures > 0).await;
    assert!(matches!(
        dialer.status()[0].last_error,
        Some(DialError::Connect(ConnectError::Tcp { .. }))
    ));

    let tcp = TcpListener::bind(addr).await.unwrap();
    let (_, _listener, rx) = relay_on(tcp, &cert, Transport::Tls, admit(&["fi"]));
    echo_all(rx);
    dialer.reset();
    let mut got = take_links(&mut links, 2).await;
    eventually(|| dialer.status()[0].connected == 2).await;

    // A link the pool drops is dialed again.
    got.pop();
    eventually(|| dialer.status()[0].connected == 1).await;
    take_links(&mut links, 1).await;
    assert_eq!(dialer.status()[0].connected, 2);
}
