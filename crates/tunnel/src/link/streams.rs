//! Links that are streams of an HTTP server: XHTTP and gRPC profiles.
//!
//! ```text
//! dialing side:    TCP ─ (TLS to a CDN, ALPN h2) ─ XHTTP requests / a gRPC stream ─ TLS 1.3 (pinned) ─ link bytes
//! listening side:  TCP ─ HTTP/1.1 or HTTP/2 server ─ each stream: TLS 1.3 (pinned) ─ hello ─ link
//! ```
//! Unlike the other profiles, a link is not one TCP connection: an HTTP/2 connection
//! may carry several links, and an XHTTP link over HTTP/1.1 (packet-up) sends its
//! uploads on connections of their own. So the listening side serves each connection
//! with the transport layer's server and treats every stream it hands over as a new
//! link, its pinned TLS and hello still to come. Each dial has connections of its own:
//! links to one address do not share one, so one dropped connection costs one link.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;

use switchyard_proto::xhttp::{Mode, Settings};
use switchyard_transport::dial::{Connector as _, DialError as StackError, Layer, Stack};
use switchyard_transport::io::Prefixed;
use switchyard_transport::{BoxIo, grpc, xhttp};

/// How long a served connection stays with no request in progress (no link on it).
pub const HTTP_IDLE: Duration = Duration::from_secs(60);

/// What an XHTTP or gRPC profile's requests say.
#[derive(Debug, Clone, Copy)]
pub(crate) enum HttpLink<'a> {
    /// XHTTP under `path`, its upload as `mode` says.
    Xhttp {
        /// The path.
        path: &'a str,
        /// The mode (the dialing side's; the listening side takes any).
        mode: Mode,
    },
    /// gRPC on `/{service_name}/Tun`.
    Grpc {
        /// The service name.
        service_name: &'a str,
    },
}

/// Why a stream could not be opened.
#[derive(Debug)]
pub(crate) enum Failed {
    /// Below HTTP: TCP, or the TLS to the CDN.
    Below(StackError),
    /// XHTTP's requests.
    Xhttp(String),
    /// The HTTP/2 connection or the gRPC stream.
    Grpc(String),
}

/// Opens a link's stream at `addr`: TCP and `outer` (the TLS to a CDN, offering
/// h2) on a connection of its own, then the XHTTP session or the gRPC stream with
/// `host` as its `Host`. The link's pinned TLS goes over it. No deadline of its own:
/// the caller's covers it.
pub(crate) async fn dial(
    addr: &str,
    host: &str,
    outer: Option<Layer>,
    link: HttpLink<'_>,
) -> Result<BoxIo, Failed> {
    let tls = outer.is_some();
    let below = Arc::new(Stack {
        addr: addr.to_owned(),
        layers: outer.into_iter().collect(),
    });
    match link {
        HttpLink::Xhttp { path, mode } => {
            let mut settings = Settings::new(path);
            settings.mode = mode;
            let target = xhttp::client::Target {
                settings: &settings,
                host,
                tls,
                // The CDN's TLS offers h2: Xray's rule for `auto`.
                stream_up_auto: tls,
            };
            let dial: xhttp::client::Dial<Failed> = Arc::new(move || {
                let below = below.clone();
                Box::pin(async move { below.dial_tracked().await.map_err(Failed::Below) })
            });
            let stream = xhttp::client::Pool::default()
                .open(&target, dial, |e| Failed::Xhttp(e.to_string()))
                .await?;
            Ok(Box::new(stream))
        }
        HttpLink::Grpc { service_name } => {
            let target = grpc::Target {
                authority: host,
                service_name,
                multi: false,
                tls,
            };
            let dial = || async { below.connect().await.map_err(Failed::Below) };
            let stream = grpc::Pool::default()
                .open(&target, dial, |e| Failed::Grpc(e.to_string()))
                .await?;
            Ok(Box::new(stream))
        }
    }
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Below(e) => write!(f, "{e}"),
            Self::Xhttp(e) | Self::Grpc(e) => f.write_str(e),
        }
    }
}

/// The listening side's HTTP server of an XHTTP or gRPC profile. Clones share the
/// XHTTP session table (a packet-up link's uploads arrive on other connections).
#[derive(Clone)]
pub(crate) enum StreamServer {
    /// XHTTP under the profile's path, any mode.
    Xhttp(Arc<xhttp::Server>),
    /// gRPC on the profile's service name.
    Grpc(Arc<str>),
}

/// A connection whose first bytes were ours, ready to serve.
pub(crate) enum Opened {
    Xhttp(xhttp::First<TcpStream>),
    Grpc(Prefixed<TcpStream>),
}

impl StreamServer {
    /// The server of a profile's requests.
    pub(crate) fn new(link: HttpLink<'_>) -> Self {
        match link {
            HttpLink::Xhttp { path, .. } => {
                let mut settings = Settings::new(path);
                settings.mode = Mode::Auto;
                Self::Xhttp(Arc::new(xhttp::Server::new(settings)))
            }
            HttpLink::Grpc { service_name } => Self::Grpc(service_name.into()),
        }
    }

    /// Reads the connection's first request (XHTTP) or HTTP/2's preface (gRPC) by
    /// `deadline`. Anything else is answered `404 Not Found` and closed; the reason
    /// comes back.
    pub(crate) async fn open(&self, tcp: TcpStream, deadline: Instant) -> Result<Opened, String> {
        let refused = match self {
            Self::Xhttp(server) => match server.read_first(tcp, deadline).await {
                Ok(first) => return Ok(Opened::Xhttp(first)),
                Err(refused) => refused,
            },
            Self::Grpc(_) => match grpc::read_preface(tcp, deadline).await {
                Ok(io) => return Ok(Opened::Grpc(io)),
                Err(refused) => refused,
            },
        };
        let why = refused
            .why
            .unwrap_or_else(|| "the peer stopped before a whole request".into());
        switchyard_transport::httpupgrade::refuse(refused.stream).await;
        Err(why)
    }

    /// Serves an opened connection until it closes or carries no link for
    /// [`HTTP_IDLE`]; every stream goes to `each`, which must not wait. An HTTP/2
    /// connection must bring a request of ours by `deadline`.
    pub(crate) async fn serve(
        &self,
        opened: Opened,
        deadline: Instant,
        each: impl Fn(BoxIo) + Send + Sync + 'static,
    ) -> Result<(), String> {
        match (self, opened) {
            (Self::Xhttp(server), Opened::Xhttp(first)) => server
                .serve(first, deadline, HTTP_IDLE, move |s| each(Box::new(s)))
                .await
                .map_err(|e| e.to_string()),
            (Self::Grpc(service), Opened::Grpc(io)) => {
                let open = Arc::new(AtomicUsize::new(0));
                let counted = open.clone();
                let settings = grpc::Settings::default();
                let serving = grpc::serve(io, service, &settings, deadline, move |s| {
                    each(Box::new(Counted::new(Box::new(s), &counted)))
                });
                tokio::select! {
                    served = serving => served.map_err(|e| e.to_string()),
                    () = idle(&open) => Ok(()),
                }
            }
            _ => Err("a connection opened by another server".into()),
        }
    }
}

/// Returns once no stream has been open at two checks [`HTTP_IDLE`] apart.
async fn idle(open: &AtomicUsize) {
    let mut was_idle = false;
    loop {
        tokio::time::sleep(HTTP_IDLE).await;
        let now_idle = open.load(Ordering::Relaxed) == 0;
        if now_idle && was_idle {
            return;
        }
        was_idle = now_idle;
    }
}

/// A stream counted among its connection's open ones while it lives.
struct Counted {
    io: BoxIo,
    open: Arc<AtomicUsize>,
}

impl Counted {
    fn new(io: BoxIo, open: &Arc<AtomicUsize>) -> Self {
        open.fetch_add(1, Ordering::Relaxed);
        Self {
            io,
            open: open.clone(),
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}
