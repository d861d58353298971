//! A Shadowsocks 2022 stream to the destination: the request's head goes out in one
//! write when connecting (salt, identity headers, both header chunks; random padding
//! and no payload, which SIP022 allows), then every write is sealed as chunks and
//! every read opened (`switchyard_proto::shadowsocks::tcp` does the bytes; this is
//! its driver). A response that does not check out (another key, a stale or
//! replayed header, a tampered chunk) is an [`std::io::ErrorKind::InvalidData`]
//! error naming what was wrong, never a panic.

use std::io;
use std::ops::Range;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use switchyard_proto::Address;
use switchyard_proto::shadowsocks::keys::ClientKeys;
use switchyard_proto::shadowsocks::tcp::{self, MAX_CHUNK, MAX_PADDING, Opener, Sealer};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};

use super::{StepError, fill_random, unix_now};

/// Bytes read from the server at a time.
const READ_CHUNK: usize = 16 * 1024;

/// Writes the request's head to `stream` and returns the stream to `destination`.
pub(super) async fn connect<S: AsyncRead + AsyncWrite + Unpin>(
    keys: &ClientKeys,
    mut stream: S,
    destination: &Address,
) -> Result<SsStream<S>, StepError> {
    let mut salt = vec![0u8; keys.method().key_len()];
    fill_random(&mut salt);
    let mut r = [0u8; 2];
    fill_random(&mut r);
    let padding = 1 + u16::from_be_bytes(r) % MAX_PADDING;
    let mut head = Vec::with_capacity(salt.len() + 64 + usize::from(padding));
    let (sealer, opener) = tcp::request(
        keys,
        &salt,
        &tcp::Request {
            destination,
            padding,
            payload: &[],
            now: unix_now(),
        },
        &mut head,
    )?;
    stream.write_all(&head).await?;
    Ok(SsStream::new(stream, sealer, opener))
}

/// A Shadowsocks 2022 stream over `S` (public for the fuzz target).
pub struct SsStream<S> {
    inner: S,
    sealer: Sealer,
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
            sealer,
            opener,
            out: Vec::new(),
            out_at: 0,
            input: Vec::with_capacity(READ_CHUNK),
            in_at: 0,
            plain: 0..0,
            eof: false,
        }
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
                    "shadowsocks: the server closed inside its response",
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
        this.sealer.seal(&buf[..n], &mut this.out);
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
    use switchyard_proto::shadowsocks::Method;
    use switchyard_proto::shadowsocks::tcp::Response;
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
}
