//! The panel's certificate from an ACME server: Debian's pebble (Let's Encrypt's test
//! server) on 127.0.0.1 validates TLS-ALPN-01 on the panel's own listener, for the
//! identifier 127.0.0.1. The panel gets a certificate that chains to pebble's root and
//! serves it; restarted, it serves the stored one (no new order); with more
//! `renew_days` than the certificate has left, it renews at start and serves the new
//! one.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rustls::pki_types::CertificateDer;
use switchyard_config::acme::MAX_RENEW_DAYS;
use switchyard_panel::Panel;
use switchyard_panel::config::{AcmeSettings, ChannelSettings, PanelConfig};
use switchyard_testkit::pebble::Pebble;

fn config(
    dir: &std::path::Path,
    listen: SocketAddr,
    pebble: &Pebble,
    renew_days: u32,
) -> PanelConfig {
    PanelConfig {
        listen,
        data_dir: dir.join("panel"),
        channel: ChannelSettings {
            listen: SocketAddr::from(([127, 0, 0, 1], switchyard_testkit::free_port().unwrap())),
            ..ChannelSettings::default()
        },
        acme: Some(AcmeSettings {
            identifiers: vec!["127.0.0.1".into()],
            directory: pebble.directory().to_owned(),
            directory_root: Some(pebble.directory_root()),
            directory_root_pem: None,
            email: None,
            renew_days,
        }),
        ..PanelConfig::default()
    }
}

/// The certificate the panel serves, verified against pebble's root (its chain
/// checked by rustls, for the name 127.0.0.1), once it serves one (30 s at most).
async fn served(listen: SocketAddr, pebble: &Pebble) -> CertificateDer<'static> {
    let s = pebble.verified(listen, "127.0.0.1").await.unwrap();
    switchyard_testkit::cert::served(&s).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_panel_gets_its_certificate_by_acme_keeps_it_and_renews_it() {
    let dir = tempfile::tempdir().unwrap();
    let listen = SocketAddr::from(([127, 0, 0, 1], switchyard_testkit::free_port().unwrap()));
    let pebble = Pebble::start(listen.port()).await.unwrap();

    let panel = Panel::start(config(dir.path(), listen, &pebble, 30))
        .await
        .unwrap();
    assert_eq!(
        panel.state.config().public_base(),
        format!("https://{listen}")
    );
    let first = served(listen, &pebble).await;
    let stored = dir.path().join("panel/acme");
    for file in ["cert.pem", "key.pem", "account.json"] {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(stored.join(file))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{file}");
    }
    panel.shutdown().await;

    // Restarted: the stored certificate, at once.
    let panel = crate::common::start_again(|| config(dir.path(), listen, &pebble, 30)).await;
    assert_eq!(
        served(listen, &pebble).await,
        first,
        "the stored certificate"
    );
    panel.shutdown().await;

    // Fewer days left than renew_days: renewed at start, the same account.
    let account = std::fs::read_to_string(stored.join("account.json")).unwrap();
    let panel =
        crate::common::start_again(|| config(dir.path(), listen, &pebble, MAX_RENEW_DAYS)).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if served(listen, &pebble).await != first {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "renewed within 30 s:\n{}",
            pebble.log_tail()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        std::fs::read_to_string(stored.join("account.json")).unwrap(),
        account
    );
    panel.shutdown().await;
}
