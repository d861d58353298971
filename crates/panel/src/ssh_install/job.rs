//! The driver of one job: runs the steps in order over the SSH connection and the
//! [`Host`], and writes what happens into the job's [`Progress`]. It decides nothing
//! the pure parts can: the commands are [`remote`]'s, the rules [`firewall`]'s, the
//! states [`Progress`]'s.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::firewall::{Ports, ruleset};
use super::input::Request;
use super::remote::{self, Root};
use super::ssh::{self, ConnectError, Session};
use super::{
    COMMAND_DEADLINE, HANDSHAKE_DEADLINE, Host, INSTALL_DEADLINE, ONLINE_DEADLINE, Progress, Step,
    TCP_DEADLINE, TOTAL_DEADLINE, UPLOAD_DEADLINE,
};
use crate::model::Id;

/// How often the panel looks for the node's enrollment and channel.
const POLL: Duration = Duration::from_millis(500);

/// The job's progress, shared with whoever reads it.
#[derive(Clone)]
struct Shared(Arc<Mutex<Progress>>);

impl Shared {
    fn with<T>(&self, f: impl FnOnce(&mut Progress) -> T) -> Option<T> {
        self.0.lock().ok().map(|mut p| f(&mut p))
    }

    fn start(&self, step: Step) {
        self.with(|p| p.start(step, crate::clock::now_ms()));
    }

    fn done(&self, step: Step, text: &str) {
        self.with(|p| p.done(step, text, crate::clock::now_ms()));
    }

    fn fail(&self, step: Step, reason: &str) {
        self.with(|p| p.fail(step, reason, crate::clock::now_ms()));
    }

    fn output(&self, step: Step, text: &str) {
        self.with(|p| p.output(step, text));
    }

    /// The step that runs now, if any.
    fn running(&self) -> Option<Step> {
        self.with(|p| {
            p.view()
                .steps
                .iter()
                .find(|s| s.state == super::StepState::Running)
                .map(|s| s.name)
        })
        .flatten()
    }

    /// The last line `step` printed.
    fn last_line(&self, step: Step) -> String {
        self.with(|p| {
            p.view()
                .steps
                .iter()
                .find(|s| s.name == step)
                .and_then(|s| s.output.lines().rev().find(|l| !l.trim().is_empty()))
                .map(str::to_owned)
        })
        .flatten()
        .unwrap_or_default()
    }
}

/// A step that failed, and why.
struct Failed(Step, String);

/// Runs the job to its end (within [`TOTAL_DEADLINE`]).
pub(super) async fn run(
    host: Arc<dyn Host>,
    progress: Arc<Mutex<Progress>>,
    server: Id,
    request: Request,
    expected: Option<String>,
) {
    let job = Shared(progress);
    let probe = job
        .with(|p| !p.view().steps.iter().any(|s| s.name == Step::Checking))
        .unwrap_or(true);
    let work = async {
        if probe {
            read_host_key(&job, &request, expected.as_deref()).await
        } else {
            install(&*host, &job, server, request, expected).await
        }
    };
    let outcome = match tokio::time::timeout(TOTAL_DEADLINE, work).await {
        Ok(outcome) => outcome,
        Err(_) => Err(Failed(
            job.running().unwrap_or(Step::Connecting),
            format!(
                "the install took longer than {} minutes and was stopped",
                TOTAL_DEADLINE.as_secs() / 60
            ),
        )),
    };
    if let Err(Failed(step, reason)) = outcome {
        tracing::info!(
            server,
            step = step.name(),
            "install over SSH failed: {reason}"
        );
        job.fail(step, &reason);
    }
}

/// A first request: connect, read the key, log in to nothing.
async fn read_host_key(job: &Shared, request: &Request, pin: Option<&str>) -> Result<(), Failed> {
    job.start(Step::Connecting);
    let key = match ssh::connect(&request.target, None, TCP_DEADLINE, HANDSHAKE_DEADLINE).await {
        Err(ConnectError::HostKey(key)) => key,
        Ok((session, key)) => {
            session.close().await;
            key
        }
        Err(e) => return Err(Failed(Step::Connecting, e.to_string())),
    };
    job.done(
        Step::Connecting,
        &format!("connected to {}\n", request.target),
    );
    job.start(Step::HostKey);
    job.with(|p| p.host_key(key.clone()));
    let note = match pin {
        Some(pin) if pin != key.fingerprint => format!(
            "it differs from the pinned key {pin}: the install will refuse it (Replace node \
             forgets the pin)\n"
        ),
        Some(_) => "it is the pinned key\n".to_owned(),
        None => "confirm it (compare with `ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub` on the \
                 server) to install\n"
            .to_owned(),
    };
    job.done(
        Step::HostKey,
        &format!("{} {}\n{note}", key.algorithm, key.fingerprint),
    );
    Ok(())
}

/// A confirmed install: every step.
async fn install(
    host: &dyn Host,
    job: &Shared,
    server: Id,
    mut request: Request,
    expected: Option<String>,
) -> Result<(), Failed> {
    let Some(expected) = expected else {
        return Err(Failed(Step::HostKey, "no host key to expect".into()));
    };
    job.start(Step::Connecting);
    let connected = ssh::connect(
        &request.target,
        Some(&expected),
        TCP_DEADLINE,
        HANDSHAKE_DEADLINE,
    )
    .await;
    let (mut session, key) = match connected {
        Ok(c) => c,
        Err(ConnectError::HostKey(key)) => {
            job.with(|p| p.host_key(key.clone()));
            job.done(
                Step::Connecting,
                &format!("connected to {}\n", request.target),
            );
            job.start(Step::HostKey);
            return Err(Failed(
                Step::HostKey,
                format!(
                    "the server presented the host key {} ({}) but the expected one is \
                     {expected}: nothing was sent to it. If the server was reinstalled, use \
                     Replace node in the panel, then confirm its new key",
                    key.fingerprint, key.algorithm
                ),
            ));
        }
        Err(e) => return Err(Failed(Step::Connecting, e.to_string())),
    };
    job.with(|p| p.host_key(key.clone()));
    job.start(Step::HostKey);
    host.pin_host_key(server, &key.fingerprint)
        .await
        .map_err(|e| Failed(Step::HostKey, format!("pinning the host key: {e}")))?;
    job.done(
        Step::HostKey,
        &format!(
            "{} {} matches; pinned with the server\n",
            key.algorithm, key.fingerprint
        ),
    );
    // The credentials are dropped (wiped) once the login is over, whatever it said.
    let credentials = request.credentials.take();
    let login = match &credentials {
        Some(c) => session.login(&request.user, c, HANDSHAKE_DEADLINE).await,
        None => Err(ConnectError::Login("no credentials".into())),
    };
    drop(credentials);
    login.map_err(|e| Failed(Step::Connecting, e.to_string()))?;
    job.done(
        Step::Connecting,
        &format!("logged in to {} as {}\n", request.target, request.user),
    );
    let result = steps(host, job, server, &request, &session).await;
    session.close().await;
    result
}

/// Runs `command` for `step`, its output into the step; an error unless it exits 0.
async fn exec(
    job: &Shared,
    session: &Session,
    step: Step,
    command: &str,
    stdin: Option<tokio::fs::File>,
    deadline: Duration,
) -> Result<(), Failed> {
    let status = session
        .run(command, stdin, deadline, |text| job.output(step, text))
        .await
        .map_err(|e| Failed(step, e))?;
    if status == 0 {
        return Ok(());
    }
    let last = job.last_line(step);
    Err(Failed(
        step,
        format!("exited with status {status}: {}", last.trim()),
    ))
}

/// Waits (at most [`ONLINE_DEADLINE`]) until `ready` answers something.
async fn wait_for<T, F, Fut>(step: Step, what: &str, mut ready: F) -> Result<T, Failed>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<T>, super::HostError>>,
{
    let deadline = tokio::time::Instant::now() + ONLINE_DEADLINE;
    loop {
        match ready().await {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => {}
            Err(e) => return Err(Failed(step, e.to_string())),
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(Failed(
                step,
                format!("{what} within {} s", ONLINE_DEADLINE.as_secs()),
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The steps after the login.
async fn steps(
    host: &dyn Host,
    job: &Shared,
    server: Id,
    request: &Request,
    session: &Session,
) -> Result<(), Failed> {
    job.start(Step::Checking);
    let binary = host.binary().await.map_err(|e| {
        Failed(
            Step::Checking,
            format!("the panel cannot hand out its binary: {e}"),
        )
    })?;
    exec(
        job,
        session,
        Step::Checking,
        remote::CHECK,
        None,
        COMMAND_DEADLINE,
    )
    .await?;
    let printed = job
        .with(|p| {
            p.view()
                .steps
                .iter()
                .find(|s| s.name == Step::Checking)
                .map(|s| s.output.clone())
        })
        .flatten()
        .unwrap_or_default();
    let root = remote::read_check(&printed, &binary.arch)
        .map_err(|e| Failed(Step::Checking, e.to_string()))?;
    let sudo = root == Root::Sudo;
    job.done(
        Step::Checking,
        if sudo {
            "root through sudo\n"
        } else {
            "logged in as root\n"
        },
    );

    job.start(Step::Uploading);
    let file = tokio::fs::File::open(&binary.path).await.map_err(|e| {
        Failed(
            Step::Uploading,
            format!("the panel cannot read {}: {e}", binary.path.display()),
        )
    })?;
    let hex = switchyard_config::hex::encode(&binary.sha256);
    let upload = remote::as_root(&remote::upload(&hex), sudo);
    exec(
        job,
        session,
        Step::Uploading,
        &upload,
        Some(file),
        UPLOAD_DEADLINE,
    )
    .await?;
    job.done(Step::Uploading, "");

    job.start(Step::Installing);
    let token = host
        .join_token(server)
        .await
        .map_err(|e| Failed(Step::Installing, format!("no join token: {e}")))?;
    job.with(|p| p.add_secret(&token));
    let command = remote::as_root(&remote::install(&token), sudo);
    exec(
        job,
        session,
        Step::Installing,
        &command,
        None,
        INSTALL_DEADLINE,
    )
    .await?;
    job.done(Step::Installing, "");

    job.start(Step::Joining);
    wait_for(Step::Joining, "the node did not join", || async {
        host.joined(server).await.map(|j| j.then_some(()))
    })
    .await?;
    job.done(Step::Joining, "the panel enrolled the node\n");

    if request.firewall {
        job.start(Step::Firewall);
        let config = host
            .node_config(server)
            .await
            .map_err(|e| Failed(Step::Firewall, format!("the server's ports: {e}")))?;
        let rules = ruleset(&Ports::of(&config, request.target.port));
        let command = remote::as_root(&remote::firewall(&rules), sudo);
        exec(
            job,
            session,
            Step::Firewall,
            &command,
            None,
            COMMAND_DEADLINE,
        )
        .await?;
        job.done(Step::Firewall, "");
    }

    job.start(Step::Online);
    let version = wait_for(Step::Online, "the node's channel was not up", || {
        host.online(server)
    })
    .await?;
    job.done(
        Step::Online,
        &format!("the node is online (switchyard {version})\n"),
    );
    Ok(())
}
