//! `switchyard client`: the end user's program. `run` fetches the subscriptions,
//! serves the local proxy (SOCKS5 and HTTP, CONNECT and plain, on one port) and runs Auto on the
//! first subscription: the server it connects to, checks on real traffic, switches.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use switchyard_auto::{AutoConfig, Method, Platform};
use switchyard_client::auto::{AutoSettings, Inputs, Status, SubscriptionServers};
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
    /// The running client's queue: servers with their scores and the parts of them,
    /// marks, the current and return servers, the back-off, the last check and events.
    Status(StatusArgs),
    /// Mark servers (by name) Auto must not switch to; `done` applies the marks.
    Mark(NamesArg),
    /// Remove marks.
    Unmark(NamesArg),
    /// Apply the marks: leave a marked current server.
    Done(DataArg),
    /// Fetch every subscription again now.
    Update(DataArg),
    /// Add a subscription at the end of the list (kept in the data directory; used
    /// at once by a running client, else at the next `run`).
    Add(AddArgs),
    /// `auto on SUBSCRIPTION`: turn Auto on in another subscription (its URL or its
    /// number in `status`, 1 first).
    Auto(AutoArgs),
    /// Measure the download speed through a server (the current one by default); the
    /// result joins Auto's queue (servers without a ping, fastest first).
    Speedtest(SpeedtestArgs),
}

/// `switchyard client speedtest [SERVER]`.
#[derive(Debug, Args)]
pub(crate) struct SpeedtestArgs {
    #[command(flatten)]
    data: DataArg,
    /// The server's name, as `status` shows it.
    server: Option<String>,
}

/// `switchyard client add URL`.
#[derive(Debug, Args)]
pub(crate) struct AddArgs {
    #[command(flatten)]
    data: DataArg,
    /// The subscription URL.
    url: String,
}

/// `switchyard client auto on SUBSCRIPTION`.
#[derive(Debug, Args)]
pub(crate) struct AutoArgs {
    #[command(flatten)]
    data: DataArg,
    /// `on` (Auto is on in one subscription at a time).
    #[arg(value_parser = ["on"])]
    switch: String,
    /// The subscription: its URL or its number.
    subscription: String,
}

/// `switchyard client status`.
#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    #[command(flatten)]
    data: DataArg,
    /// Print the client's answer as JSON.
    #[arg(long)]
    json: bool,
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
    /// A subscription URL (several allowed, in order); the ones added with `add`
    /// follow them.
    #[arg(long = "subscription")]
    subscriptions: Vec<String>,
    /// The local proxy's address (SOCKS5 and HTTP, CONNECT and plain requests).
    #[arg(long, default_value = "127.0.0.1:2080")]
    listen: SocketAddr,
    /// `desktop` (a stall is 5 s of data out with nothing back) or `mobile` (2 s).
    #[arg(long, default_value = "desktop")]
    platform: String,
    /// How checks probe servers: `url` (an HTTP request through the server), `tcp`
    /// (connect time) or `icmp` (an echo to the server's host; needs unprivileged ICMP
    /// sockets, checked at start).
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
    /// Where the local page is served (loopback only): the servers with their
    /// scores, the current and return servers, the last check, and the marks.
    #[arg(long, default_value = switchyard_client::page::DEFAULT_LISTEN)]
    page: SocketAddr,
    /// Serve no local page.
    #[arg(long)]
    no_page: bool,
    /// What `speedtest` downloads through a server (plain http://).
    #[arg(long, default_value = switchyard_client::speedtest::DEFAULT_URL)]
    speedtest_url: String,
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
            Self::Status(a) => {
                let answer = runtime.block_on(ask(&a.data, &Request::Status))?;
                if a.json {
                    println!("{}", serde_json::to_string_pretty(&answer)?);
                } else {
                    print!("{}", super::client_status::render(&answer));
                }
                return Ok(());
            }
            Self::Add(a) => return runtime.block_on(add(a)),
            Self::Speedtest(a) => {
                let answer =
                    runtime.block_on(ask(&a.data, &Request::Speedtest { server: a.server }))?;
                println!(
                    "{}: {:.1} Mbit/s ({} bytes in {:.1} s)",
                    answer["server"].as_str().unwrap_or("?"),
                    answer["mbps"].as_f64().unwrap_or(0.0),
                    answer["bytes"],
                    answer["seconds"].as_f64().unwrap_or(0.0)
                );
                return Ok(());
            }
            Self::Auto(a) => (
                a.data,
                Request::AutoOn {
                    subscription: a.subscription,
                },
            ),
            Self::Mark(n) => (n.data, Request::Mark { servers: n.servers }),
            Self::Unmark(n) => (n.data, Request::Unmark { servers: n.servers }),
            Self::Done(d) => (d, Request::Done),
            Self::Update(d) => (d, Request::Update),
        };
        let answer = runtime.block_on(call(&data, &request))?;
        println!("{}", serde_json::to_string_pretty(&answer)?);
        refused(&answer)?;
        Ok(())
    }
}

/// Sends `request` to the running client; its answer.
async fn call(data: &DataArg, request: &Request) -> anyhow::Result<serde_json::Value> {
    control::call(&data.data.join(SOCKET), request)
        .await
        .context("is `switchyard client run` running with this --data?")
}

/// [`call`], its refusal an error with its words.
async fn ask(data: &DataArg, request: &Request) -> anyhow::Result<serde_json::Value> {
    let answer = call(data, request).await?;
    refused(&answer)?;
    Ok(answer)
}

/// The client's refusal as an error.
fn refused(answer: &serde_json::Value) -> anyhow::Result<()> {
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

/// `add`: through the running client, which fetches it at once; with no client
/// running, into the saved list for the next `run`.
async fn add(a: AddArgs) -> anyhow::Result<()> {
    let socket = a.data.data.join(SOCKET);
    match control::call(&socket, &Request::Add { url: a.url.clone() }).await {
        Ok(answer) => {
            refused(&answer)?;
            println!(
                "added {}: {} server(s)",
                a.url,
                answer["servers"].as_u64().unwrap_or(0)
            );
            return Ok(());
        }
        // No client listens there: the list is for the next start.
        Err(control::ControlError::Socket { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    // Checked now, so a typo is not found at the next start.
    switchyard_client::subscription::check_url(&a.url)?;
    std::fs::create_dir_all(&a.data.data)
        .with_context(|| format!("creating {}", a.data.data.display()))?;
    let mut saved = switchyard_client::auto::saved_subscriptions(&a.data.data);
    if saved.contains(&a.url) {
        bail!("{} is already a subscription", a.url);
    }
    saved.push(a.url.clone());
    switchyard_client::auto::save_subscriptions(&a.data.data, &saved);
    println!(
        "added {}: no client is running; `switchyard client run` will use it",
        a.url
    );
    Ok(())
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
        let probe_url =
            ProbeUrl::parse(&self.probe_url).map_err(|e| anyhow::anyhow!("--probe-url: {e}"))?;
        Ok(AutoSettings {
            keep_connections: self.keep_connections,
            data_dir: Some(self.data.data.clone()),
            speedtest_url: ProbeUrl::parse(&self.speedtest_url)
                .map_err(|e| anyhow::anyhow!("--speedtest-url: {e}"))?,
            ..AutoSettings::new(config, probe_url)
        })
    }

    async fn run(mut self) -> anyhow::Result<()> {
        let settings = self.settings()?;
        // Every probe would count as no answer, and Auto would leave working servers.
        if settings.config.method == Method::Icmp {
            switchyard_client::probe::icmp::check_available()?;
        }
        for url in switchyard_client::auto::saved_subscriptions(&self.data.data) {
            if !self.subscriptions.contains(&url) {
                self.subscriptions.push(url);
            }
        }
        if self.subscriptions.is_empty() {
            bail!(
                "no subscription: give --subscription URL, or add one with \
                 `switchyard client add URL --data {}`",
                self.data.data.display()
            );
        }
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
            .context("the local proxy")?;
        println!("proxy: {} (SOCKS5 and HTTP)", proxy.addr());
        println!("servers: {usable} usable in {} subscription(s)", subs.len());
        std::fs::create_dir_all(&self.data.data)
            .with_context(|| format!("creating {}", self.data.data.display()))?;
        let (calls, control_rx) = tokio::sync::mpsc::unbounded_channel();
        if !self.no_page {
            if !self.page.ip().is_loopback() {
                bail!(
                    "--page {}: the page has no login; use a loopback address",
                    self.page
                );
            }
            match switchyard_client::page::serve(self.page, calls.clone()).await {
                Ok(addr) => println!("page: http://{addr}/"),
                // The proxy is what matters: a busy port costs only the page.
                Err(e) => eprintln!("warning: {e}; running without the page"),
            }
        }
        control::serve(&self.data.data.join(SOCKET), calls)?;
        let status = Arc::new(std::sync::Mutex::new(Status::default()));
        let inputs = Inputs {
            failed,
            control: control_rx,
            network: Some(switchyard_client::network::watch()),
        };
        tokio::select! {
            () = switchyard_client::auto::run(proxy, subs, settings, inputs, status) => Ok(()),
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
