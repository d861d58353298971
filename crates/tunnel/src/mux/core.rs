//! The link's state machine: streams, windows, the send schedule, liveness.
//!
//! No I/O and no clock: the driver feeds it received bytes and the time, takes the
//! bytes to send, and asks when to wake it next ([`Core::poll_timeout`]). Wakers are
//! kept here as plain data so that stream handles and driver tasks can wait on it.

use std::collections::{HashMap, VecDeque};
use std::task::Waker;
use std::time::Duration;

use tokio::time::Instant;

use super::error::{MuxError, ProtocolError};
use super::stream_state::StreamState;
use super::{MuxConfig, Side};
use crate::frame::{
    Frame, Kind, MAX_PAYLOAD, Network, Open, ResetReason, check_address, parse_datagram,
};

/// Control frames waiting to be sent beyond this are a peer's abuse (pings we must
/// answer while it does not read): further `Pong`s are dropped.
const CONTROL_LIMIT: usize = 256 * 1024;
/// Control frames the peer's own frames make us queue (a `Reset` for each refused
/// `Open`, for instance) beyond this mean it sends and never reads: the link is
/// closed. 4 MiB: above anything this side queues by itself (an `Open` for each of
/// 4096 streams is about 2 MiB).
const CONTROL_BACKLOG: usize = 4 * 1024 * 1024;
/// Datagrams queued unread on one UDP stream at most; more are dropped (their window
/// given back), as a full socket buffer would drop them. Bounds what tiny datagrams
/// cost beyond their bytes; ordinary ones (over 256 bytes) meet the initial window
/// first.
const UDP_QUEUE: usize = 1024;

/// One link's state.
#[derive(Debug)]
pub(crate) struct Core {
    side: Side,
    pub(super) config: MuxConfig,
    pub(super) streams: HashMap<u32, StreamState>,
    /// The next id this side opens.
    next_local: u32,
    /// The highest id the peer opened.
    last_peer: u32,
    /// Encoded control frames, sent before any stream's data.
    pub(super) control: Vec<u8>,
    /// Streams with queued frames, in round-robin order.
    pub(super) ring: VecDeque<u32>,
    incoming: VecDeque<(u32, Open)>,
    incoming_waker: Option<Waker>,
    incoming_alive: bool,
    pub(super) handles: usize,
    pub(super) writer: Option<Waker>,
    pub(super) closed: Option<MuxError>,
    going_away: bool,
    /// The peer sent `GoAway` (it is handing over to another process).
    pub(super) peer_going_away: bool,
    pub(super) bytes: u64,
    pub(super) last_rx: Instant,
    pub(super) last_ping: Instant,
    pub(super) ping_seq: u64,
    pub(super) ping_out: Option<(u64, Instant)>,
    pub(super) rtt: Option<(Duration, Instant)>,
}

impl Core {
    /// A link that started at `now`; it measures the round trip at once.
    pub(crate) fn new(side: Side, config: MuxConfig, now: Instant) -> Self {
        let mut core = Self {
            side,
            config,
            streams: HashMap::new(),
            next_local: match side {
                Side::Opener => 1,
                Side::Acceptor => 2,
            },
            last_peer: 0,
            control: Vec::new(),
            ring: VecDeque::new(),
            incoming: VecDeque::new(),
            incoming_waker: None,
            incoming_alive: true,
            handles: 1,
            writer: None,
            closed: None,
            going_away: false,
            peer_going_away: false,
            bytes: 0,
            last_rx: now,
            last_ping: now,
            ping_seq: 0,
            ping_out: None,
            rtt: None,
        };
        core.ping(now);
        core
    }

    /// Why the link ended, if it did.
    pub(crate) fn closed(&self) -> Option<&MuxError> {
        self.closed.as_ref()
    }

    /// Fails unless the link is up.
    pub(super) fn check_open(&self) -> Result<(), MuxError> {
        self.closed.clone().map_or(Ok(()), Err)
    }

    /// Ends the link: every stream and waiter fails with `why` (the first reason wins).
    pub(crate) fn close(&mut self, why: MuxError) {
        if self.closed.is_some() {
            return;
        }
        tracing::debug!(error = %why, "link closed");
        self.closed = Some(why);
        self.control = Vec::new();
        self.ring.clear();
        for s in self.streams.values_mut() {
            s.wake_all();
        }
        self.incoming.clear();
        if let Some(w) = self.incoming_waker.take() {
            w.wake();
        }
        self.wake_writer();
    }

    /// Opens a stream: queues its `Open` and returns its id.
    pub(crate) fn open(&mut self, open: &Open, now: Instant) -> Result<u32, MuxError> {
        self.check_open()?;
        // The peer would refuse it; refusing here keeps the stream id unused.
        check_address(&open.destination).map_err(MuxError::Destination)?;
        if self.going_away || self.next_local > u32::MAX - 2 {
            return Err(MuxError::GoingAway);
        }
        if self.streams.len() >= self.config.max_streams {
            return Err(MuxError::StreamLimit(self.config.max_streams));
        }
        let id = self.next_local;
        self.next_local += 2;
        let mut payload = Vec::new();
        open.encode(&mut payload);
        debug_assert!(payload.len() <= MAX_PAYLOAD);
        self.push_control(Kind::Open, id, &payload);
        self.streams.insert(id, StreamState::new(open.network, now));
        Ok(id)
    }

    /// Stops taking new streams and tells the peer to open none.
    pub(crate) fn go_away(&mut self) {
        if !self.going_away && self.closed.is_none() {
            self.going_away = true;
            self.push_control(Kind::GoAway, 0, &[]);
        }
    }

    /// Whether the link takes no new streams (either side sent `GoAway`).
    pub(crate) fn going_away(&self) -> bool {
        self.going_away
    }

    /// Number of streams the link holds.
    pub(crate) fn open_streams(&self) -> usize {
        self.streams.len()
    }

    /// Takes the next stream the peer opened, or registers `waker`.
    pub(crate) fn poll_accept(&mut self, waker: &Waker) -> Option<Option<(u32, Open)>> {
        if self.closed.is_some() {
            return Some(None);
        }
        match self.incoming.pop_front() {
            Some(next) => Some(Some(next)),
            None => {
                self.incoming_waker = Some(waker.clone());
                None
            }
        }
    }

    /// The acceptor of incoming streams is gone: refuse queued and future ones.
    pub(crate) fn drop_incoming(&mut self) {
        self.incoming_alive = false;
        while let Some((id, _)) = self.incoming.pop_front() {
            self.abort(id, ResetReason::Refused);
        }
    }

    /// Whether nothing at all can use the link any more.
    pub(crate) fn unused(&self) -> bool {
        self.handles == 0 && !self.incoming_alive
    }

    /// Handles the frames at the start of `buf` received at `now`; returns how many
    /// bytes were used (a partial frame stays). Closes the link on a protocol error.
    pub(crate) fn handle_bytes(&mut self, buf: &[u8], now: Instant) -> usize {
        let mut at = 0;
        while self.closed.is_none() {
            match Frame::parse(&buf[at..]) {
                Ok(Some((frame, used))) => {
                    at += used;
                    self.last_rx = now;
                    let queued = self.control.len();
                    if let Err(e) = self.handle_frame(frame, now) {
                        self.close(e.into());
                    } else if self.control.len() > queued.max(CONTROL_BACKLOG) {
                        self.close(ProtocolError::NotReading(self.control.len()).into());
                    }
                }
                Ok(None) => break,
                Err(e) => self.close(ProtocolError::Frame(e).into()),
            }
        }
        at
    }

    fn handle_frame(&mut self, f: Frame<'_>, now: Instant) -> Result<(), ProtocolError> {
        let link_level = matches!(f.kind, Kind::Ping | Kind::Pong | Kind::GoAway);
        if link_level != (f.stream == 0) {
            return Err(ProtocolError::MisplacedFrame {
                stream: f.stream,
                kind: f.kind,
            });
        }
        match f.kind {
            Kind::Ping => {
                if self.control.len() < CONTROL_LIMIT {
                    self.push_control(Kind::Pong, 0, f.payload);
                }
            }
            Kind::Pong => {
                let seq = u64::from_be_bytes(f.payload.try_into().unwrap_or_default());
                if let Some((out, sent)) = self.ping_out
                    && out == seq
                {
                    self.ping_out = None;
                    self.rtt = Some((now.saturating_duration_since(sent), now));
                }
            }
            Kind::GoAway => {
                self.going_away = true;
                self.peer_going_away = true;
            }
            Kind::Open => self.handle_open(f.stream, f.payload, now)?,
            Kind::Data => self.handle_data(f.stream, f.payload)?,
            Kind::Window => {
                let inc = f.window().unwrap_or(0);
                if let Some(s) = self.known_stream(f.stream, f.kind)? {
                    s.send_credit = s
                        .send_credit
                        .checked_add(inc)
                        .ok_or(ProtocolError::WindowOverflow(f.stream))?;
                    s.wake_write();
                }
            }
            Kind::Fin => {
                if let Some(s) = self.known_stream(f.stream, f.kind)? {
                    s.fin_received = true;
                    s.wake_read();
                    self.maybe_remove(f.stream);
                }
            }
            Kind::Reset => {
                let reason = ResetReason::from_byte(f.payload[0]);
                if let Some(s) = self.known_stream(f.stream, f.kind)? {
                    s.on_reset(reason);
                    self.maybe_remove(f.stream);
                }
            }
        }
        Ok(())
    }

    fn handle_open(&mut self, id: u32, payload: &[u8], now: Instant) -> Result<(), ProtocolError> {
        if id == 0 || self.is_local(id) || id <= self.last_peer {
            return Err(ProtocolError::BadStreamId(id));
        }
        self.last_peer = id;
        // A bad Open is one user's bad destination, not a broken peer: refuse the
        // stream, keep the link.
        let open = match Open::parse(payload) {
            Ok(open) => open,
            Err(error) => {
                tracing::debug!(stream = id, %error, "tunnel stream refused: bad Open");
                self.push_control(Kind::Reset, id, &[ResetReason::Malformed.to_byte()]);
                return Ok(());
            }
        };
        if self.going_away || !self.incoming_alive || self.streams.len() >= self.config.max_streams
        {
            self.push_control(Kind::Reset, id, &[ResetReason::Refused.to_byte()]);
            return Ok(());
        }
        self.streams.insert(id, StreamState::new(open.network, now));
        self.incoming.push_back((id, open));
        if let Some(w) = self.incoming_waker.take() {
            w.wake();
        }
        Ok(())
    }

    fn handle_data(&mut self, id: u32, payload: &[u8]) -> Result<(), ProtocolError> {
        let Some(s) = self.known_stream(id, Kind::Data)? else {
            return Ok(());
        };
        if s.fin_received || s.reset_received.is_some() {
            return Err(ProtocolError::DataAfterFin(id));
        }
        // Fits: a payload is at most 16 KiB.
        let n = payload.len() as u32;
        s.recv
            .on_data(n)
            .map_err(|excess| ProtocolError::WindowExceeded { stream: id, excess })?;
        if s.network == Network::Udp
            && let Err(error) = parse_datagram(payload)
        {
            tracing::debug!(stream = id, %error, "tunnel stream reset: bad datagram");
            self.bytes += u64::from(n);
            self.fail_stream(id, ResetReason::Malformed);
            return Ok(());
        }
        let grant = if s.dropped || payload.is_empty() {
            None
        } else if s.network == Network::Udp && s.chunks.len() >= UDP_QUEUE {
            // Dropped unread: its window comes back.
            s.recv.on_drop(n)
        } else {
            match s.chunks.back_mut() {
                // Small frames fill the last chunk: a window of one-byte frames costs
                // about the window, not a chunk per byte.
                Some(last)
                    if s.network == Network::Tcp && last.len() + payload.len() <= MAX_PAYLOAD =>
                {
                    last.extend_from_slice(payload);
                }
                _ => s.chunks.push_back(payload.to_vec()),
            }
            s.wake_read();
            None
        };
        if let Some(grant) = grant {
            self.push_control(Kind::Window, id, &grant.to_be_bytes());
        }
        self.bytes += u64::from(n);
        Ok(())
    }

    /// The stream a frame is for: `None` if it is gone (late frames are harmless),
    /// an error if it was never opened.
    fn known_stream(
        &mut self,
        id: u32,
        kind: Kind,
    ) -> Result<Option<&mut StreamState>, ProtocolError> {
        let opened = if self.is_local(id) {
            id < self.next_local
        } else {
            id <= self.last_peer
        };
        if !opened {
            return Err(ProtocolError::UnknownStream { stream: id, kind });
        }
        Ok(self.streams.get_mut(&id))
    }

    fn is_local(&self, id: u32) -> bool {
        (id % 2 == 1) == (self.side == Side::Opener)
    }

    /// Forgets the stream and tells the peer, unless the peer already reset it.
    pub(super) fn abort(&mut self, id: u32, reason: ResetReason) {
        if let Some(s) = self.streams.remove(&id)
            && s.reset_received.is_none()
            && self.closed.is_none()
        {
            self.push_control(Kind::Reset, id, &[reason.to_byte()]);
        }
    }

    /// Resets a stream whose handle may still be alive: its waiters wake and find it
    /// gone ([`MuxError::StreamAborted`]), an unaccepted one is never handed out, and
    /// its slot is free at once.
    pub(super) fn fail_stream(&mut self, id: u32, reason: ResetReason) {
        if let Some(s) = self.streams.get_mut(&id) {
            s.wake_all();
        }
        self.incoming.retain(|(i, _)| *i != id);
        self.abort(id, reason);
    }

    /// Forgets a dropped stream once it has nothing left to send.
    pub(super) fn maybe_remove(&mut self, id: u32) {
        if self
            .streams
            .get(&id)
            .is_some_and(|s| s.dropped && (s.queue.is_empty() || s.reset_received.is_some()))
        {
            self.streams.remove(&id);
        }
    }
}
