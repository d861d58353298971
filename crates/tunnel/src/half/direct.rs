//! Direct mode: the relay dials every origin (every host of it at every profile's
//! port, all at once: hot standby as in reverse mode), and each origin listens. Trust
//! is the same as in reverse mode: the listening origin presents the tunnel's
//! certificate, which the relay pins; the relay proves itself with that origin's
//! derived credential.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::Mutex;

use super::{
    HalfError, Listening, OriginHalf, OriginLink, Profile, RelayHalf, StreamHandler, lock,
    pool_link, serve_origin_link, spread,
};
use crate::credentials::{Credential, certificate_name, tunnel_tag};
use crate::frame::Hello;
use crate::link::cert::swappable_server_config;
use crate::link::transport::{Acceptor, Target};
use crate::link::{AddressStatus, Admitted, Dialer, DialerConfig, Pin};
use crate::pool::{Balancing, Pool};
use crate::user_limits::UserLimits;
use switchyard_transport::reality::SiteDialer;

/// An origin as the relay dials it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirectOrigin {
    /// The origin's name.
    pub name: String,
    /// Its credential, which the relay presents to it.
    pub credential: Credential,
    /// Its host names or addresses: every one is dialed at every profile's port, and
    /// each profile's links are spread over them.
    pub hosts: Vec<String>,
}

/// What a relay half needs in direct mode.
#[derive(Clone, Debug)]
pub struct RelayDialSpec {
    /// The tunnel's name.
    pub tunnel: String,
    /// The profiles (ports and transports; the addresses are the origins' hosts).
    pub profiles: Vec<Profile>,
    /// Balancing between profiles.
    pub balancing: Balancing,
    /// Links per origin per profile, for profiles that name none of their own
    /// ([`Profile::links`]).
    pub links: usize,
    /// The pins of the tunnel certificate the origins present (any one will do).
    pub pins: Vec<Pin>,
    /// The origins.
    pub origins: Vec<DirectOrigin>,
    /// How many streams one user may hold.
    pub limits: UserLimits,
    /// The largest receive window of a stream, bytes ([`super::DEFAULT_WINDOW`]).
    pub window: u32,
}

/// The relay's dialers in direct mode.
#[derive(Debug)]
pub(super) struct DirectState {
    profiles: Vec<Profile>,
    links: usize,
    pins: Mutex<Vec<Pin>>,
    dialers: Mutex<HashMap<String, (DirectOrigin, Dialer)>>,
}

/// `host:port`, with an IPv6 literal in brackets.
fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

impl RelayHalf {
    /// Starts a relay half that dials its origins.
    pub fn start_direct(spec: RelayDialSpec) -> Self {
        let state = DirectState {
            profiles: spec.profiles,
            links: spec.links.max(1),
            pins: Mutex::new(spec.pins),
            dialers: Mutex::new(HashMap::new()),
        };
        let half = Self::empty(
            spec.tunnel,
            Pool::with_limits(spec.balancing, spec.limits),
            Some(state),
            spec.window,
        );
        half.set_direct_origins(spec.origins);
        half
    }

    /// Replaces the dialed origins live: an unchanged origin keeps its dialer and
    /// links; a removed one loses its links at once (a link of it still coming up is
    /// dropped as it arrives); one whose credential alone changed keeps its dialer,
    /// whose new links say the new credential; another changed one is dialed anew (its
    /// links already up stay up).
    pub fn set_direct_origins(&self, origins: Vec<DirectOrigin>) {
        let Some(d) = &self.direct else { return };
        self.admitted
            .replace(origins.iter().map(|o| (o.name.clone(), o.credential)));
        self.pool
            .set_configured(origins.iter().map(|o| o.name.clone()).collect());
        let mut dialers = lock(&d.dialers);
        let keep: Vec<&str> = origins.iter().map(|o| o.name.as_str()).collect();
        let removed: Vec<String> = dialers
            .keys()
            .filter(|n| !keep.contains(&n.as_str()))
            .cloned()
            .collect();
        for name in removed {
            dialers.remove(&name);
            self.pool.drop_origin(&name);
        }
        for o in origins {
            if let Some((old, dialer)) = dialers.get_mut(&o.name) {
                if *old == o {
                    continue;
                }
                if old.hosts == o.hosts {
                    // Only the credential changed (a rotation): new links say the new
                    // one; the dialer and its links stay.
                    dialer.set_hello(Hello {
                        tag: tunnel_tag(&self.tunnel),
                        origin: o.name.clone(),
                        credential: o.credential.0,
                    });
                    *old = o;
                    continue;
                }
            }
            let dialer = self.dial(d, &o);
            dialers.insert(o.name.clone(), (o, dialer));
        }
    }

    /// Direct mode: new links accept the origins' certificate by any of `pins` from
    /// now on; links already up stay up.
    pub fn set_direct_pins(&self, pins: Vec<Pin>) {
        let Some(d) = &self.direct else { return };
        for (_, dialer) in lock(&d.dialers).values() {
            dialer.set_pins(pins.clone());
        }
        *lock(&d.pins) = pins;
    }

    fn dial(&self, d: &DirectState, o: &DirectOrigin) -> Dialer {
        let name = certificate_name(&self.tunnel);
        let pins = lock(&d.pins).clone();
        let (mut targets, mut wanted, mut profile_of) = (Vec::new(), Vec::new(), Vec::new());
        for (i, p) in d.profiles.iter().enumerate() {
            wanted.extend(spread(p.links_or(d.links), o.hosts.len()));
            for h in &o.hosts {
                targets.push(Target {
                    addr: host_port(h, p.port),
                    name: name.clone(),
                    pins: pins.clone(),
                    transport: p.transport.clone(),
                });
                profile_of.push(i);
            }
        }
        let hello = Hello {
            tag: tunnel_tag(&self.tunnel),
            origin: o.name.clone(),
            credential: o.credential.0,
        };
        let mut config = DialerConfig::new(targets, hello);
        config.wanted = wanted;
        let (dialer, mut rx) = Dialer::start(config);
        let (pool, admitted, stop) = (self.pool.clone(), self.admitted.clone(), self.stop.clone());
        let (origin, mux) = (o.name.clone(), self.mux.clone());
        self.tasks.spawn(async move {
            loop {
                let link = tokio::select! {
                    l = rx.recv() => match l { Some(l) => l, None => return },
                    () = stop.cancelled() => return,
                };
                let profile = profile_of.get(link.target).copied().unwrap_or_default();
                pool_link(
                    &pool,
                    &admitted,
                    origin.clone(),
                    profile,
                    link.stream,
                    Some(link.release),
                    mux.clone(),
                );
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
        lock(&d.dialers)
            .iter()
            .map(|(n, (_, dialer))| (n.clone(), dialer.status()))
            .collect()
    }

    /// Direct mode: every origin gets a fresh dialer (no back-off, and the ends of
    /// the links just dropped count for nothing).
    pub(super) fn redial(&self) {
        let Some(d) = &self.direct else { return };
        let mut dialers = lock(&d.dialers);
        let origins: Vec<DirectOrigin> = dialers.values().map(|(o, _)| o.clone()).collect();
        for o in origins {
            let fresh = self.dial(d, &o);
            if let Some((_, old)) = dialers.insert(o.name.clone(), (o, fresh)) {
                old.stop();
            }
        }
    }

    /// Direct mode: stops every dialer.
    pub(super) fn stop_dialers(&self) {
        if let Some(d) = &self.direct {
            for (_, (_, dialer)) in lock(&d.dialers).drain() {
                dialer.stop();
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
    /// The largest receive window of a stream, bytes ([`super::DEFAULT_WINDOW`]).
    pub window: u32,
    /// How REALITY profiles reach their target site to splice probers to it
    /// ([`switchyard_transport::reality::site`]).
    pub site: SiteDialer,
}

impl OriginHalf {
    /// Starts an origin half that listens for the relay.
    pub async fn listen(spec: OriginListenSpec, handler: StreamHandler) -> Result<Self, HalfError> {
        let (tls, cert) = swappable_server_config(&spec.cert_pem, &spec.key_pem).map_err(|e| {
            HalfError::Certificate {
                tunnel: spec.tunnel.clone(),
                problem: e,
            }
        })?;
        let mut half = Self::empty(spec.tunnel.clone(), handler, spec.window);
        half.cert = Some(cert);
        let admitted = Admitted::new([(spec.origin.clone(), spec.credential)]);
        let (listening, mut links) = Listening::start(
            &spec.tunnel,
            spec.listen,
            &spec.profiles,
            &|t| Acceptor::new(tls.clone(), t.clone()).with_site(spec.site.clone()),
            &admitted,
            &half.listening,
            &half.tasks,
        )
        .await?;
        half.gates = listening.gates;
        half.admitted = Some(admitted);
        let (handler, count, mux) = (half.handler.clone(), half.links.clone(), half.mux.clone());
        let (generation, stop) = (half.generation.clone(), half.stop.clone());
        let handing = half.handing.clone();
        half.tasks.spawn(async move {
            loop {
                let (_, a) = tokio::select! {
                    a = links.recv() => match a { Some(a) => a, None => return },
                    () = stop.cancelled() => return,
                };
                let current = lock(&generation).clone();
                serve_origin_link(
                    OriginLink {
                        stream: a.stream,
                        release: None,
                        handing: handing.clone(),
                        mux: mux.clone(),
                    },
                    handler.clone(),
                    current,
                    count.clone(),
                );
            }
        });
        Ok(half)
    }

    /// Direct mode: presents a re-issued certificate (same path, new content, or a
    /// new path) to new links from now on; links already up stay up.
    pub fn set_certificate(&self, cert_pem: &str, key_pem: &str) -> Result<(), HalfError> {
        let Some(swap) = &self.cert else {
            return Ok(());
        };
        swap.set(cert_pem, key_pem)
            .map_err(|problem| HalfError::Certificate {
                tunnel: self.tunnel.clone(),
                problem,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::host_port;

    #[test]
    fn ipv6_hosts_get_brackets() {
        assert_eq!(host_port("fi.example.org", 7443), "fi.example.org:7443");
        assert_eq!(host_port("192.0.2.1", 1), "192.0.2.1:1");
        assert_eq!(host_port("2001:db8::1", 1), "[2001:db8::1]:1");
        assert_eq!(host_port("[2001:db8::1]", 1), "[2001:db8::1]:1");
    }
}
