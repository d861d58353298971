//! The command line: one module per subcommand.

mod auto;
mod client;
mod client_status;
mod logs;
mod node;
mod notify;
mod package;
mod panel;
mod service;
mod tunnel;
mod up;

use std::io;

use clap::{Parser, Subcommand};
use switchyard_auto_sim::{PolicyError, ScenarioError};

/// Switchyard: a self-hosted VPN platform.
#[derive(Debug, Parser)]
#[command(name = "switchyard", version, about)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
    /// How logs are written: `text` (coloured on a terminal only) or `json` (one
    /// object per line).
    #[arg(long, global = true, value_enum, default_value_t = logs::LogFormat::Text)]
    log_format: logs::LogFormat,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Auto, the client's server selection: simulate and compare policies.
    #[command(subcommand)]
    Auto(auto::AutoCommand),
    /// The client: subscriptions and the local proxy (SOCKS5 and HTTP).
    #[command(subcommand)]
    Client(client::ClientCommand),
    /// Run a node (the data plane): inbounds, accounting, control API.
    Node(node::NodeArgs),
    /// Run the panel: servers, inbounds, users, subscriptions, node channels.
    Panel(panel::PanelArgs),
    /// Panel, a local node and a demo user on this machine, for a first look.
    Up(up::UpArgs),
    /// Tunnels between nodes, for operators without the panel.
    #[command(subcommand)]
    Tunnel(tunnel::TunnelCommand),
    /// Package this binary for a distribution.
    #[command(subcommand)]
    Package(PackageCommand),
}

#[derive(Debug, Subcommand)]
enum PackageCommand {
    /// A Debian package (`.deb`) of this binary, with the node's and the panel's
    /// systemd units (Debian's `dpkg-deb` and `strip` must be installed).
    Deb(package::DebArgs),
}

impl Cli {
    /// Runs the chosen subcommand.
    pub(crate) fn run(self) -> anyhow::Result<()> {
        logs::set_format(self.log_format);
        match self.command {
            Command::Auto(cmd) => cmd.run(),
            Command::Client(cmd) => cmd.run(),
            Command::Node(args) => args.run(),
            Command::Panel(args) => args.run(),
            Command::Up(args) => args.run(),
            Command::Tunnel(cmd) => cmd.run(),
            Command::Package(PackageCommand::Deb(args)) => args.run(),
        }
    }
}

/// Whether the error is only that stdout was closed by its reader.
pub(crate) fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// The exit code for an error: 2 when the user's input is at fault (a scenario, a
/// file, a policy name), 1 otherwise.
pub(crate) fn exit_code(err: &anyhow::Error) -> u8 {
    let bad_input = err.chain().any(|c| {
        c.is::<ScenarioError>()
            || c.is::<PolicyError>()
            || c.is::<auto::InputFileError>()
            || c.is::<node::BadConfig>()
            || c.is::<node::JoinRefused>()
    });
    if bad_input { 2 } else { 1 }
}
