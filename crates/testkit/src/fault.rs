//! A fault injector: a TCP proxy on 127.0.0.1 in front of one address that can pass,
//! refuse, blackhole or cut connections on command. Given a listener bound elsewhere
//! ([`FaultProxy::with_listener`]: in a network namespace, say) it accepts there
//! instead; see [`crate::netns::Pair::bridge`].

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use anyhow::Result;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What the proxy does with connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Forward both ways.
    Pass,
    /// Close new connections at once (a blocked port).
    Refuse,
    /// Accept new connections and never forward or answer (a black hole).
    Blackhole,
}

/// The proxy; stops when dropped.
#[derive(Debug)]
pub struct FaultProxy {
    addr: SocketAddr,
    mode: Arc<Mutex<Fault>>,
    cut: watch::Sender<u64>,
    task: tokio::task::JoinHandle<()>,
}

impl FaultProxy {
    /// A proxy on `127.0.0.1:0` forwarding to `target`.
    pub async fn start(target: SocketAddr) -> Result<Self> {
        Self::serve(TcpListener::bind("127.0.0.1:0").await?, target)
    }

    /// A proxy accepting on `listener`, already bound (in a network namespace's
    /// [`tcp_listener`](crate::netns::NetNs::tcp_listener), say), and forwarding to
    /// `target`. It runs on the caller's tokio runtime: the connections it accepts
    /// live where the listener was made, the ones it makes to `target` where the
    /// runtime's threads are (the root namespace, for a test's runtime).
    pub async fn with_listener(
        listener: std::net::TcpListener,
        target: SocketAddr,
    ) -> Result<Self> {
        listener.set_nonblocking(true)?;
        Self::serve(TcpListener::from_std(listener)?, target)
    }

    fn serve(listener: TcpListener, target: SocketAddr) -> Result<Self> {
        let addr = listener.local_addr()?;
        let mode = Arc::new(Mutex::new(Fault::Pass));
        let (cut, _) = watch::channel(0u64);
        let (m, c) = (mode.clone(), cut.clone());
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let mode = *m.lock().unwrap_or_else(|p| p.into_inner());
                let mut cut = c.subscribe();
                tokio::spawn(async move {
                    match mode {
                        Fault::Refuse => drop(client),
                        Fault::Blackhole => {
                            let _ = cut.changed().await;
                            drop(client);
                        }
                        Fault::Pass => {
                            let Ok(mut server) = TcpStream::connect(target).await else {
                                return;
                            };
                            let mut client = client;
                            tokio::select! {
                                _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                                _ = cut.changed() => {}
                            }
                        }
                    }
                });
            }
        });
        Ok(Self {
            addr,
            mode,
            cut,
            task,
        })
    }

    /// The address to connect to instead of the target.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What happens to new connections from now on.
    pub fn set(&self, fault: Fault) {
        *self.mode.lock().unwrap_or_else(|p| p.into_inner()) = fault;
    }

    /// Closes every connection open through the proxy now.
    pub fn cut(&self) {
        self.cut.send_modify(|n| *n += 1);
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.cut();
        self.task.abort();
    }
}
