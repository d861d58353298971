//! The Hysteria 2 inbound against the real clients, sing-box 1.14.4 and mihomo 1.19.2,
//! with and without Salamander: 4 MiB down and 1 MiB up (every byte checked) and UDP
//! echoes of 1200 and 3000 bytes (the latter fragmented in QUIC datagrams), all counted
//! on Alice; a wrong password carries and counts nothing; a user disabled or removed
//! by a live apply is refused on its next connection; a changed obfs password rebuilds
//! the inbound on its port; `udp = false` carries TCP only; a busy UDP port is an
//! apply error; validation names the field of each mistake and reads redact the new
//! secrets.

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use switchyard_node::NodeConfig;
use switchyard_testkit::{Mihomo, SingBox, TestCert, free_port, local};

const DOWN: u64 = 4 << 20;
const UP: u64 = 1 << 20;
/// Datagrams echoed: 20 of 1200 bytes and 5 of 3000.
const UDP_BYTES: u64 = 20 * 1200 + 5 * 3000;
const TRANSFER_TIMEOUT: Duration = Duration::from_secs(30);
const ALICE_PASSWORD: &str = "alice-hy2";
const BOB_PASSWORD: &str = "bob-hy2";
const OBFS: &str = "cry_me_a_r1ver";

const TLS: &str = "security = { type = \"tls\", cert = \"@CERT@\", key = \"@KEY@\" }";

/// The inbound's table body: Hysteria 2 over TLS, with Salamander when `salamander`.
fn inbound(salamander: bool) -> String {
    let obfs = if salamander {
        format!("\nhysteria2 = {{ obfs_password = \"{OBFS}\" }}")
    } else {
        String::new()
    };
    format!("protocol = \"hysteria2\"\n{TLS}{obfs}")
}

/// A node with one Hysteria 2 inbound; Alice's password is [`ALICE_PASSWORD`], Bob's
/// [`BOB_PASSWORD`].
async fn node(salamander: bool) -> Fixture {
    node_with(salamander, "").await
}

/// [`node`] with `rules` (`[[route.rules]]` tables) in its config.
async fn node_with(salamander: bool, rules: &str) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let cert = TestCert::new("node.test").unwrap();
    let port = free_port().unwrap();
    let text = config_text(
        port,
        &inbound(salamander),
        &cert,
        dir.path(),
        &format!("hysteria2 = \"{BOB_PASSWORD}\"\n{rules}"),
    )
    .replace(
        "socks = \"alice-socks\"\n",
        &format!("socks = \"alice-socks\"\nhysteria2 = \"{ALICE_PASSWORD}\"\n"),
    );
    start_text(text, dir, cert, port).await
}

fn sing_box_outbound(port: u16, password: &str, salamander: bool) -> Value {
    let mut out = json!({
        "type": "hysteria2", "tag": "proxy",
        "server": "127.0.0.1", "server_port": port, "password": password,
        "tls": { "enabled": true, "server_name": "node.test", "insecure": true },
    });
    if salamander {
        out["obfs"] = json!({ "type": "salamander", "password": OBFS });
    }
    out
}

/// mihomo with a mixed proxy port in front of the node's inbound.
async fn mihomo(port: u16, password: &str, salamander: bool) -> Mihomo {
    let obfs = if salamander {
        format!("    obfs: salamander\n    obfs-password: {OBFS}\n")
    } else {
        String::new()
    };
    let mixed = free_port().unwrap();
    let config = format!(
        "log-level: info\nmixed-port: {mixed}\nbind-address: 127.0.0.1\nallow-lan: false\nmode: rule\nipv6: false\n\
         proxies:\n  - name: hy\n    type: hysteria2\n    server: 127.0.0.1\n    port: {port}\n    password: {password}\n\
         \x20   sni: node.test\n    skip-cert-verify: true\n    udp: true\n{obfs}rules:\n  - MATCH,hy\n"
    );
    Mihomo::start(&config, local(mixed)).await.unwrap()
}

/// Waits (a second at most) for Alice's counters to have grown by `up` and `down`
/// since `(up0, down0)`; the growth.
async fn alice_grew(f: &Fixture, (up0, down0): (u64, u64), up: u64, down: u64) -> (u64, u64) {
    let mut now = f.alice();
    for _ in 0..50 {
        if now.0 - up0 >= up && now.1 - down0 >= down {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        now = f.alice();
    }
    (now.0 - up0, now.1 - down0)
}

/// TCP (4 MiB down, 1 MiB up) then UDP echoes through `proxy`, every byte checked,
/// each counted on Alice.
async fn carry(f: &Fixture, proxy: SocketAddr, what: &str, log: impl Fn() -> String) {
    let start = f.alice();
    let tcp = async {
        f.http.download_via_socks(proxy, DOWN).await?;
        f.http.upload_via_socks(proxy, UP).await
    };
    match tokio::time::timeout(TRANSFER_TIMEOUT, tcp).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("{what} TCP: {e:#}\n{}", log()),
        Err(_) => panic!("{what} TCP: stalled\n{}", log()),
    }
    let (up, down) = alice_grew(f, start, UP, DOWN).await;
    // Payload plus the HTTP heads of the two requests.
    assert!((DOWN..DOWN + 4096).contains(&down), "{what}: down {down}");
    assert!((UP..UP + 4096).contains(&up), "{what}: up {up}");

    let start = f.alice();
    let udp = async {
        f.udp.check_via_socks(proxy, 20, 1200).await?;
        f.udp.check_via_socks(proxy, 5, 3000).await
    };
    match tokio::time::timeout(TRANSFER_TIMEOUT, udp).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("{what} UDP: {e:#}\n{}", log()),
        Err(_) => panic!("{what} UDP: stalled\n{}", log()),
    }
    let (up, down) = alice_grew(f, start, UDP_BYTES, UDP_BYTES).await;
    // Every datagram once, or again when an echo came late.
    assert!(
        (UDP_BYTES..2 * UDP_BYTES).contains(&up),
        "{what}: UDP up {up}"
    );
    assert!(
        (UDP_BYTES..2 * UDP_BYTES).contains(&down),
        "{what}: UDP down {down}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sing_box_carries_tcp_and_udp_over_hysteria2_with_and_without_salamander() {
    for salamander in [false, true] {
        let f = node(salamander).await;
        let client = SingBox::client(sing_box_outbound(f.port, ALICE_PASSWORD, salamander))
            .await
            .unwrap();
        carry(
            &f,
            client.proxy_addr().unwrap(),
            &format!("sing-box, salamander={salamander}"),
            || client.log_tail(),
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mihomo_carries_tcp_and_udp_over_hysteria2_with_and_without_salamander() {
    for salamander in [false, true] {
        let f = node(salamander).await;
        let client = mihomo(f.port, ALICE_PASSWORD, salamander).await;
        carry(
            &f,
            client.proxy_addr(),
            &format!("mihomo, salamander={salamander}"),
            || client.log_tail(),
        )
        .await;
    }
}

/// Whether a 1 KiB download through `proxy` fails (within 10 s).
async fn refused(f: &Fixture, proxy: SocketAddr) -> bool {
    let got = tokio::time::timeout(
        Duration::from_secs(10),
        f.http.download_via_socks(proxy, 1024),
    )
    .await;
    !matches!(got, Ok(Ok(())))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_or_obfs_password_carries_and_counts_nothing() {
    let f = node(true).await;
    for (password, salamander) in [
        ("wrong-password", true),
        (ALICE_PASSWORD, false),
        ("", true),
    ] {
        let client = SingBox::client(sing_box_outbound(f.port, password, salamander))
            .await
            .unwrap();
        assert!(
            refused(&f, client.proxy_addr().unwrap()).await,
            "password {password:?}, salamander {salamander}: carried"
        );
    }
    assert_eq!(f.http.requests(), 0, "nothing reached the target");
    assert_eq!(f.alice(), (0, 0), "nothing counted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_disabled_or_removed_by_live_apply_is_refused_on_its_next_connection() {
    let f = node(false).await;
    let alice = SingBox::client(sing_box_outbound(f.port, ALICE_PASSWORD, false))
        .await
        .unwrap();
    let bob = SingBox::client(sing_box_outbound(f.port, BOB_PASSWORD, false))
        .await
        .unwrap();
    let (alice_proxy, bob_proxy) = (alice.proxy_addr().unwrap(), bob.proxy_addr().unwrap());
    for (proxy, who) in [(alice_proxy, "alice"), (bob_proxy, "bob")] {
        assert!(!refused(&f, proxy).await, "{who} before the change");
    }

    // Alice disabled: her open connection is closed, her next one refused; Bob goes on.
    let mut c = f.node.config().await;
    c.version += 1;
    c.users[0].enabled = false;
    f.node.apply(c).await.unwrap();
    assert!(refused(&f, alice_proxy).await, "disabled alice carried");
    assert!(
        !refused(&f, bob_proxy).await,
        "bob after alice was disabled"
    );

    // Bob removed.
    let mut c = f.node.config().await;
    c.version += 1;
    c.users.retain(|u| u.name != "bob");
    f.node.apply(c).await.unwrap();
    assert!(refused(&f, bob_proxy).await, "removed bob carried");

    // Alice enabled again: her client reconnects.
    let mut c = f.node.config().await;
    c.version += 1;
    c.users[0].enabled = true;
    f.node.apply(c).await.unwrap();
    assert!(
        !refused(&f, alice_proxy).await,
        "alice enabled again\n{}",
        alice.log_tail()
    );
}

/// The node config of one inbound (`inbound`, a table body) and users (`users`,
/// `[[users]]` tables).
fn parse(inbound: &str, users: &str) -> Result<NodeConfig, String> {
    let text = format!(
        "[[inbounds]]\ntag = \"hy\"\nport = 8443\n{}\n{users}",
        inbound
            .replace("@CERT@", "/etc/node/cert.pem")
            .replace("@KEY@", "/etc/node/key.pem")
    );
    NodeConfig::from_toml(&text).map_err(|e| e.to_string())
}

/// sing-box puts every connection on its one QUIC connection: 300 held open at once
/// (past the old cap of 256 streams) all reach their destination and answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_connections_from_sing_box_are_open_at_once() {
    let f = node(false).await;
    let client = SingBox::client(sing_box_outbound(f.port, ALICE_PASSWORD, false))
        .await
        .unwrap();
    let socks = client.proxy_addr().unwrap();
    crate::grpc::hold_open(socks, 300, || client.log_tail()).await;
}

#[test]
fn validation_names_the_field_of_each_mistake() {
    let user = "[[users]]\nname = \"alice\"\nhysteria2 = \"pw\"\n";
    assert!(parse(&inbound(true), user).is_ok());
    for site in [
        "https://www.example.com",
        "http://127.0.0.1:8080/",
        "https://[::1]:8443/any/path",
    ] {
        let masquerade = format!(
            "{}\nhysteria2 = {{ masquerade = \"{site}\" }}",
            inbound(false)
        );
        assert!(parse(&masquerade, user).is_ok(), "{site}");
    }
    let cases = [
        (
            "protocol = \"hysteria2\"",
            "inbounds[0].security: hysteria2 runs over QUIC",
        ),
        (
            &format!(
                "{}\ntransport = {{ type = \"ws\", path = \"/x\" }}",
                inbound(false)
            ),
            "inbounds[0].transport",
        ),
        (
            &format!("{}\nfallback = \"127.0.0.1:80\"", inbound(false)),
            "inbounds[0].fallback",
        ),
        (
            &format!("{}\nflow = \"xtls-rprx-vision\"", inbound(false)),
            "inbounds[0].flow",
        ),
        (
            &format!("{}\nhysteria2 = {{ obfs_password = \"\" }}", inbound(false)),
            "inbounds[0].hysteria2.obfs_password",
        ),
        (
            &format!("{}\nhysteria2 = {{ up_mbps = 0 }}", inbound(false)),
            "inbounds[0].hysteria2.up_mbps",
        ),
        (
            &format!(
                "{}\nhysteria2 = {{ masquerade = \"ftp://site.test\" }}",
                inbound(false)
            ),
            "inbounds[0].hysteria2.masquerade",
        ),
        (
            &format!(
                "{}\nhysteria2 = {{ masquerade = \"https://u@site.test\" }}",
                inbound(false)
            ),
            "inbounds[0].hysteria2.masquerade",
        ),
        (
            &format!(
                "{}\nhysteria2 = {{ masquerade = \"http://site.test:0/\" }}",
                inbound(false)
            ),
            "inbounds[0].hysteria2.masquerade",
        ),
        (
            &format!("{}\nhysteria2 = {{ down_mbps = 100001 }}", inbound(false)),
            "inbounds[0].hysteria2.down_mbps",
        ),
        (
            &format!("protocol = \"trojan\"\n{TLS}\nhysteria2 = {{ udp = false }}"),
            "inbounds[0].hysteria2",
        ),
    ];
    for (body, field) in cases {
        let e = parse(body, user).expect_err(body);
        assert!(e.contains(field), "{body}: {e}");
    }
    let users = [
        (
            "[[users]]\nname = \"alice\"\nhysteria2 = \"\"\n",
            "users[0].hysteria2",
        ),
        (
            "[[users]]\nname = \"alice\"\nhysteria2 = \"a\\nb\"\n",
            "users[0].hysteria2",
        ),
        (
            "[[users]]\nname = \"alice\"\nhysteria2 = \"pw-9Q\"\n[[users]]\nname = \"bob\"\nhysteria2 = \"pw-9Q\"\n",
            "users[1].hysteria2",
        ),
    ];
    for (users, field) in users {
        let e = parse(&inbound(false), users).expect_err(users);
        assert!(e.contains(field), "{users}: {e}");
        assert!(!e.contains("pw-9Q"), "the password is never shown: {e}");
    }
    // An unknown key in the table is named too.
    let e = parse(
        &format!("{}\nhysteria2 = {{ obfs = \"x\" }}", inbound(false)),
        user,
    )
    .unwrap_err();
    assert!(e.contains("obfs"), "{e}");
}

#[test]
fn reads_redact_the_passwords() {
    let config = parse(
        &inbound(true),
        "[[users]]\nname = \"alice\"\nhysteria2 = \"alice-secret\"\n",
    )
    .unwrap();
    let read = serde_json::to_string(&config.redacted()).unwrap();
    assert!(!read.contains("alice-secret"), "{read}");
    assert!(!read.contains(OBFS), "{read}");
    assert_eq!(read.matches("<redacted>").count(), 2, "{read}");
    assert_eq!(
        config.redacted().redacted_field().as_deref(),
        Some("inbounds[0].hysteria2.obfs_password")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_obfs_password_rebuilds_the_inbound_on_its_port() {
    let f = node(true).await;
    let old = SingBox::client(sing_box_outbound(f.port, ALICE_PASSWORD, true))
        .await
        .unwrap();
    assert!(!refused(&f, old.proxy_addr().unwrap()).await, "before");

    let mut c = f.node.config().await;
    c.version += 1;
    c.inbounds[0].hysteria2 = Some(switchyard_node::config::Hysteria2Settings {
        obfs_password: Some(switchyard_node::config::Secret::new("a-new-obfs-password")),
        ..Default::default()
    });
    f.node.apply(c).await.unwrap();
    let mut new = sing_box_outbound(f.port, ALICE_PASSWORD, true);
    new["obfs"]["password"] = json!("a-new-obfs-password");
    let new = SingBox::client(new).await.unwrap();
    // Every new connection reaches the new endpoint, never the stopped one.
    for i in 0..5 {
        assert!(
            !refused(&f, new.proxy_addr().unwrap()).await,
            "new password, try {i}\n{}",
            new.log_tail()
        );
    }
    assert!(
        refused(&f, old.proxy_addr().unwrap()).await,
        "the old obfs password still works"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn udp_off_carries_tcp_only() {
    let dir = tempfile::tempdir().unwrap();
    let cert = TestCert::new("node.test").unwrap();
    let port = free_port().unwrap();
    let text = config_text(
        port,
        &format!("protocol = \"hysteria2\"\n{TLS}\nhysteria2 = {{ udp = false }}"),
        &cert,
        dir.path(),
        "",
    )
    .replace(
        "socks = \"alice-socks\"\n",
        &format!("socks = \"alice-socks\"\nhysteria2 = \"{ALICE_PASSWORD}\"\n"),
    );
    let f = start_text(text, dir, cert, port).await;
    let client = SingBox::client(sing_box_outbound(f.port, ALICE_PASSWORD, false))
        .await
        .unwrap();
    let proxy = client.proxy_addr().unwrap();
    assert!(!refused(&f, proxy).await, "TCP\n{}", client.log_tail());
    let udp = tokio::time::timeout(
        Duration::from_secs(10),
        f.udp.check_via_socks(proxy, 1, 100),
    )
    .await;
    assert!(!matches!(udp, Ok(Ok(()))), "UDP carried");
}

#[tokio::test]
async fn a_busy_udp_port_is_an_apply_error_naming_the_inbound() {
    let f = node(false).await;
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut c = f.node.config().await;
    c.version += 1;
    let second = switchyard_node::config::InboundConfig {
        tag: "second".into(),
        port: taken.local_addr().unwrap().port(),
        ..c.inbounds[0].clone()
    };
    c.inbounds.push(second);
    let e = f.node.apply(c).await.unwrap_err().to_string();
    assert!(e.starts_with("inbound \"second\": UDP port "), "{e}");
}

/// A free port of 127.0.0.1 with the next `n - 1` free as well (for UDP).
fn consecutive_free(n: u16) -> u16 {
    for _ in 0..200 {
        let first = free_port().unwrap();
        if first > u16::MAX - n {
            continue;
        }
        let free = (first..first + n).all(|p| std::net::UdpSocket::bind(("127.0.0.1", p)).is_ok());
        if free {
            return first;
        }
    }
    panic!("no {n} consecutive free UDP ports");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_range_serves_clients_on_any_of_its_ports() {
    let first = consecutive_free(4);
    let last = first + 3;
    let dir = tempfile::tempdir().unwrap();
    let cert = TestCert::new("node.test").unwrap();
    let inbound =
        format!("protocol = \"hysteria2\"\n{TLS}\nhysteria2 = {{ ports = \"{first}-{last}\" }}");
    let text = config_text(first, &inbound, &cert, dir.path(), "").replace(
        "socks = \"alice-socks\"\n",
        &format!("socks = \"alice-socks\"\nhysteria2 = \"{ALICE_PASSWORD}\"\n"),
    );
    let f = start_text(text, dir, cert, first).await;
    // Every port of the range is the node's now.
    for port in first..=last {
        assert!(
            std::net::UdpSocket::bind(("127.0.0.1", port)).is_err(),
            "port {port} is not bound"
        );
    }
    // sing-box picks its port in the range; mihomo goes to its last port.
    let mut out = sing_box_outbound(first, ALICE_PASSWORD, false);
    out.as_object_mut().unwrap().remove("server_port");
    out["server_ports"] = json!([format!("{first}:{last}")]);
    let client = SingBox::client(out).await.unwrap();
    carry(
        &f,
        client.proxy_addr().unwrap(),
        "sing-box on the range",
        || client.log_tail(),
    )
    .await;
    let client = mihomo(last, ALICE_PASSWORD, false).await;
    carry(
        &f,
        client.proxy_addr(),
        "mihomo on the range's last port",
        || client.log_tail(),
    )
    .await;
}

#[test]
fn a_port_range_that_does_not_read_or_overlaps_names_its_field() {
    let cert = TestCert::new("node.test").unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (ports, why) in [
        ("20000", "first-last"),
        ("20010-20000", "first <= last"),
        ("0-10", "first <= last"),
        ("20000-20100", "at most 100"),
    ] {
        let inbound =
            format!("protocol = \"hysteria2\"\n{TLS}\nhysteria2 = {{ ports = \"{ports}\" }}");
        let text = config_text(443, &inbound, &cert, dir.path(), "");
        let e = NodeConfig::from_toml(&text).unwrap_err().to_string();
        assert!(
            e.starts_with("inbounds[0].hysteria2.ports:") && e.contains(why),
            "{ports}: {e}"
        );
    }
    // A range over another inbound's port.
    let inbound = format!(
        "protocol = \"hysteria2\"\n{TLS}\nhysteria2 = {{ ports = \"20000-20010\" }}\n\
         [[inbounds]]\ntag = \"other\"\nname = \"other\"\nprotocol = \"vless\"\nport = 20005\nlisten = \"127.0.0.1\""
    );
    let text = config_text(443, &inbound, &cert, dir.path(), "");
    let e = NodeConfig::from_toml(&text).unwrap_err().to_string();
    assert!(
        e.starts_with("inbounds[1].port:") && e.contains("overlaps inbounds[0]"),
        "{e}"
    );
}

/// "No torrents" reaches Hysteria 2's TCP streams too: with the rule, a peer
/// handshake through sing-box's Hysteria 2 outbound reaches no peer, an HTTP download
/// passes, and the blocked stream is counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bittorrent_rule_blocks_hysteria2_streams_too() {
    let f = node_with(
        false,
        "[[route.rules]]\nprotocol = [\"bittorrent\"]\noutbound = \"block\"\n",
    )
    .await;
    let client = SingBox::client(sing_box_outbound(f.port, ALICE_PASSWORD, false))
        .await
        .unwrap();
    let proxy = client.proxy_addr().unwrap();
    f.http.download_via_socks(proxy, 100_000).await.unwrap();
    let (peer, accepted, heard) = crate::bittorrent::listener_counting().await;
    let mut handshake = b"\x13BitTorrent protocol".to_vec();
    handshake.extend_from_slice(&[0u8; 48]);
    assert_eq!(
        crate::bittorrent::exchange(proxy, peer, &handshake).await,
        Vec::<u8>::new()
    );
    assert_eq!(accepted.load(std::sync::atomic::Ordering::Relaxed), 0);
    assert_eq!(heard.load(std::sync::atomic::Ordering::Relaxed), 0);
    let (_, metrics) = common::control::call(&f, "GET", "/metrics", None).await;
    assert!(
        metrics.contains("switchyard_inbound_blocked_total{inbound=\"main\"} 1\n"),
        "{metrics}"
    );
}
