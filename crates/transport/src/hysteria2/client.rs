//! The dialing side: a QUIC connection to a Hysteria 2 server, authenticated with
//! HTTP/3 (`POST /auth`, answered `233`), then a QUIC stream per TCP connection and
//! datagrams for UDP. One [`Client`] carries any number of both.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use quinn::crypto::rustls::QuicClientConfig;
use switchyard_proto::address::Address;
use switchyard_proto::hysteria2::{Rx, Salamander, TcpRequest, TcpResponse};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::timeout;

use super::client_hop::{ClientHop, ClientHopSocket};
use super::obfs::SalamanderSocket;
use super::stream::QuicStream;
use super::udp::{SendUdpError, Udp, UdpPacket};
use super::wire::{padding, size_buffers};

/// The longest TCP response read.
const MAX_RESPONSE: usize = 8 * 1024;

/// How to reach and authenticate with a server.
#[derive(Clone)]
pub struct ClientSettings {
    /// TLS for the server (its ALPN is set to `h3` here).
    pub tls: rustls::ClientConfig,
    /// The name sent as SNI and checked.
    pub server_name: String,
    /// The user's password (`Hysteria-Auth`).
    pub password: String,
    /// Salamander with the obfs password, when the server uses it.
    pub salamander: Option<Salamander>,
    /// The client's download rate to declare, bytes per second; 0: unknown (the
    /// server uses its congestion control).
    pub rx: u64,
    /// How long the connection and its authentication may take.
    pub timeout: Duration,
    /// UDP sessions in reassembly at once.
    pub max_udp_sessions: usize,
    /// Port hopping across the server's range, when it has one: QUIC's address is
    /// the server's main port, the datagrams go to a port of the range that changes
    /// every [`ClientHop::interval`] ([`super::client_hop`]).
    pub hop: Option<ClientHop>,
}

impl std::fmt::Debug for ClientSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSettings")
            .field("server_name", &self.server_name)
            .field("password", &"<redacted>")
            .field("salamander", &self.salamander)
            .field("rx", &self.rx)
            .field("hop", &self.hop)
            .finish_non_exhaustive()
    }
}

/// Why a connection, a stream or a request failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// A local socket or the endpoint could not be made.
    #[error("UDP socket: {0}")]
    Socket(#[from] io::Error),
    /// The TLS settings do not suit QUIC (TLS 1.3 is needed).
    #[error("TLS for QUIC: {0}")]
    Tls(String),
    /// Connecting failed before QUIC ran (a bad server name).
    #[error("connecting: {0}")]
    Connect(#[from] quinn::ConnectError),
    /// The QUIC connection failed or closed.
    #[error("QUIC: {0}")]
    Connection(#[from] quinn::ConnectionError),
    /// HTTP/3 failed.
    #[error("HTTP/3: {0}")]
    Http3(String),
    /// The server answered the authentication with another status: a wrong
    /// password, or not a Hysteria 2 server.
    #[error("authentication refused: HTTP status {0}")]
    Refused(u16),
    /// Nothing completed within the timeout.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The server refused a TCP request.
    #[error("the server refused the connection: {0}")]
    TcpRefused(String),
    /// The server's answer to a TCP request is not one.
    #[error("the server's answer to a TCP request: {0}")]
    BadResponse(String),
    /// A stream failed.
    #[error("stream: {0}")]
    Stream(String),
}

/// An authenticated connection to a server.
pub struct Client {
    conn: quinn::Connection,
    /// Held: while it lives, the HTTP/3 connection (and with it QUIC) stays open.
    _requests: h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>,
    /// The endpoint, held with its socket.
    _endpoint: quinn::Endpoint,
    udp_on: bool,
    server_rx: Rx,
    udp: Udp,
    timeout: Duration,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server", &self.conn.remote_address())
            .field("udp", &self.udp_on)
            .field("server_rx", &self.server_rx)
            .finish_non_exhaustive()
    }
}

/// Connects to `server` and authenticates.
pub async fn connect(server: SocketAddr, settings: &ClientSettings) -> Result<Client, ClientError> {
    let mut tls = settings.tls.clone();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = QuicClientConfig::try_from(tls).map_err(|e| ClientError::Tls(e.to_string()))?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    transport
        .keep_alive_interval(Some(Duration::from_secs(10)))
        .datagram_receive_buffer_size(Some(1 << 20))
        .congestion_controller_factory(Arc::new(super::bound::BoundConfig::bbr()));
    config.transport_config(Arc::new(transport));
    let local: SocketAddr = if server.is_ipv6() {
        "[::]:0".parse().map_err(io::Error::other)?
    } else {
        "0.0.0.0:0".parse().map_err(io::Error::other)?
    };
    let runtime =
        quinn::default_runtime().ok_or_else(|| io::Error::other("no async runtime for QUIC"))?;
    let inner: Arc<dyn quinn::AsyncUdpSocket> = match &settings.hop {
        Some(hop) => ClientHopSocket::bind(local, server, hop, runtime.clone())?,
        None => {
            let socket = std::net::UdpSocket::bind(local)?;
            size_buffers(&socket);
            runtime.wrap_udp_socket(socket)?
        }
    };
    let socket: Arc<dyn quinn::AsyncUdpSocket> = match &settings.salamander {
        Some(obfs) => Arc::new(SalamanderSocket::new(inner, obfs.clone())),
        None => inner,
    };
    let mut endpoint = quinn::Endpoint::new_with_abstract_socket(
        quinn::EndpointConfig::default(),
        None,
        socket,
        runtime,
    )?;
    endpoint.set_default_client_config(config);
    let wait = settings.timeout;
    let run = async {
        let conn = endpoint.connect(server, &settings.server_name)?.await?;
        let (mut driver, mut requests) = h3::client::new(h3_quinn::Connection::new(conn.clone()))
            .await
            .map_err(|e| ClientError::Http3(e.to_string()))?;
        tokio::spawn(async move {
            let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
        });
        let request = http::Request::builder()
            .method(http::Method::POST)
            .uri("https://hysteria/auth")
            .header("Hysteria-Auth", settings.password.as_str())
            .header("Hysteria-CC-RX", settings.rx.to_string())
            .header("Hysteria-Padding", padding())
            .body(())
            .map_err(|e| ClientError::Http3(e.to_string()))?;
        let mut stream = requests
            .send_request(request)
            .await
            .map_err(|e| ClientError::Http3(e.to_string()))?;
        // A server may answer before it reads the end of the request, and stop it:
        // the answer is what counts.
        let _ = stream.finish().await;
        let response = stream
            .recv_response()
            .await
            .map_err(|e| ClientError::Http3(e.to_string()))?;
        if response.status().as_u16() != 233 {
            return Err(ClientError::Refused(response.status().as_u16()));
        }
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let udp_on = header("hysteria-udp").is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let server_rx = header("hysteria-cc-rx")
            .and_then(|v| Rx::parse(&v).ok())
            .unwrap_or(Rx::Auto);
        Ok((conn, requests, udp_on, server_rx))
    };
    let (conn, requests, udp_on, server_rx) = timeout(wait, run)
        .await
        .map_err(|_| ClientError::Timeout(wait))??;
    Ok(Client {
        conn,
        _requests: requests,
        _endpoint: endpoint,
        udp_on,
        server_rx,
        udp: Udp::new(settings.max_udp_sessions),
        timeout: wait,
    })
}

impl Client {
    /// Whether the server relays UDP.
    pub fn udp(&self) -> bool {
        self.udp_on
    }

    /// The server's receive rate as it told it.
    pub fn server_rx(&self) -> Rx {
        self.server_rx
    }

    /// The QUIC connection (its stats, whether it is closed).
    pub fn connection(&self) -> &quinn::Connection {
        &self.conn
    }

    /// A stream to `to` through the server, once the server has connected it.
    pub async fn open_tcp(&self, to: &Address) -> Result<QuicStream, ClientError> {
        let wait = self.timeout;
        let open = async {
            let (mut send, mut recv) = self.conn.open_bi().await?;
            let mut request = Vec::with_capacity(128);
            TcpRequest {
                address: to.clone(),
            }
            .encode(padding().as_bytes(), &mut request);
            AsyncWriteExt::write_all(&mut send, &request)
                .await
                .map_err(|e| ClientError::Stream(e.to_string()))?;
            let mut buf = Vec::with_capacity(128);
            let mut chunk = [0u8; 512];
            loop {
                match TcpResponse::parse(&buf) {
                    Ok(Some((response, used))) => {
                        if !response.ok {
                            return Err(ClientError::TcpRefused(response.message));
                        }
                        let rest = buf.split_off(used);
                        return Ok(QuicStream::new(send, recv, rest));
                    }
                    Ok(None) if buf.len() < MAX_RESPONSE => {}
                    Ok(None) => return Err(ClientError::BadResponse("too long".into())),
                    Err(e) => return Err(ClientError::BadResponse(e.to_string())),
                }
                let n = AsyncReadExt::read(&mut recv, &mut chunk)
                    .await
                    .map_err(|e| ClientError::Stream(e.to_string()))?;
                if n == 0 {
                    return Err(ClientError::BadResponse(format!(
                        "the stream ended after {} bytes",
                        buf.len()
                    )));
                }
                buf.extend_from_slice(&chunk[..n]);
            }
        };
        timeout(wait, open)
            .await
            .map_err(|_| ClientError::Timeout(wait))?
    }

    /// Sends `payload` to `to` in session `session_id`.
    pub fn send_udp(
        &self,
        session_id: u32,
        to: &Address,
        payload: &[u8],
    ) -> Result<(), SendUdpError> {
        self.udp.send(&self.conn, session_id, to, payload)
    }

    /// The next whole UDP packet from the server (its `address` is the source).
    pub async fn recv_udp(&self) -> Result<UdpPacket, quinn::ConnectionError> {
        self.udp.recv(&self.conn).await
    }

    /// Forgets session `session_id`'s reassembly.
    pub fn end_udp_session(&self, session_id: u32) {
        self.udp.end(session_id);
    }
}
