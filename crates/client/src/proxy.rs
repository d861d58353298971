//! The local proxy: SOCKS5 (no authentication; CONNECT and UDP ASSOCIATE), HTTP
//! CONNECT and plain HTTP proxy requests ([`http`], [`http_relay`]) on one port. The
//! first byte tells SOCKS5 from HTTP (5 is SOCKS5). Each connection goes to the
//! server [`Proxy::set_server`] chose last, through its [`Outbound`]; bytes are
//! copied both ways until either side closes. A UDP association ([`udp`]) carries
//! datagrams through the same server for as long as its control connection lives.
//! While Auto waits for a check's verdict after a failed connect, new connections
//! are held ([`hold`]).
//!
//! Bounds: a request must arrive within [`REQUEST_TIMEOUT`] and fit in
//! [`MAX_REQUEST`] bytes; a client that sends anything else gets the protocol's
//! error answer (a SOCKS5 reply code, an HTTP status) and is closed. UDP's bounds
//! (queues, idle timeout) are [`udp`]'s.

mod error;
pub mod hold;
pub mod http;
pub mod http_relay;
pub mod udp;

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use switchyard_proto::Address;
use switchyard_proto::socks5::{self, Greeting, MethodSelection, Reply, ReplyCode, Request};
use switchyard_transport::BoxIo;
use switchyard_transport::listen::{BindError, BindOptions, Listener, TcpListener};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

use crate::meter::{Meter, Metered};
use crate::outbound::Outbound;
pub(crate) use error::ServeError;
use hold::{BRIDGE_AFTER, Gate, HOLD_LIMIT, HoldState, STANDBY_DIAL};
use udp::{UDP_IDLE_TIMEOUT, UdpCounters, UdpStats};

/// How long a client has to send its request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The most bytes a request (SOCKS5 greeting and request, or an HTTP request head) takes.
pub const MAX_REQUEST: usize = 8 * 1024;

/// The proxy: a listener and the server new connections go through.
#[derive(Debug, Clone)]
pub struct Proxy {
    addr: SocketAddr,
    server: Arc<RwLock<Option<Arc<Outbound>>>>,
    meter: Arc<Meter>,
    /// Bumped by a switch that closes the connections open through the old server.
    generation: Arc<watch::Sender<u64>>,
    /// Never bumped: what a connection a server standing by carried waits on, so a
    /// switch (most likely to that very server) does not cut it ([`hold`]).
    kept: Arc<watch::Sender<u64>>,
    /// Reports connections that could not be made to Auto and holds new ones while
    /// Auto waits for a check's verdict ([`hold`]).
    gate: Arc<Gate>,
    /// What the UDP associations saw.
    udp: Arc<UdpCounters>,
}

impl Proxy {
    /// Listens on `listen` and serves until the runtime ends. The port is bound by
    /// the shared transport layer ([`TcpListener`]); its error names the port.
    pub async fn start(listen: SocketAddr) -> Result<Self, BindError> {
        Self::start_with(listen, None).await
    }

    /// Like [`Self::start`]; the identity ([`Outbound::identity`]) of every server a
    /// connection could not be made through goes to `failed` (Auto's "the core
    /// couldn't connect").
    pub async fn start_with(
        listen: SocketAddr,
        failed: Option<mpsc::UnboundedSender<String>>,
    ) -> Result<Self, BindError> {
        let listener = TcpListener::bind(listen, BindOptions::default())?;
        let addr = listener.local_addr().map_err(|source| BindError::Listen {
            addr: listen,
            source,
        })?;
        let proxy = Self {
            addr,
            server: Arc::default(),
            meter: Arc::default(),
            generation: Arc::new(watch::channel(0).0),
            kept: Arc::new(watch::channel(0).0),
            gate: Arc::new(Gate::new(failed)),
            udp: Arc::default(),
        };
        let p = proxy.clone();
        tokio::spawn(async move {
            loop {
                match listener.accept().await {
                    Ok((s, peer)) => {
                        let p = p.clone();
                        tokio::spawn(async move {
                            if let Err(e) = p.serve(s).await {
                                tracing::debug!(%peer, "proxy connection: {e}");
                            }
                        });
                    }
                    Err(e) => {
                        tracing::warn!("proxy accept: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            }
        });
        Ok(proxy)
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server new connections go through from now on.
    pub fn set_server(&self, server: Option<Arc<Outbound>>) {
        *self.server.write().unwrap_or_else(|p| p.into_inner()) = server;
    }

    /// Switches to `server`; with `close`, the connections open through the old one
    /// are closed (apps reconnect, through the new server).
    pub fn switch(&self, server: Arc<Outbound>, close: bool) {
        self.set_server(Some(server));
        if close {
            self.generation.send_modify(|g| *g += 1);
        }
    }

    /// What Auto's driver says about holding new connections (see [`hold`]).
    pub fn set_hold(&self, state: HoldState) {
        self.gate.set(state);
    }

    /// The traffic meter of every connection.
    pub fn meter(&self) -> &Arc<Meter> {
        &self.meter
    }

    /// What the UDP associations saw so far (datagrams dropped, and why).
    pub fn udp_stats(&self) -> UdpStats {
        self.udp.stats()
    }

    /// The server new connections go through.
    pub fn server(&self) -> Option<Arc<Outbound>> {
        self.server
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Serves one app's connection (Nagle already off: the listener's).
    async fn serve(&self, mut client: TcpStream) -> Result<(), ServeError> {
        let mut buf = Vec::with_capacity(512);
        let request = tokio::time::timeout(REQUEST_TIMEOUT, read_request(&mut client, &mut buf))
            .await
            .map_err(|_| ServeError::RequestTimeout)??;
        let (kind, destination, rest) = match request {
            Asked::Connect(kind, destination, rest) => (kind, destination, rest),
            Asked::Associate(hint) => {
                return udp::associate(self, client, hint, UDP_IDLE_TIMEOUT).await;
            }
            Asked::Plain(request, rest) => {
                return http_relay::serve(self, client, request, rest).await;
            }
        };
        let (mut remote, mut closed) = match self.dial(&destination, rest.len()).await {
            Ok(r) => r,
            Err(e) => {
                refuse(&mut client, kind, &e.to_string()).await;
                return Err(e.into());
            }
        };
        match kind {
            Kind::Socks => {
                let mut out = Vec::new();
                Reply {
                    code: ReplyCode::Succeeded,
                    bound: Address::Ip(SocketAddr::from(([0, 0, 0, 0], 0))),
                }
                .encode(&mut out);
                client.write_all(&out).await?;
            }
            Kind::Http => {
                client
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await?;
            }
        }
        if !rest.is_empty() {
            remote.write_all(&rest).await?;
        }
        tokio::select! {
            r = tokio::io::copy_bidirectional(&mut client, &mut remote) => {
                Ok(r.map(drop)?)
            }
            _ = closed.changed() => Err(ServeError::Switched),
        }
    }

    /// A stream to `destination` through the current server, metered, and the
    /// receiver that says when a switch closes it. New connections wait while Auto
    /// holds them ([`hold`]), and past [`BRIDGE_AFTER`] go through a server standing
    /// by; a dial that fails is reported to Auto, waits for its verdict (or a standby
    /// server) and is made once more when Auto moved to another server meanwhile.
    /// `first_len`: the bytes the app already sent with its request.
    async fn dial(
        &self,
        destination: &Address,
        first_len: usize,
    ) -> Result<(Metered<BoxIo>, watch::Receiver<u64>), DialError> {
        let cap = tokio::time::Instant::now() + HOLD_LIMIT;
        if let Some(carried) = self.standby(destination, cap).await {
            return Ok(carried);
        }
        self.gate.wait(cap).await;
        let Some(server) = self.server() else {
            return Err(DialError::NoServer);
        };
        let closed = self.generation.subscribe();
        let error = match server.connect(destination).await {
            Ok(remote) => return Ok((Metered::new(remote, self.meter.clone()), closed)),
            Err(e) => DialError::Server(e),
        };
        // The app tried to go out: for Auto the device is in use (its network-loss
        // retry waits for that), and nothing came back.
        self.meter
            .add_unsent(u64::try_from(first_len).unwrap_or(u64::MAX).max(1));
        let Some(n) = self.gate.report(server.identity()) else {
            return Err(error);
        };
        self.gate.heard(n, cap).await;
        if let Some(carried) = self.standby(destination, cap).await {
            return Ok(carried);
        }
        self.gate.wait(cap).await;
        let next = match self.server() {
            Some(next) if !Arc::ptr_eq(&next, &server) => next,
            // Auto stayed on it (or decided nothing in time): fail as before.
            _ => return Err(error),
        };
        let closed = self.generation.subscribe();
        match next.connect(destination).await {
            Ok(remote) => Ok((Metered::new(remote, self.meter.clone()), closed)),
            Err(e) => {
                let _ = self.gate.report(next.identity());
                Err(DialError::Server(e))
            }
        }
    }

    /// While new connections are held: waits up to [`BRIDGE_AFTER`] for the verdict,
    /// then dials `destination` through the servers standing by in turn, each within
    /// [`STANDBY_DIAL`]. The first that connects carries it, and no switch closes it.
    /// `None`: nothing held (any more), or no server standing by took it (the
    /// connection then waits for the verdict as before). Their failures are not
    /// reported: Auto checks servers itself, and these are not the current one.
    async fn standby(
        &self,
        destination: &Address,
        cap: tokio::time::Instant,
    ) -> Option<(Metered<BoxIo>, watch::Receiver<u64>)> {
        let by = (tokio::time::Instant::now() + BRIDGE_AFTER).min(cap);
        for server in self.gate.standby_after(by).await {
            match tokio::time::timeout(STANDBY_DIAL, server.connect(destination)).await {
                Ok(Ok(remote)) => {
                    tracing::debug!(server = %server.entry().name, "a held connection carried by a server standing by");
                    return Some((
                        Metered::new(remote, self.meter.clone()),
                        self.kept.subscribe(),
                    ));
                }
                Ok(Err(e)) => tracing::debug!("standing by: {e}"),
                Err(_) => {
                    tracing::debug!(server = %server.entry().name, "standing by: no answer within {STANDBY_DIAL:?}")
                }
            }
        }
        None
    }
}

/// Why a connection could not be made through a server.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DialError {
    /// Auto has not chosen a server (yet).
    #[error("no server chosen")]
    NoServer,
    /// The server's steps failed (the error names the server and the step).
    #[error(transparent)]
    Server(#[from] crate::outbound::OutboundError),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Socks,
    Http,
}

/// What a client asked for.
#[derive(Debug)]
enum Asked {
    /// A stream to the destination; the bytes that came after the request.
    Connect(Kind, Address, Vec<u8>),
    /// A SOCKS5 UDP association; the address the client says it sends from.
    Associate(Address),
    /// A plain HTTP proxy request (`GET http://…`); the bytes that came after its head.
    Plain(http::ProxyRequest, Vec<u8>),
}

/// Reads a SOCKS5 request, an HTTP CONNECT or a plain HTTP proxy request.
async fn read_request(client: &mut TcpStream, buf: &mut Vec<u8>) -> Result<Asked, ServeError> {
    fill(client, buf, 1).await?;
    if buf[0] == socks5::VERSION {
        let greeting = loop {
            match Greeting::parse(buf)? {
                Some((g, used)) => {
                    buf.drain(..used);
                    break g;
                }
                None => fill(client, buf, buf.len() + 1).await?,
            }
        };
        let method = greeting.select(false);
        let mut out = Vec::new();
        MethodSelection(method).encode(&mut out);
        client.write_all(&out).await?;
        if method != socks5::METHOD_NO_AUTH {
            return Err(ServeError::NoAuthMethod);
        }
        loop {
            match Request::parse(buf) {
                Ok(Some((r, used))) => {
                    buf.drain(..used);
                    return Ok(match r.command {
                        socks5::Command::Connect => {
                            Asked::Connect(Kind::Socks, r.destination, std::mem::take(buf))
                        }
                        socks5::Command::UdpAssociate => Asked::Associate(r.destination),
                    });
                }
                Ok(None) => fill(client, buf, buf.len() + 1).await?,
                Err(e) => {
                    if let Some(code) = e.reply_code() {
                        socks_reply(client, code).await;
                    }
                    return Err(e.into());
                }
            }
        }
    }
    loop {
        match parse_connect(buf) {
            Ok(Some((destination, used))) => {
                buf.drain(..used);
                return Ok(Asked::Connect(Kind::Http, destination, std::mem::take(buf)));
            }
            Ok(None) => fill(client, buf, buf.len() + 1).await?,
            Err(ConnectError::Method(_)) => match http::parse_request(buf) {
                Ok(Some(request)) => {
                    buf.drain(..request.head_len);
                    return Ok(Asked::Plain(request, std::mem::take(buf)));
                }
                // Whole for CONNECT's parser means whole here too.
                Ok(None) => return Err(ServeError::HeadVanished),
                Err(e) => {
                    let _ = client.write_all(e.answer().as_bytes()).await;
                    return Err(e.into());
                }
            },
            Err(e) => {
                let _ = client.write_all(e.answer().as_bytes()).await;
                return Err(e.into());
            }
        }
    }
}

/// Why an HTTP request is not a CONNECT this proxy serves.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// Not HTTP/1.x, or a malformed head.
    #[error("not an HTTP request: {0}")]
    Malformed(String),
    /// Another method than CONNECT.
    #[error("only CONNECT is supported over HTTP, not {0}")]
    Method(String),
    /// The target is not `host:port`.
    #[error("bad CONNECT target {0:?}")]
    Target(String),
}

impl ConnectError {
    /// The HTTP answer the client gets.
    pub fn answer(&self) -> &'static str {
        match self {
            Self::Method(_) => {
                "HTTP/1.1 405 Method Not Allowed\r\nAllow: CONNECT\r\nContent-Length: 0\r\n\r\n"
            }
            _ => "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
        }
    }
}

/// Reads an HTTP CONNECT head at the start of `buf` (through `httparse`): the
/// destination and the head's length, `None` while the head is not whole.
pub fn parse_connect(buf: &[u8]) -> Result<Option<(Address, usize)>, ConnectError> {
    let mut headers = [httparse::EMPTY_HEADER; http::MAX_REQUEST_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(buf) {
        Ok(httparse::Status::Complete(used)) => {
            let method = req.method.unwrap_or_default();
            if method != "CONNECT" {
                return Err(ConnectError::Method(method.to_owned()));
            }
            let target = req.path.unwrap_or_default();
            let destination =
                authority(target).ok_or_else(|| ConnectError::Target(target.to_owned()))?;
            Ok(Some((destination, used)))
        }
        Ok(httparse::Status::Partial) => Ok(None),
        Err(e) => Err(ConnectError::Malformed(e.to_string())),
    }
}

/// `host:port` (IPv6 bracketed) as an address.
fn authority(target: &str) -> Option<Address> {
    let (host, port) = target.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => Some(Address::Ip(SocketAddr::new(ip, port))),
        Err(_) => Address::domain(host, port).ok(),
    }
}

/// Reads until `buf` holds at least `want` bytes (at most [`MAX_REQUEST`]).
async fn fill(client: &mut TcpStream, buf: &mut Vec<u8>, want: usize) -> Result<(), ServeError> {
    while buf.len() < want {
        if buf.len() >= MAX_REQUEST {
            return Err(ServeError::TooLong);
        }
        let mut chunk = [0u8; 1024];
        let room = (MAX_REQUEST - buf.len()).min(chunk.len());
        let n = client.read(&mut chunk[..room]).await?;
        if n == 0 {
            return Err(ServeError::ClosedEarly);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Ok(())
}

async fn socks_reply(client: &mut TcpStream, code: ReplyCode) {
    socks_reply_bound(client, code, None).await;
}

/// Sends a SOCKS5 reply with `bound` (`0.0.0.0:0` when `None`); false when the
/// client is gone.
async fn socks_reply_bound(
    client: &mut TcpStream,
    code: ReplyCode,
    bound: Option<SocketAddr>,
) -> bool {
    let mut out = Vec::new();
    Reply {
        code,
        bound: Address::Ip(bound.unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)))),
    }
    .encode(&mut out);
    client.write_all(&out).await.is_ok()
}

/// Tells the client its request failed, in its protocol.
async fn refuse(client: &mut TcpStream, kind: Kind, why: &str) {
    match kind {
        Kind::Socks => socks_reply(client, ReplyCode::GeneralFailure).await,
        Kind::Http => {
            let body = format!("{why}\n");
            let head = format!(
                "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            let _ = client.write_all(head.as_bytes()).await;
            let _ = client.write_all(body.as_bytes()).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_heads_are_read_whole_or_refused_with_the_right_answer() {
        let head = b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\nrest";
        assert_eq!(
            parse_connect(head),
            Ok(Some((
                Address::domain("example.com", 443).unwrap(),
                head.len() - 4
            )))
        );
        assert_eq!(parse_connect(&head[..20]), Ok(None));
        let get = parse_connect(b"GET / HTTP/1.1\r\n\r\n").unwrap_err();
        assert!(get.answer().starts_with("HTTP/1.1 405 "), "{get}");
        let bad = parse_connect(b"CONNECT nowhere HTTP/1.1\r\n\r\n").unwrap_err();
        assert_eq!(bad, ConnectError::Target("nowhere".into()));
        assert!(bad.answer().starts_with("HTTP/1.1 400 "));
        assert!(matches!(
            parse_connect(b"\x00\x01 junk\r\n\r\n"),
            Err(ConnectError::Malformed(_))
        ));
    }

    #[test]
    fn connect_targets_are_read_as_addresses() {
        assert_eq!(
            authority("example.com:443"),
            Some(Address::domain("example.com", 443).unwrap())
        );
        assert_eq!(
            authority("[2001:db8::1]:8443"),
            Some(Address::Ip("[2001:db8::1]:8443".parse().unwrap()))
        );
        assert_eq!(authority("example.com"), None);
        assert_eq!(authority("example.com:99999"), None);
    }
}
