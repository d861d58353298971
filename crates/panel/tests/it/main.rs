//! The integration tests of `panel`, in one binary: one link instead of one per
//! file (faster builds, a fraction of the disk). Each module is what was a test file.

#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "tests, benchmarks and tools time real processes by the wall clock"
)]

mod common;
mod live;

mod account;
mod acme;
mod acme_inbound;
mod address_limit;
mod api;
mod audit;
mod balancing;
mod bulk;
mod channel_flood;
mod dashboard;
mod grpc;
mod grpc_live;
mod https;
mod httpupgrade;
mod hysteria2;
mod hysteria2_live;
mod import_api;
mod import_common;
mod import_inbounds;
mod import_marzban;
mod import_marzban_mysql;
mod import_marzneshin;
mod import_pasarguard;
mod import_remnawave;
mod import_servers;
mod import_store;
mod import_xui;
mod import_xui3;
mod inbound_rules_live;
mod input_hygiene;
mod install_endpoints;
mod join_tokens;
mod listener;
mod logins;
mod nodes;
mod plans;
mod real_clients;
mod reality;
mod roles;
mod routes;
mod routing_api;
mod routing_presets;
mod rule_refresh;
mod schema_strict;
mod schemathesis;
mod ssh_install_api;
mod stats_hostile;
mod store_story;
mod sub_formats;
mod sub_hardening;
mod sub_vpn_tun;
mod subscription;
mod templates;
mod trusted_proxies;
mod tunnel_dests;
mod tunnels;
mod tunnels_instances;
mod tunnels_live;
mod tunnels_moves;
mod tunnels_profiles;
mod ui_account;
mod ui_acme;
mod ui_assets;
mod ui_browser;
mod ui_bulk;
mod ui_common;
mod ui_dashboard;
mod ui_hysteria2;
mod ui_import;
mod ui_inbound_rules;
mod ui_inbound_transport;
mod ui_languages;
mod ui_node_and_limits;
mod ui_roles;
mod ui_routing;
mod ui_ssh_install;
mod ui_templates;
mod ui_trusted_proxies;
mod ui_tunnel_cdn;
mod ui_webhooks;
mod ui_xhttp;
mod upgrade_api;
mod user_filters;
mod webhooks;
mod xhttp;
