use super::*;
use proptest::prelude::*;

/// What a test hello holds.
pub(crate) struct Spec<'a> {
    pub(crate) random: [u8; 32],
    pub(crate) session_id: &'a [u8],
    pub(crate) suites: &'a [u16],
    pub(crate) sni: Option<&'a str>,
    pub(crate) versions: &'a [u16],
    /// (group, key) pairs.
    pub(crate) shares: &'a [(u16, &'a [u8])],
    /// Extra extensions, raw.
    pub(crate) extra: &'a [(u16, &'a [u8])],
}

impl Default for Spec<'_> {
    fn default() -> Self {
        Self {
            random: std::array::from_fn(|i| i as u8),
            session_id: &[0xee; 32],
            suites: &[0x0a0a, 0x1301, 0x1302, 0x1303, 0xc02b],
            sni: Some("target.test"),
            versions: &[0x7a7a, TLS13, 0x0303],
            shares: &[(0x0a0a, &[0]), (X25519, &[9; 32])],
            extra: &[(0x0017, &[]), (0xfe0d, &[1, 2, 3])],
        }
    }
}

fn vec16(out: &mut Vec<u8>, body: &[u8]) {
    out.extend_from_slice(&(body.len() as u16).to_be_bytes());
    out.extend_from_slice(body);
}

/// The handshake message of `spec`.
pub(crate) fn message(spec: &Spec<'_>) -> Vec<u8> {
    let mut body = vec![3, 3];
    body.extend_from_slice(&spec.random);
    body.push(spec.session_id.len() as u8);
    body.extend_from_slice(spec.session_id);
    let suites: Vec<u8> = spec.suites.iter().flat_map(|s| s.to_be_bytes()).collect();
    vec16(&mut body, &suites);
    body.extend_from_slice(&[1, 0]);
    let mut ext = Vec::new();
    if let Some(name) = spec.sni {
        let mut entry = vec![0];
        vec16(&mut entry, name.as_bytes());
        let mut list = Vec::new();
        vec16(&mut list, &entry);
        ext.extend_from_slice(&SERVER_NAME.to_be_bytes());
        vec16(&mut ext, &list);
    }
    let versions: Vec<u8> = spec.versions.iter().flat_map(|v| v.to_be_bytes()).collect();
    let mut sv = vec![versions.len() as u8];
    sv.extend_from_slice(&versions);
    ext.extend_from_slice(&SUPPORTED_VERSIONS.to_be_bytes());
    vec16(&mut ext, &sv);
    let mut shares = Vec::new();
    for (group, key) in spec.shares {
        shares.extend_from_slice(&group.to_be_bytes());
        vec16(&mut shares, key);
    }
    let mut ks = Vec::new();
    vec16(&mut ks, &shares);
    ext.extend_from_slice(&KEY_SHARE.to_be_bytes());
    vec16(&mut ext, &ks);
    for (kind, data) in spec.extra {
        ext.extend_from_slice(&kind.to_be_bytes());
        vec16(&mut ext, data);
    }
    vec16(&mut body, &ext);
    let mut m = vec![CLIENT_HELLO];
    m.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    m.extend_from_slice(&body);
    m
}

/// `message` in records of at most `split` bytes.
pub(crate) fn records(message: &[u8], split: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for chunk in message.chunks(split) {
        out.extend_from_slice(&[HANDSHAKE, 3, 1]);
        vec16(&mut out, chunk);
    }
    out
}

#[test]
fn a_hello_is_read_with_its_fields() {
    let m = message(&Spec::default());
    let wire = records(&m, MAX_RECORD);
    let (hello, used) = parse(&wire).unwrap().unwrap();
    assert_eq!(used, wire.len());
    assert_eq!(hello.message, m);
    assert_eq!(hello.random, std::array::from_fn(|i| i as u8));
    assert_eq!(hello.session_id, [0xee; 32]);
    assert_eq!(
        &hello.message[SESSION_ID_OFFSET..SESSION_ID_OFFSET + 32],
        &[0xee; 32]
    );
    assert_eq!(
        hello.cipher_suites,
        [0x0a0a, 0x1301, 0x1302, 0x1303, 0xc02b]
    );
    assert_eq!(hello.server_name.as_deref(), Some("target.test"));
    assert!(hello.offers_tls13);
    assert_eq!(hello.x25519, Some([9; 32]));
}

#[test]
fn exact_bytes_of_a_minimal_hello() {
    // Built by hand: one record, a 32-byte session id, one suite, no SNI, TLS 1.3
    // and an X25519 share.
    let mut m = vec![1, 0, 0, 0];
    m.extend_from_slice(&[3, 3]);
    m.extend_from_slice(&[0x11; 32]);
    m.push(32);
    m.extend_from_slice(&[0x22; 32]);
    m.extend_from_slice(&[0, 2, 0x13, 0x01, 1, 0]);
    let mut ext = vec![0, 43, 0, 3, 2, 3, 4]; // supported_versions: TLS 1.3
    ext.extend_from_slice(&[0, 51, 0, 38, 0, 36, 0, 0x1d, 0, 32]);
    ext.extend_from_slice(&[0x33; 32]);
    m.extend_from_slice(&(ext.len() as u16).to_be_bytes());
    m.extend_from_slice(&ext);
    let len = m.len() - 4;
    m[3] = len as u8;
    let mut wire = vec![22, 3, 1, 0, m.len() as u8];
    wire.extend_from_slice(&m);
    wire.extend_from_slice(b"next");
    let (hello, used) = parse(&wire).unwrap().unwrap();
    assert_eq!(
        used,
        wire.len() - 4,
        "the bytes after the record are not its"
    );
    assert_eq!(hello.server_name, None);
    assert_eq!(hello.x25519, Some([0x33; 32]));
    assert_eq!(hello.cipher_suites, [0x1301]);
}

#[test]
fn a_hello_split_over_records_is_reassembled_and_every_prefix_waits() {
    let m = message(&Spec::default());
    for split in [3, 7, 100, 200] {
        let wire = records(&m, split);
        let (hello, used) = parse(&wire).unwrap().unwrap();
        assert_eq!((hello.message.as_slice(), used), (m.as_slice(), wire.len()));
        for cut in 0..wire.len() {
            assert_eq!(parse(&wire[..cut]), Ok(None), "split {split}, cut {cut}");
        }
    }
}

#[test]
fn what_is_not_a_hello_is_named() {
    assert_eq!(
        parse(b"GET / HTTP/1.1\r\n"),
        Err(HelloError::NotHandshake(b'G'))
    );
    assert_eq!(parse(&[22, 4]), Err(HelloError::RecordVersion(0x0400)));
    assert_eq!(parse(&[22, 3, 1, 0, 0]), Err(HelloError::RecordLength(0)));
    assert_eq!(
        parse(&[22, 3, 1, 0x40, 1]),
        Err(HelloError::RecordLength(16385))
    );
    assert_eq!(
        parse(&[22, 3, 1, 0, 4, 2, 0, 0, 0]),
        Err(HelloError::NotClientHello(2))
    );
    assert_eq!(
        parse(&[22, 3, 1, 0, 4, 1, 0, 0x40, 1]),
        Err(HelloError::TooLong(16389))
    );
    // A whole hello followed by more handshake bytes in its record.
    let m = message(&Spec::default());
    let mut longer = m.clone();
    longer.push(0);
    let mut wire = vec![22, 3, 1];
    wire.extend_from_slice(&(longer.len() as u16).to_be_bytes());
    wire.extend_from_slice(&m);
    assert_eq!(parse(&wire), Err(HelloError::TrailingHandshake));
    wire.push(0);
    assert_eq!(parse(&wire), Err(HelloError::TrailingHandshake));
    // A non-handshake record in the middle of a hello.
    let mut mixed = records(&m[..10], 10);
    mixed.extend_from_slice(&[23, 3, 3, 0, 1, 0]);
    assert_eq!(parse(&mixed), Err(HelloError::NotHandshake(23)));
}

#[test]
fn a_hello_in_too_many_records_is_refused() {
    let m = message(&Spec::default());
    let wire = records(&m, m.len().div_ceil(MAX_RECORDS));
    assert!(
        parse(&wire).unwrap().is_some(),
        "{MAX_RECORDS} records are read"
    );
    assert!(m.len() > 2 * MAX_RECORDS);
    assert_eq!(parse(&records(&m, 2)), Err(HelloError::Fragmented));
}

#[test]
fn malformed_bodies_are_refused() {
    let long_id = [0u8; 33];
    let twice: [(u16, &[u8]); 2] = [(0x0017, &[]), (0x0017, &[])];
    let odd_versions = [0x0304];
    let cases: [(Spec<'_>, &str); 3] = [
        (
            Spec {
                session_id: &long_id,
                ..Spec::default()
            },
            "legacy_session_id longer than 32 bytes",
        ),
        (
            Spec {
                extra: &twice,
                ..Spec::default()
            },
            "an extension appears twice",
        ),
        (
            Spec {
                suites: &[],
                versions: &odd_versions,
                ..Spec::default()
            },
            "cipher_suites",
        ),
    ];
    for (spec, what) in cases {
        let wire = records(&message(&spec), MAX_RECORD);
        assert_eq!(parse(&wire), Err(HelloError::Malformed(what)));
    }
}

#[test]
fn a_hello_without_tls13_or_x25519_reads_as_such() {
    let p256 = [4u8; 65];
    let shares: [(u16, &[u8]); 2] = [(0x0017, &p256), (X25519, &[1; 31])];
    let spec = Spec {
        versions: &[0x0303],
        shares: &shares,
        sni: None,
        ..Spec::default()
    };
    let (hello, _) = parse(&records(&message(&spec), MAX_RECORD))
        .unwrap()
        .unwrap();
    assert!(!hello.offers_tls13);
    assert_eq!(hello.x25519, None, "a 31-byte share is no X25519 key");
    assert_eq!(hello.server_name, None);
}

proptest! {
    #[test]
    fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = parse(&data);
    }

    #[test]
    fn never_panics_on_a_damaged_hello(at in 0usize..300, byte in any::<u8>(), split in 1usize..400) {
        let mut wire = records(&message(&Spec::default()), split);
        let at = at % wire.len();
        wire[at] = byte;
        if let Ok(Some((hello, used))) = parse(&wire) {
            prop_assert!(used <= wire.len());
            prop_assert!(hello.message.len() <= MAX_MESSAGE);
        }
    }
}
