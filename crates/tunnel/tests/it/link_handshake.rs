//! The hello: who is admitted, who is refused and how refusals are counted.

use crate::link_support as support;

use std::time::{Duration, SystemTime};

use switchyard_tunnel::credentials::tunnel_tag;
use switchyard_tunnel::frame::Hello;
use switchyard_tunnel::link::handshake::{HandshakeError, accept_hello, read_hello, send_hello};
use switchyard_tunnel::link::transport::connect;
use switchyard_tunnel::link::{Admitted, Gate, Refusal, Transport, issue};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use support::*;

const DEADLINE: Duration = Duration::from_secs(10);

#[tokio::test]
async fn reverse_mode_admits_known_origins_and_counts_every_refusal() {
    let cert = issue(TUNNEL).unwrap();
    let (addr, listener, mut links) = relay(&cert, Transport::Tls, admit(&["fi", "de"])).await;
    let t = target(addr, cert.pin, Transport::Tls);
    let dial = |h: Hello| {
        let t = t.clone();
        async move { send_hello(connect(&t, DEADLINE).await.unwrap(), &h, DEADLINE).await }
    };

    let mut ok = dial(hello("fi")).await.unwrap();
    let link = links.recv().await.unwrap();
    assert_eq!(link.origin, "fi");
    echo(link);
    assert_eq!(round_trip(&mut ok, b"hi").await, b"hi");

    let mut wrong_tag = hello("fi");
    wrong_tag.tag = tunnel_tag("us");
    let mut bad_credential = hello("fi");
    bad_credential.credential = hello("de").credential;
    let cases = [
        (wrong_tag, Refusal::WrongTag),
        (hello("pl"), Refusal::UnknownOrigin),
        (bad_credential, Refusal::BadCredential),
    ];
    for (h, why) in cases {
        assert_eq!(dial(h.clone()).await.err(), Some(HandshakeError::Refused));
        let r = listener.gate().refusals();
        let (_, origin, last) = r.last.clone().unwrap();
        assert_eq!((origin.as_str(), last), (h.origin.as_str(), why));
    }
    let r = listener.gate().refusals();
    assert_eq!(
        (r.wrong_tag, r.unknown_origin, r.bad_credential, r.total()),
        (1, 1, 1, 3)
    );
    assert!(
        links.try_recv().is_err(),
        "no refused link reaches the pool"
    );
}

#[tokio::test]
async fn a_removed_origin_is_refused_from_then_on_and_the_change_is_announced() {
    let cert = issue(TUNNEL).unwrap();
    let admitted = admit(&["fi"]);
    let mut changes = admitted.watch();
    let (addr, listener, mut links) = relay(&cert, Transport::Tls, admitted.clone()).await;
    let t = target(addr, cert.pin, Transport::Tls);
    let up = send_hello(connect(&t, DEADLINE).await.unwrap(), &hello("fi"), DEADLINE).await;
    assert!(up.is_ok());
    let link = links.recv().await.unwrap();

    let before = admitted.generation();
    assert!(admitted.remove("fi"));
    // The pool watches the table and drops the removed origin's links at once.
    changes.changed().await.unwrap();
    assert!(admitted.generation() > before);
    assert!(!admitted.contains(&link.origin));

    let again = send_hello(connect(&t, DEADLINE).await.unwrap(), &hello("fi"), DEADLINE).await;
    assert_eq!(again.err(), Some(HandshakeError::Refused));
    assert_eq!(listener.gate().refusals().unknown_origin, 1);

    // Admitting it again (or changing its credential) is live too.
    admitted.insert("fi", credential("fi"));
    let back = send_hello(connect(&t, DEADLINE).await.unwrap(), &hello("fi"), DEADLINE).await;
    assert!(back.is_ok());
}

#[tokio::test]
async fn direct_mode_the_origin_admits_only_itself_with_its_own_credential() {
    // The origin listens; the relay dials with the origin's credential.
    let cert = issue(TUNNEL).unwrap();
    let (addr, listener, mut links) = relay(&cert, Transport::Tls, admit(&["fi"])).await;
    let t = target(addr, cert.pin, Transport::Tls);
    let relay_says = hello("fi");
    let s = send_hello(connect(&t, DEADLINE).await.unwrap(), &relay_says, DEADLINE).await;
    assert!(s.is_ok());
    assert_eq!(links.recv().await.unwrap().origin, "fi");
    // A relay holding another origin's values opens nothing here.
    let stray = send_hello(connect(&t, DEADLINE).await.unwrap(), &hello("de"), DEADLINE).await;
    assert_eq!(stray.err(), Some(HandshakeError::Refused));
    assert_eq!(listener.gate().refusals().unknown_origin, 1);
}

#[tokio::test]
async fn the_hello_is_read_exactly_and_junk_is_refused_without_an_answer() {
    let gate = Gate::new(&tunnel_tag(TUNNEL), admit(&["fi"]));
    let (mut a, mut b) = tokio::io::duplex(4096);
    let mut bytes = Vec::new();
    hello("fi").encode(&mut bytes);
    bytes.extend_from_slice(b"first frame");
    a.write_all(&bytes).await.unwrap();
    let origin = accept_hello(&mut b, &gate, DEADLINE, SystemTime::now).await;
    assert_eq!(origin.as_deref(), Ok("fi"));
    assert_eq!(a.read_u8().await.unwrap(), 0);
    let mut rest = [0; 11];
    b.read_exact(&mut rest).await.unwrap();
    assert_eq!(&rest, b"first frame", "nothing past the hello was consumed");

    let (mut a, mut b) = tokio::io::duplex(4096);
    a.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    let err = read_hello(&mut b).await.err().unwrap();
    assert!(matches!(err, HandshakeError::Malformed(_)), "{err}");
}

#[tokio::test(start_paused = true)]
async fn a_silent_peer_times_out() {
    let gate = Gate::new(&tunnel_tag(TUNNEL), Admitted::default());
    let (_a, mut b) = tokio::io::duplex(64);
    let err = accept_hello(&mut b, &gate, DEADLINE, SystemTime::now).await;
    assert_eq!(err, Err(HandshakeError::Timeout(DEADLINE)));
    assert_eq!(gate.refusals().total(), 0);
}
