//! REALITY as a tunnel profile's link security, both ways round: in reverse mode the
//! relay listens with REALITY and the origin dials it; in direct mode the origin
//! listens and the relay dials. Users' traffic crosses the tunnel; a prober at the
//! listening port gets the target site's certificate; a dialing side with another
//! public key gets no link.

use crate::common;
use crate::reality_support::{TargetSite, WAIT, probe_connector};
use crate::tunnel_support::wait_links;

use common::*;
use rustls::pki_types::ServerName;
use switchyard_node::{Node, NodeConfig};
use switchyard_testkit::config::vless_outbound;
use switchyard_testkit::{SingBox, free_port};
use switchyard_tunnel::credentials::{TunnelSecret, origin_credential};
use switchyard_tunnel::link::cert::issue;
use tokio::net::TcpStream;
use tokio::time::timeout;

const SECRET: TunnelSecret = TunnelSecret([8; 32]);

/// The profile table for a REALITY profile on `port` in front of `target`.
fn profile(port: u16, target: &TargetSite, public_key: &str, addresses: bool) -> String {
    let addresses = if addresses {
        format!("addresses = [\"127.0.0.1:{port}\"]\n")
    } else {
        String::new()
    };
    format!(
        "[[tunnels.profiles]]\nport = {port}\n{addresses}transport = {{ type = \"reality\", server_name = \"target.test\", dest = \"{}\", public_key = \"{public_key}\", short_id = \"0123abcd\" }}\n",
        target.addr
    )
}

/// The listening port answers a plain TLS client with the target's certificate.
async fn probe_sees_the_target(port: u16, target: &TargetSite) {
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let name = ServerName::try_from("target.test").unwrap();
    timeout(WAIT, probe_connector(target).connect(name, tcp))
        .await
        .unwrap()
        .expect("the target's certificate verifies for target.test");
    assert!(target.hellos() >= 1);
}

#[tokio::test]
async fn reverse_mode_over_reality_carries_users_and_shows_probers_the_target() {
    let target = TargetSite::start().await;
    let keys = switchyard_node::reality::generate().unwrap();
    let cert = issue("eu").unwrap();
    let port = free_port().unwrap();
    let credential = origin_credential(&SECRET, "eu", "fi").to_hex();
    let relay_tunnel = format!(
        "[[tunnels]]\nname = \"eu\"\nlinks = 2\n{}[tunnels.relay]\nlisten = \"127.0.0.1\"\ncert_pem = \"\"\"\n{}\"\"\"\nkey_pem = \"\"\"\n{}\"\"\"\nreality_private_key = \"{}\"\n[[tunnels.relay.origins]]\nname = \"fi\"\ncredential = \"{credential}\"\n",
        profile(port, &target, &keys.public_key, true),
        cert.cert_pem,
        cert.key_pem,
        keys.private_key
    );
    let relay = start_with("protocol = \"vless\"", &relay_tunnel).await;
    let origin_dir = tempfile::tempdir().unwrap();
    let origin_text = |public_key: &str| {
        format!(
            "[node]\nstate_dir = \"{}\"\nallow_private_destinations = true\n[control]\nlisten = \"127.0.0.1:{}\"\n[[tunnels]]\nname = \"eu\"\nlinks = 2\n{}[tunnels.origin]\nname = \"fi\"\ncredential = \"{credential}\"\npin = \"{}\"\n",
            origin_dir.path().display(),
            free_port().unwrap(),
            profile(port, &target, public_key, true),
            cert.pin
        )
    };
    let origin = Node::start(NodeConfig::from_toml(&origin_text(&keys.public_key)).unwrap())
        .await
        .unwrap();
    wait_links(&relay.node, 2).await;
    assert_eq!(
        target.hellos(),
        0,
        "the origin's links never reached the target"
    );
    let client = SingBox::client(vless_outbound(relay.addr(), ALICE_UUID))
        .await
        .unwrap();
    let proxy = client.proxy_addr().unwrap();
    relay.http.download_via_socks(proxy, 4 << 20).await.unwrap();
    probe_sees_the_target(port, &target).await;

    // An origin that pins another public key gets no link: the relay splices its
    // hello to the target, whose certificate is not REALITY's.
    origin.shutdown().await;
    wait_links(&relay.node, 0).await;
    let other = switchyard_node::reality::generate().unwrap();
    let impostor = Node::start(NodeConfig::from_toml(&origin_text(&other.public_key)).unwrap())
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(tunnel_support_links(&relay.node).await, 0);
    let status = impostor.tunnel("eu").await.unwrap();
    assert!(
        status.to_string().contains("REALITY"),
        "the dialing side says why: {status}"
    );
}

async fn tunnel_support_links(node: &Node) -> u64 {
    crate::tunnel_support::links(node).await
}

#[tokio::test]
async fn direct_mode_over_reality_the_relay_dials_the_origin() {
    let target = TargetSite::start().await;
    let keys = switchyard_node::reality::generate().unwrap();
    let cert = issue("eu").unwrap();
    let port = free_port().unwrap();
    let credential = origin_credential(&SECRET, "eu", "fi").to_hex();
    let origin_dir = tempfile::tempdir().unwrap();
    let origin_text = format!(
        "[node]\nstate_dir = \"{}\"\nallow_private_destinations = true\n[control]\nlisten = \"127.0.0.1:{}\"\n[[tunnels]]\nname = \"eu\"\nmode = \"direct\"\nlinks = 2\n{}[tunnels.origin]\nname = \"fi\"\ncredential = \"{credential}\"\nlisten = \"127.0.0.1\"\ncert_pem = \"\"\"\n{}\"\"\"\nkey_pem = \"\"\"\n{}\"\"\"\nreality_private_key = \"{}\"\n",
        origin_dir.path().display(),
        free_port().unwrap(),
        profile(port, &target, &keys.public_key, false),
        cert.cert_pem,
        cert.key_pem,
        keys.private_key
    );
    let origin = Node::start(NodeConfig::from_toml(&origin_text).unwrap())
        .await
        .unwrap();
    let relay = start_with(
        "protocol = \"vless\"",
        &format!(
            "[[tunnels]]\nname = \"eu\"\nmode = \"direct\"\nlinks = 2\n{}[tunnels.relay]\npin = \"{}\"\n[[tunnels.relay.origins]]\nname = \"fi\"\ncredential = \"{credential}\"\nhost = \"127.0.0.1\"\n",
            profile(port, &target, &keys.public_key, false),
            cert.pin
        ),
    )
    .await;
    wait_links(&relay.node, 2).await;
    wait_links(&origin, 2).await;
    assert_eq!(target.hellos(), 0);
    let client = SingBox::client(vless_outbound(relay.addr(), ALICE_UUID))
        .await
        .unwrap();
    relay
        .http
        .download_via_socks(client.proxy_addr().unwrap(), 4 << 20)
        .await
        .unwrap();
    probe_sees_the_target(port, &target).await;
}

#[test]
fn a_reality_profile_without_its_private_key_or_with_another_is_refused() {
    let keys = switchyard_node::reality::generate().unwrap();
    let other = switchyard_node::reality::generate().unwrap();
    let cert = issue("eu").unwrap();
    let credential = origin_credential(&SECRET, "eu", "fi").to_hex();
    let text = |key_line: &str| {
        format!(
            // The target is local: private destinations allowed, explicitly.
            "[node]\nallow_private_destinations = true\n[[tunnels]]\nname = \"eu\"\n[[tunnels.profiles]]\nport = 7443\ntransport = {{ type = \"reality\", server_name = \"target.test\", dest = \"127.0.0.1:443\", public_key = \"{}\", short_id = \"\" }}\n[tunnels.relay]\ncert_pem = \"\"\"\n{}\"\"\"\nkey_pem = \"\"\"\n{}\"\"\"\n{key_line}[[tunnels.relay.origins]]\nname = \"fi\"\ncredential = \"{credential}\"\n",
            keys.public_key, cert.cert_pem, cert.key_pem
        )
    };
    for (line, says) in [
        (String::new(), "missing"),
        (
            format!("reality_private_key = \"{}\"\n", other.private_key),
            "is not the key",
        ),
    ] {
        let e = NodeConfig::from_toml(&text(&line)).unwrap_err().to_string();
        assert!(e.contains("tunnels[0].relay.reality_private_key"), "{e}");
        assert!(e.contains(says), "{e}");
    }
    let ok = NodeConfig::from_toml(&text(&format!(
        "reality_private_key = \"{}\"\n",
        keys.private_key
    )))
    .unwrap();
    let shown = serde_json::to_string(&ok.redacted()).unwrap();
    assert!(!shown.contains(&keys.private_key), "redacted in reads");
}
