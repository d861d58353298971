//! Probes, as Auto's checks ask for them: **TCP** (the time to connect to the server),
//! **URL** (an HTTP `GET` of the test URL through the server: connection set-up plus
//! request, and the request alone, timed to the status line, which must be a 2xx or
//! 3xx) and **ICMP** (an echo request to the server's host over an unprivileged ICMP
//! socket, timed to its reply: [`icmp`]). Each has the check's timeout, and the
//! driver runs a check's probes concurrently.
//!
//! ICMP needs a system that allows unprivileged ICMP sockets (on Linux, the process's
//! group within `net.ipv4.ping_group_range`). Where it does not, every ICMP probe is
//! no answer and the client says why once, with [`icmp::IcmpError::Unavailable`]'s
//! message; `switchyard client run --probe icmp` checks with
//! [`icmp::check_available`] at start and refuses to run blind.

use std::time::Duration;
use tokio::time::Instant;

use switchyard_auto::{Method, ProbeReply};
use switchyard_proto::Address;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::outbound::Outbound;

pub mod icmp;

/// The test URL of URL probes: `http://host[:port]/path` (plain HTTP: the server's own
/// encryption carries it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeUrl {
    /// Where the request goes.
    pub destination: Address,
    /// `Host` header.
    pub host: String,
    /// Path and query.
    pub path: String,
}

/// What is wrong with a probe URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeUrlError {
    /// It does not start with `http://`.
    #[error("the probe URL must be http://")]
    Scheme,
    /// The port is not a number from 0 to 65535.
    #[error("bad port in the probe URL")]
    Port,
    /// The host is empty.
    #[error("no host in the probe URL")]
    NoHost,
    /// The host is not a name or an address.
    #[error(transparent)]
    Host(#[from] switchyard_proto::AddressError),
}

/// Why a URL probe got no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UrlProbeError {
    /// The server could not be used or reached.
    #[error(transparent)]
    Connect(#[from] crate::outbound::OutboundError),
    /// Sending the request or reading the answer failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The answer closed, or ran past 4 KiB, before its status line.
    #[error("no status line")]
    NoStatusLine,
    /// The first line is not an HTTP status line.
    #[error("not an HTTP status line: {0:?}")]
    NotHttp(Option<String>),
    /// Another status than 2xx or 3xx.
    #[error("HTTP {0}")]
    Status(u16),
}

impl ProbeUrl {
    /// Reads `http://host[:port]/path`.
    pub fn parse(url: &str) -> Result<Self, ProbeUrlError> {
        let rest = url.strip_prefix("http://").ok_or(ProbeUrlError::Scheme)?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => {
                (h, p.parse::<u16>().map_err(|_| ProbeUrlError::Port)?)
            }
            _ => (authority, 80),
        };
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if bare.is_empty() {
            return Err(ProbeUrlError::NoHost);
        }
        let destination = match bare.parse::<std::net::IpAddr>() {
            Ok(ip) => Address::Ip(std::net::SocketAddr::new(ip, port)),
            Err(_) => Address::domain(bare, port)?,
        };
        Ok(Self {
            destination,
            host: authority.to_owned(),
            path: path.to_owned(),
        })
    }
}

/// Probes `server` with `method` within `timeout`.
pub async fn probe(
    server: &Outbound,
    method: Method,
    url: &ProbeUrl,
    timeout: Duration,
) -> ProbeReply {
    let started = Instant::now();
    let ms = |d: Duration| u32::try_from(d.as_millis()).unwrap_or(u32::MAX).max(1);
    match method {
        Method::Tcp => {
            let e = server.entry();
            match tokio::time::timeout(timeout, TcpStream::connect((e.server.as_str(), e.port)))
                .await
            {
                Ok(Ok(_)) => ProbeReply::after(ms(started.elapsed())),
                _ => ProbeReply::NoAnswer,
            }
        }
        Method::Url => match tokio::time::timeout(timeout, url_probe(server, url)).await {
            Ok(Ok((set_up, status))) => ProbeReply::Answered {
                total_ms: ms(started.elapsed()),
                request_ms: Some(ms(started.elapsed().saturating_sub(set_up))),
                status: Some(status),
            },
            Ok(Err(e)) => {
                tracing::debug!(server = %server.entry().name, "URL probe: {e}");
                ProbeReply::NoAnswer
            }
            Err(_) => ProbeReply::NoAnswer,
        },
        Method::Icmp => match icmp::ping(&server.entry().server, timeout).await {
            Ok(round_trip) => ProbeReply::after(ms(round_trip)),
            Err(
                e @ (icmp::IcmpError::Unavailable { .. } | icmp::IcmpError::Unsupported { .. }),
            ) => {
                static ONCE: std::sync::Once = std::sync::Once::new();
                ONCE.call_once(|| tracing::warn!("{e}: ICMP probes count as no answer"));
                ProbeReply::NoAnswer
            }
            Err(e) => {
                tracing::debug!(server = %server.entry().name, "{e}");
                ProbeReply::NoAnswer
            }
        },
    }
}

/// A GET through `server`; the time the connection took and the status.
async fn url_probe(server: &Outbound, url: &ProbeUrl) -> Result<(Duration, u16), UrlProbeError> {
    let started = Instant::now();
    let mut s = server.connect(&url.destination).await?;
    let set_up = started.elapsed();
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: switchyard-client\r\nConnection: close\r\n\r\n",
        url.path, url.host
    );
    s.write_all(request.as_bytes()).await?;
    let mut head = Vec::with_capacity(256);
    let mut chunk = [0u8; 256];
    while !head.windows(2).any(|w| w == b"\r\n") {
        let n = s.read(&mut chunk).await?;
        if n == 0 || head.len() > 4096 {
            return Err(UrlProbeError::NoStatusLine);
        }
        head.extend_from_slice(&chunk[..n]);
    }
    let line = String::from_utf8_lossy(&head);
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| UrlProbeError::NotHttp(line.lines().next().map(str::to_owned)))?;
    if !(200..400).contains(&status) {
        return Err(UrlProbeError::Status(status));
    }
    Ok((set_up, status))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_urls_are_read() {
        let u = ProbeUrl::parse("http://cp.cloudflare.com/generate_204").unwrap();
        assert_eq!(
            u.destination,
            Address::domain("cp.cloudflare.com", 80).unwrap()
        );
        assert_eq!(
            (u.host.as_str(), u.path.as_str()),
            ("cp.cloudflare.com", "/generate_204")
        );
        let u = ProbeUrl::parse("http://127.0.0.1:8080").unwrap();
        assert_eq!(
            u.destination,
            Address::Ip("127.0.0.1:8080".parse().unwrap())
        );
        assert_eq!(u.path, "/");
        assert_eq!(ProbeUrl::parse("https://x/"), Err(ProbeUrlError::Scheme));
        assert!(ProbeUrl::parse("http:///").is_err());
    }
}
