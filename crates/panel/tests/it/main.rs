//! The integration tests of `panel`, in one binary: one link instead of one per
//! file (faster builds, a fraction of the disk). Each module is what was a test file.

mod common;
mod live;

mod api;
mod balancing;
mod nodes;
mod real_clients;
mod reality;
mod routes;
mod schemathesis;
mod store_story;
mod sub_formats;
mod subscription;
mod tunnels;
mod tunnels_live;
mod tunnels_moves;
mod ui_assets;
mod ui_browser;
