//! Shadowsocks UDP sessions seen lately: one packet-id window per user and client
//! session id, shared by every source address (a packet replayed from another
//! address is refused) and kept across rebuilds of the inbound.

use std::collections::HashMap;
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
