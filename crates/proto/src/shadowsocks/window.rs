//! The sliding window of packet ids a UDP session has seen (SIP022 replay protection:
//! timestamps bound a packet's age, the window drops packet ids already had). The
//! node keeps one per client session, Switchyard's client one per server session.

/// Packet ids remembered behind the newest one.
pub const WIDTH: u64 = 128;

/// Which of the last [`WIDTH`] packet ids were seen.
#[derive(Debug, Default)]
pub struct Window {
    /// The newest id seen, if any.
    top: Option<u64>,
    /// Bit `i` set: id `top - i` was seen.
    seen: u128,
}

impl Window {
    /// Records `id`; false when it was seen before or is too old to tell.
    pub fn accept(&mut self, id: u64) -> bool {
        let Some(top) = self.top else {
            self.top = Some(id);
            self.seen = 1;
            return true;
        };
        if id > top {
            let shift = id - top;
            self.seen = if shift >= WIDTH {
                0
            } else {
                self.seen << shift
            };
            self.seen |= 1;
            self.top = Some(id);
            return true;
        }
        let back = top - id;
        if back >= WIDTH || self.seen & (1 << back) != 0 {
            return false;
        }
        self.seen |= 1 << back;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_id_passes_once_in_any_order() {
        let mut w = Window::default();
        assert!(w.accept(5));
        assert!(w.accept(3));
        assert!(w.accept(7));
        assert!(!w.accept(5));
        assert!(!w.accept(3));
        assert!(!w.accept(7));
        assert!(w.accept(6));
        assert!(w.accept(0));
    }

    #[test]
    fn ids_older_than_the_window_are_dropped() {
        let mut w = Window::default();
        assert!(w.accept(1000));
        assert!(!w.accept(1000 - WIDTH));
        assert!(w.accept(1000 - WIDTH + 1));
        assert!(w.accept(5000));
        assert!(!w.accept(1000));
    }
}
