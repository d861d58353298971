use super::*;

/// A controller whose fallback is a fixed window, `rate` bytes per second, at
/// `start`.
fn brutal(start: Instant, rate: u64) -> Brutal {
    let fallback = Arc::new(quinn::congestion::NewRenoConfig::default()).build(start, 1200);
    let b = Brutal::new(fallback, start, 1200);
    b.rate.store(rate, Ordering::Relaxed);
    b
}

const MB: u64 = 1_000_000;

#[test]
fn the_window_is_the_rate_times_the_rtt_until_losses_count() {
    let t0 = tokio::time::Instant::now().into_std();
    let mut b = brutal(t0, 10 * MB);
    // 10 MB/s × 50 ms = 500 kB, no loss yet.
    b.update_window(t0, Duration::from_millis(50));
    assert_eq!(b.window(), 500_000);
    // Fewer than 60 kB counted: losses do not count yet.
    b.record_ack(t0, 30_000);
    b.on_congestion_event(t0, t0, false, 20_000);
    b.update_window(t0, Duration::from_millis(50));
    assert_eq!(b.window(), 500_000);
}

#[test]
fn losses_raise_the_window_by_the_ack_rate_down_to_0_8() {
    let t0 = tokio::time::Instant::now().into_std();
    let mut b = brutal(t0, 10 * MB);
    // 90 % acked: the window is 500 kB ÷ 0.9.
    b.record_ack(t0, 90_000);
    b.on_congestion_event(t0, t0, false, 10_000);
    b.update_window(t0, Duration::from_millis(50));
    assert_eq!(b.window(), 555_555);
    // Half lost: the ack rate is held at 0.8, so at most 1.25× the rate.
    b.on_congestion_event(t0, t0, false, 80_000);
    b.update_window(t0, Duration::from_millis(50));
    assert_eq!(b.window(), 625_000);
}

#[test]
fn the_ack_rate_forgets_what_is_older_than_five_seconds() {
    let t0 = tokio::time::Instant::now().into_std();
    let mut b = brutal(t0, 10 * MB);
    b.record_ack(t0, 50_000);
    b.on_congestion_event(t0, t0, false, 50_000);
    let later = t0 + Duration::from_secs(5);
    b.record_ack(later, 100_000);
    b.update_window(later, Duration::from_millis(50));
    assert_eq!(b.window(), 500_000, "the lossy second is 5 s old");
    let within = t0 + Duration::from_secs(4);
    let mut c = brutal(t0, 10 * MB);
    c.record_ack(t0, 50_000);
    c.on_congestion_event(t0, t0, false, 50_000);
    c.record_ack(within, 100_000);
    c.update_window(within, Duration::from_millis(50));
    // 150 kB acked of 200 kB: 0.75, held at 0.8.
    assert_eq!(c.window(), 625_000);
}

#[test]
fn no_rate_means_the_fallback_and_a_floor_of_ten_packets() {
    let t0 = tokio::time::Instant::now().into_std();
    let mut b = brutal(t0, 0);
    let fallback = b.fallback.window();
    b.update_window(t0, Duration::from_millis(50));
    assert_eq!(b.window(), fallback, "rate 0: the fallback's window");
    b.rate.store(10 * MB, Ordering::Relaxed);
    // 10 MB/s × 100 µs = 1 kB: the floor, 10 packets of 1200 bytes.
    b.update_window(t0, Duration::from_micros(100));
    assert_eq!(b.window(), 12_000);
    b.on_mtu_update(1400);
    b.update_window(t0, Duration::from_micros(100));
    assert_eq!(b.window(), 14_000);
}

#[test]
fn a_copy_shares_the_rate() {
    let t0 = tokio::time::Instant::now().into_std();
    let b = brutal(t0, 0);
    let copy = b.clone_box().into_any().downcast::<Brutal>().unwrap();
    copy.rate.store(5 * MB, Ordering::Relaxed);
    assert_eq!(b.rate.load(Ordering::Relaxed), 5 * MB);
}
