use super::*;

/// An inner controller with a fixed window: what the bound does is all that moves.
#[derive(Clone)]
struct Fixed(u64);

impl Controller for Fixed {
    fn on_congestion_event(&mut self, _: Instant, _: Instant, _: bool, _: u64) {}
    fn on_mtu_update(&mut self, _: u16) {}
    fn window(&self) -> u64 {
        self.0
    }
    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }
    fn initial_window(&self) -> u64 {
        self.0
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

const MTU: u16 = 1_000;
const INNER: u64 = 1_000_000;

fn bound() -> Bound {
    Bound::new(Box::new(Fixed(INNER)), MTU)
}

/// One round trip: `packets` packets of one MTU sent after those already sent,
/// `lost` of them lost, the rest acknowledged, the last one ending the round.
fn round(b: &mut Bound, next_pn: &mut u64, packets: u64, lost: u64) {
    let t = tokio::time::Instant::now().into_std();
    for _ in 0..packets {
        b.on_sent(t, u64::from(MTU), *next_pn);
        *next_pn += 1;
    }
    if lost > 0 {
        b.on_congestion_event(t, t, false, lost * u64::from(MTU));
    }
    for _ in 0..packets - lost {
        b.count_acked(u64::from(MTU));
    }
    b.on_end_acks(t, 0, false, Some(*next_pn - 1));
}

/// Starts the test in a fresh round: the first acknowledgement ends round zero.
fn started() -> (Bound, u64) {
    let mut b = bound();
    let mut pn = 0;
    round(&mut b, &mut pn, 1, 0);
    (b, pn)
}

#[test]
fn rounds_within_two_percent_leave_the_inner_window_alone() {
    let (mut b, mut pn) = started();
    // 2 % exactly (4 of 200) is within the threshold; so is 1 %.
    round(&mut b, &mut pn, 200, 4);
    round(&mut b, &mut pn, 300, 3);
    assert_eq!(b.bound(), None);
    assert_eq!(b.window(), INNER);
}

#[test]
fn a_round_losing_more_than_two_percent_bounds_the_window_to_0_7_of_what_it_carried() {
    let (mut b, mut pn) = started();
    // 300 packets (300 kB) carried, 30 lost (10 %).
    round(&mut b, &mut pn, 300, 30);
    assert_eq!(b.bound(), Some(210_000));
    assert_eq!(b.window(), 210_000);
}

#[test]
fn two_lost_packets_are_no_signal_however_short_the_round() {
    let (mut b, mut pn) = started();
    round(&mut b, &mut pn, 10, 2);
    assert_eq!(b.bound(), None);
    round(&mut b, &mut pn, 10, 3);
    assert_eq!(b.bound(), Some(7_000));
}

#[test]
fn the_bound_never_goes_below_four_packets() {
    let (mut b, mut pn) = started();
    round(&mut b, &mut pn, 4, 3);
    assert_eq!(b.bound(), Some(4_000));
}

#[test]
fn clean_rounds_raise_the_bound_by_a_packet_each_then_lift_it() {
    let (mut b, mut pn) = started();
    round(&mut b, &mut pn, 1_000, 100);
    assert_eq!(b.bound(), Some(700_000));
    round(&mut b, &mut pn, 10, 0);
    assert_eq!(b.bound(), Some(701_000));
    round(&mut b, &mut pn, 10, 0);
    assert_eq!(b.bound(), Some(702_000));
    // 297 more rounds: 999 kB, still under the inner window of 1 MB.
    for _ in 0..297 {
        round(&mut b, &mut pn, 10, 0);
    }
    assert_eq!(b.bound(), Some(999_000));
    // The next one reaches it: lifted.
    round(&mut b, &mut pn, 10, 0);
    assert_eq!(b.bound(), None);
    assert_eq!(b.window(), INNER);
}

#[test]
fn a_second_lossy_round_cuts_from_the_bounded_window() {
    let (mut b, mut pn) = started();
    round(&mut b, &mut pn, 1_000, 100);
    round(&mut b, &mut pn, 10, 0);
    round(&mut b, &mut pn, 10, 0);
    assert_eq!(b.bound(), Some(702_000));
    // The round carried 900 kB, more than the window of 702 kB: the cut is from
    // the window.
    round(&mut b, &mut pn, 900, 90);
    assert_eq!(b.bound(), Some(491_400));
    round(&mut b, &mut pn, 10, 0);
    assert_eq!(b.bound(), Some(492_400));
}

#[test]
fn losses_reported_between_acknowledgements_count_in_the_round_they_fall_in() {
    let mut b = bound();
    let t = tokio::time::Instant::now().into_std();
    for pn in 0..100 {
        b.on_sent(t, u64::from(MTU), pn);
    }
    // The first acknowledgement ends round zero: the next ends with packet 99.
    b.count_acked(u64::from(MTU));
    b.on_end_acks(t, 0, false, Some(0));
    // Acknowledgements up to packet 49 do not end it.
    for _ in 1..50 {
        b.count_acked(u64::from(MTU));
    }
    b.on_end_acks(t, 0, false, Some(49));
    assert_eq!(b.bound(), None);
    // A loss timer fires for ten packets, then the rest is acknowledged: 99 kB
    // carried, 10 kB of it lost.
    b.on_congestion_event(t, t, false, 10 * u64::from(MTU));
    for _ in 0..40 {
        b.count_acked(u64::from(MTU));
    }
    b.on_end_acks(t, 0, false, Some(99));
    assert_eq!(b.bound(), Some(69_300));
}
