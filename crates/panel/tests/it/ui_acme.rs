//! In a real headless Chromium: the inbound form's security select offers a
//! certificate by ACME, shows its email, directory and root fields (and not the
//! files'), hides the choice for Hysteria 2 (whose challenge cannot come over UDP),
//! and saves an inbound whose certificate the node obtains by ACME.

use crate::ui_common::{InboundForm, pick, type_into, unlabelled};

use switchyard_panel::model::{InboundSecurity, TlsCertificate};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inbound_with_a_certificate_by_acme_through_the_form_in_a_real_browser() {
    let form = InboundForm::open().await;
    let b = &form.b;
    let email = "dialog[open] input[name='security.certificate.email']";
    let directory = "dialog[open] input[name='security.certificate.directory']";
    let cert_file = "dialog[open] input[name='security.certificate.cert']";
    for (security, acme, files) in [
        ("self_signed", false, false),
        ("files", false, true),
        ("acme", true, false),
    ] {
        pick(b, "security", security).await;
        for (css, shown) in [(email, acme), (directory, acme), (cert_file, files)] {
            let displayed = b.find(css).await.unwrap().is_displayed().await.unwrap();
            assert_eq!(displayed, shown, "{security}: {css}");
        }
    }
    assert_eq!(unlabelled(b).await, Vec::<String>::new(), "the ACME fields");
    let offered = "return !document.querySelector(\
        'dialog[open] select[name=security] option[value=acme]').hidden;";
    pick(b, "protocol", "hysteria2").await;
    let hy2 = b.execute(offered, vec![]).await.unwrap();
    assert_eq!(hy2, serde_json::json!(false), "not for Hysteria 2");
    pick(b, "protocol", "vless").await;
    let vless = b.execute(offered, vec![]).await.unwrap();
    assert_eq!(vless, serde_json::json!(true));
    pick(b, "security", "acme").await;
    type_into(b, "dialog[open] input[name=name]", "Frankfurt ACME").await;
    type_into(b, email, "ops@example.com").await;
    let saved = form.save("Frankfurt ACME").await;
    assert_eq!(saved.len(), 1);
    assert_eq!(
        saved[0].security,
        InboundSecurity::Tls {
            certificate: TlsCertificate::Acme {
                email: Some("ops@example.com".into()),
                directory: None,
                directory_root_pem: None,
            }
        }
    );
}
