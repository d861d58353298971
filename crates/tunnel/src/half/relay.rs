//! The relay half in reverse mode (it listens; origins dial it), and what the relay
//! does in both modes: open users' streams, report, reset, stop.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken as Cancel;

use super::{HalfError, Listening, Profile, Tasks, direct, mux_config, pool_link};
use crate::credentials::Credential;
use crate::frame::Open;
use crate::link::Admitted;
use crate::link::Refusals;
use crate::link::cert::{CertSwap, swappable_server_config};
use crate::link::transport::Acceptor;
use crate::mux::MuxConfig;
use crate::mux::MuxStream;
use crate::pool::{Balancing, OriginStatus, Pool, PoolError};
use crate::user_limits::UserLimits;
use switchyard_transport::reality::SiteDialer;

/// What a relay half needs (reverse mode).
#[derive(Clone, Debug)]
pub struct RelaySpec {
    /// The tunnel's name.
    pub tunnel: String,
    /// Address to listen on.
    pub listen: IpAddr,
    /// Up to [`switchyard_config::MAX_PROFILES`] profiles.
    pub profiles: Vec<Profile>,
    /// Balancing between profiles.
    pub balancing: Balancing,
    /// The tunnel certificate and key (PEM), issued for the tunnel's name.
    pub cert_pem: String,
    /// The key.
    pub key_pem: String,
    /// Admitted origins and their credentials.
    pub origins: Vec<(String, Credential)>,
    /// How many streams one user may hold.
    pub limits: UserLimits,
    /// The largest receive window of a stream, bytes ([`super::DEFAULT_WINDOW`]).
    pub window: u32,
    /// How REALITY profiles reach their target site to splice probers to it
    /// ([`switchyard_transport::reality::site`]).
    pub site: SiteDialer,
}

/// A running relay half.
#[derive(Debug)]
pub struct RelayHalf {
    pub(super) tunnel: String,
    pub(super) pool: Arc<Pool>,
    /// Reverse mode: the origins admitted. Direct mode: the origins dialed.
    pub(super) admitted: Admitted,
    /// Reverse mode: the profiles' listeners' gates.
    gates: Vec<crate::link::Gate>,
    pub(super) stop: Cancel,
    /// Reverse mode: the profiles' listeners (a child of `stop`; a handover stops
    /// them alone).
    listening: Cancel,
    pub(super) tasks: Tasks,
    /// Direct mode: the dialers of the origins.
    pub(super) direct: Option<direct::DirectState>,
    /// Reverse mode: the certificate served to origins.
    cert: Option<Arc<CertSwap>>,
    /// Every link's multiplexer settings (the tunnel's window).
    pub(super) mux: MuxConfig,
}

impl RelayHalf {
    pub(super) fn empty(
        tunnel: String,
        pool: Pool,
        direct: Option<direct::DirectState>,
        window: u32,
    ) -> Self {
        Self {
            mux: mux_config(window),
            tunnel,
            pool: Arc::new(pool),
            admitted: Admitted::default(),
            gates: Vec::new(),
            listening: Cancel::new(),
            stop: Cancel::new(),
            tasks: Tasks::default(),
            direct,
            cert: None,
        }
    }

    /// Binds every profile's port and starts admitting origins.
    pub async fn start(spec: RelaySpec) -> Result<Self, HalfError> {
        let (tls, cert) = swappable_server_config(&spec.cert_pem, &spec.key_pem).map_err(|e| {
            HalfError::Certificate {
                tunnel: spec.tunnel.clone(),
                problem: e,
            }
        })?;
        let mut half = Self::empty(
            spec.tunnel.clone(),
            Pool::with_limits(spec.balancing, spec.limits),
            None,
            spec.window,
        );
        half.cert = Some(cert);
        half.listening = half.stop.child_token();
        half.admitted = Admitted::new(spec.origins.clone());
        half.pool.set_configured(half.admitted.origins());
        let (listening, mut links) = Listening::start(
            &spec.tunnel,
            spec.listen,
            &spec.profiles,
            &|t| Acceptor::new(tls.clone(), t.clone()).with_site(spec.site.clone()),
            &half.admitted,
            &half.listening,
            &half.tasks,
        )
        .await?;
        half.gates = listening.gates;
        let (pool, admitted, stop) = (half.pool.clone(), half.admitted.clone(), half.stop.clone());
        let mux = half.mux.clone();
        half.tasks.spawn(async move {
            loop {
                let (profile, a) = tokio::select! {
                    a = links.recv() => match a { Some(a) => a, None => return },
                    () = stop.cancelled() => return,
                };
                pool_link(
                    &pool,
                    &admitted,
                    a.origin,
                    profile,
                    a.stream,
                    None,
                    mux.clone(),
                );
            }
        });
        // Removed origins lose their links at once.
        let (admitted, pool, stop) = (half.admitted.clone(), half.pool.clone(), half.stop.clone());
        half.tasks.spawn(async move {
            let mut changes = admitted.watch();
            loop {
                tokio::select! {
                    r = changes.changed() => if r.is_err() { return },
                    () = stop.cancelled() => return,
                }
                pool.set_configured(admitted.origins());
                for origin in pool.status().keys() {
                    if !admitted.contains(origin) {
                        pool.drop_origin(origin);
                    }
                }
            }
        });
        Ok(half)
    }

    /// Opens a stream for a user's connection.
    pub fn open(&self, open: Open, now_ms: i64) -> Result<MuxStream, PoolError> {
        self.pool.open(open, now_ms)
    }

    /// Replaces the admitted origins live: links of origins still admitted stay up.
    pub fn set_origins(&self, origins: Vec<(String, Credential)>) {
        self.admitted.replace(origins);
    }

    /// Reverse mode: also admits these previous credentials (a rotation under way)
    /// from now on; empty ends the overlap. Links up stay up.
    pub fn set_previous_credentials(&self, previous: Vec<(String, Credential)>) {
        self.admitted.set_previous(previous);
    }

    /// Links and streams per connected origin.
    pub fn origins(&self) -> BTreeMap<String, OriginStatus> {
        self.pool.status()
    }

    /// Refused link attempts, per profile.
    pub fn refusals(&self) -> Vec<Refusals> {
        self.gates.iter().map(crate::link::Gate::refusals).collect()
    }

    /// Links up.
    pub fn links(&self) -> usize {
        self.pool.links()
    }

    /// Payload bytes carried.
    pub fn bytes(&self) -> u64 {
        self.pool.bytes()
    }

    /// The streams and UDP streams `user` holds now.
    pub fn user_streams(&self, user: &str) -> (usize, usize) {
        self.pool.user_streams(user)
    }

    /// Drops every link and rebuilds what dials (direct mode: every origin's dialer,
    /// fresh, with no back-off); the origins (reverse mode) see their links end and
    /// redial.
    pub fn reset(&self) {
        self.pool.close_all();
        self.redial();
    }

    /// The tunnel's name.
    pub fn tunnel(&self) -> &str {
        &self.tunnel
    }

    /// The largest receive window of a stream on its links, bytes.
    pub fn window(&self) -> u32 {
        self.mux.max_window
    }

    /// Reverse mode: serves a re-issued certificate to new links from now on; links
    /// already up stay up. (Origins that pin the public key need no change when the
    /// certificate is re-issued with the same key; for a new key, give them both pins
    /// first.)
    pub fn set_certificate(&self, cert_pem: &str, key_pem: &str) -> Result<(), HalfError> {
        let fail = |problem| HalfError::Certificate {
            tunnel: self.tunnel.clone(),
            problem,
        };
        match &self.cert {
            Some(swap) => swap.set(cert_pem, key_pem).map_err(fail),
            None => Ok(()),
        }
    }

    /// Hands over to another process: no new links (reverse mode, the listeners
    /// close; direct mode, the dialers stop), and every link says `GoAway`, so the
    /// origins dial the other process and it opens the new streams; streams under way
    /// go on here.
    pub fn hand_over(&self) {
        self.listening.cancel();
        self.stop_dialers();
        self.pool.go_away_all();
    }

    /// Streams open over all links.
    pub fn open_streams(&self) -> usize {
        self.pool.status().values().map(|o| o.open_streams).sum()
    }

    /// Stops the half: links close and the profiles' ports are free when this returns.
    pub async fn stop(&self) {
        self.stop.cancel();
        self.stop_dialers();
        self.pool.close_all();
        self.tasks.join().await;
    }
}

impl Drop for RelayHalf {
    fn drop(&mut self) {
        self.stop.cancel();
        self.pool.close_all();
    }
}
