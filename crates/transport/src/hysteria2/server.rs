//! The serving side: the QUIC endpoint, the HTTP/3 authentication with its
//! masquerade, and an authenticated connection's TCP streams and UDP datagrams.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes};
use quinn::crypto::rustls::QuicServerConfig;
use switchyard_proto::address::Address;
use switchyard_proto::hysteria2::{Hysteria2Error, Rx, Salamander, TcpRequest, TcpResponse};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::{Instant, timeout, timeout_at};

use super::bound::BoundConfig;
use super::brutal::{BrutalConfig, set_rate};
use super::hop::HopSocket;
use super::masquerade::{Answer, MAX_REQUEST_BODY, ProxySite};
use super::obfs::{OVERHEAD, SalamanderSocket};
use super::stream::QuicStream;
use super::udp::{SendUdpError, Udp, UdpPacket};
use super::wire::{padding, size_buffers};

/// The largest UDP payload QUIC probes for: an Ethernet MTU of 1500 less the IPv6
/// and UDP headers.
const MAX_UDP_PAYLOAD: u16 = 1452;

/// Requests one unauthenticated connection gets answered before it is closed, as a
/// web server ends a keep-alive connection (nginx's `keepalive_requests`).
const MAX_MASQUERADE_REQUESTS: usize = 1000;

/// The longest TCP request read (its address and padding are bounded far below).
const MAX_REQUEST: usize = 8 * 1024;

/// How a server answers and what it bounds.
#[derive(Debug, Clone)]
pub struct ServerSettings {
    /// Whether UDP is relayed (`Hysteria-UDP`); datagrams are dropped when not.
    pub udp: bool,
    /// The server's receive rate limit in bytes per second, told to clients in
    /// `Hysteria-CC-RX`; `None`: `0`, no limit (a client with a declared upload rate
    /// sends at it, one without uses its congestion control).
    pub rx: Option<u64>,
    /// The most the server sends to one client, bytes per second: a client that
    /// declares its download rate gets Brutal at the lower of the two
    /// ([`super::brutal`]); `None`: the client's rate as it is. A client that
    /// declares none gets BBR under the loss bound ([`super::bound`]).
    pub tx: Option<u64>,
    /// How long the QUIC handshake may take.
    pub handshake_timeout: Duration,
    /// A connection with nothing in flight for this long is closed (probers and
    /// clients gone silent alike).
    pub idle_timeout: Duration,
    /// Concurrent streams (TCP connections) per client connection: 1024, the
    /// official server's `maxIncomingStreams`. A client puts all of its connections
    /// on one QUIC connection, so this is a user's connections at once; the
    /// connection's receive window bounds the data held.
    pub max_streams: u32,
    /// UDP sessions in reassembly per client connection.
    pub max_udp_sessions: usize,
    /// What a request other than a client's authentication gets.
    pub masquerade: Masquerade,
    /// Salamander obfuscation of every packet, with the obfs password; `None`: plain
    /// QUIC.
    pub salamander: Option<Salamander>,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            udp: true,
            rx: None,
            tx: None,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            max_streams: 1024,
            max_udp_sessions: 256,
            masquerade: Masquerade::NotFound,
            salamander: None,
        }
    }
}

/// What the server is to anyone who does not authenticate: a web server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Masquerade {
    /// Every request gets `404 page not found`, as a bare Go web server answers (the
    /// official server's default).
    NotFound,
    /// Every request is passed to a real web site and gets its answer
    /// ([`super::masquerade`]).
    Proxy(ProxySite),
}

/// Why a connection did not become an [`Authenticated`] one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HandshakeError {
    /// The QUIC handshake failed (a wrong ALPN, a TLS error, a lost peer).
    #[error("QUIC handshake: {0}")]
    Quic(#[from] quinn::ConnectionError),
    /// The QUIC handshake did not finish in time.
    #[error("QUIC handshake: no answer within {0:?}")]
    Timeout(Duration),
    /// HTTP/3 failed on the connection.
    #[error("HTTP/3: {0}")]
    Http3(String),
    /// The peer went away without authenticating (after `requests` masquerade
    /// answers).
    #[error("closed without authenticating after {requests} request(s)")]
    NotAuthenticated {
        /// How many requests the masquerade answered.
        requests: usize,
    },
}

/// A QUIC endpoint serving Hysteria 2 on `socket`, with `tls` (its ALPN set to `h3`).
pub fn endpoint(
    socket: std::net::UdpSocket,
    tls: rustls::ServerConfig,
    settings: &ServerSettings,
) -> io::Result<quinn::Endpoint> {
    endpoint_on(vec![socket], tls, settings)
}

/// A QUIC endpoint serving Hysteria 2 on every socket of `sockets` at once (port
/// hopping, [`super::hop`]): clients may send to any of them.
pub fn endpoint_on(
    sockets: Vec<std::net::UdpSocket>,
    mut tls: rustls::ServerConfig,
    settings: &ServerSettings,
) -> io::Result<quinn::Endpoint> {
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = QuicServerConfig::try_from(tls).map_err(io::Error::other)?;
    let mut server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(settings.max_streams.into())
        // HTTP/3's control and QPACK streams, with room to spare.
        .max_concurrent_uni_streams(16u32.into())
        .max_idle_timeout(Some(
            settings.idle_timeout.try_into().map_err(io::Error::other)?,
        ))
        // Bounded per connection: 4 MiB per stream, 16 MiB in all, 1 MiB of datagrams.
        .stream_receive_window((4u32 << 20).into())
        .receive_window((16u32 << 20).into())
        .send_window(16 << 20)
        .datagram_receive_buffer_size(Some(1 << 20))
        .datagram_send_buffer_size(1 << 20)
        // BBR (with the loss bound) until a client declares its download rate, then
        // Brutal at it.
        .congestion_controller_factory(Arc::new(BrutalConfig::new(Arc::new(BoundConfig::bbr()))));
    // Path MTU discovery probes up to what an Ethernet path carries; Salamander's salt
    // comes out of QUIC's share, so the packets on the wire stay within it.
    let overhead = if settings.salamander.is_some() {
        OVERHEAD as u16
    } else {
        0
    };
    let mut mtu = quinn::MtuDiscoveryConfig::default();
    mtu.upper_bound(MAX_UDP_PAYLOAD - overhead);
    transport.mtu_discovery_config(Some(mtu));
    server.transport_config(Arc::new(transport));
    let runtime =
        quinn::default_runtime().ok_or_else(|| io::Error::other("no async runtime for QUIC"))?;
    for socket in &sockets {
        size_buffers(socket);
    }
    let mut wrapped = sockets
        .into_iter()
        .map(|s| runtime.wrap_udp_socket(s))
        .collect::<io::Result<Vec<_>>>()?;
    let inner: Arc<dyn quinn::AsyncUdpSocket> = if wrapped.len() == 1 {
        wrapped.remove(0)
    } else {
        Arc::new(HopSocket::new(wrapped)?)
    };
    let socket: Arc<dyn quinn::AsyncUdpSocket> = match &settings.salamander {
        Some(obfs) => Arc::new(SalamanderSocket::new(inner, obfs.clone())),
        None => inner,
    };
    quinn::Endpoint::new_with_abstract_socket(
        quinn::EndpointConfig::default(),
        Some(server),
        socket,
        runtime,
    )
}

/// Takes `incoming` through the QUIC handshake and HTTP/3 until it authenticates:
/// `authenticate` maps a `Hysteria-Auth` value to its user. Every other request is
/// answered by the masquerade; a peer that never authenticates is closed when it
/// goes quiet or leaves.
pub async fn handshake<U>(
    incoming: quinn::Incoming,
    settings: &ServerSettings,
    authenticate: impl Fn(&str) -> Option<U>,
) -> Result<Authenticated<U>, HandshakeError> {
    let deadline = Instant::now() + settings.handshake_timeout;
    let conn = timeout_at(deadline, incoming)
        .await
        .map_err(|_| HandshakeError::Timeout(settings.handshake_timeout))??;
    let built = timeout_at(
        deadline,
        h3::server::builder().build::<_, Bytes>(h3_quinn::Connection::new(conn.clone())),
    )
    .await
    .map_err(|_| HandshakeError::Timeout(settings.handshake_timeout))?;
    let mut h3 = built.map_err(|e| HandshakeError::Http3(e.to_string()))?;
    let mut requests = 0;
    loop {
        let resolver = match timeout(settings.idle_timeout, h3.accept()).await {
            Ok(Ok(Some(resolver))) => resolver,
            Ok(Ok(None)) | Err(_) => return Err(HandshakeError::NotAuthenticated { requests }),
            Ok(Err(e)) => return Err(HandshakeError::Http3(e.to_string())),
        };
        let Ok(Ok((request, mut stream))) =
            timeout(settings.idle_timeout, resolver.resolve_request()).await
        else {
            continue;
        };
        if let Some((user, client_rx)) = authentication(&request, &authenticate) {
            let rx = Rx::Rate(settings.rx.unwrap_or(0));
            let response = http::Response::builder()
                .status(233)
                .header("Hysteria-UDP", if settings.udp { "true" } else { "false" })
                .header("Hysteria-CC-RX", rx.to_string())
                .header("Hysteria-Padding", padding())
                .body(())
                .map_err(|e| HandshakeError::Http3(e.to_string()))?;
            stream
                .send_response(response)
                .await
                .map_err(|e| HandshakeError::Http3(e.to_string()))?;
            let _ = stream.finish().await;
            let rate = match (client_rx, settings.tx) {
                (0, _) => 0,
                (client, Some(cap)) => client.min(cap),
                (client, None) => client,
            };
            set_rate(&conn, rate);
            return Ok(Authenticated {
                conn,
                _h3: h3,
                user,
                client_rx,
                udp_on: settings.udp,
                udp: Udp::new(settings.max_udp_sessions),
            });
        }
        requests += 1;
        masquerade(&settings.masquerade, request, stream).await;
        if requests >= MAX_MASQUERADE_REQUESTS {
            conn.close(0u32.into(), b"");
            return Err(HandshakeError::NotAuthenticated { requests });
        }
    }
}

/// The user and declared receive rate of a client's authentication request, if it is
/// one and `authenticate` knows its credential.
fn authentication<U>(
    request: &http::Request<()>,
    authenticate: &impl Fn(&str) -> Option<U>,
) -> Option<(U, u64)> {
    if request.method() != http::Method::POST
        || request.uri().path() != "/auth"
        || request.uri().host() != Some("hysteria")
    {
        return None;
    }
    let auth = request.headers().get("hysteria-auth")?.to_str().ok()?;
    let user = authenticate(auth)?;
    let rx = request
        .headers()
        .get("hysteria-cc-rx")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| Rx::parse(v).ok());
    let rx = match rx {
        Some(Rx::Rate(r)) => r,
        _ => 0,
    };
    Some((user, rx))
}

async fn masquerade<S>(
    m: &Masquerade,
    request: http::Request<()>,
    mut stream: h3::server::RequestStream<S, Bytes>,
) where
    S: h3::quic::BidiStream<Bytes>,
{
    match m {
        Masquerade::Proxy(site) => {
            let mut answer = match request_body(&mut stream).await {
                Some(body) => site.answer(request, body).await,
                None => Answer::status(http::StatusCode::PAYLOAD_TOO_LARGE),
            };
            if stream.send_response(answer.head.clone()).await.is_err() {
                return;
            }
            // The body as the site sends it; QUIC's flow control holds the site back
            // when the prober reads slowly.
            while let Some(chunk) = answer.next().await {
                if stream.send_data(chunk).await.is_err() {
                    return;
                }
            }
            let _ = stream.finish().await;
        }
        Masquerade::NotFound => {
            let Ok(response) = http::Response::builder()
                .status(404)
                .header("content-type", "text/plain; charset=utf-8")
                .header("x-content-type-options", "nosniff")
                .body(())
            else {
                return;
            };
            if stream.send_response(response).await.is_ok() {
                let _ = stream
                    .send_data(Bytes::from_static(b"404 page not found\n"))
                    .await;
                let _ = stream.finish().await;
            }
        }
    }
}

/// A request's body, read whole when it is at most [`MAX_REQUEST_BODY`]; `None` past
/// that (or when the stream fails).
async fn request_body<S>(stream: &mut h3::server::RequestStream<S, Bytes>) -> Option<Bytes>
where
    S: h3::quic::BidiStream<Bytes>,
{
    let mut body = Vec::new();
    while let Some(mut chunk) = stream.recv_data().await.ok()? {
        if body.len() + chunk.remaining() > MAX_REQUEST_BODY {
            return None;
        }
        while chunk.has_remaining() {
            let part = chunk.chunk();
            body.extend_from_slice(part);
            let n = part.len();
            chunk.advance(n);
        }
    }
    Some(Bytes::from(body))
}

/// A connection whose client authenticated: its TCP streams and UDP packets.
pub struct Authenticated<U> {
    conn: quinn::Connection,
    /// Held: dropping it closes the connection. Not polled after the
    /// authentication, so the client's streams come to [`Self::accept_tcp`].
    _h3: h3::server::Connection<h3_quinn::Connection, Bytes>,
    user: U,
    client_rx: u64,
    udp_on: bool,
    udp: Udp,
}

impl<U> Authenticated<U> {
    /// The user the client authenticated as.
    pub fn user(&self) -> &U {
        &self.user
    }

    /// The receive rate the client declared, bytes per second (0: unknown).
    pub fn client_rx(&self) -> u64 {
        self.client_rx
    }

    /// The client's address.
    pub fn remote(&self) -> SocketAddr {
        self.conn.remote_address()
    }

    /// The QUIC connection (its stats, closing it).
    pub fn connection(&self) -> &quinn::Connection {
        &self.conn
    }

    /// The client's next stream, its request still unread ([`PendingTcp::read`]),
    /// so a slow request never holds up the next stream.
    pub async fn accept_tcp(&self) -> Result<PendingTcp, quinn::ConnectionError> {
        let (send, recv) = self.conn.accept_bi().await?;
        Ok(PendingTcp { send, recv })
    }

    /// The client's next whole UDP packet. Datagrams that do not parse, of sessions
    /// past the limit, or that arrive when UDP is off are dropped.
    pub async fn recv_udp(&self) -> Result<UdpPacket, quinn::ConnectionError> {
        loop {
            let packet = self.udp.recv(&self.conn).await?;
            if self.udp_on {
                return Ok(packet);
            }
        }
    }

    /// Sends `payload` from `from` to the client's session `session_id`, in fragments
    /// when it is larger than a datagram on this path.
    pub fn send_udp(
        &self,
        session_id: u32,
        from: &Address,
        payload: &[u8],
    ) -> Result<(), SendUdpError> {
        self.udp.send(&self.conn, session_id, from, payload)
    }

    /// Forgets session `session_id`'s reassembly (the relay closed the session).
    pub fn end_udp_session(&self, session_id: u32) {
        self.udp.end(session_id);
    }
}

/// A client's stream whose request is still to be read.
#[derive(Debug)]
pub struct PendingTcp {
    send: quinn::SendStream,
    recv: quinn::RecvStream,
}

impl PendingTcp {
    /// Reads the stream's TCP request by `deadline`.
    pub async fn read(mut self, deadline: Instant) -> Result<TcpAccept, RequestError> {
        let mut buf = Vec::with_capacity(512);
        let mut chunk = [0u8; 1024];
        loop {
            if let Some((request, used)) = TcpRequest::parse(&buf)? {
                let rest = buf.split_off(used);
                return Ok(TcpAccept {
                    request,
                    send: self.send,
                    recv: self.recv,
                    rest,
                });
            }
            if buf.len() >= MAX_REQUEST {
                return Err(RequestError::TooLong);
            }
            let room = (MAX_REQUEST - buf.len()).min(chunk.len());
            let n = timeout_at(
                deadline,
                AsyncReadExt::read(&mut self.recv, &mut chunk[..room]),
            )
            .await
            .map_err(|_| RequestError::Timeout)??;
            if n == 0 {
                return Err(RequestError::Eof(buf.len()));
            }
            buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// Why a stream's TCP request could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The bytes are not a request.
    #[error(transparent)]
    Invalid(#[from] Hysteria2Error),
    /// The request did not come in time.
    #[error("no whole request in time")]
    Timeout,
    /// The stream ended first.
    #[error("the stream ended after {0} bytes of a request")]
    Eof(usize),
    /// More than a request can be.
    #[error("a request longer than {MAX_REQUEST} bytes")]
    TooLong,
    /// The stream failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// A TCP request read: answer it.
#[derive(Debug)]
pub struct TcpAccept {
    /// Where the client wants to go.
    pub request: TcpRequest,
    send: quinn::SendStream,
    recv: quinn::RecvStream,
    rest: Vec<u8>,
}

impl TcpAccept {
    /// Answers ok; the stream carries the connection's bytes from here.
    pub async fn ok(mut self) -> io::Result<QuicStream> {
        let mut answer = Vec::with_capacity(64);
        TcpResponse {
            ok: true,
            message: String::new(),
        }
        .encode(padding().as_bytes(), &mut answer);
        AsyncWriteExt::write_all(&mut self.send, &answer).await?;
        Ok(QuicStream::new(self.send, self.recv, self.rest))
    }

    /// Answers an error with `message` and ends the stream.
    pub async fn refuse(mut self, message: &str) {
        let mut answer = Vec::with_capacity(64 + message.len());
        TcpResponse {
            ok: false,
            message: message.to_owned(),
        }
        .encode(padding().as_bytes(), &mut answer);
        if AsyncWriteExt::write_all(&mut self.send, &answer)
            .await
            .is_ok()
        {
            let _ = self.send.finish();
        }
    }
}
