//! The link's send side: control frames first, then one frame per stream with data,
//! round-robin; the writer task's waker.

use std::task::Waker;

use super::core::Core;
use crate::frame::{Frame, Kind};

impl Core {
    /// Appends the bytes to send next to `out`: all control frames, then one frame
    /// per stream in round-robin order until `out` holds `limit` bytes.
    pub(crate) fn poll_transmit(&mut self, out: &mut Vec<u8>, limit: usize) {
        out.append(&mut self.control);
        while out.len() < limit {
            let Some(id) = self.ring.pop_front() else {
                break;
            };
            let Some(s) = self.streams.get_mut(&id) else {
                continue;
            };
            s.in_ring = false;
            let Some(frame) = s.queue.pop_front() else {
                continue;
            };
            s.queued_bytes -= frame.len();
            out.extend_from_slice(&frame);
            if s.queue.is_empty() {
                self.maybe_remove(id);
            } else {
                s.in_ring = true;
                self.ring.push_back(id);
            }
            if let Some(s) = self.streams.get_mut(&id) {
                s.wake_write_if_room();
            }
        }
    }

    /// Whether there is anything to send.
    pub(crate) fn has_transmit(&self) -> bool {
        !self.control.is_empty() || !self.ring.is_empty()
    }

    /// Registers the writer task's waker.
    pub(crate) fn set_writer(&mut self, waker: &Waker) {
        self.writer = Some(waker.clone());
    }

    pub(super) fn wake_writer(&mut self) {
        if let Some(w) = self.writer.take() {
            w.wake();
        }
    }

    pub(super) fn push_control(&mut self, kind: Kind, stream: u32, payload: &[u8]) {
        Frame {
            kind,
            flags: 0,
            stream,
            payload,
        }
        .encode(&mut self.control);
        self.wake_writer();
    }

    pub(super) fn schedule(&mut self, id: u32) {
        if let Some(s) = self.streams.get_mut(&id)
            && !s.in_ring
        {
            s.in_ring = true;
            self.ring.push_back(id);
        }
        self.wake_writer();
    }
}
