//! One XHTTP stream on the client as a byte stream: reads come from the download
//! (the GET's response, or stream-one's), writes go to the upload (a streaming
//! POST's body, or packet-up's POSTs) through a bounded channel.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use bytes::{Buf, Bytes};
use http_body::Body;
use hyper::body::Incoming;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::sync::PollSender;

use super::client_conn::OpenGuard;

/// The most bytes one write hands to the upload.
pub(crate) const MAX_WRITE: usize = 64 * 1024;

/// Why the upload stopped, set by the task that carries it (a POST refused, a
/// connection lost), read by the next write.
pub(crate) type UploadError = Arc<Mutex<Option<String>>>;

/// A download not yet answered (every mode reads its response head lazily).
type Pending = Pin<Box<dyn Future<Output = std::io::Result<Incoming>> + Send>>;

enum Down {
    Waiting(Pending),
    Body(Incoming),
    Ended,
}

/// What keeps a stream's connection up while it lives, besides its requests.
pub(crate) enum Keep {
    /// An HTTP/2 connection's handle, and the stream's count on it (XMUX's).
    H2 {
        _send: super::client_conn::H2Send,
        _guard: OpenGuard,
    },
    /// The download's own HTTP/1.1 connection.
    H1 { _send: super::client_conn::H1Send },
}

/// One XHTTP stream: the [`BoxIo`](crate::BoxIo) a
/// [`Layer::Xhttp`](crate::dial::Layer::Xhttp) connect gives.
pub struct XhttpStream {
    down: Down,
    chunk: Bytes,
    up: PollSender<Bytes>,
    up_error: UploadError,
    _keep: Keep,
}

impl XhttpStream {
    /// A stream whose download is answered later: its first read waits for the
    /// answer (and fails with it when it is not `200`).
    pub(crate) fn pending(
        down: Pending,
        up: tokio::sync::mpsc::Sender<Bytes>,
        up_error: UploadError,
        keep: Keep,
    ) -> Self {
        Self {
            down: Down::Waiting(down),
            chunk: Bytes::new(),
            up: PollSender::new(up),
            up_error,
            _keep: keep,
        }
    }

    fn upload_failed(&self) -> std::io::Error {
        let why = self
            .up_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .unwrap_or_else(|| "the upload ended".to_owned());
        std::io::Error::new(std::io::ErrorKind::BrokenPipe, why)
    }
}

impl AsyncRead for XhttpStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        loop {
            if !self.chunk.is_empty() {
                let n = self.chunk.len().min(buf.remaining());
                buf.put_slice(&self.chunk[..n]);
                self.chunk.advance(n);
                return Poll::Ready(Ok(()));
            }
            match &mut self.down {
                Down::Ended => return Poll::Ready(Ok(())),
                Down::Waiting(pending) => {
                    let body = ready!(pending.as_mut().poll(cx));
                    match body {
                        Ok(body) => self.down = Down::Body(body),
                        Err(e) => {
                            self.down = Down::Ended;
                            return Poll::Ready(Err(e));
                        }
                    }
                }
                Down::Body(body) => match ready!(Pin::new(body).poll_frame(cx)) {
                    None => self.down = Down::Ended,
                    Some(Err(e)) => {
                        self.down = Down::Ended;
                        return Poll::Ready(Err(std::io::Error::other(e)));
                    }
                    Some(Ok(frame)) => {
                        // Trailers carry nothing of the stream's.
                        if let Ok(data) = frame.into_data() {
                            self.chunk = data;
                        }
                    }
                },
            }
        }
    }
}

impl AsyncWrite for XhttpStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if data.is_empty() {
            return Poll::Ready(Ok(0));
        }
        if ready!(self.up.poll_reserve(cx)).is_err() {
            return Poll::Ready(Err(self.upload_failed()));
        }
        let n = data.len().min(MAX_WRITE);
        if self
            .up
            .send_item(Bytes::copy_from_slice(&data[..n]))
            .is_err()
        {
            return Poll::Ready(Err(self.upload_failed()));
        }
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        // What was written is the upload's already; it goes out as the mode sends.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        // The upload's end: the streaming POST's body ends, packet-up sends the rest.
        self.up.close();
        Poll::Ready(Ok(()))
    }
}
