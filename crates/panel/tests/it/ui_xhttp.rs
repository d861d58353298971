//! In a real headless Chromium: the inbound form's XHTTP choice shows the path,
//! the Host header and the mode (none of them for TCP, the mode for XHTTP only),
//! and saves an XHTTP inbound with them.

use crate::ui_common::{InboundForm, pick, type_into, unlabelled};

use switchyard_panel::model::InboundTransport;
use switchyard_panel::model::xhttp::InboundXhttp;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_xhttp_inbound_through_the_form_in_a_real_browser() {
    let form = InboundForm::open().await;
    let b = &form.b;
    let path = "dialog[open] input[name='transport.path']";
    let host = "dialog[open] input[name='transport.host']";
    let mode = "dialog[open] select[name='transport.mode']";
    for (transport, shown) in [
        ("tcp", [false, false, false]),
        ("ws", [true, true, false]),
        ("xhttp", [true, true, true]),
    ] {
        pick(b, "transport", transport).await;
        for (css, shown) in [path, host, mode].into_iter().zip(shown) {
            let displayed = b.find(css).await.unwrap().is_displayed().await.unwrap();
            assert_eq!(displayed, shown, "{transport}: {css}");
        }
    }
    assert_eq!(
        unlabelled(b).await,
        Vec::<String>::new(),
        "the XHTTP inbound form"
    );
    type_into(b, "dialog[open] input[name=name]", "Frankfurt XHTTP").await;
    let field = b.find(path).await.unwrap();
    field.clear().await.unwrap();
    field.send_keys("/xh").await.unwrap();
    type_into(b, host, "cdn.example.com").await;
    pick(b, "transport.mode", "packet-up").await;
    let saved = form.save("Frankfurt XHTTP").await;
    assert_eq!(saved.len(), 1);
    assert_eq!(
        saved[0].transport,
        InboundTransport::Xhttp(InboundXhttp {
            path: "/xh".into(),
            host: Some("cdn.example.com".into()),
            mode: "packet-up".into(),
        })
    );
}
