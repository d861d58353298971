//! In a real headless Chromium: the inbound form's trusted proxies, a text box shown
//! for WebSocket, HTTPUpgrade, gRPC and XHTTP only (not TCP, not Hysteria 2); a bad
//! entry's error shows next to it naming the entry; networks one per line or
//! comma-separated are saved as a list, and the edit form shows them again.

use crate::ui_common::{InboundForm, click, edit_inbound, pick, type_into, unlabelled};

use switchyard_panel::model::InboundTransport;
use switchyard_testkit::browser::DEFAULT_WAIT;

const BOX: &str = "dialog[open] textarea[name=trusted_proxies]";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trusted_proxies_through_the_form_in_a_real_browser() {
    let form = InboundForm::open().await;
    let b = &form.b;
    let store = form.panel.state.store().clone();
    let server = form.server;
    let shown = || async { b.find(BOX).await.unwrap().is_displayed().await.unwrap() };
    for (transport, with_headers) in [
        ("tcp", false),
        ("ws", true),
        ("httpupgrade", true),
        ("grpc", true),
        ("xhttp", true),
    ] {
        pick(b, "transport", transport).await;
        assert_eq!(shown().await, with_headers, "{transport}");
    }
    // Hysteria 2 has no transport, so none.
    pick(b, "protocol", "hysteria2").await;
    assert!(!shown().await, "hysteria2");
    pick(b, "protocol", "vless").await;
    pick(b, "transport", "ws").await;
    assert!(shown().await, "ws again");
    assert_eq!(
        unlabelled(b).await,
        Vec::<String>::new(),
        "the inbound form with trusted proxies"
    );

    // A bad entry: the API's error, next to the box, naming the entry.
    type_into(b, "dialog[open] input[name=name]", "Frankfurt CDN").await;
    type_into(b, BOX, "10.0.0.0/8\ncloudflare").await;
    click(b, "dialog[open] button[type=submit]").await;
    b.wait_until_text(
        "dialog[open] [data-field=trusted_proxies] .error",
        "trusted_proxies[1]: \"cloudflare\" is not an IP address",
        DEFAULT_WAIT,
    )
    .await
    .unwrap();
    assert!(store.inbounds(Some(server), None).await.unwrap().is_empty());

    // One per line and comma-separated, blank lines and spaces between: a list.
    let text = b.find(BOX).await.unwrap();
    text.clear().await.unwrap();
    text.send_keys("173.245.48.0/20\n\n127.0.0.1,  2400:cb00::/32\n")
        .await
        .unwrap();
    let saved = form.save("Frankfurt CDN").await;
    assert_eq!(saved.len(), 1);
    assert_eq!(
        saved[0].transport,
        InboundTransport::Ws {
            path: "/".into(),
            host: None,
        }
    );
    assert_eq!(
        saved[0].trusted_proxies,
        ["173.245.48.0/20", "127.0.0.1", "2400:cb00::/32"]
    );

    // The edit form shows them one per line; switched to TCP, they are dropped.
    edit_inbound(b, saved[0].id).await;
    b.wait_for(BOX, DEFAULT_WAIT).await.unwrap();
    let value = b
        .execute(
            "return document.querySelector(arguments[0]).value;",
            vec![serde_json::json!(BOX)],
        )
        .await
        .unwrap();
    assert_eq!(value, "173.245.48.0/20\n127.0.0.1\n2400:cb00::/32");
    pick(b, "transport", "tcp").await;
    assert!(!shown().await, "tcp while editing");
    click(b, "dialog[open] button[type=submit]").await;
    // Saved when the dialog has closed; the store says what it holds.
    let mut saved = store.inbounds(Some(server), None).await.unwrap();
    for _ in 0..100 {
        if saved[0].transport == InboundTransport::Tcp {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        saved = store.inbounds(Some(server), None).await.unwrap();
    }
    assert_eq!(saved[0].transport, InboundTransport::Tcp);
    assert!(saved[0].trusted_proxies.is_empty(), "{saved:?}");
}
