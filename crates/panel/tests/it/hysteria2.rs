//! A Hysteria 2 inbound through the API: created (its Salamander password made by
//! the panel and never read back), its fields checked by name, and its entry in
//! every subscription format as each app reads it: `hysteria2://` links with the
//! pin, sing-box's `hysteria2` outbound, mihomo's `hysteria2` proxy (with the hop
//! interval), both loaded by
//! the real apps (`sing-box check`, `mihomo -t`); Xray JSON leaves it out (Xray
//! 24.11.21 has no Hysteria 2 outbound) and its announcement says why.

use crate::common;

use axum::http::StatusCode;
use base64::Engine;
use common::{Harness, server, vless};
use serde_json::{Value, json};
use switchyard_proto::EntryProtocol;

/// A Hysteria 2 inbound with a self-signed certificate and `settings`.
fn hy2(server_id: i64, port: u16, settings: Value) -> Value {
    json!({
        "server_id": server_id, "name": "🇺🇸 Hysteria", "protocol": "hysteria2",
        "port": port,
        "security": {"type": "tls", "certificate": {"source": "self_signed"}},
        "sni": "vpn.example.com",
        "hysteria2": settings,
    })
}

#[tokio::test]
async fn a_hysteria2_inbound_is_checked_by_field_and_never_shows_its_secret() {
    let h = Harness::new().await;
    let t = h.token().await;
    let sid = server(&h, &t).await;
    let mut plain = hy2(sid, 443, json!({}));
    plain["security"] = json!({"type": "none"});
    let mut reality = hy2(sid, 443, json!({}));
    reality["security"] = json!({"type": "reality", "dest": "www.example.com:443",
        "server_names": ["www.example.com"]});
    reality["sni"] = Value::Null;
    let mut ws = hy2(sid, 443, json!({}));
    ws["transport"] = json!({"type": "ws", "path": "/h"});
    let mut on_trojan = vless(sid, "t", 443);
    on_trojan["protocol"] = json!("trojan");
    on_trojan["hysteria2"] = json!({"obfs": true});
    for (body, field) in [
        (plain, "security"),
        (reality, "security"),
        (ws, "transport"),
        (hy2(sid, 443, json!({"up_mbps": 0})), "hysteria2.up_mbps"),
        (
            hy2(sid, 443, json!({"down_mbps": 100_001})),
            "hysteria2.down_mbps",
        ),
        (
            hy2(sid, 443, json!({"ports": "20000-20100"})),
            "hysteria2.ports",
        ),
        (hy2(sid, 443, json!({"ports": "x"})), "hysteria2.ports"),
        (
            hy2(
                sid,
                443,
                json!({"ports": "20000-20009", "hop_interval_secs": 4}),
            ),
            "hysteria2.hop_interval_secs",
        ),
        (
            hy2(
                sid,
                443,
                json!({"ports": "20000-20009", "hop_interval_secs": 3601}),
            ),
            "hysteria2.hop_interval_secs",
        ),
        (
            hy2(sid, 443, json!({"hop_interval_secs": 15})),
            "hysteria2.hop_interval_secs",
        ),
        (
            hy2(sid, 443, json!({"obfs": true, "obfs_password": ""})),
            "hysteria2.obfs_password",
        ),
        (
            hy2(sid, 443, json!({"obfs_password": "no obfs"})),
            "hysteria2.obfs_password",
        ),
        (on_trojan, "hysteria2"),
    ] {
        h.post("/api/v1/inbounds")
            .bearer(&t)
            .json(&body)
            .send()
            .await
            .field_error(StatusCode::UNPROCESSABLE_ENTITY, field);
    }
    // No settings: the defaults, shown.
    let bare = h
        .post("/api/v1/inbounds")
        .bearer(&t)
        .json(&hy2(sid, 443, Value::Null))
        .send()
        .await
        .ok(StatusCode::CREATED);
    assert_eq!(bare["hysteria2"], json!({"obfs": false, "udp": true}));
    let settings = json!({"obfs": true, "obfs_password": "given-secret", "up_mbps": 100,
        "down_mbps": 50, "udp": false, "ports": "20000-20009", "hop_interval_secs": 15});
    let created = h
        .post("/api/v1/inbounds")
        .bearer(&t)
        .json(&hy2(sid, 8443, settings))
        .send()
        .await
        .ok(StatusCode::CREATED);
    let shown = json!({"obfs": true, "up_mbps": 100, "down_mbps": 50, "udp": false,
        "ports": "20000-20009", "hop_interval_secs": 15});
    assert_eq!(created["hysteria2"], shown);
    let read = h
        .get(&format!("/api/v1/inbounds/{}", created["id"]))
        .bearer(&t)
        .send()
        .await;
    assert!(!read.text().contains("given-secret"), "{}", read.text());
    assert_eq!(read.ok(StatusCode::OK)["hysteria2"], shown);
    // The OpenAPI document has the protocol and its settings.
    let doc = h.get("/api/openapi.json").send().await.ok(StatusCode::OK);
    let schemas = &doc["components"]["schemas"];
    assert!(
        schemas["Protocol"].to_string().contains("hysteria2"),
        "{}",
        schemas["Protocol"]
    );
    let props = &schemas["InboundHysteria2"]["properties"];
    assert_eq!(props["obfs_password"]["writeOnly"], true, "{props}");
    assert_eq!(props["up_mbps"]["maximum"], 100000, "{props}");
    assert_eq!(props["hop_interval_secs"]["minimum"], 5, "{props}");
    assert_eq!(props["hop_interval_secs"]["maximum"], 3600, "{props}");
}

#[tokio::test]
async fn a_hysteria2_inbound_reaches_every_format_but_xray_which_says_why() {
    let h = Harness::new().await;
    let t = h.token().await;
    let sid = server(&h, &t).await;
    let settings = json!({"obfs": true, "down_mbps": 50, "ports": "20000-20009",
        "hop_interval_secs": 45});
    h.post("/api/v1/inbounds")
        .bearer(&t)
        .json(&hy2(sid, 8443, settings))
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
    let path = user["subscription_path"].as_str().unwrap().to_owned();
    let get = |query: &'static str, agent: &'static str| {
        let url = format!("{path}{query}");
        let h = &h;
        async move {
            let r = h.get(&url).header("user-agent", agent).send().await;
            assert_eq!(r.status, StatusCode::OK, "{query}: {}", r.text());
            r
        }
    };

    // Links: hysteria2:// with Salamander, the hop range and the pin; no hop
    // interval (no app reads one from a link).
    let text = base64::engine::general_purpose::STANDARD
        .decode(get("?format=links", "").await.text().trim())
        .unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.starts_with("hysteria2://"), "{text}");
    for part in [
        "sni=vpn.example.com",
        "obfs=salamander",
        "mport=20000-20009",
        "pinSHA256=",
    ] {
        assert!(text.contains(part), "{part}: {text}");
    }
    let query = text.split_once('?').unwrap().1.split('#').next().unwrap();
    let mut keys: Vec<&str> = query
        .split('&')
        .map(|p| p.split('=').next().unwrap())
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "mport",
            "obfs",
            "obfs-password",
            "pinSHA256",
            "route",
            "sni"
        ],
        "{text}"
    );
    let links = switchyard_proto::share::parse_subscription(&text).unwrap();
    let EntryProtocol::Hysteria2 {
        password,
        obfs_password,
        ..
    } = &links[0].protocol
    else {
        panic!("{:?}", links[0]);
    };
    assert_eq!(password.len(), 32);
    assert!(obfs_password.as_ref().is_some_and(|p| p.len() >= 16));
    assert!(links[0].tls.as_ref().unwrap().certificate_sha256.is_some());

    // sing-box: the `hysteria2` outbound, loaded by the real sing-box.
    let sing_box: Value = serde_json::from_str(&get("?format=sing-box", "").await.text()).unwrap();
    let outbound = sing_box["outbounds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["type"] == "hysteria2")
        .unwrap_or_else(|| panic!("{sing_box}"));
    assert_eq!(outbound["server_ports"], json!(["20000:20009"]));
    assert_eq!(outbound["hop_interval"], "45s");
    assert_eq!(outbound["obfs"]["type"], "salamander");
    // The node takes at most 50 Mbit/s: the client uploads at most that.
    assert_eq!(outbound["up_mbps"], 50);
    assert!(outbound["tls"]["certificate"].is_string(), "{outbound}");
    assert_eq!(
        switchyard_proto::singbox::entries(&sing_box).unwrap()[0].protocol,
        links[0].protocol.clone().with_up(50).with_hop_interval(45)
    );
    switchyard_testkit::sing_box::check(&sing_box)
        .await
        .unwrap();

    // Clash/mihomo: the `hysteria2` proxy, loaded by the real mihomo.
    let clash = get("?format=clash", "").await.text();
    assert!(clash.contains("\"type\": \"hysteria2\""), "{clash}");
    assert!(clash.contains("\"ports\": \"20000-20009\""), "{clash}");
    assert!(clash.contains("\"hop-interval\": 45"), "{clash}");
    assert_eq!(
        switchyard_proto::clash::entries(&clash).unwrap()[0].protocol,
        links[0].protocol.clone().with_up(50).with_hop_interval(45)
    );
    switchyard_testkit::mihomo::check(&clash).await.unwrap();

    // Xray JSON (v2rayN's User-Agent): left out, and the announcement says why.
    let xray = get("", "v2rayN/7.16.3").await;
    assert_eq!(xray.json(), json!([]));
    assert_eq!(
        xray.header("announce").as_deref(),
        Some("1 server left out: this app cannot run Hysteria 2")
    );
    // Other formats say nothing.
    assert_eq!(get("?format=clash", "").await.header("announce"), None);
}

/// A protocol with the client's upload rate and hop interval set, for comparing
/// with what a sing-box or Clash config carries (links carry neither).
trait WithUp {
    fn with_up(self, up: u32) -> Self;
    fn with_hop_interval(self, secs: u32) -> Self;
}

impl WithUp for EntryProtocol {
    fn with_up(mut self, up: u32) -> Self {
        if let Self::Hysteria2 { up_mbps, .. } = &mut self {
            *up_mbps = Some(up);
        }
        self
    }

    fn with_hop_interval(mut self, secs: u32) -> Self {
        if let Self::Hysteria2 { hop_interval, .. } = &mut self {
            *hop_interval = Some(secs);
        }
        self
    }
}
