//! The deterministic bytes the tests send, and the checksum they compare.
//!
//! Byte `i` of every payload (counting from 0) is `(i * 31 + 7) mod 251`. 251 is prime
//! and 31 is coprime with it, so the sequence runs through 251 different values
//! before repeating, and a dropped, duplicated or reordered block of any length that
//! is not a multiple of 251 shows up at its first byte.
//!
//! The checksum is a word-wise FNV-1a: over the data's 8-byte little-endian words (the
//! last one zero-padded), `h = (h ^ word) * 0x100000001b3` from
//! `h = 0xcbf29ce484222325`, wrapping. Cheap enough for gigabytes in a benchmark;
//! [`Checksum`] computes it over data that arrives in pieces.

/// The pattern repeats with this period.
pub const PERIOD: usize = 251;

/// Byte `i` of the pattern.
pub fn byte(i: u64) -> u8 {
    // Both factors are below 251 after the reduction, so nothing overflows.
    ((i % PERIOD as u64 * 31 + 7) % PERIOD as u64) as u8
}

/// The first `n` bytes of the pattern.
pub fn bytes(n: usize) -> Vec<u8> {
    let block = Block::new();
    let mut out = Vec::with_capacity(n);
    let mut pos = 0u64;
    while out.len() < n {
        let chunk = block.at(pos, n - out.len());
        out.extend_from_slice(chunk);
        pos += chunk.len() as u64;
    }
    out
}

/// The position of the first byte of `data` that differs from the pattern, when
/// `data` is meant to be the pattern from offset `start` on.
pub fn first_mismatch(start: u64, data: &[u8]) -> Option<u64> {
    let block = Block::new();
    let mut pos = start;
    let mut rest = data;
    while !rest.is_empty() {
        let want = block.at(pos, rest.len());
        let (got, tail) = rest.split_at(want.len());
        if got != want {
            let i = got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(0);
            return Some(pos + i as u64);
        }
        pos += got.len() as u64;
        rest = tail;
    }
    None
}

/// A precomputed stretch of the pattern, for slicing it out at any offset without
/// computing it byte by byte.
#[derive(Debug)]
pub(crate) struct Block(Vec<u8>);

impl Block {
    /// The longest slice [`Self::at`] returns.
    pub(crate) const MAX: usize = PERIOD * 64;

    pub(crate) fn new() -> Self {
        Self((0..(Self::MAX + PERIOD) as u64).map(byte).collect())
    }

    /// The pattern from offset `pos`, at most `max` bytes (and at most [`Self::MAX`]).
    pub(crate) fn at(&self, pos: u64, max: usize) -> &[u8] {
        let phase = (pos % PERIOD as u64) as usize;
        &self.0[phase..phase + max.min(Self::MAX)]
    }
}

/// The checksum of `data` (see the module's doc).
pub fn checksum(data: &[u8]) -> u64 {
    let mut c = Checksum::new();
    c.update(data);
    c.finish()
}

/// The checksum of data that arrives in pieces: the same as [`checksum`] over their
/// concatenation.
#[derive(Debug, Clone)]
pub struct Checksum {
    hash: u64,
    /// Bytes of an unfinished word.
    partial: [u8; 8],
    partial_len: usize,
}

impl Default for Checksum {
    fn default() -> Self {
        Self::new()
    }
}

impl Checksum {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0100_0000_01b3;

    /// The checksum of no data so far.
    pub fn new() -> Self {
        Self {
            hash: Self::OFFSET,
            partial: [0; 8],
            partial_len: 0,
        }
    }

    /// Adds the next piece.
    pub fn update(&mut self, mut data: &[u8]) {
        if self.partial_len > 0 {
            let take = (8 - self.partial_len).min(data.len());
            self.partial[self.partial_len..self.partial_len + take].copy_from_slice(&data[..take]);
            self.partial_len += take;
            data = &data[take..];
            if self.partial_len < 8 {
                return;
            }
            self.word(self.partial);
            self.partial_len = 0;
        }
        let mut words = data.chunks_exact(8);
        for w in &mut words {
            self.word(w.try_into().expect("chunks of 8"));
        }
        let rest = words.remainder();
        self.partial[..rest.len()].copy_from_slice(rest);
        self.partial_len = rest.len();
    }

    /// The checksum of everything added.
    pub fn finish(&self) -> u64 {
        let mut done = self.clone();
        if done.partial_len > 0 {
            let mut last = [0; 8];
            last[..done.partial_len].copy_from_slice(&done.partial[..done.partial_len]);
            done.word(last);
        }
        done.hash
    }

    fn word(&mut self, w: [u8; 8]) {
        self.hash = (self.hash ^ u64::from_le_bytes(w)).wrapping_mul(Self::PRIME);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_starts_as_documented() {
        assert_eq!(bytes(4), vec![7, 38, 69, 100]);
        assert_eq!(byte(250), ((250 * 31 + 7) % 251) as u8);
        assert_eq!(byte(251), 7);
        let long = bytes(Block::MAX * 3 + 5);
        assert!(long.iter().enumerate().all(|(i, &b)| b == byte(i as u64)));
        assert_eq!(first_mismatch(0, &long), None);
        assert_eq!(first_mismatch(1000, &bytes(2000)[1000..]), None);
        let mut bad = long.clone();
        bad[40_000] ^= 1;
        assert_eq!(first_mismatch(0, &bad), Some(40_000));
    }

    #[test]
    fn checksum_is_the_same_in_pieces() {
        let data = bytes(1000);
        let whole = checksum(&data);
        for split in [0, 1, 7, 8, 9, 500, 999, 1000] {
            let mut c = Checksum::new();
            c.update(&data[..split]);
            for piece in data[split..].chunks(3) {
                c.update(piece);
            }
            assert_eq!(c.finish(), whole, "split at {split}");
        }
        assert_ne!(checksum(&data[..999]), whole);
        assert_eq!(checksum(&[]), Checksum::OFFSET);
    }
}
