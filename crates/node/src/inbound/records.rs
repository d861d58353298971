//! The TCP stream under a TLS session that may switch to XTLS Vision's direct copy.
//!
//! A Vision peer writes its last block inside TLS and then raw bytes on the same TCP
//! connection. rustls must not have read any of those raw bytes as if they were TLS
//! records, so while the switch may still come, [`Records`] hands rustls at most the
//! rest of the current TLS record per read, and after each whole record it answers
//! the next read "not yet" once (waking the task at once): tokio-rustls then hands
//! out that record's plaintext before it reads on (rustls 0.23 keeps decrypted
//! records in its read buffer and would otherwise read ahead as long as the socket
//! has bytes). So after the record that carries the last block, every unread byte is
//! still in the socket. Once the switch is ruled out (no Vision, or the peer ended
//! its blocks without it) or done, reads go straight through.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, ReadBuf};

/// A TLS record header: type, version, length.
const RECORD_HEADER: usize = 5;

/// Reads a stream of TLS records one record at a time while bounded.
pub(crate) struct Records<S> {
    inner: S,
    bounded: bool,
    header: [u8; RECORD_HEADER],
    /// Bytes of the current record's header read so far (while `left` is 0).
    have: usize,
    /// Bytes of the current record's body still to read.
    left: usize,
    /// A record just ended: the next read waits one turn.
    pause: bool,
}

impl<S> Records<S> {
    /// `inner`, read a record at a time when `bounded`.
    pub(crate) fn new(inner: S, bounded: bool) -> Self {
        Self {
            inner,
            bounded,
            header: [0; RECORD_HEADER],
            have: 0,
            left: 0,
            pause: false,
        }
    }

    /// The stream read.
    pub(crate) fn get_ref(&self) -> &S {
        &self.inner
    }

    /// From now on reads go straight through.
    pub(crate) fn unbound(&mut self) {
        self.bounded = false;
    }

    /// Whether a read now would stop at a record's end. Only true between records.
    #[cfg(test)]
    fn at_record_boundary(&self) -> bool {
        self.have == 0 && self.left == 0
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Records<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.bounded {
            return Pin::new(&mut self.inner).poll_read(cx, buf);
        }
        let this = &mut *self;
        if this.pause {
            this.pause = false;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let want = if this.left > 0 {
            this.left
        } else {
            RECORD_HEADER - this.have
        };
        let room = buf.remaining().min(want);
        if room == 0 {
            return Poll::Ready(Ok(()));
        }
        let mut limited = ReadBuf::new(buf.initialize_unfilled_to(room));
        ready!(Pin::new(&mut this.inner).poll_read(cx, &mut limited))?;
        let got = limited.filled();
        let n = got.len();
        if this.left > 0 {
            this.left -= n;
            this.pause = this.left == 0;
        } else {
            this.header[this.have..this.have + n].copy_from_slice(got);
            this.have += n;
            if this.have == RECORD_HEADER {
                this.left = usize::from(u16::from_be_bytes([this.header[3], this.header[4]]));
                this.have = 0;
                this.pause = this.left == 0;
            }
        }
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

super::io::write_through!(Records);

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn record(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut r = vec![kind, 3, 3];
        r.extend_from_slice(&(body.len() as u16).to_be_bytes());
        r.extend_from_slice(body);
        r
    }

    #[tokio::test]
    async fn a_bounded_read_never_crosses_a_record_end() {
        let mut wire = record(0x17, &[1; 300]);
        wire.extend_from_slice(&record(0x17, &[]));
        wire.extend_from_slice(b"raw bytes after the records");
        let mut r = Records::new(&wire[..], true);
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        // Two whole records, whatever the reads' sizes, and not one byte more.
        while got.len() < 305 + 5 {
            let n = r.read(&mut buf).await.unwrap();
            assert!(n > 0);
            got.extend_from_slice(&buf[..n]);
            assert!(got.len() <= 310, "read past the records: {}", got.len());
        }
        assert!(r.at_record_boundary());
        assert_eq!(got, wire[..310]);
        r.unbound();
        let mut rest = Vec::new();
        r.read_to_end(&mut rest).await.unwrap();
        assert_eq!(rest, b"raw bytes after the records");
    }

    #[tokio::test]
    async fn headers_split_across_reads_are_followed() {
        let wire = [record(0x16, &[2; 10]), record(0x17, &[3; 20])].concat();
        // A reader that hands out one byte at a time.
        let (mut a, b) = tokio::io::duplex(1);
        let feeder = tokio::spawn({
            let wire = wire.clone();
            async move {
                tokio::io::AsyncWriteExt::write_all(&mut a, &wire)
                    .await
                    .unwrap();
            }
        });
        let mut r = Records::new(b, true);
        let mut got = vec![0u8; wire.len()];
        r.read_exact(&mut got).await.unwrap();
        assert_eq!(got, wire);
        assert!(r.at_record_boundary());
        feeder.await.unwrap();
    }
}
