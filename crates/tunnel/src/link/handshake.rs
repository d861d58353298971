//! The hello after TLS, and who the listening side admits.
//!
//! The dialing side sends [`Hello`] `{ tag, origin, credential }` and waits for one
//! byte: 0 accepted, 1 refused (then the listening side closes). The listening side
//! reads the hello within a deadline and at most [`MAX_HELLO`] bytes, and its [`Gate`]
//! judges it: the tag must be this tunnel's, the origin must be in the live
//! [`Admitted`] table, and the credential must match in constant time.
//!
//! Both modes use the same code. **Reverse**: origins dial the relay, sending their own
//! credential; the relay admits every origin of the tunnel. **Direct**: the relay dials
//! each origin, sending that origin's credential; the origin admits only itself.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;

use super::transport::LinkStream;
use crate::credentials::Credential;
use crate::frame::{FrameError, Hello, MAGIC};

/// Longest hello: magic, two names of at most 255 bytes with their lengths, credential.
pub const MAX_HELLO: usize = 4 + 1 + 255 + 1 + 255 + 32;
/// Deadline of each handshake step (transport and hello) by default. Long enough for
/// TLS over a lossy path across the world; short enough that a stalled peer frees its
/// slot (and the dialer its attempt) quickly.
pub const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(10);
/// The answer that admits a link.
pub const ACCEPTED: u8 = 0;
/// The answer that refuses one.
pub const REFUSED: u8 = 1;

/// Why the listening side refused a hello.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// The hello named another tunnel.
    WrongTag,
    /// The origin is not (or no longer) admitted.
    UnknownOrigin,
    /// The credential is not the origin's.
    BadCredential,
}

impl core::fmt::Display for Refusal {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Self::WrongTag => "wrong tunnel tag",
            Self::UnknownOrigin => "unknown origin",
            Self::BadCredential => "bad credential",
        })
    }
}

/// The refusals a listening side has counted, for status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Refusals {
    /// Hellos for another tunnel.
    pub wrong_tag: u64,
    /// Hellos from origins not admitted.
    pub unknown_origin: u64,
    /// Hellos with a credential that did not match.
    pub bad_credential: u64,
    /// The latest: when, the origin it named, why.
    pub last: Option<(SystemTime, String, Refusal)>,
}

impl Refusals {
    /// Counts one refusal.
    pub fn record(&mut self, at: SystemTime, origin: &str, why: Refusal) {
        let n = match why {
            Refusal::WrongTag => &mut self.wrong_tag,
            Refusal::UnknownOrigin => &mut self.unknown_origin,
            Refusal::BadCredential => &mut self.bad_credential,
        };
        *n += 1;
        self.last = Some((at, origin.to_owned(), why));
    }

    /// All refusals counted.
    pub fn total(&self) -> u64 {
        self.wrong_tag + self.unknown_origin + self.bad_credential
    }
}

/// The origins a listening side admits: origin name → credential. Cheap to clone (all
/// clones share one table) and changed live; every change bumps a generation that
/// [`Self::watch`] reports, so the pool can drop the links of a removed origin at once.
///
/// While credentials rotate, an origin may also have a **previous** credential
/// ([`Self::set_previous`]): a hello with either is admitted, so links keep coming up
/// whichever credential the origin runs; once the previous ones are cleared, only the
/// current one opens a link.
#[derive(Debug, Clone)]
pub struct Admitted {
    table: Arc<RwLock<HashMap<String, Credential>>>,
    previous: Arc<RwLock<HashMap<String, Credential>>>,
    generation: Arc<watch::Sender<u64>>,
}

impl Default for Admitted {
    fn default() -> Self {
        Self::new([])
    }
}

impl Admitted {
    /// A table admitting `origins`.
    pub fn new(origins: impl IntoIterator<Item = (String, Credential)>) -> Self {
        Self {
            table: Arc::new(RwLock::new(origins.into_iter().collect())),
            previous: Arc::default(),
            generation: Arc::new(watch::Sender::new(0)),
        }
    }

    /// Also accepts these previous credentials (origin name → credential) from now on,
    /// replacing any set before; empty: only the current ones. A previous credential
    /// admits nobody by itself: its origin must be in the table. Links up stay up.
    pub fn set_previous(&self, previous: impl IntoIterator<Item = (String, Credential)>) {
        *self.previous.write().unwrap_or_else(|e| e.into_inner()) = previous.into_iter().collect();
    }

    /// Origins with a previous credential accepted now.
    pub fn with_previous(&self) -> Vec<String> {
        let p = self.previous.read().unwrap_or_else(|e| e.into_inner());
        p.keys().cloned().collect()
    }

    /// Whether `presented` is `origin`'s current or previous credential (both compared
    /// in constant time); `None` when the origin is not admitted.
    pub fn accepts(&self, origin: &str, presented: &[u8]) -> Option<bool> {
        let current = self.credential(origin)?;
        let previous = self
            .previous
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(origin)
            .copied();
        let old = previous.is_some_and(|p| p.matches(presented));
        Some(current.matches(presented) | old)
    }

    fn change<R>(&self, f: impl FnOnce(&mut HashMap<String, Credential>) -> R) -> R {
        let r = f(&mut self.table.write().unwrap_or_else(|e| e.into_inner()));
        self.generation.send_modify(|g| *g += 1);
        r
    }

    /// Admits `origin` with `credential` (or changes its credential). Links already up
    /// stay up.
    pub fn insert(&self, origin: &str, credential: Credential) {
        self.change(|t| t.insert(origin.to_owned(), credential));
    }

    /// Stops admitting `origin`; returns whether it was admitted. The caller drops its
    /// links when [`Self::watch`] fires.
    pub fn remove(&self, origin: &str) -> bool {
        self.change(|t| t.remove(origin).is_some())
    }

    /// Replaces the whole table.
    pub fn replace(&self, origins: impl IntoIterator<Item = (String, Credential)>) {
        let new: HashMap<_, _> = origins.into_iter().collect();
        self.change(|t| *t = new);
    }

    /// The credential of `origin`, if admitted.
    pub fn credential(&self, origin: &str) -> Option<Credential> {
        self.table
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(origin)
            .copied()
    }

    /// Whether `origin` is admitted now.
    pub fn contains(&self, origin: &str) -> bool {
        self.credential(origin).is_some()
    }

    /// The admitted origins' names.
    pub fn origins(&self) -> Vec<String> {
        let t = self.table.read().unwrap_or_else(|e| e.into_inner());
        t.keys().cloned().collect()
    }

    /// How many times the table has changed.
    pub fn generation(&self) -> u64 {
        *self.generation.borrow()
    }

    /// Fires on every change: wait with `changed()`, then check [`Self::contains`] for
    /// each origin with links up.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }
}

/// The listening side's judge of hellos, with its refusal counters.
#[derive(Debug, Clone)]
pub struct Gate {
    tag: String,
    admitted: Admitted,
    refusals: Arc<Mutex<Refusals>>,
}

impl Gate {
    /// A gate for the tunnel tagged `tag` admitting `admitted`.
    pub fn new(tag: &str, admitted: Admitted) -> Self {
        Self {
            tag: tag.to_owned(),
            admitted,
            refusals: Arc::default(),
        }
    }

    /// The table this gate reads.
    pub fn admitted(&self) -> &Admitted {
        &self.admitted
    }

    /// Judges a hello without counting anything.
    pub fn judge(&self, hello: &Hello) -> Result<(), Refusal> {
        if hello.tag != self.tag {
            return Err(Refusal::WrongTag);
        }
        match self.admitted.accepts(&hello.origin, &hello.credential) {
            Some(true) => Ok(()),
            Some(false) => Err(Refusal::BadCredential),
            None => Err(Refusal::UnknownOrigin),
        }
    }

    /// Judges a hello and counts a refusal at `now`.
    pub fn admit(&self, hello: &Hello, now: SystemTime) -> Result<(), Refusal> {
        self.judge(hello).inspect_err(|&why| {
            self.refusals
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .record(now, &hello.origin, why);
        })
    }

    /// The refusals so far.
    pub fn refusals(&self) -> Refusals {
        self.refusals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// Why the hello exchange did not admit a link.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HandshakeError {
    /// The dialing side was refused. The listening side does not say why; its
    /// [`Refusals`] do.
    #[error(
        "the listening side refused the hello (wrong tag, unknown origin or bad credential; \
         its refusal counters say which): re-sync the tunnel's config on both halves"
    )]
    Refused,
    /// The listening side refused this hello.
    #[error("hello from origin {origin:?} refused: {why}")]
    Refusal {
        /// The origin the hello named.
        origin: String,
        /// Why.
        why: Refusal,
    },
    /// The bytes are not a hello.
    #[error("not a tunnel hello: {0}")]
    Malformed(#[from] FrameError),
    /// The answer byte is neither 0 nor 1.
    #[error("unexpected hello answer {0}; the peer is not a Switchyard tunnel")]
    UnexpectedAnswer(u8),
    /// The connection failed or closed during the exchange.
    #[error("link closed during the hello: {0}")]
    Io(String),
    /// The exchange did not finish within the deadline.
    #[error("no hello exchange within {0:?}")]
    Timeout(Duration),
}

fn io_err(e: std::io::Error) -> HandshakeError {
    HandshakeError::Io(e.to_string())
}

/// Reads exactly one hello, and not one byte past it.
pub async fn read_hello<S: AsyncRead + Unpin>(s: &mut S) -> Result<Hello, HandshakeError> {
    async fn more<S: AsyncRead + Unpin>(
        s: &mut S,
        buf: &mut Vec<u8>,
        n: usize,
    ) -> Result<(), HandshakeError> {
        let at = buf.len();
        buf.resize(at + n, 0);
        s.read_exact(&mut buf[at..]).await.map_err(io_err)?;
        Ok(())
    }
    // Each read is exactly what the bytes so far say comes next, so a refused or
    // hostile peer can make us read at most MAX_HELLO bytes.
    let mut buf = Vec::with_capacity(MAX_HELLO);
    more(s, &mut buf, MAGIC.len() + 1).await?;
    Hello::parse(&buf)?; // the magic
    let tag = usize::from(buf[MAGIC.len()]);
    more(s, &mut buf, tag + 1).await?;
    let origin = usize::from(buf[buf.len() - 1]);
    more(s, &mut buf, origin + 32).await?;
    match Hello::parse(&buf)? {
        Some((hello, used)) if used == buf.len() => Ok(hello),
        _ => Err(FrameError::Malformed("hello").into()),
    }
}

/// The dialing side: sends `hello` and waits for the answer within `deadline`.
pub async fn send_hello(
    mut stream: LinkStream,
    hello: &Hello,
    deadline: Duration,
) -> Result<LinkStream, HandshakeError> {
    let exchange = async {
        let mut out = Vec::with_capacity(MAX_HELLO);
        hello.encode(&mut out);
        stream.write_all(&out).await.map_err(io_err)?;
        stream.flush().await.map_err(io_err)?;
        match stream.read_u8().await.map_err(io_err)? {
            ACCEPTED => Ok(()),
            REFUSED => Err(HandshakeError::Refused),
            other => Err(HandshakeError::UnexpectedAnswer(other)),
        }
    };
    tokio::time::timeout(deadline, exchange)
        .await
        .map_err(|_| HandshakeError::Timeout(deadline))??;
    Ok(stream)
}

/// The listening side: reads a hello within `deadline`, lets `gate` judge it at `now`,
/// and answers. Returns the admitted origin's name; a refused link is closed.
pub async fn accept_hello<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    gate: &Gate,
    deadline: Duration,
    now: impl FnOnce() -> SystemTime,
) -> Result<String, HandshakeError> {
    let hello = tokio::time::timeout(deadline, read_hello(stream))
        .await
        .map_err(|_| HandshakeError::Timeout(deadline))??;
    let verdict = gate.admit(&hello, now());
    let answer = if verdict.is_ok() { ACCEPTED } else { REFUSED };
    let reply = async {
        stream.write_all(&[answer]).await?;
        stream.flush().await?;
        if verdict.is_err() {
            stream.shutdown().await?;
        }
        Ok::<_, std::io::Error>(())
    };
    // A refused peer may be gone already; the refusal is what counts.
    let sent = tokio::time::timeout(deadline, reply).await;
    match verdict {
        Err(why) => Err(HandshakeError::Refusal {
            origin: hello.origin,
            why,
        }),
        Ok(()) => {
            sent.map_err(|_| HandshakeError::Timeout(deadline))?
                .map_err(io_err)?;
            Ok(hello.origin)
        }
    }
}
