//! Upgrading nodes from the panel (`POST /api/v1/servers/{id}/upgrade`, and
//! `POST /api/v1/servers/upgrade` for every server, one at a time) to the binary the
//! panel hands out ([`crate::install::Installer`]).
//!
//! A job runs three steps over the node's channel, each reported with its state and
//! output as it runs:
//!
//! 1. `uploading`: the binary to `PUT /v1/binary?sha256=…` (the node streams it into
//!    its state directory, checking the sha256);
//! 2. `switching`: `POST /v1/upgrade {"binary": sha256, "drain_s": 600}`: the node
//!    hands its sockets, journal and channel to a process of the new binary and
//!    drains its open connections (nobody is dropped);
//! 3. `online`: the server is online again and its status reports the new binary's
//!    sha256, within [`ONLINE_DEADLINE`].
//!
//! The node keeps the binary in its own directory and runs it as its own user; its
//! restarts run it too, until `switchyard node upgrade --binary` or `node install`
//! on the server puts the installed binary back in charge (docs/install.md).
//!
//! Jobs live in the memory of the panel instance that runs them (a restart forgets
//! them), which must hold the node's channel: one job per server at a time, at most
//! [`MAX_JOBS`] at once, and one upload at a time (the binary is held in memory
//! while it is sent). An upgrade of every server ([`Rollout`]) runs one job after
//! the other, each back online before the next, and stops at the first failure.
//!
//! - [`progress`]: the steps' states, pure (time passed in);
//! - `job`: the drivers, through a [`Host`] (the panel's side: binary, channel,
//!   stored state).

mod job;
pub mod progress;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Semaphore;

pub use progress::{Rollout, RolloutState, UpgradeJob, UpgradeState, UpgradeStep};

use crate::model::Id;

/// Upgrade jobs running at once on one panel instance; more are refused (503).
pub const MAX_JOBS: usize = 4;
/// The largest binary handed to a node: what a node takes.
pub const MAX_BINARY: u64 = 256 << 20;
/// The upload's deadline: 10 minutes carry 256 MiB at under 4 Mbit/s.
pub const UPLOAD_DEADLINE: Duration = Duration::from_secs(600);
/// The switch's deadline: the node answers once the new process serves (it gives
/// the new process 60 s to say `hello`, then 60 s to be ready).
pub const SWITCH_DEADLINE: Duration = Duration::from_secs(150);
/// How long the old process serves its open connections at most.
pub const DRAIN_S: u64 = 600;
/// How long the panel waits for the server online with the new binary.
pub const ONLINE_DEADLINE: Duration = Duration::from_secs(60);

/// A failure on the panel's side of a job, or the node's answer, as text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HostError(pub String);

/// What a job needs from the panel.
#[async_trait]
pub trait Host: Send + Sync + 'static {
    /// The binary to hand over (its bytes) and its sha256.
    async fn binary(&self) -> Result<(Vec<u8>, [u8; 32]), HostError>;
    /// The sha256 of the binary handed out, without reading it whole when known.
    async fn binary_sha256(&self) -> Result<[u8; 32], HostError>;
    /// Whether this instance holds `server`'s channel.
    fn connected(&self, server: Id) -> bool;
    /// A request to `server`'s node control API over its channel: the status and
    /// the body.
    async fn request(
        &self,
        server: Id,
        method: http::Method,
        path: &str,
        body: Vec<u8>,
        deadline: Duration,
    ) -> Result<(http::StatusCode, Vec<u8>), HostError>;
    /// `server`'s binary sha256 (hex) as stored, when it is online; none when it
    /// is not online.
    async fn online(&self, server: Id) -> Result<Option<Option<String>>, HostError>;
    /// The servers that are online and run another binary than `sha256` (hex), in
    /// id order, with their names.
    async fn outdated(&self, sha256: &str) -> Result<Vec<(Id, String)>, HostError>;
}

/// Why a job was not started.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// A job for this server (or an upgrade of every server) is still running.
    #[error("{0}")]
    Busy(String),
    /// Every slot is taken.
    #[error("{MAX_JOBS} upgrades are already running on this panel; try again shortly")]
    Full,
}

type Shared<T> = Arc<Mutex<T>>;

/// This instance's upgrade jobs: the latest of each server, and the latest upgrade
/// of every server.
#[derive(Debug)]
pub struct Jobs {
    jobs: Mutex<HashMap<Id, Shared<progress::Progress>>>,
    rollout: Mutex<Option<Shared<Rollout>>>,
    slots: Arc<Semaphore>,
    /// One upload at a time: it holds the binary in memory.
    uploads: Arc<Semaphore>,
}

impl Default for Jobs {
    fn default() -> Self {
        Self::new(MAX_JOBS)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Jobs {
    /// At most `max` jobs at once.
    pub fn new(max: usize) -> Self {
        Self {
            jobs: Mutex::new(HashMap::new()),
            rollout: Mutex::new(None),
            slots: Arc::new(Semaphore::new(max.max(1))),
            uploads: Arc::new(Semaphore::new(1)),
        }
    }

    /// The latest job of `server`.
    pub fn view(&self, server: Id) -> Option<UpgradeJob> {
        let job = lock(&self.jobs).get(&server)?.clone();
        let view = lock(&job).view().clone();
        Some(view)
    }

    /// The latest upgrade of every server.
    pub fn rollout(&self) -> Option<Rollout> {
        let r = lock(&self.rollout).clone()?;
        let view = lock(&r).clone();
        Some(view)
    }

    /// Starts upgrading `server` through `host`; the job as it starts.
    pub fn start(
        self: &Arc<Self>,
        host: Arc<dyn Host>,
        server: Id,
        now_ms: i64,
    ) -> Result<UpgradeJob, StartError> {
        let (progress, slot) = self.admit(server, now_ms)?;
        let view = lock(&progress).view().clone();
        let uploads = self.uploads.clone();
        tokio::spawn(async move {
            job::run(host, progress, server, uploads).await;
            drop(slot);
        });
        Ok(view)
    }

    /// A new job of `server`, with its slot, unless one runs or every slot is taken.
    fn admit(
        &self,
        server: Id,
        now_ms: i64,
    ) -> Result<
        (
            Shared<progress::Progress>,
            tokio::sync::OwnedSemaphorePermit,
        ),
        StartError,
    > {
        let mut jobs = lock(&self.jobs);
        if let Some(job) = jobs.get(&server)
            && !lock(job).ended()
        {
            return Err(StartError::Busy(
                "an upgrade of this server is already running".into(),
            ));
        }
        let slot = self
            .slots
            .clone()
            .try_acquire_owned()
            .map_err(|_| StartError::Full)?;
        let progress = Arc::new(Mutex::new(progress::Progress::new(server, now_ms)));
        jobs.insert(server, progress.clone());
        Ok((progress, slot))
    }

    /// Starts upgrading every online server whose binary differs from the one
    /// handed out, one at a time; the upgrade as it starts.
    pub fn start_all(
        self: &Arc<Self>,
        host: Arc<dyn Host>,
        now_ms: i64,
    ) -> Result<Rollout, StartError> {
        let mut current = lock(&self.rollout);
        if current
            .as_ref()
            .is_some_and(|r| lock(r).state == RolloutState::Running)
        {
            return Err(StartError::Busy(
                "an upgrade of every server is already running".into(),
            ));
        }
        let rollout = Arc::new(Mutex::new(Rollout::new(now_ms)));
        *current = Some(rollout.clone());
        let view = lock(&rollout).clone();
        let me = self.clone();
        tokio::spawn(async move { job::run_all(me, host, rollout).await });
        Ok(view)
    }
}
