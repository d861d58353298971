//! Our tunnel under test: a relay half and one origin half (one TLS profile, [`LINKS`]
//! links), each on its own tokio runtime with its own worker threads, so they do not
//! share threads with the client and the target. The origin's handler does what a
//! node's does with a stream: connects to the destination and copies both ways.
//!
//! The memory measurement runs them in a fresh child process (this bench binary with
//! [`ROLE_ENV`] set): see [`idle_child`].

use std::io::{BufRead, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use switchyard_proto::Address;
use switchyard_tunnel::credentials::{TunnelSecret, origin_credential};
use switchyard_tunnel::frame::Open;
use switchyard_tunnel::half::{OriginHalf, OriginSpec, Profile, RelayHalf, RelaySpec};
use switchyard_tunnel::link::cert::issue;
use switchyard_tunnel::link::transport::Transport;
use switchyard_tunnel::mux::MuxStream;
use switchyard_tunnel::pool::Balancing;
use switchyard_tunnel::pump::relay;
use switchyard_tunnel::user_limits::UserLimits;
use tokio::net::TcpStream;
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

use crate::load::{self, Way};

/// Links the origin keeps to the relay.
pub(crate) const LINKS: usize = 4;
/// Set (to the target's address) in the memory measurement's child process.
pub(crate) const ROLE_ENV: &str = "SWITCHYARD_TUNNEL_BENCH_IDLE_TARGET";
/// The number of idle streams the child opens.
pub(crate) const STREAMS_ENV: &str = "SWITCHYARD_TUNNEL_BENCH_IDLE_STREAMS";

const SECRET: TunnelSecret = TunnelSecret([7; 32]);
const TUNNEL: &str = "bench";
const ORIGIN: &str = "origin";

/// A multi-threaded runtime with `threads` workers named `name`.
pub(crate) fn runtime(name: &str, threads: usize) -> Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name(name)
        .enable_all()
        .build()
        .with_context(|| format!("building the {name} runtime"))
}

/// Where the tunnel's threads run (pinned to one core, or anywhere) and which they
/// are, for its CPU time.
#[derive(Clone, Default)]
struct Threads {
    core: Option<usize>,
    tids: Arc<Mutex<Vec<u32>>>,
}

impl Threads {
    /// A runtime for one half: one worker when pinned (the core is all it has, as on
    /// a one-core server), two otherwise; each of its threads pins itself.
    fn runtime(&self, name: &str) -> Result<Runtime> {
        let threads = self.clone();
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(if self.core.is_some() { 1 } else { 2 })
            .thread_name(name)
            .enable_all()
            .on_thread_start(move || {
                let Some(core) = threads.core else { return };
                match switchyard_testkit::pin::pin_this_thread(core) {
                    Ok(tid) => threads
                        .tids
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(tid),
                    Err(e) => eprintln!("a tunnel thread could not pin itself: {e:#}"),
                }
            })
            .build()
            .with_context(|| format!("building the {name} runtime"))
    }

    fn ids(&self) -> Vec<u32> {
        self.tids.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The relay and origin halves, up and linked.
pub(crate) struct Tunnel {
    relay: Option<Arc<RelayHalf>>,
    origin: Option<OriginHalf>,
    runtimes: Vec<Runtime>,
    threads: Threads,
}

impl Tunnel {
    /// Starts both halves and waits for `links` links. The relay listens on
    /// `listen`; the origin dials `dialed`: `listen` itself, or a sniffing relay in
    /// front of it.
    /// With `core`, every thread of both halves runs on that core alone.
    pub(crate) async fn start(
        links: usize,
        listen: SocketAddr,
        dialed: SocketAddr,
        core: Option<usize>,
    ) -> Result<Self> {
        let threads = Threads {
            core,
            ..Threads::default()
        };
        let (relay_rt, origin_rt) = (threads.runtime("relay")?, threads.runtime("origin")?);
        let cert = issue(TUNNEL).context("issuing the tunnel certificate")?;
        let port = listen.port();
        let profile = Profile {
            port,
            transport: Transport::Tls,
            addresses: vec![format!("127.0.0.1:{port}")],
            links: None,
        };
        let spec = RelaySpec {
            tunnel: TUNNEL.into(),
            listen: IpAddr::V4(Ipv4Addr::LOCALHOST),
            profiles: vec![profile.clone()],
            balancing: Balancing::Distribute,
            cert_pem: cert.cert_pem.clone(),
            key_pem: cert.key_pem.clone(),
            origins: vec![(ORIGIN.into(), origin_credential(&SECRET, TUNNEL, ORIGIN))],
            // All the bench's streams are one user's: it measures the tunnel, not the
            // per-user limits (1024 streams by default), which it would hit at once.
            limits: UserLimits {
                streams: usize::MAX,
                udp: usize::MAX,
            },
            window: switchyard_tunnel::half::DEFAULT_WINDOW,
            // No REALITY profile here: private targets stay refused.
            site: switchyard_transport::reality::SiteDialer::checked(false),
        };
        let relay = relay_rt
            .spawn(RelayHalf::start(spec))
            .await?
            .context("starting the relay half")?;
        let relay = Arc::new(relay);
        let dialed = Profile {
            addresses: vec![dialed.to_string()],
            links: None,
            ..profile
        };
        let origin = {
            let _in_origin_rt = origin_rt.enter();
            OriginHalf::start(
                OriginSpec {
                    tunnel: TUNNEL.into(),
                    origin: ORIGIN.into(),
                    credential: origin_credential(&SECRET, TUNNEL, ORIGIN),
                    pins: vec![cert.pin],
                    profiles: vec![dialed],
                    links,
                    window: switchyard_tunnel::half::DEFAULT_WINDOW,
                },
                Arc::new(handle),
            )
        };
        let tunnel = Self {
            relay: Some(relay),
            origin: Some(origin),
            runtimes: vec![relay_rt, origin_rt],
            threads,
        };
        let relay = tunnel.relay();
        load::wait_for("the tunnel's links", Duration::from_secs(15), || {
            relay.links() == links
        })
        .await?;
        if core.is_some() && tunnel.threads.ids().len() < 2 {
            bail!("the tunnel's threads did not pin themselves (see above)");
        }
        Ok(tunnel)
    }

    /// CPU time both halves have used so far, in seconds: their threads' when pinned
    /// (the only ones on that core), `None` unpinned.
    pub(crate) fn cpu_seconds(&self) -> Option<f64> {
        self.threads.core?;
        let pid = std::process::id();
        let mut sum = 0.0;
        for tid in self.threads.ids() {
            // A thread that has ended (tokio's blocking pool lets idle ones go) took
            // its time with it; the workers, which carry the traffic, stay.
            if let Ok(s) = switchyard_testkit::pin::thread_cpu_seconds(&format!(
                "/proc/{pid}/task/{tid}/schedstat"
            )) {
                sum += s;
            }
        }
        Some(sum)
    }

    pub(crate) fn relay(&self) -> Arc<RelayHalf> {
        self.relay.clone().expect("present until dropped")
    }

    /// The way to `target` through this tunnel.
    pub(crate) fn way(&self, target: SocketAddr) -> Way {
        Way::Tunnel(self.relay(), target)
    }
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        self.relay.take();
        self.origin.take();
        // Dropped from async code: the runtimes must not block on their tasks.
        for rt in self.runtimes.drain(..) {
            rt.shutdown_background();
        }
    }
}

/// The node's default idle timeout (`node.idle_timeout_s`): the bench's streams end the
/// way a node's would.
const IDLE: Duration = Duration::from_secs(300);

/// The origin's routing: the destination over TCP, both ways, through the node's own
/// pump ([`relay`]): a quiet direction reads into a 1 KiB buffer inside the task and
/// takes a 16 KiB buffer only while busy, giving it back after 2 s without data.
fn handle(open: Open, stream: MuxStream) {
    tokio::spawn(async move {
        let Address::Ip(dest) = open.destination else {
            return;
        };
        let Ok(tcp) = TcpStream::connect(dest).await else {
            return;
        };
        let _ = tcp.set_nodelay(true);
        // Nothing cancels a bench stream: it ends with its client or the runtime.
        let never = CancellationToken::new();
        let _ = relay(stream, tcp, IDLE, &never, |_, _| {}).await;
    });
}

/// The memory measurement's child: both halves in this fresh process, a few
/// warm-up requests, then `VmRSS` before and after opening the idle streams.
/// Protocol on stdout/stdin: prints `before KIB`, opens the streams, prints
/// `opened`; on a line from the parent (the target holds them all) prints
/// `after KIB`; exits when stdin closes.
pub(crate) fn idle_child(target: &str) -> Result<()> {
    let target: SocketAddr = target.parse().context("the target's address")?;
    let streams: usize = std::env::var(STREAMS_ENV)
        .context("the number of idle streams")?
        .parse()?;
    let client = runtime("client", 1)?;
    let pid = std::process::id();
    let (tunnel, held) = client.block_on(async {
        let listen = load::free_addr()?;
        let tunnel = Tunnel::start(LINKS, listen, listen, None).await?;
        let way = tunnel.way(target);
        load::first_byte(&way, 20).await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        say(&format!("before {}", load::rss_kib(pid)?))?;
        let held = load::hold(&way, streams).await?;
        say("opened")?;
        anyhow::Ok((tunnel, held))
    })?;
    let mut lines = std::io::stdin().lock().lines();
    lines.next().context("the parent went away")??;
    std::thread::sleep(Duration::from_millis(500));
    say(&format!("after {}", load::rss_kib(pid)?))?;
    for _ in lines {}
    drop(held);
    drop(tunnel);
    client.shutdown_background();
    Ok(())
}

fn say(line: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(())
}
