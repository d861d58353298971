//! What `GET /sub/{token}` answers, through the router: the format by `?format=`,
//! by `Accept: text/html` and by the User-Agent table (operator rules first), the
//! headers apps read, device limits by `x-hwid`, and the empty-but-valid answer
//! with the reason in the title for users who may not connect. Exact values.

use crate::common;

use axum::http::StatusCode;
use base64::Engine;
use common::{Harness, vless};
use serde_json::{Value, json};
use switchyard_panel::PanelConfig;
use switchyard_panel::store::{TrafficBatch, TrafficStore};

/// A cluster, a server and a VLESS+TLS inbound named "🇺🇸 New York" (in the default
/// route); the server's id.
async fn seed(h: &Harness, t: &str) -> i64 {
    let c = h
        .post("/api/v1/clusters")
        .bearer(t)
        .json(&json!({"name": "main"}))
        .send()
        .await
        .ok(StatusCode::CREATED);
    let s = h
        .post("/api/v1/servers")
        .bearer(t)
        .json(&json!({"cluster_id": c["id"], "name": "ny-1", "address": "203.0.113.1"}))
        .send()
        .await
        .ok(StatusCode::CREATED)["id"]
        .as_i64()
        .unwrap();
    h.post("/api/v1/inbounds")
        .bearer(t)
        .json(&vless(s, "🇺🇸 New York", 443))
        .send()
        .await
        .ok(StatusCode::CREATED);
    s
}

async fn user(h: &Harness, t: &str, body: Value) -> Value {
    h.post("/api/v1/users")
        .bearer(t)
        .json(&body)
        .send()
        .await
        .ok(StatusCode::CREATED)
}

fn path(u: &Value) -> String {
    u["subscription_path"].as_str().unwrap().to_owned()
}

/// What a body carries, told by its shape: the format and its number of servers.
fn shape(content_type: &str, body: &str) -> (&'static str, usize) {
    if content_type.starts_with("text/yaml") {
        // Every entry here is VLESS: one `uuid` line each.
        let n = body.lines().filter(|l| l.contains("uuid")).count();
        ("clash", n)
    } else if content_type.starts_with("text/html") {
        ("page", body.matches("vless://").count())
    } else if content_type.starts_with("application/json") {
        let v: Value = serde_json::from_str(body).unwrap();
        if v.is_array() {
            ("xray", v.as_array().unwrap().len())
        } else {
            let n = v["outbounds"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|o| o["type"] == "vless")
                .count();
            ("sing-box", n)
        }
    } else {
        let text = base64::engine::general_purpose::STANDARD
            .decode(body.trim())
            .unwrap();
        ("links", String::from_utf8(text).unwrap().lines().count())
    }
}

async fn fetch(
    h: &Harness,
    url: &str,
    headers: &[(&str, &str)],
) -> (String, String, (&'static str, usize)) {
    let mut r = h.get(url);
    for (k, v) in headers {
        r = r.header(k, v);
    }
    let reply = r.send().await;
    let ct = reply.header("content-type").unwrap();
    let body = reply.text();
    let s = shape(&ct, &body);
    (ct, body, s)
}

#[tokio::test]
async fn the_format_comes_from_the_query_the_accept_header_or_the_user_agent() {
    let config: PanelConfig = toml::from_str(
        r#"
        public_url = "https://vpn.example.com"
        [[subscription.agents]]
        app = "MyApp"
        prefix = "myapp/"
        format = "clash"
        # Operators' rules win over the built-in table.
        [[subscription.agents]]
        app = "v2rayN as links"
        prefix = "v2rayN/"
        format = "links"
        "#,
    )
    .unwrap();
    config.validate().unwrap();
    let h = Harness::with(config).await;
    let t = h.token().await;
    seed(&h, &t).await;
    let p = path(&user(&h, &t, json!({"username": "alice"})).await);

    for (q, want) in [
        ("sing-box", "sing-box"),
        ("singbox", "sing-box"),
        ("clash", "clash"),
        ("mihomo", "clash"),
        ("xray", "xray"),
        ("v2ray-json", "xray"),
        ("links", "links"),
        ("base64", "links"),
    ] {
        let (_, _, s) = fetch(
            &h,
            &format!("{p}?format={q}"),
            &[("user-agent", "SFA/1.11")],
        )
        .await;
        assert_eq!(s, (want, 1), "?format={q}");
    }
    let bad = h.get(&format!("{p}?format=json")).send().await;
    let e = bad.field_error(StatusCode::UNPROCESSABLE_ENTITY, "format");
    assert_eq!(
        e["errors"][0]["message"],
        "\"json\" is not one of sing-box, clash, xray, links"
    );

    for (ua, want) in [
        ("clash-verge/v2.2.3", "clash"),
        ("FlClash/v0.8.80 clash-verge", "clash"),
        ("mihomo/1.19.2", "clash"),
        ("Stash/2.4.8 Clash/1.9.0", "clash"),
        ("SFA/1.11.4 (Android 14)", "sing-box"),
        (
            "HiddifyNext/2.5.7 (android) like ClashMeta v2ray sing-box",
            "sing-box",
        ),
        ("Happ/1.63.1", "xray"),
        ("Happ/1.63.0", "links"),
        ("v2rayNG/1.8.29", "xray"),
        ("v2rayNG/1.8.28", "links"),
        // The operator's rule wins over the table's (v2rayN ≥ 6.40 → Xray JSON).
        ("v2rayN/7.1", "links"),
        ("myapp/3", "clash"),
        ("curl/8.5.0", "links"),
        ("", "links"),
    ] {
        let (_, _, s) = fetch(&h, &p, &[("user-agent", ua)]).await;
        assert_eq!(s, (want, 1), "User-Agent {ua:?}");
    }
    // A browser gets the page: the link, QR codes, the subscription URL.
    let (ct, body, s) = fetch(
        &h,
        &p,
        &[
            ("accept", "text/html,application/xhtml+xml"),
            ("user-agent", "Mozilla/5.0"),
        ],
    )
    .await;
    assert_eq!(ct, "text/html; charset=utf-8");
    assert_eq!(s, ("page", 1));
    assert!(
        body.contains(&format!("https://vpn.example.com{p}")),
        "{body}"
    );
    assert!(body.contains("🇺🇸 New York"));
    assert!(body.matches("<svg").count() >= 2);
    // ?format= wins over Accept.
    let (_, _, s) = fetch(&h, &format!("{p}?format=clash"), &[("accept", "text/html")]).await;
    assert_eq!(s, ("clash", 1));
}

#[tokio::test]
async fn headers_tell_apps_usage_expiry_title_and_where_to_get_help() {
    let mut config = PanelConfig {
        public_url: Some("https://vpn.example.com".into()),
        ..PanelConfig::default()
    };
    config.subscription.title = "🇺🇸 VPN".into();
    config.subscription.support_url = Some("https://t.me/vpn_help".into());
    config.subscription.announce = Some("Maintenance on Sunday".into());
    config.subscription.update_interval_hours = 6;
    let h = Harness::with(config).await;
    let t = h.token().await;
    let server = seed(&h, &t).await;
    let u = user(
        &h,
        &t,
        json!({"username": "alice", "traffic_limit": 10_737_418_240u64, "expires_ms": 1_893_456_000_000i64}),
    )
    .await;
    let id = u["id"].as_i64().unwrap();
    let batch = TrafficBatch {
        cursor: 1,
        users: vec![(id, 1_000, 25_000)],
    };
    h.store
        .record_traffic(server, &batch, &[], h.state.now())
        .await
        .unwrap();
    let r = h.get(&format!("{}?format=clash", path(&u))).send().await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.header("subscription-userinfo").unwrap(),
        "upload=1000; download=25000; total=10737418240; expire=1893456000"
    );
    assert_eq!(r.header("profile-update-interval").unwrap(), "6");
    // "🇺🇸 VPN" is not ASCII: base64.
    assert_eq!(
        r.header("profile-title").unwrap(),
        "base64:8J+HuvCfh7ggVlBO"
    );
    assert_eq!(
        r.header("content-disposition").unwrap(),
        "attachment; filename=\"switchyard.yaml\""
    );
    assert_eq!(r.header("support-url").unwrap(), "https://t.me/vpn_help");
    assert_eq!(
        r.header("profile-web-page-url").unwrap(),
        format!("https://vpn.example.com{}", path(&u))
    );
    assert_eq!(r.header("announce").unwrap(), "Maintenance on Sunday");
    assert_eq!(r.header("cache-control").unwrap(), "no-store");
    assert_eq!(
        r.header("content-type").unwrap(),
        "text/yaml; charset=utf-8"
    );

    // An unknown token: a plain 404, nothing about users.
    let missing = h.get("/sub/not-a-token").send().await;
    assert_eq!(
        missing.problem(StatusCode::NOT_FOUND)["detail"],
        "no such subscription"
    );
}

#[tokio::test]
async fn users_who_may_not_connect_get_no_servers_and_the_reason() {
    let h = Harness::new().await;
    let t = h.token().await;
    let server = seed(&h, &t).await;
    let disabled = user(&h, &t, json!({"username": "d", "enabled": false})).await;
    let expired = user(&h, &t, json!({"username": "e", "expires_ms": 1_000})).await;
    let limited = user(&h, &t, json!({"username": "l", "traffic_limit": 100})).await;
    let on_hold = user(&h, &t, json!({"username": "h", "on_hold_days": 30})).await;
    h.store
        .record_traffic(
            server,
            &TrafficBatch {
                cursor: 1,
                users: vec![(limited["id"].as_i64().unwrap(), 60, 60)],
            },
            &[],
            h.state.now(),
        )
        .await
        .unwrap();
    let title = |s: &str| {
        format!(
            "base64:{}",
            base64::engine::general_purpose::STANDARD.encode(s)
        )
    };
    for (u, why, announce) in [
        (&disabled, "disabled", "Your subscription is disabled."),
        (&expired, "expired", "Your subscription has expired."),
        (
            &limited,
            "traffic limit reached",
            "You have used all the traffic of this period.",
        ),
    ] {
        for format in ["sing-box", "clash", "xray", "links"] {
            let r = h.get(&format!("{}?format={format}", path(u))).send().await;
            assert_eq!(r.status, StatusCode::OK);
            let ct = r.header("content-type").unwrap();
            assert_eq!(shape(&ct, &r.text()).1, 0, "{why} {format}");
            // "Switchyard — disabled": the dash is not ASCII.
            assert_eq!(
                r.header("profile-title").unwrap(),
                title(&format!("Switchyard — {why}"))
            );
            assert_eq!(r.header("announce").unwrap(), announce);
        }
    }
    // On hold may connect: servers.
    let (_, _, s) = fetch(&h, &format!("{}?format=links", path(&on_hold)), &[]).await;
    assert_eq!(s, ("links", 1));
}

#[tokio::test]
async fn a_device_limit_counts_hwids_and_operators_can_free_a_place() {
    let h = Harness::new().await;
    let t = h.token().await;
    seed(&h, &t).await;
    let u = user(&h, &t, json!({"username": "alice", "device_limit": 2})).await;
    assert_eq!(u["device_limit"], 2);
    let id = u["id"].as_i64().unwrap();
    let p = format!("{}?format=links", path(&u));
    let dev = |hwid: &'static str| {
        [
            ("x-hwid", hwid),
            ("x-device-os", "Android"),
            ("x-device-model", "Pixel 8"),
            ("user-agent", "Happ/1.63.1"),
        ]
    };
    assert_eq!(fetch(&h, &p, &dev("phone")).await.2, ("links", 1));
    assert_eq!(fetch(&h, &p, &dev("laptop")).await.2, ("links", 1));
    // A third device gets no servers and is told why; the first two still do.
    let r = h.get(&p).header("x-hwid", "tablet").send().await;
    assert_eq!(shape("text/plain", &r.text()).1, 0);
    assert_eq!(
        r.header("announce").unwrap(),
        "This subscription is already used on 2 device(s), its limit; ask for a device to be removed."
    );
    assert_eq!(fetch(&h, &p, &dev("phone")).await.2, ("links", 1));
    // Apps without x-hwid cannot pass the limit (sub_hardening has the rest).
    assert_eq!(fetch(&h, &p, &[]).await.2, ("links", 0));

    let devices = h
        .get(&format!("/api/v1/users/{id}/devices"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::OK);
    let list = devices.as_array().unwrap();
    assert_eq!(list.len(), 2);
    let mut hwids: Vec<&str> = list.iter().map(|d| d["hwid"].as_str().unwrap()).collect();
    hwids.sort_unstable();
    assert_eq!(hwids, ["laptop", "phone"]);
    assert_eq!(list[0]["os"], "Android");
    assert_eq!(list[0]["model"], "Pixel 8");
    assert_eq!(list[0]["user_agent"], "Happ/1.63.1");
    let laptop = list.iter().find(|d| d["hwid"] == "laptop").unwrap()["id"]
        .as_i64()
        .unwrap();
    h.delete(&format!("/api/v1/users/{id}/devices/{laptop}"))
        .bearer(&t)
        .send()
        .await
        .ok(StatusCode::NO_CONTENT);
    h.delete(&format!("/api/v1/users/{id}/devices/{laptop}"))
        .bearer(&t)
        .send()
        .await
        .problem(StatusCode::NOT_FOUND);
    // The freed place goes to the tablet.
    assert_eq!(fetch(&h, &p, &dev("tablet")).await.2, ("links", 1));
    assert_eq!(fetch(&h, &p, &dev("laptop")).await.2, ("links", 0));

    // A header that is too long is a clear 400-class error naming it.
    let long = "x".repeat(300);
    h.get(&p)
        .header("x-hwid", &long)
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "x-hwid");
    // A device limit of 0 is refused, naming the field.
    h.post("/api/v1/users")
        .bearer(&t)
        .json(&json!({"username": "bob", "device_limit": 0}))
        .send()
        .await
        .field_error(StatusCode::UNPROCESSABLE_ENTITY, "device_limit");
}

#[tokio::test]
async fn apps_without_hwid_can_be_refused_for_users_with_a_device_limit() {
    // The default since apps without x-hwid could pass the limit; said explicitly.
    let mut config = PanelConfig::default();
    config.subscription.without_hwid = switchyard_panel::config::WithoutHwid::Refuse;
    let h = Harness::with(config).await;
    let t = h.token().await;
    seed(&h, &t).await;
    let limited = user(&h, &t, json!({"username": "alice", "device_limit": 1})).await;
    let free = user(&h, &t, json!({"username": "bob"})).await;
    let r = h
        .get(&format!("{}?format=links", path(&limited)))
        .send()
        .await;
    assert_eq!(shape("text/plain", &r.text()).1, 0);
    assert!(
        r.header("announce")
            .unwrap()
            .starts_with("This app does not identify the device")
    );
    // Users without a limit are not concerned.
    assert_eq!(
        fetch(&h, &format!("{}?format=links", path(&free)), &[])
            .await
            .2,
        ("links", 1)
    );
}

/// sing-box's own apps build their VPN from the config: they get a `tun` inbound and
/// DNS asked through the proxy (the operator's `remote_dns`), which the real
/// sing-box accepts; other sing-box readers get the local proxy alone; an operator's
/// rule can say an app builds its VPN too; a resolver that is not an IP URL is
/// refused naming the field.
#[tokio::test]
async fn sing_box_s_own_apps_get_a_vpn_config_with_dns_through_the_proxy() {
    let config: PanelConfig = toml::from_str(
        r#"
        [subscription]
        remote_dns = "tls://9.9.9.9"
        [[subscription.agents]]
        app = "Karing"
        contains = "karing"
        format = "sing-box"
        vpn = true
        "#,
    )
    .unwrap();
    config.validate().unwrap();
    let h = Harness::with(config).await;
    let t = h.token().await;
    seed(&h, &t).await;
    let p = path(&user(&h, &t, json!({"username": "alice"})).await);
    for (ua, query, vpn) in [
        ("SFA/1.11.4 (Android 14)", "", true),
        ("SFI/1.12.0 (iOS 18.1)", "", true),
        ("SFM/1.12.0 (macOS 15.1)", "", true),
        ("SFA/1.11.4 (Android 14)", "?format=sing-box", true),
        ("karing_1.1.2_android", "", true),
        ("sing-box 1.14.4", "", false),
        ("switchyard-client/0.1.0", "", false),
        (
            "HiddifyNext/2.5.7 (android) like ClashMeta v2ray sing-box",
            "",
            false,
        ),
        ("curl/8.5.0", "?format=sing-box", false),
    ] {
        let (_, body, shape) = fetch(&h, &format!("{p}{query}"), &[("user-agent", ua)]).await;
        assert_eq!(shape, ("sing-box", 1), "{ua}");
        let config: Value = serde_json::from_str(&body).unwrap();
        let tun = config["inbounds"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["type"] == "tun");
        assert_eq!(tun, vpn, "{ua}: {config:#}");
        if vpn {
            assert_eq!(config["dns"]["final"], "remote", "{ua}");
            assert_eq!(
                config["dns"]["servers"][0],
                json!({"type": "tls", "tag": "remote", "server": "9.9.9.9", "detour": "Switchyard"}),
                "{ua}"
            );
            assert_eq!(config["route"]["auto_detect_interface"], true, "{ua}");
            switchyard_testkit::sing_box::check(&config)
                .await
                .unwrap_or_else(|e| panic!("{ua}: {e:#}"));
        } else {
            assert_eq!(config["dns"].get("final"), None, "{ua}");
        }
    }
    let bad: PanelConfig =
        toml::from_str("[subscription]\nremote_dns = \"https://dns.google/dns-query\"").unwrap();
    let e = bad.validate().unwrap_err().to_string();
    assert!(
        e.contains("subscription.remote_dns: \"dns.google\" is not an IP"),
        "{e}"
    );
}
