//! The config the panel serves to sing-box for Android (`SFA/…`) makes a VPN: the real
//! sing-box runs it as root in the "phone" namespace ([`Phone`]), builds its TUN, and
//! a plain `curl` with no proxy settings fetches `target.test` through a real node in
//! the "internet" namespace: the target sees the node, not the phone. DNS: curl asks
//! the phone's own resolver (its `resolv.conf`), sing-box hijacks the question and
//! asks the panel's `remote_dns` through the node; the phone's own resolver is asked
//! nothing.

use crate::common;

use std::sync::Arc;

use axum::http::StatusCode;
use common::Harness;
use serde_json::{Value, json};
use switchyard_node::{Node, NodeConfig};
use switchyard_panel::PanelConfig;
use switchyard_testkit::netns;
use switchyard_testkit::phone::{Phone, REMOTE_DNS, TARGET_NAME};

const NODE_PORT: u16 = 8443;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sing_box_app_s_config_is_a_vpn_with_no_dns_leak() {
    let phone = Phone::new().unwrap();

    // The panel: a server at the node's address, a VLESS inbound, a user; DNS through
    // the proxy to the far side's resolver.
    let config: PanelConfig = toml::from_str(&format!(
        "[subscription]\nremote_dns = \"tcp://{REMOTE_DNS}:53\"\n"
    ))
    .unwrap();
    let h = Harness::with(config).await;
    let t = h.token().await;
    let sid = common::server_at(&h, &t, "phone-side", &netns::SERVERS_ADDR.to_string()).await;
    let mut inbound = common::vless(sid, "VPN", NODE_PORT);
    inbound["security"] = json!({"type": "none"});
    inbound["sni"] = Value::Null;
    h.post("/api/v1/inbounds")
        .bearer(&t)
        .json(&inbound)
        .send()
        .await
        .ok(StatusCode::CREATED);
    let user = h
        .post("/api/v1/users")
        .bearer(&t)
        .json(&json!({"username": "alice"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    let reply = h
        .get(user["subscription_path"].as_str().unwrap())
        .header("user-agent", "SFA/1.12.0 (Android 14)")
        .send()
        .await;
    let config: Value = serde_json::from_str(&reply.text()).unwrap();
    let uuid = config["outbounds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["type"] == "vless")
        .unwrap()["uuid"]
        .as_str()
        .unwrap()
        .to_owned();

    // The node, in the internet namespace, with alice's credential.
    let dir = tempfile::tempdir().unwrap();
    let node_text = format!(
        "[node]\nstate_dir = \"{}\"\nallow_private_destinations = true\n\
         [control]\nlisten = \"127.0.0.1:0\"\n\
         [[inbounds]]\ntag = \"vpn\"\nlisten = \"{}\"\nport = {NODE_PORT}\nprotocol = \"vless\"\n\
         [[users]]\nname = \"alice\"\nvless = \"{uuid}\"\n",
        dir.path().join("node").display(),
        netns::SERVERS_ADDR
    );
    let node_config = NodeConfig::from_toml(&node_text).unwrap();
    let servers_rt = phone.pair.servers.runtime_in().unwrap();
    let node: Arc<Node> = servers_rt
        .run(async move { Node::start(node_config).await })
        .await
        .unwrap();

    // sing-box as the app runs it: root, in the phone, with its TUN.
    let config_path = dir.path().join("sfa.json");
    std::fs::write(&config_path, config.to_string()).unwrap();
    let log_path = dir.path().join("sing-box.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut command = phone
        .pair
        .client
        .command(switchyard_testkit::sing_box::binary().unwrap());
    command
        .args(["run", "-c"])
        .arg(&config_path)
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    let mut sing_box = tokio::process::Command::from(command)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let log_tail = || std::fs::read_to_string(&log_path).unwrap_or_default();
    phone.wait_for_tun(&mut sing_box, log_tail).await.unwrap();

    phone
        .curl(100_000)
        .await
        .unwrap_or_else(|e| panic!("{e:#}\nsing-box:\n{}", log_tail()));
    assert!(
        !phone.target_saw_the_phone(),
        "the target saw the phone itself: {:?}",
        phone.target.peers()
    );
    assert!(
        node.shared()
            .accounting
            .users()
            .get("alice")
            .is_some_and(|c| c.down >= 100_000),
        "the node carried alice's download"
    );
    assert!(
        phone.remote_dns.asked().iter().any(|n| n == TARGET_NAME),
        "the far side's resolver was asked: {:?}",
        phone.remote_dns.asked()
    );
    assert_eq!(
        phone.local_dns.asked(),
        Vec::<String>::new(),
        "the phone's own resolver was asked nothing"
    );

    sing_box.kill().await.unwrap();
    let _ = sing_box.wait().await;
    servers_rt.run(async move { node.shutdown().await }).await;
}
