//! What an HTTP/2 client's first SETTINGS frame says of the largest frame it takes
//! (`SETTINGS_MAX_FRAME_SIZE`, RFC 9113, sections 4.1 and 6.5).
//!
//! A gRPC server sends each message in frames no larger than that; the h2 crate keeps
//! the value to itself, so the server reads it ahead from the bytes that follow the
//! connection preface (a client must send SETTINGS first) and hands every byte on
//! unchanged. Go's HTTP/2 client (sing-box, mihomo, newer Xray) takes frames of
//! 1 MiB, grpc-go's of the default 16 KiB: a 64 KiB message is one frame for the first
//! and four for the second, and every frame costs the client a read and a window
//! update.
//!
//! Sans-io and total: [`settings_len`] says from a frame's 9-byte head whether it is a
//! SETTINGS frame worth reading ahead, [`max_frame_size`] reads its payload. Anything
//! else (another frame, an ACK, a payload too long to read ahead, a value out of
//! range) leaves the default, and the h2 crate judges the bytes itself.

/// The length of an HTTP/2 frame's head.
pub const FRAME_HEAD: usize = 9;

/// The largest frame every peer takes (the protocol's initial value).
pub const DEFAULT_MAX_FRAME_SIZE: u32 = 16_384;

/// The largest value `SETTINGS_MAX_FRAME_SIZE` may have.
pub const LARGEST_MAX_FRAME_SIZE: u32 = (1 << 24) - 1;

/// The longest SETTINGS payload read ahead: 32 settings. Clients send a handful; a
/// longer frame is passed on unread, and its peer gets the default.
pub const MAX_SETTINGS_PAYLOAD: usize = 32 * SETTING_LEN;

/// One setting: a 16-bit identifier and a 32-bit value.
const SETTING_LEN: usize = 6;

/// The frame type of SETTINGS.
const SETTINGS: u8 = 0x4;

/// The ACK flag of SETTINGS.
const ACK: u8 = 0x1;

/// The identifier of `SETTINGS_MAX_FRAME_SIZE`.
const MAX_FRAME_SIZE: u16 = 0x5;

/// The payload length of the frame whose head is `head`, when it is a SETTINGS frame
/// (not an ACK, on stream 0, whole settings) short enough to read ahead
/// ([`MAX_SETTINGS_PAYLOAD`]); `None` otherwise.
pub fn settings_len(head: &[u8; FRAME_HEAD]) -> Option<usize> {
    let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
    let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
    let ok = head[3] == SETTINGS
        && head[4] & ACK == 0
        && stream == 0
        && len % SETTING_LEN == 0
        && len <= MAX_SETTINGS_PAYLOAD;
    ok.then_some(len)
}

/// The largest frame the peer takes by the SETTINGS `payload`: the last
/// `SETTINGS_MAX_FRAME_SIZE` in it, when it is within the protocol's range
/// (16,384 to 2^24 − 1); else [`DEFAULT_MAX_FRAME_SIZE`].
pub fn max_frame_size(payload: &[u8]) -> u32 {
    payload
        .chunks_exact(SETTING_LEN)
        .filter(|s| u16::from_be_bytes([s[0], s[1]]) == MAX_FRAME_SIZE)
        .map(|s| u32::from_be_bytes([s[2], s[3], s[4], s[5]]))
        .next_back()
        .filter(|v| (DEFAULT_MAX_FRAME_SIZE..=LARGEST_MAX_FRAME_SIZE).contains(v))
        .unwrap_or(DEFAULT_MAX_FRAME_SIZE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(len: usize, kind: u8, flags: u8, stream: u32) -> [u8; FRAME_HEAD] {
        let l = u32::try_from(len).unwrap().to_be_bytes();
        let s = stream.to_be_bytes();
        [l[1], l[2], l[3], kind, flags, s[0], s[1], s[2], s[3]]
    }

    fn setting(id: u16, value: u32) -> Vec<u8> {
        let mut s = id.to_be_bytes().to_vec();
        s.extend_from_slice(&value.to_be_bytes());
        s
    }

    #[test]
    fn a_settings_head_is_read_ahead_when_short_and_whole() {
        assert_eq!(settings_len(&head(18, 4, 0, 0)), Some(18));
        assert_eq!(settings_len(&head(0, 4, 0, 0)), Some(0));
        assert_eq!(settings_len(&head(192, 4, 0, 0)), Some(192));
        // Too long, an ACK, another stream, a partial setting, another frame type.
        assert_eq!(settings_len(&head(198, 4, 0, 0)), None);
        assert_eq!(settings_len(&head(0, 4, 1, 0)), None);
        assert_eq!(settings_len(&head(6, 4, 0, 1)), None);
        assert_eq!(settings_len(&head(7, 4, 0, 0)), None);
        assert_eq!(settings_len(&head(6, 8, 0, 0)), None);
        // The reserved bit of the stream identifier is ignored, as RFC 9113 asks.
        assert_eq!(settings_len(&head(6, 4, 0, 0x8000_0000)), Some(6));
    }

    #[test]
    fn the_last_max_frame_size_in_range_counts() {
        // Go's client: ENABLE_PUSH 0, INITIAL_WINDOW_SIZE 4 MiB, MAX_FRAME_SIZE 1 MiB,
        // MAX_HEADER_LIST_SIZE 10 MiB.
        let go = [
            setting(2, 0),
            setting(4, 4 << 20),
            setting(5, 1 << 20),
            setting(6, 10 << 20),
        ]
        .concat();
        assert_eq!(max_frame_size(&go), 1 << 20);
        // grpc-go sends none: the default.
        assert_eq!(max_frame_size(&setting(4, 65_535)), 16_384);
        assert_eq!(max_frame_size(&[]), 16_384);
        // The last one wins; out of range is the default.
        let twice = [setting(5, 32_768), setting(5, 65_536)].concat();
        assert_eq!(max_frame_size(&twice), 65_536);
        assert_eq!(max_frame_size(&setting(5, 16_383)), 16_384);
        assert_eq!(max_frame_size(&setting(5, 1 << 24)), 16_384);
        assert_eq!(max_frame_size(&setting(5, (1 << 24) - 1)), (1 << 24) - 1);
        // A trailing partial setting is not read.
        assert_eq!(max_frame_size(&setting(5, 65_536)[..5]), 16_384);
    }
}
