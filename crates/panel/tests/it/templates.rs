//! Operators' templates (`/api/v1/templates/{format}`): a template with a syntax error
//! is refused naming its line; a valid one is kept, read back, and the served config
//! is the template with the panel's servers and groups in it, which the real core it
//! is for loads (`sing-box check`, `mihomo -t`, `xray run -test`); `null` goes back
//! to the panel's own config.

use crate::common::{Harness, one_user};

use axum::http::StatusCode;
use serde_json::{Value, json};

async fn served(h: &Harness, path: &str, format: &str) -> String {
    let r = h.get(&format!("{path}?format={format}")).send().await;
    assert_eq!(r.status, StatusCode::OK);
    r.text()
}

const SING_BOX: &str = r#"{
  "log": { "level": "info" },
  "dns": { "servers": [{ "type": "local", "tag": "local" }] },
  "inbounds": [{ "type": "mixed", "tag": "mixed-in", "listen": "127.0.0.1", "listen_port": 2081 }],
  "route": { "rules": [{ "domain_suffix": ["bank.example"], "action": "route", "outbound": "direct" }] },
  "outbounds": [{ "type": "block", "tag": "theirs" }]
}"#;

const CLASH: &str = "mixed-port: 7891\nallow-lan: false\nmode: rule\nlog-level: info\nrules:\n  - DOMAIN-SUFFIX,bank.example,DIRECT\n  - MATCH,Switchyard\n";

const XRAY: &str = r#"{
  "log": { "loglevel": "info" },
  "inbounds": [{ "tag": "socks", "protocol": "socks", "listen": "127.0.0.1", "port": 10818, "settings": { "udp": true } }],
  "outbounds": [{ "tag": "direct", "protocol": "freedom" }],
  "routing": { "rules": [{ "type": "field", "domain": ["domain:bank.example"], "outboundTag": "direct" }] }
}"#;

#[tokio::test]
async fn templates_are_checked_kept_and_served_with_the_panels_servers() {
    let h = Harness::new().await;
    let t = h.token().await;
    let (_, user) = one_user(&h, &t).await;
    let path = user["subscription_path"].as_str().unwrap().to_owned();
    let put = |format: &str, body: Value| {
        let url = format!("/api/v1/templates/{format}");
        let t = t.clone();
        let h = &h;
        async move { h.put(&url).bearer(&t).json(&body).send().await }
    };

    // Syntax errors: refused naming the line; nothing kept.
    let e = put(
        "sing-box",
        json!({"template": "{\n  \"log\": {\n    \"level\": \"info\",\n  }\n}"}),
    )
    .await
    .field_error(StatusCode::UNPROCESSABLE_ENTITY, "template");
    assert_eq!(
        e["detail"].as_str().map(|d| d.contains("line 4, column 3")),
        Some(true),
        "{e}"
    );
    let e = put(
        "clash",
        json!({"template": "rules:\n  - MATCH,x\n dns: [\n"}),
    )
    .await
    .field_error(StatusCode::UNPROCESSABLE_ENTITY, "template");
    assert!(e.to_string().contains("line 3"), "{e}");
    put("xray", json!({"template": "[1]"}))
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "template");
    assert_eq!(
        put("links", json!({"template": "{}"})).await.status,
        StatusCode::NOT_FOUND
    );
    let get = h.get("/api/v1/templates/sing-box").bearer(&t).send().await;
    assert_eq!(get.ok(StatusCode::OK), json!({"template": null}));

    // Valid ones: kept, served with the panel's servers and groups, loaded by the cores.
    for (format, text) in [("sing-box", SING_BOX), ("clash", CLASH), ("xray", XRAY)] {
        put(format, json!({"template": text}))
            .await
            .ok(StatusCode::OK);
        let back = h
            .get(&format!("/api/v1/templates/{format}"))
            .bearer(&t)
            .send()
            .await;
        assert_eq!(back.ok(StatusCode::OK)["template"], text);
    }
    let sb: Value = serde_json::from_str(&served(&h, &path, "sing-box").await).unwrap();
    assert_eq!(sb["log"]["level"], "info");
    assert_eq!(sb["inbounds"][0]["listen_port"], 2081);
    assert_eq!(sb["route"]["final"], "Switchyard");
    let tags: Vec<&str> = sb["outbounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["tag"].as_str().unwrap())
        .collect();
    assert!(
        tags.contains(&"Frankfurt") && tags.contains(&"Switchyard") && !tags.contains(&"theirs"),
        "{tags:?}"
    );
    switchyard_testkit::sing_box::check(&sb)
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{sb}"));

    let yaml = served(&h, &path, "clash").await;
    assert!(yaml.contains("\"mixed-port\": 7891"), "{yaml}");
    assert!(
        yaml.contains("\"DOMAIN-SUFFIX,bank.example,DIRECT\""),
        "{yaml}"
    );
    assert!(yaml.contains("\"name\": \"Frankfurt\""), "{yaml}");
    switchyard_testkit::mihomo::check(&yaml)
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{yaml}"));

    let xray: Value = serde_json::from_str(&served(&h, &path, "xray").await).unwrap();
    let config = &xray[0];
    assert_eq!(config["remarks"], "Frankfurt");
    assert_eq!(config["outbounds"][0]["tag"], "proxy");
    assert_eq!(config["outbounds"][1]["tag"], "direct");
    assert_eq!(config["inbounds"][0]["port"], 10818);
    switchyard_testkit::xray::check(config)
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{config}"));

    // Cleared: the panel's own config again.
    put("sing-box", json!({"template": null}))
        .await
        .ok(StatusCode::OK);
    let sb: Value = serde_json::from_str(&served(&h, &path, "sing-box").await).unwrap();
    assert_eq!(sb["log"]["level"], "warn");
}
