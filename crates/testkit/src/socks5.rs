//! A minimal SOCKS5 client (RFC 1928): CONNECT and UDP ASSOCIATE, no authentication.
//!
//! Enough to send test traffic through a proxy such as sing-box's `mixed` inbound;
//! not a general-purpose client (no BIND, no fragments).

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

use anyhow::{Context, Result, bail, ensure};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};

const VERSION: u8 = 5;
const NO_AUTH: u8 = 0;
const CMD_CONNECT: u8 = 1;
const CMD_UDP_ASSOCIATE: u8 = 3;
const ATYP_V4: u8 = 1;
const ATYP_DOMAIN: u8 = 3;
const ATYP_V6: u8 = 4;

/// Where a request goes: an address, or a name for the proxy to resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dest {
    /// An IP address and port.
    Addr(SocketAddr),
    /// A domain name and port.
    Domain(String, u16),
}

impl From<SocketAddr> for Dest {
    fn from(addr: SocketAddr) -> Self {
        Self::Addr(addr)
    }
}

impl std::fmt::Display for Dest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Addr(addr) => write!(f, "{addr}"),
            Self::Domain(name, port) => write!(f, "{name}:{port}"),
        }
    }
}

impl Dest {
    /// Appends ATYP, DST.ADDR and DST.PORT.
    fn encode(&self, out: &mut Vec<u8>) -> Result<()> {
        match self {
            Self::Addr(SocketAddr::V4(a)) => {
                out.push(ATYP_V4);
                out.extend_from_slice(&a.ip().octets());
            }
            Self::Addr(SocketAddr::V6(a)) => {
                out.push(ATYP_V6);
                out.extend_from_slice(&a.ip().octets());
            }
            Self::Domain(name, _) => {
                let len = u8::try_from(name.len())
                    .with_context(|| format!("domain {name:?} is longer than 255 bytes"))?;
                out.push(ATYP_DOMAIN);
                out.push(len);
                out.extend_from_slice(name.as_bytes());
            }
        }
        let port = match self {
            Self::Addr(a) => a.port(),
            Self::Domain(_, p) => *p,
        };
        out.extend_from_slice(&port.to_be_bytes());
        Ok(())
    }

    /// Reads ATYP, DST.ADDR and DST.PORT from the front of `buf`; returns the rest.
    fn decode(buf: &[u8]) -> Result<(Self, &[u8])> {
        let (&atyp, rest) = buf.split_first().context("no address type")?;
        let (dest, rest) = match atyp {
            ATYP_V4 => {
                ensure!(rest.len() >= 6, "truncated IPv4 address");
                let ip = Ipv4Addr::new(rest[0], rest[1], rest[2], rest[3]);
                let port = u16::from_be_bytes([rest[4], rest[5]]);
                (Self::Addr(SocketAddr::new(ip.into(), port)), &rest[6..])
            }
            ATYP_V6 => {
                ensure!(rest.len() >= 18, "truncated IPv6 address");
                let octets: [u8; 16] = rest[..16].try_into()?;
                let port = u16::from_be_bytes([rest[16], rest[17]]);
                let ip = Ipv6Addr::from(octets);
                (Self::Addr(SocketAddr::new(ip.into(), port)), &rest[18..])
            }
            ATYP_DOMAIN => {
                let (&len, rest) = rest.split_first().context("truncated domain")?;
                let len = usize::from(len);
                ensure!(rest.len() >= len + 2, "truncated domain");
                let name = String::from_utf8_lossy(&rest[..len]).into_owned();
                let port = u16::from_be_bytes([rest[len], rest[len + 1]]);
                (Self::Domain(name, port), &rest[len + 2..])
            }
            other => bail!("unknown address type {other}"),
        };
        Ok((dest, rest))
    }
}

/// Opens a TCP connection to `dest` through the SOCKS5 proxy at `proxy`.
pub async fn connect(proxy: SocketAddr, dest: impl Into<Dest>) -> Result<TcpStream> {
    let dest = dest.into();
    let mut stream = TcpStream::connect(proxy)
        .await
        .with_context(|| format!("connecting to the SOCKS5 proxy at {proxy}"))?;
    stream.set_nodelay(true)?;
    request(&mut stream, CMD_CONNECT, &dest)
        .await
        .with_context(|| format!("SOCKS5 CONNECT to {dest} through {proxy}"))?;
    Ok(stream)
}

/// Greets without authentication and sends one request; returns the bound address.
async fn request(stream: &mut TcpStream, cmd: u8, dest: &Dest) -> Result<SocketAddr> {
    stream.write_all(&[VERSION, 1, NO_AUTH]).await?;
    let mut choice = [0; 2];
    stream
        .read_exact(&mut choice)
        .await
        .context("reading the method choice")?;
    ensure!(
        choice == [VERSION, NO_AUTH],
        "the proxy refused no-authentication (answered {choice:?})"
    );
    let mut req = vec![VERSION, cmd, 0];
    dest.encode(&mut req)?;
    stream.write_all(&req).await?;
    let mut head = [0; 3];
    stream
        .read_exact(&mut head)
        .await
        .context("reading the reply")?;
    ensure!(head[0] == VERSION, "reply version {} is not 5", head[0]);
    ensure!(
        head[1] == 0,
        "the proxy answered {} ({})",
        head[1],
        reply_name(head[1])
    );
    match read_addr(stream).await? {
        Dest::Addr(addr) => Ok(addr),
        Dest::Domain(name, _) => bail!("the proxy bound a domain name {name}, not an address"),
    }
}

async fn read_addr<S: AsyncRead + Unpin>(stream: &mut S) -> Result<Dest> {
    let atyp = stream.read_u8().await?;
    let mut buf = vec![atyp];
    let len = match atyp {
        ATYP_V4 => 4 + 2,
        ATYP_V6 => 16 + 2,
        ATYP_DOMAIN => {
            let n = stream.read_u8().await?;
            buf.push(n);
            usize::from(n) + 2
        }
        other => bail!("unknown address type {other} in the reply"),
    };
    let start = buf.len();
    buf.resize(start + len, 0);
    stream.read_exact(&mut buf[start..]).await?;
    Ok(Dest::decode(&buf)?.0)
}

fn reply_name(code: u8) -> &'static str {
    match code {
        1 => "general failure",
        2 => "not allowed by ruleset",
        3 => "network unreachable",
        4 => "host unreachable",
        5 => "connection refused",
        6 => "TTL expired",
        7 => "command not supported",
        8 => "address type not supported",
        _ => "unassigned",
    }
}

/// A SOCKS5 UDP association: datagrams to any destination through the proxy's
/// relay, alive as long as this (and so its control connection) lives.
#[derive(Debug)]
pub struct UdpAssociation {
    // The association ends when this connection closes (RFC 1928, section 7).
    _control: TcpStream,
    socket: UdpSocket,
    relay: SocketAddr,
}

impl UdpAssociation {
    /// Asks the proxy at `proxy` for a UDP association from a fresh socket on
    /// 127.0.0.1.
    pub async fn open(proxy: SocketAddr) -> Result<Self> {
        let socket = UdpSocket::bind((crate::LOCALHOST, 0)).await?;
        let mut control = TcpStream::connect(proxy)
            .await
            .with_context(|| format!("connecting to the SOCKS5 proxy at {proxy}"))?;
        let mut relay = request(
            &mut control,
            CMD_UDP_ASSOCIATE,
            &socket.local_addr()?.into(),
        )
        .await
        .with_context(|| format!("SOCKS5 UDP ASSOCIATE through {proxy}"))?;
        if relay.ip().is_unspecified() {
            relay.set_ip(proxy.ip());
        }
        Ok(Self {
            _control: control,
            socket,
            relay,
        })
    }

    /// The proxy's relay address, where the datagrams go.
    pub fn relay(&self) -> SocketAddr {
        self.relay
    }

    /// Sends `data` to `dest` through the relay.
    pub async fn send_to(&self, data: &[u8], dest: &Dest) -> Result<()> {
        let mut packet = vec![0, 0, 0]; // RSV, RSV, FRAG = 0 (no fragmentation)
        dest.encode(&mut packet)?;
        packet.extend_from_slice(data);
        self.socket.send_to(&packet, self.relay).await?;
        Ok(())
    }

    /// Receives the next datagram from the relay: where it came from and its data.
    pub async fn recv_from(&self) -> Result<(Dest, Vec<u8>)> {
        let mut buf = vec![0; 65536];
        loop {
            let (n, from) = self.socket.recv_from(&mut buf).await?;
            if from != self.relay {
                continue; // not from the relay: not part of the association
            }
            let packet = &buf[..n];
            ensure!(
                packet.len() >= 4,
                "a {n}-byte datagram from the relay is too short"
            );
            ensure!(
                packet[2] == 0,
                "the relay sent a fragment ({}), unsupported",
                packet[2]
            );
            let (source, data) = Dest::decode(&packet[3..]).context("a datagram's header")?;
            return Ok((source, data.to_vec()));
        }
    }
}
