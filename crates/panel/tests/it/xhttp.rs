//! An XHTTP inbound through the API: created and read back as it went in, its
//! fields checked by name (path, host, mode; Shadowsocks refused), REALITY taken;
//! and its entry in every subscription format as each app reads it: `type=xhttp`
//! share links, Xray's `xhttp` network (loaded by the real Xray, `xray run -test`);
//! sing-box and Clash/mihomo have no XHTTP, so their configs leave it out and
//! their announcement says why.

use crate::common;

use axum::http::StatusCode;
use base64::Engine;
use common::{Harness, server, vless};
use serde_json::{Value, json};
use switchyard_proto::EntryTransport;
use switchyard_proto::xhttp::Mode;

/// A VLESS+TLS inbound over `transport`.
fn over(sid: i64, transport: Value) -> Value {
    let mut body = vless(sid, "🇺🇸 New York", 443);
    body["transport"] = transport;
    body
}

/// The OpenAPI document has the XHTTP transport: its tag, the path's pattern, the
/// mode's choices, only the path required.
#[tokio::test]
async fn the_openapi_document_has_the_xhttp_transport() {
    let h = Harness::new().await;
    let doc = h.get("/api/openapi.json").send().await.ok(StatusCode::OK);
    let schemas = &doc["components"]["schemas"];
    let text = schemas.to_string();
    assert!(text.contains(r#""xhttp""#), "{text}");
    let x = &schemas["InboundXhttp"];
    assert_eq!(
        x["properties"]["path"]["pattern"],
        r"^/[^?\x00-\x1f\x7f-\x9f]*$"
    );
    assert_eq!(
        x["properties"]["mode"]["pattern"],
        "^(auto|packet-up|stream-up|stream-one)$"
    );
    assert_eq!(x["required"], json!(["path"]), "{x}");
}

#[tokio::test]
async fn an_xhttp_inbound_round_trips_and_reaches_the_formats_that_run_it() {
    let h = Harness::new().await;
    let t = h.token().await;
    let sid = server(&h, &t).await;

    // Errors name the field: path, host, mode; Shadowsocks over XHTTP.
    let shadowsocks = json!({
        "server_id": sid, "name": "ss", "protocol": "shadowsocks", "port": 8388,
        "method": "2022-blake3-aes-128-gcm", "security": {"type": "none"},
        "transport": {"type": "xhttp", "path": "/xh"},
    });
    for (body, field) in [
        (
            over(sid, json!({"type": "xhttp", "path": "xh"})),
            "transport.path",
        ),
        (
            over(sid, json!({"type": "xhttp", "path": "/a?b"})),
            "transport.path",
        ),
        (
            over(sid, json!({"type": "xhttp", "path": "/", "host": "a b"})),
            "transport.host",
        ),
        (
            over(sid, json!({"type": "xhttp", "path": "/", "mode": "stream"})),
            "transport.mode",
        ),
        (shadowsocks, "transport"),
    ] {
        h.post("/api/v1/inbounds")
            .bearer(&t)
            .json(&body)
            .send()
            .await
            .field_error(StatusCode::UNPROCESSABLE_ENTITY, field);
    }
    // REALITY is taken (XHTTP inside REALITY's TLS, as Xray serves it).
    let mut on_reality = over(sid, json!({"type": "xhttp", "path": "/r"}));
    on_reality["port"] = json!(8443);
    on_reality["security"] = json!({"type": "reality", "dest": "www.example.com:443",
        "server_names": ["www.example.com"]});
    on_reality["sni"] = Value::Null;
    let reality = h
        .post("/api/v1/inbounds")
        .bearer(&t)
        .json(&on_reality)
        .send()
        .await
        .ok(StatusCode::CREATED);
    assert_eq!(
        reality["transport"],
        json!({"type": "xhttp", "path": "/r", "mode": "auto"})
    );
    h.delete(&format!("/api/v1/inbounds/{}", reality["id"]))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::NO_CONTENT);

    let transport =
        json!({"type": "xhttp", "path": "/xh", "host": "cdn.example.com", "mode": "packet-up"});
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
            r
        }
    };
    let entry = EntryTransport::Xhttp {
        path: "/xh".into(),
        host: Some("cdn.example.com".into()),
        mode: Mode::PacketUp,
        extra: None,
    };

    // Share links: `type=xhttp&path=&host=&mode=`, read back as the entry.
    let text = base64::engine::general_purpose::STANDARD
        .decode(get("links").await.text().trim())
        .unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("?type=xhttp&path=%2Fxh&host=cdn.example.com&mode=packet-up&security=tls"),
        "{text}"
    );
    let links = switchyard_proto::share::parse_subscription(&text).unwrap();
    assert_eq!(links.len(), 1);
    assert_eq!(links[0].transport, entry);

    // Xray: the `xhttp` network, loaded by the real Xray.
    let xray: Value = serde_json::from_str(&get("xray").await.text()).unwrap();
    let configs = xray.as_array().unwrap();
    assert_eq!(configs.len(), 1);
    let stream = &configs[0]["outbounds"][0]["streamSettings"];
    assert_eq!(stream["network"], "xhttp");
    assert_eq!(
        stream["xhttpSettings"],
        json!({"path": "/xh", "host": "cdn.example.com", "mode": "packet-up"})
    );
    assert_eq!(stream["tlsSettings"]["serverName"], "vpn.example.com");
    switchyard_testkit::xray::check(&configs[0]).await.unwrap();

    // sing-box and Clash/mihomo: left out, and the announcement says why.
    let why = Some("1 server left out: this app cannot run XHTTP");
    let sing_box = get("sing-box").await;
    assert_eq!(sing_box.header("announce").as_deref(), why);
    let sing_box: Value = serde_json::from_str(&sing_box.text()).unwrap();
    assert_eq!(switchyard_proto::singbox::entries(&sing_box).unwrap(), []);
    let clash = get("clash").await;
    assert_eq!(clash.header("announce").as_deref(), why);
    let clash = clash.text();
    assert!(!clash.contains("xhttp"), "{clash}");
    assert_eq!(switchyard_proto::clash::entries(&clash).unwrap(), []);
    // The formats that carry it say nothing.
    assert_eq!(get("xray").await.header("announce"), None);
    assert_eq!(get("links").await.header("announce"), None);
}
