//! What both sides do alike: padding for the headers and messages, and the UDP
//! sockets' buffers.

/// The UDP socket buffers asked for: a second of 32 Mbit/s each way. The kernel's
/// defaults (about 200 KiB) drop packets in bursts at hundreds of Mbit/s.
const UDP_BUFFER: usize = 4 << 20;

/// Asks for [`UDP_BUFFER`] each way and says (at debug) when the kernel gave less
/// (`net.core.rmem_max` and `wmem_max` cap what a process may ask).
pub(super) fn size_buffers(socket: &std::net::UdpSocket) {
    let s = socket2::SockRef::from(socket);
    let _ = s.set_recv_buffer_size(UDP_BUFFER);
    let _ = s.set_send_buffer_size(UDP_BUFFER);
    let got = (s.recv_buffer_size(), s.send_buffer_size());
    if let (Ok(recv), Ok(send)) = got
        && (recv < UDP_BUFFER || send < UDP_BUFFER)
    {
        tracing::debug!(
            recv,
            send,
            wanted = UDP_BUFFER,
            "UDP socket buffers are smaller than asked (net.core.rmem_max / wmem_max cap them)"
        );
    }
}

/// 1 to 80 random letters and digits.
pub(super) fn padding() -> String {
    let mut bytes = [0u8; 81];
    let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes);
    const SET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let len = 1 + usize::from(bytes[0]) % 80;
    bytes[1..=len]
        .iter()
        .map(|b| char::from(SET[usize::from(*b) % SET.len()]))
        .collect()
}
