//! Installing a node over SSH from the panel (`POST /api/v1/servers/{id}/ssh-install`).
//!
//! The panel logs in to the server (a password or a private key, used for this job
//! only and never stored), checks the system, uploads its own binary (the bytes
//! `GET /install/switchyard-linux-<arch>` serves, their sha256 checked on the server),
//! runs `switchyard node install TOKEN` with a fresh join token, optionally sets up
//! an nftables firewall, and waits for the node to be online. Each step is reported
//! with its state and output as it runs ([`progress`]).
//!
//! The host key comes first: a request with no confirmed key (and no pinned one)
//! only connects, reads the key and answers its fingerprint ([`JobState::ConfirmHostKey`]),
//! logging in to nothing. The operator repeats the request with that fingerprint;
//! the credentials are sent only to a server whose key matches it, and the key is
//! then pinned with the server. A later install goes on only with the pinned key;
//! **Replace node** forgets the pin.
//!
//! - [`input`]: the request and its validation (hostile input, fields named);
//! - [`progress`]: the step machine, pure (time passed in);
//! - [`remote`], [`firewall`]: the commands run on the server, pure text;
//! - [`ssh`]: the SSH connection (russh) with its deadlines;
//! - `job`: the driver that runs the steps in order, through a [`Host`] (the panel's
//!   side: binary, tokens, config, health), and [`Jobs`], this instance's jobs.
//!
//! Jobs live in the memory of the panel instance that runs them: one at a time per
//! server, at most [`MAX_JOBS`] at once; a restart forgets them (the server and its
//! pinned key stay in the database).

pub mod firewall;
pub mod input;
mod job;
pub mod progress;
pub mod remote;
pub mod ssh;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use switchyard_config::NodeConfig;
use tokio::sync::Semaphore;

pub use input::{Credentials, InputError, Request, SshInstallInput};
pub use progress::{HostKey, JobState, JobView, Progress, Step, StepState, StepView};

use crate::model::Id;

/// Install jobs running at once on one panel instance: each holds an SSH connection
/// and streams the binary (tens of MB); more wait for a slot (503).
pub const MAX_JOBS: usize = 4;
/// The TCP connection's deadline.
pub const TCP_DEADLINE: Duration = Duration::from_secs(10);
/// The SSH key exchange's deadline, and again the login's.
pub const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(20);
/// Every remote command's deadline but the upload's and the install's.
pub const COMMAND_DEADLINE: Duration = Duration::from_secs(60);
/// The upload's deadline: 10 minutes carry a 200 MB binary at under 3 Mbit/s.
pub const UPLOAD_DEADLINE: Duration = Duration::from_secs(600);
/// `switchyard node install`'s deadline (it joins and starts the service).
pub const INSTALL_DEADLINE: Duration = Duration::from_secs(180);
/// How long the panel waits for the node's enrollment, then for its channel.
pub const ONLINE_DEADLINE: Duration = Duration::from_secs(60);
/// The whole job's deadline; the connection is closed past it.
pub const TOTAL_DEADLINE: Duration = Duration::from_secs(1200);

/// A failure on the panel's side of a job (reading its binary, a token, the store).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HostError(pub String);

/// The binary handed out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binary {
    /// Its file.
    pub path: PathBuf,
    /// Its sha256.
    pub sha256: [u8; 32],
    /// Its architecture, as `uname -m` says it.
    pub arch: String,
}

/// What a job needs from the panel.
#[async_trait]
pub trait Host: Send + Sync + 'static {
    /// The binary to upload.
    async fn binary(&self) -> Result<Binary, HostError>;
    /// A fresh join token for `server`'s node.
    async fn join_token(&self, server: Id) -> Result<String, HostError>;
    /// The config the panel renders for `server` (its ports, for the firewall).
    async fn node_config(&self, server: Id) -> Result<NodeConfig, HostError>;
    /// Whether `server`'s node has joined (its certificate is pinned).
    async fn joined(&self, server: Id) -> Result<bool, HostError>;
    /// `server`'s node version when it is online, else none.
    async fn online(&self, server: Id) -> Result<Option<String>, HostError>;
    /// Pins `server`'s SSH host key (a pinned one is kept).
    async fn pin_host_key(&self, server: Id, fingerprint: &str) -> Result<(), HostError>;
}

/// Why a job was not started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// A job for this server is still running.
    #[error("an install over SSH of this server is already running")]
    Busy,
    /// Every slot is taken.
    #[error("{MAX_JOBS} installs over SSH are already running on this panel; try again shortly")]
    Full,
}

/// This instance's jobs: the latest of each server, running or ended.
#[derive(Debug)]
pub struct Jobs {
    jobs: Mutex<HashMap<Id, Arc<Mutex<Progress>>>>,
    slots: Arc<Semaphore>,
}

impl Default for Jobs {
    fn default() -> Self {
        Self::new(MAX_JOBS)
    }
}

impl Jobs {
    /// At most `max` running at once.
    pub fn new(max: usize) -> Self {
        Self {
            jobs: Mutex::new(HashMap::new()),
            slots: Arc::new(Semaphore::new(max.max(1))),
        }
    }

    /// The latest job of `server`.
    pub fn view(&self, server: Id) -> Option<JobView> {
        let jobs = self.jobs.lock().ok()?;
        let job = jobs.get(&server)?;
        job.lock().ok().map(|p| p.view().clone())
    }

    /// Starts `request` on `server` (whose pinned host key is `pin`), its steps run
    /// through `host`; the job as it starts.
    pub fn start(
        &self,
        host: Arc<dyn Host>,
        server: Id,
        request: Request,
        pin: Option<String>,
        now_ms: i64,
    ) -> Result<JobView, StartError> {
        let mut jobs = self.jobs.lock().map_err(|_| StartError::Busy)?;
        if let Some(job) = jobs.get(&server)
            && job.lock().is_ok_and(|p| !p.ended())
        {
            return Err(StartError::Busy);
        }
        let slot = self
            .slots
            .clone()
            .try_acquire_owned()
            .map_err(|_| StartError::Full)?;
        let expected = request.host_key.clone().or(pin);
        let steps = match (&expected, &request.credentials) {
            (Some(_), Some(_)) => Step::install(request.firewall),
            _ => Step::probe(),
        };
        let progress = Progress::new(
            server,
            request.target.to_string(),
            request.user.clone(),
            &steps,
            now_ms,
        );
        let view = progress.view().clone();
        let progress = Arc::new(Mutex::new(progress));
        jobs.insert(server, progress.clone());
        tokio::spawn(async move {
            job::run(host, progress, server, request, expected).await;
            drop(slot);
        });
        Ok(view)
    }
}
