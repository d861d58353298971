//! How this node's listening tunnel halves reach a REALITY profile's target site:
//! through the same guard as its REALITY inbounds ([`crate::outbound::Dialer::reality_site`]):
//! the name is resolved and refused whole if any address is loopback, private or this
//! node's own (unless `node.allow_private_destinations`), or its control API's port
//! (always). The dialer in force at the time of the probe is used, so a change of
//! `allow_private_destinations` applies at once.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;

use switchyard_transport::reality::site::connect_any;
use switchyard_transport::reality::{SiteDial, SiteDialer, SiteError};
use tokio::net::TcpStream;

use crate::outbound::DialError;
use crate::runtime::Shared;

/// The node's [`SiteDial`].
struct NodeSite(Arc<Shared>);

impl SiteDial for NodeSite {
    fn dial<'a>(
        &'a self,
        dest: &'a str,
    ) -> Pin<Box<dyn Future<Output = Result<TcpStream, SiteError>> + Send + 'a>> {
        Box::pin(async move {
            let rt = self.0.runtime();
            let name = || dest.chars().take(260).collect::<String>();
            let addrs = rt.dialer.reality_site(dest).await.map_err(|e| match e {
                // The form or a local name, refused by `switchyard_proto::dest::check`.
                DialError::Resolve(_, io) if io.kind() == io::ErrorKind::InvalidInput => {
                    SiteError::Refused {
                        dest: name(),
                        reason: io.to_string(),
                    }
                }
                DialError::Resolve(_, source) => SiteError::Unreachable {
                    dest: name(),
                    source,
                },
                other => SiteError::Refused {
                    dest: name(),
                    reason: other.to_string(),
                },
            })?;
            connect_any(dest, &addrs).await
        })
    }
}

/// The site dialer of the tunnel halves of the node whose state is `shared`.
pub(crate) fn site_dialer(shared: &Arc<Shared>) -> SiteDialer {
    SiteDialer::new(NodeSite(shared.clone()))
}
