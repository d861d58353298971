//! `switchyard client`: the end user's program. `run` fetches the subscriptions,
//! takes the first server it can use and serves the local proxy (SOCKS5 and HTTP
//! CONNECT on one port). Auto's server choice on real probes comes next.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use switchyard_client::{Outbound, Proxy, fetch};

/// The client's subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum ClientCommand {
    /// Fetch the subscriptions and serve the local proxy in the foreground.
    Run(RunArgs),
}

/// `switchyard client run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// A subscription URL (several allowed, in order).
    #[arg(long = "subscription", required = true)]
    subscriptions: Vec<String>,
    /// The local proxy's address (SOCKS5 and HTTP CONNECT).
    #[arg(long, default_value = "127.0.0.1:2080")]
    listen: SocketAddr,
}

impl ClientCommand {
    pub(crate) fn run(self) -> anyhow::Result<()> {
        match self {
            Self::Run(args) => {
                super::node::init_logs();
                let runtime =
                    tokio::runtime::Runtime::new().context("starting the async runtime")?;
                runtime.block_on(args.run())
            }
        }
    }
}

impl RunArgs {
    async fn run(self) -> anyhow::Result<()> {
        let mut servers = Vec::new();
        for url in &self.subscriptions {
            let sub = fetch(url).await?;
            for entry in sub.entries {
                let name = entry.name.clone();
                match Outbound::new(entry) {
                    Ok(o) => servers.push(Arc::new(o)),
                    Err(e) => tracing::warn!(server = %name, "left out: {e}"),
                }
            }
        }
        let Some(first) = servers.first().cloned() else {
            bail!("no server in the subscriptions can be used by this client");
        };
        let proxy = Proxy::start(self.listen)
            .await
            .with_context(|| format!("listening on {}", self.listen))?;
        proxy.set_server(Some(first.clone()));
        println!("proxy: {} (SOCKS5 and HTTP CONNECT)", proxy.addr());
        println!(
            "server: {} ({} of {} usable)",
            first.entry().name,
            1,
            servers.len()
        );
        tokio::signal::ctrl_c()
            .await
            .context("waiting for Ctrl-C")?;
        Ok(())
    }
}
