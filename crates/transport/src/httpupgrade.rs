//! HTTPUpgrade as a byte stream: one HTTP/1.1 upgrade
//! ([`switchyard_proto::httpupgrade`]), then the bytes as they are, no framing.
//!
//! The server's side mirrors [`crate::ws`]: [`read_upgrade`] reads and checks the
//! request (bounded in size and time), [`answer`] writes the `101`, [`accept`] does
//! both; a refused request keeps its stream and every byte read, for a fallback. The
//! client's side is [`connect`], used by [`crate::dial::Layer::HttpUpgrade`].

use std::io;

use switchyard_proto::httpupgrade::{self, Config, Request};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use crate::header::read_request;
use crate::io::Prefixed;

pub use crate::header::Refused;

/// An upgrade request read whole: the request, the stream, and what the client sent
/// behind the request's head (the tunnelled stream's first bytes).
pub type Upgrade<S> = crate::header::Upgrade<S, Request>;

/// Reads an upgrade request from `stream` until `deadline`, at most
/// [`httpupgrade::MAX_HEAD_LEN`] bytes, checked against `config`.
pub async fn read_upgrade<S: AsyncRead + Unpin>(
    stream: S,
    config: &Config,
    deadline: Instant,
) -> Result<Upgrade<S>, Refused<S>> {
    read_request(stream, httpupgrade::MAX_HEAD_LEN, deadline, |b| {
        httpupgrade::parse_request(b, config)
    })
    .await
}

/// Answers `request` with `101 Switching Protocols` on `stream`.
pub async fn answer<S: AsyncWrite + Unpin>(request: &Request, stream: &mut S) -> io::Result<()> {
    let mut response = Vec::with_capacity(160);
    request.encode_response(&mut response);
    stream.write_all(&response).await?;
    stream.flush().await
}

/// Reads, checks and answers an upgrade on `stream`: [`read_upgrade`] and [`answer`]
/// in one. The stream returned reads first what came behind the request.
pub async fn accept<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    config: &Config,
    deadline: Instant,
) -> Result<Prefixed<S>, Refused<S>> {
    let Upgrade {
        request,
        mut stream,
        rest,
        ..
    } = read_upgrade(stream, config, deadline).await?;
    if let Err(e) = answer(&request, &mut stream).await {
        return Err(Refused {
            stream,
            read: Vec::new(),
            why: Some(format!("answering the upgrade: {e}")),
        });
    }
    Ok(Prefixed::new(rest, stream))
}

/// Answers a refused request `404 Not Found` and closes: what a server with no
/// fallback says.
pub async fn refuse<S: AsyncWrite + Unpin>(stream: S) {
    crate::ws::refuse(stream).await;
}

/// The client's side: sends the upgrade request for `path` on `host`, reads the
/// answer's head (at most [`httpupgrade::MAX_HEAD_LEN`] bytes) and fails unless it
/// is `101` with `Upgrade: websocket`. Bytes the server sent behind its head are read
/// first from the stream returned. No deadline of its own: the caller's covers it.
pub async fn connect<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    host: &str,
    path: &str,
) -> io::Result<Prefixed<S>> {
    let mut request = Vec::with_capacity(128 + host.len() + path.len());
    httpupgrade::encode_request(path, host, &mut request);
    stream.write_all(&request).await?;
    stream.flush().await?;
    let mut buf = Vec::with_capacity(512);
    loop {
        if !buf.is_empty() {
            match httpupgrade::parse_response(&buf) {
                Ok(Some((_, used))) => {
                    let rest = buf.split_off(used);
                    return Ok(Prefixed::new(rest, stream));
                }
                Ok(None) => {}
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
            }
        }
        let want = 2048.min(httpupgrade::MAX_HEAD_LEN.saturating_sub(buf.len()));
        if want == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                httpupgrade::HttpUpgradeError::TooLarge,
            ));
        }
        buf.reserve(want);
        let n = (&mut stream).take(want as u64).read_buf(&mut buf).await?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection before answering the upgrade",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn config() -> Config {
        Config {
            path: "/up".into(),
            host: Some("example.test".into()),
        }
    }

    #[tokio::test]
    async fn connect_against_accept_carries_bytes_both_ways_with_early_bytes_kept() {
        let (client, server) = tokio::io::duplex(4096);
        let server = tokio::spawn(async move {
            let deadline = Instant::now() + Duration::from_secs(5);
            let mut up = match accept(server, &config(), deadline).await {
                Ok(up) => up,
                Err(refused) => panic!("refused: {:?}", refused.why),
            };
            let mut got = [0u8; 5];
            up.read_exact(&mut got).await.unwrap();
            up.write_all(b"back:").await.unwrap();
            up.write_all(&got).await.unwrap();
            up.flush().await.unwrap();
        });
        let mut io = connect(client, "example.test", "/up").await.unwrap();
        io.write_all(b"hello").await.unwrap();
        let mut back = [0u8; 10];
        io.read_exact(&mut back).await.unwrap();
        assert_eq!(&back, b"back:hello");
        server.await.unwrap();
    }

    #[tokio::test]
    async fn a_refused_request_keeps_every_byte_for_a_fallback() {
        let (mut client, server) = tokio::io::duplex(4096);
        let wire = b"GET /other HTTP/1.1\r\nHost: example.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nrest";
        client.write_all(wire).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let Err(refused) = accept(server, &config(), deadline).await else {
            panic!("accepted the wrong path")
        };
        assert_eq!(refused.read, wire);
        assert_eq!(
            refused.why.as_deref(),
            Some("path \"/other\" is not the configured HTTPUpgrade path")
        );
        // Cut short: no reason, the bytes kept.
        let (mut client, server) = tokio::io::duplex(4096);
        client.write_all(b"GET /up HTTP/1.1\r\n").await.unwrap();
        drop(client);
        let Err(refused) = accept(server, &config(), deadline).await else {
            panic!("accepted half a request")
        };
        assert_eq!(
            (refused.read.as_slice(), refused.why),
            (&b"GET /up HTTP/1.1\r\n"[..], None)
        );
    }

    #[tokio::test]
    async fn the_server_answer_after_its_head_is_read_first() {
        let (client, mut server) = tokio::io::duplex(4096);
        let peer = tokio::spawn(async move {
            let mut head = vec![0u8; 256];
            let n = server.read(&mut head).await.unwrap();
            assert!(head[..n].starts_with(b"GET /up HTTP/1.1\r\nHost: h\r\n"));
            server
                .write_all(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\nfirst")
                .await
                .unwrap();
            server
        });
        let mut io = connect(client, "h", "/up").await.unwrap();
        let mut got = [0u8; 5];
        io.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"first");
        drop(peer.await.unwrap());
    }
}
