//! Direct mode: the relay dials every origin (each at every profile's port), and each
//! origin listens. Trust is the same as in reverse mode: the listening origin presents
//! the tunnel's certificate, which the relay pins; the relay proves itself with that
//! origin's derived credential.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken as Cancel;

use super::{
    HalfError, OriginHalf, Profile, RelayHalf, StreamHandler, pool_link, serve_origin_link,
};
use crate::credentials::{Credential, certificate_name, tunnel_tag};
use crate::frame::Hello;
use crate::link::cert::server_config;
use crate::link::transport::{Acceptor, Target};
use crate::link::{AddressStatus, Admitted, Dialer, DialerConfig, Gate, Listener, Pin};
use crate::pool::{Balancing, Pool};

/// An origin as the relay dials it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirectOrigin {
    /// The origin's name.
    pub name: String,
    /// Its credential, which the relay presents to it.
    pub credential: Credential,
    /// Its host name or address; the profiles' ports are dialed there.
    pub host: String,
}

/// What a relay half needs in direct mode.
#[derive(Clone, Debug)]
pub struct RelayDialSpec {
    /// The tunnel's name.
    pub tunnel: String,
    /// The profiles (ports and transports; addresses are the origins' hosts).
    pub profiles: Vec<Profile>,
    /// Balancing between profiles.
    pub balancing: Balancing,
    /// Links per origin per profile.
    pub links: usize,
    /// The pin of the tunnel certificate the origins present.
    pub pin: Pin,
    /// The origins.
    pub origins: Vec<DirectOrigin>,
}

/// The relay's dialers in direct mode.
#[derive(Debug)]
pub(super) struct DirectState {
    profiles: Vec<Profile>,
    links: usize,
    pin: Pin,
    dialers: Mutex<HashMap<String, (DirectOrigin, Dialer)>>,
}

impl RelayHalf {
    /// Starts a relay half that dials its origins.
    pub fn start_direct(spec: RelayDialSpec) -> Self {
        let half = Self {
            tunnel: spec.tunnel,
            pool: Arc::new(Pool::new(spec.balancing)),
            admitted: Admitted::default(),
            gates: Vec::new(),
            stop: Cancel::new(),
            listeners: Mutex::new(Vec::new()),
            direct: Some(DirectState {
                profiles: spec.profiles,
                links: spec.links.max(1),
                pin: spec.pin,
                dialers: Mutex::new(HashMap::new()),
            }),
            cert: None,
        };
        half.set_direct_origins(spec.origins);
        half
    }

    /// Replaces the dialed origins live: an unchanged origin keeps its dialer and
    /// links; a removed one loses its links at once; a changed one is dialed anew
    /// (its links already up stay up).
    pub fn set_direct_origins(&self, origins: Vec<DirectOrigin>) {
        let Some(d) = &self.direct else { return };
        let mut dialers = d.dialers.lock().unwrap_or_else(|p| p.into_inner());
        let keep: Vec<String> = origins.iter().map(|o| o.name.clone()).collect();
        let removed: Vec<String> = dialers
            .keys()
            .filter(|n| !keep.contains(n))
            .cloned()
            .collect();
        for name in removed {
            dialers.remove(&name);
            self.pool.drop_origin(&name);
        }
        for o in origins {
            if dialers.get(&o.name).is_some_and(|(old, _)| *old == o) {
                continue;
            }
            let dialer = self.dial(d, &o);
            dialers.insert(o.name.clone(), (o, dialer));
        }
    }

    fn dial(&self, d: &DirectState, o: &DirectOrigin) -> Dialer {
        let name = certificate_name(&self.tunnel);
        let targets = d
            .profiles
            .iter()
            .map(|p| Target {
                addr: format!("{}:{}", o.host, p.port),
                name: name.clone(),
                pin: d.pin,
                transport: p.transport.clone(),
            })
            .collect();
        let hello = Hello {
            tag: tunnel_tag(&self.tunnel),
            origin: o.name.clone(),
            credential: o.credential.0,
        };
        let mut config = DialerConfig::new(targets, hello);
        config.wanted = vec![d.links; config.targets.len()];
        let (dialer, mut rx) = Dialer::start(config);
        let (pool, stop, origin) = (self.pool.clone(), self.stop.clone(), o.name.clone());
        tokio::spawn(async move {
            loop {
                let link = tokio::select! {
                    l = rx.recv() => match l { Some(l) => l, None => return },
                    () = stop.cancelled() => return,
                };
                // One address per profile: the target index is the profile index.
                pool_link(&pool, origin.clone(), link.target, link.stream);
            }
        });
        dialer
    }

    /// Direct mode: per origin, its addresses' wanted and connected links, back-off and
    /// last error.
    pub fn dial_status(&self) -> BTreeMap<String, Vec<AddressStatus>> {
        let Some(d) = &self.direct else {
            return BTreeMap::new();
        };
        let dialers = d.dialers.lock().unwrap_or_else(|p| p.into_inner());
        dialers
            .iter()
            .map(|(n, (_, dialer))| (n.clone(), dialer.status()))
            .collect()
    }

    /// Direct mode: waiting addresses try again at once.
    pub(super) fn reset_dialers(&self) {
        if let Some(d) = &self.direct {
            for (_, dialer) in d.dialers.lock().unwrap_or_else(|p| p.into_inner()).values() {
                dialer.reset();
            }
        }
    }
}

/// What an origin half needs in direct mode.
#[derive(Clone, Debug)]
pub struct OriginListenSpec {
    /// The tunnel's name.
    pub tunnel: String,
    /// This origin's name.
    pub origin: String,
    /// Its credential, which the relay must present.
    pub credential: Credential,
    /// The tunnel certificate and key (PEM).
    pub cert_pem: String,
    /// The key.
    pub key_pem: String,
    /// Address to listen on.
    pub listen: IpAddr,
    /// The profiles' ports and transports.
    pub profiles: Vec<Profile>,
}

impl OriginHalf {
    /// Starts an origin half that listens for the relay.
    pub async fn listen(spec: OriginListenSpec, handler: StreamHandler) -> Result<Self, HalfError> {
        let tls =
            server_config(&spec.cert_pem, &spec.key_pem).map_err(|e| HalfError::Certificate {
                tunnel: spec.tunnel.clone(),
                problem: e.to_string(),
            })?;
        let admitted = Admitted::new([(spec.origin.clone(), spec.credential)]);
        let stop = Cancel::new();
        let links = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut gates = Vec::new();
        for (i, p) in spec.profiles.iter().enumerate() {
            let l = TcpListener::bind(SocketAddr::new(spec.listen, p.port))
                .await
                .map_err(|source| HalfError::Bind {
                    tunnel: spec.tunnel.clone(),
                    profile: i,
                    port: p.port,
                    source,
                })?;
            let gate = Gate::new(&tunnel_tag(&spec.tunnel), admitted.clone());
            gates.push(gate.clone());
            let listener = Listener::new(Acceptor::new(tls.clone(), p.transport.clone()), gate);
            let (tx, mut rx) = mpsc::channel(64);
            let stop_l = stop.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = listener.serve(l, tx) => {}
                    () = stop_l.cancelled() => {}
                }
            });
            let (handler, stop_r, count) = (handler.clone(), stop.clone(), links.clone());
            tokio::spawn(async move {
                loop {
                    let accepted = tokio::select! {
                        a = rx.recv() => match a { Some(a) => a, None => return },
                        () = stop_r.cancelled() => return,
                    };
                    serve_origin_link(
                        accepted.stream,
                        handler.clone(),
                        stop_r.clone(),
                        count.clone(),
                    );
                }
            });
        }
        Ok(Self {
            tunnel: spec.tunnel,
            dialer: None,
            gates,
            links,
            stop,
        })
    }
}
