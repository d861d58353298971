//! The harness drives the real sing-box: as a client (a `mixed` inbound) with a
//! `direct` outbound, and as both server and client of each protocol the node will
//! speak, carrying HTTP downloads and uploads and UDP datagrams, all on 127.0.0.1.
//!
//! These need the pinned sing-box: `cargo xtask peers` installs it (`cargo xtask
//! test` does that first); without it they fail saying so.

use anyhow::Result;
use serde_json::{Value, json};
use switchyard_testkit::{HttpTarget, SingBox, TestCert, UdpEcho, config, free_port, local};

const MIB: u64 = 1024 * 1024;
const UUID: &str = "bf000d23-0752-40b4-affe-68f7707a9661";
/// base64 of 16 bytes, the key size of `2022-blake3-aes-128-gcm`.
const SS_KEY: &str = "c3dpdGNoeWFyZC10ZXN0IQ==";
const SS_METHOD: &str = "2022-blake3-aes-128-gcm";

/// Sends a 4 MiB download, a 1 MiB upload and 20 datagrams through the client's
/// proxy, and checks that the targets saw them.
async fn carries_traffic(client: &SingBox) -> Result<()> {
    let proxy = client.proxy_addr()?;
    let http = HttpTarget::start().await?;
    http.download_via_socks(proxy, 4 * MIB).await?;
    http.upload_via_socks(proxy, MIB).await?;
    assert_eq!(http.bytes_out(), 4 * MIB);
    assert_eq!(http.bytes_in(), MIB);
    let echo = UdpEcho::start().await?;
    echo.check_via_socks(proxy, 20, 1200).await?;
    assert!(echo.datagrams() >= 20);
    Ok(())
}

/// A server of `inbound` and a client of `outbound`, carrying traffic.
async fn pair_carries_traffic(inbound: Value, outbound: Value) -> Result<()> {
    let _server = SingBox::start(config::server(inbound)).await?;
    let client = SingBox::client(outbound).await?;
    carries_traffic(&client).await
}

#[tokio::test]
async fn mixed_inbound_with_direct_outbound_carries_tcp_and_udp() -> Result<()> {
    let client = SingBox::client(config::direct_outbound()).await?;
    carries_traffic(&client).await
}

#[tokio::test]
async fn a_broken_config_fails_with_sing_box_own_message() {
    let mut broken = config::client(free_port().unwrap(), config::direct_outbound());
    broken["inbounds"][0]["listen_port"] = json!("not a port");
    let err = format!("{:#}", SingBox::start(broken).await.unwrap_err());
    assert!(err.contains("sing-box check"), "{err}");
    assert!(err.contains("listen_port"), "{err}");
    assert!(err.contains("cannot unmarshal"), "{err}");

    // `sing-box check` lets a route to a missing outbound through; `run` exits at once,
    // and the error shows its log.
    let mut dangling = config::client(free_port().unwrap(), config::direct_outbound());
    dangling["route"]["final"] = json!("nowhere");
    let err = format!("{:#}", SingBox::start(dangling).await.unwrap_err());
    assert!(err.contains("nowhere"), "{err}");
}

#[tokio::test]
async fn vless_over_tcp_between_two_sing_boxes() -> Result<()> {
    let port = free_port()?;
    pair_carries_traffic(
        config::vless_inbound(port, UUID),
        config::vless_outbound(local(port), UUID),
    )
    .await
}

#[tokio::test]
async fn vless_over_websocket_and_tls_between_two_sing_boxes() -> Result<()> {
    let cert = TestCert::new("node.test")?;
    let port = free_port()?;
    let mut inbound = config::vless_inbound(port, UUID);
    inbound["tls"] = config::tls_server(&cert);
    inbound["transport"] = config::ws_transport("/vless");
    let mut outbound = config::vless_outbound(local(port), UUID);
    outbound["tls"] = config::tls_client(&cert);
    outbound["transport"] = config::ws_transport("/vless");
    pair_carries_traffic(inbound, outbound).await
}

#[tokio::test]
async fn trojan_over_tls_between_two_sing_boxes() -> Result<()> {
    let cert = TestCert::new("node.test")?;
    let port = free_port()?;
    pair_carries_traffic(
        config::trojan_inbound(port, "secret", config::tls_server(&cert)),
        config::trojan_outbound(local(port), "secret", config::tls_client(&cert)),
    )
    .await
}

#[tokio::test]
async fn shadowsocks_2022_between_two_sing_boxes() -> Result<()> {
    let port = free_port()?;
    pair_carries_traffic(
        config::shadowsocks_inbound(port, SS_METHOD, SS_KEY),
        config::shadowsocks_outbound(local(port), SS_METHOD, SS_KEY),
    )
    .await
}

#[tokio::test]
async fn a_client_distrusting_the_certificate_carries_nothing() -> Result<()> {
    let cert = TestCert::new("node.test")?;
    let other = TestCert::new("node.test")?;
    let port = free_port()?;
    let _server = SingBox::start(config::server(config::trojan_inbound(
        port,
        "secret",
        config::tls_server(&cert),
    )))
    .await?;
    let client = SingBox::client(config::trojan_outbound(
        local(port),
        "secret",
        config::tls_client(&other),
    ))
    .await?;
    let http = HttpTarget::start().await?;
    let result = http.download_via_socks(client.proxy_addr()?, 1024).await;
    assert!(
        result.is_err(),
        "a certificate the client does not trust was accepted"
    );
    assert_eq!(http.bytes_out(), 0);
    Ok(())
}
