//! An HTTPUpgrade inbound through the API: created, read back as it went in, its
//! path and host checked by name, and its entry in every subscription format,
//! exactly as each app reads it; the real sing-box (`sing-box check`), mihomo
//! (`mihomo -t`) and Xray (`xray run -test`) load the subscription that carries it.

use crate::common;

use axum::http::StatusCode;
use base64::Engine;
use common::{Harness, server, vless};
use serde_json::{Value, json};
use switchyard_proto::{EntryTls, EntryTransport};

/// A VLESS+TLS inbound over `transport`.
fn over(sid: i64, transport: Value) -> Value {
    let mut body = vless(sid, "🇺🇸 New York", 443);
    body["transport"] = transport;
    body
}

fn up() -> EntryTransport {
    EntryTransport::HttpUpgrade {
        path: "/up".into(),
        host: Some("cdn.example.com".into()),
    }
}

/// The OpenAPI document has the HTTPUpgrade transport: its tag, and a path pattern
/// without a query.
#[tokio::test]
async fn the_openapi_document_has_the_httpupgrade_transport() {
    let h = Harness::new().await;
    let doc = h.get("/api/openapi.json").send().await.ok(StatusCode::OK);
    let variants = doc["components"]["schemas"]["InboundTransport"]["oneOf"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", doc["components"]["schemas"]["InboundTransport"]));
    let up = variants
        .iter()
        .find(|v| v["properties"]["type"]["enum"] == json!(["httpupgrade"]))
        .unwrap_or_else(|| panic!("{variants:?}"));
    assert_eq!(
        up["properties"]["path"]["pattern"],
        r"^/[^?\x00-\x1f\x7f-\x9f]*$"
    );
    assert_eq!(up["properties"]["path"]["maxLength"], 256);
    assert_eq!(up["required"], json!(["path", "type"]));
}

#[tokio::test]
async fn an_httpupgrade_inbound_round_trips_and_reaches_every_format() {
    let h = Harness::new().await;
    let t = h.token().await;
    let sid = server(&h, &t).await;

    for (transport, field) in [
        (
            json!({"type": "httpupgrade", "path": "up"}),
            "transport.path",
        ),
        (
            json!({"type": "httpupgrade", "path": "/up?ed=2048"}),
            "transport.path",
        ),
        (
            json!({"type": "httpupgrade", "path": "/up", "host": "not a host"}),
            "transport.host",
        ),
    ] {
        h.post("/api/v1/inbounds")
            .bearer(&t)
            .json(&over(sid, transport))
            .send()
            .await
            .field_error(StatusCode::UNPROCESSABLE_ENTITY, field);
    }

    let transport = json!({"type": "httpupgrade", "path": "/up", "host": "cdn.example.com"});
    let created = h
        .post("/api/v1/inbounds")
        .bearer(&t)
        .json(&over(sid, transport.clone()))
        .send()
        .await
        .ok(StatusCode::CREATED);
    assert_eq!(created["transport"], transport);
    let read = h
        .get(&format!("/api/v1/inbounds/{}", created["id"]))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(read["transport"], transport);
    // Without a host, none is written back.
    let bare = json!({"type": "httpupgrade", "path": "/"});
    let changed = h
        .put(&format!("/api/v1/inbounds/{}", created["id"]))
        .bearer(&t)
        .json(&over(sid, bare.clone()))
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(changed["transport"], bare);
    h.put(&format!("/api/v1/inbounds/{}", created["id"]))
        .bearer(&t)
        .json(&over(sid, transport.clone()))
        .send()
        .await
        .ok(StatusCode::OK);

    let user = h
        .post("/api/v1/users")
        .bearer(&t)
        .json(&json!({"username": "alice"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    let path = user["subscription_path"].as_str().unwrap().to_owned();
    let get = |format: &'static str| {
        let url = format!("{path}?format={format}");
        let h = &h;
        async move {
            let r = h.get(&url).send().await;
            assert_eq!(r.status, StatusCode::OK, "{format}: {}", r.text());
            r.text()
        }
    };

    // Share links: `type=httpupgrade&path=&host=`, read back as the entry.
    let text = base64::engine::general_purpose::STANDARD
        .decode(get("links").await.trim())
        .unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("?type=httpupgrade&path=%2Fup&host=cdn.example.com&security=tls"),
        "{text}"
    );
    let links = switchyard_proto::share::parse_subscription(&text).unwrap();
    assert_eq!(links.len(), 1);
    assert_eq!(links[0].transport, up());

    // sing-box: the `httpupgrade` transport.
    let sing_box: Value = serde_json::from_str(&get("sing-box").await).unwrap();
    let outbound = sing_box["outbounds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["type"] == "vless")
        .unwrap();
    assert_eq!(
        outbound["transport"],
        json!({"type": "httpupgrade", "host": "cdn.example.com", "path": "/up"})
    );
    let entries = switchyard_proto::singbox::entries(&sing_box).unwrap();
    assert_eq!(entries[0].transport, up());
    switchyard_testkit::sing_box::check(&sing_box)
        .await
        .unwrap();

    // Clash/mihomo: `ws` with `v2ray-http-upgrade`.
    let clash = get("clash").await;
    assert!(
        clash.contains(
            "    \"network\": \"ws\"\n"
        ) && clash.contains(
            "    \"ws-opts\":\n      \"headers\":\n        \"Host\": \"cdn.example.com\"\n      \"path\": \"/up\"\n      \"v2ray-http-upgrade\": true\n"
        ),
        "{clash}"
    );
    let entries = switchyard_proto::clash::entries(&clash).unwrap();
    assert_eq!(entries[0].transport, up());
    assert!(
        entries[0]
            .tls
            .as_ref()
            .is_some_and(|t: &EntryTls| t.certificate_sha256.is_some())
    );
    switchyard_testkit::mihomo::check(&clash).await.unwrap();

    // Xray: the `httpupgrade` network.
    let xray: Value = serde_json::from_str(&get("xray").await).unwrap();
    let configs = xray.as_array().unwrap();
    assert_eq!(configs.len(), 1);
    let stream = &configs[0]["outbounds"][0]["streamSettings"];
    assert_eq!(stream["network"], "httpupgrade");
    assert_eq!(
        stream["httpupgradeSettings"],
        json!({"path": "/up", "host": "cdn.example.com"})
    );
    switchyard_testkit::xray::check(&configs[0]).await.unwrap();
}
