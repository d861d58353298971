//! The step machine of one install job, pure: which step runs, what each printed (the
//! last [`OUTPUT_BYTES`], secrets taken out), when each started and ended, and the
//! job's state. Time comes in as Unix ms; the driver ([`super::job`]) feeds it.

use serde::Serialize;
use utoipa::ToSchema;

/// The most output kept per step: its last bytes (a line cut at the front is marked).
pub const OUTPUT_BYTES: usize = 16 * 1024;

/// What replaces a secret in a step's output.
pub const REDACTED: &str = "<redacted>";

/// One step of an install, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// TCP, the SSH key exchange and the login (within a deadline).
    Connecting,
    /// The server's host key against the operator's confirmation or the server's pin.
    HostKey,
    /// `uname`, root or `sudo -n`, systemd.
    Checking,
    /// The panel's binary to `/usr/local/bin/switchyard`, its sha256 checked there.
    Uploading,
    /// `switchyard node install TOKEN` on the server.
    Installing,
    /// The panel has enrolled the node (its certificate is pinned).
    Joining,
    /// The nftables table `inet switchyard` (only when asked for).
    Firewall,
    /// The panel sees the node's channel up.
    Online,
}

impl Step {
    /// Every step of a confirmed install, in order (`firewall` only when asked for).
    pub fn install(firewall: bool) -> Vec<Self> {
        let mut steps = vec![
            Self::Connecting,
            Self::HostKey,
            Self::Checking,
            Self::Uploading,
            Self::Installing,
            Self::Joining,
        ];
        if firewall {
            steps.push(Self::Firewall);
        }
        steps.push(Self::Online);
        steps
    }

    /// The steps of a first request, which only reads the host key.
    pub fn probe() -> Vec<Self> {
        vec![Self::Connecting, Self::HostKey]
    }

    /// Its name in the API.
    pub fn name(self) -> &'static str {
        match self {
            Self::Connecting => "connecting",
            Self::HostKey => "host_key",
            Self::Checking => "checking",
            Self::Uploading => "uploading",
            Self::Installing => "installing",
            Self::Joining => "joining",
            Self::Firewall => "firewall",
            Self::Online => "online",
        }
    }
}

/// Where a step is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepState {
    /// Not started.
    Pending,
    /// Running now.
    Running,
    /// Ended well.
    Done,
    /// Ended badly: the job stops here.
    Failed,
}

/// Where the whole job is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// A step runs.
    Running,
    /// The host key was read: repeat the request with `host_key` to install.
    ConfirmHostKey,
    /// Every step is done: the node is online.
    Online,
    /// A step failed (`error` says which and why).
    Failed,
}

/// A server's SSH host key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct HostKey {
    /// Its algorithm, as SSH names it (`ssh-ed25519`).
    pub algorithm: String,
    /// Its fingerprint as OpenSSH prints it: `SHA256:` and unpadded base64.
    pub fingerprint: String,
}

/// One step as the API shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct StepView {
    /// Which.
    pub name: Step,
    /// Where it is.
    pub state: StepState,
    /// What it printed (its last 16 KiB; no secret).
    pub output: String,
    /// When it started (Unix ms).
    pub started_ms: Option<i64>,
    /// When it ended (Unix ms).
    pub ended_ms: Option<i64>,
}

/// An install job as the API shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct JobView {
    /// The server installed.
    pub server_id: i64,
    /// The SSH address dialled (`host:port`).
    pub address: String,
    /// The login name.
    pub user: String,
    /// Where the job is.
    pub state: JobState,
    /// The host key the server presented, once read.
    pub host_key: Option<HostKey>,
    /// Every step, in order.
    pub steps: Vec<StepView>,
    /// Which step failed and why, when one did.
    pub error: Option<String>,
    /// When the job started (Unix ms).
    pub started_ms: i64,
    /// When it ended (Unix ms).
    pub ended_ms: Option<i64>,
}

/// The job's progress: the only place its state changes.
#[derive(Clone, Debug)]
pub struct Progress {
    view: JobView,
    /// Text taken out of every output from now on.
    secrets: Vec<String>,
    /// Whether the job only reads the host key.
    probe: bool,
}

impl Progress {
    /// A job over `steps`, none started, at `now_ms`.
    pub fn new(server_id: i64, address: String, user: String, steps: &[Step], now_ms: i64) -> Self {
        let probe = !steps.contains(&Step::Checking);
        Self {
            view: JobView {
                server_id,
                address,
                user,
                state: JobState::Running,
                host_key: None,
                steps: steps
                    .iter()
                    .map(|&name| StepView {
                        name,
                        state: StepState::Pending,
                        output: String::new(),
                        started_ms: None,
                        ended_ms: None,
                    })
                    .collect(),
                error: None,
                started_ms: now_ms,
                ended_ms: None,
            },
            secrets: Vec::new(),
            probe,
        }
    }

    /// The job as the API shows it.
    pub fn view(&self) -> &JobView {
        &self.view
    }

    /// Whether the job has ended (online, failed or waiting for a confirmation).
    pub fn ended(&self) -> bool {
        self.view.ended_ms.is_some()
    }

    /// Takes `secret` out of every output from now on (a join token, a password).
    pub fn add_secret(&mut self, secret: &str) {
        if !secret.is_empty() {
            self.secrets.push(secret.to_owned());
        }
    }

    fn step_mut(&mut self, step: Step) -> Option<&mut StepView> {
        self.view.steps.iter_mut().find(|s| s.name == step)
    }

    /// `step` starts (a step not in this job, or a job that has ended, is ignored).
    pub fn start(&mut self, step: Step, now_ms: i64) {
        if self.ended() {
            return;
        }
        if let Some(s) = self.step_mut(step) {
            s.state = StepState::Running;
            s.started_ms = Some(now_ms);
        }
    }

    /// Adds `text` to `step`'s output, secrets taken out, its last
    /// [`OUTPUT_BYTES`] kept.
    pub fn output(&mut self, step: Step, text: &str) {
        let mut text = text.to_owned();
        for secret in &self.secrets {
            text = text.replace(secret.as_str(), REDACTED);
        }
        let secrets = &self.secrets;
        if let Some(s) = self.view.steps.iter_mut().find(|s| s.name == step) {
            s.output.push_str(&text);
            // Secrets may be cut across two writes: look again over the whole.
            for secret in secrets {
                if s.output.contains(secret.as_str()) {
                    s.output = s.output.replace(secret.as_str(), REDACTED);
                }
            }
            keep_tail(&mut s.output, OUTPUT_BYTES);
        }
    }

    /// `step` ended well, with `text` added to its output.
    pub fn done(&mut self, step: Step, text: &str, now_ms: i64) {
        if !text.is_empty() {
            self.output(step, text);
        }
        if let Some(s) = self.step_mut(step) {
            s.state = StepState::Done;
            s.ended_ms = Some(now_ms);
            s.started_ms.get_or_insert(now_ms);
        }
        if self.view.steps.iter().all(|s| s.state == StepState::Done) {
            self.view.state = if self.probe {
                JobState::ConfirmHostKey
            } else {
                JobState::Online
            };
            self.view.ended_ms = Some(now_ms);
        }
    }

    /// `step` failed with `reason` (added to its output too): the job ends.
    pub fn fail(&mut self, step: Step, reason: &str, now_ms: i64) {
        if self.ended() {
            return;
        }
        let mut reason = reason.to_owned();
        for secret in &self.secrets {
            reason = reason.replace(secret.as_str(), REDACTED);
        }
        self.output(step, &reason);
        if let Some(s) = self.step_mut(step) {
            s.state = StepState::Failed;
            s.ended_ms = Some(now_ms);
            s.started_ms.get_or_insert(now_ms);
        }
        self.view.state = JobState::Failed;
        self.view.error = Some(format!("{}: {}", step.name(), reason.trim_end()));
        self.view.ended_ms = Some(now_ms);
    }

    /// The server presented `key`.
    pub fn host_key(&mut self, key: HostKey) {
        self.view.host_key = Some(key);
    }
}

/// Cuts `text` to its last `max` bytes at a character boundary, marking the cut.
fn keep_tail(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    const CUT: &str = "…(earlier output cut)\n";
    let mut from = text.len() - (max - CUT.len());
    while !text.is_char_boundary(from) {
        from += 1;
    }
    *text = format!("{CUT}{}", &text[from..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(firewall: bool) -> Progress {
        Progress::new(
            7,
            "10.0.0.2:22".into(),
            "root".into(),
            &Step::install(firewall),
            1000,
        )
    }

    #[test]
    fn steps_run_in_order_to_online() {
        let mut p = job(false);
        assert!(!p.view().steps.iter().any(|s| s.name == Step::Firewall));
        for (i, step) in Step::install(false).into_iter().enumerate() {
            let t = 1000 + i as i64;
            assert_eq!(p.view().state, JobState::Running);
            p.start(step, t);
            p.done(step, "ok\n", t + 1);
        }
        assert_eq!(p.view().state, JobState::Online);
        assert_eq!(p.view().ended_ms, Some(1007));
        assert!(p.view().steps.iter().all(|s| s.state == StepState::Done));
        assert_eq!(p.view().steps[0].output, "ok\n");
    }

    #[test]
    fn a_probe_ends_waiting_for_the_confirmation() {
        let mut p = Progress::new(1, "h:22".into(), "root".into(), &Step::probe(), 0);
        p.done(Step::Connecting, "", 1);
        p.host_key(HostKey {
            algorithm: "ssh-ed25519".into(),
            fingerprint: "SHA256:x".into(),
        });
        p.done(Step::HostKey, "", 2);
        assert_eq!(p.view().state, JobState::ConfirmHostKey);
        assert!(p.ended());
    }

    #[test]
    fn a_failed_step_ends_the_job_naming_it() {
        let mut p = job(true);
        p.start(Step::Connecting, 1);
        p.done(Step::Connecting, "", 2);
        p.start(Step::HostKey, 2);
        p.fail(Step::HostKey, "the key changed\n", 3);
        assert_eq!(p.view().state, JobState::Failed);
        assert_eq!(p.view().error.as_deref(), Some("host_key: the key changed"));
        assert_eq!(p.view().steps[1].state, StepState::Failed);
        assert_eq!(p.view().steps[2].state, StepState::Pending);
        // Nothing moves once it ended.
        p.start(Step::Checking, 4);
        assert_eq!(p.view().steps[2].state, StepState::Pending);
        p.fail(Step::Checking, "again", 5);
        assert_eq!(p.view().error.as_deref(), Some("host_key: the key changed"));
    }

    #[test]
    fn secrets_never_reach_the_output_even_cut_in_two() {
        let mut p = job(false);
        p.add_secret("syj2.abc.SECRET");
        p.output(Step::Installing, "joining with syj2.abc.SEC");
        p.output(Step::Installing, "RET now\n");
        p.fail(Step::Installing, "refused syj2.abc.SECRET", 9);
        let out = &p.view().steps[4].output;
        assert!(!out.contains("SECRET"), "{out}");
        assert!(out.contains(REDACTED), "{out}");
        assert!(!p.view().error.as_deref().unwrap_or("").contains("SECRET"));
    }

    #[test]
    fn output_keeps_its_last_16_kib() {
        let mut p = job(false);
        for i in 0..5000 {
            p.output(Step::Uploading, &format!("line é {i}\n"));
        }
        let out = &p.view().steps[3].output;
        assert!(out.len() <= OUTPUT_BYTES, "{}", out.len());
        assert!(out.starts_with("…(earlier output cut)\n"));
        assert!(out.ends_with("line é 4999\n"));
    }
}
