//! What a node process runs once its node started: the loopback control API, the
//! upgrades it asks for (`POST /v1/upgrade`, [`switchyard_node::handover`]), and the
//! side task of its mode (the config file's watcher); and, for a process started by
//! an upgrade, the takeover from its predecessor.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use switchyard_node::Node;
use switchyard_node::channel::EnrolledNode;
use switchyard_node::control;
use switchyard_node::handover::{Absorbing, Command, Handed, Inherited, Kind, Successor};

/// A process started by an upgrade: the sockets it was handed, and the link to its
/// predecessor.
pub(crate) struct Takeover {
    successor: Successor,
}

/// When this process was started by an upgrade: connects to the old process and takes
/// its sockets (before the node starts on them).
pub(crate) async fn takeover() -> anyhow::Result<Option<(Takeover, Inherited)>> {
    let taken = tokio::task::spawn_blocking(|| Successor::from_env(env!("CARGO_PKG_VERSION")))
        .await
        .context("the handover task")?;
    match taken {
        None => Ok(None),
        Some(Ok((successor, inherited))) => Ok(Some((Takeover { successor }, inherited))),
        Some(Err(e)) => Err(e).context("taking over from the running node"),
    }
}

impl Takeover {
    /// Tells the old process how the start went; once it released, takes the journal
    /// and the UDP sockets over.
    pub(crate) async fn ready(
        self,
        started: &Result<Arc<Node>, String>,
    ) -> anyhow::Result<Absorbing> {
        let outcome = started.as_ref().map(|_| ()).map_err(Clone::clone);
        let absorbing = self
            .successor
            .ready(outcome)
            .await
            .map(Absorbing::new)
            .context("taking over from the running node")?;
        if let Ok(node) = started {
            if let Err(e) = node.take_over().await {
                tracing::error!("{e}; counting goes on in memory");
            }
            tracing::info!("upgrade: took over from the old process");
        }
        Ok(absorbing)
    }
}

/// The command that starts this node again: this binary (the file at the path it was
/// started from, which an upgrade replaced) with `args` after the global options.
pub(crate) fn next_command(args: Vec<OsString>) -> anyhow::Result<Command> {
    let program = crate::cli::service::this_executable()?;
    let mut all = super::super::logs::format_args();
    all.extend(args);
    Ok(Command { program, args: all })
}

/// The node's control API on `control_addr`: the socket the predecessor handed over,
/// else a new one.
pub(crate) async fn control_listener(
    node: &Node,
    control_addr: SocketAddr,
) -> anyhow::Result<tokio::net::TcpListener> {
    match node.take_inherited_tcp(control_addr) {
        Some(l) => tokio::net::TcpListener::from_std(l?).context("the control API's socket"),
        None => tokio::net::TcpListener::bind(control_addr)
            .await
            .with_context(|| format!("control API on {control_addr}")),
    }
}

/// A started node and what serves around it.
pub(crate) struct Serving {
    pub(crate) node: Arc<Node>,
    /// The channel to the panel, when the node holds one.
    pub(crate) channel: Option<EnrolledNode>,
    /// The control API's listener.
    pub(crate) listener: tokio::net::TcpListener,
    /// How to start the next process on an upgrade.
    pub(crate) next: Command,
    /// The old process's counts, while it drains (a process started by an upgrade).
    pub(crate) absorbing: Option<Absorbing>,
}

/// Serves until SIGINT or SIGTERM (then stops the node), or until an upgrade hands
/// everything to a new process (then drains and returns). `side` runs alongside.
pub(crate) async fn serve(
    serving: Serving,
    side: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    let Serving {
        node,
        mut channel,
        listener,
        next,
        absorbing,
    } = serving;
    if let Some(a) = absorbing {
        tokio::spawn(a.run(node.clone()));
    }
    let control_addr = listener.local_addr().context("the control API's address")?;
    let control = Handed::of(Kind::Tcp, control_addr, &listener)
        .context("keeping the control API's socket")?;
    let (handed_over, stop) = tokio::sync::oneshot::channel::<()>();
    // The handlers are installed here, before `READY=1`.
    let shutdown = super::shutdown_signal();
    let signal = async move {
        tokio::select! {
            () = shutdown => {}
            _ = stop => {}
        }
    };
    let mut api = tokio::spawn(control::serve(listener, node.clone(), signal));
    let mut requests = node.accept_upgrades();
    crate::cli::notify::notify("READY=1");
    tokio::pin!(side);
    let mut side_done = false;
    let (draining, drain) = loop {
        tokio::select! {
            r = &mut api => {
                if let Ok(Err(e)) = r {
                    tracing::error!("control API: {e}");
                }
                break (None, Default::default());
            }
            () = &mut side, if !side_done => side_done = true,
            Some(request) = requests.recv() => {
                let extra = match control.try_clone() {
                    Ok(c) => vec![c],
                    Err(e) => {
                        tracing::warn!("not handing over the control API's socket: {e}");
                        Vec::new()
                    }
                };
                let command = match &request.program {
                    Some(program) => Command { program: program.clone(), args: next.args.clone() },
                    None => next.clone(),
                };
                let prepared = match switchyard_node::handover::prepare(&node, &command, extra).await {
                    Ok(p) => p,
                    Err(e) => {
                        tracing::error!("upgrade refused, serving on: {e}");
                        let _ = request.reply.send(Err(e.to_string()));
                        continue;
                    }
                };
                // Answered first: the request may have come over the channel, which
                // closes next (after its requests under way).
                let _ = request.reply.send(Ok(prepared.upgraded()));
                if let Some(c) = channel.take() {
                    c.close_channel().await;
                }
                let draining = prepared
                    .commit(&node)
                    .await
                    .context("handing over to the new process")?;
                crate::cli::notify::notify(&format!("MAINPID={}", draining.upgraded().new_pid));
                let _ = handed_over.send(());
                break (Some(draining), request.drain);
            }
        }
    };
    match draining {
        Some(d) => {
            d.run(&node, drain).await;
        }
        None => match channel {
            Some(c) => c.shutdown().await,
            None => node.shutdown().await,
        },
    }
    Ok(())
}
