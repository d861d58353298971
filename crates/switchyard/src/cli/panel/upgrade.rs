//! The panel's own upgrade. `switchyard panel upgrade [--binary FILE]` (as root)
//! puts the new binary in place and sends the running panel `SIGUSR2`; the panel then
//! starts the binary at its path with its own arguments and hands it its listeners
//! (API, node channel, subscriptions) over a Unix socket in its data directory
//! ([`switchyard_channel::handover`]). Once the new process serves, the old one stops
//! accepting, finishes the requests under way, closes its node channels (the nodes
//! dial again and reach the new process) and exits; systemd follows the new process.
//! Nothing is refused meanwhile: both processes accept from the same sockets.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use switchyard_channel::handover::{
    Command, Inherited, Offered, SOCKET_FILE, Successor, blocking, offer,
};
use switchyard_panel::{Panel, PanelConfig};

use crate::cli::node::upgrade::{check_binary, install_binary};
use crate::cli::service::{BIN, PANEL, has_systemd, run, say};

/// Upgrade the running panel to a new binary; its API keeps answering.
#[derive(Debug, Args)]
pub(crate) struct UpgradeArgs {
    /// The new binary: checked, then installed at /usr/local/bin/switchyard (as
    /// root). Without it, the binary already at the panel's path starts.
    #[arg(long)]
    binary: Option<PathBuf>,
    /// The running panel's process (default: the installed service's main process).
    #[arg(long)]
    pid: Option<u32>,
}

/// How long the command waits for the new process to take over.
const TAKE_OVER: Duration = Duration::from_secs(90);

impl UpgradeArgs {
    pub(crate) fn run(self) -> anyhow::Result<()> {
        if let Some(binary) = &self.binary {
            let version = check_binary(binary)?;
            install_binary(binary, Path::new(BIN))?;
            say(format_args!("installed {BIN} ({version})"));
        }
        let (pid, service) = match self.pid {
            Some(pid) => (pid, false),
            None if has_systemd() => (main_pid()?, true),
            None => bail!("no systemd here: name the panel's process with --pid"),
        };
        if pid == 0 {
            bail!("{} is not running", PANEL.name);
        }
        say(format_args!(
            "asking the panel (process {pid}) to hand over to the new process"
        ));
        let target = rustix::process::Pid::from_raw(i32::try_from(pid).context("--pid")?)
            .context("--pid: not a process")?;
        rustix::process::kill_process(target, rustix::process::Signal::USR2)
            .with_context(|| format!("signalling process {pid}"))?;
        let deadline = tokio::time::Instant::now() + TAKE_OVER;
        loop {
            std::thread::sleep(Duration::from_millis(200));
            let gone = !Path::new(&format!("/proc/{pid}")).exists();
            if service {
                let now = main_pid()?;
                if now != pid && now != 0 {
                    say(format_args!(
                        "process {now} serves now; process {pid} finishes its requests and exits"
                    ));
                    return Ok(());
                }
            } else if gone {
                say(format_args!("process {pid} handed over and exited"));
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                bail!(
                    "the panel did not hand over within {} s; its log says why (journalctl -u {})",
                    TAKE_OVER.as_secs(),
                    PANEL.name
                );
            }
        }
    }
}

/// The installed service's main process (0 when it is not running).
fn main_pid() -> anyhow::Result<u32> {
    let out = run(
        "systemctl",
        &["show", "-p", "MainPID", "--value", PANEL.name],
    )?;
    out.trim().parse().context("systemctl's MainPID")
}

/// A panel process started by an upgrade: the listeners its predecessor handed over,
/// and the link to it.
pub(crate) async fn takeover() -> anyhow::Result<(Option<Successor>, Inherited)> {
    let taken = tokio::task::spawn_blocking(|| Successor::from_env(env!("CARGO_PKG_VERSION")))
        .await
        .context("the handover task")?;
    match taken {
        None => Ok((None, Inherited::default())),
        Some(Ok((s, inherited))) => Ok((Some(s), inherited)),
        Some(Err(e)) => Err(e).context("taking over from the running panel"),
    }
}

/// Tells the old panel how this one's start went and waits until it let go.
pub(crate) async fn ready(
    successor: Successor,
    started: &Result<Panel, switchyard_panel::run::StartError>,
) -> anyhow::Result<()> {
    let outcome = started.as_ref().map(|_| ()).map_err(|e| e.to_string());
    successor
        .ready(outcome)
        .await
        .context("taking over from the running panel")?;
    tracing::info!("upgrade: took over from the old panel");
    Ok(())
}

/// This binary, at the path it was started from, with the arguments it got.
pub(crate) fn next_command() -> anyhow::Result<Command> {
    let program = crate::cli::service::this_executable()?;
    Ok(Command {
        program,
        args: std::env::args_os().skip(1).collect(),
    })
}

/// Starts the new process and hands it the panel's listeners; it serves when this
/// returns. On error nothing changed.
pub(crate) async fn hand_over(
    panel: &Panel,
    config: &PanelConfig,
    next: &Command,
) -> anyhow::Result<Offered> {
    let sockets = panel
        .handed_sockets()
        .context("duplicating the listeners")?;
    let path = config.data_dir.join(SOCKET_FILE);
    let next = next.clone();
    Ok(blocking(move || offer(path, &next, &sockets)).await?)
}

/// Serves `config` until SIGINT or SIGTERM, or until an upgrade (`SIGUSR2`) hands
/// the listeners to a new process.
pub(crate) async fn serve(config: PanelConfig) -> anyhow::Result<()> {
    let next = next_command()?;
    let (successor, inherited) = takeover().await?;
    let started = Panel::start_with(config.clone(), inherited).await;
    if let Some(s) = successor {
        ready(s, &started).await?;
    }
    let panel = started?;
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
    // Installed before `READY=1`: a SIGTERM right after it stops the panel gracefully.
    let shutdown = crate::cli::node::shutdown_signal();
    tokio::pin!(shutdown);
    let mut usr2 =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined2()).ok();
    crate::cli::notify::notify("READY=1");
    loop {
        tokio::select! {
            () = &mut shutdown => {
                panel.shutdown().await;
                return Ok(());
            }
            Some(()) = async { match usr2.as_mut() { Some(s) => s.recv().await, None => std::future::pending().await } } => {
                match hand_over(&panel, &config, &next).await {
                    Ok(offered) => {
                        let pid = offered.child.id();
                        tracing::info!(new_pid = pid, "upgrade: the new panel serves; finishing the requests under way");
                        panel.shutdown().await;
                        blocking(move || offered.release()).await?;
                        crate::cli::notify::notify(&format!("MAINPID={pid}"));
                        tracing::info!("upgrade: handed over; this process ends");
                        return Ok(());
                    }
                    Err(e) => tracing::error!("upgrade refused, serving on: {e:#}"),
                }
            }
        }
    }
}
