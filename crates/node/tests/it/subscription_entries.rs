//! The sing-box client config the panel hands out works against a real node: for
//! each protocol, an [`Entry`] as the panel would write it is rendered by
//! `switchyard_proto::singbox::client_config` (selector, urltest and all), the real
//! sing-box (1.14) runs it, and a download through its proxy arrives intact and is
//! counted on the entry's user. The entry also survives its share link.

use crate::common;

use std::time::Duration;

use common::*;
use switchyard_proto::share::{parse_link, to_link};
use switchyard_proto::singbox::{SingBoxOptions, client_config};
use switchyard_proto::{Entry, EntryProtocol, EntryTls, EntryTransport};
use switchyard_testkit::{SingBox, free_port, local};

const DOWN: u64 = 2 << 20;

/// The node's TLS, the fixture's certificate for `node.test`.
const TLS: &str = "security = { type = \"tls\", cert = \"@CERT@\", key = \"@KEY@\" }";

/// An entry for the fixture's node; TLS trusts exactly its certificate.
fn entry(f: &Fixture, protocol: EntryProtocol, transport: EntryTransport, tls: bool) -> Entry {
    Entry {
        name: "Local node 🚉".into(),
        server: "127.0.0.1".into(),
        port: f.port,
        protocol,
        transport,
        tls: tls.then(|| EntryTls {
            server_name: Some(f.cert.name().into()),
            insecure: false,
            certificate_pem: Some(f.cert.cert_pem().into()),
            certificate_sha256: None,
            alpn: vec!["http/1.1".into()],
            ..EntryTls::default()
        }),
        route: None,
    }
}

/// Runs sing-box on the config rendered for `entry` and downloads through it; the
/// bytes must be counted on Alice.
async fn download_through(f: &Fixture, entry: Entry) {
    // What a link carries comes back whole (the pinned certificate is not carried).
    let mut linked = parse_link(&to_link(&entry)).unwrap();
    if let (Some(tls), Some(original)) = (&mut linked.tls, &entry.tls) {
        tls.certificate_pem.clone_from(&original.certificate_pem);
    }
    assert_eq!(linked, entry);

    let options = SingBoxOptions {
        listen: local(free_port().unwrap()),
        // The urltest group tests against the local target, never the internet.
        urltest_url: format!("http://{}/bytes/0", f.http.addr()),
        ..SingBoxOptions::default()
    };
    let client = SingBox::start(client_config(&[entry], &options))
        .await
        .unwrap();
    let proxy = client.proxy_addr().unwrap();
    assert_eq!(proxy, options.listen);
    f.http.download_via_socks(proxy, DOWN).await.unwrap();
    drop(client);
    let mut down = f.alice().1;
    for _ in 0..50 {
        if down >= DOWN {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        down = f.alice().1;
    }
    assert!(down >= DOWN, "alice's down {down} < {DOWN}");
}

#[tokio::test]
async fn vless_over_websocket_and_tls_with_early_data() {
    let f = start(&format!(
        "protocol = \"vless\"\ntransport = {{ type = \"ws\", path = \"/v?ed=2048\", host = \"node.test\" }}\n{TLS}"
    ))
    .await;
    let vless = EntryProtocol::Vless {
        uuid: ALICE_UUID.into(),
        flow: None,
    };
    let ws = EntryTransport::Ws {
        path: "/v?ed=2048".into(),
        host: Some("node.test".into()),
    };
    download_through(&f, entry(&f, vless, ws, true)).await;
}

#[tokio::test]
async fn trojan_over_tls() {
    let f = start(&format!("protocol = \"trojan\"\n{TLS}")).await;
    let trojan = EntryProtocol::Trojan {
        password: "alice-password".into(),
    };
    download_through(&f, entry(&f, trojan, EntryTransport::Tcp, true)).await;
}

#[tokio::test]
async fn shadowsocks_2022_with_a_user_key() {
    const SERVER_KEY: &str = "c3dpdGNoeWFyZC1zcy0xNg==";
    let f = start(&format!(
        "protocol = \"shadowsocks\"\nmethod = \"2022-blake3-aes-128-gcm\"\npassword = \"{SERVER_KEY}\""
    ))
    .await;
    let ss = EntryProtocol::Shadowsocks {
        method: "2022-blake3-aes-128-gcm".into(),
        password: format!("{SERVER_KEY}:{SS_ALICE_KEY}"),
    };
    download_through(&f, entry(&f, ss, EntryTransport::Tcp, false)).await;
}
