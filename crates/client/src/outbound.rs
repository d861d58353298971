//! Connecting through a server of a subscription.
//!
//! - **TCP** ([`Outbound::connect`]): TCP, then TLS ([`tls`]: the web's roots, a
//!   pinned self-signed certificate, or none when the entry says `insecure`), then
//!   WebSocket, then the protocol's request: VLESS (no flow), Trojan, or Shadowsocks
//!   2022 ([`ss`]: plain TCP, its own encryption); or Hysteria 2 ([`hysteria2`]: a
//!   QUIC stream in the outbound's one QUIC connection). The result is a stream to
//!   the destination. TCP, TLS and WebSocket are the shared transport layer's
//!   ([`switchyard_transport::dial::Stack`], built once per server); the protocols
//!   are the client's.
//! - **UDP** ([`Outbound::udp`], [`udp`]): datagrams to any destination and back
//!   with their source, over VLESS (XUDP: one Mux.Cool session in one stream, each
//!   packet with its address, what the node and sing-box speak by default), Trojan
//!   (UDP ASSOCIATE, its framing in the stream) or Shadowsocks 2022 (UDP packets of
//!   one session to the server's port) or Hysteria 2 (QUIC datagrams, a connection
//!   of its own per association).
//!
//! Every step has a deadline ([`CONNECT_TIMEOUT`] for all of them together) and every
//! failure names the server and the step, so a probe or a user's app learns what went
//! wrong where.

mod hysteria2;
mod ss;
mod tls;
pub mod udp;
mod vless;

use std::sync::OnceLock;
use std::time::Duration;

use rustls::pki_types::ServerName;
use switchyard_proto::Address;
use switchyard_proto::entry::{Entry, EntryProtocol, EntryTransport};
use switchyard_proto::shadowsocks::Method;
use switchyard_proto::shadowsocks::keys::ClientKeys;
use switchyard_proto::{trojan, vless as vless_proto};
use switchyard_transport::BoxIo;
use switchyard_transport::dial::{Connector, DialError, Layer, Stack, Step};
use tokio::io::AsyncWriteExt;

pub use hysteria2::Hysteria2Stream;
pub use switchyard_transport::shadowsocks::SsStream;
pub use udp::{UdpReceiver, UdpSender};
pub use vless::VlessResponse;

/// How long connecting to a server may take, every step together.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a server could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutboundError {
    /// The entry cannot be used by this client (a protocol or setting it lacks).
    #[error("server {server:?}: {problem}")]
    Unsupported {
        /// The entry's name.
        server: String,
        /// What is missing.
        problem: UnsupportedEntry,
    },
    /// A step failed.
    #[error("server {server:?}: {step}: {reason}")]
    Failed {
        /// The entry's name.
        server: String,
        /// `tcp`, `tls`, `websocket`, `hysteria2`, `request` or `udp`.
        step: &'static str,
        /// Why.
        reason: StepError,
    },
    /// Every step together took longer than [`CONNECT_TIMEOUT`].
    #[error("server {server:?}: no answer within {0:?}", CONNECT_TIMEOUT)]
    Timeout {
        /// The entry's name.
        server: String,
    },
}

/// What makes an entry unusable by this client.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UnsupportedEntry {
    /// A VLESS flow (Vision).
    #[error("VLESS flows (xtls-rprx-vision) are not supported")]
    VlessFlow,
    /// The VLESS UUID is not a UUID.
    #[error("the VLESS UUID is malformed")]
    VlessUuid,
    /// A Shadowsocks method other than the 2022 ones.
    #[error("Shadowsocks method {0:?} is not supported (only the 2022 methods)")]
    ShadowsocksMethod(String),
    /// Shadowsocks over TLS or WebSocket.
    #[error("Shadowsocks runs over plain TCP and UDP only (no TLS, no WebSocket)")]
    ShadowsocksTransport,
    /// The Shadowsocks password is not the method's key(s).
    #[error("Shadowsocks: {0}")]
    ShadowsocksKey(#[source] switchyard_proto::shadowsocks::keys::KeyError),
    /// REALITY.
    #[error(
        "REALITY is not supported by this client (use Xray, mihomo or another app that speaks it)"
    )]
    Reality,
    /// The TLS server name is not a DNS name or an IP address.
    #[error("{0:?} is not a TLS server name")]
    ServerName(String),
    /// rustls refused the TLS settings.
    #[error(transparent)]
    TlsSettings(#[from] rustls::Error),
    /// The pinned certificate is not PEM.
    #[error("the pinned certificate is not PEM")]
    PinNotPem,
    /// Hysteria 2 without TLS, over REALITY or a transport: it is QUIC under TLS.
    #[error("Hysteria 2 runs over QUIC under TLS only (no REALITY, no transport)")]
    Hysteria2Transport,
}

/// Why a step towards a server failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StepError {
    /// A socket operation failed: connecting, the TLS handshake, the WebSocket
    /// upgrade (its error as the transport layer gives it: `HTTP error: 404 Not
    /// Found`), sending the request.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The Shadowsocks request could not be sealed.
    #[error(transparent)]
    Shadowsocks(#[from] switchyard_proto::shadowsocks::tcp::TcpError),
    /// The Shadowsocks UDP session could not be set up.
    #[error(transparent)]
    ShadowsocksUdp(#[from] switchyard_proto::shadowsocks::PacketError),
    /// The server's name resolves to no address.
    #[error("{host} has no address")]
    NoAddress {
        /// The server's name.
        host: String,
    },
    /// Hysteria 2's QUIC connection, its authentication or a request failed.
    #[error(transparent)]
    Hysteria2(#[from] switchyard_transport::hysteria2::ClientError),
    /// The UDP socket can't be connected to the server's address.
    #[error("{address}: {source}")]
    Connect {
        /// The server's address.
        address: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

/// One server, ready to connect through: its entry and its transport (TCP, then TLS
/// and WebSocket when the entry has them), built once.
#[derive(Clone)]
pub struct Outbound {
    entry: Entry,
    stack: Stack,
    header: Header,
    /// The identity by route, once [`Self::keyed_by_route`] gave it one.
    route_identity: Option<String>,
}

impl std::fmt::Debug for Outbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbound")
            .field("server", &self.entry.name)
            .finish_non_exhaustive()
    }
}

/// What the protocol's request carries, parsed once.
#[derive(Clone)]
enum Header {
    Vless(vless_proto::Uuid),
    Trojan([u8; trojan::HASH_LEN]),
    Shadowsocks(ClientKeys),
    Hysteria2(std::sync::Arc<hysteria2::Hysteria2>),
}

impl Outbound {
    /// Checks `entry` and prepares its TLS settings.
    pub fn new(entry: Entry) -> Result<Self, OutboundError> {
        let unsupported = |problem| OutboundError::Unsupported {
            server: entry.name.clone(),
            problem,
        };
        let header = match &entry.protocol {
            EntryProtocol::Vless { uuid, flow } => {
                if flow.as_deref().is_some_and(|f| !f.is_empty()) {
                    return Err(unsupported(UnsupportedEntry::VlessFlow));
                }
                Header::Vless(
                    vless_proto::parse_uuid(uuid)
                        .ok_or_else(|| unsupported(UnsupportedEntry::VlessUuid))?,
                )
            }
            EntryProtocol::Trojan { password } => Header::Trojan(trojan::password_hash(password)),
            EntryProtocol::Shadowsocks { method, password } => {
                let method = Method::from_name(method).ok_or_else(|| {
                    unsupported(UnsupportedEntry::ShadowsocksMethod(method.clone()))
                })?;
                if entry.transport != EntryTransport::Tcp || entry.tls.is_some() {
                    return Err(unsupported(UnsupportedEntry::ShadowsocksTransport));
                }
                Header::Shadowsocks(
                    ClientKeys::parse(method, password)
                        .map_err(|e| unsupported(UnsupportedEntry::ShadowsocksKey(e)))?,
                )
            }
            EntryProtocol::Hysteria2 {
                password,
                obfs_password,
                ports,
                down_mbps,
                hop_interval,
                ..
            } => {
                let t = match &entry.tls {
                    Some(t) if t.reality.is_none() && entry.transport == EntryTransport::Tcp => t,
                    _ => return Err(unsupported(UnsupportedEntry::Hysteria2Transport)),
                };
                let name = t
                    .server_name
                    .clone()
                    .unwrap_or_else(|| entry.server.clone());
                ServerName::try_from(name.clone())
                    .map_err(|_| unsupported(UnsupportedEntry::ServerName(name.clone())))?;
                let config = tls::tls_config(t, &name).map_err(unsupported)?;
                let hy2 = hysteria2::Hysteria2::new(
                    &entry.server,
                    entry.port,
                    rustls::ClientConfig::clone(&config),
                    name,
                    password,
                    obfs_password.as_deref(),
                    *down_mbps,
                )
                .hopping(ports.as_deref(), *hop_interval);
                // QUIC is all its transport: no stack of layers.
                return Ok(Self {
                    stack: Stack::to(&entry.server, entry.port, Vec::new()),
                    entry,
                    header: Header::Hysteria2(std::sync::Arc::new(hy2)),
                    route_identity: None,
                });
            }
        };
        let mut layers = Vec::with_capacity(2);
        match &entry.tls {
            Some(t) if t.reality.is_some() => {
                return Err(unsupported(UnsupportedEntry::Reality));
            }
            Some(t) => {
                let name = t
                    .server_name
                    .clone()
                    .unwrap_or_else(|| entry.server.clone());
                let server_name = ServerName::try_from(name.clone())
                    .map_err(|_| unsupported(UnsupportedEntry::ServerName(name.clone())))?;
                let mut config = tls::tls_config(t, &name).map_err(unsupported)?;
                if matches!(entry.transport, EntryTransport::Grpc { .. }) {
                    // gRPC is HTTP/2: servers (and CDNs) pick it by ALPN.
                    let mut h2 = rustls::ClientConfig::clone(&config);
                    h2.alpn_protocols = vec![b"h2".to_vec()];
                    config = std::sync::Arc::new(h2);
                } else if matches!(entry.transport, EntryTransport::Xhttp { .. })
                    && t.alpn.is_empty()
                {
                    // XHTTP runs on HTTP/2 where the server agrees, as Xray's client.
                    let mut both = rustls::ClientConfig::clone(&config);
                    both.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
                    config = std::sync::Arc::new(both);
                }
                layers.push(Layer::Tls {
                    config,
                    server_name,
                });
            }
            None => {}
        }
        // The entry's host, else the TLS server name, else the server's address.
        let http_host = |host: &Option<String>| {
            host.clone()
                .or_else(|| entry.tls.as_ref().and_then(|t| t.server_name.clone()))
                .unwrap_or_else(|| entry.server.clone())
        };
        match &entry.transport {
            EntryTransport::Ws { path, host } => layers.push(Layer::WebSocket {
                host: http_host(host),
                path: path.clone(),
            }),
            EntryTransport::HttpUpgrade { path, host } => layers.push(Layer::HttpUpgrade {
                host: http_host(host),
                path: path.clone(),
            }),
            // Streams of this outbound (and its clones) share one HTTP/2 connection.
            EntryTransport::Grpc {
                service_name,
                authority,
                multi,
            } => layers.push(Layer::grpc(
                http_host(authority),
                service_name.clone(),
                *multi,
            )),
            // Streams of this outbound (and its clones) share its connections (XMUX).
            EntryTransport::Xhttp {
                path,
                host,
                mode,
                extra,
            } => {
                let mut settings = switchyard_proto::xhttp::Settings::new(path.clone());
                settings.host = host.clone();
                settings.mode = *mode;
                if let Some(extra) = extra {
                    extra.apply(&mut settings);
                }
                layers.push(Layer::xhttp(settings, &http_host(&None)));
            }
            _ => {}
        }
        let stack = Stack::to(&entry.server, entry.port, layers);
        Ok(Self {
            entry,
            stack,
            header,
            route_identity: None,
        })
    }

    /// The entry.
    pub fn entry(&self) -> &Entry {
        &self.entry
    }

    /// This server keyed by its route ([`Entry::route`]) within the subscription
    /// fetched from `subscription` (its URL), when the entry has a route id: its
    /// identity is then `route:` and a hash of both, the same whichever inbound the
    /// route's balancer chose, so a rebalance keeps the server's history and marks.
    /// The subscription is part of it so two panels' route ids never meet. Without
    /// a route id nothing changes.
    #[must_use]
    pub fn keyed_by_route(mut self, subscription: &str) -> Self {
        self.route_identity = self
            .entry
            .route
            .as_deref()
            .filter(|r| switchyard_proto::entry::is_route_id(r))
            .map(|route| {
                switchyard_auto::ServerId::derive(
                    "route",
                    "",
                    0,
                    &format!("{subscription}\n{route}"),
                )
                .as_str()
                .to_owned()
            });
        self
    }

    /// A Hysteria 2 server with a hop range hopping every `interval` instead of
    /// its entry's interval (else Hysteria's default 30 s), any interval (tests hop
    /// in milliseconds); its connections are its own. Other servers are unchanged.
    #[must_use]
    pub fn with_hop_interval(mut self, interval: Duration) -> Self {
        if let Header::Hysteria2(hy2) = &self.header {
            self.header = Header::Hysteria2(std::sync::Arc::new(hy2.with_hop_interval(interval)));
        }
        self
    }

    /// The server's stable identity for Auto's memory: its route's
    /// ([`Self::keyed_by_route`]) when it has one, else its protocol, host, port and
    /// (hashed) credential (the UUID, the Trojan password, or the Shadowsocks method
    /// and password), so a subscription update that renames it keeps its history.
    pub fn identity(&self) -> String {
        if let Some(id) = &self.route_identity {
            return id.clone();
        }
        let (protocol, credential) = match &self.entry.protocol {
            EntryProtocol::Vless { uuid, .. } => ("vless", uuid.clone()),
            EntryProtocol::Trojan { password } => ("trojan", password.clone()),
            EntryProtocol::Shadowsocks { method, password } => {
                ("shadowsocks", format!("{method}:{password}"))
            }
            EntryProtocol::Hysteria2 { password, .. } => ("hysteria2", password.clone()),
        };
        switchyard_auto::ServerId::derive(
            protocol,
            &self.entry.server,
            self.entry.port,
            &credential,
        )
        .as_str()
        .to_owned()
    }

    /// A stream to `destination` through this server.
    pub async fn connect(&self, destination: &Address) -> Result<BoxIo, OutboundError> {
        tokio::time::timeout(CONNECT_TIMEOUT, self.connect_now(destination))
            .await
            .map_err(|_| self.timeout())?
    }

    /// A UDP association through this server; `first` is the first datagram's
    /// destination (Trojan's request names it).
    pub async fn udp(&self, first: &Address) -> Result<(UdpSender, UdpReceiver), OutboundError> {
        tokio::time::timeout(CONNECT_TIMEOUT, udp::open(self, first))
            .await
            .map_err(|_| self.timeout())?
    }

    fn timeout(&self) -> OutboundError {
        OutboundError::Timeout {
            server: self.entry.name.clone(),
        }
    }

    /// The error of `step`, naming this server.
    fn fail(&self, step: &'static str) -> impl Fn(StepError) -> OutboundError + '_ {
        move |reason| OutboundError::Failed {
            server: self.entry.name.clone(),
            step,
            reason,
        }
    }

    async fn connect_now(&self, destination: &Address) -> Result<BoxIo, OutboundError> {
        if let Header::Hysteria2(hy2) = &self.header {
            let fail = |step, e| self.fail(step)(e);
            return hysteria2::connect_tcp(hy2, destination, fail)
                .await
                .map(|s| Box::new(s) as BoxIo);
        }
        let mut stream = self.stream().await?;
        let mut head = Vec::with_capacity(64);
        let request = self.fail("request");
        match &self.header {
            Header::Vless(uuid) => {
                vless_proto::Request {
                    uuid: *uuid,
                    flow: vless_proto::Flow::None,
                    command: vless_proto::Command::Tcp(destination.clone()),
                }
                .encode(&mut head);
                stream
                    .write_all(&head)
                    .await
                    .map_err(|e| request(e.into()))?;
                Ok(Box::new(VlessResponse::new(stream)))
            }
            Header::Trojan(hash) => {
                trojan::Request {
                    hash: *hash,
                    command: trojan::Command::Connect,
                    destination: destination.clone(),
                }
                .encode(&mut head);
                stream
                    .write_all(&head)
                    .await
                    .map_err(|e| request(e.into()))?;
                Ok(stream)
            }
            Header::Shadowsocks(keys) => ss::connect(keys, stream, destination)
                .await
                .map(|s| Box::new(s) as BoxIo)
                .map_err(request),
            // Answered above: its QUIC connection is its transport.
            Header::Hysteria2(_) => Err(request(StepError::Io(std::io::Error::other(
                "Hysteria 2 has no stream transport",
            )))),
        }
    }

    /// The transport to the server: TCP, then TLS and WebSocket or HTTPUpgrade when
    /// the entry has them, before the protocol's request. A failure names its step as the
    /// client's errors always did: `tcp`, `tls`, `websocket`, `httpupgrade` or `grpc`.
    async fn stream(&self) -> Result<BoxIo, OutboundError> {
        self.stack
            .connect()
            .await
            .map_err(|DialError { step, source }| self.fail(step_name(step))(source.into()))
    }
}

/// The name of a transport step in [`OutboundError::Failed`].
fn step_name(step: Step) -> &'static str {
    match step {
        Step::Tcp => "tcp",
        Step::Tls => "tls",
        Step::WebSocket => "websocket",
        Step::HttpUpgrade => "httpupgrade",
        Step::Grpc => "grpc",
        // The client refuses REALITY entries; any other step is the transport's own.
        Step::Reality => "reality",
        _ => "transport",
    }
}

/// Fills `buf` with random bytes from the system (salts, session ids, padding).
pub(crate) fn fill_random(buf: &mut [u8]) {
    static RNG: OnceLock<&'static dyn rustls::crypto::SecureRandom> = OnceLock::new();
    let rng = RNG.get_or_init(|| rustls::crypto::ring::default_provider().secure_random);
    // The system's generator does not fail on Linux once booted; should it, the
    // bytes stay as the caller set them and the AEAD still authenticates.
    let _ = rng.fill(buf);
}

/// A random `u64`.
pub(crate) fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    fill_random(&mut b);
    u64::from_be_bytes(b)
}

/// Unix seconds, for Shadowsocks timestamps.
pub(crate) fn unix_now() -> u64 {
    u64::try_from(crate::wall::unix_ms() / 1000).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(protocol: EntryProtocol) -> Entry {
        Entry {
            name: "🇩🇪 Frankfurt".into(),
            server: "203.0.113.1".into(),
            port: 443,
            protocol,
            transport: EntryTransport::Tcp,
            tls: None,
            route: None,
        }
    }

    const KEY16: &str = "c3dpdGNoeWFyZC1zcy0xNg==";
    const KEY16B: &str = "YWxpY2Utc3Mta2V5LTE2Yg==";

    fn ss(method: &str, password: &str) -> EntryProtocol {
        EntryProtocol::Shadowsocks {
            method: method.into(),
            password: password.into(),
        }
    }

    #[test]
    fn entries_this_client_cannot_use_are_refused_by_name() {
        let refused = |protocol| Outbound::new(entry(protocol)).unwrap_err().to_string();
        assert_eq!(
            refused(EntryProtocol::Vless {
                uuid: "nope".into(),
                flow: None,
            }),
            "server \"🇩🇪 Frankfurt\": the VLESS UUID is malformed"
        );
        assert_eq!(
            refused(ss("aes-256-gcm", KEY16)),
            "server \"🇩🇪 Frankfurt\": Shadowsocks method \"aes-256-gcm\" is not supported \
             (only the 2022 methods)"
        );
        assert_eq!(
            refused(ss("2022-blake3-aes-256-gcm", KEY16)),
            "server \"🇩🇪 Frankfurt\": Shadowsocks: key 1 of the password has 16 bytes; \
             2022-blake3-aes-256-gcm wants 32"
        );
        assert_eq!(
            refused(ss("2022-blake3-aes-128-gcm", &format!("{KEY16}:???"))),
            "server \"🇩🇪 Frankfurt\": Shadowsocks: key 2 of the password is not base64"
        );
        let mut ws = entry(ss("2022-blake3-aes-128-gcm", KEY16));
        ws.transport = EntryTransport::Ws {
            path: "/".into(),
            host: None,
        };
        assert!(
            Outbound::new(ws)
                .unwrap_err()
                .to_string()
                .contains("plain TCP")
        );
        assert!(
            Outbound::new(entry(EntryProtocol::Trojan {
                password: "p".into()
            }))
            .is_ok()
        );
        let mut reality = entry(EntryProtocol::Vless {
            uuid: "b831381d-6324-4d53-ad4f-8cda48b30811".into(),
            flow: None,
        });
        reality.tls = Some(switchyard_proto::entry::EntryTls {
            server_name: Some("www.example.com".into()),
            fingerprint: Some("chrome".into()),
            reality: Some(switchyard_proto::entry::EntryReality {
                public_key: "PoZajx_KjTmvtUinsv-XAZ2fEqOvCoRtTvg7WEtZ_Q0".into(),
                short_id: String::new(),
            }),
            ..Default::default()
        });
        assert_eq!(
            Outbound::new(reality).unwrap_err().to_string(),
            "server \"🇩🇪 Frankfurt\": REALITY is not supported by this client \
             (use Xray, mihomo or another app that speaks it)"
        );
    }

    /// The transport's steps keep the names and texts users saw before the shared
    /// transport layer: `tcp: <OS error>`, `websocket: HTTP error: 404 Not Found`.
    #[tokio::test]
    async fn a_failed_transport_step_names_the_server_and_the_step() {
        use tokio::io::AsyncReadExt;
        let trojan = || {
            entry(EntryProtocol::Trojan {
                password: "p".into(),
            })
        };
        // A port just freed: nothing listens there.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let mut closed = trojan();
        closed.server = "127.0.0.1".into();
        closed.port = port;
        let e = Outbound::new(closed)
            .unwrap()
            .connect(&Address::Domain("example.com".into(), 80))
            .await
            .err()
            .expect("no server there");
        assert!(
            matches!(e, OutboundError::Failed { step: "tcp", .. }),
            "{e:?}"
        );
        assert!(
            e.to_string().starts_with("server \"🇩🇪 Frankfurt\": tcp: "),
            "{e}"
        );
        // A web server where the WebSocket should be.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut tcp, _) = listener.accept().await.unwrap();
            let mut head = [0u8; 1024];
            let _ = tcp.read(&mut head).await;
            let _ = tcp
                .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                .await;
        });
        let mut ws = trojan();
        ws.server = "127.0.0.1".into();
        ws.port = port;
        ws.transport = EntryTransport::Ws {
            path: "/ws".into(),
            host: None,
        };
        let e = Outbound::new(ws)
            .unwrap()
            .connect(&Address::Domain("example.com".into(), 80))
            .await
            .err()
            .expect("no server there");
        assert_eq!(
            e.to_string(),
            "server \"🇩🇪 Frankfurt\": websocket: HTTP error: 404 Not Found"
        );
    }

    /// An HTTPUpgrade entry whose server refuses the upgrade names the step and the
    /// server's status.
    #[tokio::test]
    async fn a_refused_httpupgrade_names_its_step_and_the_status() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let config = switchyard_proto::httpupgrade::Config {
                path: "/up".into(),
                host: None,
            };
            let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
            if let Err(refused) =
                switchyard_transport::httpupgrade::accept(tcp, &config, deadline).await
            {
                switchyard_transport::httpupgrade::refuse(refused.stream).await;
            }
        });
        let mut up = entry(EntryProtocol::Trojan {
            password: "p".into(),
        });
        up.server = "127.0.0.1".into();
        up.port = port;
        up.transport = EntryTransport::HttpUpgrade {
            path: "/down".into(),
            host: None,
        };
        let e = Outbound::new(up)
            .unwrap()
            .connect(&Address::Domain("example.com".into(), 80))
            .await
            .err()
            .expect("upgraded on the wrong path");
        assert!(
            matches!(
                e,
                OutboundError::Failed {
                    step: "httpupgrade",
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "server \"🇩🇪 Frankfurt\": httpupgrade: server answered 404 Not Found, \
             not 101 Switching Protocols"
        );
    }

    #[test]
    fn shadowsocks_2022_entries_are_used_single_and_multi_user() {
        for password in [KEY16.to_owned(), format!("{KEY16}:{KEY16B}")] {
            assert!(Outbound::new(entry(ss("2022-blake3-aes-128-gcm", &password))).is_ok());
        }
        let key32 = "c3dpdGNoeWFyZC1zcy1zZXJ2ZXIta2V5LTI1NmJpdCE=";
        assert!(Outbound::new(entry(ss("2022-blake3-aes-256-gcm", key32))).is_ok());
        assert!(Outbound::new(entry(ss("2022-blake3-chacha20-poly1305", key32))).is_ok());
    }

    /// Auto's memory is keyed by identity: the existing protocols' identities must
    /// not change (values from before Shadowsocks was supported), and Shadowsocks'
    /// depends on method and password but not on the name.
    #[test]
    fn identities_are_stable() {
        let vless = Outbound::new(entry(EntryProtocol::Vless {
            uuid: "b831381d-6324-4d53-ad4f-8cda48b30811".into(),
            flow: None,
        }))
        .unwrap();
        assert_eq!(
            vless.identity(),
            switchyard_auto::ServerId::derive(
                "vless",
                "203.0.113.1",
                443,
                "b831381d-6324-4d53-ad4f-8cda48b30811"
            )
            .as_str()
        );
        let trojan = Outbound::new(entry(EntryProtocol::Trojan {
            password: "p".into(),
        }))
        .unwrap();
        assert_eq!(
            trojan.identity(),
            switchyard_auto::ServerId::derive("trojan", "203.0.113.1", 443, "p").as_str()
        );
        let a = Outbound::new(entry(ss("2022-blake3-aes-128-gcm", KEY16))).unwrap();
        let mut renamed = entry(ss("2022-blake3-aes-128-gcm", KEY16));
        renamed.name = "Other name".into();
        let b = Outbound::new(renamed).unwrap();
        let c = Outbound::new(entry(ss("2022-blake3-aes-128-gcm", KEY16B))).unwrap();
        assert_eq!(a.identity(), b.identity());
        assert_ne!(a.identity(), c.identity());
        assert!(a.identity().starts_with("shadowsocks:"), "{}", a.identity());
        assert!(!a.identity().contains(KEY16));
    }
}
