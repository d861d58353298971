//! In a real headless Chromium: the inbound form offers Hysteria 2; picking it hides
//! the transport and REALITY (QUIC under TLS has neither) and shows Salamander, the
//! rates, UDP, the hop ports and their interval and the masquerade site; an inbound
//! saved through it has them, and its Salamander password is the panel's secret.

use crate::live;
use crate::ui_common::{click, password, type_into, unlabelled};

use switchyard_panel::model::{InboundHysteria2, InboundTransport, Protocol};
use switchyard_testkit::Browser;
use switchyard_testkit::browser::DEFAULT_WAIT;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hysteria2_inbound_through_the_form_in_a_real_browser() {
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
    b.wait_for("dialog[open] select[name=protocol]", DEFAULT_WAIT)
        .await
        .unwrap();
    let pick = |value: &'static str| {
        let b = &b;
        async move {
            b.execute(
                "const s = document.querySelector('dialog[open] select[name=protocol]'); \
                 s.value = arguments[0]; s.dispatchEvent(new Event('change'));",
                vec![serde_json::json!(value)],
            )
            .await
            .unwrap();
        }
    };
    let shown = |css: &'static str| {
        let b = &b;
        async move {
            b.find(&format!("dialog[open] {css}"))
                .await
                .unwrap()
                .is_displayed()
                .await
                .unwrap()
        }
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
        pick(protocol).await;
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
        unlabelled(&b).await,
        Vec::<String>::new(),
        "the Hysteria 2 inbound form"
    );
    type_into(&b, "dialog[open] input[name=name]", "Frankfurt QUIC").await;
    click(&b, "dialog[open] input[name='hysteria2.obfs']").await;
    type_into(&b, "dialog[open] input[name='hysteria2.up_mbps']", "200").await;
    type_into(
        &b,
        "dialog[open] input[name='hysteria2.ports']",
        "20000-20009",
    )
    .await;
    type_into(
        &b,
        "dialog[open] input[name='hysteria2.hop_interval_secs']",
        "15",
    )
    .await;
    type_into(
        &b,
        "dialog[open] input[name='hysteria2.masquerade']",
        "https://www.example.com",
    )
    .await;
    click(&b, "dialog[open] button[type=submit]").await;
    b.wait_until_text(".inbound-chip .chip-name", "Frankfurt QUIC", DEFAULT_WAIT)
        .await
        .unwrap();
    let saved = store.inbounds(Some(server), None).await.unwrap();
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
    let secrets = store.cluster_inbounds(cluster).await.unwrap();
    assert!(
        secrets[0]
            .1
            .hy2_obfs_password
            .as_ref()
            .is_some_and(|p| p.len() >= 16)
    );
}
