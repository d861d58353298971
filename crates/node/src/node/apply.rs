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

use serde::Serialize;

use super::{ApplyError, LAST_GOOD, Node, Running, lock};
use crate::accounting::now_ms;
use crate::config::{InboundConfig, NodeConfig, Security, TlsSource, TunnelConfig, UserConfig};
use crate::inbound::reality::Reality;
use crate::inbound::{self, Bound, InboundError, Layer};
use crate::runtime::Runtime;
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
                    || n.hysteria2 != o.hysteria2
            }
        })
        .map(|o| o.name.clone())
        .collect()
}

/// The files a config needs, read and checked (or what is wrong with them).
struct Files {
    /// By inbound tag, for TLS inbounds.
    certificates: HashMap<String, Result<tls::Loaded, tls::CertificateError>>,
    /// By tunnel name.
    tunnels: HashMap<String, Result<tunnels::Prepared, tunnels::TunnelError>>,
}

/// Reads every file `config` names. Blocks.
fn read_files(config: &NodeConfig) -> Files {
    let certificates = config
        .inbounds
        .iter()
        .filter_map(|ib| match &ib.security {
            Security::Tls { .. } => Some((
                ib.tag.clone(),
                match ib.security.tls_source() {
                    Some(TlsSource::Files { cert, key }) => tls::load(cert, key),
                    Some(TlsSource::Inline { cert_pem, key_pem }) => {
                        tls::load_inline(cert_pem, key_pem.expose(), &ib.tag)
                    }
                    // Kept by the node's ACME keepers, not read here.
                    Some(TlsSource::Acme(_)) => return None,
                    None => Err(tls::CertificateError::NoSource),
                },
            )),
            Security::None | Security::Reality { .. } => None,
        })
        .collect();
    let tunnels = config
        .tunnels
        .iter()
        .map(|t| (t.name.clone(), tunnels::prepare(t)))
        .collect();
    Files {
        certificates,
        tunnels,
    }
}

/// An acceptor serving what an ACME keeper holds (a client's handshake before the
/// first certificate arrived fails); its challenges are told apart before
/// ([`switchyard_acme::accept`]).
fn acme_acceptor(
    served: &std::sync::Arc<switchyard_acme::Served>,
) -> Result<tokio_rustls::TlsAcceptor, rustls::Error> {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(served.clone());
    Ok(tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config)))
}

/// Whether two halves name the same certificate files.
fn same_files(a: &TunnelConfig, b: &TunnelConfig) -> bool {
    let files = |c: &TunnelConfig| {
        (
            c.relay.as_ref().map(|r| (r.cert.clone(), r.key.clone())),
            c.origin.as_ref().map(|o| (o.cert.clone(), o.key.clone())),
        )
    };
    files(a) == files(b)
}

fn tunnel_error(t: &TunnelConfig) -> impl FnOnce(tunnels::TunnelError) -> ApplyError + '_ {
    move |problem| ApplyError::Tunnel {
        name: t.name.clone(),
        problem: Box::new(problem),
    }
}

/// Stops halves started for a change that is not going ahead.
async fn drop_started(started: Vec<tunnels::Running>) {
    for r in started {
        tunnels::stop(r).await;
    }
}

/// Whether the last good config reached the disk.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SaveStatus {
    /// The version last saved (none yet: `None`).
    pub saved_version: Option<u64>,
    /// The last save's error, while saves fail.
    pub error: Option<String>,
    /// Saves that failed since the node started.
    pub failures: u64,
}

impl Node {
    /// Keeps `config` as the last good one. A failure is reported (status, metrics,
    /// log), never fatal: the config is in force all the same.
    async fn save(&self, config: &NodeConfig) {
        let path = self.state_dir.join(LAST_GOOD);
        let text = serde_json::to_string_pretty(config).unwrap_or_default();
        let result =
            match state::blocking(move || state::write_atomic(&path, text.as_bytes())).await {
                Ok(r) => r.map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
        let mut saved = lock(&self.saved);
        match result {
            Ok(()) => {
                saved.saved_version = Some(config.version);
                saved.error = None;
            }
            Err(e) => {
                tracing::error!(
                    version = config.version,
                    "{e}; the config is applied but not kept for a restart"
                );
                saved.error = Some(e);
                saved.failures += 1;
            }
        }
    }

    /// Applies `new` as a difference: only added, removed or changed inbounds and
    /// tunnel halves are rebuilt, only removed, disabled or re-keyed users lose their
    /// connections, and TLS inbounds whose certificate files were renewed serve the
    /// new certificate to new connections. On error nothing changes.
    pub async fn apply(&self, new: NodeConfig) -> Result<(), ApplyError> {
        let result = self.apply_all_or_nothing(new).await;
        if result.is_err() {
            // Certificate keepers started for a change that did not go ahead stop.
            let running = self.running.lock().await;
            self.acme.retain(&running.config);
        }
        result
    }

    async fn apply_all_or_nothing(&self, new: NodeConfig) -> Result<(), ApplyError> {
        new.validate()?;
        let mut running = self.running.lock().await;
        let for_files = new.clone();
        let mut files = state::blocking(move || read_files(&for_files))
            .await
            .map_err(|source| StateError::Io {
                path: self.state_dir.clone(),
                source,
            })?;

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
            let inbound_error = |problem: InboundError| ApplyError::Inbound {
                tag: ib.tag.clone(),
                problem: Box::new(problem),
            };
            let layer = match files.certificates.remove(&ib.tag) {
                Some(Err(problem)) => return Err(inbound_error(problem.into())),
                Some(Ok(loaded)) => {
                    let c = Certificate::new(loaded);
                    let acceptor = c.acceptor().map_err(|e| inbound_error(e.into()))?;
                    certificates.insert(ib.tag.clone(), c);
                    Layer::Tls(acceptor, None)
                }
                None => match &ib.security {
                    Security::Tls {
                        acme: Some(settings),
                        ..
                    } => {
                        let served = self.acme.served(settings);
                        let acceptor =
                            acme_acceptor(&served).map_err(|e| inbound_error(e.into()))?;
                        Layer::Tls(acceptor, Some(served))
                    }
                    Security::Reality {
                        max_time_diff_ms, ..
                    } => {
                        let state = self.shared.inbound_states.get(&ib.tag);
                        let replay = state.reality_replay(*max_time_diff_ms, now_ms());
                        Layer::Reality(
                            Reality::build(ib, replay).map_err(|e| inbound_error(e.into()))?,
                        )
                    }
                    _ => Layer::Plain,
                },
            };
            bound.push(
                inbound::bind(ib, layer, &self.shared)
                    .await
                    .map_err(|e| inbound_error(e.into()))?,
            );
        }

        // 2. Tunnel halves (see `swap_tunnels`).
        let (kept, started) = self.swap_tunnels(&mut running, &new, &mut files).await?;

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
            let Some(c) = running.certificates.get(&tag) else {
                continue;
            };
            match loaded {
                Ok(loaded) => {
                    if c.set(loaded) {
                        tracing::info!(inbound = %tag, "serving the renewed certificate to new connections");
                    }
                }
                // Caught half-written by a renewal: the next reload picks it up; no
                // reason to refuse the change (it may disable a user).
                Err(problem) => {
                    tracing::warn!(inbound = %tag, "{problem}; serving the certificate it had");
                }
            }
        }
        let relays = tunnels::relays(&running.tunnels);
        self.shared.set_runtime(Runtime::from_config(&new, relays));
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
        self.acme.retain(&new);
        tracing::info!(version = new.version, "config applied");
        self.save(&new).await;
        running.config = new;
        Ok(())
    }

    /// Tunnel halves: kept ones (membership changes apply live) swap in a re-issued
    /// certificate; new ones start at once, unless a half that goes holds one of
    /// their ports; then halves that go or change stop and the rest start. On error
    /// every half is as it was. Returns the kept configs (their membership still to
    /// apply) and the halves started.
    async fn swap_tunnels<'a>(
        &self,
        running: &mut Running,
        new: &'a NodeConfig,
        files: &mut Files,
    ) -> Result<(Vec<&'a TunnelConfig>, Vec<tunnels::Running>), ApplyError> {
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
            let prepared = files.tunnels.remove(&t.name);
            if let Some(r) = running.tunnels.get(&t.name)
                && !going.contains(&t.name)
            {
                let refreshed = match prepared {
                    Some(Ok(p)) => tunnels::refresh_certificate(r, t, &p),
                    // The files it serves now, caught half-written by a renewal: keep
                    // serving what it has rather than refuse the whole change.
                    Some(Err(problem)) if same_files(&r.config, t) => {
                        tracing::warn!(tunnel = %t.name, "{problem}; serving the certificate it had");
                        Ok(())
                    }
                    Some(Err(problem)) => Err(problem),
                    None => Ok(()),
                };
                if let Err(problem) = refreshed {
                    drop_started(started).await;
                    return Err(tunnel_error(t)(problem));
                }
                kept.push(t);
                continue;
            }
            let prepared = match prepared {
                Some(Err(problem)) => {
                    drop_started(started).await;
                    return Err(tunnel_error(t)(problem));
                }
                Some(Ok(p)) => p,
                None => tunnels::Prepared::default(),
            };
            if going.contains(&t.name) || t.profiles.iter().any(|p| held.contains(&p.port)) {
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
                    self.restore(running, old_halves).await;
                    return Err(e);
                }
            }
        }
        Ok((kept, started))
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
                Err(e) => {
                    tracing::error!(tunnel = %c.name, "could not be started again: {e}");
                    continue;
                }
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
