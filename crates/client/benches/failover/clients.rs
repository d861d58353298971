//! The four clients side by side: ours (`switchyard client run`, its own process),
//! sing-box with a `urltest` outbound, mihomo with a `url-test` group and mihomo with
//! a `fallback` group, each over its own [`Tap`]s to the same servers, with its
//! defaults for everything that decides when to test and switch. What each uses and
//! what it remembers is read the way its user would: our client's `server:` lines and
//! control socket, the peers' Clash API (`GET /proxies/...`) once a second.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use switchyard_testkit::{Mihomo, SingBox, free_port, local};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::net::{Tap, http_get};
use crate::{GROUP, UUID};

/// Which client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Ours,
    SingBox,
    MihomoUrlTest,
    MihomoFallback,
}

impl Kind {
    pub(crate) const ALL: [Self; 4] = [
        Self::Ours,
        Self::SingBox,
        Self::MihomoUrlTest,
        Self::MihomoFallback,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Ours => "ours (Auto)",
            Self::SingBox => "sing-box urltest",
            Self::MihomoUrlTest => "mihomo url-test",
            Self::MihomoFallback => "mihomo fallback",
        }
    }

    /// Its name in file names.
    pub(crate) fn slug(self) -> &'static str {
        match self {
            Self::Ours => "ours",
            Self::SingBox => "sing-box-urltest",
            Self::MihomoUrlTest => "mihomo-url-test",
            Self::MihomoFallback => "mihomo-fallback",
        }
    }

    /// The simulator's model of it, if there is one.
    pub(crate) fn policy(self) -> Option<&'static str> {
        match self {
            Self::Ours => Some("auto"),
            Self::SingBox => Some("urltest"),
            Self::MihomoFallback => Some("fallback"),
            Self::MihomoUrlTest => None,
        }
    }

    pub(crate) fn is_peer(self) -> bool {
        self != Self::Ours
    }
}

/// A change of the server a client uses.
#[derive(Clone, Debug)]
pub(crate) struct Change {
    pub(crate) at: Instant,
    pub(crate) to: String,
    /// Our client's reason (`Switch`, `Neighbour`, ...); the peers say none.
    pub(crate) reason: String,
}

enum Process {
    Ours { child: Child },
    SingBox(SingBox),
    Mihomo(Mihomo),
}

/// A running client.
pub(crate) struct Client {
    pub(crate) kind: Kind,
    /// Its local SOCKS5 proxy.
    pub(crate) proxy: SocketAddr,
    /// When its process was spawned.
    pub(crate) spawned: Instant,
    /// When it served: its proxy listened (and mihomo said it serves). The start of
    /// its groups' timers, as near as can be seen from outside.
    pub(crate) started: Instant,
    /// When the first request went through it (the settling one).
    pub(crate) first_request: Option<Instant>,
    /// Its taps by server name: the own subscription's servers, then (ours only) the
    /// neighbour subscription's.
    pub(crate) taps: Vec<(String, Arc<Tap>)>,
    /// The Clash API (peers).
    controller: Option<SocketAddr>,
    /// Our client's data directory.
    data: Option<PathBuf>,
    /// Every server it used, the first one included, in time order.
    pub(crate) changes: Arc<Mutex<Vec<Change>>>,
    process: Process,
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Process::Ours { child } = &mut self.process {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Where the servers are for one client: name and the address of its tap.
pub(crate) struct Servers<'a> {
    pub(crate) own: &'a [(String, Arc<Tap>)],
    pub(crate) neighbours: &'a [(String, Arc<Tap>)],
}

fn vless_link(name: &str, addr: SocketAddr) -> String {
    format!(
        "vless://{UUID}@{}:{}?type=tcp&security=none&encryption=none#{name}",
        addr.ip(),
        addr.port()
    )
}

/// Share links of `servers`, one a line: what our client's subscription serves.
pub(crate) fn links(servers: &[(String, Arc<Tap>)]) -> String {
    let mut body = String::new();
    for (name, tap) in servers {
        body += &vless_link(name, tap.addr());
        body.push('\n');
    }
    body
}

impl Client {
    /// `switchyard client run` on the two subscription URLs (own first), its probes
    /// to `probe_url`, everything else its defaults (desktop, URL probes, 5 s probe
    /// timeout).
    pub(crate) async fn ours(
        binary: &Path,
        subscriptions: [String; 2],
        probe_url: &str,
        work: &Path,
        servers: Servers<'_>,
    ) -> Result<Self> {
        let port = free_port()?;
        let data = work.join("ours-data");
        std::fs::create_dir_all(&data)?;
        let log = std::fs::File::create(work.join("ours.log"))?;
        let spawned = Instant::now();
        let mut child = Command::new(binary)
            .args(["client", "run"])
            .args(["--subscription", &subscriptions[0]])
            .args(["--subscription", &subscriptions[1]])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--probe-url", probe_url])
            .arg("--data")
            .arg(&data)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {} client run", binary.display()))?;
        let stdout = child.stdout.take().context("our client's stdout")?;
        let changes = Arc::new(Mutex::new(Vec::new()));
        let seen = changes.clone();
        let transcript = work.join("ours.stdout");
        std::thread::spawn(move || {
            let mut keep = std::fs::File::create(transcript).ok();
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(f) = keep.as_mut() {
                    use std::io::Write;
                    let _ = writeln!(f, "{line}");
                }
                // `server: NAME (REASON)`, printed at each connect.
                let Some(rest) = line.strip_prefix("server: ") else {
                    continue;
                };
                let (to, reason) = match rest.rsplit_once(" (") {
                    Some((to, reason)) => (to, reason.trim_end_matches(')')),
                    None => (rest, ""),
                };
                seen.lock().unwrap_or_else(|p| p.into_inner()).push(Change {
                    at: Instant::now(),
                    to: to.to_owned(),
                    reason: reason.to_owned(),
                });
            }
        });
        let mut taps = servers.own.to_vec();
        taps.extend(servers.neighbours.iter().cloned());
        let mut client = Self {
            kind: Kind::Ours,
            proxy: local(port),
            spawned,
            started: spawned,
            first_request: None,
            taps,
            controller: None,
            data: Some(data),
            changes,
            process: Process::Ours { child },
        };
        client.wait_listening().await?;
        client.started = Instant::now();
        Ok(client)
    }

    /// sing-box with a `urltest` outbound over `own` (its defaults: interval 3 min,
    /// tolerance 50 ms, idle timeout 30 min) testing `probe_url`, and its Clash API.
    pub(crate) async fn sing_box(own: &[(String, Arc<Tap>)], probe_url: &str) -> Result<Self> {
        let (port, api) = (free_port()?, free_port()?);
        let mut outbounds = vec![json!({
            "type": "urltest",
            "tag": GROUP,
            "outbounds": own.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(),
            "url": probe_url,
        })];
        for (name, tap) in own {
            let mut out = switchyard_testkit::config::vless_outbound(tap.addr(), UUID);
            out["tag"] = json!(name);
            outbounds.push(out);
        }
        let config = json!({
            "log": { "level": "debug", "timestamp": true },
            "dns": { "servers": [{ "type": "local", "tag": "local" }] },
            "inbounds": [{
                "type": "mixed",
                "tag": "mixed",
                "listen": "127.0.0.1",
                "listen_port": port,
            }],
            "outbounds": outbounds,
            "route": { "final": GROUP },
            "experimental": { "clash_api": { "external_controller": format!("127.0.0.1:{api}") } },
        });
        let spawned = Instant::now();
        let process = SingBox::start(config).await.context("starting sing-box")?;
        let started = Instant::now();
        Ok(Self {
            kind: Kind::SingBox,
            proxy: local(port),
            spawned,
            started,
            first_request: None,
            taps: own.to_vec(),
            controller: Some(local(api)),
            data: None,
            changes: Arc::default(),
            process: Process::SingBox(process),
        })
    }

    /// mihomo with one `url-test` or `fallback` group over `own` testing `probe_url`,
    /// with mihomo's group defaults (interval 300 s, lazy, timeout 5000 ms,
    /// max-failed-times 5; url-test tolerance 0), and its external controller.
    pub(crate) async fn mihomo(
        kind: Kind,
        own: &[(String, Arc<Tap>)],
        probe_url: &str,
    ) -> Result<Self> {
        let group_type = match kind {
            Kind::MihomoUrlTest => "url-test",
            Kind::MihomoFallback => "fallback",
            _ => bail!("{} is not a mihomo group", kind.name()),
        };
        let (port, api) = (free_port()?, free_port()?);
        let mut yaml = format!(
            "mixed-port: {port}\nallow-lan: false\nbind-address: 127.0.0.1\nmode: rule\n\
             log-level: info\nipv6: false\nexternal-controller: 127.0.0.1:{api}\nproxies:\n"
        );
        for (name, tap) in own {
            let a = tap.addr();
            yaml += &format!(
                "  - {{ name: {name}, type: vless, server: {}, port: {}, uuid: {UUID}, \
                 network: tcp, tls: false, udp: false }}\n",
                a.ip(),
                a.port()
            );
        }
        let names: Vec<&str> = own.iter().map(|(n, _)| n.as_str()).collect();
        yaml += &format!(
            "proxy-groups:\n  - {{ name: {GROUP}, type: {group_type}, proxies: [{}], url: \"{probe_url}\" }}\n\
             rules:\n  - MATCH,{GROUP}\n",
            names.join(", ")
        );
        let spawned = Instant::now();
        let process = Mihomo::start(&yaml, local(port))
            .await
            .with_context(|| format!("starting mihomo ({group_type})"))?;
        let started = Instant::now();
        Ok(Self {
            kind,
            proxy: local(port),
            spawned,
            started,
            first_request: None,
            taps: own.to_vec(),
            controller: Some(local(api)),
            data: None,
            changes: Arc::default(),
            process: Process::Mihomo(process),
        })
    }

    async fn wait_listening(&mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if tokio::net::TcpStream::connect(self.proxy).await.is_ok() {
                return Ok(());
            }
            if let Process::Ours { child } = &mut self.process
                && let Some(status) = child.try_wait()?
            {
                bail!("our client exited ({status}) before it listened: see ours.log");
            }
            if Instant::now() > deadline {
                bail!("{} does not listen on {}", self.kind.name(), self.proxy);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The server it uses now, as its user would see it.
    pub(crate) async fn current(&self) -> Result<Option<String>> {
        match self.controller {
            Some(api) => {
                let body = http_get(api, &format!("/proxies/{GROUP}")).await?;
                let v: Value = serde_json::from_str(&body)
                    .with_context(|| format!("{}: /proxies/{GROUP}: {body}", self.kind.name()))?;
                Ok(v["now"].as_str().map(str::to_owned))
            }
            None => Ok(self.last_change().map(|c| c.to)),
        }
    }

    pub(crate) fn last_change(&self) -> Option<Change> {
        self.changes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .last()
            .cloned()
    }

    /// Polls a peer's selection once a second into [`Self::changes`] (ours reports
    /// its own).
    pub(crate) fn watch(&self) -> Option<tokio::task::JoinHandle<()>> {
        let api = self.controller?;
        let changes = self.changes.clone();
        Some(tokio::spawn(async move {
            loop {
                if let Ok(body) = http_get(api, &format!("/proxies/{GROUP}")).await
                    && let Ok(v) = serde_json::from_str::<Value>(&body)
                    && let Some(now) = v["now"].as_str()
                {
                    let mut changes = changes.lock().unwrap_or_else(|p| p.into_inner());
                    if changes.last().is_none_or(|c| c.to != now) {
                        changes.push(Change {
                            at: Instant::now(),
                            to: now.to_owned(),
                            reason: String::new(),
                        });
                    }
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }))
    }

    /// What it remembers of the servers now: our client's `status` answer and its
    /// saved memory (`auto-state.json`); a peer's `GET /proxies`.
    pub(crate) async fn memory(&self) -> Result<Value> {
        if let Some(api) = self.controller {
            let body = http_get(api, "/proxies").await?;
            return serde_json::from_str(&body).context("parsing GET /proxies");
        }
        let data = self.data.as_ref().context("our client's data directory")?;
        let status = control_status(&data.join("control.sock")).await?;
        let state = std::fs::read_to_string(data.join("auto-state.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .unwrap_or(Value::Null);
        Ok(json!({ "status": status, "state": state }))
    }

    /// Its log, for the bench's work directory.
    pub(crate) fn log(&self) -> Option<String> {
        match &self.process {
            Process::Ours { .. } => None,
            Process::SingBox(p) => std::fs::read_to_string(p.log_path()).ok(),
            Process::Mihomo(p) => std::fs::read_to_string(p.dir().join("mihomo.log")).ok(),
        }
    }

    /// Fails when its process has gone.
    pub(crate) fn ensure_running(&mut self) -> Result<()> {
        match &mut self.process {
            Process::Ours { child } => match child.try_wait()? {
                None => Ok(()),
                Some(status) => bail!("our client exited ({status}): see ours.log"),
            },
            Process::SingBox(p) => p.ensure_running(),
            Process::Mihomo(p) => p.ensure_running(),
        }
    }
}

/// `{"command":"status"}` on our client's control socket.
async fn control_status(socket: &Path) -> Result<Value> {
    let once = async {
        let mut s = tokio::net::UnixStream::connect(socket)
            .await
            .with_context(|| format!("connecting to {}", socket.display()))?;
        s.write_all(b"{\"command\":\"status\"}\n").await?;
        let mut answer = String::new();
        s.read_to_string(&mut answer).await?;
        serde_json::from_str::<Value>(answer.trim()).context("parsing the status answer")
    };
    tokio::time::timeout(Duration::from_secs(5), once)
        .await
        .context("our client's status: no answer within 5 s")?
}
