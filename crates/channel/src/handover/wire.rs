//! The handover's messages and the `SOCK_SEQPACKET` socket they travel on: one JSON
//! message per packet (at most [`MAX_MESSAGE`] bytes), a listening socket riding
//! along with `SCM_RIGHTS` where one is handed over. Every call blocks, with a
//! deadline: the handover runs them on the blocking pool.

use std::collections::BTreeMap;
use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::net::SocketAddr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::time::Instant;

use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags,
    SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketAddrUnix, SocketFlags, SocketType,
};
use serde::{Deserialize, Serialize};

use super::{HandoverError, Kind};

/// The largest message: 128 KiB (the kernel refuses a packet over its socket
/// buffer, about 208 KiB by default). `usage` is cut into messages of at most
/// [`USAGE_BUDGET`].
pub const MAX_MESSAGE: usize = 128 * 1024;

/// What one `usage` message may carry, estimated as each user's name plus
/// [`USAGE_ENTRY`] bytes: half of [`MAX_MESSAGE`].
pub const USAGE_BUDGET: usize = MAX_MESSAGE / 2;

/// One user's entry in `usage` beyond its name, at most: quotes, a colon, a comma,
/// two 20-digit numbers in brackets.
pub const USAGE_ENTRY: usize = 48;

/// One message of the handover.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Message {
    /// New → old: the new process runs and wants the sockets.
    Hello {
        /// Its version.
        version: String,
        /// Its PID.
        pid: u32,
    },
    /// Old → new: one listening socket (its descriptor rides along).
    Socket {
        /// TCP or UDP.
        kind: Kind,
        /// The address it is bound to, as the config names it.
        addr: SocketAddr,
    },
    /// Old → new: every socket was sent.
    Sockets {
        /// How many.
        count: usize,
    },
    /// New → old: the node serves on the sockets (TCP).
    Ready,
    /// New → old: the node could not start on the sockets.
    Failed {
        /// Why.
        problem: String,
    },
    /// Old → new: the old process stopped accepting, its journal and channel are
    /// released.
    Released,
    /// Old → new: bytes the old process's users moved since its previous message
    /// (`[up, down]` by user name).
    Usage {
        /// By user.
        users: BTreeMap<String, [u64; 2]>,
    },
    /// Old → new: the old process drained; it exits.
    Drained {
        /// Connections it closed at the drain deadline.
        closed: usize,
    },
}

impl Message {
    /// A message from its packet: at most [`MAX_MESSAGE`] bytes of JSON, every field
    /// known; or why not.
    pub fn decode(packet: &[u8]) -> Result<Self, String> {
        if packet.len() > MAX_MESSAGE {
            return Err("a message longer than 128 KiB".into());
        }
        serde_json::from_slice(packet).map_err(|e| format!("unreadable message: {e}"))
    }

    /// Its packet.
    pub fn encode(&self) -> Result<Vec<u8>, String> {
        let bytes = serde_json::to_vec(self).map_err(|e| e.to_string())?;
        if bytes.len() > MAX_MESSAGE {
            return Err("message too large".into());
        }
        Ok(bytes)
    }
}

/// A connected handover socket.
#[derive(Debug)]
pub struct Conn {
    fd: OwnedFd,
    /// Who is at the other end: `old` or `new`.
    peer: &'static str,
    path: PathBuf,
}

fn io_error(path: &Path, source: impl Into<std::io::Error>) -> HandoverError {
    HandoverError::Socket {
        path: path.to_owned(),
        source: source.into(),
    }
}

fn seqpacket() -> std::io::Result<OwnedFd> {
    Ok(rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )?)
}

impl Conn {
    /// Connects to the old process's socket at `path`.
    pub fn connect(path: &Path) -> Result<Self, HandoverError> {
        let fd = seqpacket().map_err(|e| io_error(path, e))?;
        let addr = SocketAddrUnix::new(path).map_err(|e| io_error(path, e))?;
        rustix::net::connect(&fd, &addr).map_err(|e| io_error(path, e))?;
        Ok(Self {
            fd,
            peer: "old",
            path: path.to_owned(),
        })
    }

    /// Sets how long a receive waits (`None`: for ever). Sends wait as long.
    pub fn set_timeout(&self, timeout: Option<Duration>) -> Result<(), HandoverError> {
        use rustix::net::sockopt::{Timeout, set_socket_timeout};
        set_socket_timeout(&self.fd, Timeout::Recv, timeout).map_err(|e| self.io(e))?;
        set_socket_timeout(&self.fd, Timeout::Send, timeout).map_err(|e| self.io(e))
    }

    fn io(&self, e: impl Into<std::io::Error>) -> HandoverError {
        io_error(&self.path, e)
    }

    /// Sends `message`, with `fd` riding along.
    pub fn send(&self, message: &Message, fd: Option<BorrowedFd<'_>>) -> Result<(), HandoverError> {
        let bytes = message
            .encode()
            .map_err(|e| self.io(std::io::Error::other(e)))?;
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        let fds;
        if let Some(fd) = fd {
            fds = [fd];
            control.push(SendAncillaryMessage::ScmRights(&fds));
        }
        let sent = rustix::net::sendmsg(
            &self.fd,
            &[IoSlice::new(&bytes)],
            &mut control,
            SendFlags::NOSIGNAL,
        )
        .map_err(|e| self.io(e))?;
        if sent != bytes.len() {
            return Err(self.io(std::io::Error::other("message cut short")));
        }
        Ok(())
    }

    /// The next message and the socket riding with it; `None` when the other side
    /// closed.
    pub fn recv(&self) -> Result<Option<(Message, Option<OwnedFd>)>, HandoverError> {
        let mut buf = vec![0u8; MAX_MESSAGE];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let got = rustix::net::recvmsg(
            &self.fd,
            &mut [IoSliceMut::new(&mut buf)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        );
        let got = match got {
            Ok(got) => got,
            Err(rustix::io::Errno::AGAIN) => {
                return Err(HandoverError::Timeout {
                    peer: self.peer,
                    what: "answer",
                    secs: 0,
                });
            }
            Err(e) => return Err(self.io(e)),
        };
        let mut fds = Vec::new();
        for message in control.drain() {
            if let RecvAncillaryMessage::ScmRights(rights) = message {
                fds.extend(rights);
            }
        }
        let broken = |problem: &str| HandoverError::Protocol {
            peer: self.peer,
            problem: problem.to_owned(),
        };
        if got.bytes == 0 && fds.is_empty() {
            return Ok(None);
        }
        if got.flags.contains(ReturnFlags::TRUNC) || got.bytes > MAX_MESSAGE {
            return Err(broken("a message longer than 128 KiB"));
        }
        if got.flags.contains(ReturnFlags::CTRUNC) || fds.len() > 1 {
            return Err(broken("more than one descriptor in a message"));
        }
        let message = Message::decode(&buf[..got.bytes]).map_err(|e| broken(&e))?;
        Ok(Some((message, fds.pop())))
    }

    /// The next message, which must come without a descriptor; EOF is an error.
    pub fn expect(&self, what: &'static str) -> Result<Message, HandoverError> {
        match self.recv() {
            Ok(Some((m, None))) => Ok(m),
            Ok(Some((_, Some(_)))) => Err(HandoverError::Protocol {
                peer: self.peer,
                problem: format!("a descriptor where {what} was due"),
            }),
            Ok(None) => Err(HandoverError::Protocol {
                peer: self.peer,
                problem: format!("closed the socket where {what} was due"),
            }),
            Err(HandoverError::Timeout { peer, .. }) => Err(HandoverError::Timeout {
                peer,
                what,
                secs: super::PREPARE_TIMEOUT.as_secs(),
            }),
            Err(e) => Err(e),
        }
    }
}

impl AsFd for Conn {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// The old process's listening handover socket; its file goes when it is dropped.
#[derive(Debug)]
pub struct Listener {
    fd: OwnedFd,
    path: PathBuf,
}

impl Listener {
    /// Binds `path` (`0600`), replacing a stale socket file.
    pub fn bind(path: &Path) -> Result<Self, HandoverError> {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io_error(path, e)),
            _ => {}
        }
        let fd = seqpacket().map_err(|e| io_error(path, e))?;
        let addr = SocketAddrUnix::new(path).map_err(|e| io_error(path, e))?;
        rustix::net::bind(&fd, &addr).map_err(|e| io_error(path, e))?;
        let listener = Self {
            fd,
            path: path.to_owned(),
        };
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| io_error(path, e))?;
        rustix::net::listen(&listener.fd, 1).map_err(|e| io_error(path, e))?;
        Ok(listener)
    }

    /// Waits for the process `child` to connect, until `deadline`; a connection
    /// from any other process is refused, a child that exits ends the wait.
    pub fn accept(
        &self,
        child: &mut std::process::Child,
        deadline: Instant,
    ) -> Result<Conn, HandoverError> {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let slice = Timespec {
            tv_sec: 0,
            tv_nsec: 200_000_000,
        };
        loop {
            if let Some(status) = child.try_wait().map_err(|e| io_error(&self.path, e))? {
                return Err(HandoverError::Exited { status });
            }
            if Instant::now() >= deadline {
                return Err(HandoverError::Timeout {
                    peer: "new",
                    what: "connect",
                    secs: super::PREPARE_TIMEOUT.as_secs(),
                });
            }
            let mut fds = [PollFd::new(&self.fd, PollFlags::IN)];
            match poll(&mut fds, Some(&slice)) {
                Ok(0) | Err(rustix::io::Errno::INTR) => continue,
                Ok(_) => {}
                Err(e) => return Err(io_error(&self.path, e)),
            }
            let fd = rustix::net::accept_with(&self.fd, SocketFlags::CLOEXEC)
                .map_err(|e| io_error(&self.path, e))?;
            let cred =
                rustix::net::sockopt::socket_peercred(&fd).map_err(|e| io_error(&self.path, e))?;
            let pid = cred.pid.as_raw_nonzero().get();
            if u32::try_from(pid).ok() != Some(child.id()) {
                tracing::warn!(
                    pid,
                    expected = child.id(),
                    "a process other than the new one connected to the handover socket: refused"
                );
                continue;
            }
            return Ok(Conn {
                fd,
                peer: "new",
                path: self.path.clone(),
            });
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (Conn, Conn) {
        let (a, b) = rustix::net::socketpair(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC,
            None,
        )
        .unwrap();
        let conn = |fd, peer| Conn {
            fd,
            peer,
            path: PathBuf::from("pair"),
        };
        (conn(a, "old"), conn(b, "new"))
    }

    #[test]
    fn messages_and_a_socket_cross_whole() {
        let (old, new) = pair();
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = udp.local_addr().unwrap();
        let m = Message::Socket {
            kind: Kind::Udp,
            addr,
        };
        new.send(&m, Some(udp.as_fd())).unwrap();
        let mut users = BTreeMap::new();
        users.insert("u1".to_owned(), [3, u64::MAX]);
        new.send(
            &Message::Usage {
                users: users.clone(),
            },
            None,
        )
        .unwrap();
        let (got, fd) = old.recv().unwrap().unwrap();
        assert_eq!(got, m);
        let received = std::net::UdpSocket::from(fd.unwrap());
        assert_eq!(received.local_addr().unwrap(), addr, "the same socket");
        assert_eq!(old.expect("usage").unwrap(), Message::Usage { users });
        drop(new);
        assert!(old.recv().unwrap().is_none(), "EOF");
    }

    #[test]
    fn garbage_and_oversized_messages_are_refused_by_name() {
        let (old, new) = pair();
        rustix::net::send(
            &new.fd,
            b"{\"type\":\"usage\",\"users\":{\"u\":[1]}}",
            SendFlags::empty(),
        )
        .unwrap();
        let e = old.recv().unwrap_err().to_string();
        assert!(e.contains("unreadable message"), "{e}");
        let big = vec![b'x'; MAX_MESSAGE + 1];
        rustix::net::send(&new.fd, &big, SendFlags::empty()).unwrap();
        let e = old.recv().unwrap_err().to_string();
        assert!(e.contains("longer than 128 KiB"), "{e}");
        new.send(&Message::Ready, Some(new.fd.as_fd())).unwrap();
        let e = old.expect("ready").unwrap_err().to_string();
        assert!(e.contains("a descriptor where ready was due"), "{e}");
    }

    #[test]
    fn a_receive_waits_only_until_its_deadline() {
        let (old, _new) = pair();
        old.set_timeout(Some(Duration::from_millis(50))).unwrap();
        let e = old.expect("hello").unwrap_err();
        assert!(
            matches!(e, HandoverError::Timeout { what: "hello", .. }),
            "{e}"
        );
    }
}
