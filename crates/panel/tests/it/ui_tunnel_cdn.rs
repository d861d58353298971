//! In a real headless Chromium: tunnel profiles behind a CDN, made in the tunnel
//! form. The transport select offers HTTPUpgrade, XHTTP and gRPC next to TCP and
//! WebSocket; the host and CDN fields show only for the transports over HTTP, the path
//! for all of them but gRPC (its service name instead), the mode for XHTTP only; the
//! saved profiles carry the CDN's TLS name (and no root: the web's roots), and the
//! API shows the XHTTP one as `{"type":"xhttp",...}`.

use crate::live;
use crate::ui_common::{click, log_in, pick, type_into, unlabelled};

use serde_json::json;
use switchyard_panel::model::tunnel::{LinkSecurity, LinkTransport, OuterTls};
use switchyard_testkit::Browser;
use switchyard_testkit::browser::DEFAULT_WAIT;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tunnel_profile_behind_a_cdn_through_the_form() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, http) = live::panel(dir.path()).await;
    let store = panel.state.store().clone();
    let cluster = store
        .create_cluster("Europe", live::now())
        .await
        .unwrap()
        .id;
    let _relay = live::server(&panel, cluster, "relay").await;
    let origin = live::server(&panel, cluster, "origin").await;
    let b = Browser::start().await.unwrap();
    log_in(&b, http, dir.path()).await;
    b.goto(&format!("http://{http}/#/tunnels")).await.unwrap();
    click(&b, "[data-new-tunnel]").await;
    type_into(&b, "dialog[open] input[name=name]", "cdn").await;
    click(
        &b,
        &format!("dialog[open] input[name=origin][value=\"{origin}\"]"),
    )
    .await;
    pick(&b, "profiles[0].security", "tls").await;
    let options = b
        .execute(
            "return [...document.querySelectorAll('dialog[open] select[name=\"profiles[0].transport\"] option')]
                .map((o) => o.value);",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        options,
        json!(["tcp", "ws", "httpupgrade", "xhttp", "grpc"])
    );
    let fields = [
        "path",
        "service_name",
        "mode",
        "host",
        "outer_tls.server_name",
        "outer_tls.ca_pem",
    ];
    let http_only = ["host", "outer_tls.server_name", "outer_tls.ca_pem"];
    // Each transport, and the fields it shows; HTTPUpgrade last, for the profile below.
    for (transport, shown) in [
        ("tcp", vec![]),
        ("xhttp", [&["path", "mode"][..], &http_only].concat()),
        ("grpc", [&["service_name"][..], &http_only].concat()),
        ("ws", [&["path"][..], &http_only].concat()),
        ("httpupgrade", [&["path"][..], &http_only].concat()),
    ] {
        pick(&b, "profiles[0].transport", transport).await;
        for name in fields {
            let css = format!("dialog[open] [name=\"profiles[0].transport.{name}\"]");
            let displayed = b.find(&css).await.unwrap().is_displayed().await.unwrap();
            assert_eq!(displayed, shown.contains(&name), "{transport}: {name}");
        }
    }
    assert_eq!(
        unlabelled(&b).await,
        Vec::<String>::new(),
        "the tunnel form with a CDN profile"
    );
    let path = b
        .find("dialog[open] input[name=\"profiles[0].transport.path\"]")
        .await
        .unwrap();
    path.clear().await.unwrap();
    path.send_keys("/cdn-link").await.unwrap();
    type_into(
        &b,
        "dialog[open] input[name=\"profiles[0].transport.host\"]",
        "cdn.example.com",
    )
    .await;
    type_into(
        &b,
        "dialog[open] input[name=\"profiles[0].transport.outer_tls.server_name\"]",
        "cdn.example.com",
    )
    .await;
    type_into(
        &b,
        "dialog[open] input[name=\"profiles[0].addresses\"]",
        "cdn.example.com:443",
    )
    .await;
    // A second profile, on XHTTP behind the same CDN (an added profile is on TLS).
    click(&b, "dialog[open] [data-add-profile]").await;
    pick(&b, "profiles[1].transport", "xhttp").await;
    let path = b
        .find("dialog[open] input[name=\"profiles[1].transport.path\"]")
        .await
        .unwrap();
    path.clear().await.unwrap();
    path.send_keys("/cdn-xh").await.unwrap();
    pick(&b, "profiles[1].transport.mode", "packet-up").await;
    for (name, text) in [
        ("transport.host", "cdn.example.com"),
        ("transport.outer_tls.server_name", "cdn.example.com"),
        ("addresses", "cdn.example.com:443"),
    ] {
        type_into(
            &b,
            &format!("dialog[open] input[name=\"profiles[1].{name}\"]"),
            text,
        )
        .await;
    }
    assert_eq!(
        unlabelled(&b).await,
        Vec::<String>::new(),
        "the tunnel form with an XHTTP profile"
    );
    click(&b, "dialog[open] button[type=submit]").await;
    b.wait_until_text("[data-tunnel-state]", "Relay unreachable", DEFAULT_WAIT)
        .await
        .unwrap();
    let tunnels = store.tunnels().await.unwrap();
    assert_eq!(tunnels.len(), 1);
    let p = &tunnels[0].profiles[1];
    assert_eq!(p.security, Some(LinkSecurity::Tls));
    assert_eq!(
        p.transport,
        LinkTransport::Xhttp {
            path: "/cdn-xh".into(),
            host: "cdn.example.com".into(),
            mode: "packet-up".into(),
            outer_tls: Some(OuterTls {
                server_name: "cdn.example.com".into(),
                ca_pem: None,
            }),
        }
    );
    assert_eq!(p.addresses, ["cdn.example.com:443"]);
    let token = live::api_token(http, &dir.path().join("panel")).await;
    let (status, answer) = live::http(http, "GET", "/api/v1/tunnels", &token, None).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer[0]["profiles"][1]["transport"],
        json!({
            "type": "xhttp",
            "path": "/cdn-xh",
            "host": "cdn.example.com",
            "mode": "packet-up",
            "outer_tls": { "server_name": "cdn.example.com" },
        })
    );
    let p = &tunnels[0].profiles[0];
    assert_eq!(p.security, Some(LinkSecurity::Tls));
    assert_eq!(
        p.transport,
        LinkTransport::HttpUpgrade {
            path: "/cdn-link".into(),
            host: "cdn.example.com".into(),
            outer_tls: Some(OuterTls {
                server_name: "cdn.example.com".into(),
                ca_pem: None,
            }),
        }
    );
    assert_eq!(p.addresses, ["cdn.example.com:443"]);
}
