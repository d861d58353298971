//! XTLS Vision on a VLESS connection over TLS or REALITY: the server's side of
//! [`switchyard_proto::vision`].
//!
//! [`Vision`] sits between the TLS session and the relay. Uplink, it reads the
//! client's blocks out of TLS; when the client's last block says *direct*, it takes
//! what rustls has decrypted but not handed out, then reads the TCP socket itself:
//! the client's inner TLS records come raw from then on. Downlink, it writes the
//! target's bytes as blocks (the VLESS response header first, unpadded); when the
//! target's TLS 1.3 handshake is over and its first application data goes out in a
//! *direct* block, it flushes TLS and writes the TCP socket itself from then on.
//! [`Records`] under rustls makes sure no raw byte was read as TLS.
//!
//! The two directions switch independently; a connection whose inner traffic is not
//! TLS 1.3 ends its padding after a few packets and stays in TLS.

use std::io::{self, Read};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};

use ring::rand::{SecureRandom, SystemRandom};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

use switchyard_proto::vision::{Filter, Padder, Status, Unpadder};
use switchyard_tunnel::pump::{Activity, Buffers, Ended, Pumped, pump};
use switchyard_tunnel::splice;
use tokio_util::sync::CancellationToken;

use super::Prefixed;
use super::records::Records;
use super::state::InboundState;

/// A TLS session over TCP whose socket Vision can reach.
pub(crate) type RawTls = TlsStream<Records<Prefixed<TcpStream>>>;

/// The most of one write taken into blocks at a time.
const MAX_WRITE: usize = 64 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reading {
    /// The client's blocks, in TLS.
    Blocks,
    /// Plain, in TLS.
    Tls,
    /// Raw on TCP.
    Raw,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Writing {
    /// Blocks, in TLS.
    Blocks,
    /// Plain, in TLS.
    Tls,
    /// The direct block is written: TLS is flushed, then raw.
    ToRaw,
    /// Raw on TCP.
    Raw,
}

/// A VLESS stream with the Vision flow.
pub(crate) struct Vision {
    tls: RawTls,
    filter: Filter,
    unpadder: Unpadder,
    reading: Reading,
    /// Content read but not yet handed out.
    content: Vec<u8>,
    content_at: usize,
    padder: Padder,
    writing: Writing,
    /// Bytes for TLS not yet taken by it: the response header, blocks.
    out: Vec<u8>,
    out_at: usize,
    /// The inbound's counters.
    state: Arc<InboundState>,
    /// Set once a direction is raw on TCP with nothing of it left here or in TLS.
    raw: Arc<Raw>,
}

/// Which directions of a [`Vision`] stream are raw on its TCP socket with nothing of
/// theirs left in Vision or TLS: from then on a relay may carry them inside the
/// kernel on a second handle of the socket ([`Vision::socket`]).
#[derive(Debug, Default)]
pub(crate) struct Raw {
    /// The client's writes: read raw from the socket.
    pub(crate) up: AtomicBool,
    /// The node's writes: TLS flushed, written raw.
    pub(crate) down: AtomicBool,
}

impl Vision {
    /// Vision on `tls` for the user `uuid`: `response` (the VLESS response header)
    /// goes first, unpadded; `first` are the bytes that came behind the request
    /// header (the client's first blocks).
    pub(crate) fn new(
        tls: RawTls,
        uuid: [u8; 16],
        response: &[u8],
        first: &[u8],
        state: Arc<InboundState>,
    ) -> io::Result<Self> {
        state.vision.fetch_add(1, Ordering::Relaxed);
        let mut v = Self {
            tls,
            filter: Filter::default(),
            unpadder: Unpadder::new(uuid),
            reading: Reading::Blocks,
            content: Vec::new(),
            content_at: 0,
            padder: Padder::new(uuid),
            writing: Writing::Blocks,
            out: response.to_vec(),
            out_at: 0,
            state,
            raw: Arc::default(),
        };
        if !first.is_empty() {
            v.take_blocks(first)?;
        }
        Ok(v)
    }

    /// Reads `data` of the client's blocks into `content` and follows its status.
    fn take_blocks(&mut self, data: &[u8]) -> io::Result<()> {
        let before = self.content.len();
        let status = self
            .unpadder
            .push(data, &mut self.content)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        if self.filter.watching() && self.content.len() > before {
            self.filter.observe(&self.content[before..]);
        }
        match status {
            Status::Blocks => {}
            Status::Ended | Status::NotPadded => {
                self.reading = Reading::Tls;
                self.tls.get_mut().0.unbound();
            }
            Status::Direct => {
                // What rustls decrypted behind the last block is the client's too.
                let mut more = [0u8; 4096];
                loop {
                    match self.tls.get_mut().1.reader().read(&mut more) {
                        Ok(0) => break,
                        Ok(n) => self.content.extend_from_slice(&more[..n]),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) => return Err(e),
                    }
                }
                self.reading = Reading::Raw;
                self.tls.get_mut().0.unbound();
                self.state.vision_direct_up.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// Hands `out` to TLS.
    fn poll_out(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.out_at < self.out.len() {
            let n = ready!(Pin::new(&mut self.tls).poll_write(cx, &self.out[self.out_at..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.out_at += n;
        }
        // Once the padding is over nothing is staged here again: give the room back.
        if self.padder.is_padding() {
            self.out.clear();
        } else {
            self.out = Vec::new();
        }
        self.out_at = 0;
        Poll::Ready(Ok(()))
    }

    /// Everything for TLS is out of TLS too; then writes go raw.
    fn poll_to_raw(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.writing == Writing::ToRaw {
            ready!(Pin::new(&mut self.tls).poll_flush(cx))?;
            self.writing = Writing::Raw;
            self.raw.down.store(true, Ordering::Release);
        }
        Poll::Ready(Ok(()))
    }

    fn raw(&mut self) -> Pin<&mut Records<Prefixed<TcpStream>>> {
        Pin::new(self.tls.get_mut().0)
    }

    /// Which directions have gone raw ([`Raw`]).
    pub(crate) fn raw_directions(&self) -> Arc<Raw> {
        Arc::clone(&self.raw)
    }

    /// A second handle of the client's TCP socket, registered on its own, for moving
    /// a raw direction inside the kernel while this stream keeps the other.
    pub(crate) fn socket(&self) -> io::Result<TcpStream> {
        splice::second_handle(self.tls.get_ref().0.get_ref().get_ref())
    }
}

/// A uniform draw below `n` for padding lengths.
fn draw(n: u32) -> u32 {
    let mut b = [0u8; 4];
    // The system's generator does not fail on Linux; zeros would only mean short padding.
    let _ = SystemRandom::new().fill(&mut b);
    u32::from_le_bytes(b) % n.max(1)
}

impl AsyncRead for Vision {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.content_at < this.content.len() {
                let n = (this.content.len() - this.content_at).min(buf.remaining());
                buf.put_slice(&this.content[this.content_at..this.content_at + n]);
                this.content_at += n;
                if this.content_at == this.content.len() {
                    this.content = Vec::new();
                    this.content_at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            match this.reading {
                Reading::Raw => {
                    // Nothing of the client's is left here (drained above) nor in the
                    // replayed prefix: the socket holds all the rest.
                    if this.tls.get_ref().0.get_ref().buffered() == 0 {
                        this.raw.up.store(true, Ordering::Release);
                    }
                    return this.raw().poll_read(cx, buf);
                }
                Reading::Tls => return Pin::new(&mut this.tls).poll_read(cx, buf),
                Reading::Blocks => {
                    // Read into the caller's room, then take the blocks out of it: an
                    // idle poll (the relay polls this side whenever the other moves)
                    // costs nothing, and only bytes that came are copied.
                    let start = buf.filled().len();
                    ready!(Pin::new(&mut this.tls).poll_read(cx, buf))?;
                    if buf.filled().len() == start {
                        return Poll::Ready(Ok(())); // the end
                    }
                    let came = buf.filled()[start..].to_vec();
                    buf.set_filled(start);
                    this.take_blocks(&came)?;
                }
            }
        }
    }
}

impl AsyncWrite for Vision {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        ready!(this.poll_out(cx))?;
        ready!(this.poll_to_raw(cx))?;
        match this.writing {
            Writing::Raw | Writing::ToRaw => this.raw().poll_write(cx, data),
            Writing::Tls => Pin::new(&mut this.tls).poll_write(cx, data),
            Writing::Blocks => {
                let take = data.len().min(MAX_WRITE);
                let direct =
                    this.padder
                        .write(&mut this.filter, &data[..take], &mut this.out, &mut draw);
                if direct {
                    this.writing = Writing::ToRaw;
                    this.state
                        .vision_direct_down
                        .fetch_add(1, Ordering::Relaxed);
                } else if !this.padder.is_padding() {
                    this.writing = Writing::Tls;
                }
                // The bytes are taken; pushing them on may wait for the socket.
                if let Poll::Ready(Err(e)) = this.poll_out(cx) {
                    return Poll::Ready(Err(e));
                }
                Poll::Ready(Ok(take))
            }
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        ready!(this.poll_out(cx))?;
        ready!(this.poll_to_raw(cx))?;
        match this.writing {
            Writing::Raw | Writing::ToRaw => this.raw().poll_flush(cx),
            Writing::Blocks | Writing::Tls => Pin::new(&mut this.tls).poll_flush(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        ready!(this.poll_out(cx))?;
        ready!(this.poll_to_raw(cx))?;
        match this.writing {
            Writing::Raw | Writing::ToRaw => this.raw().poll_shutdown(cx),
            Writing::Blocks | Writing::Tls => Pin::new(&mut this.tls).poll_shutdown(cx),
        }
    }
}

/// Relays a Vision stream and a bare TCP destination: through the pump while a
/// direction is in TLS, then, once Vision has made it raw ([`Raw`]), inside the
/// kernel from socket to socket, as Xray does on Linux. Each direction switches on
/// its own; the counts, half-closes, idle timeout and cancellation are the pump's.
/// `spliced` counts the connection once, when its first direction goes in.
pub(crate) async fn relay(
    spliced: &std::sync::atomic::AtomicU64,
    vision: Vision,
    mut remote: TcpStream,
    buffers: Buffers,
    idle: std::time::Duration,
    cancel: &CancellationToken,
    count: impl Fn(u64, u64) + Send + Sync,
) -> io::Result<Ended> {
    let raw = vision.raw_directions();
    let user = vision.socket()?;
    let activity = Activity::new();
    let (ur, uw) = tokio::io::split(vision);
    let (mut rr, mut rw) = remote.split();
    let first = AtomicBool::new(true);
    let switched = || {
        if first.swap(false, Ordering::Relaxed) {
            spliced.fetch_add(1, Ordering::Relaxed);
        }
    };
    let (count, user, raw, switched) = (&count, &user, &raw, &switched);
    let activity = &activity;
    switchyard_tunnel::both_ways!(
        async move {
            let up = move |n| count(n, 0);
            let pumped = pump(ur, &mut rw, buffers.up, activity, up, Some(&raw.up)).await?;
            if pumped == Pumped::Switched {
                switched();
                splice::one_way(user, rw.as_ref(), activity, up).await?;
            }
            io::Result::Ok(())
        },
        async move {
            let down = move |n| count(0, n);
            let pumped = pump(&mut rr, uw, buffers.down, activity, down, Some(&raw.down)).await?;
            if pumped == Pumped::Switched {
                switched();
                splice::one_way(rr.as_ref(), user, activity, down).await?;
            }
            io::Result::Ok(())
        },
        activity,
        idle,
        cancel
    )
}
