//! # The Switchyard panel
//!
//! The control plane: the model (clusters, servers, inbounds, routes, users, admins),
//! its storage (SQLite by default, PostgreSQL for several instances), the REST API
//! with its auth, the nodes' control channels (enrollment, desired-config push, stats
//! by journal cursor, health), and subscriptions.
//!
//! Decisions are pure functions over a snapshot of the model ([`model`], [`render`]);
//! the async shell ([`store`], [`nodes`], [`api`]) loads, stores, serves and pushes.

#![warn(missing_docs)]

pub mod acme;
pub mod api;
pub mod clock;
pub mod config;
mod https;
pub mod import;
pub mod install;
pub mod metrics;
pub mod model;
pub mod nodes;
pub mod proxies;
pub mod render;
pub mod rule_data;
pub mod rule_refresh;
pub mod run;
pub mod serve;
pub mod service;
pub mod ssh_install;
pub mod store;
pub mod subscription;
pub mod ui;
pub mod upgrade;
pub mod webhooks;

pub use config::PanelConfig;
pub use run::Panel;
