//! A DNS resolver for tests that writes down every name it is asked: A questions for
//! the names it knows get their address, everything else an empty answer (`NOERROR`
//! without records for a known name's other types, `NXDOMAIN` for unknown names).
//! Over UDP and TCP (two-byte length prefix), on sockets the test binds, in a
//! namespace if it likes ([`crate::netns::NetNs::run_in`]). A test checks
//! [`DnsRecorder::asked`] to see which resolver a client's questions reached.

use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A running recorder; its tasks end when it drops.
pub struct DnsRecorder {
    asked: Arc<Mutex<Vec<String>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for DnsRecorder {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// The names known and their addresses; the names asked so far.
#[derive(Clone)]
struct Book {
    answers: Arc<Vec<(String, Ipv4Addr)>>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl DnsRecorder {
    /// Serves `udp` and `tcp` (bound already, in any namespace), answering `answers`.
    pub fn start(
        udp: std::net::UdpSocket,
        tcp: std::net::TcpListener,
        answers: &[(&str, Ipv4Addr)],
    ) -> Result<Self> {
        let book = Book {
            answers: Arc::new(
                answers
                    .iter()
                    .map(|(n, a)| (n.to_ascii_lowercase(), *a))
                    .collect(),
            ),
            asked: Arc::default(),
        };
        udp.set_nonblocking(true).context("the UDP socket")?;
        tcp.set_nonblocking(true).context("the TCP listener")?;
        let udp = tokio::net::UdpSocket::from_std(udp).context("the UDP socket")?;
        let tcp = tokio::net::TcpListener::from_std(tcp).context("the TCP listener")?;
        let b = book.clone();
        let udp_task = tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            while let Ok((n, from)) = udp.recv_from(&mut buf).await {
                if let Some(answer) = b.answer(&buf[..n]) {
                    let _ = udp.send_to(&answer, from).await;
                }
            }
        });
        let b = book.clone();
        let tcp_task = tokio::spawn(async move {
            while let Ok((mut s, _)) = tcp.accept().await {
                let b = b.clone();
                tokio::spawn(async move {
                    loop {
                        let Ok(len) = s.read_u16().await else { return };
                        let mut q = vec![0u8; usize::from(len)];
                        if s.read_exact(&mut q).await.is_err() {
                            return;
                        }
                        let Some(answer) = b.answer(&q) else { return };
                        let len = u16::try_from(answer.len()).unwrap_or(0).to_be_bytes();
                        if s.write_all(&[&len[..], &answer].concat()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Ok(Self {
            asked: book.asked,
            tasks: vec![udp_task, tcp_task],
        })
    }

    /// A recorder on port 53 of `addr` (UDP and TCP) in the namespace `ns`.
    pub fn start_in(
        ns: &crate::netns::NetNs,
        addr: Ipv4Addr,
        answers: &[(&str, Ipv4Addr)],
    ) -> Result<Self> {
        let at = std::net::SocketAddr::from((addr, 53));
        let udp = ns
            .run_in(move || std::net::UdpSocket::bind(at))?
            .with_context(|| format!("binding UDP {at}"))?;
        let tcp = ns.tcp_listener(at)?;
        Self::start(udp, tcp, answers)
    }

    /// The names asked so far (lower case, no trailing dot), in order.
    pub fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Book {
    /// The answer to the query `q`, recording its name; `None` for bytes that are no
    /// query with one question.
    fn answer(&self, q: &[u8]) -> Option<Vec<u8>> {
        let (name, end) = question(q)?;
        let qtype = u16::from_be_bytes([*q.get(end)?, *q.get(end + 1)?]);
        let question_end = end + 4;
        if q.len() < question_end {
            return None;
        }
        self.asked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(name.clone());
        let known = self
            .answers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, a)| *a);
        let mut out = Vec::with_capacity(question_end + 16);
        out.extend_from_slice(&q[..2]); // the id
        let rcode: u8 = if known.is_some() { 0 } else { 3 };
        out.extend_from_slice(&[0x81, 0x80 | rcode]); // a response, recursion available
        let answers: u16 = u16::from(known.is_some() && qtype == 1);
        out.extend_from_slice(&[0, 1]);
        out.extend_from_slice(&answers.to_be_bytes());
        out.extend_from_slice(&[0, 0, 0, 0]);
        out.extend_from_slice(&q[12..question_end]);
        if let (Some(addr), 1) = (known, answers) {
            out.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4]);
            out.extend_from_slice(&addr.octets());
        }
        Some(out)
    }
}

/// The first question's name and where its labels end.
fn question(q: &[u8]) -> Option<(String, usize)> {
    if q.len() < 12 || q[2] & 0x80 != 0 || u16::from_be_bytes([q[4], q[5]]) != 1 {
        return None;
    }
    let mut at = 12;
    let mut labels = Vec::new();
    loop {
        let len = usize::from(*q.get(at)?);
        at += 1;
        if len == 0 {
            break;
        }
        if len > 63 || labels.len() > 127 {
            return None;
        }
        let label = q.get(at..at + len)?;
        labels.push(String::from_utf8_lossy(label).to_ascii_lowercase());
        at += len;
    }
    Some((labels.join("."), at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
        let mut q = id.to_be_bytes().to_vec();
        q.extend_from_slice(&[1, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
        for label in name.split('.') {
            q.push(u8::try_from(label.len()).unwrap());
            q.extend_from_slice(label.as_bytes());
        }
        q.extend_from_slice(&[0]);
        q.extend_from_slice(&qtype.to_be_bytes());
        q.extend_from_slice(&[0, 1]);
        q
    }

    #[test]
    fn known_names_get_their_address_and_every_name_is_written_down() {
        let book = Book {
            answers: Arc::new(vec![("target.test".into(), Ipv4Addr::new(198, 51, 100, 1))]),
            asked: Arc::default(),
        };
        let q = query(7, "Target.Test", 1);
        let a = book.answer(&q).unwrap();
        assert_eq!(&a[..12], &[0, 7, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0]);
        assert_eq!(&a[a.len() - 4..], &[198, 51, 100, 1]);
        let aaaa = book.answer(&query(8, "target.test", 28)).unwrap();
        assert_eq!(&aaaa[2..8], &[0x81, 0x80, 0, 1, 0, 0]);
        let unknown = book.answer(&query(9, "other.test", 1)).unwrap();
        assert_eq!(unknown[3] & 0x0f, 3, "NXDOMAIN");
        assert_eq!(book.answer(&q[..10]), None);
        assert_eq!(
            *book.asked.lock().unwrap(),
            ["target.test", "target.test", "other.test"]
        );
    }
}
