//! Shared by the mux tests (`#[path]`-included): a peer that speaks raw frames. On its
//! own it tests nothing.
#![allow(dead_code, unreachable_pub)]

use switchyard_tunnel::frame::{Frame, Kind};
use switchyard_tunnel::mux::{Incoming, Mux, MuxConfig, MuxHandle, Side};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

/// A peer that reads and writes frames by hand.
pub struct Raw {
    pub io: DuplexStream,
    buf: Vec<u8>,
}

impl Raw {
    pub fn new(io: DuplexStream) -> Self {
        Self {
            io,
            buf: Vec::new(),
        }
    }

    pub async fn next(&mut self) -> Option<(Kind, u32, Vec<u8>)> {
        loop {
            if let Some((f, used)) = Frame::parse(&self.buf).expect("the mux sends valid frames") {
                let out = (f.kind, f.stream, f.payload.to_vec());
                self.buf.drain(..used);
                return Some(out);
            }
            let mut chunk = [0u8; 4096];
            let n = self.io.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    pub async fn send(&mut self, kind: Kind, stream: u32, payload: &[u8]) {
        let mut out = Vec::new();
        Frame {
            kind,
            flags: 0,
            stream,
            payload,
        }
        .encode(&mut out);
        self.io.write_all(&out).await.unwrap();
    }
}

pub fn link(side: Side, config: MuxConfig) -> (MuxHandle, Incoming, Raw) {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (h, i) = Mux::start(a, side, config);
    (h, i, Raw::new(b))
}
