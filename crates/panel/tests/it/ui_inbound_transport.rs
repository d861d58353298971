//! In a real headless Chromium: the inbound form's transport select offers
//! HTTPUpgrade and gRPC, shows the path and Host header fields for HTTPUpgrade (as
//! for WebSocket, none for TCP), the service name and multi mode for gRPC, and saves
//! an inbound of each with them.

use crate::ui_common::{InboundForm, click, pick, type_into, unlabelled};

use switchyard_panel::model::InboundTransport;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_httpupgrade_inbound_through_the_form_in_a_real_browser() {
    let form = InboundForm::open().await;
    let b = &form.b;
    let options = b
        .execute(
            "return [...document.querySelectorAll('dialog[open] select[name=transport] option')]
                .map((o) => [o.value, o.textContent]);",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        options,
        serde_json::json!([
            ["tcp", "TCP"],
            ["ws", "WebSocket"],
            ["httpupgrade", "HTTPUpgrade"],
            ["grpc", "gRPC"],
            ["xhttp", "XHTTP"]
        ])
    );
    let path = "dialog[open] input[name='transport.path']";
    let host = "dialog[open] input[name='transport.host']";
    for (transport, shown) in [("tcp", false), ("grpc", false), ("httpupgrade", true)] {
        pick(b, "transport", transport).await;
        for css in [path, host] {
            let displayed = b.find(css).await.unwrap().is_displayed().await.unwrap();
            assert_eq!(displayed, shown, "{transport}: {css}");
        }
    }
    assert_eq!(
        unlabelled(b).await,
        Vec::<String>::new(),
        "the HTTPUpgrade inbound form"
    );
    type_into(b, "dialog[open] input[name=name]", "Frankfurt up").await;
    let field = b.find(path).await.unwrap();
    field.clear().await.unwrap();
    field.send_keys("/up").await.unwrap();
    type_into(b, host, "cdn.example.com").await;
    let saved = form.save("Frankfurt up").await;
    assert_eq!(saved.len(), 1);
    assert_eq!(
        saved[0].transport,
        InboundTransport::HttpUpgrade {
            path: "/up".into(),
            host: Some("cdn.example.com".into()),
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_inbound_through_the_form_in_a_real_browser() {
    let form = InboundForm::open().await;
    let b = &form.b;
    let name = "dialog[open] input[name='transport.service_name']";
    let multi = "dialog[open] input[name='transport.multi_mode']";
    for (transport, shown) in [("tcp", false), ("ws", false), ("grpc", true)] {
        pick(b, "transport", transport).await;
        for css in [name, multi] {
            let displayed = b.find(css).await.unwrap().is_displayed().await.unwrap();
            assert_eq!(displayed, shown, "{transport}: {css}");
        }
    }
    let path = "dialog[open] input[name='transport.path']";
    assert!(!b.find(path).await.unwrap().is_displayed().await.unwrap());
    assert_eq!(
        unlabelled(b).await,
        Vec::<String>::new(),
        "the gRPC inbound form"
    );
    type_into(b, "dialog[open] input[name=name]", "Frankfurt gRPC").await;
    type_into(b, name, "tun.v1").await;
    click(b, multi).await;
    let saved = form.save("Frankfurt gRPC").await;
    assert_eq!(saved.len(), 1);
    assert_eq!(
        saved[0].transport,
        InboundTransport::Grpc {
            service_name: "tun.v1".into(),
            multi_mode: true,
        }
    );
}
