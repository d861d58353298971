//! The config the panel serves to sing-box for Android (`SFA/…`) makes a VPN: the real
//! sing-box runs it as root in a network namespace the test makes (the "phone"), builds
//! its TUN, and a plain `curl` with no proxy settings reaches a target through a real
//! node in the other namespace (the "internet"): the target sees the node, not the
//! phone. DNS: curl asks the phone's own resolver (its `resolv.conf`), sing-box hijacks
//! the question and asks the panel's `remote_dns` through the node; the phone's own
//! resolver is asked nothing.
//!
//! The namespaces: the phone at 10.77.0.2 with its default route to 10.77.0.1, where
//! its resolver and the node listen; the target (198.51.100.1) and the remote resolver
//! (198.51.100.2) are addresses of the other namespace's loopback, which the phone
//! could reach directly too, so a target that sees 10.77.0.2 would mean a leak.

use crate::common;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::Harness;
use serde_json::{Value, json};
use switchyard_node::{Node, NodeConfig};
use switchyard_panel::PanelConfig;
use switchyard_testkit::dns::DnsRecorder;
use switchyard_testkit::netns::{self, NetNs};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TARGET: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 1);
const REMOTE_DNS: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 2);
const NODE_PORT: u16 = 8443;

/// A DNS recorder on `addr` port 53 (UDP and TCP) in `ns`, knowing target.test.
fn resolver(ns: &NetNs, addr: Ipv4Addr) -> DnsRecorder {
    let at = SocketAddr::from((addr, 53));
    let udp = ns
        .run_in(move || std::net::UdpSocket::bind(at))
        .unwrap()
        .unwrap();
    let tcp = ns.tcp_listener(at).unwrap();
    DnsRecorder::start(udp, tcp, &[("target.test", TARGET)]).unwrap()
}

/// `/etc/netns/NAME/resolv.conf`, which `ip netns exec` shows the namespace's
/// processes as `/etc/resolv.conf`; removed on drop.
struct ResolvConf(std::path::PathBuf);

impl ResolvConf {
    fn write(ns: &NetNs, nameserver: Ipv4Addr) -> Self {
        let dir = std::path::Path::new("/etc/netns").join(ns.name());
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("resolv.conf"),
            format!("nameserver {nameserver}\n"),
        )
        .unwrap();
        Self(dir)
    }
}

impl Drop for ResolvConf {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sing_box_app_s_config_is_a_vpn_with_no_dns_leak() {
    let pair = netns::pair().unwrap();
    let (servers, phone) = (&pair.servers, &pair.client);
    for addr in [TARGET, REMOTE_DNS] {
        servers
            .ip(&["addr", "add", &format!("{addr}/32"), "dev", "lo"])
            .unwrap();
    }
    phone
        .ip(&[
            "route",
            "add",
            "default",
            "via",
            &netns::SERVERS_ADDR.to_string(),
        ])
        .unwrap();
    let local_dns = resolver(servers, netns::SERVERS_ADDR);
    let remote_dns = resolver(servers, REMOTE_DNS);
    let _resolv = ResolvConf::write(phone, netns::SERVERS_ADDR);

    // The target: who connected, and a short answer.
    let seen: Arc<Mutex<Vec<SocketAddr>>> = Arc::default();
    let target = servers
        .tcp_listener(SocketAddr::from((TARGET, 80)))
        .unwrap();
    target.set_nonblocking(true).unwrap();
    let target = tokio::net::TcpListener::from_std(target).unwrap();
    let s = seen.clone();
    let target_task = tokio::spawn(async move {
        while let Ok((mut c, peer)) = target.accept().await {
            s.lock().unwrap().push(peer);
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut b = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match c.read(&mut b).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&b[..n]),
                    }
                }
                let _ = c
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\nthrough VPN\n")
                    .await;
            });
        }
    });

    // The panel: a server at the node's address, a VLESS inbound, a user; DNS through
    // the proxy to the remote resolver.
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
        .ok(axum::http::StatusCode::CREATED);
    let user = h
        .post("/api/v1/users")
        .bearer(&t)
        .json(&json!({"username": "alice"}))
        .send()
        .await
        .ok(axum::http::StatusCode::CREATED);
    let path = user["subscription_path"].as_str().unwrap().to_owned();
    let reply = h
        .get(&path)
        .header("user-agent", "SFA/1.12.0 (Android 14)")
        .send()
        .await;
    let config: Value = serde_json::from_str(&reply.text()).unwrap();
    assert!(
        config["inbounds"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["type"] == "tun"),
        "{config:#}"
    );
    let uuid = config["outbounds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["type"] == "vless")
        .unwrap()["uuid"]
        .as_str()
        .unwrap()
        .to_owned();

    // The node, in the "internet" namespace, with alice's credential.
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
    let servers_rt = servers.runtime_in().unwrap();
    let node: Arc<Node> = servers_rt
        .run(async move { Node::start(node_config).await })
        .await
        .unwrap();

    // sing-box as the app runs it: root, in the phone's namespace, with its TUN.
    let config_path = dir.path().join("sfa.json");
    std::fs::write(&config_path, config.to_string()).unwrap();
    let log_path = dir.path().join("sing-box.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut command = phone.command(switchyard_testkit::sing_box::binary().unwrap());
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

    // The VPN is up once its TUN and its routing rules are (20 s at most).
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let links = phone.ip(&["-o", "link", "show"]).unwrap_or_default();
        let rules = phone.ip(&["rule", "show"]).unwrap_or_default();
        if links.contains("tun") && rules.contains("2022") {
            break;
        }
        assert!(
            sing_box.try_wait().unwrap().is_none(),
            "sing-box exited:\n{}",
            log_tail()
        );
        assert!(
            Instant::now() < deadline,
            "no TUN within 20 s: {links}\n{rules}\nsing-box:\n{}",
            log_tail()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // curl with no proxy settings, by name (retried while the VPN settles, 20 s).
    let curl_path = std::env::var("SWITCHYARD_CURL").unwrap_or_else(|_| "/usr/bin/curl".into());
    assert!(
        std::path::Path::new(&curl_path).is_file(),
        "curl is not at {curl_path}: run `cargo xtask peers` (Debian's curl) or set SWITCHYARD_CURL"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    let body = loop {
        let mut curl = phone.command(&curl_path);
        curl.args(["-sS", "--max-time", "5", "http://target.test/"])
            .env_remove("http_proxy")
            .env_remove("HTTP_PROXY")
            .env_remove("all_proxy")
            .env_remove("ALL_PROXY");
        let out = tokio::process::Command::from(curl).output().await.unwrap();
        if out.status.success() {
            break String::from_utf8_lossy(&out.stdout).into_owned();
        }
        assert!(
            Instant::now() < deadline,
            "curl through the VPN within 20 s: {}\nsing-box:\n{}",
            String::from_utf8_lossy(&out.stderr),
            log_tail()
        );
        assert!(
            sing_box.try_wait().unwrap().is_none(),
            "sing-box exited:\n{}",
            log_tail()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(body, "through VPN\n");
    let peers = seen.lock().unwrap().clone();
    assert!(!peers.is_empty());
    assert!(
        peers
            .iter()
            .all(|p| p.ip() != std::net::IpAddr::from(netns::CLIENT_ADDR)),
        "the target saw the phone itself: {peers:?}"
    );
    assert!(
        node.shared()
            .accounting
            .users()
            .get("alice")
            .is_some_and(|c| c.down > 0),
        "the node carried alice's traffic"
    );
    assert!(
        remote_dns.asked().iter().any(|n| n == "target.test"),
        "the remote resolver was asked: {:?}",
        remote_dns.asked()
    );
    assert_eq!(
        local_dns.asked(),
        Vec::<String>::new(),
        "the phone's own resolver was asked nothing"
    );

    sing_box.kill().await.unwrap();
    let _ = sing_box.wait().await;
    servers_rt.run(async move { node.shutdown().await }).await;
    target_task.abort();
}
