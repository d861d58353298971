//! How a link's bytes travel: TCP+TLS, WebSocket+TLS or REALITY, dialed or accepted
//! through the shared transport layer (`switchyard_transport`), all ending in one
//! boxed byte stream ([`LinkStream`]). This module says which layers a profile
//! speaks, and what a failure means for a link.
//!
//! ```text
//! Tls:          TCP ─ TLS 1.3 (pinned) ─ link bytes
//! WebSocket:    TCP ─ (TLS to a CDN) ─ HTTP/1.1 Upgrade (path, Host) ─ binary messages ─ TLS 1.3 (pinned) ─ link bytes
//! HttpUpgrade:  TCP ─ (TLS to a CDN) ─ HTTP/1.1 Upgrade (path, Host), 101 ─ TLS 1.3 (pinned) ─ link bytes
//! Xhttp:        TCP ─ (TLS to a CDN) ─ HTTP/1.1 or HTTP/2 requests (path, Host) ─ TLS 1.3 (pinned) ─ link bytes
//! Grpc:         TCP ─ (TLS to a CDN) ─ HTTP/2, a gRPC stream (service name) ─ TLS 1.3 (pinned) ─ link bytes
//! ```
//! XHTTP and gRPC links are streams of an HTTP server on the listening side
//! ([`super::streams`]): one connection may carry several links (HTTP/2), and one
//! XHTTP link may use several connections (packet-up over HTTP/1.1).
//! The WebSocket and HTTPUpgrade profiles carry the pinned TLS *inside* the upgraded
//! stream, so an HTTP reverse proxy or CDN that passes upgrades can carry the link
//! without holding its key: trust stays end to end, the proxy sees only an ordinary
//! upgrade. The dialing side may speak TLS to that CDN first ([`OuterTls`]); the CDN
//! ends it and passes the upgrade on, so the listening side serves plain HTTP.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls::ServerConfig;
use rustls::pki_types::ServerName;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;

use switchyard_proto::reality::{Policy, PrivateKey, PublicKey, ReplayFilter, ShortId};
use switchyard_proto::websocket::{EarlyData, UpgradeConfig};
use switchyard_transport::dial::{Connector as _, Layer, Stack, Step};
use switchyard_transport::{BoxIo, httpupgrade, ws};

use super::cert::client_config;
pub use super::outer::OuterTls;
use super::pin::{Pin, PinError, pin_error_in};
use super::streams::{Failed, HttpLink, StreamServer};
use switchyard_transport::reality::{self, Accepted, ClientSettings, ServerSettings, SiteDialer};

/// A link's byte stream after TLS, whatever carries it: the transport layer's
/// [`BoxIo`].
pub type LinkStream = BoxIo;

/// A profile's REALITY: what the dialing side presents, and on the listening side its
/// private key and the target it splices everyone else to.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RealityLink {
    /// The SNI sent: one of the target site's names.
    pub server_name: String,
    /// The listening side's REALITY public key: the dialing side's pin.
    pub public_key: PublicKey,
    /// The short id presented.
    pub short_id: ShortId,
    /// The target site (`host:port`) the listening side splices refused connections
    /// to.
    pub dest: String,
    /// The listening side only: its private key (base64url), matching `public_key`.
    pub private_key: Option<String>,
}

impl core::fmt::Debug for RealityLink {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RealityLink")
            .field("server_name", &self.server_name)
            .field("public_key", &self.public_key.encode())
            .field("dest", &self.dest)
            .finish_non_exhaustive()
    }
}

/// The largest clock difference a REALITY listening side allows a dialing node: 5
/// minutes, lenient with drifting clocks, and it bounds how long a recorded hello
/// could be replayed (the replay memory covers that window whole).
pub const REALITY_MAX_TIME_DIFF_MS: u64 = 5 * 60 * 1000;

/// How a profile carries its links.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Transport {
    /// TLS straight on TCP.
    Tls,
    /// TLS inside WebSocket binary messages, after an HTTP/1.1 Upgrade.
    WebSocket {
        /// The request path, e.g. `/tunnel`; the listening side accepts only this one.
        path: String,
        /// The `Host` the dialing side sends (what a proxy or CDN routes on); the
        /// listening side does not check it, since proxies may rewrite it.
        host: String,
        /// The dialing side's TLS to a CDN in front of the listening side, if any.
        outer: Option<OuterTls>,
    },
    /// TLS inside an HTTP/1.1 upgrade answered `101`, then the bytes as they are
    /// (HTTPUpgrade): for a CDN that passes upgrades but not WebSocket framing.
    HttpUpgrade {
        /// The request path; the listening side accepts only this one.
        path: String,
        /// The `Host` the dialing side sends; not checked by the listening side.
        host: String,
        /// The dialing side's TLS to a CDN in front of the listening side, if any.
        outer: Option<OuterTls>,
    },
    /// TLS 1.3 with REALITY on TCP: the listening side answers only hellos sealed
    /// with its key and splices everyone else to a real site; its public key is the
    /// pin ([`switchyard_transport::reality`]).
    Reality(RealityLink),
    /// TLS inside XHTTP's requests under `path`: for a CDN that carries no upgrade.
    Xhttp {
        /// The path the requests go under; the listening side accepts only it.
        path: String,
        /// The `Host` the dialing side sends; not checked by the listening side.
        host: String,
        /// How the upload travels (`auto`: stream-up when the CDN's TLS is there to
        /// offer HTTP/2, packet-up otherwise).
        mode: switchyard_proto::xhttp::Mode,
        /// The dialing side's TLS to a CDN in front of the listening side, if any.
        outer: Option<OuterTls>,
    },
    /// TLS inside a gRPC stream on `/{service_name}/Tun`, HTTP/2 (cleartext to the
    /// listening side).
    Grpc {
        /// The gRPC service name; the listening side accepts only it.
        service_name: String,
        /// The `:authority` the dialing side sends.
        host: String,
        /// The dialing side's TLS to a CDN in front of the listening side, if any.
        outer: Option<OuterTls>,
    },
}

impl Transport {
    /// Whether links are streams of an HTTP server (XHTTP, gRPC) rather than a TCP
    /// connection each.
    pub fn is_http_streams(&self) -> bool {
        self.http_link().is_some()
    }

    /// What an XHTTP or gRPC profile's requests say.
    fn http_link(&self) -> Option<HttpLink<'_>> {
        match self {
            Self::Xhttp { path, mode, .. } => Some(HttpLink::Xhttp { path, mode: *mode }),
            Self::Grpc { service_name, .. } => Some(HttpLink::Grpc { service_name }),
            _ => None,
        }
    }
}

/// One address of the listening side, as the dialing side sees it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    /// `host:port` to connect to.
    pub addr: String,
    /// The tunnel's certificate name: the SNI sent and the name checked.
    pub name: String,
    /// What the certificate must match: any one of these (several while a re-issued
    /// certificate rolls out).
    pub pins: Vec<Pin>,
    /// TLS or WebSocket.
    pub transport: Transport,
}

impl core::fmt::Display for Target {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match &self.transport {
            Transport::Tls => write!(f, "tls://{}", self.addr),
            Transport::WebSocket {
                path, outer: None, ..
            } => write!(f, "ws://{}{path}", self.addr),
            Transport::WebSocket { path, .. } => write!(f, "wss://{}{path}", self.addr),
            Transport::HttpUpgrade {
                path, outer: None, ..
            } => write!(f, "http://{}{path}", self.addr),
            Transport::HttpUpgrade { path, .. } => write!(f, "https://{}{path}", self.addr),
            Transport::Reality(_) => write!(f, "reality://{}", self.addr),
            Transport::Xhttp {
                path, outer: None, ..
            } => write!(f, "xhttp://{}{path}", self.addr),
            Transport::Xhttp { path, .. } => write!(f, "xhttps://{}{path}", self.addr),
            Transport::Grpc {
                service_name,
                outer: None,
                ..
            } => write!(f, "grpc://{}/{service_name}", self.addr),
            Transport::Grpc { service_name, .. } => {
                write!(f, "grpcs://{}/{service_name}", self.addr)
            }
        }
    }
}

/// Why a link could not be dialed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The TCP connection failed.
    #[error("{target}: TCP connect failed ({kind:?}): {reason}")]
    Tcp {
        /// Where to.
        target: String,
        /// The OS error's kind (`ConnectionRefused` when nothing listens).
        kind: io::ErrorKind,
        /// The OS error.
        reason: String,
    },
    /// The WebSocket upgrade failed (wrong path, a proxy that does not pass upgrades).
    #[error("{target}: WebSocket upgrade failed: {reason}; check the profile's path and host")]
    WebSocket {
        /// Where to.
        target: String,
        /// What failed.
        reason: String,
    },
    /// The HTTPUpgrade request was not answered `101` (wrong path, a proxy that does
    /// not pass upgrades).
    #[error("{target}: HTTPUpgrade failed: {reason}; check the profile's path and host")]
    HttpUpgrade {
        /// Where to.
        target: String,
        /// What failed.
        reason: String,
    },
    /// XHTTP's requests failed (wrong path, a proxy that does not pass them).
    #[error("{target}: XHTTP failed: {reason}; check the profile's path and host")]
    Xhttp {
        /// Where to.
        target: String,
        /// What failed.
        reason: String,
    },
    /// The gRPC stream failed (wrong service name, a proxy that does not pass gRPC).
    #[error("{target}: gRPC failed: {reason}; check the profile's service name and host")]
    Grpc {
        /// Where to.
        target: String,
        /// What failed.
        reason: String,
    },
    /// The TLS to the CDN in front of the listening side failed (its certificate, its
    /// name, or the profile's `outer_tls`).
    #[error("{target}: TLS to the CDN failed: {reason}")]
    OuterTls {
        /// Where to.
        target: String,
        /// What failed.
        reason: String,
    },
    /// The peer's certificate is not the pinned one.
    #[error("{target}: {error}")]
    Pin {
        /// Where to.
        target: String,
        /// The pin check's verdict.
        error: PinError,
    },
    /// The TLS handshake failed for another reason (expired, bad signature, protocol).
    #[error("{target}: TLS handshake failed: {reason}")]
    Tls {
        /// Where to.
        target: String,
        /// What rustls said.
        reason: String,
    },
    /// Nothing completed within the deadline.
    #[error("{target}: no link within {after:?}; the address may be blocked")]
    Timeout {
        /// Where to.
        target: String,
        /// The deadline.
        after: Duration,
    },
}

fn tls_error(target: &Target, e: io::Error) -> ConnectError {
    let source: Option<&(dyn std::error::Error + 'static)> = e.get_ref().map(|e| e as _);
    match source.and_then(pin_error_in) {
        Some(p) => ConnectError::Pin {
            target: target.to_string(),
            error: p.clone(),
        },
        None => ConnectError::Tls {
            target: target.to_string(),
            reason: e.to_string(),
        },
    }
}

/// Dials `target` and completes TLS (and the upgrade, for WebSocket) within `deadline`.
pub async fn connect(target: &Target, deadline: Duration) -> Result<LinkStream, ConnectError> {
    tokio::time::timeout(deadline, connect_inner(target))
        .await
        .unwrap_or_else(|_| {
            Err(ConnectError::Timeout {
                target: target.to_string(),
                after: deadline,
            })
        })
}

async fn connect_inner(target: &Target) -> Result<LinkStream, ConnectError> {
    if let Some(link) = target.transport.http_link() {
        return connect_http(target, link).await;
    }
    let (outer, stack) = stack(target)?;
    // TCP and the CDN's TLS first, when there is one, so its failure is named apart
    // from the link's own TLS.
    let io = match outer {
        None => None,
        Some(outer) => {
            let to_cdn = Stack {
                addr: stack.addr.clone(),
                layers: vec![outer],
            };
            Some(
                to_cdn
                    .connect()
                    .await
                    .map_err(|e| below_the_link(target, e))?,
            )
        }
    };
    let linked = match io {
        Some(io) => stack.over(io).await,
        None => stack.connect().await,
    };
    linked.map_err(|e| match e.step {
        Step::Tcp => ConnectError::Tcp {
            target: target.to_string(),
            kind: e.source.kind(),
            reason: e.source.to_string(),
        },
        Step::WebSocket => ConnectError::WebSocket {
            target: target.to_string(),
            reason: e.source.to_string(),
        },
        Step::HttpUpgrade => ConnectError::HttpUpgrade {
            target: target.to_string(),
            reason: e.source.to_string(),
        },
        Step::Reality => ConnectError::Tls {
            target: target.to_string(),
            reason: format!(
                "REALITY: {} (a wrong public key or short id, or the address is not this tunnel's relay)",
                e.source
            ),
        },
        _ => tls_error(target, e.source),
    })
}

/// A failure under the link's own layers: the TCP connection, or the TLS to the CDN.
fn below_the_link(target: &Target, e: switchyard_transport::dial::DialError) -> ConnectError {
    match e.step {
        Step::Tcp => ConnectError::Tcp {
            target: target.to_string(),
            kind: e.source.kind(),
            reason: e.source.to_string(),
        },
        _ => ConnectError::OuterTls {
            target: target.to_string(),
            reason: e.source.to_string(),
        },
    }
}

/// An XHTTP or gRPC link: the stream (on a connection of its own, through the CDN's
/// TLS when there is one), then the pinned TLS inside.
async fn connect_http(target: &Target, link: HttpLink<'_>) -> Result<LinkStream, ConnectError> {
    let (Transport::Xhttp { host, outer, .. } | Transport::Grpc { host, outer, .. }) =
        &target.transport
    else {
        return Err(ConnectError::Tls {
            target: target.to_string(),
            reason: "not an XHTTP or gRPC profile".into(),
        });
    };
    let shown = || target.to_string();
    let outer = match outer {
        Some(o) => Some(o.layer_h2().map_err(|e| ConnectError::OuterTls {
            target: shown(),
            reason: e.to_string(),
        })?),
        None => None,
    };
    // No configured Host: the address dialed, as a browser would send.
    let host = if host.is_empty() { &target.addr } else { host };
    let io = super::streams::dial(&target.addr, host, outer, link)
        .await
        .map_err(|e| match e {
            Failed::Below(e) => below_the_link(target, e),
            Failed::Xhttp(reason) => ConnectError::Xhttp {
                target: shown(),
                reason,
            },
            Failed::Grpc(reason) => ConnectError::Grpc {
                target: shown(),
                reason,
            },
        })?;
    let inner = Stack {
        addr: target.addr.clone(),
        layers: vec![pinned_tls(target)?],
    };
    let grpc = matches!(link, HttpLink::Grpc { .. });
    inner.over(io).await.map_err(|e| {
        // The stream's answer is read while the link's TLS starts: a refusal (another
        // path or service, a proxy's error page) surfaces there.
        let xhttp = e
            .source
            .get_ref()
            .is_some_and(|e| e.is::<switchyard_transport::xhttp::client::ClientError>());
        if xhttp {
            return ConnectError::Xhttp {
                target: shown(),
                reason: e.source.to_string(),
            };
        }
        if grpc && e.source.kind() == io::ErrorKind::ConnectionRefused {
            return ConnectError::Grpc {
                target: shown(),
                reason: e.source.to_string(),
            };
        }
        tls_error(target, e.source)
    })
}

/// The transport layers a target's profile speaks: TLS (pinned) on TCP, TLS inside
/// WebSocket or HTTPUpgrade, or REALITY; and apart, the TLS to a CDN in front, when
/// the profile has one (spoken first).
fn stack(target: &Target) -> Result<(Option<Layer>, Stack), ConnectError> {
    let tls = || pinned_tls(target);
    let mut cdn = None;
    let layers = match &target.transport {
        Transport::Reality(r) => vec![Layer::Reality(ClientSettings {
            server_name: r.server_name.clone(),
            public_key: r.public_key,
            short_id: r.short_id,
        })],
        Transport::Tls => vec![tls()?],
        Transport::WebSocket { path, host, outer }
        | Transport::HttpUpgrade { path, host, outer } => {
            // No configured Host: the address dialed, as a browser would send.
            let host = if host.is_empty() { &target.addr } else { host }.clone();
            let path = path.clone();
            let upgrade = match &target.transport {
                Transport::WebSocket { .. } => Layer::WebSocket { host, path },
                _ => Layer::HttpUpgrade { host, path },
            };
            if let Some(outer) = outer {
                cdn = Some(outer.layer().map_err(|e| ConnectError::OuterTls {
                    target: target.to_string(),
                    reason: e.to_string(),
                })?);
            }
            vec![upgrade, tls()?]
        }
        // Dialed apart, by `streams::connect`.
        Transport::Xhttp { .. } | Transport::Grpc { .. } => {
            return Err(ConnectError::Tls {
                target: target.to_string(),
                reason: "XHTTP and gRPC links are not a stack of layers".into(),
            });
        }
    };
    let stack = Stack {
        addr: target.addr.clone(),
        layers,
    };
    Ok((cdn, stack))
}

/// The link's own TLS layer: TLS 1.3 for the tunnel's name, the certificate pinned.
fn pinned_tls(target: &Target) -> Result<Layer, ConnectError> {
    let server_name = ServerName::try_from(target.name.clone()).map_err(|e| ConnectError::Tls {
        target: target.to_string(),
        reason: format!("certificate name {:?}: {e}", target.name),
    })?;
    Ok(Layer::Tls {
        config: client_config(&target.name, &target.pins),
        server_name,
    })
}

/// Why an incoming connection did not become a link's byte stream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AcceptError {
    /// The WebSocket upgrade was missing, malformed or for another path.
    #[error("from {peer}: WebSocket upgrade refused: {reason}")]
    WebSocket {
        /// Who connected.
        peer: SocketAddr,
        /// What was wrong.
        reason: String,
    },
    /// The HTTPUpgrade request was missing, malformed or for another path.
    #[error("from {peer}: HTTPUpgrade refused: {reason}")]
    HttpUpgrade {
        /// Who connected.
        peer: SocketAddr,
        /// What was wrong.
        reason: String,
    },
    /// The TLS handshake failed.
    #[error("from {peer}: TLS handshake failed: {reason}")]
    Tls {
        /// Who connected.
        peer: SocketAddr,
        /// What rustls said.
        reason: String,
    },
    /// The peer did not finish within the deadline.
    #[error("from {peer}: no handshake within {after:?}")]
    Timeout {
        /// Who connected.
        peer: SocketAddr,
        /// The deadline.
        after: Duration,
    },
}

/// The listening side of one profile: turns accepted TCP connections into link streams.
#[derive(Clone)]
pub struct Acceptor {
    tls: TlsAcceptor,
    transport: Transport,
    /// REALITY profiles: the keys and rules, with the profile's replay memory.
    reality: Option<Arc<ServerSettings>>,
    /// XHTTP and gRPC profiles: the HTTP server whose streams are links.
    streams: Option<StreamServer>,
}

impl Acceptor {
    /// An acceptor serving `tls` (see [`super::cert::server_config`]) over `transport`;
    /// a REALITY transport serves its own certificates and needs its private key
    /// (an error names what is wrong with it). A REALITY target is dialed with
    /// [`SiteDialer::checked`] refusing private destinations; [`Self::with_site`]
    /// sets another dialer.
    pub fn new(tls: Arc<ServerConfig>, transport: Transport) -> Self {
        let reality = match &transport {
            Transport::Reality(r) => reality_settings(r, SiteDialer::checked(false)).map(Arc::new),
            _ => None,
        };
        Self {
            tls: TlsAcceptor::from(tls),
            streams: transport.http_link().map(StreamServer::new),
            transport,
            reality,
        }
    }

    /// The HTTP server of an XHTTP or gRPC profile, whose streams are links (see
    /// [`super::streams`]); `None` when every link is a TCP connection.
    pub(crate) fn streams(&self) -> Option<&StreamServer> {
        self.streams.as_ref()
    }

    /// The link's TLS over a stream the profile's HTTP server handed over.
    pub(crate) async fn tls_over(
        &self,
        io: LinkStream,
        peer: SocketAddr,
    ) -> Result<LinkStream, AcceptError> {
        let s = self.tls.accept(io).await.map_err(|e| AcceptError::Tls {
            peer,
            reason: e.to_string(),
        })?;
        Ok(Box::new(s))
    }

    /// The same acceptor splicing REALITY probers through `site` to the target.
    pub fn with_site(mut self, site: SiteDialer) -> Self {
        if let Transport::Reality(r) = &self.transport {
            self.reality = reality_settings(r, site).map(Arc::new);
        }
        self
    }

    /// Accepts one TCP connection and completes its handshake within `deadline`.
    ///
    /// Handshakes run one after another here; a server that must not let one slow peer
    /// hold up others accepts on the listener itself and calls [`Self::handshake`] in a
    /// task per connection. Cancel-safety: cancelling loses at most the connection
    /// being handshaken, never one still queued on the listener.
    pub async fn accept(
        &self,
        listener: &TcpListener,
        deadline: Duration,
    ) -> io::Result<Result<(LinkStream, SocketAddr), AcceptError>> {
        let (tcp, peer) = listener.accept().await?;
        Ok(self.handshake(tcp, peer, deadline).await.map(|s| (s, peer)))
    }

    /// Completes the upgrade (for WebSocket) and TLS on an accepted connection.
    pub async fn handshake(
        &self,
        tcp: TcpStream,
        peer: SocketAddr,
        deadline: Duration,
    ) -> Result<LinkStream, AcceptError> {
        tokio::time::timeout(deadline, self.handshake_inner(tcp, peer, deadline))
            .await
            .unwrap_or(Err(AcceptError::Timeout {
                peer,
                after: deadline,
            }))
    }

    async fn handshake_inner(
        &self,
        tcp: TcpStream,
        peer: SocketAddr,
        deadline: Duration,
    ) -> Result<LinkStream, AcceptError> {
        let _ = tcp.set_nodelay(true);
        let tls_fail = |e: io::Error| AcceptError::Tls {
            peer,
            reason: e.to_string(),
        };
        match &self.transport {
            Transport::Reality(_) => {
                let Some(settings) = &self.reality else {
                    return Err(AcceptError::Tls {
                        peer,
                        reason: "REALITY profile without a usable private key on this side".into(),
                    });
                };
                match reality::accept(tcp, settings, reality::unix_now_ms())
                    .await
                    .map_err(tls_fail)?
                {
                    Accepted::Tls(s) => Ok(s),
                    Accepted::Spliced(why) => Err(AcceptError::Tls {
                        peer,
                        reason: format!(
                            "not a REALITY client of this tunnel ({why}): spliced to the target"
                        ),
                    }),
                }
            }
            Transport::Tls => Ok(Box::new(self.tls.accept(tcp).await.map_err(tls_fail)?)),
            Transport::WebSocket { path, .. } => {
                let config = UpgradeConfig {
                    path: path.clone(),
                    host: None,
                    early_data: EarlyData::Off,
                };
                let ws = match ws::accept(tcp, &config, Instant::now() + deadline).await {
                    Ok(ws) => ws,
                    Err(refused) => {
                        ws::refuse(refused.stream).await;
                        return Err(AcceptError::WebSocket {
                            peer,
                            reason: refused.why.unwrap_or_else(|| {
                                "the peer stopped before a whole upgrade request".into()
                            }),
                        });
                    }
                };
                let s = self.tls.accept(ws).await.map_err(tls_fail)?;
                Ok(Box::new(s))
            }
            Transport::HttpUpgrade { path, .. } => {
                let config = switchyard_proto::httpupgrade::Config {
                    path: path.clone(),
                    host: None,
                };
                let up = match httpupgrade::accept(tcp, &config, Instant::now() + deadline).await {
                    Ok(up) => up,
                    Err(refused) => {
                        httpupgrade::refuse(refused.stream).await;
                        return Err(AcceptError::HttpUpgrade {
                            peer,
                            reason: refused.why.unwrap_or_else(|| {
                                "the peer stopped before a whole upgrade request".into()
                            }),
                        });
                    }
                };
                let s = self.tls.accept(up).await.map_err(tls_fail)?;
                Ok(Box::new(s))
            }
            // Served by `streams`: a connection is not one link.
            Transport::Xhttp { .. } | Transport::Grpc { .. } => Err(AcceptError::Tls {
                peer,
                reason: "XHTTP and gRPC connections are served as HTTP, not one link each".into(),
            }),
        }
    }
}

/// The listening side's REALITY settings of a profile, or `None` (logged) when it
/// has no private key or one that does not match the profile's public key.
fn reality_settings(r: &RealityLink, site: SiteDialer) -> Option<ServerSettings> {
    let key = match r.private_key.as_deref().map(PrivateKey::parse) {
        Some(Ok(k)) => k,
        Some(Err(e)) => {
            tracing::warn!(error = %e, "REALITY profile: the private key does not read");
            return None;
        }
        None => return None,
    };
    if key.public_key() != r.public_key {
        tracing::warn!("REALITY profile: the private key is not the public key's");
        return None;
    }
    Some(ServerSettings {
        key,
        policy: Policy {
            server_names: [r.server_name.to_ascii_lowercase()].into(),
            short_ids: [r.short_id].into(),
            max_time_diff_ms: REALITY_MAX_TIME_DIFF_MS,
            min_client_version: None,
            max_client_version: None,
        },
        dest: r.dest.clone(),
        site,
        replay: Arc::new(std::sync::Mutex::new(ReplayFilter::new(
            REALITY_MAX_TIME_DIFF_MS,
            reality::unix_now_ms(),
        ))),
    })
}
