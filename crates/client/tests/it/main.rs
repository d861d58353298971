//! The client's integration tests, in one binary.

#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "tests, benchmarks and tools time real processes by the wall clock"
)]

mod auto_live;
mod clash_subscription;
mod hold;
mod http_proxy;
mod hysteria2;
mod hysteria2_hop;
mod icmp;
mod network;
mod outbounds;
mod page;
mod route_identity;
mod xhttp;
