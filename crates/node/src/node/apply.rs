//! Applying a config as a difference, all or nothing.
//!
//! Everything that can fail is done before anything stops: the certificates and tunnel
//! files are read (on the blocking pool), new and changed inbounds bound (with
//! `SO_REUSEPORT` a changed inbound binds its port while the old listener serves),
//! new tunnel halves started, relays' re-issued certificates swapped in. A failure
//! there drops what was prepared and changes nothing. Then old tunnel halves that
//! must go stop (they hold their ports) and their replacements start; if one of those
//! can't (another program took the port in that instant) the old halves are started
//! again and nothing else changes. Only then do users and inbounds change, and the
//! config is kept as the last good one (a failed save is reported, not fatal).

use std::collections::{HashMap, HashSet};

use super::{ApplyError, Node, Running, Runtime};
use crate::config::{InboundConfig, NodeConfig, Security, TunnelConfig, UserConfig};
use crate::inbound::{self, Bound};
use crate::state::{self, StateError};
use crate::tls::{self, Certificate};
use crate::tunnels;

/// Whether two inbound configs differ in anything but the display name.
fn shape_changed(a: &InboundConfig, b: &InboundConfig) -> bool {
    let strip = |c: &InboundConfig| InboundConfig {
        name: String::new(),
        ..c.clone()
    };
    strip(a) != strip(b)
}

/// Users whose connections a change must close: removed, disabled, or with changed
/// credentials.
fn users_to_close(old: &[UserConfig], new: &[UserConfig]) -> HashSet<String> {
    let new: HashMap<&str, &UserConfig> = new.iter().map(|u| (u.name.as_str(), u)).collect();
    old.iter()
        .filter(|o| match new.get(o.name.as_str()) {
            None => true,
            Some(n) => {
                !n.enabled
                    || n.vless != o.vless
                    || n.trojan != o.trojan
                    || n.shadowsocks != o.shadowsocks
                    || n.socks != o.socks
            }
        })
        .map(|o| o.name.clone())
        .collect()
}

/// The files a config needs, read and checked.
struct Files {
    /// By inbound tag, for TLS inbounds.
    certificates: HashMap<String, tls::Loaded>,
    /// By tunnel name.
    tunnels: HashMap<String, tunnels::Prepared>,
}

/// Reads every file `config` names. Blocks.
fn read_files(config: &NodeConfig) -> Result<Files, ApplyError> {
    let mut certificates = HashMap::new();
    for ib in &config.inbounds {
        if let Security::Tls { cert, key } = &ib.security {
            let loaded = tls::load(cert, key).map_err(|problem| ApplyError::Inbound {
                tag: ib.tag.clone(),
                problem,
            })?;
            certificates.insert(ib.tag.clone(), loaded);
        }
    }
    let mut prepared = HashMap::new();
    for t in &config.tunnels {
        let p = tunnels::prepare(t).map_err(|problem| ApplyError::Tunnel {
            name: t.name.clone(),
            problem,
        })?;
        prepared.insert(t.name.clone(), p);
    }
    Ok(Files {
        certificates,
        tunnels: prepared,
    })
}

fn tunnel_error(t: &TunnelConfig) -> impl FnOnce(String) -> ApplyError + '_ {
    move |problem| ApplyError::Tunnel {
        name: t.name.clone(),
        problem,
    }
}

/// Stops halves started for a change that is not going ahead.
async fn drop_started(started: Vec<tunnels::Running>) {
    for r in started {
        tunnels::stop(r).await;
    }
}

impl Node {
    /// Applies `new` as a difference: only added, removed or changed inbounds and
    /// tunnel halves are rebuilt, only removed, disabled or re-keyed users lose their
    /// connections, and TLS inbounds whose certificate files were renewed serve the
    /// new certificate to new connections. On error nothing changes.
    pub async fn apply(&self, new: NodeConfig) -> Result<(), ApplyError> {
        new.validate()?;
        let mut running = self.running.lock().await;
        let for_files = new.clone();
        let mut files = state::blocking(move || read_files(&for_files))
            .await
            .map_err(|source| StateError::Io {
                path: self.state_dir.clone(),
                source,
            })??;

        // 1. Bind what is new or changed, all or nothing.
        let mut bound: Vec<Bound> = Vec::new();
        let mut certificates: HashMap<String, std::sync::Arc<Certificate>> = HashMap::new();
        for ib in &new.inbounds {
            let unchanged = running
                .config
                .inbounds
                .iter()
                .any(|old| old.tag == ib.tag && !shape_changed(old, ib));
            if unchanged {
                continue;
            }
            let inbound_error = |problem| ApplyError::Inbound {
                tag: ib.tag.clone(),
                problem,
            };
            let tls = match files.certificates.remove(&ib.tag) {
                Some(loaded) => {
                    let c = Certificate::new(loaded);
                    let acceptor = c.acceptor().map_err(inbound_error)?;
                    certificates.insert(ib.tag.clone(), c);
                    Some(acceptor)
                }
                None => None,
            };
            bound.push(inbound::bind(ib, tls).await.map_err(inbound_error)?);
        }

        // 2. Tunnel halves. Kept ones (membership changes apply live) swap in a
        //    re-issued certificate; new ones start now, unless a half that goes holds
        //    one of their ports; changed ones wait for their old half to stop.
        let going: Vec<String> = running
            .tunnels
            .iter()
            .filter(
                |(name, r)| match new.tunnels.iter().find(|t| &&t.name == name) {
                    None => true,
                    Some(t) => !(r.config == *t || tunnels::membership_only(&r.config, t)),
                },
            )
            .map(|(name, _)| name.clone())
            .collect();
        let held: HashSet<u16> = going
            .iter()
            .filter_map(|n| running.tunnels.get(n))
            .flat_map(|r| r.config.profiles.iter().map(|p| p.port))
            .collect();
        let mut started: Vec<tunnels::Running> = Vec::new();
        let mut deferred: Vec<(&TunnelConfig, tunnels::Prepared)> = Vec::new();
        let mut kept: Vec<&TunnelConfig> = Vec::new();
        for t in &new.tunnels {
            let prepared = files.tunnels.remove(&t.name).unwrap_or_default();
            if let Some(r) = running.tunnels.get(&t.name)
                && !going.contains(&t.name)
            {
                if let Err(problem) = tunnels::refresh_certificate(r, &prepared) {
                    drop_started(started).await;
                    return Err(tunnel_error(t)(problem));
                }
                kept.push(t);
            } else if going.contains(&t.name) || t.profiles.iter().any(|p| held.contains(&p.port)) {
                deferred.push((t, prepared));
            } else {
                match self.start_half(t, prepared).await {
                    Ok(r) => started.push(r),
                    Err(e) => {
                        drop_started(started).await;
                        return Err(e);
                    }
                }
            }
        }
        let mut old_halves = Vec::new();
        for name in &going {
            if let Some(old) = running.tunnels.remove(name) {
                old_halves.push(old.config.clone());
                tunnels::stop(old).await;
            }
        }
        for (t, prepared) in deferred {
            match self.start_half(t, prepared).await {
                Ok(r) => started.push(r),
                Err(e) => {
                    drop_started(started).await;
                    self.restore(&mut running, old_halves).await;
                    return Err(e);
                }
            }
        }

        // 3. Nothing can fail from here on.
        for t in kept {
            if let Some(r) = running.tunnels.get_mut(&t.name) {
                tunnels::update_membership(r, t.clone());
            }
        }
        for r in started {
            running.tunnels.insert(r.config.name.clone(), r);
        }
        for (tag, loaded) in files.certificates {
            if let Some(c) = running.certificates.get(&tag)
                && c.set(loaded)
            {
                tracing::info!(inbound = %tag, "serving the renewed certificate to new connections");
            }
        }
        let relays = tunnels::relays(&running.tunnels);
        *self
            .shared
            .runtime
            .write()
            .unwrap_or_else(|p| p.into_inner()) =
            std::sync::Arc::new(Runtime::from_config(&new, relays));
        self.metrics_without_token.store(
            new.control.metrics_without_token,
            std::sync::atomic::Ordering::Relaxed,
        );
        let close = users_to_close(&running.config.users, &new.users);
        if !close.is_empty() {
            let n = self.shared.sessions.close_users(|u| close.contains(u));
            tracing::info!(
                users = close.len(),
                connections = n,
                "closed connections of changed users"
            );
        }
        // 4. Stop removed and changed inbounds; start the new listeners.
        let keep: HashSet<&str> = new
            .inbounds
            .iter()
            .filter(|ib| !bound.iter().any(|b| b.config.tag == ib.tag))
            .map(|ib| ib.tag.as_str())
            .collect();
        let stale: Vec<String> = running
            .inbounds
            .keys()
            .filter(|t| !keep.contains(t.as_str()))
            .cloned()
            .collect();
        for tag in stale {
            running.certificates.remove(&tag);
            if let Some(old) = running.inbounds.remove(&tag) {
                old.stop();
            }
        }
        for b in bound {
            let tag = b.config.tag.clone();
            running.inbounds.insert(tag, b.start(self.shared.clone()));
        }
        running.certificates.extend(certificates);
        tracing::info!(version = new.version, "config applied");
        self.save(&new).await;
        running.config = new;
        Ok(())
    }

    async fn start_half(
        &self,
        t: &TunnelConfig,
        prepared: tunnels::Prepared,
    ) -> Result<tunnels::Running, ApplyError> {
        let half = tunnels::start(t, prepared, &self.shared)
            .await
            .map_err(tunnel_error(t))?;
        Ok(tunnels::Running {
            config: t.clone(),
            half,
        })
    }

    /// Starts again the halves a failed change had stopped.
    async fn restore(&self, running: &mut Running, old: Vec<TunnelConfig>) {
        for c in old {
            let for_files = c.clone();
            let result = match state::blocking(move || tunnels::prepare(&for_files)).await {
                Ok(Ok(p)) => tunnels::start(&c, p, &self.shared).await,
                Ok(Err(problem)) => Err(problem),
                Err(e) => Err(e.to_string()),
            };
            match result {
                Ok(half) => {
                    running
                        .tunnels
                        .insert(c.name.clone(), tunnels::Running { config: c, half });
                }
                Err(problem) => {
                    tracing::error!(tunnel = %c.name, "could not be started again: {problem}");
                }
            }
        }
    }
}
