//! The client in front of a server: the case's peer, sing-box or Xray, with a SOCKS5
//! inbound on 127.0.0.1 that the load goes through.

use std::net::SocketAddr;

use anyhow::{Context, Result};
use switchyard_testkit::{SingBox, Xray, free_port};

use crate::Fixture;
use crate::case::{Case, Peer};

/// A running client, killed when dropped.
pub(crate) enum Client {
    SingBox(SingBox),
    Xray { xray: Xray, socks: SocketAddr },
}

impl Client {
    /// Starts `case`'s client of the server on 127.0.0.1:`server_port`.
    pub(crate) async fn start(case: Case, server_port: u16, fx: &Fixture) -> Result<Self> {
        match case.peer {
            Peer::SingBox => {
                let outbound = case.sing_box_outbound(server_port, &fx.cert);
                Ok(Self::SingBox(SingBox::client(outbound).await?))
            }
            Peer::Xray => {
                let socks = free_port()?;
                let xray = Xray::start(case.xray_client(socks, server_port, fx)).await?;
                let socks = xray
                    .inbound_addr("socks")
                    .context("the Xray client has no SOCKS inbound")?;
                Ok(Self::Xray { xray, socks })
            }
        }
    }

    /// Its SOCKS5 proxy.
    pub(crate) fn proxy(&self) -> Result<SocketAddr> {
        match self {
            Self::SingBox(s) => s.proxy_addr(),
            Self::Xray { socks, .. } => Ok(*socks),
        }
    }

    /// The last lines of its log, for errors.
    pub(crate) fn log_tail(&self) -> String {
        match self {
            Self::SingBox(s) => s.log_tail(),
            Self::Xray { xray, .. } => xray.log_tail(),
        }
    }
}
