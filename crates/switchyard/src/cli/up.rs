//! `switchyard up [--data DIR]`: a panel, one local node enrolled through the real
//! join flow, a VLESS+TLS inbound on 127.0.0.1 with a self-signed certificate, the
//! default route and a demo user, all in this process; prints the panel address, the
//! admin login and the demo user's subscription URL. Run again on the same directory,
//! it resumes: nothing is made twice, the node rejoins from its own state.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use switchyard_channel::JoinToken;
use switchyard_node::channel::{EnrolledOptions, run_enrolled};
use switchyard_node::config::ControlSettings;
use switchyard_panel::model::{InboundSecurity, InboundTransport, Protocol, TlsCertificate};
use switchyard_panel::store::{InboundInput, ServerInput, UserInput, UserQuery};
use switchyard_panel::{Panel, PanelConfig};

/// Everything on this machine for a first look: panel, node, demo user.
#[derive(Debug, Args)]
pub(crate) struct UpArgs {
    /// The data directory (the panel's database, the node's state).
    #[arg(long, default_value = "switchyard-data")]
    data: PathBuf,
    /// The panel's API and subscription listener.
    #[arg(long, default_value = "127.0.0.1:2053")]
    listen: SocketAddr,
    /// The panel's node channel listener.
    #[arg(long, default_value = "127.0.0.1:2054")]
    channel_listen: SocketAddr,
    /// The demo inbound's port on 127.0.0.1, on the first run (0: any free port).
    #[arg(long, default_value_t = 2443)]
    inbound_port: u16,
    /// Let the demo node's users reach services on this machine and its LAN (tests
    /// and local demos); off by default.
    #[arg(long)]
    allow_private_destinations: bool,
}

const CLUSTER: &str = "Local";
const SERVER: &str = "local";
const DEMO_USER: &str = "demo";

impl UpArgs {
    pub(crate) fn run(self) -> anyhow::Result<()> {
        super::node::init_logs();
        let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
        runtime.block_on(self.up())
    }

    async fn up(self) -> anyhow::Result<()> {
        let config = PanelConfig {
            listen: self.listen,
            data_dir: self.data.clone(),
            channel: switchyard_panel::config::ChannelSettings {
                listen: self.channel_listen,
                ..Default::default()
            },
            ..PanelConfig::default()
        };
        let panel = Panel::start(config).await?;
        let store = panel.state.store().clone();
        let service = panel.state.service().clone();
        let now = switchyard_node::accounting::now_ms();

        let cluster = match store
            .clusters()
            .await?
            .into_iter()
            .find(|c| c.name == CLUSTER)
        {
            Some(c) => c,
            None => store.create_cluster(CLUSTER, now).await?,
        };
        let wanted = ServerInput {
            cluster_id: cluster.id,
            name: SERVER.into(),
            address: "127.0.0.1".into(),
            allow_private_destinations: self.allow_private_destinations,
        };
        let server = match store
            .servers(Some(cluster.id))
            .await?
            .into_iter()
            .find(|s| s.name == SERVER)
        {
            Some(s) => service.update_server(s.id, &wanted).await?,
            None => service.create_server(&wanted, now).await?,
        };
        let node_dir = self.data.join("node");
        let enrolled = node_dir.join(switchyard_channel::ENROLLMENT_FILE).exists() && server.joined;
        let token = if enrolled {
            None
        } else if server.joined {
            // The node's state is gone but the panel has its pin: this node takes its
            // place, explicitly.
            Some(JoinToken::parse(&panel.replace_token(server.id).await?)?)
        } else {
            // The real join flow: a single-use token, dialed over the channel.
            Some(JoinToken::parse(&panel.join_token(server.id).await?)?)
        };
        let mut options = EnrolledOptions::new(&node_dir);
        options.token = token;
        options.hostname = "switchyard-up".into();
        options.control = Some(ControlSettings {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            ..ControlSettings::default()
        });
        let node = run_enrolled(options)
            .await
            .context("starting the local node")?;

        if store.inbounds(Some(server.id), None).await?.is_empty() {
            let port = if self.inbound_port == 0 {
                free_port()?
            } else {
                self.inbound_port
            };
            service
                .create_inbound(
                    &InboundInput {
                        server_id: server.id,
                        name: "Local".into(),
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
                .await?;
        }
        let demo = match store
            .users(
                &UserQuery {
                    search: Some(DEMO_USER.into()),
                    ..UserQuery::default()
                },
                now,
            )
            .await?
            .into_iter()
            .find(|u| u.username == DEMO_USER)
        {
            Some(u) => u,
            None => {
                service
                    .create_user(
                        &UserInput {
                            username: DEMO_USER.into(),
                            enabled: true,
                            note: "made by switchyard up".into(),
                            traffic_limit: None,
                            reset_strategy: Default::default(),
                            expires_ms: None,
                            on_hold_days: None,
                            device_limit: None,
                            address_limit: None,
                            clusters: None,
                        },
                        now,
                    )
                    .await?
            }
        };
        // Installed before anyone can read that it is up.
        let shutdown = super::node::shutdown_signal();
        println!("Switchyard is up.");
        println!("panel: http://{}", panel.api);
        match &panel.first_admin {
            Some(a) => println!(
                "admin login: {} / {} (also in {})",
                a.username,
                a.password,
                a.file.display()
            ),
            None => println!(
                "admin login: {} (password in {})",
                switchyard_panel::run::FIRST_ADMIN,
                self.data
                    .join(switchyard_panel::run::PASSWORD_FILE)
                    .display()
            ),
        }
        println!(
            "subscription: http://{}{} (sing-box: add ?format=sing-box)",
            panel.api, demo.subscription_path
        );
        println!("Ctrl-C stops; run it again with the same --data to resume.");
        shutdown.await;
        node.shutdown().await;
        panel.shutdown().await;
        Ok(())
    }
}

fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(l.local_addr()?.port())
}
