//! End-to-end benchmark of the node against sing-box as the server.
//!
//! Both servers run as their own processes, side by side in one run: our release
//! binary (`switchyard node --config FILE`) and sing-box (`sing-box run`). Each sits
//! behind its own sing-box client of the same config, and every request goes from
//! this process through the client's SOCKS5 port and the server to the same local
//! target ([`HttpTarget`], or a TCP server that accepts and holds for the idle
//! connections). Which server is measured first alternates between repetitions.
//!
//! Measured per protocol (VLESS+TLS, Trojan+TLS, Shadowsocks-2022 aes-128-gcm):
//! bulk download over 1 and over 32 connections, new connections per second, and the
//! server's resident memory per idle proxied connection. The medians and the ratio
//! ours / sing-box are printed and, when `SWITCHYARD_NODE_BENCH_REPORT` names a file,
//! written there as Markdown (`cargo xtask bench node` puts that into
//! `docs/benchmarks.md`).
//!
//! Everything listens on and connects to 127.0.0.1 only. Every process started here is
//! killed when its owner is dropped, on success, error or panic alike.

mod hello;
mod load;
mod report;
mod server;

use std::fs;
use std::path::PathBuf;

use anyhow::{Context, Result};
use serde_json::{Value, json};
use switchyard_testkit::config::{
    shadowsocks_inbound, shadowsocks_outbound, tls_client, tls_server, trojan_inbound,
    trojan_outbound, vless_inbound, vless_outbound,
};
use switchyard_testkit::{HttpTarget, SingBox, TestCert, local};

use crate::report::{Metric, Row};
use crate::server::{Server, Side};

/// Whether our node serves Shadowsocks-2022 in this build. While it is `false` the
/// Shadowsocks rows measure sing-box only and show ours as "n/a".
const OURS_SERVES_SHADOWSOCKS: bool = true;

/// Bytes downloaded per bulk case (split evenly over its connections).
const BULK_BYTES: u64 = 256 << 20;
/// Parallel connections of the wide bulk case.
const BULK_WIDE: u64 = 32;
/// Sequential requests per connection-rate measurement, and the body each fetches.
const CPS_REQUESTS: u32 = 500;
const CPS_BODY: u64 = 1024;
/// Idle proxied connections held open for the memory measurement.
const IDLE_CONNECTIONS: usize = 1000;
/// Repetitions of each measurement; the median is reported.
const REPS: usize = 5;
/// Repetitions of the memory measurement, each with fresh processes: its spread is
/// small, and each costs a thousand TLS handshakes.
const MEM_REPS: usize = 3;

/// Credentials, the same for both servers.
const UUID: &str = "6f1c3f2e-9a0b-4c5d-8e7f-102132435465";
const TROJAN_PASSWORD: &str = "bench-password";
const SS_METHOD: &str = "2022-blake3-aes-128-gcm";
const SS_SERVER_KEY: &str = "YmVuY2gtc2VydmVyLWtleQ=="; // "bench-server-key"
const SS_USER_KEY: &str = "YmVuY2gtdXNlci1rZXkhIQ=="; // "bench-user-key!!"

/// A protocol as both servers serve it and the client speaks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Protocol {
    VlessTls,
    TrojanTls,
    Shadowsocks,
}

impl Protocol {
    const ALL: [Self; 3] = [Self::VlessTls, Self::TrojanTls, Self::Shadowsocks];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::VlessTls => "VLESS+TLS",
            Self::TrojanTls => "Trojan+TLS",
            Self::Shadowsocks => "SS-2022 aes-128-gcm",
        }
    }

    fn tls(self) -> bool {
        self != Self::Shadowsocks
    }

    /// The body of our node's `[[inbounds]]` table (without tag and port).
    pub(crate) fn ours_inbound(self, cert: &TestCert) -> String {
        let tls = format!(
            "security = {{ type = \"tls\", cert = \"{}\", key = \"{}\" }}",
            cert.cert_path().display(),
            cert.key_path().display()
        );
        match self {
            Self::VlessTls => format!("protocol = \"vless\"\n{tls}"),
            Self::TrojanTls => format!("protocol = \"trojan\"\n{tls}"),
            Self::Shadowsocks => format!(
                "protocol = \"shadowsocks\"\nmethod = \"{SS_METHOD}\"\npassword = \"{SS_SERVER_KEY}\""
            ),
        }
    }

    /// Our node's `[[users]]` table: the one user.
    pub(crate) fn ours_user(self) -> String {
        let ss = match self {
            Self::Shadowsocks => format!("shadowsocks = \"{SS_USER_KEY}\"\n"),
            _ => String::new(),
        };
        format!(
            "[[users]]\nname = \"bench\"\nvless = \"{UUID}\"\ntrojan = \"{TROJAN_PASSWORD}\"\n{ss}"
        )
    }

    /// sing-box's inbound on `port`. Shadowsocks is multi-user (server key plus one
    /// user), as our node's is, so the client's config is the same for both.
    pub(crate) fn sing_box_inbound(self, port: u16, cert: &TestCert) -> Value {
        match self {
            Self::VlessTls => {
                let mut inbound = vless_inbound(port, UUID);
                inbound["tls"] = tls_server(cert);
                inbound
            }
            Self::TrojanTls => trojan_inbound(port, TROJAN_PASSWORD, tls_server(cert)),
            Self::Shadowsocks => {
                let mut inbound = shadowsocks_inbound(port, SS_METHOD, SS_SERVER_KEY);
                inbound["users"] = json!([{ "name": "bench", "password": SS_USER_KEY }]);
                inbound
            }
        }
    }

    /// The client's outbound to a server on `port`.
    pub(crate) fn outbound(self, port: u16, cert: &TestCert) -> Value {
        let server = local(port);
        match self {
            Self::VlessTls => {
                let mut out = vless_outbound(server, UUID);
                out["tls"] = tls_client(cert);
                out
            }
            Self::TrojanTls => trojan_outbound(server, TROJAN_PASSWORD, tls_client(cert)),
            Self::Shadowsocks => {
                shadowsocks_outbound(server, SS_METHOD, &format!("{SS_SERVER_KEY}:{SS_USER_KEY}"))
            }
        }
    }

    /// The sides measured: ours only when this build serves the protocol.
    fn sides(self) -> Vec<Side> {
        if self == Self::Shadowsocks && !OURS_SERVES_SHADOWSOCKS {
            vec![Side::SingBox]
        } else {
            vec![Side::Ours, Side::SingBox]
        }
    }
}

/// The sides in the order repetition `rep` measures them: alternating.
fn in_order(sides: &[Side], rep: usize) -> Vec<Side> {
    let mut order = sides.to_vec();
    if rep % 2 == 1 {
        order.reverse();
    }
    order
}

/// A server and the client in front of it.
struct Pair {
    server: Server,
    client: SingBox,
}

impl Pair {
    async fn start(side: Side, protocol: Protocol, cert: &TestCert) -> Result<Self> {
        let server = Server::start(side, protocol, cert).await?;
        let client = SingBox::client(protocol.outbound(server.port(), cert))
            .await
            .with_context(|| format!("starting the sing-box client for {}", side.name()))?;
        Ok(Self { server, client })
    }

    fn proxy(&self) -> Result<std::net::SocketAddr> {
        self.client.proxy_addr()
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let binary = server::ours_binary()?;
    println!(
        "node benchmark: ours = {}, sing-box = {}",
        binary.display(),
        switchyard_testkit::sing_box::binary()?.display()
    );
    let mut rows = Vec::new();
    let mut suites = Vec::new();
    for protocol in Protocol::ALL {
        println!("\n== {}", protocol.name());
        rows.extend(
            bench_protocol(protocol, &mut suites)
                .await
                .with_context(|| format!("benchmarking {}", protocol.name()))?,
        );
    }
    let markdown = report::markdown(&rows, &suites, OURS_SERVES_SHADOWSOCKS);
    println!("\n{markdown}");
    if let Some(path) = std::env::var_os("SWITCHYARD_NODE_BENCH_REPORT").map(PathBuf::from) {
        fs::write(&path, &markdown).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

async fn bench_protocol(protocol: Protocol, suites: &mut Vec<String>) -> Result<Vec<Row>> {
    let cert = TestCert::new("node.test")?;
    let target = HttpTarget::start().await?;
    let sides = protocol.sides();
    let mut rows: Vec<Row> = [
        Metric::Bulk1,
        Metric::BulkWide,
        Metric::CpuPerGb,
        Metric::Cps,
        Metric::IdleMem,
    ]
    .into_iter()
    .map(|metric| Row::new(protocol, metric))
    .collect();

    {
        let mut pairs = Vec::new();
        for &side in &sides {
            pairs.push((side, Pair::start(side, protocol, &cert).await?));
        }
        if protocol.tls() {
            for (side, pair) in &pairs {
                let suite = hello::negotiated(protocol, pair.server.port(), &cert, &target).await?;
                println!("{}: the client negotiated {suite}", side.name());
                suites.push(format!("{} with {}: {suite}", protocol.name(), side.name()));
            }
        }
        for (_, pair) in &pairs {
            // Warm-up: lazily built state (TLS session tickets, buffers, thread pools).
            load::bulk(pair.proxy()?, &target, 8 << 20, 4).await?;
        }
        for rep in 0..REPS {
            for side in in_order(&sides, rep) {
                let pair = &pairs.iter().find(|(s, _)| *s == side).expect("started").1;
                let proxy = pair.proxy()?;
                let cpu_before = pair.server.cpu_seconds()?;
                let one = load::bulk(proxy, &target, BULK_BYTES, 1).await?;
                let wide = load::bulk(proxy, &target, BULK_BYTES, BULK_WIDE).await?;
                // The server's CPU time per GB carried, over both downloads.
                let cpu_ms = (pair.server.cpu_seconds()? - cpu_before) * 1e3
                    / (2.0 * BULK_BYTES as f64 / 1e9);
                let cps =
                    load::connections_per_second(proxy, &target, CPS_REQUESTS, CPS_BODY).await?;
                println!(
                    "  rep {rep} {:>8}: bulk×1 {one:7.1} MB/s, bulk×{BULK_WIDE} {wide:7.1} MB/s, \
                     {cps:6.0} conn/s, server CPU {cpu_ms:4.0} ms/GB",
                    side.name()
                );
                rows[0].push(side, one);
                rows[1].push(side, wide);
                rows[2].push(side, cpu_ms);
                rows[3].push(side, cps);
            }
        }
    }

    // Memory: a fresh server (and client) per repetition, so each starts from the
    // same state.
    for rep in 0..MEM_REPS {
        for side in in_order(&sides, rep) {
            let mut pair = Pair::start(side, protocol, &cert).await?;
            let proxy = pair.proxy()?;
            let per_conn = load::idle_memory(&mut pair.server, proxy, &target, IDLE_CONNECTIONS)
                .await
                .with_context(|| format!("idle connections through {}", side.name()))?;
            println!(
                "  rep {rep} {:>8}: {:.1} KiB per idle connection",
                side.name(),
                per_conn / 1024.0
            );
            rows[4].push(side, per_conn);
        }
    }
    Ok(rows)
}
