//! The states of upgrade jobs, pure: which step runs, what each said (its last
//! [`OUTPUT_BYTES`]), when each started and ended; and the upgrade of every server.
//! Time comes in as Unix ms; the drivers feed it.

use serde::Serialize;
use utoipa::ToSchema;

pub use crate::ssh_install::StepState;

/// The most output kept per step.
pub const OUTPUT_BYTES: usize = 4 * 1024;

/// One step of an upgrade, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum UpgradeStep {
    /// The panel's binary to the node (`PUT /v1/binary`), its sha256 checked there.
    Uploading,
    /// The node hands over to a process of the new binary (`POST /v1/upgrade`).
    Switching,
    /// The server is online again, running the new binary.
    Online,
}

impl UpgradeStep {
    /// Every step, in order.
    pub const ALL: [Self; 3] = [Self::Uploading, Self::Switching, Self::Online];

    /// Its name in the API.
    pub fn name(self) -> &'static str {
        match self {
            Self::Uploading => "uploading",
            Self::Switching => "switching",
            Self::Online => "online",
        }
    }
}

/// Where an upgrade is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum UpgradeState {
    /// A step runs.
    Running,
    /// Every step is done: the server runs the new binary.
    Online,
    /// A step failed (`error` says which and why).
    Failed,
}

/// One step as the API shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct UpgradeStepView {
    /// Which.
    pub name: UpgradeStep,
    /// Where it is.
    pub state: StepState,
    /// What it said (its last 4 KiB).
    pub output: String,
    /// When it started (Unix ms).
    pub started_ms: Option<i64>,
    /// When it ended (Unix ms).
    pub ended_ms: Option<i64>,
}

/// An upgrade of one server as the API shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct UpgradeJob {
    /// The server upgraded.
    pub server_id: i64,
    /// The sha256 of the binary handed over, once read.
    pub sha256: Option<String>,
    /// Where the job is.
    pub state: UpgradeState,
    /// Every step, in order.
    pub steps: Vec<UpgradeStepView>,
    /// Which step failed and why, when one did (`"uploading: …"`).
    pub error: Option<String>,
    /// When the job started (Unix ms).
    pub started_ms: i64,
    /// When it ended (Unix ms).
    pub ended_ms: Option<i64>,
}

/// One job's progress: the only place its state changes.
#[derive(Clone, Debug)]
pub struct Progress {
    view: UpgradeJob,
}

impl Progress {
    /// A job of `server`, no step started, at `now_ms`.
    pub fn new(server: i64, now_ms: i64) -> Self {
        Self {
            view: UpgradeJob {
                server_id: server,
                sha256: None,
                state: UpgradeState::Running,
                steps: UpgradeStep::ALL
                    .iter()
                    .map(|&name| UpgradeStepView {
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
        }
    }

    /// The job as the API shows it.
    pub fn view(&self) -> &UpgradeJob {
        &self.view
    }

    /// Whether the job has ended.
    pub fn ended(&self) -> bool {
        self.view.ended_ms.is_some()
    }

    /// The binary handed over.
    pub fn sha256(&mut self, hex: &str) {
        self.view.sha256 = Some(hex.to_owned());
    }

    fn step_mut(&mut self, step: UpgradeStep) -> &mut UpgradeStepView {
        let i = UpgradeStep::ALL
            .iter()
            .position(|s| *s == step)
            .unwrap_or(0);
        &mut self.view.steps[i]
    }

    /// `step` starts (nothing moves once the job ended).
    pub fn start(&mut self, step: UpgradeStep, now_ms: i64) {
        if self.ended() {
            return;
        }
        let s = self.step_mut(step);
        s.state = StepState::Running;
        s.started_ms = Some(now_ms);
    }

    /// Adds a line to `step`'s output, its last [`OUTPUT_BYTES`] kept.
    pub fn say(&mut self, step: UpgradeStep, line: &str) {
        let s = self.step_mut(step);
        s.output.push_str(line.trim_end());
        s.output.push('\n');
        if s.output.len() > OUTPUT_BYTES {
            let mut from = s.output.len() - OUTPUT_BYTES;
            while !s.output.is_char_boundary(from) {
                from += 1;
            }
            s.output.drain(..from);
        }
    }

    /// `step` ended well, saying `line`; the job is online after the last step.
    pub fn done(&mut self, step: UpgradeStep, line: &str, now_ms: i64) {
        if self.ended() {
            return;
        }
        if !line.is_empty() {
            self.say(step, line);
        }
        let s = self.step_mut(step);
        s.state = StepState::Done;
        s.ended_ms = Some(now_ms);
        s.started_ms.get_or_insert(now_ms);
        if self.view.steps.iter().all(|s| s.state == StepState::Done) {
            self.view.state = UpgradeState::Online;
            self.view.ended_ms = Some(now_ms);
        }
    }

    /// `step` failed with `reason`: the job ends.
    pub fn fail(&mut self, step: UpgradeStep, reason: &str, now_ms: i64) {
        if self.ended() {
            return;
        }
        self.say(step, reason);
        let s = self.step_mut(step);
        s.state = StepState::Failed;
        s.ended_ms = Some(now_ms);
        s.started_ms.get_or_insert(now_ms);
        self.view.state = UpgradeState::Failed;
        self.view.error = Some(format!("{}: {}", step.name(), reason.trim_end()));
        self.view.ended_ms = Some(now_ms);
    }

    /// The step that runs now.
    pub fn running(&self) -> Option<UpgradeStep> {
        self.view
            .steps
            .iter()
            .find(|s| s.state == StepState::Running)
            .map(|s| s.name)
    }
}

/// Where an upgrade of every server is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RolloutState {
    /// A server is being upgraded, or is next.
    Running,
    /// Every server is upgraded (or none needed it).
    Done,
    /// A server's upgrade failed: the rest were left as they are.
    Failed,
}

/// An upgrade of every server, one at a time, as the API shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct Rollout {
    /// Where it is.
    pub state: RolloutState,
    /// The sha256 of the binary handed out, once read.
    pub sha256: Option<String>,
    /// The servers to upgrade, in order (online, running another binary).
    pub servers: Vec<i64>,
    /// The server being upgraded now.
    pub current: Option<i64>,
    /// The servers upgraded, in order.
    pub upgraded: Vec<i64>,
    /// Which server failed and why (`"server 3 (fra-1): uploading: …"`).
    pub error: Option<String>,
    /// When it started (Unix ms).
    pub started_ms: i64,
    /// When it ended (Unix ms).
    pub ended_ms: Option<i64>,
}

impl Rollout {
    /// An upgrade of every server starting at `now_ms`, the list not read yet.
    pub fn new(now_ms: i64) -> Self {
        Self {
            state: RolloutState::Running,
            sha256: None,
            servers: Vec::new(),
            current: None,
            upgraded: Vec::new(),
            error: None,
            started_ms: now_ms,
            ended_ms: None,
        }
    }

    /// It ended: done, or failed with `error`.
    pub fn end(&mut self, error: Option<String>, now_ms: i64) {
        self.state = if error.is_some() {
            RolloutState::Failed
        } else {
            RolloutState::Done
        };
        self.error = error;
        self.current = None;
        self.ended_ms = Some(now_ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_run_in_order_to_online() {
        let mut p = Progress::new(3, 10);
        for (i, step) in UpgradeStep::ALL.into_iter().enumerate() {
            assert_eq!(p.view().state, UpgradeState::Running);
            p.start(step, 10 + i as i64);
            assert_eq!(p.running(), Some(step));
            p.done(step, "ok", 11 + i as i64);
        }
        assert_eq!(p.view().state, UpgradeState::Online);
        assert_eq!(p.view().ended_ms, Some(13));
        assert!(p.ended());
    }

    #[test]
    fn a_failed_step_ends_the_job_naming_it() {
        let mut p = Progress::new(3, 10);
        p.start(UpgradeStep::Uploading, 11);
        p.fail(UpgradeStep::Uploading, "server 3 is not connected\n", 12);
        assert_eq!(p.view().state, UpgradeState::Failed);
        assert_eq!(
            p.view().error.as_deref(),
            Some("uploading: server 3 is not connected")
        );
        p.start(UpgradeStep::Switching, 13);
        assert_eq!(p.view().steps[1].state, StepState::Pending);
    }

    #[test]
    fn output_keeps_its_last_bytes() {
        let mut p = Progress::new(3, 10);
        for i in 0..2000 {
            p.say(UpgradeStep::Online, &format!("still waiting é {i}"));
        }
        let out = &p.view().steps[2].output;
        assert!(out.len() <= OUTPUT_BYTES);
        assert!(out.ends_with("still waiting é 1999\n"));
    }
}
