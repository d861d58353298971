//! WebSocket inbounds as byte streams.
//!
//! The upgrade request is read and checked by the inbound (so a wrong path can go to
//! the fallback with every byte intact); after the 101 answer the framing is
//! tungstenite's, read and written as bytes by the tunnel crate's [`WsStream`].

use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::Role;

use switchyard_tunnel::ws::WsStream;

use super::Prefixed;

/// Bytes an inbound's WebSocket reads per call. 16 KiB, one TLS record, instead of
/// tungstenite's 128 KiB, which every connection, authenticated or not, would hold.
pub(crate) const READ_BUFFER: usize = 16 * 1024;

/// Wraps a stream whose upgrade has been answered; `early` holds data that came with
/// the upgrade request (early data), read first.
pub(crate) async fn server<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    early: Vec<u8>,
) -> Prefixed<WsStream<S>> {
    let mut config = switchyard_tunnel::ws::config();
    config.read_buffer_size = READ_BUFFER;
    let inner = WebSocketStream::from_raw_socket(stream, Role::Server, Some(config)).await;
    Prefixed::new(early, WsStream::new(inner))
}
