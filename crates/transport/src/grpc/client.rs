//! The client side: streams opened on a shared HTTP/2 connection ([`Pool`]), a new
//! connection dialed when there is none alive or the live one is at its stream cap.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use h2::client::SendRequest;
use http::{Method, Request};
use switchyard_proto::grpc::Mode;

use super::GrpcStream;
use super::stream::Counted;
use crate::io::BoxIo;

/// The most streams the client opens on one connection (the node's cap too); the
/// next one gets a new connection.
pub const MAX_STREAMS: usize = 128;

/// What a client sends in `user-agent`: what Go's gRPC clients (Xray's) send.
const USER_AGENT: &str = "grpc-go/1.68.0";

/// The connection a gRPC layer's streams share, kept by every clone of its
/// [`Stack`](crate::dial::Stack): the live connection's request handle, dropped
/// when the connection ends.
#[derive(Clone, Default)]
pub struct Pool(Arc<Mutex<Option<Shared>>>);

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pool")
    }
}

/// A live connection.
#[derive(Clone)]
struct Shared {
    send: SendRequest<Bytes>,
    /// Streams open on it.
    streams: Arc<AtomicUsize>,
    /// Set when its task ended.
    dead: Arc<AtomicBool>,
}

/// What a stream's request says.
#[derive(Debug, Clone)]
pub struct Target<'a> {
    /// The `:authority`.
    pub authority: &'a str,
    /// The service name.
    pub service_name: &'a str,
    /// Multi mode (`TunMulti`).
    pub multi: bool,
    /// Whether the connection is in TLS (the `:scheme`).
    pub tls: bool,
}

impl Pool {
    /// A stream on the pool's live connection, or on a new one from `dial` (the
    /// TCP connection and the layers below gRPC) when there is none alive or it is
    /// at [`MAX_STREAMS`]. `fail` names an HTTP/2 failure as the caller's error.
    pub async fn open<F, Fut, E>(
        &self,
        target: &Target<'_>,
        dial: F,
        fail: impl Fn(std::io::Error) -> E,
    ) -> Result<GrpcStream, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<BoxIo, E>>,
    {
        let live = self
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .filter(|s| !s.dead.load(Ordering::Relaxed));
        if let Some(shared) = live
            && shared.streams.load(Ordering::Relaxed) < MAX_STREAMS
        {
            match request(&shared, target).await {
                Ok(stream) => return Ok(stream),
                Err(e) => {
                    tracing::debug!("gRPC: the shared connection refused a stream: {e}");
                    shared.dead.store(true, Ordering::Relaxed);
                }
            }
        }
        let io = dial().await?;
        let shared = handshake(io).await.map_err(&fail)?;
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(shared.clone());
        request(&shared, target).await.map_err(fail)
    }
}

/// An HTTP/2 connection over `io`, its task spawned.
async fn handshake(io: BoxIo) -> std::io::Result<Shared> {
    let (send, connection) = h2::client::Builder::new()
        .initial_window_size(1024 * 1024)
        .initial_connection_window_size(4 * 1024 * 1024)
        .max_header_list_size(16 * 1024)
        .enable_push(false)
        .handshake::<_, Bytes>(io)
        .await
        .map_err(std::io::Error::other)?;
    let dead = Arc::new(AtomicBool::new(false));
    let ended = dead.clone();
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!("gRPC connection: {e}");
        }
        ended.store(true, Ordering::Relaxed);
    });
    Ok(Shared {
        send,
        streams: Arc::default(),
        dead,
    })
}

/// One stream over `io` on a connection of its own (a stack spoken over a stream
/// already connected).
pub async fn over(io: BoxIo, target: &Target<'_>) -> std::io::Result<GrpcStream> {
    let shared = handshake(io).await?;
    request(&shared, target).await
}

/// Opens a stream: the request's head goes now, its answer is read with the first
/// bytes.
async fn request(shared: &Shared, target: &Target<'_>) -> std::io::Result<GrpcStream> {
    let mode = if target.multi { Mode::Multi } else { Mode::Gun };
    let scheme = if target.tls { "https" } else { "http" };
    let uri = format!(
        "{scheme}://{}{}",
        target.authority,
        mode.path(target.service_name)
    );
    let request = Request::builder()
        .method(Method::POST)
        .uri(uri)
        .header(http::header::CONTENT_TYPE, "application/grpc")
        .header(http::header::TE, "trailers")
        .header(http::header::USER_AGENT, USER_AGENT)
        .body(())
        .map_err(std::io::Error::other)?;
    let mut send = shared
        .send
        .clone()
        .ready()
        .await
        .map_err(std::io::Error::other)?;
    let (response, body) = send
        .send_request(request, false)
        .map_err(std::io::Error::other)?;
    shared.streams.fetch_add(1, Ordering::Relaxed);
    let counted = Counted(shared.streams.clone());
    Ok(GrpcStream::client(body, response, mode, Some(counted)))
}
