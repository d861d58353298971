//! `switchyard client`: the end user's program. `run` fetches the subscriptions,
//! serves the local proxy (SOCKS5 and HTTP CONNECT on one port) and runs Auto on the
//! first subscription: the server it connects to, checks on real traffic, switches.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use switchyard_auto::{AutoConfig, Method, Platform};
use switchyard_client::auto::{AutoSettings, Status, SubscriptionServers};
use switchyard_client::control::{self, Request};
use switchyard_client::probe::ProbeUrl;
use switchyard_client::{Proxy, fetch};

/// How long to wait before fetching a first subscription without a usable server
/// again.
const EMPTY_RETRY: std::time::Duration = std::time::Duration::from_secs(2);

/// The client's subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum ClientCommand {
    /// Fetch the subscriptions and serve the local proxy in the foreground.
    Run(RunArgs),
    /// The running client's queue: servers with their scores and marks, the current
    /// and return servers, the last events (JSON).
    Status(DataArg),
    /// Mark servers (by name) Auto must not switch to; `done` applies the marks.
    Mark(NamesArg),
    /// Remove marks.
    Unmark(NamesArg),
    /// Apply the marks: leave a marked current server.
    Done(DataArg),
    /// Fetch every subscription again now.
    Update(DataArg),
}

/// Where the running client keeps its state (its control socket is in it).
#[derive(Debug, Args)]
pub(crate) struct DataArg {
    /// The client's data directory.
    #[arg(long, default_value = "switchyard-client-data")]
    data: PathBuf,
}

/// Servers by name, and the data directory.
#[derive(Debug, Args)]
pub(crate) struct NamesArg {
    #[command(flatten)]
    data: DataArg,
    /// The servers' names, as `status` shows them.
    #[arg(required = true)]
    servers: Vec<String>,
}

const SOCKET: &str = "control.sock";

/// `switchyard client run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// A subscription URL (several allowed, in order).
    #[arg(long = "subscription", required = true)]
    subscriptions: Vec<String>,
    /// The local proxy's address (SOCKS5 and HTTP CONNECT).
    #[arg(long, default_value = "127.0.0.1:2080")]
    listen: SocketAddr,
    /// `desktop` (a stall is 5 s of data out with nothing back) or `mobile` (2 s).
    #[arg(long, default_value = "desktop")]
    platform: String,
    /// How checks probe servers: `url` (an HTTP request through the server), `tcp`
    /// (connect time) or `icmp`.
    #[arg(long, default_value = "url")]
    probe: String,
    /// The test URL of URL probes (plain http://).
    #[arg(long, default_value = "http://cp.cloudflare.com/generate_204")]
    probe_url: String,
    /// Each probe counts as no answer past this many milliseconds.
    #[arg(long, default_value_t = 5000)]
    probe_timeout_ms: u64,
    /// Keep the connections through the old server open on a switch (default: close
    /// them, so apps reconnect through the working one).
    #[arg(long)]
    keep_connections: bool,
    #[command(flatten)]
    data: DataArg,
}

impl ClientCommand {
    pub(crate) fn run(self) -> anyhow::Result<()> {
        let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
        let (data, request) = match self {
            Self::Run(args) => {
                super::node::init_logs();
                return runtime.block_on(args.run());
            }
            Self::Status(d) => (d, Request::Status),
            Self::Mark(n) => (n.data, Request::Mark { servers: n.servers }),
            Self::Unmark(n) => (n.data, Request::Unmark { servers: n.servers }),
            Self::Done(d) => (d, Request::Done),
            Self::Update(d) => (d, Request::Update),
        };
        let answer = runtime
            .block_on(control::call(&data.data.join(SOCKET), &request))
            .context("is `switchyard client run` running with this --data?")?;
        println!("{}", serde_json::to_string_pretty(&answer)?);
        if answer["ok"] != true {
            bail!(
                "{}",
                answer["error"]
                    .as_str()
                    .unwrap_or("the client refused the request")
            );
        }
        Ok(())
    }
}

impl RunArgs {
    fn settings(&self) -> anyhow::Result<AutoSettings> {
        let mut config = AutoConfig {
            platform: match self.platform.as_str() {
                "desktop" => Platform::Desktop,
                "mobile" => Platform::Mobile,
                other => bail!("--platform {other:?}: use desktop or mobile"),
            },
            method: match self.probe.as_str() {
                "url" => Method::Url,
                "tcp" => Method::Tcp,
                "icmp" => Method::Icmp,
                other => bail!("--probe {other:?}: use url, tcp or icmp"),
            },
            ..AutoConfig::default()
        };
        config.probe_timeout = std::time::Duration::from_millis(self.probe_timeout_ms);
        config.validate().context("--probe-timeout-ms")?;
        Ok(AutoSettings {
            config,
            probe_url: ProbeUrl::parse(&self.probe_url)
                .map_err(|e| anyhow::anyhow!("--probe-url: {e}"))?,
            keep_connections: self.keep_connections,
            refresh_every: None,
            state_file: Some(self.data.data.join("auto-state.json")),
        })
    }

    async fn run(self) -> anyhow::Result<()> {
        let settings = self.settings()?;
        // A first subscription without a usable server (a panel still catching up
        // with a new node, say) is fetched again until it has one; a URL that fails
        // is an error at once.
        let subs = loop {
            let subs = self.fetch_all().await?;
            if subs.first().is_some_and(|s| !s.servers.is_empty()) {
                break subs;
            }
            eprintln!(
                "no usable server in {} yet: fetching it again in {} s",
                self.subscriptions[0],
                EMPTY_RETRY.as_secs()
            );
            tokio::time::sleep(EMPTY_RETRY).await;
        };
        let usable: usize = subs.iter().map(|s| s.servers.len()).sum();
        let (failed_tx, failed) = tokio::sync::mpsc::unbounded_channel();
        let proxy = Proxy::start_with(self.listen, Some(failed_tx))
            .await
            .with_context(|| format!("listening on {}", self.listen))?;
        println!("proxy: {} (SOCKS5 and HTTP CONNECT)", proxy.addr());
        println!("servers: {usable} usable in {} subscription(s)", subs.len());
        std::fs::create_dir_all(&self.data.data)
            .with_context(|| format!("creating {}", self.data.data.display()))?;
        let (calls, control_rx) = tokio::sync::mpsc::unbounded_channel();
        control::serve(&self.data.data.join(SOCKET), calls)?;
        let status = Arc::new(std::sync::Mutex::new(Status::default()));
        tokio::select! {
            () = switchyard_client::auto::run(proxy, subs, settings, failed, status, control_rx) => Ok(()),
            r = tokio::signal::ctrl_c() => r.context("waiting for Ctrl-C"),
        }
    }

    async fn fetch_all(&self) -> anyhow::Result<Vec<SubscriptionServers>> {
        let mut subs = Vec::new();
        for url in &self.subscriptions {
            subs.push(SubscriptionServers::from_fetched(url, fetch(url).await?));
        }
        Ok(subs)
    }
}
