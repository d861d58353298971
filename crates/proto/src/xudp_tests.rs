use proptest::prelude::*;

use super::*;
use crate::testing;

fn dns() -> Address {
    Address::domain("8.8.8.8", 53).unwrap()
}

/// sing-vmess `XUDPConn.WritePacket`, first packet: New, option data, UDP, address.
const SING_BOX_NEW: [u8; 19] = [
    0, 12, 0, 0, 1, 1, 2, 0, 53, 1, 8, 8, 8, 8, 0, 3, b'a', b'b', b'c',
];

#[test]
fn sing_box_first_packet() {
    let (frame, used) = Frame::parse(&SING_BOX_NEW).unwrap().unwrap();
    assert_eq!(used, SING_BOX_NEW.len());
    let want = Frame {
        session_id: 0,
        status: Status::New,
        error: false,
        target: Some(Target {
            network: Network::Udp,
            address: dns(),
        }),
        global_id: None,
        data: Some(b"abc"),
    };
    assert_eq!(frame, want);
    let mut out = Vec::new();
    want.encode(&mut out).unwrap();
    assert_eq!(out, SING_BOX_NEW);
}

#[test]
fn xray_first_packet_with_global_id() {
    // Xray `xudp.PacketWriter`: the same, then the 8-byte global id in the metadata.
    let gid = [1, 2, 3, 4, 5, 6, 7, 8];
    let wire = [
        &[0, 20, 0, 0, 1, 1, 2, 0, 53, 1, 8, 8, 8, 8][..],
        &gid,
        &[0, 1, b'x'],
    ]
    .concat();
    let (frame, used) = Frame::parse(&wire).unwrap().unwrap();
    assert_eq!(used, wire.len());
    assert_eq!(frame.global_id, Some(gid));
    assert_eq!(frame.data, Some(&b"x"[..]));
    let mut out = Vec::new();
    frame.encode(&mut out).unwrap();
    assert_eq!(out, wire);
}

#[test]
fn server_replies_and_control_frames() {
    // sing-vmess `writePacketFrame`: Keep, data, UDP source address.
    let mut out = Vec::new();
    Frame::udp_packet(0, dns(), b"abc")
        .encode(&mut out)
        .unwrap();
    assert_eq!(
        out,
        [
            0, 12, 0, 0, 2, 1, 2, 0, 53, 1, 8, 8, 8, 8, 0, 3, b'a', b'b', b'c'
        ]
    );
    out.clear();
    Frame::end(7, true).encode(&mut out).unwrap();
    assert_eq!(out, [0, 4, 0, 7, 3, 2]);
    // A Keep without address and a KeepAlive with data to discard.
    let wire = [0, 4, 0, 0, 2, 1, 0, 1, b'z', 0, 4, 0, 0, 4, 1, 0, 0];
    let (keep, used) = Frame::parse(&wire).unwrap().unwrap();
    assert_eq!(
        (keep.status, keep.target, keep.data, used),
        (Status::Keep, None, Some(&b"z"[..]), 9)
    );
    let (alive, used) = Frame::parse(&wire[9..]).unwrap().unwrap();
    assert_eq!(
        (alive.status, alive.data, used),
        (Status::KeepAlive, Some(&b""[..]), 8)
    );
}

#[test]
fn bad_frames_are_named() {
    assert_eq!(Frame::parse(&[2, 1]), Err(XudpError::MetadataTooLong(513)));
    assert_eq!(Frame::parse(&[0, 3]), Err(XudpError::MetadataTooShort(3)));
    assert_eq!(
        Frame::parse(&[0, 4, 0, 0, 9]),
        Err(XudpError::UnknownStatus(9))
    );
    assert_eq!(
        Frame::parse(&[0, 4, 0, 0, 1, 0]),
        Err(XudpError::TruncatedTarget)
    );
    assert_eq!(
        Frame::parse(&[0, 8, 0, 0, 1, 0, 3, 0, 53, 1]),
        Err(XudpError::UnknownNetwork(3))
    );
    assert_eq!(
        Frame::parse(&[0, 8, 0, 0, 1, 0, 2, 0, 53, 1]),
        Err(XudpError::TruncatedTarget)
    );
    assert_eq!(
        Frame::parse(&[0, 8, 0, 0, 1, 0, 2, 0, 53, 9]),
        Err(XudpError::Address(AddressError::UnknownType(9)))
    );
    let big = vec![0; 65536];
    assert_eq!(
        Frame::udp_packet(0, dns(), &big).encode(&mut Vec::new()),
        Err(PayloadTooLarge(65536))
    );
}

fn frame(data: &[u8]) -> impl Strategy<Value = Frame<'_>> {
    let status = prop_oneof![
        Just(Status::New),
        Just(Status::Keep),
        Just(Status::End),
        Just(Status::KeepAlive)
    ];
    let network = prop_oneof![Just(Network::Tcp), Just(Network::Udp)];
    (
        any::<u16>(),
        status,
        any::<bool>(),
        (network, testing::address()),
        any::<Option<[u8; 8]>>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            move |(session_id, status, error, (network, address), gid, with_target, with_data)| {
                let with_target = status == Status::New || (status == Status::Keep && with_target);
                Frame {
                    session_id,
                    status,
                    error,
                    target: with_target.then_some(Target { network, address }),
                    global_id: gid.filter(|_| status == Status::New),
                    data: with_data.then_some(data),
                }
            },
        )
}

const DATA: &[u8] = b"some payload bytes";

proptest! {
    #[test]
    fn round_trip_and_prefixes(frame in frame(DATA)) {
        let mut wire = Vec::new();
        frame.encode(&mut wire).unwrap();
        prop_assert_eq!(Frame::parse(&wire), Ok(Some((frame, wire.len()))));
        testing::assert_prefixes_incomplete(&wire, |b| Frame::parse(b).map(|o| o.map(|(_, n)| n)));
    }

    #[test]
    fn arbitrary_bytes_never_panic(buf in testing::bytes(600)) {
        let mut rest = &buf[..];
        while let Ok(Some((_, used))) = Frame::parse(rest) {
            prop_assert!(used > 0 && used <= rest.len());
            rest = &rest[used..];
        }
    }
}
