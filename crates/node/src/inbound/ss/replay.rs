//! What Shadowsocks has seen lately, kept across rebuilds of the inbound:
//!
//! - TCP requests' salts ([`Salts`]): a request whose salt came in the last minute
//!   is a replay (SIP022; a request older than that fails its ±30 s timestamp).
//! - UDP sessions ([`Sessions`]): one packet-id window per user and client session
//!   id, shared by every source address (a packet replayed from another address is
//!   refused).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use switchyard_proto::shadowsocks::window::Window;

/// A window unused this long is forgotten. 60 s: a packet's timestamp may be at most
/// 30 s off, so a replay of anything older than that is refused by its timestamp.
const KEEP: Duration = Duration::from_secs(60);
/// Sessions remembered at once per inbound; past this (and after forgetting idle
/// ones) packets of new sessions are dropped.
const MAX_SESSIONS: usize = 65_536;

/// Salts remembered at once per inbound (about 100 bytes each, so at most ~25 MiB):
/// past this, new requests are refused until a minute's salts expire: a flood can
/// only slow new connections down, never let a replay through.
const MAX_SALTS: usize = 262_144;

/// The salts of one inbound's TCP requests of the last [`KEEP`].
#[derive(Default)]
pub(crate) struct Salts {
    seen: Mutex<SaltLog>,
}

/// The salts, and the order they came in (to forget the oldest first).
#[derive(Default)]
struct SaltLog {
    set: HashSet<Box<[u8]>>,
    order: VecDeque<(Instant, Box<[u8]>)>,
}

impl Salts {
    /// Records `salt`; false when it was seen in the last [`KEEP`] or no room is
    /// left.
    pub(crate) fn accept(&self, salt: &[u8]) -> bool {
        let now = Instant::now();
        let mut guard = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let SaltLog { set, order } = &mut *guard;
        while let Some((at, _)) = order.front() {
            if now.duration_since(*at) < KEEP {
                break;
            }
            if let Some((_, old)) = order.pop_front() {
                set.remove(&old);
            }
        }
        if set.contains(salt) || set.len() >= MAX_SALTS {
            return false;
        }
        let salt: Box<[u8]> = salt.into();
        set.insert(salt.clone());
        order.push_back((now, salt));
        true
    }
}

/// A session: the user and the client's session id.
type SessionKey = (Arc<str>, u64);

/// The windows of one inbound's sessions.
#[derive(Default)]
pub(crate) struct Sessions {
    seen: Mutex<HashMap<SessionKey, (Window, Instant)>>,
}

impl Sessions {
    /// Records `packet_id` of `user`'s session `session_id`; false when it was seen
    /// (from any address), is too old for the window, or no room is left.
    pub(crate) fn accept(&self, user: &Arc<str>, session_id: u64, packet_id: u64) -> bool {
        let now = Instant::now();
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let key = (user.clone(), session_id);
        if !seen.contains_key(&key) && seen.len() >= MAX_SESSIONS {
            seen.retain(|_, (_, last)| now.duration_since(*last) < KEEP);
            if seen.len() >= MAX_SESSIONS {
                return false;
            }
        }
        let (window, last) = seen.entry(key).or_insert((Window::default(), now));
        *last = now;
        window.accept(packet_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_salt_passes_once_a_minute() {
        let s = Salts::default();
        assert!(s.accept(&[1; 16]));
        assert!(!s.accept(&[1; 16]), "replayed");
        assert!(s.accept(&[2; 16]));
        tokio::time::advance(KEEP - Duration::from_millis(1)).await;
        assert!(!s.accept(&[1; 16]), "still within the minute");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(
            s.accept(&[1; 16]),
            "forgotten after a minute (its timestamp is stale by then)"
        );
        assert!(!s.accept(&[1; 16]));
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_filter_refuses_until_salts_expire() {
        let s = Salts::default();
        for i in 0..MAX_SALTS as u32 {
            assert!(s.accept(&i.to_be_bytes()));
        }
        assert!(!s.accept(b"new"), "full");
        tokio::time::advance(KEEP).await;
        assert!(s.accept(b"new"), "room again");
    }

    #[tokio::test(start_paused = true)]
    async fn a_packet_id_passes_once_per_session_and_windows_expire() {
        let s = Sessions::default();
        let (alice, bob): (Arc<str>, Arc<str>) = ("alice".into(), "bob".into());
        assert!(s.accept(&alice, 7, 1));
        assert!(!s.accept(&alice, 7, 1), "replayed, whatever the source");
        assert!(s.accept(&alice, 8, 1), "another session");
        assert!(s.accept(&bob, 7, 1), "another user");
        tokio::time::advance(KEEP).await;
        // Idle windows are only dropped when room is needed: still refused.
        assert!(!s.accept(&alice, 7, 1));
    }
}
