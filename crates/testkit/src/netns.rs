//! A real "no network" for tests: Linux network namespaces made with `ip netns`,
//! joined by a veth that a test can take down and bring back.
//!
//! [`pair`] makes two namespaces, `servers` and `client`, joined by a veth created
//! directly inside them (the root namespace never gets an interface): the servers
//! side holds [`SERVERS_ADDR`] (`10.77.0.1/30`), the client side [`CLIENT_ADDR`]
//! (`10.77.0.2/30`). Namespaces are isolated, so every test uses the same addresses.
//! [`Pair::cut`] sets the client side's link down: the kernel drops its routes and
//! the client's connects fail at once with "network unreachable" (`ENETUNREACH`), like
//! a phone in an elevator, not after a timeout. [`Pair::restore`] brings it back and
//! waits until the route is there again.
//!
//! Code gets into a namespace three ways:
//!
//! - [`NetNs::run_in`] runs a closure on a fresh OS thread moved into the namespace
//!   (`setns`). A socket is created in the namespace of the thread that creates it
//!   and stays there when it moves to another thread, so a test can bind a
//!   `std::net::TcpListener` in `servers` ([`NetNs::tcp_listener`]) and serve it
//!   from its ordinary tokio runtime: the connections it accepts live in `servers`,
//!   while the connections that runtime makes itself live in the root namespace. That
//!   is how [`Pair::bridge`] works: a [`FaultProxy`] accepting at `10.77.0.1:port`
//!   and forwarding to a node on the root's `127.0.0.1`, so nodes run in-process as
//!   usual and are reachable from `client` through a link the test can cut (and the
//!   bridge can still refuse, blackhole or cut connections).
//! - [`NetNs::runtime_in`] gives an [`NsRuntime`]: a current-thread tokio runtime on
//!   a dedicated thread inside the namespace. Futures spawned on it create all their
//!   sockets there (a request loop through a client proxy running in `client`, an
//!   ICMP probe).
//! - [`NetNs::command`] is `ip netns exec NAME PROGRAM`, for a whole process inside
//!   (`switchyard client run`). Kill such a process before the namespace drops: the
//!   namespace lives on, nameless, while a process is in it.
//!
//! Each namespace is named `sy-<pid>-<n>`, unique across the concurrent test
//! processes nextest runs, has its loopback up, and is deleted (`ip netns del`) on
//! drop. Before making one, a process deletes the `sy-<pid>-*` namespaces whose
//! process is gone (and, before its first, those with its own pid): the leftovers of
//! killed test runs.
//!
//! This needs root (or `CAP_SYS_ADMIN` and `CAP_NET_ADMIN`) and iproute2's `ip`;
//! errors say which command failed and what it printed. Tests only ever reach
//! `127.0.0.1` and the namespaces they make themselves.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener};
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;
use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use rustix::thread::{LinkNameSpaceType, move_into_link_name_space};

use crate::fault::FaultProxy;

/// A namespace's own `resolv.conf` ([`NetNs::resolv_conf`]), removed on drop.
pub struct ResolvConf(std::path::PathBuf);

impl Drop for ResolvConf {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// The servers side's address in a [`Pair`].
pub const SERVERS_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
/// The client side's address in a [`Pair`].
pub const CLIENT_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);
/// The prefix length of both: a /30 holds exactly the two.
const PREFIX_LEN: u8 = 30;
/// The connected route both sides get from their address.
const SUBNET: &str = "10.77.0.0/30";
/// The veth's end in `servers` and in `client` (each name only has to be unique
/// within its own namespace).
const SERVERS_LINK: &str = "sy-servers";
const CLIENT_LINK: &str = "sy-client";
/// Where `ip netns` keeps a namespace's handle.
const NETNS_DIR: &str = "/run/netns";
/// How long [`Pair::restore`] waits for the kernel to put the route back: it does so
/// as the link comes up, within milliseconds; the bound is for a loaded machine.
const ROUTE_WAIT: Duration = Duration::from_secs(5);

/// The number of the next namespace this process makes.
static NEXT: AtomicU64 = AtomicU64::new(0);
/// The clean-up of this process's own leftovers (a killed run's, whose pid it now
/// has), before its first namespace.
static SWEEP_OWN: Once = Once::new();

/// A network namespace of its own, deleted on drop.
#[derive(Debug)]
pub struct NetNs {
    name: String,
}

impl NetNs {
    /// Makes a namespace (`ip netns add sy-<pid>-<n>`) and sets its loopback up.
    pub fn new() -> Result<Self> {
        SWEEP_OWN.call_once(|| sweep_leftovers(true));
        sweep_leftovers(false);
        let name = format!(
            "sy-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        ip(&["netns", "add", &name])?;
        let ns = Self { name };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// Its name, as `ip netns` knows it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs `f` on a fresh OS thread moved into this namespace and returns what it
    /// returns; a panic in `f` goes on in the caller. Sockets `f` creates belong to
    /// this namespace wherever they are used afterwards. The caller's thread waits,
    /// so keep `f` short when calling from async code (or use [`Self::runtime_in`]).
    pub fn run_in<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let handle = self.open()?;
        let name = self.name.clone();
        let thread = std::thread::Builder::new()
            .name(format!("netns {name}"))
            .spawn(move || -> Result<T> {
                enter(&handle, &name)?;
                Ok(f())
            })
            .context("starting a thread for a network namespace")?;
        match thread.join() {
            Ok(result) => result,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }

    /// A current-thread tokio runtime on a dedicated thread inside this namespace,
    /// stopped (its tasks dropped) when the [`NsRuntime`] is dropped.
    pub fn runtime_in(&self) -> Result<NsRuntime> {
        let handle = self.open()?;
        let name = self.name.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(format!("netns {name} runtime"))
            .spawn(move || {
                let runtime = enter(&handle, &name).and_then(|()| {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .context("building a tokio runtime")
                });
                match runtime {
                    Ok(runtime) => {
                        let _ = ready_tx.send(Ok(runtime.handle().clone()));
                        // Driving this future drives the spawned tasks too.
                        let _ = runtime.block_on(stopped);
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                    }
                }
            })
            .context("starting a thread for a network namespace's runtime")?;
        let handle = ready_rx
            .recv()
            .map_err(|_| anyhow!("the runtime thread of {} died", self.name))??;
        Ok(NsRuntime {
            handle,
            stop: Some(stop),
            thread: Some(thread),
            name: self.name.clone(),
        })
    }

    /// Gives the namespace's processes started with [`Self::command`] their own
    /// `/etc/resolv.conf` naming `nameserver` (`ip netns exec` shows them
    /// `/etc/netns/NAME/resolv.conf` in its place); removed when the guard drops.
    pub fn resolv_conf(&self, nameserver: Ipv4Addr) -> Result<ResolvConf> {
        let dir = Path::new("/etc/netns").join(&self.name);
        fs::create_dir_all(&dir).with_context(|| format!("making {}", dir.display()))?;
        fs::write(
            dir.join("resolv.conf"),
            format!("nameserver {nameserver}\n"),
        )
        .with_context(|| format!("writing {}/resolv.conf", dir.display()))?;
        Ok(ResolvConf(dir))
    }

    /// `ip netns exec NAME program`: add its arguments, then spawn it.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.name]).arg(program);
        command
    }

    /// Sets the sysctl `key` (`net.ipv4.ping_group_range`, dots or slashes) to
    /// `value` in this namespace. Only `net.*` keys are accepted, and a key the
    /// kernel keeps for the whole machine rather than per namespace is put back and
    /// refused: a test must never change the host. (Call it from outside the
    /// namespace: that check reads the key in the caller's.)
    pub fn sysctl(&self, key: &str, value: &str) -> Result<()> {
        let path = sysctl_path(key)?;
        let before = fs::read_to_string(&path).ok();
        let (p, v) = (path.clone(), value.to_owned());
        let written = self.run_in(move || -> Result<String> {
            fs::write(&p, &v).with_context(|| format!("writing {v:?} to {p}"))?;
            fs::read_to_string(&p).with_context(|| format!("reading {p}"))
        })??;
        if fs::read_to_string(&path).ok() != before {
            if let Some(before) = &before {
                let _ = fs::write(&path, before);
            }
            bail!("{key} is not per network namespace: it was put back, and it cannot be set here");
        }
        ensure!(
            words(&written) == words(value),
            "{key} in {} reads {:?} after writing {value:?}",
            self.name,
            written.trim()
        );
        Ok(())
    }

    /// Binds a TCP listener in this namespace (at `127.0.0.1:0`, or an address of
    /// one of its links), non-blocking, ready for `tokio::net::TcpListener::from_std`
    /// on any runtime.
    pub fn tcp_listener(&self, addr: SocketAddr) -> Result<TcpListener> {
        let listener = self
            .run_in(move || TcpListener::bind(addr))?
            .with_context(|| format!("binding {addr} in {}", self.name))?;
        listener.set_nonblocking(true)?;
        Ok(listener)
    }

    /// `ip -n NAME args…`; what it printed.
    pub fn ip(&self, args: &[&str]) -> Result<String> {
        let mut all = vec!["-n", &self.name];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// The namespace's handle, and checks it is there.
    fn open(&self) -> Result<File> {
        let path = Path::new(NETNS_DIR).join(&self.name);
        File::open(&path).with_context(|| format!("opening {}", path.display()))
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        if let Err(e) = ip(&["netns", "del", &self.name]) {
            eprintln!("{e:#}");
        }
    }
}

/// Moves the calling thread into the namespace behind `handle`, and checks it is
/// there now.
fn enter(handle: &File, name: &str) -> Result<()> {
    move_into_link_name_space(handle.as_fd(), Some(LinkNameSpaceType::Network))
        .with_context(|| format!("entering network namespace {name} (setns; needs root)"))?;
    let now = fs::metadata("/proc/thread-self/ns/net")
        .context("reading /proc/thread-self/ns/net")?
        .ino();
    ensure!(
        now == handle.metadata()?.ino(),
        "setns into {name} returned but the thread is elsewhere"
    );
    Ok(())
}

/// A current-thread tokio runtime on its own thread inside a namespace (from
/// [`NetNs::runtime_in`]).
///
/// Whatever its futures do happens on that thread, so every socket they create
/// (`TcpStream::connect`, `TcpListener::bind`, `UdpSocket::bind`, a client's proxy
/// and its connections to servers) is in the namespace; so are the threads tokio
/// starts for `spawn_blocking` and name look-ups, started from it. It only runs what
/// is given to [`Self::spawn`] and [`Self::run`]; there is deliberately no `Handle`
/// to enter from elsewhere, since a socket made on another thread would be in that
/// thread's namespace. Dropping it stops the runtime and drops its tasks (do not drop
/// it from one of its own tasks).
#[derive(Debug)]
pub struct NsRuntime {
    handle: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    name: String,
}

impl NsRuntime {
    /// Starts `future` in the namespace; await the handle from any runtime (or drop
    /// it to let the task run on).
    pub fn spawn<F>(&self, future: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.handle.spawn(future)
    }

    /// Runs `future` in the namespace to its end, from any async context; a panic
    /// in it goes on in the caller.
    pub async fn run<F>(&self, future: F) -> F::Output
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match self.handle.spawn(future).await {
            Ok(output) => output,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => panic!("a task in network namespace {} ended: {e}", self.name),
        }
    }

    /// The namespace it runs in.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for NsRuntime {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Two namespaces joined by a veth (from [`pair`]).
#[derive(Debug)]
pub struct Pair {
    /// Where the servers are, at [`SERVERS_ADDR`].
    pub servers: NetNs,
    /// Where the client is, at [`CLIENT_ADDR`]; its link is the one [`Self::cut`]
    /// takes down.
    pub client: NetNs,
}

/// Makes the `servers` and `client` namespaces, the veth between them (created
/// inside them), their addresses, and sets the links up.
pub fn pair() -> Result<Pair> {
    let pair = Pair {
        servers: NetNs::new()?,
        client: NetNs::new()?,
    };
    ip(&[
        "link",
        "add",
        SERVERS_LINK,
        "netns",
        pair.servers.name(),
        "type",
        "veth",
        "peer",
        "name",
        CLIENT_LINK,
        "netns",
        pair.client.name(),
    ])?;
    for (ns, link, addr) in [
        (&pair.servers, SERVERS_LINK, SERVERS_ADDR),
        (&pair.client, CLIENT_LINK, CLIENT_ADDR),
    ] {
        ns.ip(&["addr", "add", &format!("{addr}/{PREFIX_LEN}"), "dev", link])?;
        ns.ip(&["link", "set", link, "up"])?;
    }
    pair.wait_route(true)?;
    Ok(pair)
}

impl Pair {
    /// The servers side's address, `10.77.0.1`.
    pub fn servers_addr(&self) -> Ipv4Addr {
        SERVERS_ADDR
    }

    /// The client side's address, `10.77.0.2`.
    pub fn client_addr(&self) -> Ipv4Addr {
        CLIENT_ADDR
    }

    /// Takes the client side's link down: its route to the servers goes, and its
    /// connects fail at once with "network unreachable". Connections already open
    /// through the link are not closed: nothing gets through them any more, and what
    /// happens next is up to their own timers.
    pub fn cut(&self) -> Result<()> {
        self.client.ip(&["link", "set", CLIENT_LINK, "down"])?;
        self.wait_route(false)
    }

    /// Brings the client side's link back up (and its address, if it went), and
    /// waits until its route to the servers is back.
    pub fn restore(&self) -> Result<()> {
        self.client.ip(&["link", "set", CLIENT_LINK, "up"])?;
        let addr = format!("{CLIENT_ADDR}/{PREFIX_LEN}");
        let shown = self
            .client
            .ip(&["-4", "addr", "show", "dev", CLIENT_LINK])?;
        if !shown.contains(&addr) {
            self.client
                .ip(&["addr", "add", &addr, "dev", CLIENT_LINK])?;
        }
        self.wait_route(true)
    }

    /// A [`FaultProxy`] listening in `servers` at `10.77.0.1:<port>` (see its
    /// [`addr`](FaultProxy::addr)) and forwarding to `to` in the root namespace
    /// (a node on `127.0.0.1`), run on the caller's tokio runtime: the client
    /// reaches in-process nodes through the veth, and the proxy can still refuse,
    /// blackhole or cut connections.
    pub async fn bridge(&self, to: SocketAddr) -> Result<FaultProxy> {
        let listener = self
            .servers
            .tcp_listener(SocketAddrV4::new(SERVERS_ADDR, 0).into())?;
        FaultProxy::with_listener(listener, to).await
    }

    /// Waits until the client's route to the servers is usable (`up`) or gone.
    fn wait_route(&self, up: bool) -> Result<()> {
        let deadline = Instant::now() + ROUTE_WAIT;
        loop {
            let routes = self
                .client
                .ip(&["-4", "route", "show", SUBNET, "dev", CLIENT_LINK])?;
            let usable = routes.contains(SUBNET) && !routes.contains("linkdown");
            if usable == up {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!(
                    "the route {SUBNET} in {} is {} {ROUTE_WAIT:?} after the link went {}: {routes:?}",
                    self.client.name(),
                    if up {
                        "still not usable"
                    } else {
                        "still there"
                    },
                    if up { "up" } else { "down" }
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Runs `ip args…`; what it printed, or an error with what it said.
fn ip(args: &[&str]) -> Result<String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .with_context(|| format!("running `ip {}` (is iproute2 installed?)", args.join(" ")))?;
    if !out.status.success() {
        bail!(
            "`ip {}` failed ({}; it needs root): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Deletes the `sy-<pid>-*` namespaces of processes that are gone, and with `own`
/// this process's (its pid was a killed run's before).
fn sweep_leftovers(own: bool) {
    let Ok(entries) = fs::read_dir(NETNS_DIR) else {
        return; // no namespace made yet on this machine
    };
    let me = std::process::id();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = leftover_pid(&name) else {
            continue;
        };
        if (own && pid == me) || (pid != me && !Path::new(&format!("/proc/{pid}")).exists()) {
            // Another process may be sweeping the same one.
            let _ = ip(&["netns", "del", &name]);
        }
    }
}

/// The pid in a name `sy-<pid>-<n>`.
fn leftover_pid(name: &str) -> Option<u32> {
    leftover_pid_after("sy-", name)
}

/// The pid in `<prefix><pid>-<n>`, the names of what a test process made (its
/// namespaces here, its containers in [`crate::vps`]).
pub(crate) fn leftover_pid_after(prefix: &str, name: &str) -> Option<u32> {
    let (pid, n) = name.strip_prefix(prefix)?.split_once('-')?;
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

/// `/proc/sys/…` for a `net.*` key.
fn sysctl_path(key: &str) -> Result<String> {
    let relative = if key.contains('/') {
        key.to_owned()
    } else {
        key.replace('.', "/")
    };
    ensure!(
        relative.starts_with("net/")
            && relative
                .split('/')
                .all(|part| !part.is_empty() && part != ".." && part != "."),
        "sysctl {key:?}: only net.* keys are per network namespace"
    );
    Ok(format!("/proc/sys/{relative}"))
}

/// A sysctl value's words (the kernel separates them with tabs).
fn words(value: &str) -> Vec<&str> {
    value.split_whitespace().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leftover_names_are_read() {
        assert_eq!(leftover_pid("sy-1234-0"), Some(1234));
        assert_eq!(leftover_pid("sy-1234-17"), Some(1234));
        assert_eq!(leftover_pid("sy-exp-a"), None);
        assert_eq!(leftover_pid("other-1-2"), None);
        assert_eq!(leftover_pid("sy-12"), None);
    }

    #[test]
    fn only_net_sysctls_are_accepted() {
        assert_eq!(
            sysctl_path("net.ipv4.ping_group_range").unwrap(),
            "/proc/sys/net/ipv4/ping_group_range"
        );
        assert_eq!(
            sysctl_path("net/ipv4/conf/eth0.5/forwarding").unwrap(),
            "/proc/sys/net/ipv4/conf/eth0.5/forwarding"
        );
        for bad in [
            "kernel.hostname",
            "net/../kernel/hostname",
            "net",
            "vm.swappiness",
        ] {
            assert!(sysctl_path(bad).is_err(), "{bad}");
        }
    }
}
