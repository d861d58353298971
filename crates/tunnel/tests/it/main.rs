//! The integration tests of `tunnel`, in one binary: one link instead of one per
//! file (faster builds, a fraction of the disk). Each module is what was a test file.

#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "tests, benchmarks and tools time real processes by the wall clock"
)]

mod half_support;
mod link_support;
mod raw_support;

mod halves;
mod halves_live;
mod link_dialer;
mod link_handshake;
mod link_http;
mod link_listener;
mod link_tls;
mod mux;
mod mux_close;
mod mux_hostile;
mod mux_raw;
mod pool;
mod reality;
mod reality_site;
