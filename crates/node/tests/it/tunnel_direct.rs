//! Direct mode on the node: the relay dials every host of an origin (pins given as a
//! list), and a direct-mode origin whose half is rebuilt (a shape change) binds its
//! ports again: the old listener is gone before the new one binds.

use crate::common;

use common::*;
use switchyard_node::{Node, NodeConfig};
use switchyard_testkit::free_port;
use switchyard_tunnel::credentials::{TunnelSecret, origin_credential};
use switchyard_tunnel::link::cert::issue;
use switchyard_tunnel::pool::Balancing;

use crate::tunnel_support;
use tunnel_support::wait_links;

#[tokio::test]
async fn a_rebuilt_direct_origin_binds_its_port_again_and_every_host_is_dialed() {
    let cert = issue("eu").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (c, k) = (dir.path().join("t.crt"), dir.path().join("t.key"));
    std::fs::write(&c, &cert.cert_pem).unwrap();
    std::fs::write(&k, &cert.key_pem).unwrap();
    let port = free_port().unwrap();
    let cred = origin_credential(&TunnelSecret([6; 32]), "eu", "fi").to_hex();
    let origin_text = format!(
        "[node]\nstate_dir = \"{}\"\nallow_private_destinations = true\n[control]\nlisten = \"127.0.0.1:{}\"\n[[tunnels]]\nname = \"eu\"\nmode = \"direct\"\nlinks = 2\n[[tunnels.profiles]]\nport = {port}\n[tunnels.origin]\nname = \"fi\"\ncredential = \"{cred}\"\nlisten = \"127.0.0.1\"\ncert = \"{}\"\nkey = \"{}\"\n",
        dir.path().join("origin").display(),
        free_port().unwrap(),
        c.display(),
        k.display()
    );
    let origin = Node::start(NodeConfig::from_toml(&origin_text).unwrap())
        .await
        .unwrap();
    let relay = start_with(
        "protocol = \"vless\"",
        &format!(
            "[[tunnels]]\nname = \"eu\"\nmode = \"direct\"\nlinks = 2\n[[tunnels.profiles]]\nport = {port}\n[tunnels.relay]\npins = [\"{}\"]\n[[tunnels.relay.origins]]\nname = \"fi\"\ncredential = \"{cred}\"\nhost = \"127.0.0.1\"\nhosts = [\"localhost\"]\n",
            cert.pin
        ),
    )
    .await;
    wait_links(&relay.node, 2).await;
    let status = relay.node.tunnel("eu").await.unwrap();
    let dialing = &status["dialing"]["fi"];
    assert_eq!(dialing.as_array().unwrap().len(), 2, "{status}");
    assert_eq!(
        (dialing[0]["wanted"].clone(), dialing[1]["wanted"].clone()),
        (1.into(), 1.into())
    );

    // A shape change rebuilds the origin's half on the same port.
    let mut config = origin.config().await;
    config.tunnels[0].balancing = Balancing::Priority;
    origin
        .apply(config)
        .await
        .expect("the rebuilt half binds its port again");
    wait_links(&origin, 2).await;
    wait_links(&relay.node, 2).await;
}
