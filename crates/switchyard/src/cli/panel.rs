//! `switchyard panel [--config FILE]`: runs the control plane (API, subscriptions,
//! node channels). `switchyard panel seed --users N --tokens FILE`: adds N users to
//! the panel's database and writes their subscription tokens, for benchmarks and load
//! tests. `switchyard panel backup --to FILE`: an online copy of the SQLite database.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use switchyard_panel::store::{Changes, SqlStore, UserInput};
use switchyard_panel::{Panel, PanelConfig};

/// Run the panel: servers, inbounds, users, subscriptions, node channels.
#[derive(Debug, Args)]
pub(crate) struct PanelArgs {
    #[command(subcommand)]
    command: Option<PanelCommand>,
    /// The config file (TOML); every field has a default (docs/panel.md).
    #[arg(long, short, global = true)]
    config: Option<PathBuf>,
    /// The API listener (overrides `listen`).
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// The node channel listener (overrides `channel.listen`).
    #[arg(long)]
    channel_listen: Option<SocketAddr>,
    /// The data directory (overrides `data_dir`).
    #[arg(long, global = true)]
    data: Option<PathBuf>,
}

#[derive(Debug, clap::Subcommand)]
enum PanelCommand {
    /// Add N users (named seed-1, seed-2, ...) and write their subscription tokens.
    Seed {
        /// How many.
        #[arg(long)]
        users: usize,
        /// Where to write the tokens, one per line.
        #[arg(long)]
        tokens: PathBuf,
    },
    /// Write a consistent copy of the SQLite database while the panel runs.
    Backup {
        /// The file to write (must not exist).
        #[arg(long)]
        to: PathBuf,
    },
}

impl PanelArgs {
    fn config(&self) -> anyhow::Result<PanelConfig> {
        let mut config = PanelConfig::load(self.config.as_deref())?;
        if let Some(l) = self.listen {
            config.listen = l;
        }
        if let Some(l) = self.channel_listen {
            config.channel.listen = l;
        }
        if let Some(d) = &self.data {
            config.data_dir = d.clone();
        }
        config.validate()?;
        Ok(config)
    }

    pub(crate) fn run(self) -> anyhow::Result<()> {
        super::node::init_logs();
        let config = self.config()?;
        let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
        match self.command {
            Some(PanelCommand::Seed { users, tokens }) => {
                runtime.block_on(seed(config, users, tokens))
            }
            Some(PanelCommand::Backup { to }) => runtime.block_on(backup(config, to)),
            None => runtime.block_on(serve(config)),
        }
    }
}

async fn serve(config: PanelConfig) -> anyhow::Result<()> {
    let panel = Panel::start(config).await?;
    println!("panel: http://{}", panel.api);
    if let Some(a) = &panel.first_admin {
        println!(
            "first admin: {} / {} (written to {}; change it after logging in)",
            a.username,
            a.password,
            a.file.display()
        );
    }
    println!("node channel: {}", panel.channel);
    super::node::shutdown_signal().await;
    panel.shutdown().await;
    Ok(())
}

async fn backup(config: PanelConfig, to: PathBuf) -> anyhow::Result<()> {
    if to.exists() {
        anyhow::bail!("{} exists; give a new file", to.display());
    }
    let store = SqlStore::open(&config.database(), Changes::default()).await?;
    store.backup(&to).await?;
    println!("wrote {}", to.display());
    Ok(())
}

async fn seed(config: PanelConfig, users: usize, tokens: PathBuf) -> anyhow::Result<()> {
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating {}", config.data_dir.display()))?;
    let store = SqlStore::open(&config.database(), Changes::default()).await?;
    let service = switchyard_panel::service::Service::new(std::sync::Arc::new(store.clone()));
    let now = switchyard_node::accounting::now_ms();
    let mut out = String::new();
    for i in 1..=users {
        let input = UserInput {
            username: format!("seed-{i}"),
            enabled: true,
            note: String::new(),
            traffic_limit: None,
            reset_strategy: Default::default(),
            expires_ms: None,
            on_hold_days: None,
            clusters: None,
        };
        let user = service.create_user(&input, now).await?;
        out.push_str(user.subscription_path.trim_start_matches("/sub/"));
        out.push('\n');
    }
    std::fs::write(&tokens, out).with_context(|| format!("writing {}", tokens.display()))?;
    println!("added {users} users; tokens in {}", tokens.display());
    Ok(())
}
