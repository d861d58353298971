//! Hysteria 2 through a server ([`switchyard_transport::hysteria2`]): QUIC under the
//! entry's TLS (ALPN `h3`), authenticated with the user's password, Salamander when
//! the entry has an obfs password.
//!
//! - **TCP**: one QUIC connection per outbound (shared by its clones), a QUIC stream
//!   per connection to a destination. A connection that died (the server went away,
//!   the network changed) is replaced by the next stream's dial.
//! - **UDP**: each association its own QUIC connection, one session in its
//!   datagrams: a connection's datagrams are all its sessions', so one association
//!   per connection keeps answers apart, and the connection closes with the
//!   association.
//!
//! The client declares the entry's download rate (`down_mbps`) as its receive rate,
//! so a server with Brutal sends at it; its own sending is BBR (the entry's
//! `up_mbps` is the server's to police).
//!
//! **Port hopping**: when the entry has a hop range (`ports`, `first-last`), QUIC's
//! address is the entry's port and the datagrams go to a port of the range and the
//! entry's port, picked anew (from a new local port) every hop interval: the
//! entry's (`hop_interval`, seconds, held to 5 s to an hour like the official
//! client and mihomo, [`MIN_HOP_INTERVAL_SECS`]), else Hysteria's default 30 s
//! ([`super::Outbound::with_hop_interval`] sets any other). A `ports` that is not
//! one range is no hopping: the entry's port.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use switchyard_proto::Address;
use switchyard_proto::entry::hysteria2::{MAX_HOP_INTERVAL_SECS, MIN_HOP_INTERVAL_SECS, hop_range};
use switchyard_proto::hysteria2::Salamander;
use switchyard_transport::hysteria2::{
    Client, ClientError, ClientHop, ClientSettings, DEFAULT_HOP_INTERVAL, QuicStream, connect,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Mutex;

use super::{CONNECT_TIMEOUT, OutboundError, StepError};

/// UDP sessions in reassembly at once on one association's connection.
const MAX_UDP_SESSIONS: usize = 16;
/// The one UDP session of an association's connection.
pub(super) const SESSION: u32 = 1;

/// A Hysteria 2 server: how to reach it, and the TCP streams' shared connection.
pub(super) struct Hysteria2 {
    host: String,
    port: u16,
    settings: ClientSettings,
    shared: Mutex<Option<Arc<Client>>>,
}

impl Hysteria2 {
    /// The server `host:port` with `password`, the entry's TLS and obfuscation.
    pub(super) fn new(
        host: &str,
        port: u16,
        tls: rustls::ClientConfig,
        server_name: String,
        password: &str,
        obfs_password: Option<&str>,
        down_mbps: Option<u32>,
    ) -> Self {
        Self {
            host: host.to_owned(),
            port,
            settings: ClientSettings {
                tls,
                server_name,
                password: password.to_owned(),
                salamander: obfs_password.map(|p| Salamander::new(p.as_bytes())),
                rx: down_mbps.map_or(0, |m| u64::from(m) * 125_000),
                timeout: CONNECT_TIMEOUT,
                max_udp_sessions: MAX_UDP_SESSIONS,
                hop: None,
            },
            shared: Mutex::new(None),
        }
    }

    /// Hopping across the entry's hop range (`ports`, `first-last`) every
    /// `interval_secs` (held to [`MIN_HOP_INTERVAL_SECS`]..=[`MAX_HOP_INTERVAL_SECS`]),
    /// else every [`DEFAULT_HOP_INTERVAL`]; no range, or not one range: the entry's
    /// port alone.
    pub(super) fn hopping(mut self, ports: Option<&str>, interval_secs: Option<u32>) -> Self {
        let interval = interval_secs
            .filter(|s| *s > 0)
            .map_or(DEFAULT_HOP_INTERVAL, |s| {
                Duration::from_secs(u64::from(
                    s.clamp(MIN_HOP_INTERVAL_SECS, MAX_HOP_INTERVAL_SECS),
                ))
            });
        self.settings.hop = ports.and_then(hop_range).map(|(first, last)| ClientHop {
            ports: first..=last,
            interval,
        });
        self
    }

    /// The same server hopping every `interval` (when it has a hop range), with
    /// connections of its own.
    pub(super) fn with_hop_interval(&self, interval: Duration) -> Self {
        let mut settings = self.settings.clone();
        if let Some(hop) = &mut settings.hop {
            hop.interval = interval;
        }
        Self {
            host: self.host.clone(),
            port: self.port,
            settings,
            shared: Mutex::new(None),
        }
    }

    /// The TCP streams' connection: the live one, else a new one.
    pub(super) async fn shared(&self) -> Result<Arc<Client>, StepError> {
        let mut shared = self.shared.lock().await;
        if let Some(client) = shared.as_ref()
            && client.connection().close_reason().is_none()
        {
            return Ok(client.clone());
        }
        *shared = None;
        let client = Arc::new(self.dial().await?);
        *shared = Some(client.clone());
        Ok(client)
    }

    /// A new authenticated connection.
    pub(super) async fn dial(&self) -> Result<Client, StepError> {
        let server = resolve(&self.host, self.port).await?;
        Ok(connect(server, &self.settings).await?)
    }
}

/// The first address of `host:port`.
async fn resolve(host: &str, port: u16) -> Result<SocketAddr, StepError> {
    tokio::net::lookup_host((host, port))
        .await?
        .next()
        .ok_or_else(|| StepError::NoAddress {
            host: host.to_owned(),
        })
}

/// A stream to `destination` over `hy2`'s shared connection; a failure to connect
/// is the `hysteria2` step's, one of the request the `request` step's.
pub(super) async fn connect_tcp(
    hy2: &Hysteria2,
    destination: &Address,
    fail: impl Fn(&'static str, StepError) -> OutboundError,
) -> Result<Hysteria2Stream, OutboundError> {
    let client = hy2.shared().await.map_err(|e| fail("hysteria2", e))?;
    let stream = client
        .open_tcp(destination)
        .await
        .map_err(|e| fail("request", e.into()))?;
    Ok(Hysteria2Stream {
        stream,
        _client: client,
    })
}

/// A stream through a Hysteria 2 server, holding its connection while it lives.
pub struct Hysteria2Stream {
    stream: QuicStream,
    _client: Arc<Client>,
}

impl std::fmt::Debug for Hysteria2Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hysteria2Stream").finish_non_exhaustive()
    }
}

impl AsyncRead for Hysteria2Stream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Hysteria2Stream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// An association's own connection, refused when the server relays no UDP.
pub(super) async fn open_udp(hy2: &Hysteria2) -> Result<Arc<Client>, StepError> {
    let client = hy2.dial().await?;
    if !client.udp() {
        return Err(StepError::Hysteria2(ClientError::Stream(
            "the server relays no UDP".into(),
        )));
    }
    Ok(Arc::new(client))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> Hysteria2 {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
        Hysteria2::new("node.test", 443, tls, "node.test".into(), "pw", None, None)
    }

    #[test]
    fn an_entrys_hop_interval_is_held_to_5_s_to_an_hour() {
        let interval = |secs: Option<u32>| {
            server()
                .hopping(Some("20000-20010"), secs)
                .settings
                .hop
                .map(|h| h.interval)
        };
        for (secs, want) in [
            (Some(15), 15),
            (Some(5), 5),
            (Some(1), 5),
            (Some(3600), 3600),
            (Some(u32::MAX), 3600),
            (Some(0), 30),
            (None, 30),
        ] {
            assert_eq!(interval(secs), Some(Duration::from_secs(want)), "{secs:?}");
        }
        // No range: no hopping, whatever the interval.
        assert_eq!(server().hopping(None, Some(15)).settings.hop, None);
    }

    #[test]
    fn an_entrys_hysteria2_range_makes_it_hop_every_30_s_unless_told() {
        let hop = |h: &Hysteria2| h.settings.hop.clone();
        let hopping = server().hopping(Some("20000-20010"), None);
        let want = ClientHop {
            ports: 20000..=20010,
            interval: Duration::from_secs(30),
        };
        assert_eq!(hop(&hopping), Some(want.clone()));
        let faster = hopping.with_hop_interval(Duration::from_millis(200));
        assert_eq!(
            hop(&faster),
            Some(ClientHop {
                interval: Duration::from_millis(200),
                ..want
            })
        );
        // No range, or not one: the entry's port alone, whatever the interval.
        assert_eq!(hop(&server().hopping(None, None)), None);
        assert_eq!(hop(&server().hopping(Some("1-2,5"), None)), None);
        let plain = server().with_hop_interval(Duration::from_millis(200));
        assert_eq!(hop(&plain), None);
    }
}
