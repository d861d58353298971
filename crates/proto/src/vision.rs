//! XTLS Vision (the VLESS flow `xtls-rprx-vision`): padding while the proxied
//! connection's own TLS handshake runs, then the inner TLS records go straight over
//! the TCP connection, not wrapped in the outer TLS a second time.
//!
//! Followed: Xray's `proxy/proxy.go` (`XtlsPadding`, `XtlsUnpadding`,
//! `XtlsFilterTls`, `VisionWriter`); the wire format is theirs, the code is ours.
//!
//! After the VLESS request header (client) or response header (server), each
//! direction is a run of **blocks** inside the outer TLS:
//! ```text
//! [user UUID (16), first block of the direction only]
//! command (1) | content length (2, BE) | padding length (2, BE) | content | padding
//! ```
//! Command 0 ([`Command::Continue`]) says another block follows; 1
//! ([`Command::End`]) ends the blocks: what follows is the plain stream, still in the
//! outer TLS; 2 ([`Command::Direct`]) ends them too, and everything the sender writes
//! after this block goes **raw on the TCP connection**, outside the outer TLS (it is
//! the inner connection's TLS 1.3 records: encrypted already).
//!
//! - [`Unpadder`] reads the blocks of one direction, a pure state machine that holds
//!   at most 21 bytes of its own whatever it is fed.
//! - [`Filter`] watches the first packets of both directions for the inner TLS
//!   handshake (a ClientHello, a ServerHello that chose TLS 1.3): only then may a
//!   writer switch to direct copy.
//! - [`Padder`] turns one write of the inner stream into blocks and says when the
//!   writer switches, by Xray's rules, so that an Xray or mihomo peer reads it.

/// The flow's name in the VLESS request addons and in share links.
pub const FLOW: &str = "xtls-rprx-vision";

/// Xray's buffer size, from which its block limits derive.
const BUFFER: usize = 8192;
/// The largest content of one block this side writes (Xray's `buf.Size - 21`).
pub const MAX_CONTENT: usize = BUFFER - 21;
/// A block header: command, content length, padding length.
const HEADER: usize = 5;
/// How many packets (writes or reads, both directions together) the filter looks at
/// before it gives up finding a TLS handshake.
const PACKETS_TO_FILTER: u32 = 8;

const TLS13_SUPPORTED_VERSIONS: [u8; 6] = [0x00, 0x2b, 0x00, 0x02, 0x03, 0x04];
const CLIENT_HANDSHAKE_START: [u8; 2] = [0x16, 0x03];
const SERVER_HANDSHAKE_START: [u8; 3] = [0x16, 0x03, 0x03];
const APPLICATION_DATA_START: [u8; 3] = [0x17, 0x03, 0x03];
const CLIENT_HELLO: u8 = 1;
const SERVER_HELLO: u8 = 2;
/// TLS_AES_128_CCM_8_SHA256: TLS 1.3, but Xray does not copy it directly.
const CCM_8: u16 = 0x1305;

/// A block's command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// 0: another block follows.
    Continue,
    /// 1: the last block; the plain stream follows in the outer TLS.
    End,
    /// 2: the last block; the sender's next bytes are raw on the TCP connection.
    Direct,
}

impl Command {
    fn byte(self) -> u8 {
        match self {
            Self::Continue => 0,
            Self::End => 1,
            Self::Direct => 2,
        }
    }
}

/// Why a direction's blocks cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VisionError {
    /// A block's command is not 0, 1 or 2.
    #[error("Vision block with unknown command {0}")]
    UnknownCommand(u8),
}

/// Where a direction's reader stands after the bytes fed so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Inside the blocks: feed it more.
    Blocks,
    /// The blocks ended ([`Command::End`]): every later byte is plain, in the outer TLS.
    Ended,
    /// The blocks ended with [`Command::Direct`]: the peer's next bytes come raw on TCP.
    Direct,
    /// The direction did not start with the user's UUID: it carries no blocks at all
    /// (Xray reads such a stream as plain); every byte is plain.
    NotPadded,
}

#[derive(Clone, Copy, Debug)]
enum Reading {
    /// The first bytes, which must be the user's UUID: how many matched so far.
    Uuid(u8),
    /// A block header: how many of its bytes came so far.
    Header(u8, [u8; HEADER]),
    /// A block's content, then its padding.
    Content {
        command: u8,
        content: u16,
        padding: u16,
    },
    /// No more blocks.
    Done(Status),
}

/// Reads one direction's blocks and hands out their content.
#[derive(Clone, Debug)]
pub struct Unpadder {
    uuid: [u8; 16],
    reading: Reading,
}

impl Unpadder {
    /// A reader of blocks sent by the user with `uuid`.
    pub fn new(uuid: [u8; 16]) -> Self {
        Self {
            uuid,
            reading: Reading::Uuid(0),
        }
    }

    /// Where the reader stands.
    pub fn status(&self) -> Status {
        match self.reading {
            Reading::Done(s) => s,
            _ => Status::Blocks,
        }
    }

    /// Reads `data`, the next bytes of the direction, appending the content (and,
    /// once the blocks have ended, the plain bytes after them) to `out`.
    pub fn push(&mut self, mut data: &[u8], out: &mut Vec<u8>) -> Result<Status, VisionError> {
        while !data.is_empty() {
            match &mut self.reading {
                Reading::Done(_) => {
                    out.extend_from_slice(data);
                    break;
                }
                Reading::Uuid(have) => {
                    let at = usize::from(*have);
                    let n = (16 - at).min(data.len());
                    if data[..n] != self.uuid[at..at + n] {
                        // Not the UUID: the stream was never padded. What matched is
                        // part of it.
                        out.extend_from_slice(&self.uuid[..at]);
                        out.extend_from_slice(data);
                        self.reading = Reading::Done(Status::NotPadded);
                        break;
                    }
                    data = &data[n..];
                    *have += n as u8;
                    if *have == 16 {
                        self.reading = Reading::Header(0, [0; HEADER]);
                    }
                }
                Reading::Header(have, header) => {
                    let at = usize::from(*have);
                    let n = (HEADER - at).min(data.len());
                    header[at..at + n].copy_from_slice(&data[..n]);
                    data = &data[n..];
                    *have += n as u8;
                    if usize::from(*have) == HEADER {
                        let command = header[0];
                        if command > 2 {
                            return Err(VisionError::UnknownCommand(command));
                        }
                        self.reading = Reading::Content {
                            command,
                            content: u16::from_be_bytes([header[1], header[2]]),
                            padding: u16::from_be_bytes([header[3], header[4]]),
                        };
                        self.finish_block();
                    }
                }
                Reading::Content {
                    content, padding, ..
                } => {
                    if *content > 0 {
                        let n = usize::from(*content).min(data.len());
                        out.extend_from_slice(&data[..n]);
                        data = &data[n..];
                        *content -= n as u16;
                    } else {
                        let n = usize::from(*padding).min(data.len());
                        data = &data[n..];
                        *padding -= n as u16;
                    }
                    self.finish_block();
                }
            }
        }
        Ok(self.status())
    }

    /// Moves past a block whose content and padding have all been read.
    fn finish_block(&mut self) {
        if let Reading::Content {
            command,
            content: 0,
            padding: 0,
        } = self.reading
        {
            self.reading = match command {
                0 => Reading::Header(0, [0; HEADER]),
                1 => Reading::Done(Status::Ended),
                _ => Reading::Done(Status::Direct),
            };
        }
    }
}

/// What the first packets of both directions showed of the inner connection's TLS
/// (Xray's `XtlsFilterTls`).
#[derive(Clone, Debug)]
pub struct Filter {
    packets_left: u32,
    is_tls: bool,
    is_tls12_or_above: bool,
    direct_allowed: bool,
    cipher: u16,
    server_hello_left: i64,
}

impl Default for Filter {
    fn default() -> Self {
        Self {
            packets_left: PACKETS_TO_FILTER,
            is_tls: false,
            is_tls12_or_above: false,
            direct_allowed: false,
            cipher: 0,
            server_hello_left: -1,
        }
    }
}

impl Filter {
    /// Whether it still looks at packets.
    pub fn watching(&self) -> bool {
        self.packets_left > 0
    }

    /// A TLS ClientHello or ServerHello went by.
    pub fn is_tls(&self) -> bool {
        self.is_tls
    }

    /// The inner connection chose TLS 1.3 with a cipher suite other than CCM_8: a
    /// writer may switch to direct copy.
    pub fn direct_allowed(&self) -> bool {
        self.direct_allowed
    }

    /// Looks at one packet of either direction.
    pub fn observe(&mut self, b: &[u8]) {
        if self.packets_left == 0 {
            return;
        }
        self.packets_left -= 1;
        if b.len() >= 6 {
            if b[..3] == SERVER_HANDSHAKE_START && b[5] == SERVER_HELLO {
                self.server_hello_left = i64::from(u16::from_be_bytes([b[3], b[4]])) + 5;
                self.is_tls12_or_above = true;
                self.is_tls = true;
                if b.len() >= 79 && self.server_hello_left >= 79 {
                    let session_id = usize::from(b[43]);
                    if let Some(suite) = b.get(44 + session_id..46 + session_id) {
                        self.cipher = u16::from_be_bytes([suite[0], suite[1]]);
                    }
                }
            } else if b[..2] == CLIENT_HANDSHAKE_START && b[5] == CLIENT_HELLO {
                self.is_tls = true;
            }
        }
        if self.server_hello_left > 0 {
            let end = usize::try_from(self.server_hello_left)
                .unwrap_or(usize::MAX)
                .min(b.len());
            self.server_hello_left -= b.len() as i64;
            if b[..end]
                .windows(TLS13_SUPPORTED_VERSIONS.len())
                .any(|w| w == TLS13_SUPPORTED_VERSIONS)
            {
                self.direct_allowed =
                    (0x1301..=0x1305).contains(&self.cipher) && self.cipher != CCM_8;
                self.packets_left = 0;
            } else if self.server_hello_left <= 0 {
                // TLS 1.2: padding ends, no direct copy.
                self.packets_left = 0;
            }
        }
    }
}

/// Turns one direction's writes into blocks.
#[derive(Clone, Debug)]
pub struct Padder {
    /// Written before the first block, then gone.
    uuid: Option<[u8; 16]>,
    padding: bool,
}

impl Padder {
    /// A writer of blocks for the user with `uuid`.
    pub fn new(uuid: [u8; 16]) -> Self {
        Self {
            uuid: Some(uuid),
            padding: true,
        }
    }

    /// Whether writes are still made into blocks.
    pub fn is_padding(&self) -> bool {
        self.padding
    }

    /// Appends `data` (one write of the inner stream, seen by `filter` first) to
    /// `out`, as blocks while padding and as it is after. Returns true when the
    /// last block written is [`Command::Direct`]: everything written after `out`
    /// goes raw on TCP. `random(n)` is a uniform draw below `n`.
    pub fn write(
        &mut self,
        filter: &mut Filter,
        data: &[u8],
        out: &mut Vec<u8>,
        random: &mut impl FnMut(u32) -> u32,
    ) -> bool {
        for packet in data.chunks(BUFFER) {
            filter.observe(packet);
        }
        if !self.padding {
            out.extend_from_slice(data);
            return false;
        }
        let pieces = reshape(data);
        let mut long = filter.is_tls;
        let mut direct = false;
        let last = pieces.len().saturating_sub(1);
        for (i, piece) in pieces.iter().enumerate() {
            let ending = |padding: bool| {
                if i == last && !padding {
                    if filter.direct_allowed {
                        Command::Direct
                    } else {
                        Command::End
                    }
                } else {
                    Command::Continue
                }
            };
            if filter.is_tls && piece.len() >= 6 && piece[..3] == APPLICATION_DATA_START {
                // The inner handshake is over: this is its first application data.
                let command = ending(false);
                direct |= command == Command::Direct;
                self.block(piece, command, true, out, random);
                self.padding = false;
                long = false;
                continue;
            }
            if !filter.is_tls12_or_above && filter.packets_left <= 1 {
                // Not TLS (or not found in time): end the padding here, the rest
                // goes as it is.
                self.padding = false;
                self.block(piece, Command::End, long, out, random);
                for rest in &pieces[i + 1..] {
                    out.extend_from_slice(rest);
                }
                return false;
            }
            let command = ending(self.padding);
            direct |= command == Command::Direct;
            self.block(piece, command, long, out, random);
        }
        if pieces.is_empty() {
            // An empty write: one block of padding (Xray's client does this to hide
            // the length of its header).
            self.block(&[], Command::Continue, true, out, random);
        }
        direct
    }

    fn block(
        &mut self,
        content: &[u8],
        command: Command,
        long: bool,
        out: &mut Vec<u8>,
        random: &mut impl FnMut(u32) -> u32,
    ) {
        debug_assert!(content.len() <= MAX_CONTENT);
        let len = content.len();
        let padding = if len < 900 && long {
            random(500) as usize + 900 - len
        } else {
            random(256) as usize
        };
        let padding = padding.min(MAX_CONTENT - len);
        if let Some(uuid) = self.uuid.take() {
            out.extend_from_slice(&uuid);
        }
        out.push(command.byte());
        out.extend_from_slice(&(len as u16).to_be_bytes());
        out.extend_from_slice(&(padding as u16).to_be_bytes());
        out.extend_from_slice(content);
        out.resize(out.len() + padding, 0);
    }
}

/// Splits a write into pieces of at most [`MAX_CONTENT`] bytes: Xray's buffers of
/// 8 KiB, each one too long for a block cut at its last TLS application-data record
/// (or in half).
fn reshape(data: &[u8]) -> Vec<&[u8]> {
    let mut pieces = Vec::with_capacity(data.len() / MAX_CONTENT + 2);
    for packet in data.chunks(BUFFER) {
        if packet.len() < MAX_CONTENT {
            pieces.push(packet);
            continue;
        }
        let cut = packet
            .windows(3)
            .rposition(|w| w == APPLICATION_DATA_START)
            .filter(|&at| (21..=MAX_CONTENT).contains(&at))
            .unwrap_or(BUFFER / 2);
        let (a, b) = packet.split_at(cut);
        pieces.push(a);
        pieces.push(b);
    }
    pieces
}

#[cfg(test)]
#[path = "vision_tests.rs"]
mod tests;
