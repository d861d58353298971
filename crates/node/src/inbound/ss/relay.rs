//! A user's Shadowsocks 2022 stream relayed to a bare TCP destination, the download
//! sealed where it is read ([`SsWriter`]).

use switchyard_transport::shadowsocks::{SsStream, SsWriter};
use switchyard_tunnel::pump::{Activity, Buffers, Ended, RELEASE_AFTER, pump};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

/// Relays a user's Shadowsocks 2022 stream and a bare TCP destination: the upload
/// through the pump; the download read straight into the places of the chunks it
/// becomes, sealed there and written ([`SsWriter`]), with no copy between. The
/// counts, half-closes, idle timeout and cancellation are the pump's; the places
/// are given back after [`RELEASE_AFTER`] without data, as the pump's buffer is.
pub(crate) async fn relay(
    stream: SsStream<TcpStream>,
    mut remote: TcpStream,
    buffers: Buffers,
    idle: std::time::Duration,
    cancel: &CancellationToken,
    count: impl Fn(u64, u64) + Send + Sync,
) -> std::io::Result<Ended> {
    let (reader, writer) = stream.into_split();
    let activity = Activity::new();
    let (rr, mut rw) = remote.split();
    let count = &count;
    switchyard_tunnel::both_ways!(
        pump(
            reader,
            &mut rw,
            buffers.up,
            &activity,
            move |n| count(n, 0),
            None
        ),
        download(writer, rr.as_ref(), &activity, move |n| count(0, n)),
        activity,
        idle,
        cancel
    )
}

async fn download(
    mut writer: SsWriter,
    from: &TcpStream,
    activity: &Activity,
    count: impl Fn(u64),
) -> std::io::Result<()> {
    loop {
        if writer.holds_places()
            && tokio::time::timeout(RELEASE_AFTER, from.readable())
                .await
                .is_err()
        {
            writer.release();
        }
        let n = writer.write_from(from).await?;
        if n == 0 {
            // Half-close: the upload may go on.
            let _ = writer.shutdown().await;
            return Ok(());
        }
        count(n as u64);
        activity.moved();
    }
}
