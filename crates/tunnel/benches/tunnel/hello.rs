//! Which TLS version and cipher suite a client and a server agree on, read off the
//! wire: a TLS 1.3 ServerHello is in the clear, so a one-off relay between the real
//! client and the real server reads it without changing either. It carries a
//! handshake, never a measurement.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, bail, ensure};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A relay to `upstream` that reports the first ServerHello going by.
pub(crate) struct Sniffer {
    addr: SocketAddr,
    first: oneshot::Receiver<Vec<u8>>,
    task: JoinHandle<()>,
}

impl Sniffer {
    pub(crate) async fn start(upstream: SocketAddr) -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (tx, first) = oneshot::channel();
        // Every connection is carried (a client may dial before its server listens,
        // and retry); the first ServerHello that goes by is reported.
        let tx = Arc::new(Mutex::new(Some(tx)));
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let tx = tx.clone();
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(upstream).await {
                        carry(client, server, tx).await;
                    }
                });
            }
        });
        Ok(Self { addr, first, task })
    }

    /// Where the client should connect.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// "TLS 1.3, TLS_AES_128_GCM_SHA256", once the ServerHello went by.
    pub(crate) async fn negotiated(&mut self) -> Result<String> {
        let first = tokio::time::timeout(std::time::Duration::from_secs(15), &mut self.first)
            .await
            .context("no ServerHello went by within 15 s")?
            .context("the sniffed connection ended before a ServerHello")?;
        server_hello(&first).context("reading the server's TLS ServerHello")
    }
}

impl Drop for Sniffer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type First = Arc<Mutex<Option<oneshot::Sender<Vec<u8>>>>>;

async fn carry(client: TcpStream, server: TcpStream, first: First) {
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let up = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut cr, &mut sw).await;
        let _ = sw.shutdown().await;
    });
    let mut looking = true;
    let mut seen = Vec::new();
    let mut buf = vec![0; 16 * 1024];
    loop {
        let n = sr.read(&mut buf).await.unwrap_or(0);
        if n == 0 {
            break;
        }
        if looking {
            seen.extend_from_slice(&buf[..n]);
            let record = seen
                .get(3..5)
                .map(|l| 5 + usize::from(u16::from_be_bytes([l[0], l[1]])));
            if record.is_some_and(|r| seen.len() >= r) {
                looking = false;
                let tx = first.lock().map(|mut f| f.take());
                if let Ok(Some(tx)) = tx {
                    let _ = tx.send(std::mem::take(&mut seen));
                }
            }
        }
        if cw.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    up.abort();
}

/// The version and suite in the first record of a server's flight.
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
        0xcca9 => "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256".to_owned(),
        0xcca8 => "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256".to_owned(),
        0xc02f => "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".to_owned(),
        0xc030 => "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384".to_owned(),
        0xc02b => "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256".to_owned(),
        0xc02c => "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384".to_owned(),
        s => format!("suite {s:#06x}"),
    };
    Ok(format!("{version}, {suite}"))
}
