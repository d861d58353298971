//! The drivers: one server's steps in order through the [`Host`], written into its
//! [`Progress`]; and the upgrade of every server, one job after the other.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::Method;
use tokio::sync::Semaphore;

use super::progress::{Progress, Rollout, UpgradeState, UpgradeStep};
use super::{
    DRAIN_S, Host, Jobs, MAX_BINARY, ONLINE_DEADLINE, SWITCH_DEADLINE, UPLOAD_DEADLINE, lock,
};
use crate::model::Id;

/// How often the panel looks at the server while it waits for it.
const POLL: Duration = Duration::from_millis(500);

fn now() -> i64 {
    crate::clock::now_ms()
}

/// A step that failed, and why.
struct Failed(UpgradeStep, String);

/// The node's answer as one line: its `error` field, else its text, bounded.
fn answer_text(body: &[u8]) -> String {
    let text = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["error"].as_str().map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    let text: String = text.chars().filter(|c| !c.is_control()).take(512).collect();
    if text.is_empty() {
        "no reason given".into()
    } else {
        text
    }
}

/// Runs `server`'s job to its end (uploads one at a time, through `uploads`).
pub(super) async fn run(
    host: Arc<dyn Host>,
    progress: Arc<Mutex<Progress>>,
    server: Id,
    uploads: Arc<Semaphore>,
) {
    if let Err(Failed(step, reason)) = steps(&*host, &progress, server, &uploads).await {
        tracing::info!(server, step = step.name(), "upgrade failed: {reason}");
        lock(&progress).fail(step, &reason, now());
    }
}

async fn steps(
    host: &dyn Host,
    progress: &Mutex<Progress>,
    server: Id,
    uploads: &Semaphore,
) -> Result<(), Failed> {
    use UpgradeStep::{Online, Switching, Uploading};
    let say = |step, line: &str| lock(progress).say(step, line);
    lock(progress).start(Uploading, now());
    let upload = async {
        if !host.connected(server) {
            return Err(format!(
                "server {server} is not connected to this panel instance (it is offline, or \
                 another instance holds its channel)"
            ));
        }
        if uploads.available_permits() == 0 {
            say(Uploading, "waiting for another upgrade's upload to end");
        }
        let _one = uploads
            .acquire()
            .await
            .map_err(|_| "the panel is stopping".to_owned())?;
        let (bytes, sha) = host.binary().await.map_err(|e| e.0)?;
        if bytes.len() as u64 > MAX_BINARY {
            return Err(format!(
                "the binary is larger than a node takes ({MAX_BINARY} bytes)"
            ));
        }
        let hex = switchyard_config::hex::encode(&sha);
        lock(progress).sha256(&hex);
        say(
            Uploading,
            &format!("sending {} bytes, sha256 {hex}", bytes.len()),
        );
        let (status, body) = host
            .request(
                server,
                Method::PUT,
                &format!("/v1/binary?sha256={hex}"),
                bytes,
                UPLOAD_DEADLINE,
            )
            .await
            .map_err(|e| e.0)?;
        if !status.is_success() {
            return Err(format!(
                "the node answered {status}: {}",
                answer_text(&body)
            ));
        }
        Ok(hex)
    };
    let hex = upload.await.map_err(|e| Failed(Uploading, e))?;
    lock(progress).done(Uploading, "the node has it, its sha256 checked", now());

    lock(progress).start(Switching, now());
    let body = serde_json::json!({"binary": hex, "drain_s": DRAIN_S}).to_string();
    match host
        .request(
            server,
            Method::POST,
            "/v1/upgrade",
            body.into_bytes(),
            SWITCH_DEADLINE,
        )
        .await
    {
        Ok((status, body)) if status.is_success() => {
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            lock(progress).done(
                Switching,
                &format!(
                    "process {} serves now; process {} drains its open connections for at most {DRAIN_S} s",
                    v["new_pid"], v["old_pid"]
                ),
                now(),
            );
        }
        Ok((status, body)) => {
            return Err(Failed(
                Switching,
                format!("the node answered {status}: {}", answer_text(&body)),
            ));
        }
        // The answer comes just before the old process lets the channel go: a lost
        // answer may still be a switch made. The next step tells.
        Err(e) => {
            say(Switching, &format!("{e}: looking at the server"));
            lock(progress).done(Switching, "", now());
        }
    }

    lock(progress).start(Online, now());
    let deadline = tokio::time::Instant::now() + ONLINE_DEADLINE;
    loop {
        let last = match host.online(server).await {
            Ok(Some(Some(running))) if running == hex => break,
            Ok(Some(running)) => format!(
                "online, running {}",
                running.as_deref().unwrap_or("a binary not known yet")
            ),
            Ok(None) => "not online".into(),
            Err(e) => e.0,
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(Failed(
                Online,
                format!(
                    "the server is not online with the new binary after {} s ({last})",
                    ONLINE_DEADLINE.as_secs()
                ),
            ));
        }
        tokio::time::sleep(POLL).await;
    }
    lock(progress).done(Online, &format!("online, running {hex}"), now());
    Ok(())
}

/// Upgrades every online server running another binary, one after the other.
pub(super) async fn run_all(jobs: Arc<Jobs>, host: Arc<dyn Host>, rollout: Arc<Mutex<Rollout>>) {
    let error = all(&jobs, &host, &rollout).await.err();
    if let Some(e) = &error {
        tracing::info!("upgrading every server stopped: {e}");
    }
    lock(&rollout).end(error, now());
}

async fn all(
    jobs: &Arc<Jobs>,
    host: &Arc<dyn Host>,
    rollout: &Mutex<Rollout>,
) -> Result<(), String> {
    let sha = host.binary_sha256().await.map_err(|e| e.0)?;
    let hex = switchyard_config::hex::encode(&sha);
    let servers = host.outdated(&hex).await.map_err(|e| e.0)?;
    {
        let mut r = lock(rollout);
        r.sha256 = Some(hex);
        r.servers = servers.iter().map(|(id, _)| *id).collect();
    }
    for (id, name) in servers {
        lock(rollout).current = Some(id);
        jobs.start(host.clone(), id, now())
            .map_err(|e| format!("server {id} ({name}): {e}"))?;
        let job = loop {
            tokio::time::sleep(POLL).await;
            match jobs.view(id) {
                Some(j) if j.state != UpgradeState::Running => break j,
                Some(_) => {}
                None => return Err(format!("server {id} ({name}): its job is gone")),
            }
        };
        if job.state == UpgradeState::Failed {
            return Err(format!(
                "server {id} ({name}): {}",
                job.error.unwrap_or_default()
            ));
        }
        lock(rollout).upgraded.push(id);
    }
    Ok(())
}
