//! A tunnel across a CDN: the relay's WebSocket, HTTPUpgrade, XHTTP and gRPC profiles sit behind
//! Debian's nginx (standing in for the CDN on 127.0.0.1), which ends the origin's TLS
//! with its own certificate and passes the upgrades on to the relay in plain HTTP;
//! the tunnel's pinned TLS runs inside, end to end. The origin checks the CDN's
//! certificate against the profile's root; a real sing-box client's traffic enters
//! the relay, crosses both profiles and leaves from the origin, counted once.

use crate::common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use switchyard_node::{Node, NodeConfig};
use switchyard_testkit::config::vless_outbound;
use switchyard_testkit::nginx::{Nginx, Pass};
use switchyard_testkit::{SingBox, TestCert, free_port, local};
use switchyard_tunnel::credentials::{TunnelSecret, origin_credential};
use switchyard_tunnel::link::cert::issue;

const SECRET: TunnelSecret = TunnelSecret([7; 32]);

/// One profile behind the CDN: its kind (`ws`, `httpupgrade`, `xhttp` or `grpc`),
/// its path (XHTTP, WebSocket, HTTPUpgrade) or service name (gRPC), and more of its
/// transport's fields (an XHTTP mode).
struct Kind {
    kind: &'static str,
    path: &'static str,
    extra: &'static str,
}

const WS: Kind = Kind {
    kind: "ws",
    path: "/eu-ws",
    extra: "",
};
const HTTPUPGRADE: Kind = Kind {
    kind: "httpupgrade",
    path: "/eu-up",
    extra: "",
};

/// The profiles, as both halves read them: each on its own port at the relay, all
/// dialed at the CDN `cdn` with TLS for `cdn.test`, trusting `ca` (none: the web's
/// roots only).
fn profiles(kinds: &[(u16, &Kind)], cdn: SocketAddr, ca: Option<&str>) -> String {
    let outer = match ca {
        Some(pem) => format!("server_name = \"cdn.test\"\nca_pem = '''\n{pem}'''\n"),
        None => "server_name = \"cdn.test\"\n".to_owned(),
    };
    kinds
        .iter()
        .map(|(port, k)| {
            let place = match k.kind {
                "grpc" => format!("service_name = \"{}\"", k.path),
                _ => format!("path = \"{}\"", k.path),
            };
            format!(
                "[[tunnels.profiles]]\nport = {port}\naddresses = [\"{cdn}\"]\n\
                 [tunnels.profiles.transport]\ntype = \"{}\"\n{place}\nhost = \"cdn.test\"\n{}\n\
                 [tunnels.profiles.transport.outer_tls]\n{outer}",
                k.kind, k.extra
            )
        })
        .collect()
}

/// How nginx passes a profile on to the relay at `port`.
fn pass(port: u16, k: &Kind) -> Pass {
    match k.kind {
        "grpc" => Pass::Grpc {
            service: k.path.into(),
            upstream: local(port),
        },
        "xhttp" => Pass::Http {
            prefix: k.path.into(),
            upstream: local(port),
        },
        _ => Pass::Upgrade {
            prefix: k.path.into(),
            upstream: local(port),
        },
    }
}

struct Setup {
    relay: Fixture,
    origin: Arc<Node>,
    nginx: Nginx,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

/// A relay with a VLESS inbound and the tunnel "eu" listening on `kinds` of profile
/// behind nginx, and an origin dialing them through nginx, trusting the CDN when
/// `trusted`.
async fn setup(trusted: bool, kinds: &[&'static Kind]) -> Setup {
    let cert = issue("eu").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (cert_path, key_path) = (dir.path().join("t.crt"), dir.path().join("t.key"));
    std::fs::write(&cert_path, &cert.cert_pem).unwrap();
    std::fs::write(&key_path, &cert.key_pem).unwrap();
    let kinds: Vec<(u16, &Kind)> = kinds.iter().map(|k| (free_port().unwrap(), *k)).collect();
    let cdn_cert = Arc::new(TestCert::new("cdn.test").unwrap());
    let passes: Vec<Pass> = kinds.iter().map(|(port, k)| pass(*port, k)).collect();
    let nginx = Nginx::start(local(free_port().unwrap()), Some(cdn_cert.clone()), &passes)
        .await
        .unwrap();
    let ca = trusted.then(|| cdn_cert.cert_pem());
    let profiles = profiles(&kinds, nginx.addr(), ca);
    let credential = origin_credential(&SECRET, "eu", "fi").to_hex();
    let relay_tunnel = format!(
        "[[tunnels]]\nname = \"eu\"\nlinks = 2\n{profiles}\n[tunnels.relay]\nlisten = \"127.0.0.1\"\ncert = \"{}\"\nkey = \"{}\"\n[[tunnels.relay.origins]]\nname = \"fi\"\ncredential = \"{credential}\"\n",
        cert_path.display(),
        key_path.display()
    );
    let relay = start_with("protocol = \"vless\"", &relay_tunnel).await;
    let origin_dir = tempfile::tempdir().unwrap();
    let origin_text = format!(
        "[node]\nstate_dir = \"{}\"\nallow_private_destinations = true\n[control]\nlisten = \"127.0.0.1:{}\"\n[[tunnels]]\nname = \"eu\"\nlinks = 2\n{profiles}\n[tunnels.origin]\nname = \"fi\"\ncredential = \"{credential}\"\npin = \"{}\"\n",
        origin_dir.path().display(),
        free_port().unwrap(),
        cert.pin
    );
    let origin = Node::start(NodeConfig::from_toml(&origin_text).unwrap())
        .await
        .unwrap();
    Setup {
        relay,
        origin,
        nginx,
        _dirs: (dir, origin_dir),
    }
}

async fn links(node: &Node) -> u64 {
    node.tunnel("eu")
        .await
        .map_or(0, |v| v["links"].as_u64().unwrap_or(0))
}

/// Waits for every profile's 2 links, then sends a real sing-box client's TCP (4 MiB
/// down, 1 MiB up) and UDP through the relay, the tunnel and the origin.
async fn carries_users_traffic(kinds: &[&'static Kind]) {
    let s = setup(true, kinds).await;
    let want = 2 * kinds.len() as u64;
    let mut up = false;
    for _ in 0..400 {
        if links(&s.relay.node).await == want {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        up,
        "links: relay {}, origin {}\n--- nginx ---\n{}",
        s.relay.node.tunnel("eu").await.unwrap(),
        s.origin.tunnel("eu").await.unwrap(),
        s.nginx.log_tail()
    );
    let status = s.relay.node.tunnel("eu").await.unwrap();
    // 2 links on every profile, each profile through nginx.
    let per_profile: serde_json::Map<String, serde_json::Value> = (0..kinds.len())
        .map(|i| (i.to_string(), serde_json::json!(2)))
        .collect();
    assert_eq!(
        status["origins"]["fi"]["links_per_profile"],
        serde_json::Value::Object(per_profile)
    );
    let client = SingBox::client(vless_outbound(s.relay.addr(), ALICE_UUID))
        .await
        .unwrap();
    let proxy = client.proxy_addr().unwrap();
    s.relay
        .http
        .download_via_socks(proxy, 4 << 20)
        .await
        .unwrap();
    s.relay.http.upload_via_socks(proxy, 1 << 20).await.unwrap();
    s.relay.udp.check_via_socks(proxy, 20, 1200).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (up, down) = s.relay.alice();
    assert!(down >= 4 << 20 && up >= 1 << 20, "up {up}, down {down}");
    assert!(s.origin.shared().accounting.users().is_empty());
    let payload = s.relay.node.tunnel("eu").await.unwrap()["payload_bytes"]
        .as_u64()
        .unwrap();
    assert!(payload >= 5 << 20, "tunnel payload {payload}");
}

#[tokio::test]
async fn a_tunnel_crosses_nginx_over_websocket_and_httpupgrade() {
    carries_users_traffic(&[&WS, &HTTPUPGRADE]).await;
}

const XHTTP_AUTO: Kind = Kind {
    kind: "xhttp",
    path: "/eu-xh",
    extra: "",
};
const XHTTP_PACKET_UP: Kind = Kind {
    kind: "xhttp",
    path: "/eu-xp",
    extra: "mode = \"packet-up\"",
};
const GRPC: Kind = Kind {
    kind: "grpc",
    path: "eu.Tunnel",
    extra: "",
};

/// XHTTP (auto, which is stream-up over the CDN's HTTP/2, and packet-up) and gRPC:
/// what a CDN that carries no upgrade passes.
#[tokio::test]
async fn a_tunnel_crosses_nginx_over_xhttp_and_grpc() {
    carries_users_traffic(&[&XHTTP_AUTO, &XHTTP_PACKET_UP, &GRPC]).await;
}

#[tokio::test]
async fn a_cdn_certificate_the_origin_does_not_trust_makes_no_link_and_says_why() {
    let s = setup(false, &[&WS, &HTTPUPGRADE, &XHTTP_AUTO, &GRPC]).await;
    let mut said = String::new();
    for _ in 0..200 {
        said = s.origin.tunnel("eu").await.unwrap().to_string();
        if said.contains("TLS to the CDN failed") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(said.contains("TLS to the CDN failed"), "{said}");
    assert_eq!(links(&s.relay.node).await, 0);
}
