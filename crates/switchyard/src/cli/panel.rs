//! `switchyard panel [--config FILE]`: runs the control plane (API, subscriptions,
//! node channels). `switchyard panel seed --users N --tokens FILE [--with-inbound
//! PORT]`: adds N users to the panel's database and writes their subscription tokens,
//! for benchmarks and load tests; with `--with-inbound`, also a cluster, a server on
//! 127.0.0.1 and a VLESS+TLS (self-signed) inbound on PORT, so every user's
//! subscription has one entry and a node that joins the server serves every user. `switchyard panel backup
//! --to FILE`: an online copy of the SQLite database. `switchyard panel import
//! marzban --db FILE`: users from Marzban ([`import`]).

mod import;
mod install;
mod rules;
mod upgrade;

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use switchyard_panel::PanelConfig;
use switchyard_panel::model::{InboundSecurity, InboundTransport, Protocol, TlsCertificate};
use switchyard_panel::store::{
    Changes, InboundInput, RouteInput, RouteStore, ServerInput, ServerStore, SqlStore, UserInput,
};

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
    /// Add N users (named seed-1, seed-2, ...) and write their subscription tokens;
    /// with --with-inbound, also the cluster `seed`, its server `seed` on 127.0.0.1
    /// and a VLESS+TLS inbound (self-signed certificate) on that port, so every
    /// subscription has one entry.
    Seed {
        /// How many.
        #[arg(long)]
        users: usize,
        /// Where to write the tokens, one per line.
        #[arg(long)]
        tokens: PathBuf,
        /// Also seed a cluster, a server and a VLESS+TLS inbound listening on this port
        /// of 127.0.0.1 (once a node joins the server).
        #[arg(long, value_name = "PORT")]
        with_inbound: Option<u16>,
        /// Also seed this many routes in the cluster `seed`, each with --pool
        /// inbounds, one on each of --pool servers (never joined): VLESS+TLS,
        /// Trojan+TLS, Shadowsocks-2022 and VLESS+WebSocket+TLS in turn, so every
        /// subscription carries every kind of entry.
        #[arg(long, default_value_t = 0)]
        routes: usize,
        /// Inbounds per seeded route.
        #[arg(long, default_value_t = 5)]
        pool: usize,
        /// Users of every kind rather than all alike: every 10th disabled, every 7th
        /// expired a day ago, every 5th with a 50 GiB limit and 30 days left, every
        /// 11th on hold for 30 days (the first rule that fits wins).
        #[arg(long)]
        mixed: bool,
    },
    /// Write a consistent copy of the SQLite database while the panel runs.
    Backup {
        /// The file to write (must not exist).
        #[arg(long)]
        to: PathBuf,
    },
    /// Install the panel as a systemd service on this machine (as root): a system
    /// user, /etc/switchyard/panel.toml, its data under /var/lib/switchyard/panel, a
    /// hardened unit. Again: repairs, keeps the config and the data.
    Install(install::InstallArgs),
    /// Remove the panel's service (as root); the data stays unless --delete-data.
    Uninstall(install::UninstallArgs),
    /// Upgrade the running panel to a new binary; its API keeps answering.
    Upgrade(upgrade::UpgradeArgs),
    /// The rule sets apps fetch for split tunnelling: `rules refresh` updates the
    /// maintained lists (countries' networks, ads) from Debian's packages.
    Rules(rules::RulesArgs),
    /// Bring users from another panel (Marzban, PasarGuard, Marzneshin, 3x-ui, Remnawave), keeping their
    /// subscription links working: `import marzban --db FILE [--dry-run]`.
    Import(import::ImportArgs),
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
        match self.command {
            Some(PanelCommand::Install(args)) => return args.run(),
            Some(PanelCommand::Uninstall(args)) => return args.run(),
            Some(PanelCommand::Upgrade(args)) => return args.run(),
            _ => {}
        }
        super::node::init_logs();
        let config = self.config()?;
        if let Some(PanelCommand::Rules(args)) = self.command {
            return args.run(&config);
        }
        let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
        match self.command {
            Some(PanelCommand::Seed {
                users,
                tokens,
                with_inbound,
                routes,
                pool,
                mixed,
            }) => runtime.block_on(seed(
                config,
                (users, mixed),
                tokens,
                with_inbound,
                (routes, pool),
            )),
            Some(PanelCommand::Backup { to }) => runtime.block_on(backup(config, to)),
            Some(PanelCommand::Import(args)) => runtime.block_on(args.run(config)),
            // Install and uninstall returned above.
            _ => runtime.block_on(upgrade::serve(config)),
        }
    }
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

/// The name of the cluster and of the server `seed --with-inbound` makes.
const SEED_CLUSTER: &str = "seed";

async fn seed(
    config: PanelConfig,
    (users, mixed): (usize, bool),
    tokens: PathBuf,
    with_inbound: Option<u16>,
    (routes, pool): (usize, usize),
) -> anyhow::Result<()> {
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating {}", config.data_dir.display()))?;
    let store = SqlStore::open(&config.database(), Changes::default()).await?;
    let service = switchyard_panel::service::Service::new(std::sync::Arc::new(store.clone()));
    let now = switchyard_node::accounting::now_ms();
    if let Some(port) = with_inbound {
        let cluster = store
            .create_cluster(SEED_CLUSTER, now)
            .await
            .with_context(|| format!("seeding the cluster {SEED_CLUSTER:?}"))?;
        let server = service
            .create_server(
                &ServerInput {
                    cluster_id: cluster.id,
                    name: SEED_CLUSTER.into(),
                    address: "127.0.0.1".into(),
                    allow_private_destinations: false,
                },
                now,
            )
            .await
            .with_context(|| format!("seeding the server {SEED_CLUSTER:?}"))?;
        service
            .create_inbound(
                &InboundInput {
                    server_id: server.id,
                    name: "Seed".into(),
                    protocol: Protocol::Vless,
                    port,
                    transport: InboundTransport::Tcp,
                    security: InboundSecurity::Tls {
                        certificate: TlsCertificate::SelfSigned,
                    },
                    host: None,
                    sni: Some("localhost".into()),
                    coefficient: 1.0,
                    method: None,
                    flow: None,
                    hysteria2: None,
                    trusted_proxies: Vec::new(),
                    rules: Default::default(),
                },
                now,
            )
            .await
            .with_context(|| format!("seeding a VLESS+TLS inbound on port {port}"))?;
        println!(
            "added cluster {} and server {} (id {}) with a VLESS+TLS inbound on 127.0.0.1:{port}",
            cluster.name, server.name, server.id
        );
    }
    if routes > 0 {
        seed_routes(&store, &service, routes, pool, now).await?;
    }
    let mut out = String::new();
    for i in 1..=users {
        let input = if mixed {
            seed_kind(i, now)
        } else {
            UserInput::new(format!("seed-{i}"))
        };
        let user = service.create_user(&input, now).await?;
        out.push_str(user.subscription_path.trim_start_matches("/sub/"));
        out.push('\n');
    }
    std::fs::write(&tokens, out).with_context(|| format!("writing {}", tokens.display()))?;
    println!("added {users} users; tokens in {}", tokens.display());
    Ok(())
}

/// The `i`th user of `seed --mixed`.
fn seed_kind(i: usize, now: i64) -> UserInput {
    const DAY: i64 = 86_400_000;
    let base = UserInput::new(format!("seed-{i}"));
    if i.is_multiple_of(10) {
        UserInput {
            enabled: false,
            ..base
        }
    } else if i.is_multiple_of(7) {
        UserInput {
            expires_ms: Some(now - DAY),
            ..base
        }
    } else if i.is_multiple_of(5) {
        UserInput {
            traffic_limit: Some(50 << 30),
            expires_ms: Some(now + 30 * DAY),
            ..base
        }
    } else if i.is_multiple_of(11) {
        UserInput {
            on_hold_days: Some(30),
            ..base
        }
    } else {
        base
    }
}

/// `routes` routes of `pool` inbounds each in the cluster `seed` (made if missing),
/// over `pool` servers named `pool-K`.
async fn seed_routes(
    store: &SqlStore,
    service: &switchyard_panel::service::Service,
    routes: usize,
    pool: usize,
    now: i64,
) -> anyhow::Result<()> {
    let cluster = match store
        .clusters()
        .await?
        .into_iter()
        .find(|c| c.name == SEED_CLUSTER)
    {
        Some(c) => c,
        None => store.create_cluster(SEED_CLUSTER, now).await?,
    };
    let mut servers = Vec::new();
    for k in 1..=pool {
        let server = service
            .create_server(
                &ServerInput {
                    cluster_id: cluster.id,
                    name: format!("pool-{k}"),
                    address: format!("pool-{k}.example.com"),
                    allow_private_destinations: false,
                },
                now,
            )
            .await
            .with_context(|| format!("seeding the server pool-{k}"))?;
        servers.push(server.id);
    }
    let tls = InboundSecurity::Tls {
        certificate: TlsCertificate::SelfSigned,
    };
    for r in 1..=routes {
        let mut ids = Vec::new();
        for (k, server) in servers.iter().enumerate() {
            let (protocol, transport, security, method) = match r % 4 {
                1 => (Protocol::Vless, InboundTransport::Tcp, tls.clone(), None),
                2 => (Protocol::Trojan, InboundTransport::Tcp, tls.clone(), None),
                3 => (
                    Protocol::Shadowsocks,
                    InboundTransport::Tcp,
                    InboundSecurity::None,
                    Some("2022-blake3-aes-128-gcm".to_owned()),
                ),
                _ => (
                    Protocol::Vless,
                    InboundTransport::Ws {
                        path: "/ws".into(),
                        host: None,
                    },
                    tls.clone(),
                    None,
                ),
            };
            let port = u16::try_from(20_000 + r * 10 + k).context("too many routes to seed")?;
            let inbound = service
                .create_inbound(
                    &InboundInput {
                        server_id: *server,
                        name: format!("Route {r} · server {}", k + 1),
                        protocol,
                        port,
                        transport,
                        security,
                        host: None,
                        sni: None,
                        coefficient: 1.0,
                        method,
                        flow: None,
                        hysteria2: None,
                        trusted_proxies: Vec::new(),
                        rules: Default::default(),
                    },
                    now,
                )
                .await
                .with_context(|| format!("seeding an inbound of route {r}"))?;
            ids.push(inbound.id);
        }
        store
            .create_route(
                cluster.id,
                &RouteInput {
                    name: format!("Route {r}"),
                    flag: None,
                    algorithm: Default::default(),
                    inbound_ids: Some(ids),
                },
                now,
            )
            .await
            .with_context(|| format!("seeding route {r}"))?;
    }
    println!("added {routes} routes of {pool} inbounds over {pool} servers");
    Ok(())
}
