//! # Test support: real peers and local targets on 127.0.0.1
//!
//! Integration tests of the node, the client and the tunnel use this crate (as a
//! dev-dependency only) to drive the **real sing-box** against our code and to give
//! the traffic somewhere to go, and the panel's tests to get a real PostgreSQL. It
//! owns:
//!
//! - [`SingBox`]: a sing-box process run from a JSON config, checked first with
//!   `sing-box check`, started, waited for until it holds every inbound's port, and
//!   killed on drop; its log's tail goes into every error and is printed when a
//!   test panics. [`config`] builds the configs the tests need (a client with a
//!   `mixed` SOCKS5/HTTP inbound and one outbound; a server with one inbound), and
//!   [`sing_box::binary`] finds the pinned binary that `cargo xtask peers` installs.
//! - [`Mihomo`] and [`Xray`]: the cores of the Clash-style and v2rayN-style client
//!   apps, run the same way from the configs our subscriptions serve (YAML text, a
//!   JSON value), each with a checker ([`mihomo::check`]: `mihomo -t`;
//!   [`xray::check`]: `xray run -test`). Xray always runs as `nobody`.
//! - [`HttpTarget`]: a tiny HTTP/1.1 server serving deterministic bytes
//!   ([`pattern`]) and a sink that answers with the length and checksum of what it
//!   read, with [`http`] helpers to fetch through a proxy and verify.
//! - [`UdpEcho`]: a UDP echo server, with a helper that sends datagrams through a
//!   SOCKS5 UDP ASSOCIATE and checks the echoes ([`socks5`] is the client).
//! - [`Postgres`]: a private PostgreSQL cluster in a temporary directory on a free
//!   port of 127.0.0.1, with a fresh database per test ([`postgres::bin_dir`] finds
//!   the server that `cargo xtask peers` installs), stopped and removed on drop.
//! - [`schemathesis::binary`]: the pinned schemathesis's `st`, for the panel's API
//!   tests against its OpenAPI document.
//! - [`load`]: an HTTP/1.1 load generator (keep-alive connections, latency
//!   percentiles), run as the `loadgen` binary by `cargo xtask bench panel`.
//! - [`Browser`]: a headless Chromium driven through chromedriver (WebDriver), for
//!   the panel's web UI tests: pages, elements, waits, pointer drags, keys,
//!   screenshots and the console's errors ([`browser::chromedriver`] finds the
//!   Debian package that `cargo xtask peers` installs), killed with its driver on
//!   drop.
//! - [`TestCert`]: a self-signed certificate for a name, as PEM text and files.
//! - [`Nginx`]: Debian's nginx standing in for a CDN in front of a node (its own
//!   TLS, WebSocket and HTTPUpgrade passed on with the upgrade headers, gRPC through
//!   `grpc_pass`, buffering off).
//! - [`pebble::Pebble`]: Let's Encrypt's ACME test server (Debian's `pebble`) on
//!   127.0.0.1, validating TLS-ALPN-01 on the port the test names.
//! - [`dns::DnsRecorder`]: a resolver that writes down every name it is asked (which
//!   resolver a client's questions reached: DNS leaks); [`phone::Phone`]: a phone and
//!   an internet in two namespaces, with both sides' resolvers and a target, for
//!   VPN clients with a TUN.
//! - [`fault::FaultProxy`]: a TCP proxy that passes, refuses, blackholes or cuts
//!   connections on command.
//! - [`netns`]: a real "no network": two network namespaces joined by a veth
//!   ([`netns::pair`]) whose client side a test takes down and brings back, code run
//!   inside them (a thread, a tokio runtime, a process), and a bridge from them to
//!   nodes on the root's 127.0.0.1.
//! - [`Vps`]: a "fresh VPS", a copy of a Debian root (made by `cargo xtask peers`
//!   with debootstrap) booted with `systemd-nspawn --boot` in a [`netns`] namespace,
//!   with scripts run inside as root ([`vps`]); halted and removed on drop.
//! - [`free_port`]: a port for configs that need a fixed one.
//!
//! Everything here listens on or connects to 127.0.0.1 only, or to the addresses of
//! the namespaces [`netns`] makes itself; nothing reaches outside the machine. Errors are `anyhow` with context, since this is test support: a
//! failing test should say what broke and show sing-box's own words.

#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "tests, benchmarks and tools time real processes by the wall clock"
)]
#![warn(missing_docs)]

pub mod browser;
pub mod cert;
pub mod config;
pub mod dns;
pub mod fault;
pub mod http;
pub mod load;
pub mod lossy;
pub mod mariadb;
pub mod marzban;
pub mod marzneshin;
pub mod mihomo;
pub mod netns;
pub mod nginx;
pub mod pasarguard;
pub mod pattern;
pub mod pebble;
mod peer;
pub mod phone;
pub mod pin;
pub mod ports;
pub mod postgres;
mod python_panel;
pub mod schemathesis;
pub mod sing_box;
mod sockets;
pub mod socks5;
pub mod udp_echo;
pub mod vps;
pub mod xray;

use std::net::{Ipv4Addr, SocketAddr};

use anyhow::Result;

pub use browser::Browser;
pub use cert::TestCert;
pub use http::HttpTarget;
pub use mihomo::Mihomo;
pub use nginx::Nginx;
pub use postgres::Postgres;
pub use sing_box::SingBox;
pub use udp_echo::UdpEcho;
pub use vps::Vps;
pub use xray::Xray;

/// 127.0.0.1, the only address the tests use.
pub const LOCALHOST: Ipv4Addr = Ipv4Addr::LOCALHOST;

/// A port on 127.0.0.1 (TCP and UDP) that was free a moment ago, for configs that must name a
/// fixed port (sing-box's `listen_port`, a node's inbound): [`ports::free_port`],
/// which never hands two tests of this machine the same port at once.
///
/// The port is released before the config's owner binds it, so another program may
/// still take it in between; the kernel hands out ephemeral ports in sequence, which
/// makes that rare; when it happens, the owner fails to bind and [`SingBox::start`]
/// reports sing-box's "address already in use". Servers of our own should bind port
/// 0 instead.
pub fn free_port() -> Result<u16> {
    ports::free_port()
}

/// `127.0.0.1:port`.
pub fn local(port: u16) -> SocketAddr {
    SocketAddr::from((LOCALHOST, port))
}
