//! Pieces of the tests that run a real panel with real nodes on 127.0.0.1.

#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::time::{Duration, Instant};

use switchyard_channel::JoinToken;
use switchyard_node::channel::{EnrolledNode, EnrolledOptions, run_enrolled};
use switchyard_node::config::ControlSettings;
use switchyard_panel::store::UserInput;

/// Unix ms now.
pub fn now() -> i64 {
    switchyard_node::accounting::now_ms()
}

/// Polls `f` every 100 ms until it holds; fails after `secs`.
pub async fn wait_until<F: std::future::Future<Output = bool>>(
    what: &str,
    secs: u64,
    mut f: impl FnMut() -> F,
) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f().await {
        assert!(Instant::now() < deadline, "{what} within {secs} s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A node with its state in `dir`, joining with `token`, its control API on a free
/// port of 127.0.0.1, redialing fast.
pub async fn join(dir: &Path, token: &str) -> EnrolledNode {
    let mut options = EnrolledOptions::new(dir.to_owned());
    options.token = Some(JoinToken::parse(token).unwrap());
    options.control = Some(ControlSettings {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..ControlSettings::default()
    });
    options.channel.backoff.first = Duration::from_millis(100);
    options.channel.backoff.max = Duration::from_millis(500);
    run_enrolled(options).await.unwrap()
}

/// An enabled user without limits.
pub fn user(name: &str) -> UserInput {
    UserInput {
        username: name.into(),
        enabled: true,
        note: String::new(),
        traffic_limit: None,
        reset_strategy: Default::default(),
        expires_ms: None,
        on_hold_days: None,
        device_limit: None,
        clusters: None,
    }
}
