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
//! never a panic.
//!
//! Bulk transfer is what a user waits on, so each side costs the peer and itself as
//! few system calls as it can: a read from the socket asks for at least the rest of
//! the chunk being read and the next length chunk ([`READ_CHUNK`] at the least), and
//! a read of the stream hands on every chunk already read that fits; a write seals up
//! to [`MAX_WRITE`] bytes, in chunks of up to [`MAX_CHUNK`], into one write to the
//! socket. A write waits until the previous one's sealed bytes are out, so neither
//! side holds more than a write's worth.

use std::io;
use std::ops::Range;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use switchyard_proto::shadowsocks::Method;
use switchyard_proto::shadowsocks::tcp::{LENGTH_CHUNK, MAX_CHUNK, Opener, Response, Sealer};
use switchyard_proto::shadowsocks::tcp_server::RequestHead;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedReadHalf;

mod writer;
pub use writer::SsWriter;

/// Bytes read from the peer at a time at the least (more when a longer chunk is
/// being read).
pub const READ_CHUNK: usize = 16 * 1024;

/// Bytes read from the peer at a time at the least while no read has filled its
/// room (a quiet or chatty stream): the read buffer is zeroed as it grows, so every
/// idle connection would otherwise hold [`READ_CHUNK`].
const SMALL_READ: usize = 1024;

/// The most bytes one write seals: four whole chunks, sent with one write to the
/// socket (a peer's reads and ours both count per chunk, so whole chunks are cheapest).
pub const MAX_WRITE: usize = 4 * MAX_CHUNK;

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
    /// Bytes from the peer not opened yet, `in_at..filled`; the rest of `input` is
    /// room for the next read (zeroed once, when it grows).
    input: Vec<u8>,
    in_at: usize,
    filled: usize,
    /// Opened payload in `input` not read yet.
    plain: Range<usize>,
    eof: bool,
    /// A read has filled all the room it had: reads now ask for [`READ_CHUNK`] at
    /// the least. Until then they ask for [`SMALL_READ`], so a quiet stream holds
    /// little.
    bulk: bool,
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
            input: Vec::new(),
            in_at: 0,
            filled: 0,
            plain: 0..0,
            eof: false,
            bulk: false,
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
            filled: input.len(),
            input,
            in_at: head.consumed,
            plain: head.payload,
            eof: false,
            bulk: false,
        }
    }

    /// The stream below.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Seals `payload` into `out` in chunks of at most [`MAX_CHUNK`] bytes, the
    /// response's head (with the first chunk) first on a server's first write.
    fn seal(&mut self, payload: &[u8]) -> io::Result<()> {
        seal(&mut self.sealer, &mut self.pending, payload, &mut self.out)
    }
}

impl SsStream<TcpStream> {
    /// Parts a stream on a TCP socket into its reading side and a writer that seals
    /// straight from another socket ([`SsWriter::write_from`]), each owning its half
    /// of the socket, so the two directions of a relay run apart.
    pub fn into_split(self) -> (SsStream<OwnedReadHalf>, SsWriter) {
        let (read, write) = self.inner.into_split();
        let reader = SsStream {
            inner: read,
            sealer: None,
            pending: None,
            opener: self.opener,
            out: Vec::new(),
            out_at: 0,
            input: self.input,
            in_at: self.in_at,
            filled: self.filled,
            plain: self.plain,
            eof: self.eof,
            bulk: self.bulk,
        };
        let writer = SsWriter {
            inner: write,
            sealer: self.sealer,
            pending: self.pending,
            out: self.out[self.out_at..].to_vec(),
            slots: Vec::new(),
        };
        (reader, writer)
    }
}

/// Seals `payload` into `out` in chunks of at most [`MAX_CHUNK`] bytes; with no
/// `sealer` yet (a server's first write), the `pending` response's head first, with
/// the first chunk.
fn seal(
    sealer: &mut Option<Sealer>,
    pending: &mut Option<PendingResponse>,
    payload: &[u8],
    out: &mut Vec<u8>,
) -> io::Result<()> {
    let rest = if sealer.is_some() {
        payload
    } else {
        let Some(p) = pending.take() else {
            return Err(io::Error::other("shadowsocks: no sealer"));
        };
        let first = &payload[..payload.len().min(MAX_CHUNK)];
        let sealed = Response {
            method: p.method,
            key: &p.key,
            salt: &p.salt,
            request_salt: &p.request_salt,
            kind: 1,
            now: unix_now(),
        }
        .seal(first, out)
        .map_err(invalid)?;
        *sealer = Some(sealed);
        &payload[first.len()..]
    };
    if let Some(sealer) = sealer {
        sealer.seal(rest, out);
    }
    Ok(())
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
        let before = buf.filled().len();
        loop {
            // Hand on what is opened, then open what was read already, until `buf` is
            // full or the next chunk is not all here.
            if !this.plain.is_empty() {
                let n = this.plain.len().min(buf.remaining());
                buf.put_slice(&this.input[this.plain.start..this.plain.start + n]);
                this.plain.start += n;
                if buf.remaining() == 0 {
                    return Poll::Ready(Ok(()));
                }
            }
            let at = this.in_at;
            match this
                .opener
                .open(&mut this.input[at..this.filled], unix_now())
            {
                Ok(Some(chunk)) => {
                    this.plain = at + chunk.payload.start..at + chunk.payload.end;
                    this.in_at += chunk.consumed;
                    continue;
                }
                Ok(None) => {}
                // The opener gives the error again: what was handed on goes first.
                Err(_) if buf.filled().len() > before => return Poll::Ready(Ok(())),
                Err(e) => return Poll::Ready(Err(invalid(e))),
            }
            if buf.filled().len() > before {
                return Poll::Ready(Ok(()));
            }
            // Nothing opened is waiting: keep only the part of the next step.
            this.input.copy_within(this.in_at..this.filled, 0);
            this.filled -= this.in_at;
            this.in_at = 0;
            this.plain = 0..0;
            if this.eof {
                if this.filled == 0 && this.opener.at_boundary() {
                    return Poll::Ready(Ok(()));
                }
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "shadowsocks: the peer closed inside a chunk",
                )));
            }
            // The rest of the step, and the length chunk after it, in one read.
            let missing = this.opener.wants().saturating_sub(this.filled);
            let least = if this.bulk { READ_CHUNK } else { SMALL_READ };
            let room = this.filled + least.max(missing + LENGTH_CHUNK);
            if this.input.len() < room {
                this.input.resize(room, 0);
            }
            let mut rb = ReadBuf::new(&mut this.input[this.filled..]);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut rb))?;
            let n = rb.filled().len();
            if rb.remaining() == 0 {
                this.bulk = true;
            }
            this.filled += n;
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
        let n = buf.len().min(MAX_WRITE);
        if n < READ_CHUNK && this.out.capacity() > 2 * MAX_CHUNK {
            // The bulk is over: give back what it grew (`out` is empty here).
            this.out = Vec::new();
        }
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
    use tokio::net::TcpStream;

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
            // One write takes it all (it is less than `MAX_WRITE`).
            assert_eq!(client.write(&data).await.unwrap(), data.len());
            client.flush().await.unwrap();
            // A small write after the bulk gives back the room the bulk took.
            client.write_all(b"tail").await.unwrap();
            assert!(
                client.out.capacity() < MAX_CHUNK,
                "{}",
                client.out.capacity()
            );
            client.shutdown().await.unwrap();
        });
        let mut wire = Vec::new();
        server.read_to_end(&mut wire).await.unwrap();
        writer.await.unwrap();
        // 200,000 bytes in chunks of at most 65,535: four chunks, each with a
        // length chunk and two tags; then the tail's.
        let per_chunk = tcp::LENGTH_CHUNK + tcp::TAG_LEN;
        assert_eq!(wire.len(), 200_000 + 4 * per_chunk + 4 + per_chunk);
    }

    /// A stream below that counts the reads that brought bytes.
    struct Counting {
        inner: tokio::io::DuplexStream,
        reads: usize,
    }

    impl AsyncRead for Counting {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let before = buf.filled().len();
            ready!(Pin::new(&mut self.inner).poll_read(cx, buf))?;
            if buf.filled().len() > before {
                self.reads += 1;
            }
            Poll::Ready(Ok(()))
        }
    }

    /// A client's request made (its sealer and the response's opener) and the
    /// server's response to it beginning with `first`: its bytes on the wire and
    /// the server's sealer for more.
    fn a_response(first: &[u8]) -> (Sealer, Opener, Vec<u8>, Sealer) {
        let keys = keys();
        let salt = [0x42; 16];
        let to = Address::Ip("127.0.0.1:80".parse().unwrap());
        let request = tcp::Request {
            destination: &to,
            padding: 1,
            payload: b"",
            now: unix_now(),
        };
        let (sealer, opener) = tcp::request(&keys, &salt, &request, &mut Vec::new()).unwrap();
        let mut wire = Vec::new();
        let server = Response {
            method: Method::Aes128Gcm,
            key: keys.user(),
            salt: &[0x24; 16],
            request_salt: &salt,
            kind: 1,
            now: unix_now(),
        }
        .seal(first, &mut wire)
        .unwrap();
        (sealer, opener, wire, server)
    }

    /// Whole chunks are read at once, and a read hands on every chunk already in.
    #[tokio::test]
    async fn reads_take_whole_chunks_and_hand_on_all_that_is_in() {
        let (sealer, opener, mut wire, mut server) = a_response(b"hello ");
        for _ in 0..10 {
            server.seal(&[b's'; 1000], &mut wire);
        }
        server.seal(&vec![b'x'; 3 * MAX_CHUNK], &mut wire);
        let (a, mut b) = tokio::io::duplex(1 << 20);
        b.write_all(&wire).await.unwrap();
        drop(b);
        let inner = Counting { inner: a, reads: 0 };
        let mut client = SsStream::new(inner, sealer, opener);
        // The first read asks for little (a quiet stream holds little): it brings
        // the response's first chunk and fills its room, so the stream is in bulk.
        let mut buf = vec![0u8; 1 << 16];
        let n = client.read(&mut buf).await.unwrap();
        assert!((6..=SMALL_READ).contains(&n), "{n} bytes");
        assert!(client.bulk, "a read that filled its room");
        assert!(
            wire.len() - 3 * MAX_CHUNK < SMALL_READ + READ_CHUNK,
            "the small chunks all in the second read"
        );
        let mut rest = buf[..n].to_vec();
        client.read_to_end(&mut rest).await.unwrap();
        assert_eq!(rest.len(), 6 + 10_000 + 3 * MAX_CHUNK);
        assert_eq!(&rest[..7], b"hello s");
        // Then the small chunks in one read and one read per big chunk (16 KiB
        // reads took a dozen).
        assert!(
            client.get_ref().reads <= 6,
            "{} reads",
            client.get_ref().reads
        );
    }

    /// A stream that only ever gets a few bytes holds a small read buffer, not
    /// [`READ_CHUNK`] (every idle connection of a node holds its buffer).
    #[tokio::test]
    async fn a_quiet_stream_holds_a_small_read_buffer() {
        let (sealer, opener, wire, _) = a_response(b"hello");
        let (a, mut b) = tokio::io::duplex(1 << 16);
        b.write_all(&wire).await.unwrap();
        let mut client = SsStream::new(a, sealer, opener);
        let mut buf = [0u8; 64];
        assert_eq!(client.read(&mut buf).await.unwrap(), 5);
        assert!(!client.bulk);
        assert!(
            client.input.len() <= 2 * SMALL_READ,
            "{} bytes held",
            client.input.len()
        );
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

    /// A connected pair of TCP sockets on 127.0.0.1.
    async fn tcp_pair() -> (TcpStream, TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let near = TcpStream::connect(listener.local_addr().unwrap());
        let (near, far) = tokio::join!(near, listener.accept());
        (near.unwrap(), far.unwrap().0)
    }

    #[tokio::test]
    async fn a_parted_writer_seals_what_it_reads_in_place_for_the_client() {
        let method = Method::Aes256Gcm;
        let user = vec![8u8; 32];
        let keys = ClientKeys::from_parts(method, vec![vec![9u8; 32]], user.clone());
        let to = Address::Domain("example.com".into(), 443);
        let mut head = Vec::new();
        let request = tcp::Request {
            destination: &to,
            padding: 1,
            payload: b"",
            now: unix_now(),
        };
        let (sealer, opener) = tcp::request(&keys, &[1u8; 32], &request, &mut head).unwrap();
        let (client_tcp, server_tcp) = tcp_pair().await;
        let mut client = SsStream::new(client_tcp, sealer, opener);
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
        let response = PendingResponse {
            method,
            key: user,
            salt: vec![2u8; 32],
            request_salt: opened.salt.clone(),
        };
        let server = SsStream::serve(server_tcp, wire_in, opened, response);
        let (_reader, mut writer) = server.into_split();
        // What the destination sends: a few bytes (the response's head goes with
        // them), a bulk that fills the places, then more after they are given back.
        let (mut source, from) = tcp_pair().await;
        let bulk: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let sent = {
            let bulk = bulk.clone();
            tokio::spawn(async move {
                source.write_all(b"hi").await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                source.write_all(&bulk).await.unwrap();
                source.shutdown().await.unwrap();
            })
        };
        let carried = tokio::spawn(async move {
            let mut total = 0;
            let mut released = false;
            loop {
                let n = writer.write_from(&from).await.unwrap();
                if n == 0 {
                    writer.shutdown().await.unwrap();
                    return (total, released);
                }
                total += n;
                if total > 1_000_000 && !released {
                    assert!(writer.holds_places(), "a bulk read grows the places");
                    writer.release();
                    released = true;
                }
            }
        });
        let mut got = Vec::new();
        client.read_to_end(&mut got).await.unwrap();
        sent.await.unwrap();
        let (total, released) = carried.await.unwrap();
        assert!(released);
        assert_eq!(total, 2 + bulk.len());
        assert_eq!(&got[..2], b"hi");
        assert!(got[2..] == bulk[..], "the bulk arrived changed");
    }
}
