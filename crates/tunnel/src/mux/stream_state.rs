//! One stream's state inside the link; the stream operations on the link's core are
//! in [`super::stream_ops`].
//!
//! An idle stream holds no buffers: received chunks are allocated as frames arrive and
//! freed as the application reads them, and frames to send exist only while queued.

use std::collections::VecDeque;
use std::task::Waker;

use tokio::time::Instant;

use super::flow::{INITIAL_WINDOW, RecvWindow};
use crate::frame::{Frame, HEADER, Kind, MAX_PAYLOAD, Network, ResetReason};

/// A stream stops taking writes while this much is queued for the link's writer.
pub(super) const SEND_QUEUE_LIMIT: usize = 4 * (HEADER + MAX_PAYLOAD);

/// One stream's state.
#[derive(Debug)]
pub(crate) struct StreamState {
    pub(super) network: Network,
    pub(super) recv: RecvWindow,
    /// Received payloads not yet read; `head` bytes of the first one are read.
    pub(super) chunks: VecDeque<Vec<u8>>,
    pub(super) head: usize,
    pub(super) fin_received: bool,
    pub(super) reset_received: Option<ResetReason>,
    pub(super) read_waker: Option<Waker>,
    /// How much the peer lets us send.
    pub(super) send_credit: u32,
    /// Encoded frames (`Data`, `Fin`) waiting for the writer.
    pub(super) queue: VecDeque<Vec<u8>>,
    pub(super) queued_bytes: usize,
    pub(super) in_ring: bool,
    pub(super) fin_queued: bool,
    pub(super) write_waker: Option<Waker>,
    /// The handle is gone; the state lives on only to send what is queued.
    pub(super) dropped: bool,
}

impl StreamState {
    pub(super) fn new(network: Network, now: Instant) -> Self {
        Self {
            network,
            recv: RecvWindow::new(now),
            chunks: VecDeque::new(),
            head: 0,
            fin_received: false,
            reset_received: None,
            read_waker: None,
            send_credit: INITIAL_WINDOW,
            queue: VecDeque::new(),
            queued_bytes: 0,
            in_ring: false,
            fin_queued: false,
            write_waker: None,
            dropped: false,
        }
    }

    pub(super) fn wake_read(&mut self) {
        if let Some(w) = self.read_waker.take() {
            w.wake();
        }
    }

    pub(super) fn wake_write(&mut self) {
        if let Some(w) = self.write_waker.take() {
            w.wake();
        }
    }

    pub(super) fn wake_write_if_room(&mut self) {
        if self.queued_bytes < SEND_QUEUE_LIMIT {
            self.wake_write();
        }
    }

    pub(super) fn wake_all(&mut self) {
        self.wake_read();
        self.wake_write();
    }

    /// The peer reset the stream: nothing more is sent, and unread data of an
    /// unfinished direction is discarded (a finished one stays readable).
    pub(super) fn on_reset(&mut self, reason: ResetReason) {
        self.reset_received = Some(reason);
        self.queue.clear();
        self.queued_bytes = 0;
        if !self.fin_received {
            self.chunks.clear();
            self.head = 0;
        }
        self.wake_all();
    }

    pub(super) fn queue_frame(&mut self, frame: Vec<u8>) {
        self.queued_bytes += frame.len();
        self.queue.push_back(frame);
    }
}

/// A frame of `kind` for `stream`, encoded.
pub(super) fn encode(kind: Kind, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + payload.len());
    Frame {
        kind,
        flags: 0,
        stream,
        payload,
    }
    .encode(&mut out);
    out
}
