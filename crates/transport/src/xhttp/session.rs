//! The server's sessions: the table an inbound's connections share (Xray's HTTP/1.1
//! client sends a stream's POSTs on other connections than its GET), each session's
//! upload put back in order, and [`ServerStream`], one stream as bytes.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker, ready};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use http_body::{Body, Frame};
use hyper::body::Incoming;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::grpc::FRAME_PAYLOAD;

/// Limits on what a server holds for its clients.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Sessions at once in an inbound's table (4096); a request that would open one
    /// more is answered `404`.
    pub max_sessions: usize,
    /// How long a session waits for its download GET (30 s, as Xray) before it is
    /// dropped with what it holds.
    pub reap_after: Duration,
    /// Bytes of packet-up POSTs a session holds unread (4 MiB): a POST past it waits
    /// for the reader (the one the reader needs next always gets in).
    pub max_buffered_bytes: usize,
    /// How long such a POST waits before the session fails (30 s).
    pub post_wait: Duration,
    /// Bytes written to a download and not yet taken by the HTTP connection (256 KiB):
    /// a writer past it waits, so a client that does not read its download slows the
    /// stream instead of growing the server's memory.
    pub download_buffer: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_sessions: 4096,
            reap_after: Duration::from_secs(30),
            max_buffered_bytes: 4 * 1024 * 1024,
            post_wait: Duration::from_secs(30),
            download_buffer: 256 * 1024,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Why a packet was not taken into its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PushError {
    /// The session ended (its download closed, it failed or was reaped).
    #[error("the session is closed")]
    Closed,
    /// This seq was delivered or is held already.
    #[error("packet {0} was already received")]
    Duplicate(u64),
    /// The seq is more than twice `sc_max_buffered_posts` ahead of the reader, or
    /// the session holds `sc_max_buffered_posts` packets already: the session fails.
    #[error("packet {0} is too far ahead: the session fails")]
    TooFar(u64),
    /// The reader did not make room in time: the session fails.
    #[error("packet {0} waited too long for the reader: the session fails")]
    Stalled(u64),
}

/// One session's upload and state.
pub(crate) struct Session {
    state: Mutex<State>,
    /// Wakes POSTs waiting for room.
    room: Notify,
    /// Fires when the session ends (a stream-up POST's held answer ends with it).
    pub(crate) done: CancellationToken,
    max_buffered: u64,
    limits: Limits,
}

#[derive(Default)]
struct State {
    next_seq: u64,
    packets: BTreeMap<u64, Bytes>,
    buffered: usize,
    /// The packet being read.
    front: Bytes,
    /// A stream-up POST's body, once it came.
    body: Option<Incoming>,
    /// The download GET came.
    downloading: bool,
    /// No more upload: EOF once what is held is read.
    closed: bool,
    failed: Option<PushError>,
    reader: Option<Waker>,
}

impl Session {
    fn new(max_buffered: u32, limits: Limits) -> Self {
        Self {
            state: Mutex::default(),
            room: Notify::new(),
            done: CancellationToken::new(),
            max_buffered: u64::from(max_buffered.max(1)),
            limits,
        }
    }

    /// Ends the session: its reader gets EOF after what it holds, waiting POSTs
    /// fail, a held stream-up answer ends.
    pub(crate) fn close(&self) {
        let waker = {
            let mut s = lock(&self.state);
            s.closed = true;
            s.reader.take()
        };
        self.done.cancel();
        self.room.notify_waiters();
        if let Some(w) = waker {
            w.wake();
        }
    }

    fn fail(&self, s: &mut State, why: PushError) -> PushError {
        s.failed = Some(why);
        s.closed = true;
        s.packets.clear();
        s.buffered = 0;
        if let Some(w) = s.reader.take() {
            w.wake();
        }
        self.done.cancel();
        self.room.notify_waiters();
        why
    }

    /// Marks the download started; `false` when a GET came already.
    pub(crate) fn start_download(&self) -> bool {
        let mut s = lock(&self.state);
        !std::mem::replace(&mut s.downloading, true)
    }

    fn downloading(&self) -> bool {
        lock(&self.state).downloading
    }

    /// Takes a stream-up POST's body as the upload; `false` when the session has
    /// one already or ended.
    pub(crate) fn set_body(&self, body: Incoming) -> bool {
        let mut s = lock(&self.state);
        if s.body.is_some() || s.closed {
            return false;
        }
        s.body = Some(body);
        if let Some(w) = s.reader.take() {
            w.wake();
        }
        true
    }

    /// Takes packet `seq` of the upload, waiting (at most [`Limits::post_wait`]) while
    /// the session holds as much as it may and `seq` is not the one read next.
    pub(crate) async fn push(&self, seq: u64, payload: Bytes) -> Result<(), PushError> {
        let wait_until = tokio::time::Instant::now() + self.limits.post_wait;
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut s = lock(&self.state);
                // A failed session is closed too.
                if s.closed {
                    return Err(PushError::Closed);
                }
                if seq < s.next_seq || s.packets.contains_key(&seq) {
                    return Err(PushError::Duplicate(seq));
                }
                if seq - s.next_seq >= 2 * self.max_buffered {
                    return Err(self.fail(&mut s, PushError::TooFar(seq)));
                }
                let next = seq == s.next_seq;
                if !next && s.packets.len() as u64 >= self.max_buffered {
                    return Err(self.fail(&mut s, PushError::TooFar(seq)));
                }
                if next || s.buffered + payload.len() <= self.limits.max_buffered_bytes {
                    s.buffered += payload.len();
                    s.packets.insert(seq, payload);
                    if let Some(w) = s.reader.take() {
                        w.wake();
                    }
                    return Ok(());
                }
            }
            if tokio::time::timeout_at(wait_until, notified).await.is_err() {
                let mut s = lock(&self.state);
                return Err(self.fail(&mut s, PushError::Stalled(seq)));
            }
        }
    }

    /// Reads the upload in order.
    fn poll_read(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let mut s = lock(&self.state);
        loop {
            if !s.front.is_empty() {
                let n = s.front.len().min(buf.remaining());
                buf.put_slice(&s.front[..n]);
                s.front.advance(n);
                return Poll::Ready(Ok(()));
            }
            if let Some(body) = s.body.as_mut() {
                match Pin::new(body).poll_frame(cx) {
                    Poll::Ready(Some(Ok(frame))) => {
                        if let Ok(data) = frame.into_data() {
                            s.front = data;
                        }
                        continue;
                    }
                    Poll::Ready(Some(Err(e))) => {
                        s.body = None;
                        s.closed = true;
                        return Poll::Ready(Err(std::io::Error::new(
                            std::io::ErrorKind::ConnectionReset,
                            e,
                        )));
                    }
                    Poll::Ready(None) => {
                        s.body = None;
                        s.closed = true;
                        return Poll::Ready(Ok(()));
                    }
                    Poll::Pending => return Poll::Pending,
                }
            }
            let next = s.next_seq;
            if let Some(packet) = s.packets.remove(&next) {
                s.next_seq += 1;
                s.buffered -= packet.len();
                s.front = packet;
                self.room.notify_waiters();
                continue;
            }
            if let Some(why) = s.failed {
                return Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    why,
                )));
            }
            if s.closed {
                return Poll::Ready(Ok(()));
            }
            s.reader = Some(cx.waker().clone());
            return Poll::Pending;
        }
    }
}

/// Why a session could not be opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0} sessions open: no more")]
pub struct Full(pub usize);

/// An inbound's sessions by id.
pub(crate) struct Sessions {
    map: Mutex<HashMap<Box<str>, Arc<Session>>>,
    max_buffered: u32,
    limits: Limits,
}

impl Sessions {
    pub(crate) fn new(max_buffered: u32, limits: Limits) -> Self {
        Self {
            map: Mutex::default(),
            max_buffered,
            limits,
        }
    }

    /// The limits the sessions keep to.
    pub(crate) fn limits(&self) -> Limits {
        self.limits
    }

    /// How many sessions are open.
    pub(crate) fn len(&self) -> usize {
        lock(&self.map).len()
    }

    /// The session `id`, opened if new: then it is reaped unless its GET comes within
    /// [`Limits::reap_after`].
    pub(crate) fn upsert(self: &Arc<Self>, id: &str) -> Result<Arc<Session>, Full> {
        let mut map = lock(&self.map);
        if let Some(s) = map.get(id) {
            return Ok(s.clone());
        }
        if map.len() >= self.limits.max_sessions {
            return Err(Full(map.len()));
        }
        let session = Arc::new(Session::new(self.max_buffered, self.limits));
        map.insert(id.into(), session.clone());
        drop(map);
        let (table, reaped, id) = (Arc::downgrade(self), session.clone(), Box::<str>::from(id));
        let after = self.limits.reap_after;
        tokio::spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(after) => {}
                () = reaped.done.cancelled() => {}
            }
            if !reaped.downloading() {
                if let Some(table) = table.upgrade() {
                    table.remove(&id, &reaped);
                }
                reaped.close();
            }
        });
        Ok(session)
    }

    /// Takes `session` out under `id` (if it is still the one there).
    pub(crate) fn remove(&self, id: &str, session: &Arc<Session>) {
        let mut map = lock(&self.map);
        if map.get(id).is_some_and(|s| Arc::ptr_eq(s, session)) {
            map.remove(id);
        }
    }
}

/// Bytes from a stream's writer to its download response, at most a cap held.
pub(crate) struct Pipe {
    state: Mutex<PipeState>,
    cap: usize,
}

#[derive(Default)]
struct PipeState {
    buf: BytesMut,
    write_closed: bool,
    read_closed: bool,
    reader: Option<Waker>,
    writer: Option<Waker>,
}

impl Pipe {
    pub(crate) fn new(cap: usize) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::default(),
            cap: cap.max(1),
        })
    }

    fn poll_write(&self, cx: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        let mut s = lock(&self.state);
        if s.read_closed || s.write_closed {
            return Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()));
        }
        let room = self.cap.saturating_sub(s.buf.len());
        if room == 0 {
            s.writer = Some(cx.waker().clone());
            return Poll::Pending;
        }
        let n = room.min(data.len());
        s.buf.extend_from_slice(&data[..n]);
        if let Some(w) = s.reader.take() {
            w.wake();
        }
        Poll::Ready(Ok(n))
    }

    fn close_write(&self) {
        let mut s = lock(&self.state);
        s.write_closed = true;
        if let Some(w) = s.reader.take() {
            w.wake();
        }
    }

    fn close_read(&self) {
        let mut s = lock(&self.state);
        s.read_closed = true;
        if let Some(w) = s.writer.take() {
            w.wake();
        }
    }

    fn poll_take(&self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let mut s = lock(&self.state);
        if !s.buf.is_empty() {
            // One HTTP/2 DATA frame's worth at a time: a longer body frame would be cut
            // at the peer's largest frame (16 KiB by default), and a frame of 16 KiB
            // with its 9-byte header spills into a TLS record of its own.
            let n = s.buf.len().min(FRAME_PAYLOAD);
            let data = s.buf.split_to(n).freeze();
            if let Some(w) = s.writer.take() {
                w.wake();
            }
            return Poll::Ready(Some(data));
        }
        if s.write_closed {
            return Poll::Ready(None);
        }
        s.reader = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// Counts a connection's requests in progress while alive (the connection closes
/// when none has been for its idle time).
#[derive(Clone)]
pub(crate) struct Active(Arc<std::sync::atomic::AtomicUsize>);

impl Active {
    pub(crate) fn new(count: &Arc<std::sync::atomic::AtomicUsize>) -> Self {
        count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self(count.clone())
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A response's body: nothing, a stream's download, or a stream-up POST's answer
/// held open until its session ends.
pub(crate) enum ResponseBody {
    /// No body.
    Empty,
    /// The download: what the stream writes.
    Download {
        pipe: Arc<Pipe>,
        session: Option<Arc<Session>>,
        _active: Active,
    },
    /// Ends when the session does.
    Hold {
        done: Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>,
        _active: Active,
    },
}

impl ResponseBody {
    pub(crate) fn hold(session: &Session, active: Active) -> Self {
        Self::Hold {
            done: Box::pin(session.done.clone().cancelled_owned()),
            _active: active,
        }
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match self.get_mut() {
            Self::Empty => Poll::Ready(None),
            Self::Download { pipe, .. } => {
                Poll::Ready(ready!(pipe.poll_take(cx)).map(|d| Ok(Frame::data(d))))
            }
            Self::Hold { done, .. } => {
                ready!(done.as_mut().poll(cx));
                Poll::Ready(None)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Self::Empty)
    }
}

impl Drop for ResponseBody {
    fn drop(&mut self) {
        if let Self::Download { pipe, session, .. } = self {
            // The client went away (or the download ended): nothing more goes down,
            // and its upload ends with it.
            pipe.close_read();
            if let Some(session) = session {
                session.close();
            }
        }
    }
}

/// Where a stream's upload comes from.
enum Upload {
    /// A session's: packet-up POSTs or a stream-up POST.
    Session(Arc<Session>),
    /// A stream-one POST's body.
    Body {
        body: Incoming,
        chunk: Bytes,
        done: bool,
    },
}

/// One XHTTP stream on the server as bytes: reads give the upload (a stream-up or
/// stream-one POST's body, or packet-up POSTs in order), writes go down the
/// download response. Dropping it ends the download and its session.
pub struct ServerStream {
    upload: Upload,
    download: Arc<Pipe>,
    table: Option<(Arc<Sessions>, Box<str>)>,
    forwarded_for: Vec<String>,
}

impl std::fmt::Debug for ServerStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerStream")
            .field("session", &self.table.as_ref().map(|(_, id)| id))
            .finish_non_exhaustive()
    }
}

impl ServerStream {
    /// A session's stream (its GET came).
    pub(crate) fn session(
        session: Arc<Session>,
        download: Arc<Pipe>,
        table: Arc<Sessions>,
        id: &str,
    ) -> Self {
        Self {
            upload: Upload::Session(session),
            download,
            table: Some((table, id.into())),
            forwarded_for: Vec::new(),
        }
    }

    /// A stream-one request's stream.
    pub(crate) fn one(body: Incoming, download: Arc<Pipe>) -> Self {
        Self {
            upload: Upload::Body {
                body,
                chunk: Bytes::new(),
                done: false,
            },
            download,
            table: None,
            forwarded_for: Vec::new(),
        }
    }

    /// The `X-Forwarded-For` lines of the request that opened the stream (the
    /// download GET, or the stream-one POST), in order.
    pub fn forwarded_for(&self) -> &[String] {
        &self.forwarded_for
    }

    /// The stream with its request's `X-Forwarded-For` lines.
    pub(crate) fn with_forwarded_for(mut self, lines: Vec<String>) -> Self {
        self.forwarded_for = lines;
        self
    }

    /// The session id (none for stream-one).
    pub fn session_id(&self) -> Option<&str> {
        self.table.as_ref().map(|(_, id)| &**id)
    }
}

impl Drop for ServerStream {
    fn drop(&mut self) {
        self.download.close_write();
        if let Upload::Session(session) = &self.upload {
            session.close();
            if let Some((table, id)) = &self.table {
                table.remove(id, session);
            }
        }
    }
}

impl AsyncRead for ServerStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        match &mut this.upload {
            Upload::Session(session) => session.poll_read(cx, buf),
            Upload::Body { body, chunk, done } => loop {
                if !chunk.is_empty() {
                    let n = chunk.len().min(buf.remaining());
                    buf.put_slice(&chunk[..n]);
                    chunk.advance(n);
                    return Poll::Ready(Ok(()));
                }
                if *done {
                    return Poll::Ready(Ok(()));
                }
                match ready!(Pin::new(&mut *body).poll_frame(cx)) {
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            *chunk = data;
                        }
                    }
                    Some(Err(e)) => {
                        *done = true;
                        return Poll::Ready(Err(std::io::Error::new(
                            std::io::ErrorKind::ConnectionReset,
                            e,
                        )));
                    }
                    None => *done = true,
                }
            },
        }
    }
}

impl AsyncWrite for ServerStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if data.is_empty() {
            return Poll::Ready(Ok(0));
        }
        self.download.poll_write(cx, data)
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        // The connection's task sends what was written as soon as it can.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.download.close_write();
        Poll::Ready(Ok(()))
    }
}
