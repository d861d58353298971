//! The integration tests of `node`, in one binary: one link instead of one per
//! file (faster builds, a fraction of the disk). Each module is what was a test file.

#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "tests, benchmarks and tools time real processes by the wall clock"
)]

mod common;
mod reality_support;
mod tunnel_support;

mod acme;
mod atomic_apply;
mod bittorrent;
mod cdn;
mod certificate_renewal;
mod channel;
mod clients;
mod config;
mod config_hardening;
mod config_paths;
mod control_api;
mod control_auth;
mod control_upgrade;
mod forwarded;
mod grpc;
mod httpupgrade;
mod hysteria2;
mod inline_tls;
mod journal_disk;
mod live_config;
mod probes_and_limits;
mod reality;
mod reality_dest;
mod routing_per_inbound;
mod shadowsocks;
mod sing_box;
mod subscription_entries;
mod tunnel;
mod tunnel_cdn;
mod tunnel_config;
mod tunnel_direct;
mod tunnel_faults;
mod tunnel_handover;
mod tunnel_reality;
mod tunnel_reality_dest;
mod two_tunnels;
mod vision;
mod xhttp;
mod xhttp_cdn;
mod xhttp_trojan;
