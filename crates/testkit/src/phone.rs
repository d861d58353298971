//! A "phone" and an "internet" for VPN tests: a [`netns::pair`] where the client side
//! (the phone, 10.77.0.2) has its default route to the servers side (10.77.0.1) and
//! its own `resolv.conf` naming a resolver there, and the servers side holds, on its
//! loopback, a target (`target.test`, [`TARGET`], an [`HttpTarget`]) and a second
//! resolver ([`REMOTE_DNS`]) for the far side. Both resolvers are [`DnsRecorder`]s,
//! so a test sees which one a name reached: the phone's own is asked nothing when
//! there is no DNS leak. The phone could reach the target directly, so a target that
//! sees the phone's address ([`netns::CLIENT_ADDR`]) means the traffic went around
//! the VPN.
//!
//! A VPN client runs in the phone with [`netns::NetNs::command`] as root; [`Phone::
//! wait_for_tun`] waits until it has a TUN and routing rules, [`Phone::curl`] fetches
//! the target by name with the real curl and no proxy settings.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::HttpTarget;
use crate::dns::DnsRecorder;
use crate::netns::{self, Pair, ResolvConf};

/// The target's address, in the servers side.
pub const TARGET: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 1);
/// The far side's resolver, in the servers side.
pub const REMOTE_DNS: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 2);
/// The name the resolvers give the target.
pub const TARGET_NAME: &str = "target.test";
/// The variable naming curl (`cargo xtask peers` sets it).
pub const CURL_ENV: &str = "SWITCHYARD_CURL";

/// The two sides, their resolvers and the target.
pub struct Phone {
    /// The namespaces.
    pub pair: Pair,
    /// The phone's own resolver (its `resolv.conf`), at 10.77.0.1.
    pub local_dns: DnsRecorder,
    /// The far side's resolver, at [`REMOTE_DNS`].
    pub remote_dns: DnsRecorder,
    /// The target, at [`TARGET`] port 80.
    pub target: HttpTarget,
    _resolv: [ResolvConf; 2],
}

impl Phone {
    /// Makes the namespaces, the addresses, the phone's route, both resolvers (the
    /// servers side's processes get the far one in their `resolv.conf`) and the
    /// target.
    pub fn new() -> Result<Self> {
        let pair = netns::pair()?;
        for addr in [TARGET, REMOTE_DNS] {
            pair.servers
                .ip(&["addr", "add", &format!("{addr}/32"), "dev", "lo"])?;
        }
        pair.client.ip(&[
            "route",
            "add",
            "default",
            "via",
            &netns::SERVERS_ADDR.to_string(),
        ])?;
        let known = [(TARGET_NAME, TARGET)];
        let local_dns = DnsRecorder::start_in(&pair.servers, netns::SERVERS_ADDR, &known)?;
        let remote_dns = DnsRecorder::start_in(&pair.servers, REMOTE_DNS, &known)?;
        let resolv = [
            pair.client.resolv_conf(netns::SERVERS_ADDR)?,
            pair.servers.resolv_conf(REMOTE_DNS)?,
        ];
        let target =
            HttpTarget::start_on(pair.servers.tcp_listener(SocketAddr::from((TARGET, 80)))?)?;
        Ok(Self {
            pair,
            local_dns,
            remote_dns,
            target,
            _resolv: resolv,
        })
    }

    /// Waits (20 s at most) until the phone has a TUN and policy routing rules
    /// beyond the kernel's three; `client` is the VPN client, whose exit ends the
    /// wait with `log()`.
    pub async fn wait_for_tun(
        &self,
        client: &mut tokio::process::Child,
        log: impl Fn() -> String,
    ) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let links = self
                .pair
                .client
                .ip(&["-o", "link", "show", "type", "tun"])?;
            let rules = self.pair.client.ip(&["rule", "show"])?;
            if !links.trim().is_empty() && rules.lines().count() > 3 {
                return Ok(());
            }
            if let Some(status) = client.try_wait()? {
                bail!("the VPN client exited ({status}):\n{}", log());
            }
            if Instant::now() > deadline {
                bail!("no TUN within 20 s: {links}\n{rules}\n{}", log());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `curl http://target.test/bytes/{n}` in the phone, with no proxy settings,
    /// retried for 20 s while the VPN settles; the body, checked byte for byte.
    pub async fn curl(&self, n: u64) -> Result<()> {
        let curl = std::env::var(CURL_ENV).unwrap_or_else(|_| "/usr/bin/curl".into());
        if !std::path::Path::new(&curl).is_file() {
            bail!(
                "curl is not at {curl}: run `cargo xtask peers` (Debian's curl) or set {CURL_ENV}"
            );
        }
        let url = format!("http://{TARGET_NAME}/bytes/{n}");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let mut command = self.pair.client.command(&curl);
            command.args(["-sS", "--max-time", "5", &url]);
            for var in [
                "http_proxy",
                "HTTP_PROXY",
                "https_proxy",
                "all_proxy",
                "ALL_PROXY",
            ] {
                command.env_remove(var);
            }
            let out = tokio::process::Command::from(command)
                .output()
                .await
                .context("running curl in the phone")?;
            if out.status.success() {
                if out.stdout.len() as u64 != n
                    || crate::pattern::first_mismatch(0, &out.stdout).is_some()
                {
                    bail!("curl got {} bytes, not the pattern's {n}", out.stdout.len());
                }
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "curl {url} through the VPN within 20 s: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    /// Whether the target ever saw the phone itself (a connection around the VPN).
    pub fn target_saw_the_phone(&self) -> bool {
        self.target
            .peers()
            .iter()
            .any(|p| p.ip() == IpAddr::from(netns::CLIENT_ADDR))
    }
}
