//! The stream operations on the link's core: reading, writing, closing and resetting
//! one stream, and its datagrams. Each is what a stream handle asks of [`Core`].

use std::collections::VecDeque;
use std::task::{Poll, Waker};

use tokio::time::Instant;

use super::core::Core;
use super::error::MuxError;
use super::stream_state::{SEND_QUEUE_LIMIT, StreamState, encode};
use crate::frame::{
    HEADER, Kind, MAX_PAYLOAD, Network, ResetReason, check_address, encode_datagram,
};
use switchyard_proto::Address;

impl Core {
    fn stream(&mut self, id: u32) -> Result<&mut StreamState, MuxError> {
        self.check_open()?;
        // A handle's state lives as long as the handle, unless this side reset the
        // stream under it (`fail_stream`).
        self.streams.get_mut(&id).ok_or(MuxError::StreamAborted(id))
    }

    fn usable(&mut self, id: u32, network: Network) -> Result<&mut StreamState, MuxError> {
        let s = self.stream(id)?;
        if s.network != network {
            return Err(MuxError::WrongNetwork {
                stream: id,
                network: s.network,
            });
        }
        Ok(s)
    }

    /// Reads from a TCP stream into `buf`: `Ready(Ok(0))` at the peer's `Fin`.
    pub(crate) fn poll_read(
        &mut self,
        id: u32,
        waker: &Waker,
        buf: &mut [u8],
        now: Instant,
    ) -> Poll<Result<usize, MuxError>> {
        let s = self.usable(id, Network::Tcp)?;
        let mut n = 0;
        while n < buf.len() {
            let Some(chunk) = s.chunks.front() else {
                break;
            };
            let k = (chunk.len() - s.head).min(buf.len() - n);
            buf[n..n + k].copy_from_slice(&chunk[s.head..s.head + k]);
            n += k;
            s.head += k;
            if s.head == chunk.len() {
                s.chunks.pop_front();
                s.head = 0;
            }
        }
        if n > 0 {
            self.consumed(id, n, now);
            return Poll::Ready(Ok(n));
        }
        let s = self.usable(id, Network::Tcp)?;
        if s.fin_received || buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        if let Some(reason) = s.reset_received {
            return Poll::Ready(Err(MuxError::StreamReset { stream: id, reason }));
        }
        s.read_waker = Some(waker.clone());
        Poll::Pending
    }

    /// The application read `n` bytes: grant window if it is time.
    fn consumed(&mut self, id: u32, n: usize, now: Instant) {
        let rtt = self.rtt.map(|(rtt, _)| rtt);
        let max = self.config.max_window;
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        if s.fin_received || s.reset_received.is_some() {
            return;
        }
        // n is at most one frame's payload or one read buffer; saturate regardless.
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        if let Some(grant) = s.recv.on_read(n, now, rtt, max) {
            self.push_control(Kind::Window, id, &grant.to_be_bytes());
            self.refresh_rtt(now);
        }
    }

    /// Writes to a TCP stream: takes as much of `data` as the window and the send
    /// queue allow, at most one frame's worth.
    pub(crate) fn poll_write(
        &mut self,
        id: u32,
        waker: &Waker,
        data: &[u8],
    ) -> Poll<Result<usize, MuxError>> {
        let s = self.usable(id, Network::Tcp)?;
        if let Some(reason) = s.reset_received {
            return Poll::Ready(Err(MuxError::StreamReset { stream: id, reason }));
        }
        if s.fin_queued {
            return Poll::Ready(Err(MuxError::StreamFinished(id)));
        }
        if data.is_empty() {
            return Poll::Ready(Ok(0));
        }
        if s.send_credit == 0 || s.queued_bytes >= SEND_QUEUE_LIMIT {
            s.write_waker = Some(waker.clone());
            return Poll::Pending;
        }
        let mut n = data.len().min(s.send_credit as usize).min(MAX_PAYLOAD);
        // Small writes fill the last queued frame rather than each making one.
        match s.queue.back_mut() {
            Some(last) if last[0] == Kind::Data as u8 && last.len() < HEADER + MAX_PAYLOAD => {
                n = n.min(HEADER + MAX_PAYLOAD - last.len());
                last.extend_from_slice(&data[..n]);
                let len = (last.len() - HEADER) as u16;
                last[6..8].copy_from_slice(&len.to_be_bytes());
                s.queued_bytes += n;
            }
            _ => s.queue_frame(encode(Kind::Data, id, &data[..n])),
        }
        s.send_credit -= n as u32;
        self.bytes += n as u64;
        self.schedule(id);
        Poll::Ready(Ok(n))
    }

    /// Half-closes a stream: queues its `Fin` after its data.
    pub(crate) fn shutdown(&mut self, id: u32) -> Result<(), MuxError> {
        let s = self.stream(id)?;
        if s.fin_queued || s.reset_received.is_some() {
            return Ok(());
        }
        s.fin_queued = true;
        s.queue_frame(encode(Kind::Fin, id, &[]));
        self.schedule(id);
        Ok(())
    }

    /// Resets a stream on the application's request (its handle is being consumed).
    pub(crate) fn reset(&mut self, id: u32, reason: ResetReason) {
        self.abort(id, reason);
    }

    /// The stream's handle was dropped: a stream not shut down for writing is reset;
    /// a half-closed one sends what is queued, then resets if the peer still sends.
    pub(crate) fn drop_stream(&mut self, id: u32) {
        let closed = self.closed().is_some();
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        if closed || s.reset_received.is_some() {
            self.streams.remove(&id);
            return;
        }
        if !s.fin_queued {
            self.abort(id, ResetReason::Abort);
            return;
        }
        s.dropped = true;
        s.chunks = VecDeque::new();
        if !s.fin_received {
            s.queue_frame(encode(Kind::Reset, id, &[ResetReason::Abort.to_byte()]));
            self.schedule(id);
        }
        self.maybe_remove(id);
    }

    /// Queues one datagram on a UDP stream; `Ok(false)` if it was dropped because the
    /// window or the send queue is full (datagrams never wait).
    pub(crate) fn send_datagram(
        &mut self,
        id: u32,
        to: &Address,
        data: &[u8],
    ) -> Result<bool, MuxError> {
        let s = self.usable(id, Network::Udp)?;
        if let Some(reason) = s.reset_received {
            return Err(MuxError::StreamReset { stream: id, reason });
        }
        if s.fin_queued {
            return Err(MuxError::StreamFinished(id));
        }
        let len = to.wire_len() + data.len();
        let failed = match check_address(to) {
            Err(e) => Some(MuxError::Destination(e)),
            Ok(()) if len > MAX_PAYLOAD => Some(MuxError::DatagramTooLarge(len)),
            Ok(()) => None,
        };
        if let Some(e) = failed {
            // A send that fails closes the stream, so nothing waits on it until the
            // idle timeout and one user cannot hold the link's slots this way.
            self.fail_stream(id, ResetReason::Abort);
            return Err(e);
        }
        let s = self.usable(id, Network::Udp)?;
        if (s.send_credit as usize) < len || s.queued_bytes >= SEND_QUEUE_LIMIT {
            return Ok(false);
        }
        let mut payload = Vec::with_capacity(len);
        encode_datagram(to, data, &mut payload);
        s.queue_frame(encode(Kind::Data, id, &payload));
        s.send_credit -= len as u32;
        self.bytes += len as u64;
        self.schedule(id);
        Ok(true)
    }

    /// Takes the next datagram payload (address included) of a UDP stream.
    pub(crate) fn poll_recv_datagram(
        &mut self,
        id: u32,
        waker: &Waker,
        now: Instant,
    ) -> Poll<Result<Vec<u8>, MuxError>> {
        let s = self.usable(id, Network::Udp)?;
        if let Some(payload) = s.chunks.pop_front() {
            let n = payload.len();
            self.consumed(id, n, now);
            return Poll::Ready(Ok(payload));
        }
        if let Some(reason) = s.reset_received {
            return Poll::Ready(Err(MuxError::StreamReset { stream: id, reason }));
        }
        if s.fin_received {
            return Poll::Ready(Err(MuxError::EndOfDatagrams(id)));
        }
        s.read_waker = Some(waker.clone());
        Poll::Pending
    }
}
