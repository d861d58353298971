//! In a real headless Chromium: the inbound form's XHTTP choice shows the path,
//! the Host header and the mode (none of them for TCP, the mode for XHTTP only),
//! and saves an XHTTP inbound with them.

use crate::live;
use crate::ui_common::{click, password, type_into, unlabelled};

use switchyard_panel::model::InboundTransport;
use switchyard_panel::model::xhttp::InboundXhttp;
use switchyard_testkit::Browser;
use switchyard_testkit::browser::DEFAULT_WAIT;

/// Sets the open dialog's select `name` to `value`, as a person would.
async fn pick(b: &Browser, name: &str, value: &str) {
    b.execute(
        "const s = document.querySelector(`dialog[open] select[name='${arguments[0]}']`); \
         s.value = arguments[1]; s.dispatchEvent(new Event('change'));",
        vec![serde_json::json!(name), serde_json::json!(value)],
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_xhttp_inbound_through_the_form_in_a_real_browser() {
    let dir = tempfile::tempdir().unwrap();
    let (panel, http) = live::panel(dir.path()).await;
    let store = panel.state.store().clone();
    let cluster = store
        .create_cluster("Europe", live::now())
        .await
        .unwrap()
        .id;
    let server = live::server(&panel, cluster, "de-1").await;
    let b = Browser::start().await.unwrap();
    b.goto(&format!("http://{http}/")).await.unwrap();
    type_into(&b, "form.login input[name=username]", "admin").await;
    type_into(&b, "form.login input[name=password]", &password(dir.path())).await;
    b.press("Enter").await.unwrap();
    b.wait_for(".topology", DEFAULT_WAIT).await.unwrap();
    b.goto(&format!("http://{http}/#/clusters/{cluster}"))
        .await
        .unwrap();

    click(&b, "[data-new-inbound]").await;
    b.wait_for("dialog[open] select[name=transport]", DEFAULT_WAIT)
        .await
        .unwrap();
    let path = "dialog[open] input[name='transport.path']";
    let host = "dialog[open] input[name='transport.host']";
    let mode = "dialog[open] select[name='transport.mode']";
    for (transport, shown) in [
        ("tcp", [false, false, false]),
        ("ws", [true, true, false]),
        ("xhttp", [true, true, true]),
    ] {
        pick(&b, "transport", transport).await;
        for (css, shown) in [path, host, mode].into_iter().zip(shown) {
            let displayed = b.find(css).await.unwrap().is_displayed().await.unwrap();
            assert_eq!(displayed, shown, "{transport}: {css}");
        }
    }
    assert_eq!(
        unlabelled(&b).await,
        Vec::<String>::new(),
        "the XHTTP inbound form"
    );
    type_into(&b, "dialog[open] input[name=name]", "Frankfurt XHTTP").await;
    let field = b.find(path).await.unwrap();
    field.clear().await.unwrap();
    field.send_keys("/xh").await.unwrap();
    type_into(&b, host, "cdn.example.com").await;
    pick(&b, "transport.mode", "packet-up").await;
    click(&b, "dialog[open] button[type=submit]").await;
    b.wait_until_text(".inbound-chip .chip-name", "Frankfurt XHTTP", DEFAULT_WAIT)
        .await
        .unwrap();
    let saved = store.inbounds(Some(server), None).await.unwrap();
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
