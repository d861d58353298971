//! The integration tests of `switchyard`, in one binary: one link instead of one per
//! file (faster builds, a fraction of the disk). Each module is what was a test file.

#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "tests, benchmarks and tools time real processes by the wall clock"
)]

mod clash_tun;
mod cli;
mod client;
mod client_network;
mod docs;
mod install_deb_vps;
mod install_panel_vps;
mod install_ssh_vps;
mod install_upgrade_vps;
mod install_vps;
mod node_cli;
mod node_join;
mod node_output;
mod panel_ha;
mod panel_import;
mod panel_rules;
mod panel_seed;
mod tunnel_init;
mod tunnel_init_modes;
mod up;
mod up_replace;
mod upgrade_action_vps;
mod vps_panel;

/// The log filter for the `switchyard` processes these tests start: `warn`, or
/// `SWITCHYARD_TEST_LOG` when set (to see what a failing run did).
fn test_log() -> String {
    std::env::var("SWITCHYARD_TEST_LOG").unwrap_or_else(|_| "warn".to_owned())
}
