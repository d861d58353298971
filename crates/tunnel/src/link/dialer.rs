//! The dialing side: keeps the wanted number of links up to **every** address of the
//! listening side at once (hot standby: there is no standby to wake), each address
//! with its own back-off, and hands every established link to the pool.
//!
//! One task per address drives a [`Schedule`] (the decisions) with the clock, the
//! [`Connector`] and the links' ends. A link reports its end when its stream is
//! dropped, so the pool owns links outright and the dialer still knows when to redial.

use std::collections::hash_map::RandomState;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

pub use super::dial_error::DialError;
use super::handshake::{HANDSHAKE_DEADLINE, HandshakeError, send_hello};
use super::pin::Pin as CertPin;
use super::schedule::Schedule;
use super::tracked::{Ended, Lease, Release, Tracked};
use super::transport::{LinkStream, Target, connect};
use crate::frame::Hello;

/// A future the connector returns.
pub type Connecting = Pin<Box<dyn Future<Output = Result<LinkStream, DialError>> + Send>>;

/// Makes one link to a target: transport, TLS and hello. [`LinkConnector`] is the real
/// one; tests put in their own.
pub trait Connector: Send + Sync + 'static {
    /// Dials `target` and completes the hello.
    fn connect(&self, target: &Target) -> Connecting;
}

/// The real connector: [`connect`] then [`send_hello`], each within the deadline.
#[derive(Debug, Clone)]
pub struct LinkConnector {
    /// What every link says.
    pub hello: Hello,
    /// The deadline of each step.
    pub deadline: Duration,
}

/// The real connector with a hello that may change (a credential rotated): every new
/// attempt says the latest one; links up are not touched.
struct LiveHello {
    hello: Arc<Mutex<Hello>>,
    deadline: Duration,
}

impl Connector for LiveHello {
    fn connect(&self, target: &Target) -> Connecting {
        let hello = self.hello.lock().unwrap_or_else(|e| e.into_inner()).clone();
        LinkConnector {
            hello,
            deadline: self.deadline,
        }
        .connect(target)
    }
}

impl Connector for LinkConnector {
    fn connect(&self, target: &Target) -> Connecting {
        let (this, target) = (self.clone(), target.clone());
        Box::pin(async move {
            let stream = connect(&target, this.deadline).await?;
            send_hello(stream, &this.hello, this.deadline)
                .await
                .map_err(|error| DialError::Handshake {
                    target: target.to_string(),
                    error,
                })
        })
    }
}

/// What the dialer is told to do.
#[derive(Debug, Clone)]
pub struct DialerConfig {
    /// Every address of the listening side (every profile × address).
    pub targets: Vec<Target>,
    /// Links wanted at each target, in the order of `targets` (a missing entry is 1;
    /// see [`crate::half::spread`] for how a profile's links are shared out).
    pub wanted: Vec<usize>,
    /// What every link says: the tunnel tag, the origin and its credential.
    pub hello: Hello,
    /// Deadline of each handshake step.
    pub deadline: Duration,
}

impl DialerConfig {
    /// Dial `targets` with `hello`, one link each and the default deadline.
    pub fn new(targets: Vec<Target>, hello: Hello) -> Self {
        Self {
            wanted: vec![1; targets.len()],
            targets,
            hello,
            deadline: HANDSHAKE_DEADLINE,
        }
    }
}

/// An established link (after the hello), for the pool to put a multiplexer on.
/// Dropping `stream` tells the dialer the link is gone.
pub struct Link {
    /// Index of its address in [`DialerConfig::targets`].
    pub target: usize,
    /// The link's byte stream.
    pub stream: LinkStream,
    /// Retire it when the peer hands over (`GoAway`): a replacement is dialed at once
    /// while it carries its streams to their end.
    pub release: Release,
}

impl core::fmt::Debug for Link {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Link")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

/// One address's state, for the panel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddressStatus {
    /// The address (`tls://host:port` or `ws://host:port/path`).
    pub target: String,
    /// Links wanted.
    pub wanted: usize,
    /// Links up.
    pub connected: usize,
    /// Failed attempts and flaps so far.
    pub failures: u64,
    /// Time to the next attempt: `None` if none is due (all links up, or one being
    /// dialed), zero if one starts now.
    pub next_attempt_in: Option<Duration>,
    /// The latest failure.
    pub last_error: Option<DialError>,
}

/// Keeps links up to every target; dropping it stops dialing (links already handed
/// out stay up).
#[derive(Debug)]
pub struct Dialer {
    targets: Vec<Target>,
    schedules: Vec<Arc<Mutex<Schedule>>>,
    reset: watch::Sender<u64>,
    /// Pins replacing the targets' own for new links (a rotation under way).
    pins: watch::Sender<Option<Vec<CertPin>>>,
    /// The hello new links say ([`Self::start`]'s dialers only).
    hello: Option<Arc<Mutex<Hello>>>,
    tasks: JoinSet<()>,
}

impl Dialer {
    /// Starts dialing with the real [`LinkConnector`]; links arrive on the receiver.
    /// Must run inside a tokio runtime.
    pub fn start(config: DialerConfig) -> (Self, mpsc::UnboundedReceiver<Link>) {
        let hello = Arc::new(Mutex::new(config.hello));
        let connector = LiveHello {
            hello: hello.clone(),
            deadline: config.deadline,
        };
        let (mut dialer, links) = Self::with_connector(config.targets, &config.wanted, connector);
        dialer.hello = Some(hello);
        (dialer, links)
    }

    /// New links say `hello` from now on (a rotated credential); links already up
    /// stay up. No effect on a dialer made [`Self::with_connector`].
    pub fn set_hello(&self, hello: Hello) {
        if let Some(h) = &self.hello {
            *h.lock().unwrap_or_else(|e| e.into_inner()) = hello;
        }
    }

    /// Starts dialing `targets` through `connector`, keeping `wanted[i]` links (at
    /// least one) to target `i`.
    pub fn with_connector(
        targets: Vec<Target>,
        wanted: &[usize],
        connector: impl Connector,
    ) -> (Self, mpsc::UnboundedReceiver<Link>) {
        let connector: Arc<dyn Connector> = Arc::new(connector);
        let (links, rx) = mpsc::unbounded_channel();
        let (reset, _) = watch::channel(0);
        let (pins, _) = watch::channel(None);
        let mut tasks = JoinSet::new();
        let mut schedules = Vec::new();
        for (index, target) in targets.iter().enumerate() {
            let n = wanted.get(index).copied().unwrap_or(1).max(1);
            let schedule = Arc::new(Mutex::new(Schedule::new(n)));
            schedules.push(schedule.clone());
            tasks.spawn(run(Address {
                index,
                target: target.clone(),
                schedule,
                connector: connector.clone(),
                links: links.clone(),
                reset: reset.subscribe(),
                pins: pins.subscribe(),
                rng: Jitter::from_os(),
            }));
        }
        let dialer = Self {
            targets,
            schedules,
            reset,
            pins,
            hello: None,
            tasks,
        };
        (dialer, rx)
    }

    /// Every address's state now.
    pub fn status(&self) -> Vec<AddressStatus> {
        let now = Instant::now();
        self.targets
            .iter()
            .zip(&self.schedules)
            .map(|(t, s)| {
                let s = lock(s);
                AddressStatus {
                    target: t.to_string(),
                    wanted: s.wanted(),
                    connected: s.connected(),
                    failures: s.failures(),
                    next_attempt_in: s.next_attempt_in(now),
                    last_error: s.last_error().cloned(),
                }
            })
            .collect()
    }

    /// Makes every waiting address try again at once, with its back-off forgotten.
    /// Drops nothing: links that are up stay up.
    pub fn reset(&self) {
        self.reset.send_modify(|n| *n += 1);
    }

    /// New links check the listening side's certificate against `pins` from now on;
    /// links already up stay up (a pin rotation drops nothing).
    pub fn set_pins(&self, pins: Vec<CertPin>) {
        self.pins.send_replace(Some(pins));
    }

    /// Stops dialing; links already handed out stay up.
    pub fn stop(mut self) {
        self.tasks.abort_all();
    }
}

fn lock(s: &Mutex<Schedule>) -> std::sync::MutexGuard<'_, Schedule> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// A small PRNG (SplitMix64) for back-off jitter, seeded from the OS.
#[derive(Debug)]
struct Jitter(u64);

impl Jitter {
    fn from_os() -> Self {
        Self(RandomState::new().build_hasher().finish())
    }

    /// A value in `[0, 1)`.
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) as f64 / (u64::MAX as f64 + 1.0)
    }
}

struct Address {
    index: usize,
    target: Target,
    schedule: Arc<Mutex<Schedule>>,
    connector: Arc<dyn Connector>,
    links: mpsc::UnboundedSender<Link>,
    reset: watch::Receiver<u64>,
    pins: watch::Receiver<Option<Vec<CertPin>>>,
    rng: Jitter,
}

impl Address {
    /// The target as it is dialed now: with the latest pins, if they were changed.
    fn current(&self) -> Target {
        let mut target = self.target.clone();
        if let Some(pins) = &*self.pins.borrow() {
            target.pins.clone_from(pins);
        }
        target
    }
}

async fn run(mut a: Address) {
    let (ended_tx, mut ended) = mpsc::unbounded_channel::<(u64, Ended)>();
    let mut attempts: JoinSet<Result<LinkStream, DialError>> = JoinSet::new();
    loop {
        let wake = {
            let now = Instant::now();
            let mut s = lock(&a.schedule);
            s.handle_timeout(now);
            while s.poll_dial(now) {
                attempts.spawn(a.connector.connect(&a.current()));
            }
            s.poll_timeout()
        };
        let sleep = async {
            match wake {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = sleep => {}
            Some(done) = attempts.join_next() => {
                let now = Instant::now();
                let done = done.unwrap_or_else(|e| Err(DialError::Handshake {
                    target: a.target.to_string(),
                    error: HandshakeError::Io(format!("the attempt's task failed: {e}")),
                }));
                match done {
                    Ok(stream) => {
                        let id = lock(&a.schedule).dial_succeeded(now);
                        tracing::debug!(target = %a.target, "link up");
                        let release = Release::new(Lease { id, ended: ended_tx.clone(), how: Ended::Ended });
                        let stream = Box::new(Tracked {
                            inner: stream,
                            _release: release.clone(),
                        });
                        if a.links.send(Link { target: a.index, stream, release }).is_err() {
                            return; // nobody takes links any more
                        }
                    }
                    Err(e) => {
                        tracing::debug!(target = %a.target, error = %e, "link attempt failed");
                        let jitter = a.rng.next();
                        lock(&a.schedule).dial_failed(now, e, jitter);
                    }
                }
            }
            Some((id, how)) = ended.recv() => {
                let jitter = a.rng.next();
                let mut schedule = lock(&a.schedule);
                match how {
                    Ended::Ended => schedule.link_ended(Instant::now(), id, jitter),
                    Ended::Retired => schedule.link_retired(id),
                }
            }
            Ok(()) = a.reset.changed() => lock(&a.schedule).reset(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_in_the_unit_interval() {
        let mut j = Jitter(0);
        assert!(
            (0..10_000)
                .map(|_| j.next())
                .all(|x| (0.0..1.0).contains(&x))
        );
        assert_ne!(Jitter::from_os().next(), Jitter::from_os().next());
    }
}
