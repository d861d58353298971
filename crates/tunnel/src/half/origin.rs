//! The origin half in reverse mode (it dials the relay), and what an origin does in
//! both modes: hand streams to its handler, report, reset, stop.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken as Cancel;

use super::{
    OriginLink, Profile, StreamHandler, Tasks, lock, mux_config, serve_origin_link, spread,
};
use crate::credentials::{Credential, certificate_name, tunnel_tag};
use crate::frame::Hello;
use crate::link::cert::CertSwap;
use crate::link::transport::Target;
use crate::link::{AddressStatus, Dialer, DialerConfig, Gate, Link, Pin, Refusals};
use crate::mux::MuxConfig;

/// What an origin half needs (reverse mode).
#[derive(Clone, Debug)]
pub struct OriginSpec {
    /// The tunnel's name.
    pub tunnel: String,
    /// This origin's name.
    pub origin: String,
    /// Its credential.
    pub credential: Credential,
    /// The relay certificate's pins: any one of them is accepted (several while a
    /// re-issued certificate rolls out).
    pub pins: Vec<Pin>,
    /// The relay's profiles (ports, transports, addresses).
    pub profiles: Vec<Profile>,
    /// Links wanted per profile, spread over its addresses, for profiles that name
    /// none of their own ([`Profile::links`]).
    pub links: usize,
    /// The largest receive window of a stream, bytes ([`super::DEFAULT_WINDOW`]).
    pub window: u32,
}

/// Reverse mode: the spec to rebuild the dialer from, and the dialer.
struct Dialing {
    spec: std::sync::Mutex<OriginSpec>,
    dialer: std::sync::Mutex<Option<Dialer>>,
}

/// A running origin half.
pub struct OriginHalf {
    pub(super) tunnel: String,
    pub(super) handler: StreamHandler,
    /// Reverse mode: the dialer to the relay. Direct mode: none (the origin listens).
    dialing: Option<Dialing>,
    /// Direct mode: the gates of the profiles' listeners.
    pub(super) gates: Vec<Gate>,
    /// Direct mode: the certificate presented to the relay.
    pub(super) cert: Option<Arc<CertSwap>>,
    /// Direct mode: who the listeners admit (this origin, by its credential).
    pub(super) admitted: Option<crate::link::Admitted>,
    pub(super) links: Arc<AtomicUsize>,
    /// The whole half.
    pub(super) stop: Cancel,
    /// Direct mode: the profiles' listeners (a child of `stop`; a handover stops
    /// them alone).
    pub(super) listening: Cancel,
    /// Fires when this process hands over: every link says `GoAway`.
    pub(super) handing: Cancel,
    /// The links of this generation (a child of `stop`; a reset replaces it).
    pub(super) generation: Arc<std::sync::Mutex<Cancel>>,
    pub(super) tasks: Tasks,
    /// Every link's multiplexer settings (the tunnel's window).
    pub(super) mux: MuxConfig,
}

impl std::fmt::Debug for OriginHalf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OriginHalf")
            .field("tunnel", &self.tunnel)
            .finish_non_exhaustive()
    }
}

/// Every address of every profile, each with its share of the profile's links.
fn targets(spec: &OriginSpec) -> (Vec<Target>, Vec<usize>) {
    let name = certificate_name(&spec.tunnel);
    let mut targets = Vec::new();
    let mut wanted = Vec::new();
    for p in &spec.profiles {
        wanted.extend(spread(p.links_or(spec.links), p.addresses.len()));
        targets.extend(p.addresses.iter().map(|a| Target {
            addr: a.clone(),
            name: name.clone(),
            pins: spec.pins.clone(),
            transport: p.transport.clone(),
        }));
    }
    (targets, wanted)
}

impl OriginHalf {
    pub(super) fn empty(tunnel: String, handler: StreamHandler, window: u32) -> Self {
        let stop = Cancel::new();
        Self {
            mux: mux_config(window),
            tunnel,
            handler,
            dialing: None,
            gates: Vec::new(),
            cert: None,
            admitted: None,
            links: Arc::default(),
            generation: Arc::new(std::sync::Mutex::new(stop.child_token())),
            listening: stop.child_token(),
            handing: Cancel::new(),
            stop,
            tasks: Tasks::default(),
        }
    }

    /// Starts dialing the relay; every stream it opens goes to `handler`.
    pub fn start(spec: OriginSpec, handler: StreamHandler) -> Self {
        let mut half = Self::empty(spec.tunnel.clone(), handler, spec.window);
        let dialer = half.dial(&spec);
        half.dialing = Some(Dialing {
            spec: std::sync::Mutex::new(spec),
            dialer: std::sync::Mutex::new(Some(dialer)),
        });
        half
    }

    /// Starts a dialer for `spec` whose links belong to the current generation.
    fn dial(&self, spec: &OriginSpec) -> Dialer {
        let (targets, wanted) = targets(spec);
        let hello = Hello {
            tag: tunnel_tag(&spec.tunnel),
            origin: spec.origin.clone(),
            credential: spec.credential.0,
        };
        let mut config = DialerConfig::new(targets, hello);
        config.wanted = wanted;
        let (dialer, links) = Dialer::start(config);
        let generation = lock(&self.generation).clone();
        let (handler, count) = (self.handler.clone(), self.links.clone());
        self.tasks.spawn(serve_links(
            links,
            handler,
            generation,
            count,
            (self.mux.clone(), self.handing.clone()),
        ));
        dialer
    }

    /// Per relay address: wanted and connected links, back-off, last error (reverse
    /// mode; empty in direct mode, where the relay dials).
    pub fn status(&self) -> Vec<AddressStatus> {
        self.dialing
            .as_ref()
            .and_then(|d| lock(&d.dialer).as_ref().map(Dialer::status))
            .unwrap_or_default()
    }

    /// Refused link attempts per profile (direct mode, where the origin listens).
    pub fn refusals(&self) -> Vec<Refusals> {
        self.gates.iter().map(Gate::refusals).collect()
    }

    /// Links up.
    pub fn links(&self) -> usize {
        self.links.load(Ordering::Relaxed)
    }

    /// Rebuilds the half from its spec: every link drops, and (reverse mode) a fresh
    /// dialer starts over at once, with no back-off and nothing left of the old one.
    pub fn reset(&self) {
        let fresh = self.stop.child_token();
        std::mem::replace(&mut *lock(&self.generation), fresh).cancel();
        if let Some(d) = &self.dialing {
            let spec = lock(&d.spec).clone();
            let old = lock(&d.dialer).replace(self.dial(&spec));
            if let Some(old) = old {
                old.stop();
            }
        }
    }

    /// Reverse mode: new links accept the relay's certificate by any of `pins` from
    /// now on; links already up stay up. Roll a re-issued certificate (new key
    /// included) out with both pins, switch the relay, then drop the old pin.
    pub fn set_pins(&self, pins: Vec<Pin>) {
        if let Some(d) = &self.dialing {
            lock(&d.spec).pins.clone_from(&pins);
            if let Some(dialer) = &*lock(&d.dialer) {
                dialer.set_pins(pins);
            }
        }
    }

    /// A rotated credential, live: reverse mode, new links say it (links up stay up);
    /// direct mode, the relay must present it, or `previous` while the rotation rolls
    /// out (`None` ends the overlap).
    pub fn set_credential(&self, credential: Credential, previous: Option<Credential>) {
        if let Some(d) = &self.dialing {
            let mut spec = lock(&d.spec);
            spec.credential = credential;
            if let Some(dialer) = &*lock(&d.dialer) {
                dialer.set_hello(Hello {
                    tag: tunnel_tag(&spec.tunnel),
                    origin: spec.origin.clone(),
                    credential: credential.0,
                });
            }
        }
        if let Some(admitted) = &self.admitted {
            for origin in admitted.origins() {
                if admitted.credential(&origin) != Some(credential) {
                    admitted.insert(&origin, credential);
                }
                admitted.set_previous(previous.map(|p| (origin.clone(), p)));
            }
        }
    }

    /// The tunnel's name.
    pub fn tunnel(&self) -> &str {
        &self.tunnel
    }

    /// The largest receive window of a stream on its links, bytes.
    pub fn window(&self) -> u32 {
        self.mux.max_window
    }

    /// Hands over to another process: no new links (the dialer stops; direct mode,
    /// the listeners close), and every link says `GoAway`, so the relay opens new
    /// streams on the other process's links; streams under way go on here.
    pub fn hand_over(&self) {
        if let Some(d) = &self.dialing
            && let Some(dialer) = lock(&d.dialer).take()
        {
            dialer.stop();
        }
        self.listening.cancel();
        self.handing.cancel();
    }

    /// Stops the half: links close, dialing stops, and (direct mode) the profiles'
    /// ports are free when this returns.
    pub async fn stop(&self) {
        self.stop.cancel();
        if let Some(d) = &self.dialing
            && let Some(dialer) = lock(&d.dialer).take()
        {
            dialer.stop();
        }
        self.tasks.join().await;
    }
}

impl Drop for OriginHalf {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Serves the links a dialer makes until its generation ends.
async fn serve_links(
    mut links: mpsc::UnboundedReceiver<Link>,
    handler: StreamHandler,
    generation: Cancel,
    count: Arc<AtomicUsize>,
    (mux, handing): (MuxConfig, Cancel),
) {
    loop {
        let link = tokio::select! {
            l = links.recv() => match l { Some(l) => l, None => return },
            () = generation.cancelled() => return,
        };
        serve_origin_link(
            OriginLink {
                stream: link.stream,
                release: Some(link.release),
                handing: handing.clone(),
                mux: mux.clone(),
            },
            handler.clone(),
            generation.clone(),
            count.clone(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::transport::Transport;

    #[test]
    fn each_profile_wants_its_own_links_or_the_halfs() {
        let profile = |port: u16, addresses: usize, links: Option<usize>| Profile {
            port,
            transport: Transport::Tls,
            addresses: (0..addresses)
                .map(|i| format!("10.0.0.{i}:{port}"))
                .collect(),
            links,
        };
        let spec = OriginSpec {
            tunnel: "eu".into(),
            origin: "fi".into(),
            credential: Credential([1; 32]),
            pins: Vec::new(),
            profiles: vec![
                profile(7443, 1, Some(6)),
                profile(8443, 1, Some(2)),
                profile(9443, 2, None),
                profile(9444, 1, Some(0)),
            ],
            links: 3,
            window: super::super::DEFAULT_WINDOW,
        };
        let (targets, wanted) = targets(&spec);
        assert_eq!(targets.len(), 5);
        // 6 and 2 of their own, the half's 3 over two addresses, and never none.
        assert_eq!(wanted, [6, 2, 2, 1, 1]);
    }
}
