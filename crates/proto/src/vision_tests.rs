use super::*;

const UUID: [u8; 16] = *b"0123456789abcdef";

/// A TLS ServerHello record choosing `cipher`, with TLS 1.3's supported_versions
/// extension when `tls13`.
fn server_hello(cipher: u16, tls13: bool) -> Vec<u8> {
    let mut body = vec![0x03, 0x03];
    body.extend_from_slice(&[7; 32]); // random
    body.push(32);
    body.extend_from_slice(&[9; 32]); // session id
    body.extend_from_slice(&cipher.to_be_bytes());
    body.push(0); // compression
    let mut ext = Vec::new();
    if tls13 {
        ext.extend_from_slice(&[0x00, 0x2b, 0x00, 0x02, 0x03, 0x04]);
    }
    ext.extend_from_slice(&[0x00, 0x33, 0x00, 0x04, 1, 2, 3, 4]); // a key_share stand-in
    body.extend_from_slice(&(ext.len() as u16).to_be_bytes());
    body.extend_from_slice(&ext);
    let mut hs = vec![SERVER_HELLO];
    hs.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    hs.extend_from_slice(&body);
    let mut record = vec![0x16, 0x03, 0x03];
    record.extend_from_slice(&(hs.len() as u16).to_be_bytes());
    record.extend_from_slice(&hs);
    record
}

fn client_hello() -> Vec<u8> {
    let mut r = vec![0x16, 0x03, 0x01, 0x00, 0x40, CLIENT_HELLO];
    r.resize(5 + 0x40, 1);
    r
}

fn app_data(len: usize) -> Vec<u8> {
    let mut r = vec![0x17, 0x03, 0x03];
    r.extend_from_slice(&((len - 5) as u16).to_be_bytes());
    r.resize(len, 0xaa);
    r
}

/// A draw that always gives `v` (clamped below `n`).
fn fixed(v: u32) -> impl FnMut(u32) -> u32 {
    move |n| v.min(n - 1)
}

fn read_all(bytes: &[u8], step: usize) -> (Vec<u8>, Status) {
    let mut u = Unpadder::new(UUID);
    let mut out = Vec::new();
    let mut status = Status::Blocks;
    for chunk in bytes.chunks(step) {
        status = u.push(chunk, &mut out).unwrap();
    }
    (out, status)
}

#[test]
fn the_first_block_carries_the_uuid_and_long_padding_for_tls() {
    let mut filter = Filter::default();
    filter.observe(&client_hello());
    let mut p = Padder::new(UUID);
    let mut out = Vec::new();
    let direct = p.write(&mut filter, b"hello", &mut out, &mut fixed(100));
    assert!(!direct);
    // UUID, command 0, content 5, padding 100 + 900 - 5 = 995.
    assert_eq!(&out[..16], &UUID);
    assert_eq!(&out[16..21], &[0, 0, 5, 0x03, 0xe3]);
    assert_eq!(&out[21..26], b"hello");
    assert_eq!(out.len(), 16 + 5 + 5 + 995);
    // The next block has no UUID.
    let mut more = Vec::new();
    p.write(&mut filter, b"hi", &mut more, &mut fixed(3));
    assert_eq!(&more[..5], &[0, 0, 2, 0x03, 0x85]); // 3 + 900 - 2 = 901
    assert_eq!(more.len(), 5 + 2 + 901);
}

#[test]
fn short_padding_when_not_tls_and_for_long_content() {
    let mut filter = Filter::default();
    let mut p = Padder::new(UUID);
    let mut out = Vec::new();
    p.write(
        &mut filter,
        b"GET / HTTP/1.1\r\n\r\n",
        &mut out,
        &mut fixed(300),
    );
    // Not TLS: padding is a draw below 256 (clamped to 255 by the fixed draw).
    assert_eq!(&out[16..21], &[0, 0, 18, 0, 255]);
    let mut filter = Filter::default();
    filter.observe(&client_hello());
    let mut p = Padder::new(UUID);
    let mut out = Vec::new();
    p.write(&mut filter, &[1; 1000], &mut out, &mut fixed(7));
    assert_eq!(&out[16..21], &[0, 0x03, 0xe8, 0, 7]);
}

#[test]
fn an_empty_write_is_one_block_of_padding() {
    let mut filter = Filter::default();
    let mut p = Padder::new(UUID);
    let mut out = Vec::new();
    p.write(&mut filter, &[], &mut out, &mut fixed(0));
    assert_eq!(&out[16..21], &[0, 0, 0, 0x03, 0x84]); // 900
    assert_eq!(out.len(), 16 + 5 + 900);
    let (content, status) = read_all(&out, 7);
    assert!(content.is_empty());
    assert_eq!(status, Status::Blocks);
}

#[test]
fn a_tls13_handshake_ends_in_a_direct_block_at_the_first_application_data() {
    // The server's view: the client's inner ClientHello comes up, the target's
    // ServerHello goes down, then the target's first application data.
    let mut filter = Filter::default();
    filter.observe(&client_hello());
    assert!(filter.is_tls() && !filter.direct_allowed());
    let mut p = Padder::new(UUID);
    let mut stream = Vec::new();
    let hello = server_hello(0x1301, true);
    assert!(!p.write(&mut filter, &hello, &mut stream, &mut fixed(10)));
    assert!(filter.direct_allowed());
    assert!(!filter.watching(), "TLS 1.3 found: the filter stops");
    assert!(p.is_padding());
    let data = app_data(300);
    assert!(p.write(&mut filter, &data, &mut stream, &mut fixed(10)));
    assert!(!p.is_padding());
    // After the direct block a writer sends raw; as blocks, the reader sees both
    // contents and the direct command.
    let (content, status) = read_all(&stream, 1);
    assert_eq!(status, Status::Direct);
    assert_eq!(content, [hello, data].concat());
    // Later writes (in a stream that stayed in TLS) are as they are.
    let mut later = Vec::new();
    p.write(&mut filter, b"plain", &mut later, &mut fixed(0));
    assert_eq!(later, b"plain");
}

#[test]
fn tls12_and_ccm8_end_the_padding_without_direct_copy() {
    for (cipher, tls13) in [(0xc02f, false), (0x1305, true), (0x1301, false)] {
        let mut filter = Filter::default();
        filter.observe(&client_hello());
        let mut p = Padder::new(UUID);
        let mut stream = Vec::new();
        p.write(
            &mut filter,
            &server_hello(cipher, tls13),
            &mut stream,
            &mut fixed(1),
        );
        assert!(!filter.direct_allowed(), "{cipher:#x} {tls13}");
        assert!(!filter.watching());
        assert!(!p.write(&mut filter, &app_data(64), &mut stream, &mut fixed(1)));
        let (_, status) = read_all(&stream, 13);
        assert_eq!(status, Status::Ended, "{cipher:#x} {tls13}");
    }
}

#[test]
fn traffic_that_is_not_tls_ends_the_padding_after_the_filter_gives_up() {
    let mut filter = Filter::default();
    let mut p = Padder::new(UUID);
    let mut stream = Vec::new();
    let mut sent = Vec::new();
    let mut writes = 0;
    while p.is_padding() {
        let data = vec![writes as u8; 100];
        p.write(&mut filter, &data, &mut stream, &mut fixed(5));
        sent.extend_from_slice(&data);
        writes += 1;
    }
    // Xray ends "one packet early": the 7th write leaves the count at 1 and ends it.
    assert_eq!(writes, PACKETS_TO_FILTER as usize - 1);
    let mut tail = Vec::new();
    p.write(&mut filter, b"after", &mut tail, &mut fixed(5));
    stream.extend_from_slice(&tail);
    sent.extend_from_slice(b"after");
    let (content, status) = read_all(&stream, 64);
    assert_eq!(status, Status::Ended);
    assert_eq!(content, sent);
}

#[test]
fn a_long_write_is_cut_into_blocks_at_an_application_data_record() {
    let mut filter = Filter::default();
    filter.observe(&client_hello());
    filter.observe(&server_hello(0x1302, true));
    let mut p = Padder::new(UUID);
    // 20 KB of handshake-ish bytes with an application-data record starting at 6000.
    let mut data = vec![0x16; 6000];
    data.extend_from_slice(&app_data(14_000));
    let mut stream = Vec::new();
    p.write(&mut filter, &data, &mut stream, &mut fixed(2));
    let (content, status) = read_all(&stream, 4096);
    assert_eq!(content, data);
    assert_eq!(status, Status::Direct);
    // The first 8 KiB packet is cut at the record (6000), so the second block is
    // application data: the one that ends the padding.
    assert_eq!(&stream[16..21], &[0, 0x17, 0x70, 0, 2]);
}

#[test]
fn a_stream_without_the_uuid_is_read_as_it_is() {
    let bytes = b"0123456789abcdeX and more";
    let (content, status) = read_all(bytes, 3);
    assert_eq!(content, bytes);
    assert_eq!(status, Status::NotPadded);
}

#[test]
fn an_unknown_command_is_an_error() {
    let mut bytes = UUID.to_vec();
    bytes.extend_from_slice(&[3, 0, 0, 0, 0]);
    let mut u = Unpadder::new(UUID);
    let mut out = Vec::new();
    assert_eq!(
        u.push(&bytes, &mut out),
        Err(VisionError::UnknownCommand(3))
    );
}

#[test]
fn bytes_after_the_last_block_are_plain() {
    let mut filter = Filter::default();
    filter.observe(&client_hello());
    filter.observe(&server_hello(0x1301, true));
    let mut p = Padder::new(UUID);
    let mut stream = Vec::new();
    p.write(&mut filter, &app_data(50), &mut stream, &mut fixed(0));
    stream.extend_from_slice(b"tail");
    let (content, status) = read_all(&stream, 1000);
    assert_eq!(status, Status::Direct);
    assert_eq!(&content[50..], b"tail");
}

#[test]
fn the_unpadder_holds_nothing_but_its_state() {
    // Whatever the lengths announce, nothing is buffered: content is handed out as it
    // comes, padding skipped as it comes.
    let mut bytes = UUID.to_vec();
    bytes.extend_from_slice(&[0, 0xff, 0xff, 0xff, 0xff]);
    bytes.extend_from_slice(&[5; 1000]);
    let mut u = Unpadder::new(UUID);
    let mut out = Vec::new();
    assert_eq!(u.push(&bytes, &mut out), Ok(Status::Blocks));
    assert_eq!(out, vec![5; 1000]);
}
