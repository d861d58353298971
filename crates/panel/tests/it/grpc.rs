//! A gRPC inbound through the API: created, read back as it went in, its service
//! name checked by name (Shadowsocks and Vision refused, REALITY taken), and its entry in every
//! subscription format, exactly as each app reads it: multi mode in share links and
//! Xray's config, plain gun for sing-box and mihomo. The real sing-box (`sing-box
//! check`), mihomo (`mihomo -t`) and Xray (`xray run -test`) load the subscription
//! that carries it.

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

fn grpc(multi: bool) -> EntryTransport {
    EntryTransport::Grpc {
        service_name: "tun.v1".into(),
        authority: None,
        multi,
    }
}

/// The OpenAPI document has the gRPC transport: its tag, the service name's
/// pattern and bounds, multi mode optional.
#[tokio::test]
async fn the_openapi_document_has_the_grpc_transport() {
    let h = Harness::new().await;
    let doc = h.get("/api/openapi.json").send().await.ok(StatusCode::OK);
    let variants = doc["components"]["schemas"]["InboundTransport"]["oneOf"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", doc["components"]["schemas"]["InboundTransport"]));
    let grpc = variants
        .iter()
        .find(|v| v["properties"]["type"]["enum"] == json!(["grpc"]))
        .unwrap_or_else(|| panic!("{variants:?}"));
    let name = &grpc["properties"]["service_name"];
    assert_eq!(name["pattern"], r"^[A-Za-z0-9_.-]{1,128}$");
    assert_eq!(name["minLength"], 1);
    assert_eq!(name["maxLength"], 128);
    assert_eq!(grpc["properties"]["multi_mode"]["type"], "boolean");
    assert_eq!(grpc["required"], json!(["service_name", "type"]));
}

#[tokio::test]
async fn a_grpc_inbound_round_trips_and_reaches_every_format() {
    let h = Harness::new().await;
    let t = h.token().await;
    let sid = server(&h, &t).await;

    // Errors name the field: the service name, Vision over REALITY (VLESS over TCP only) and
    // Shadowsocks (TCP only).
    let reality = json!({"type": "reality", "dest": "www.example.com:443",
        "server_names": ["www.example.com"]});
    let mut on_reality = over(sid, json!({"type": "grpc", "service_name": "tun"}));
    on_reality["security"] = reality;
    on_reality["sni"] = Value::Null;
    // gRPC runs over REALITY; the Vision flow does not (VLESS over TCP only).
    let mut vision_on_reality = on_reality.clone();
    vision_on_reality["flow"] = json!("xtls-rprx-vision");
    let mut shadowsocks = json!({
        "server_id": sid, "name": "ss", "protocol": "shadowsocks", "port": 8388,
        "method": "2022-blake3-aes-128-gcm", "security": {"type": "none"},
        "transport": {"type": "grpc", "service_name": "tun"},
    });
    for (body, field) in [
        (
            over(sid, json!({"type": "grpc", "service_name": ""})),
            "transport.service_name",
        ),
        (
            over(sid, json!({"type": "grpc", "service_name": "tun/Tun"})),
            "transport.service_name",
        ),
        (
            over(
                sid,
                json!({"type": "grpc", "service_name": "x".repeat(129)}),
            ),
            "transport.service_name",
        ),
        (vision_on_reality, "flow"),
        (shadowsocks.take(), "transport"),
    ] {
        h.post("/api/v1/inbounds")
            .bearer(&t)
            .json(&body)
            .send()
            .await
            .field_error(StatusCode::UNPROCESSABLE_ENTITY, field);
    }

    let over_reality = h
        .post("/api/v1/inbounds")
        .bearer(&t)
        .json(&on_reality)
        .send()
        .await
        .ok(StatusCode::CREATED);
    assert_eq!(
        over_reality["security"]["type"], "reality",
        "{over_reality}"
    );
    h.delete(&format!("/api/v1/inbounds/{}", over_reality["id"]))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::NO_CONTENT);

    let transport = json!({"type": "grpc", "service_name": "tun.v1", "multi_mode": true});
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
    // Without multi_mode it is plain gun, and says so.
    let changed = h
        .put(&format!("/api/v1/inbounds/{}", created["id"]))
        .bearer(&t)
        .json(&over(
            sid,
            json!({"type": "grpc", "service_name": "tun.v1"}),
        ))
        .send()
        .await
        .ok(StatusCode::OK);
    assert_eq!(
        changed["transport"],
        json!({"type": "grpc", "service_name": "tun.v1", "multi_mode": false})
    );
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

    // Share links: `type=grpc&serviceName=&mode=multi`, read back as the entry.
    let text = base64::engine::general_purpose::STANDARD
        .decode(get("links").await.trim())
        .unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("?type=grpc&serviceName=tun.v1&mode=multi&security=tls"),
        "{text}"
    );
    let links = switchyard_proto::share::parse_subscription(&text).unwrap();
    assert_eq!(links.len(), 1);
    assert_eq!(links[0].transport, grpc(true));

    // sing-box: the `grpc` transport, plain gun.
    let sing_box: Value = serde_json::from_str(&get("sing-box").await).unwrap();
    let outbound = sing_box["outbounds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["type"] == "vless")
        .unwrap();
    assert_eq!(
        outbound["transport"],
        json!({"type": "grpc", "service_name": "tun.v1"})
    );
    let entries = switchyard_proto::singbox::entries(&sing_box).unwrap();
    assert_eq!(entries[0].transport, grpc(false));
    switchyard_testkit::sing_box::check(&sing_box)
        .await
        .unwrap();

    // Clash/mihomo: `network: grpc` with `grpc-opts`, plain gun.
    let clash = get("clash").await;
    assert!(
        clash.contains("    \"network\": \"grpc\"\n")
            && clash.contains("    \"grpc-opts\":\n      \"grpc-service-name\": \"tun.v1\"\n"),
        "{clash}"
    );
    let entries = switchyard_proto::clash::entries(&clash).unwrap();
    assert_eq!(entries[0].transport, grpc(false));
    assert!(
        entries[0]
            .tls
            .as_ref()
            .is_some_and(|t: &EntryTls| t.certificate_sha256.is_some())
    );
    switchyard_testkit::mihomo::check(&clash).await.unwrap();

    // Xray: the `grpc` network, multi mode on, no authority (Xray sends the SNI).
    let xray: Value = serde_json::from_str(&get("xray").await).unwrap();
    let configs = xray.as_array().unwrap();
    assert_eq!(configs.len(), 1);
    let stream = &configs[0]["outbounds"][0]["streamSettings"];
    assert_eq!(stream["network"], "grpc");
    assert_eq!(
        stream["grpcSettings"],
        json!({"serviceName": "tun.v1", "multiMode": true})
    );
    assert_eq!(stream["tlsSettings"]["serverName"], "vpn.example.com");
    switchyard_testkit::xray::check(&configs[0]).await.unwrap();
}
