//! The sealing side of a server's Shadowsocks 2022 stream, parted from its reading
//! side ([`super::SsStream::into_split`]), that reads the destination's bytes
//! straight into the places of up to four chunks (one vectored read), seals them
//! there and writes them out: no copy between reading and sealing.

use std::io::{self, IoSliceMut};

use switchyard_proto::shadowsocks::tcp::{LENGTH_CHUNK, MAX_CHUNK, Sealer, TAG_LEN};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedWriteHalf;

use super::{PendingResponse, seal};

/// One chunk's place: its length chunk, the payload at its longest, the payload's tag.
const SLOT: usize = LENGTH_CHUNK + MAX_CHUNK + TAG_LEN;
/// Chunks read and sealed at a time: one write of [`super::MAX_WRITE`] payload bytes.
const SLOTS: usize = 4;
/// Bytes read at a time while quiet, as the pump's small buffer.
const SMALL: usize = 1024;

/// The writing half of a server's Shadowsocks 2022 stream on TCP.
pub struct SsWriter {
    pub(super) inner: OwnedWriteHalf,
    /// `None` until the first write has sealed the response's head.
    pub(super) sealer: Option<Sealer>,
    pub(super) pending: Option<PendingResponse>,
    /// Sealed bytes the stream had not written when it was parted.
    pub(super) out: Vec<u8>,
    /// The chunks' places, grown on the first bulk read, given back by
    /// [`Self::release`].
    pub(super) slots: Vec<u8>,
}

impl SsWriter {
    /// Waits for `from` to have bytes, reads what it has (up to four chunks'
    /// worth) into place, seals them and writes them out; returns the payload bytes
    /// carried, 0 when `from` has ended. The first write, which carries the
    /// response's head, and a read of less than a chunk go the ordinary way.
    pub async fn write_from(&mut self, from: &TcpStream) -> io::Result<usize> {
        if !self.out.is_empty() {
            self.inner.write_all(&self.out).await?;
            self.out.clear();
        }
        if self.sealer.is_none() || self.slots.is_empty() {
            // A small read into the stack, sealed before anything is awaited (so the
            // future waiting here holds none of it); the places only once a read
            // fills it (a bulk transfer), so an idle or chatty stream holds none.
            let n = loop {
                from.readable().await?;
                let mut small = [0u8; SMALL];
                match from.try_read(&mut small) {
                    Ok(n) => {
                        if n > 0 {
                            seal(
                                &mut self.sealer,
                                &mut self.pending,
                                &small[..n],
                                &mut self.out,
                            )?;
                        }
                        break n;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
            };
            if n > 0 {
                self.inner.write_all(&self.out).await?;
                self.out.clear();
                if n == SMALL {
                    self.slots = vec![0u8; SLOTS * SLOT];
                }
            }
            return Ok(n);
        }
        let n = {
            let mut places: Vec<IoSliceMut<'_>> = self
                .slots
                .chunks_exact_mut(SLOT)
                .map(|slot| IoSliceMut::new(&mut slot[LENGTH_CHUNK..LENGTH_CHUNK + MAX_CHUNK]))
                .collect();
            read(from, &mut places).await?
        };
        let Some(sealer) = self.sealer.as_mut() else {
            return Err(io::Error::other("shadowsocks: no sealer"));
        };
        let (mut left, mut end) = (n, 0);
        for slot in self.slots.chunks_exact_mut(SLOT) {
            if left == 0 {
                break;
            }
            let len = left.min(MAX_CHUNK);
            // Full places are whole chunks back to back; only the last may be short,
            // its tag right after its payload.
            sealer
                .seal_laid_out(&mut slot[..LENGTH_CHUNK + len + TAG_LEN])
                .ok_or_else(|| io::Error::other("shadowsocks: a chunk out of range"))?;
            end += LENGTH_CHUNK + len + TAG_LEN;
            left -= len;
        }
        if n > 0 {
            self.inner.write_all(&self.slots[..end]).await?;
        }
        Ok(n)
    }

    /// Gives back the chunks' places (a quiet stream); the next bulk read grows them.
    pub fn release(&mut self) {
        self.slots = Vec::new();
        self.out = Vec::new();
    }

    /// Whether it holds the chunks' places (a bulk transfer is going on).
    pub fn holds_places(&self) -> bool {
        !self.slots.is_empty()
    }

    /// Ends the stream's writing side (TCP half-close).
    pub async fn shutdown(&mut self) -> io::Result<()> {
        self.inner.shutdown().await
    }
}

/// One vectored read of what `from` has, waiting for it to have something.
async fn read(from: &TcpStream, places: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
    loop {
        from.readable().await?;
        match from.try_read_vectored(places) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
}
