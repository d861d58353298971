//! A Shadowsocks 2022 stream to the destination: the request's head goes out in one
//! write when connecting (salt, identity headers, both header chunks; random padding
//! and no payload, which SIP022 allows); the stream after it is the transport
//! layer's [`SsStream`], which the node's inbound uses too.

use switchyard_proto::Address;
use switchyard_proto::shadowsocks::keys::ClientKeys;
use switchyard_proto::shadowsocks::tcp::{self, MAX_PADDING};
use switchyard_transport::shadowsocks::SsStream;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use super::{StepError, fill_random, unix_now};

/// Writes the request's head to `stream` and returns the stream to `destination`.
pub(super) async fn connect<S: AsyncRead + AsyncWrite + Unpin>(
    keys: &ClientKeys,
    mut stream: S,
    destination: &Address,
) -> Result<SsStream<S>, StepError> {
    let mut salt = vec![0u8; keys.method().key_len()];
    fill_random(&mut salt);
    let mut r = [0u8; 2];
    fill_random(&mut r);
    let padding = 1 + u16::from_be_bytes(r) % MAX_PADDING;
    let mut head = Vec::with_capacity(salt.len() + 64 + usize::from(padding));
    let (sealer, opener) = tcp::request(
        keys,
        &salt,
        &tcp::Request {
            destination,
            padding,
            payload: &[],
            now: unix_now(),
        },
        &mut head,
    )?;
    stream.write_all(&head).await?;
    Ok(SsStream::new(stream, sealer, opener))
}
