//! Why serving one app connection ended in error (logged; the app itself got its
//! SOCKS5 reply or HTTP answer already).

use std::io;
use std::net::IpAddr;
use std::time::Duration;

use switchyard_proto::socks5::Socks5Error;

use super::http::{RequestError, ResponseError};
use super::{ConnectError, DialError, MAX_REQUEST};
use crate::outbound::OutboundError;

/// Why serving an app's connection (TCP, a UDP association, plain HTTP) ended in error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ServeError {
    /// No whole first request within [`super::REQUEST_TIMEOUT`].
    #[error("no request in time")]
    RequestTimeout,
    /// No whole next request on a kept HTTP connection within
    /// [`super::REQUEST_TIMEOUT`].
    #[error("no whole request in time")]
    NextRequestTimeout,
    /// The app closed before its request was whole.
    #[error("the client closed before its request was whole")]
    ClosedEarly,
    /// The request is longer than [`MAX_REQUEST`].
    #[error("a request longer than {MAX_REQUEST} bytes")]
    TooLong,
    /// A malformed SOCKS5 greeting or request.
    #[error(transparent)]
    Socks5(#[from] Socks5Error),
    /// The SOCKS5 client wants authentication, which this proxy does not offer.
    #[error("the SOCKS5 client offers no method without authentication")]
    NoAuthMethod,
    /// The HTTP head parsed whole as a CONNECT and then not as a request.
    #[error("an HTTP head read whole and then not")]
    HeadVanished,
    /// An HTTP CONNECT this proxy does not serve.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// A plain HTTP request this proxy does not relay.
    #[error(transparent)]
    Request(#[from] RequestError),
    /// The origin's HTTP answer is not one this proxy relays.
    #[error(transparent)]
    Response(#[from] ResponseError),
    /// No way out through the current server.
    #[error(transparent)]
    Dial(#[from] DialError),
    /// Reading from or writing to the app or the destination failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// A switch of server closed it.
    #[error("closed by a switch of server")]
    Switched,
    /// A UDP association with no server chosen.
    #[error("no server chosen")]
    NoServer,
    /// The association's relay socket can't be bound.
    #[error("UDP relay socket on {ip}: {source}")]
    RelaySocket {
        /// The address the app reached the proxy on.
        ip: IpAddr,
        /// Why.
        source: io::Error,
    },
    /// The app closed before the association's reply.
    #[error("the client closed before the reply")]
    ClosedBeforeReply,
    /// The association's relay socket failed.
    #[error("UDP relay: {0}")]
    Relay(#[source] io::Error),
    /// No datagram either way for this long.
    #[error("idle for {0:?}")]
    Idle(Duration),
    /// The server's UDP way could not be opened.
    #[error(transparent)]
    Outbound(#[from] OutboundError),
    /// The server's UDP way failed.
    #[error("{server}: UDP: {source}")]
    Udp {
        /// The server's name.
        server: String,
        /// Why.
        source: io::Error,
    },
    /// A plain HTTP exchange found no origin connection.
    #[error("no origin connection")]
    NoOrigin,
    /// The origin closed before it answered.
    #[error("the origin closed without an answer")]
    OriginClosed,
    /// Reading the origin's answer failed.
    #[error("reading the origin's answer: {0}")]
    OriginRead(#[source] io::Error),
    /// Relaying the response body to the app failed.
    #[error("relaying the response body: {0}")]
    ResponseBody(#[source] io::Error),
    /// The app's connection's halves could not be put together again.
    #[error(transparent)]
    Reunite(#[from] tokio::net::tcp::ReuniteError),
}
