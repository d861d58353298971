//! An inbound's certificate by ACME, set in the panel: a VLESS+TLS inbound whose
//! certificate source is `acme` (pebble's directory and root, no SNI, so the name is
//! the server's address, 127.0.0.1) is pushed to a real node joined over the channel;
//! pebble validates TLS-ALPN-01 on the inbound's port, and the inbound then serves a
//! certificate that chains to pebble's root. The subscription's entry verifies it
//! (no pin, not insecure, the server name 127.0.0.1), and a VLESS session over that
//! verified TLS carries an echo through the node. The node's config names the
//! settings (`security.acme`) and a read of the inbound gives them back.

use crate::live;

use switchyard_panel::model::{InboundSecurity, ServerState, TlsCertificate};
use switchyard_proto::vless;
use switchyard_testkit::free_port;
use switchyard_testkit::pebble::Pebble;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inbound_s_certificate_by_acme_is_obtained_by_its_node_and_verified_by_clients() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port().unwrap();
    let pebble = Pebble::start(port).await.unwrap();
    let directory_root = std::fs::read_to_string(pebble.directory_root()).unwrap();
    let (panel, http) = live::panel(dir.path()).await;
    let store = panel.state.store().clone();
    let service = panel.state.service().clone();
    let cluster = store.create_cluster("c", live::now()).await.unwrap();
    let server = live::server(&panel, cluster.id, "acme").await;
    let mut input = live::vless(server, "ACME", port, true);
    input.sni = None;
    let certificate = TlsCertificate::Acme {
        email: Some("ops@example.com".into()),
        directory: Some(pebble.directory().to_owned()),
        directory_root_pem: Some(directory_root),
    };
    input.security = InboundSecurity::Tls {
        certificate: certificate.clone(),
    };
    let inbound = service.create_inbound(&input, live::now()).await.unwrap();
    assert_eq!(
        store.inbound(inbound.id).await.unwrap().security,
        InboundSecurity::Tls { certificate },
        "read back as it went in"
    );
    let user = service
        .create_user(&live::user("alice"), live::now())
        .await
        .unwrap();
    let token = panel.join_token(server).await.unwrap();
    let node = live::join(&dir.path().join("node"), &token).await;
    live::wait_until("the node is online", 20, || {
        let store = store.clone();
        async move { store.server(server).await.unwrap().state == ServerState::Online }
    })
    .await;
    let acme = &node.node().config().await.inbounds[0].security;
    let switchyard_node::config::Security::Tls {
        acme: Some(settings),
        ..
    } = acme
    else {
        panic!("the node's inbound takes its certificate by ACME: {acme:?}")
    };
    assert_eq!(settings.identifiers, ["127.0.0.1"]);
    assert_eq!(settings.email.as_deref(), Some("ops@example.com"));

    // The subscription's entry verifies the certificate.
    let (status, sub) = live::http(
        http,
        "GET",
        &format!("{}?format=sing-box", user.subscription_path),
        "",
        None,
    )
    .await;
    assert_eq!(status, 200);
    let outbound = sub["outbounds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["type"] == "vless")
        .unwrap_or_else(|| panic!("{sub}"))
        .clone();
    let tls = &outbound["tls"];
    assert_eq!(tls["enabled"], true, "{outbound}");
    assert_eq!(tls["server_name"], "127.0.0.1", "{outbound}");
    assert!(tls.get("insecure").is_none_or(|v| v == false), "{outbound}");
    assert!(tls.get("certificate").is_none(), "no pin: {outbound}");
    let uuid = outbound["uuid"].as_str().unwrap().to_owned();

    // The inbound serves pebble's certificate once its node obtained it.
    let mut tls = pebble
        .verified(
            std::net::SocketAddr::from(([127, 0, 0, 1], port)),
            "127.0.0.1",
        )
        .await
        .unwrap();
    let echo = live::echo_server().await;
    let mut hello = Vec::new();
    vless::Request {
        uuid: vless::parse_uuid(&uuid).unwrap(),
        flow: vless::Flow::None,
        command: vless::Command::Tcp(switchyard_proto::Address::Ip(echo)),
    }
    .encode(&mut hello);
    hello.extend_from_slice(b"ping through a verified certificate");
    tls.write_all(&hello).await.unwrap();
    let mut got = vec![0u8; 2 + 35];
    tls.read_exact(&mut got).await.unwrap();
    assert_eq!(&got[..2], [0, 0], "VLESS response header");
    assert_eq!(&got[2..], b"ping through a verified certificate");
    node.shutdown().await;
}
