//! Which TLS version and cipher suite a case's client (sing-box or Xray) and a server
//! agree on.
//!
//! A TLS 1.3 ServerHello is sent in the clear, so a one-off relay between a client
//! and the server reads the suite off the wire: the real client's choice with the
//! real server, and no change to either. The relay carries one request only, never
//! a measurement.

use anyhow::{Context, Result, bail, ensure};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use switchyard_testkit::{LOCALHOST, local};

use crate::Fixture;
use crate::case::Case;
use crate::client::Client;
use crate::target::{End, Target};

/// Bytes of the server's first flight kept for parsing.
const KEEP: usize = 4096;

/// Sends one request through a fresh client whose server is a relay to the server
/// on `port`, and names the version and suite of the ServerHello that went by.
pub(crate) async fn negotiated(case: Case, port: u16, fx: &Fixture) -> Result<String> {
    let listener = TcpListener::bind((LOCALHOST, 0)).await?;
    let relay_port = listener.local_addr()?.port();
    let relay = tokio::spawn(async move {
        let (client, _) = listener.accept().await?;
        let server = TcpStream::connect(local(port)).await?;
        carry(client, server).await
    });
    let client = Client::start(case, relay_port, fx).await?;
    Target::plain(&fx.http, End::of(case.peer))
        .get(client.proxy()?, 1024)
        .await
        .with_context(|| {
            format!(
                "a request through the relay; the client's log:\n{}",
                client.log_tail()
            )
        })?;
    drop(client);
    let first_flight = tokio::time::timeout(std::time::Duration::from_secs(10), relay)
        .await
        .context("the relay did not see the connection end")???;
    server_hello(&first_flight).context("reading the server's TLS ServerHello")
}

/// Carries both ways until the server's side ends; returns the start of what the
/// server sent.
async fn carry(client: TcpStream, server: TcpStream) -> Result<Vec<u8>> {
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let up = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut cr, &mut sw).await;
        let _ = sw.shutdown().await;
    });
    let mut seen = Vec::new();
    let mut buf = vec![0; 16 * 1024];
    loop {
        let n = sr.read(&mut buf).await.unwrap_or(0);
        if n == 0 {
            break;
        }
        if seen.len() < KEEP {
            seen.extend_from_slice(&buf[..n.min(KEEP - seen.len())]);
        }
        if cw.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = cw.shutdown().await;
    up.abort();
    Ok(seen)
}

/// "TLS 1.3, TLS_AES_128_GCM_SHA256" from the first record of a server's flight.
fn server_hello(b: &[u8]) -> Result<String> {
    let u8_at = |at: usize| b.get(at).copied().context("the ServerHello is truncated");
    let u16_at =
        |at: usize| Ok::<_, anyhow::Error>(u16::from_be_bytes([u8_at(at)?, u8_at(at + 1)?]));
    ensure!(u8_at(0)? == 0x16, "the first record is not a handshake");
    ensure!(u8_at(5)? == 2, "the first message is not a ServerHello");
    let mut version = u16_at(5 + 4)?; // legacy_version, unless supported_versions says
    // record head 5, message head 4, legacy_version 2, random 32
    let mut at = 5 + 4 + 2 + 32;
    at += 1 + usize::from(u8_at(at)?); // session id
    let suite = u16_at(at)?;
    at += 2 + 1; // suite, compression
    let end = at + 2 + usize::from(u16_at(at)?);
    at += 2;
    while at + 4 <= end {
        let (kind, len) = (u16_at(at)?, usize::from(u16_at(at + 2)?));
        if kind == 0x002b && len == 2 {
            version = u16_at(at + 4)?; // supported_versions
        }
        at += 4 + len;
    }
    let version = match version {
        0x0304 => "TLS 1.3",
        0x0303 => "TLS 1.2",
        v => bail!("unexpected TLS version {v:#06x}"),
    };
    let suite = match suite {
        0x1301 => "TLS_AES_128_GCM_SHA256".to_owned(),
        0x1302 => "TLS_AES_256_GCM_SHA384".to_owned(),
        0x1303 => "TLS_CHACHA20_POLY1305_SHA256".to_owned(),
        s => format!("suite {s:#06x}"),
    };
    Ok(format!("{version}, {suite}"))
}
