//! How a REALITY listening side reaches its target site: everyone who is not one of
//! its clients is spliced to `dest`, so the dial is a prober's way in and is guarded.
//!
//! The half is given a [`SiteDialer`]. The node passes its own (the dialer of its
//! REALITY inbounds: a name that resolves to a loopback, private or own address, or
//! to its control API's port, is refused unless the node allows private
//! destinations). [`SiteDialer::checked`] is this crate's own guard, for halves run
//! without a node (tests, benches): it resolves the name and refuses every
//! non-global address ([`switchyard_proto::dest::is_private`]) unless private
//! destinations are allowed. A name that resolves to any refused address is refused
//! whole, and nothing is dialed.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::net::TcpStream;

/// Resolving the target's name takes at most this long. 5 s: the system resolver
/// retries within that; a name not resolved by then is treated as not resolving.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the target site was not dialed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SiteError {
    /// `dest`, or an address it resolves to, is one this side does not dial
    /// (loopback, private, this machine's own, its control API).
    #[error("REALITY dest {dest}: refused: {reason}")]
    Refused {
        /// The target, `host:port`.
        dest: String,
        /// Why.
        reason: String,
    },
    /// The name did not resolve, or no address answered.
    #[error("REALITY dest {dest}: {source}")]
    Unreachable {
        /// The target, `host:port`.
        dest: String,
        /// The cause.
        source: io::Error,
    },
}

/// Dials a REALITY profile's target site for the listening side.
pub trait SiteDial: Send + Sync + 'static {
    /// A connection to `dest` (`host:port`), or why not. The caller bounds the time.
    fn dial<'a>(&'a self, dest: &'a str) -> BoxFuture<'a, Result<TcpStream, SiteError>>;
}

/// A shared [`SiteDial`]: what a listening half splices probers through.
#[derive(Clone)]
pub struct SiteDialer(Arc<dyn SiteDial>);

impl std::fmt::Debug for SiteDialer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SiteDialer")
    }
}

impl SiteDialer {
    /// A dialer of the caller's (the node passes its guarded one).
    pub fn new(dial: impl SiteDial) -> Self {
        Self(Arc::new(dial))
    }

    /// This crate's guard: resolves `dest` and refuses every non-global address
    /// unless `allow_private`.
    pub fn checked(allow_private: bool) -> Self {
        Self::new(Checked { allow_private })
    }

    /// A connection to `dest`, or why not.
    pub async fn dial(&self, dest: &str) -> Result<TcpStream, SiteError> {
        self.0.dial(dest).await
    }
}

struct Checked {
    allow_private: bool,
}

impl SiteDial for Checked {
    fn dial<'a>(&'a self, dest: &'a str) -> BoxFuture<'a, Result<TcpStream, SiteError>> {
        Box::pin(async move {
            let addrs = resolve_checked(dest, self.allow_private).await?;
            connect_any(dest, &addrs).await
        })
    }
}

/// The addresses of `dest`, every one checked: any non-global one refuses the whole
/// name unless `allow_private`.
pub async fn resolve_checked(
    dest: &str,
    allow_private: bool,
) -> Result<Vec<SocketAddr>, SiteError> {
    let refused = |reason: String| SiteError::Refused {
        dest: dest.chars().take(260).collect(),
        reason,
    };
    let unreachable = |source: io::Error| SiteError::Unreachable {
        dest: dest.chars().take(260).collect(),
        source,
    };
    let site =
        switchyard_proto::dest::check(dest, allow_private).map_err(|e| refused(e.to_string()))?;
    let addrs: Vec<SocketAddr> = match site {
        switchyard_proto::Address::Ip(a) => vec![a],
        switchyard_proto::Address::Domain(name, port) => {
            let found = tokio::time::timeout(
                RESOLVE_TIMEOUT,
                tokio::net::lookup_host((name.as_str(), port)),
            )
            .await
            .map_err(|_| unreachable(io::Error::new(io::ErrorKind::TimedOut, "resolving")))?
            .map_err(unreachable)?;
            found.collect()
        }
    };
    if addrs.is_empty() {
        return Err(unreachable(io::Error::new(
            io::ErrorKind::NotFound,
            "no addresses",
        )));
    }
    if !allow_private
        && let Some(a) = addrs
            .iter()
            .find(|a| switchyard_proto::dest::is_private(a.ip()))
    {
        return Err(refused(format!(
            "resolves to {}, a loopback, private or otherwise non-global address",
            a.ip()
        )));
    }
    Ok(addrs)
}

/// Connects to the first of `addrs` that answers.
pub async fn connect_any(dest: &str, addrs: &[SocketAddr]) -> Result<TcpStream, SiteError> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no addresses");
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(SiteError::Unreachable {
        dest: dest.chars().take(260).collect(),
        source: last,
    })
}
