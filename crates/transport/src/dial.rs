//! The dialing side: a [`Stack`] is where to connect and the layers to speak, in
//! order, each on the stream the one before it gave.
//!
//! ```text
//! client, TLS then WebSocket:   TCP ─ TLS ─ WebSocket ─ (VLESS, Trojan)
//! tunnel link, WebSocket:       TCP ─ WebSocket ─ TLS (pinned) ─ link bytes
//! tunnel link, REALITY:         TCP ─ REALITY ─ link bytes
//! client, HTTPUpgrade:          TCP ─ (TLS) ─ HTTPUpgrade ─ (VLESS, Trojan)
//! client, gRPC:                 TCP ─ (TLS, ALPN h2) ─ HTTP/2 stream ─ (VLESS, Trojan)
//! client, XHTTP:                TCP ─ (TLS, REALITY) ─ HTTP/1.1 or HTTP/2 requests ─ (VLESS)
//! ```
//!
//! gRPC and XHTTP multiplex: the streams of a stack (and of its clones) share
//! connections, kept in the layer's pool ([`grpc::Pool`], [`xhttp::client::Pool`]);
//! a connect opens a stream on one, and dials TCP and the layers below only when
//! the pool needs a new connection (XHTTP over HTTP/1.1: for every download, and
//! for uploads when no kept-alive connection is idle).
//!
//! A stack has no deadline of its own: the caller puts one around
//! [`Connector::connect`], the whole of it (each part does today: the client's
//! connect timeout, the tunnel's link deadline).

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::grpc;
use crate::io::BoxIo;
use crate::reality::ClientSettings;
use crate::ws::{self, WsStream};
use crate::xhttp::{self, Dialed};

/// Something that makes byte streams to one place: a [`Stack`], or a test's own.
pub trait Connector: Send + Sync {
    /// A new stream, every layer's handshake done.
    fn connect(&self) -> impl Future<Output = Result<BoxIo, DialError>> + Send;
}

/// One layer over the stream below it.
#[derive(Clone)]
#[non_exhaustive]
pub enum Layer {
    /// TLS, checked as `config` says (the web's roots, a pin, or a custom verifier).
    Tls {
        /// The client's TLS settings.
        config: Arc<ClientConfig>,
        /// The SNI sent and the name checked.
        server_name: ServerName<'static>,
    },
    /// An HTTP/1.1 WebSocket upgrade, then bytes as binary messages.
    WebSocket {
        /// The `Host` header.
        host: String,
        /// The request path (with its query, if any).
        path: String,
    },
    /// An HTTP/1.1 upgrade answered `101`, then the bytes as they are (HTTPUpgrade,
    /// [`crate::httpupgrade`]).
    HttpUpgrade {
        /// The `Host` header.
        host: String,
        /// The request path (with its query, if any).
        path: String,
    },
    /// TLS 1.3 with REALITY's seal in the hello; the server's REALITY key is the pin.
    Reality(ClientSettings),
    /// gRPC ("gun", [`crate::grpc`]): a stream on an HTTP/2 connection shared by
    /// the stack's connects (the TLS below should offer ALPN `h2`).
    Grpc {
        /// The `:authority`.
        authority: String,
        /// The service name: requests go to `/{service_name}/Tun`.
        service_name: String,
        /// Xray's multi mode (`/{service_name}/TunMulti`).
        multi: bool,
        /// The shared connection; clones of the layer share it.
        pool: grpc::Pool,
    },
    /// XHTTP ([`crate::xhttp::client`]): each stream a session of HTTP requests on
    /// connections shared by the stack's connects. HTTP/2 over REALITY or over TLS
    /// that agrees on ALPN `h2`, HTTP/1.1 otherwise.
    Xhttp {
        /// The transport's settings.
        settings: Arc<switchyard_proto::xhttp::Settings>,
        /// The `Host` (`:authority`) sent: the settings' `host`, else the address.
        host: String,
        /// The shared connections; clones of the layer share them.
        pool: xhttp::client::Pool,
    },
}

impl Layer {
    /// A gRPC layer with a pool of its own.
    pub fn grpc(authority: String, service_name: String, multi: bool) -> Self {
        Self::Grpc {
            authority,
            service_name,
            multi,
            pool: grpc::Pool::default(),
        }
    }

    /// An XHTTP layer with a pool of its own; `address` (the server's name or IP
    /// address, with its port unless it is the scheme's) is the `Host` when the
    /// settings name none.
    pub fn xhttp(settings: switchyard_proto::xhttp::Settings, address: &str) -> Self {
        let host = settings.host.clone().unwrap_or_else(|| address.to_owned());
        Self::Xhttp {
            settings: Arc::new(settings),
            host,
            pool: xhttp::client::Pool::default(),
        }
    }
}

impl fmt::Debug for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tls { server_name, .. } => write!(f, "Tls({server_name:?})"),
            Self::WebSocket { host, path } => write!(f, "WebSocket({host}{path})"),
            Self::HttpUpgrade { host, path } => write!(f, "HttpUpgrade({host}{path})"),
            Self::Reality(s) => write!(f, "Reality({})", s.server_name),
            Self::Grpc {
                authority,
                service_name,
                multi,
                ..
            } => write!(f, "Grpc({authority}/{service_name}, multi: {multi})"),
            Self::Xhttp { settings, host, .. } => {
                write!(f, "Xhttp({host}{}, {})", settings.path, settings.mode)
            }
        }
    }
}

/// The step of a stack that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Step {
    /// The TCP connection.
    Tcp,
    /// The TLS handshake.
    Tls,
    /// The WebSocket upgrade.
    WebSocket,
    /// The HTTPUpgrade request and its `101`.
    HttpUpgrade,
    /// The REALITY handshake.
    Reality,
    /// The HTTP/2 connection or the gRPC stream's request.
    Grpc,
    /// XHTTP's HTTP connection or a stream's first request.
    Xhttp,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Tcp => "tcp",
            Self::Tls => "tls",
            Self::WebSocket => "websocket",
            Self::HttpUpgrade => "httpupgrade",
            Self::Reality => "reality",
            Self::Grpc => "grpc",
            Self::Xhttp => "xhttp",
        })
    }
}

/// Why a stack could not be dialed: the step, and the error it met (a TLS
/// verifier's error, a WebSocket answer, an OS error, as the step's library gave it).
#[derive(Debug, thiserror::Error)]
#[error("{step}: {source}")]
pub struct DialError {
    /// Which step.
    pub step: Step,
    /// Why.
    #[source]
    pub source: std::io::Error,
}

impl DialError {
    fn at(step: Step) -> impl FnOnce(std::io::Error) -> Self {
        move |source| Self { step, source }
    }
}

/// Where to connect and the layers to speak there.
#[derive(Debug, Clone)]
pub struct Stack {
    /// `host:port` (an IPv6 address in brackets).
    pub addr: String,
    /// The layers, bottom first.
    pub layers: Vec<Layer>,
}

impl Stack {
    /// A stack to `host` (a name, or an IP address, bracketed here when IPv6) and
    /// `port`.
    pub fn to(host: &str, port: u16, layers: Vec<Layer>) -> Self {
        let addr = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        Self { addr, layers }
    }

    /// Speaks the layers over `io`, a stream already connected. XHTTP here has only
    /// that one connection: HTTP/2 carries the stream, HTTP/1.1's packet-up (which
    /// needs more connections) fails at its first upload.
    pub async fn over(&self, io: BoxIo) -> Result<BoxIo, DialError> {
        let mut dialed = Dialed { io, h2: false };
        for (at, layer) in self.layers.iter().enumerate() {
            dialed = match layer {
                Layer::Xhttp {
                    settings,
                    host,
                    pool,
                } => {
                    let once = Arc::new(std::sync::Mutex::new(Some(dialed)));
                    let dial: xhttp::client::Dial<DialError> = Arc::new(move || {
                        let given = once.lock().unwrap_or_else(|p| p.into_inner()).take();
                        Box::pin(async move {
                            given.ok_or_else(|| {
                                DialError::at(Step::Xhttp)(std::io::Error::other(
                                    "a stack spoken over one connection has no other to dial",
                                ))
                            })
                        })
                    });
                    let target = xhttp_target(settings, host, &self.layers[..at]);
                    let stream = pool.open(&target, dial, xhttp_failed).await?;
                    Dialed {
                        io: Box::new(stream),
                        h2: false,
                    }
                }
                _ => speak_tracked(layer, dialed.io).await?,
            };
        }
        Ok(dialed.io)
    }

    /// TCP and every layer, noting whether the last one agreed on HTTP/2 (what an
    /// XHTTP layer above needs to know; see [`xhttp::client::Dial`]).
    pub async fn dial_tracked(&self) -> Result<Dialed, DialError> {
        let mut dialed = Dialed {
            io: self.tcp().await?,
            h2: false,
        };
        for layer in &self.layers {
            dialed = speak_tracked(layer, dialed.io).await?;
        }
        Ok(dialed)
    }
}

/// An XHTTP layer's HTTP failure as the stack's error.
fn xhttp_failed(e: xhttp::client::ClientError) -> DialError {
    DialError::at(Step::Xhttp)(std::io::Error::other(e))
}

/// Where an XHTTP layer's requests go, given the layers below it.
fn xhttp_target<'a>(
    settings: &'a switchyard_proto::xhttp::Settings,
    host: &'a str,
    below: &[Layer],
) -> xhttp::client::Target<'a> {
    let stream_up_auto = match below.last() {
        Some(Layer::Reality(_)) => true,
        Some(Layer::Tls { config, .. }) => config.alpn_protocols.iter().any(|p| p == b"h2"),
        _ => false,
    };
    xhttp::client::Target {
        settings,
        host,
        tls: below
            .iter()
            .any(|l| matches!(l, Layer::Tls { .. } | Layer::Reality(_))),
        stream_up_auto,
    }
}

/// A layer spoken, and whether HTTP/2 is what goes over it next: REALITY, or TLS
/// that agreed on ALPN `h2`.
async fn speak_tracked(layer: &Layer, io: BoxIo) -> Result<Dialed, DialError> {
    match layer {
        Layer::Tls {
            config,
            server_name,
        } => {
            let tls = TlsConnector::from(config.clone())
                .connect(server_name.clone(), io)
                .await
                .map_err(DialError::at(Step::Tls))?;
            let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
            Ok(Dialed {
                io: Box::new(tls),
                h2,
            })
        }
        Layer::Reality(_) => Ok(Dialed {
            io: speak(layer, io).await?,
            h2: true,
        }),
        _ => Ok(Dialed {
            io: speak(layer, io).await?,
            h2: false,
        }),
    }
}

impl Connector for Stack {
    async fn connect(&self) -> Result<BoxIo, DialError> {
        let shared_at = self
            .layers
            .iter()
            .position(|l| matches!(l, Layer::Grpc { .. } | Layer::Xhttp { .. }));
        let Some(at) = shared_at else {
            return self.over(self.tcp().await?).await;
        };
        if let Layer::Xhttp {
            settings,
            host,
            pool,
        } = &self.layers[at]
        {
            let below = Arc::new(Self {
                addr: self.addr.clone(),
                layers: self.layers[..at].to_vec(),
            });
            let dial: xhttp::client::Dial<DialError> = Arc::new(move || {
                let below = below.clone();
                Box::pin(async move { below.dial_tracked().await })
            });
            let target = xhttp_target(settings, host, &self.layers[..at]);
            let mut io: BoxIo = Box::new(pool.open(&target, dial, xhttp_failed).await?);
            for layer in &self.layers[at + 1..] {
                io = speak(layer, io).await?;
            }
            return Ok(io);
        }
        let Layer::Grpc {
            authority,
            service_name,
            multi,
            pool,
        } = &self.layers[at]
        else {
            unreachable!("found above")
        };
        let (below, above) = (&self.layers[..at], &self.layers[at + 1..]);
        let target = grpc::Target {
            authority,
            service_name,
            multi: *multi,
            tls: below
                .iter()
                .any(|l| matches!(l, Layer::Tls { .. } | Layer::Reality(_))),
        };
        let dial = || async {
            let mut io = self.tcp().await?;
            for layer in below {
                io = speak(layer, io).await?;
            }
            Ok(io)
        };
        let mut io: BoxIo = Box::new(
            pool.open(&target, dial, |e| DialError::at(Step::Grpc)(e))
                .await?,
        );
        for layer in above {
            io = speak(layer, io).await?;
        }
        Ok(io)
    }
}

impl Stack {
    /// The TCP connection, Nagle off.
    async fn tcp(&self) -> Result<BoxIo, DialError> {
        let tcp = TcpStream::connect(self.addr.as_str())
            .await
            .map_err(DialError::at(Step::Tcp))?;
        // Layers above write whole records and frames: Nagle would only hold them.
        let _ = tcp.set_nodelay(true);
        Ok(Box::new(tcp))
    }
}

async fn speak(layer: &Layer, io: BoxIo) -> Result<BoxIo, DialError> {
    match layer {
        Layer::Tls {
            config,
            server_name,
        } => {
            let tls = TlsConnector::from(config.clone())
                .connect(server_name.clone(), io)
                .await
                .map_err(DialError::at(Step::Tls))?;
            Ok(Box::new(tls))
        }
        Layer::WebSocket { host, path } => {
            let fail = DialError::at(Step::WebSocket);
            let request = format!("ws://{host}{path}")
                .into_client_request()
                .map_err(|e| fail(std::io::Error::other(e)))?;
            let (socket, _) =
                tokio_tungstenite::client_async_with_config(request, io, Some(ws::config()))
                    .await
                    .map_err(|e| DialError::at(Step::WebSocket)(std::io::Error::other(e)))?;
            Ok(Box::new(WsStream::new(socket)))
        }
        Layer::HttpUpgrade { host, path } => {
            let up = crate::httpupgrade::connect(io, host, path)
                .await
                .map_err(DialError::at(Step::HttpUpgrade))?;
            Ok(Box::new(up))
        }
        Layer::Reality(settings) => {
            let tls = crate::reality::connect(io, settings, unix_now())
                .await
                .map_err(DialError::at(Step::Reality))?;
            Ok(Box::new(tls))
        }
        // Spoken over a stream already connected: a connection of its own.
        Layer::Grpc {
            authority,
            service_name,
            multi,
            ..
        } => {
            let target = grpc::Target {
                authority,
                service_name,
                multi: *multi,
                tls: false,
            };
            let stream = grpc::client::over(io, &target)
                .await
                .map_err(DialError::at(Step::Grpc))?;
            Ok(Box::new(stream))
        }
        // Only above another multiplexing layer (`connect` and `over` speak it
        // themselves): it needs connections of its own.
        Layer::Xhttp { .. } => Err(DialError::at(Step::Xhttp)(std::io::Error::other(
            "XHTTP cannot run over gRPC's stream",
        ))),
    }
}

/// Unix time in seconds: what a REALITY hello carries.
fn unix_now() -> u32 {
    u32::try_from(crate::reality::unix_now_ms() / 1000).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn an_ipv6_host_is_bracketed() {
        assert_eq!(Stack::to("::1", 443, vec![]).addr, "[::1]:443");
        assert_eq!(Stack::to("[::1]", 443, vec![]).addr, "[::1]:443");
        assert_eq!(
            Stack::to("example.test", 80, vec![]).addr,
            "example.test:80"
        );
    }

    #[tokio::test]
    async fn a_refused_tcp_connect_names_its_step() {
        // A port just freed: nothing listens there.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let Err(e) = Stack::to("127.0.0.1", port, vec![]).connect().await else {
            panic!("connected to a closed port")
        };
        assert_eq!(e.step, Step::Tcp);
        assert_eq!(e.source.kind(), std::io::ErrorKind::ConnectionRefused);
        assert!(e.to_string().starts_with("tcp: "), "{e}");
    }

    #[tokio::test]
    async fn websocket_over_tcp_carries_bytes_both_ways() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let config = switchyard_proto::websocket::UpgradeConfig {
                path: "/ws".into(),
                host: None,
                early_data: switchyard_proto::websocket::EarlyData::Off,
            };
            let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
            let mut ws = match ws::accept(tcp, &config, deadline).await {
                Ok(ws) => ws,
                Err(refused) => panic!("refused: {:?}", refused.why),
            };
            let mut got = [0u8; 5];
            ws.read_exact(&mut got).await.unwrap();
            ws.write_all(&got).await.unwrap();
            ws.flush().await.unwrap();
        });
        let stack = Stack::to(
            "127.0.0.1",
            port,
            vec![Layer::WebSocket {
                host: "example.test".into(),
                path: "/ws".into(),
            }],
        );
        let mut io = stack.connect().await.unwrap();
        io.write_all(b"hello").await.unwrap();
        io.flush().await.unwrap();
        let mut back = [0u8; 5];
        io.read_exact(&mut back).await.unwrap();
        assert_eq!(&back, b"hello");
        server.await.unwrap();
        // A path the server does not serve: the upgrade step fails.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let config = switchyard_proto::websocket::UpgradeConfig {
                path: "/ws".into(),
                host: None,
                early_data: switchyard_proto::websocket::EarlyData::Off,
            };
            let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
            if let Err(refused) = ws::accept(tcp, &config, deadline).await {
                ws::refuse(refused.stream).await;
            }
        });
        let wrong = Stack::to(
            "127.0.0.1",
            port,
            vec![Layer::WebSocket {
                host: "example.test".into(),
                path: "/other".into(),
            }],
        );
        let Err(e) = wrong.connect().await else {
            panic!("upgraded on the wrong path")
        };
        assert_eq!(e.step, Step::WebSocket);
        assert!(e.to_string().contains("404"), "{e}");
    }

    #[tokio::test]
    async fn httpupgrade_over_tcp_carries_bytes_and_a_wrong_path_names_its_step() {
        use crate::httpupgrade;
        use switchyard_proto::httpupgrade::Config;
        let config = Config {
            path: "/up".into(),
            host: Some("example.test".into()),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let serving = config.clone();
        let server = tokio::spawn(async move {
            for _ in 0..2 {
                let (tcp, _) = listener.accept().await.unwrap();
                let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
                match httpupgrade::accept(tcp, &serving, deadline).await {
                    Ok(mut up) => {
                        let mut got = [0u8; 5];
                        up.read_exact(&mut got).await.unwrap();
                        up.write_all(&got).await.unwrap();
                        up.flush().await.unwrap();
                    }
                    Err(refused) => httpupgrade::refuse(refused.stream).await,
                }
            }
        });
        let layer = |path: &str| Layer::HttpUpgrade {
            host: "example.test".into(),
            path: path.into(),
        };
        let mut io = Stack::to("127.0.0.1", port, vec![layer("/up")])
            .connect()
            .await
            .unwrap();
        io.write_all(b"hello").await.unwrap();
        io.flush().await.unwrap();
        let mut back = [0u8; 5];
        io.read_exact(&mut back).await.unwrap();
        assert_eq!(&back, b"hello");
        let Err(e) = Stack::to("127.0.0.1", port, vec![layer("/other")])
            .connect()
            .await
        else {
            panic!("upgraded on the wrong path")
        };
        assert_eq!(e.step, Step::HttpUpgrade);
        assert_eq!(
            e.to_string(),
            "httpupgrade: server answered 404 Not Found, not 101 Switching Protocols"
        );
        server.await.unwrap();
    }
}
