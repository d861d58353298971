//! A Shadowsocks 2022 TCP stream, either side: every write sealed as chunks, every
//! read opened (`switchyard_proto::shadowsocks::tcp` and `tcp_server` do the bytes;
//! this is their driver, shared by the client's outbound and the node's inbound).
//!
//! - A client's stream ([`SsStream::new`]) has written its request's head; it
//!   opens the server's response.
//! - A server's stream ([`SsStream::serve`]) has opened the request's head; the
//!   response's head goes out with the first write, stamped with the time of that
//!   write (a reply may come long after the request), and the request's initial
//!   payload is the first thing read.
//!
//! Bytes that do not check out (another key, a stale or replayed header, a tampered
//! chunk) are an [`std::io::ErrorKind::InvalidData`] error naming what was wrong,
//! never a panic. Reads go [`READ_CHUNK`] bytes at a time; writes are sealed at most
//! [`MAX_CHUNK`] bytes a chunk, and a write waits until the previous one's sealed
//! bytes are out, so neither side buffers more than a chunk or two.

use std::io;
use std::ops::Range;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use switchyard_proto::shadowsocks::Method;
use switchyard_proto::shadowsocks::tcp::{MAX_CHUNK, Opener, Response, Sealer};
use switchyard_proto::shadowsocks::tcp_server::RequestHead;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Bytes read from the peer at a time.
pub const READ_CHUNK: usize = 16 * 1024;

/// What a server's first write seals its response's head with.
pub struct PendingResponse {
    /// The method.
    pub method: Method,
    /// The user's key.
    pub key: Vec<u8>,
    /// The response's own salt (random, the method's key length).
    pub salt: Vec<u8>,
    /// The request's salt, echoed.
    pub request_salt: Vec<u8>,
}

/// Unix seconds now, from the crate's clock.
fn unix_now() -> u64 {
    u64::try_from(crate::reality::unix_now_ms() / 1000).unwrap_or(0)
}

/// A Shadowsocks 2022 stream over `S`.
pub struct SsStream<S> {
    inner: S,
    /// `None` until a server's first write has sealed the response's head.
    sealer: Option<Sealer>,
    pending: Option<PendingResponse>,
    opener: Opener,
    /// Sealed bytes not written yet, from `out_at`.
    out: Vec<u8>,
    out_at: usize,
    /// Bytes from the server not opened yet, from `in_at`.
    input: Vec<u8>,
    in_at: usize,
    /// Opened payload in `input` not read yet.
    plain: Range<usize>,
    eof: bool,
}

impl<S> SsStream<S> {
    /// A stream whose request's head is already out: `sealer` seals what follows,
    /// `opener` opens the response.
    pub fn new(inner: S, sealer: Sealer, opener: Opener) -> Self {
        Self {
            inner,
            sealer: Some(sealer),
            pending: None,
            opener,
            out: Vec::new(),
            out_at: 0,
            input: Vec::with_capacity(READ_CHUNK),
            in_at: 0,
            plain: 0..0,
            eof: false,
        }
    }

    /// A server's stream: `input` holds the bytes read so far, whose first
    /// `head.consumed` were the request's head (opened in place, its initial payload
    /// at `head.payload`); the response goes out with the first write.
    pub fn serve(inner: S, input: Vec<u8>, head: RequestHead, response: PendingResponse) -> Self {
        Self {
            inner,
            sealer: None,
            pending: Some(response),
            opener: head.opener,
            out: Vec::new(),
            out_at: 0,
            input,
            in_at: head.consumed,
            plain: head.payload,
            eof: false,
        }
    }

    /// The stream below.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Seals `payload` (at most [`MAX_CHUNK`] bytes) into `out`, the response's head
    /// first on a server's first write.
    fn seal(&mut self, payload: &[u8]) -> io::Result<()> {
        if let Some(sealer) = &mut self.sealer {
            sealer.seal(payload, &mut self.out);
            return Ok(());
        }
        let Some(p) = self.pending.take() else {
            return Err(io::Error::other("shadowsocks: no sealer"));
        };
        let sealer = Response {
            method: p.method,
            key: &p.key,
            salt: &p.salt,
            request_salt: &p.request_salt,
            kind: 1,
            now: unix_now(),
        }
        .seal(payload, &mut self.out)
        .map_err(invalid)?;
        self.sealer = Some(sealer);
        Ok(())
    }
}

fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("shadowsocks: {e}"))
}

impl<S: AsyncWrite + Unpin> SsStream<S> {
    /// Writes out every sealed byte.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.out_at < self.out.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.out[self.out_at..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.out_at += n;
        }
        self.out.clear();
        self.out_at = 0;
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for SsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if !this.plain.is_empty() {
                let n = this.plain.len().min(buf.remaining());
                buf.put_slice(&this.input[this.plain.start..this.plain.start + n]);
                this.plain.start += n;
                return Poll::Ready(Ok(()));
            }
            let at = this.in_at;
            match this.opener.open(&mut this.input[at..], unix_now()) {
                Ok(Some(chunk)) => {
                    this.plain = at + chunk.payload.start..at + chunk.payload.end;
                    this.in_at += chunk.consumed;
                    continue;
                }
                Ok(None) => {}
                Err(e) => return Poll::Ready(Err(invalid(e))),
            }
            // Nothing opened is waiting: keep only the part of the next step.
            this.input.drain(..this.in_at);
            this.in_at = 0;
            this.plain = 0..0;
            if this.eof {
                if this.input.is_empty() && this.opener.at_boundary() {
                    return Poll::Ready(Ok(()));
                }
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "shadowsocks: the peer closed inside a chunk",
                )));
            }
            let have = this.input.len();
            this.input.resize(have + READ_CHUNK, 0);
            let mut rb = ReadBuf::new(&mut this.input[have..]);
            let r = Pin::new(&mut this.inner).poll_read(cx, &mut rb);
            let n = rb.filled().len();
            this.input.truncate(have + n);
            ready!(r)?;
            if n == 0 {
                this.eof = true;
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for SsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        ready!(this.poll_drain(cx))?;
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let n = buf.len().min(MAX_CHUNK);
        this.seal(&buf[..n])?;
        // The bytes are taken; push them on now if the stream has room.
        if let Poll::Ready(Err(e)) = this.poll_drain(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(n))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_drain(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_drain(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use switchyard_proto::Address;
    use switchyard_proto::shadowsocks::keys::ClientKeys;
    use switchyard_proto::shadowsocks::tcp;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    fn keys() -> ClientKeys {
        ClientKeys::from_parts(Method::Aes128Gcm, vec![vec![1; 16]], vec![2; 16])
    }

    /// A client stream and the server's response to it, sealed by hand.
    fn stream_and_response(
        kind: u8,
        request_salt: Option<&[u8]>,
    ) -> (
        SsStream<tokio::io::DuplexStream>,
        tokio::io::DuplexStream,
        Vec<u8>,
    ) {
        let keys = keys();
        let to = Address::Ip("127.0.0.1:80".parse().unwrap());
        let salt = [0x42; 16];
        let (sealer, opener) = tcp::request(
            &keys,
            &salt,
            &tcp::Request {
                destination: &to,
                padding: 1,
                payload: b"",
                now: unix_now(),
            },
            &mut Vec::new(),
        )
        .unwrap();
        let mut wire = Vec::new();
        let mut server = Response {
            method: Method::Aes128Gcm,
            key: keys.user(),
            salt: &[0x24; 16],
            request_salt: request_salt.unwrap_or(&salt),
            kind,
            now: unix_now(),
        }
        .seal(b"hello ", &mut wire)
        .unwrap();
        server.seal(&vec![b'x'; 100_000], &mut wire);
        let (a, b) = tokio::io::duplex(1 << 16);
        (SsStream::new(a, sealer, opener), b, wire)
    }

    #[tokio::test]
    async fn the_response_is_read_in_any_split() {
        for split in [1, 7, 33, 4096, 1 << 20] {
            let (mut client, mut server, wire) = stream_and_response(1, None);
            tokio::spawn(async move {
                for piece in wire.chunks(split) {
                    server.write_all(piece).await.unwrap();
                }
            });
            let mut got = Vec::new();
            client.read_to_end(&mut got).await.unwrap();
            assert_eq!(got.len(), 6 + 100_000, "split {split}");
            assert_eq!(&got[..6], b"hello ");
        }
    }

    #[tokio::test]
    async fn a_bad_response_is_an_error_naming_it() {
        for (kind, salt, want) in [
            (0, None, "response type 0"),
            (1, Some(&[0u8; 16][..]), "another request"),
        ] {
            let (mut client, mut server, wire) = stream_and_response(kind, salt);
            server.write_all(&wire[..200]).await.unwrap();
            let e = client.read(&mut [0u8; 64]).await.unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidData);
            assert!(e.to_string().contains(want), "{e}");
        }
        // Closed inside the response.
        let (mut client, mut server, wire) = stream_and_response(1, None);
        server.write_all(&wire[..20]).await.unwrap();
        drop(server);
        let e = client.read(&mut [0u8; 64]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    }

    /// What the client writes is sealed in chunks the server's side opens (here: our
    /// own opener of the same format, fed the client's salt as the response's).
    #[tokio::test]
    async fn writes_are_sealed_in_chunks_and_flushed() {
        let (mut client, mut server, _) = stream_and_response(1, None);
        let data = vec![7u8; 200_000];
        let writer = tokio::spawn(async move {
            client.write_all(&data).await.unwrap();
            client.shutdown().await.unwrap();
        });
        let mut wire = Vec::new();
        server.read_to_end(&mut wire).await.unwrap();
        writer.await.unwrap();
        // 200,000 bytes in chunks of at most 65,535: four chunks, each with a
        // length chunk and two tags.
        assert_eq!(wire.len(), 200_000 + 4 * (tcp::LENGTH_CHUNK + tcp::TAG_LEN));
    }

    /// A client's stream and a server's stream talk: the initial payload, then
    /// bytes both ways, the server's response head stamped at its first write.
    #[tokio::test]
    async fn a_client_and_a_server_stream_carry_bytes_both_ways() {
        let method = Method::Aes256Gcm;
        let user = vec![8u8; 32];
        let keys = ClientKeys::from_parts(method, vec![vec![9u8; 32]], user.clone());
        let to = Address::Domain("example.com".into(), 443);
        let salt = vec![1u8; 32];
        let mut head = Vec::new();
        let (sealer, opener) = tcp::request(
            &keys,
            &salt,
            &tcp::Request {
                destination: &to,
                padding: 0,
                payload: b"first",
                now: unix_now(),
            },
            &mut head,
        )
        .unwrap();
        let (a, b) = tokio::io::duplex(1 << 16);
        let mut client = SsStream::new(a, sealer, opener);
        let mut wire_in = head.clone();
        let opened = switchyard_proto::shadowsocks::tcp_server::open_request(
            method,
            &user,
            1,
            &mut wire_in,
            unix_now(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(opened.destination, to);
        let response = PendingResponse {
            method,
            key: user.clone(),
            salt: vec![2u8; 32],
            request_salt: opened.salt.clone(),
        };
        let mut server = SsStream::serve(b, wire_in, opened, response);
        let up = vec![5u8; 300_000];
        let down = vec![6u8; 200_000];
        let (up2, down2) = (up.clone(), down.clone());
        let srv = tokio::spawn(async move {
            let mut got = vec![0u8; 5 + up2.len()];
            server.read_exact(&mut got).await.unwrap();
            assert_eq!(&got[..5], b"first");
            assert_eq!(&got[5..], &up2[..]);
            server.write_all(&down2).await.unwrap();
            server.shutdown().await.unwrap();
        });
        client.write_all(&up).await.unwrap();
        let mut got = Vec::new();
        client.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, down);
        srv.await.unwrap();
    }
}
