//! The VLESS response header, taken off the server's stream.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A VLESS stream (public for the fuzz target): the server's response header (`version`, `addons length`, addons)
/// comes before the destination's bytes and is taken off them here.
pub struct VlessResponse<S> {
    inner: S,
    /// Bytes of the header still to skip; `None` until its length is known.
    skip: Option<usize>,
    head: [u8; 2],
    have: usize,
}

impl<S> VlessResponse<S> {
    /// Reads the destination's bytes from `inner`, the server's header taken off.
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            skip: None,
            head: [0; 2],
            have: 0,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for VlessResponse<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        loop {
            match this.skip {
                Some(0) => return Pin::new(&mut this.inner).poll_read(cx, buf),
                None => {
                    let mut head = ReadBuf::new(&mut this.head[this.have..]);
                    std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, &mut head))?;
                    let n = head.filled().len();
                    if n == 0 {
                        return Poll::Ready(Ok(()));
                    }
                    this.have += n;
                    if this.have == 2 {
                        if this.head[0] != 0 {
                            return Poll::Ready(Err(std::io::Error::new(
                                std::io::ErrorKind::InvalidData,
                                format!("VLESS response version {} (not 0)", this.head[0]),
                            )));
                        }
                        this.skip = Some(usize::from(this.head[1]));
                    }
                }
                Some(left) => {
                    let mut scratch = [0u8; 255];
                    let mut rb = ReadBuf::new(&mut scratch[..left]);
                    std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, &mut rb))?;
                    let n = rb.filled().len();
                    if n == 0 {
                        return Poll::Ready(Ok(()));
                    }
                    this.skip = Some(left - n);
                }
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for VlessResponse<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn the_vless_response_header_is_taken_off_in_any_split() {
        let body = b"hello";
        let mut wire = vec![0u8, 3, 9, 9, 9];
        wire.extend_from_slice(body);
        for split in 1..wire.len() {
            let (a, mut b) = tokio::io::duplex(64);
            let w = wire.clone();
            tokio::spawn(async move {
                b.write_all(&w[..split]).await.unwrap();
                tokio::time::sleep(Duration::from_millis(5)).await;
                b.write_all(&w[split..]).await.unwrap();
            });
            let mut r = VlessResponse::new(a);
            let mut got = vec![0u8; body.len()];
            r.read_exact(&mut got).await.unwrap();
            assert_eq!(got, body, "split at {split}");
        }
        let (a, mut b) = tokio::io::duplex(64);
        b.write_all(&[1, 0]).await.unwrap();
        let err = VlessResponse::new(a).read(&mut [0u8; 4]).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    }
}
