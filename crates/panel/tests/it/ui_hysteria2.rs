//! In a real headless Chromium: the inbound form offers Hysteria 2; picking it hides
//! the transport and REALITY (QUIC under TLS has neither) and shows Salamander, the
//! rates, UDP, the hop ports and their interval and the masquerade site; an inbound
//! saved through it has them, and its Salamander password is the panel's secret.

use crate::ui_common::{InboundForm, click, pick, type_into, unlabelled};

use switchyard_panel::model::{InboundHysteria2, InboundTransport, Protocol};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hysteria2_inbound_through_the_form_in_a_real_browser() {
    let form = InboundForm::open().await;
    let b = &form.b;
    let store = form.panel.state.store().clone();
    let shown = |css: &'static str| async move {
        b.find(&format!("dialog[open] {css}"))
            .await
            .unwrap()
            .is_displayed()
            .await
            .unwrap()
    };
    let hy2_fields = [
        "input[name='hysteria2.obfs']",
        "input[name='hysteria2.up_mbps']",
        "input[name='hysteria2.down_mbps']",
        "input[name='hysteria2.udp']",
        "input[name='hysteria2.ports']",
        "input[name='hysteria2.hop_interval_secs']",
        "input[name='hysteria2.masquerade']",
    ];
    for (protocol, quic) in [("vless", false), ("hysteria2", true)] {
        pick(b, "protocol", protocol).await;
        assert_eq!(shown("select[name=transport]").await, !quic, "{protocol}");
        for css in hy2_fields {
            assert_eq!(shown(css).await, quic, "{protocol}: {css}");
        }
    }
    let reality_offered = b
        .execute(
            "return !document.querySelector('dialog[open] select[name=security] \
             option[value=reality]').hidden;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(reality_offered, serde_json::json!(false));
    assert_eq!(
        unlabelled(b).await,
        Vec::<String>::new(),
        "the Hysteria 2 inbound form"
    );
    type_into(b, "dialog[open] input[name=name]", "Frankfurt QUIC").await;
    click(b, "dialog[open] input[name='hysteria2.obfs']").await;
    type_into(b, "dialog[open] input[name='hysteria2.up_mbps']", "200").await;
    type_into(
        b,
        "dialog[open] input[name='hysteria2.ports']",
        "20000-20009",
    )
    .await;
    type_into(
        b,
        "dialog[open] input[name='hysteria2.hop_interval_secs']",
        "15",
    )
    .await;
    type_into(
        b,
        "dialog[open] input[name='hysteria2.masquerade']",
        "https://www.example.com",
    )
    .await;
    let saved = form.save("Frankfurt QUIC").await;
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0].protocol, Protocol::Hysteria2);
    assert_eq!(saved[0].transport, InboundTransport::Tcp);
    assert_eq!(
        saved[0].hysteria2,
        Some(InboundHysteria2 {
            obfs: true,
            up_mbps: Some(200),
            ports: Some("20000-20009".into()),
            hop_interval_secs: Some(15),
            masquerade: Some("https://www.example.com".into()),
            ..InboundHysteria2::default()
        })
    );
    let secrets = store.cluster_inbounds(form.cluster).await.unwrap();
    assert!(
        secrets[0]
            .1
            .hy2_obfs_password
            .as_ref()
            .is_some_and(|p| p.len() >= 16)
    );
}
