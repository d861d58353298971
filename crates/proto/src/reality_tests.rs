use super::*;
use crate::client_hello::tests::{Spec, message, records};
use crate::client_hello::{self, TLS13, X25519};

// RFC 7748 section 6.1: Alice is the server, Bob the client.
const SERVER_PRIVATE: &str = "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a";
const SERVER_PUBLIC: &str = "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a";
const CLIENT_PRIVATE: &str = "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb";
const CLIENT_PUBLIC: &str = "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f";
const SHARED: &str = "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742";

// Computed independently with Python's `cryptography` (X25519, HKDF, AESGCM,
// ChaCha20Poly1305, HMAC) over the same hello, following Xray's code path.
const AUTH_KEY: &str = "68e5a4d6fbfc0f93477d737fbdd45bd5f81578fbd172327b6db8e963e2ba4a3c";
const SEALED_AES: &str = "1415d4d168daf2213610ec732bbeca50109bc466d439f26ee6fd276840e6cb0c";
const SEALED_CHACHA: &str = "6134dbafdb4378376ae59cbea4f6f8ea128424a2f0cfb1d7d95d723156eae7ad";
const HMAC_OF_42S: &str = "681ce4a0fffaf1931cbf814db2f59f823e49bd038696c82093c03273d7d3f7baabf00970b65e43b164213e9d3a2e160ac7a32e83f712c3d08669c0eddf43079c";

fn hex<const N: usize>(text: &str) -> [u8; N] {
    std::array::from_fn(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).unwrap())
}

fn server_key() -> PrivateKey {
    PrivateKey(x25519_dalek::StaticSecret::from(hex::<32>(SERVER_PRIVATE)))
}

/// Xray 24.11.21's plaintext: its version, reserved, 1,700,000,000 s, short id.
fn auth() -> ClientAuth {
    ClientAuth {
        version: ClientVersion([24, 11, 21]),
        unix_time: 1_700_000_000,
        short_id: ShortId::parse("0123abcd").unwrap(),
    }
}

/// The vector's hello (session id zero) with `suites`.
fn vector_message(suites: &[u16]) -> Vec<u8> {
    let share = hex::<32>(CLIENT_PUBLIC);
    message(&Spec {
        session_id: &[0; 32],
        suites,
        versions: &[TLS13],
        shares: &[(X25519, &share)],
        extra: &[],
        ..Spec::default()
    })
}

fn policy() -> Policy {
    Policy {
        server_names: ["target.test".to_owned()].into(),
        short_ids: [ShortId::parse("0123abcd").unwrap()].into(),
        max_time_diff_ms: 60_000,
        min_client_version: None,
        max_client_version: None,
    }
}

#[test]
fn keys_agree_as_rfc_7748_says_and_read_in_xrays_form() {
    let server = server_key();
    assert_eq!(server.public_key().0, hex::<32>(SERVER_PUBLIC));
    assert_eq!(server.agree(&hex(CLIENT_PUBLIC)), Some(hex(SHARED)));
    // Xray's form: base64url, no padding, 43 characters.
    let text = server.encode();
    assert_eq!(text, "dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo");
    assert_eq!(
        PrivateKey::parse(&text).unwrap().public_key(),
        server.public_key()
    );
    let public = server.public_key().encode();
    assert_eq!(public, "hSDwCYkwp1R0i33ctD73Wg2_Og0mOBr066SpjqqbTmo");
    assert_eq!(PublicKey::parse(&public).unwrap(), server.public_key());
    assert_eq!(PublicKey::parse("AAAA"), Err(KeyError::Length(3)));
    assert_eq!(PublicKey::parse("not base64!"), Err(KeyError::NotBase64));
    assert_eq!(format!("{server:?}"), "PrivateKey(***)");
    // A low-order share gives an all-zero secret: refused.
    assert_eq!(server.agree(&[0; 32]), None);
    // Generated keys are clamped.
    let generated = PrivateKey::from_random([0xff; 32]);
    let bytes = crate::base64::decode_lenient(generated.encode().as_bytes()).unwrap();
    assert_eq!((bytes[0], bytes[31]), (0xf8, 0x7f));
}

#[test]
fn the_auth_key_the_sealed_session_id_and_the_signature_match_the_vectors() {
    let key = AuthKey::derive(&hex(SHARED), &std::array::from_fn(|i| i as u8));
    assert_eq!(key.0, hex::<32>(AUTH_KEY));
    for (suites, sealed) in [
        (&[0x1301u16][..], SEALED_AES),
        (&[0x1303][..], SEALED_CHACHA),
    ] {
        let mut m = vector_message(suites);
        let random = std::array::from_fn(|i| i as u8);
        assert!(seal(&mut m, &random, suites, &key, &auth()));
        assert_eq!(
            &m[client_hello::SESSION_ID_OFFSET..][..32],
            &hex::<32>(sealed)[..],
            "suites {suites:x?}"
        );
        let (hello, _) = client_hello::parse(&records(&m, 100)).unwrap().unwrap();
        assert_eq!(open(&hello, &key), Some(auth()));
        // Any other byte of the hello is authenticated too.
        let mut bent = m.clone();
        bent[m.len() - 1] ^= 1;
        let (hello, _) = client_hello::parse(&records(&bent, 100)).unwrap().unwrap();
        assert_eq!(open(&hello, &key), None);
    }
    assert_eq!(
        certificate_signature(&key, &[0x42; 32]),
        hex::<64>(HMAC_OF_42S)
    );
    assert_eq!(format!("{key:?}"), "AuthKey(***)");
}

#[test]
fn the_aead_follows_gos_aesgcm_preferred() {
    use SessionCipher::{AesGcm, ChaCha20Poly1305};
    let cases: [(&[u16], SessionCipher); 7] = [
        (&[0x0a0a, 0x1301, 0x1302, 0x1303], AesGcm), // Chrome: GREASE skipped
        (&[0x1303, 0x1301], ChaCha20Poly1305),
        (&[0x1302], AesGcm),
        (&[0xc02f, 0x1303], AesGcm),
        (&[0x009c, 0x1301], ChaCha20Poly1305), // known, but not in aesgcmCiphers
        (&[0x0a0a, 0x1a1a], ChaCha20Poly1305),
        (&[], ChaCha20Poly1305),
    ];
    for (suites, cipher) in cases {
        assert_eq!(SessionCipher::for_suites(suites), cipher, "{suites:x?}");
    }
}

#[test]
fn short_ids_and_versions_read_as_xray_reads_them() {
    assert_eq!(ShortId::parse(""), Ok(ShortId([0; 8])));
    assert_eq!(
        ShortId::parse("ab"),
        Ok(ShortId([0xab, 0, 0, 0, 0, 0, 0, 0]))
    );
    assert_eq!(ShortId::parse("ab00"), ShortId::parse("ab"));
    assert_eq!(
        ShortId::parse("0123456789abcdef").unwrap().encode(),
        "0123456789abcdef"
    );
    assert_eq!(
        ShortId::parse("ABCDEF").unwrap().encode(),
        "abcdef0000000000"
    );
    for bad in ["a", "abc", "0123456789abcdef01", "zz", "+1"] {
        assert_eq!(ShortId::parse(bad), Err(KeyError::ShortId), "{bad}");
    }
    assert_eq!(
        ClientVersion::parse("24.11.21"),
        Ok(ClientVersion([24, 11, 21]))
    );
    assert_eq!(ClientVersion::parse("1.8"), Ok(ClientVersion([1, 8, 0])));
    for bad in ["1.2.3.4", "256.0.0", "x", "1..2", ""] {
        assert_eq!(ClientVersion::parse(bad), Err(KeyError::Version), "{bad}");
    }
    assert_eq!(ClientVersion([24, 11, 21]).to_string(), "24.11.21");
}

#[test]
fn the_clock_is_checked_to_the_millisecond_both_ways() {
    let p = Policy {
        max_time_diff_ms: 1000,
        ..policy()
    };
    let at = i64::from(auth().unix_time) * 1000;
    for (now, ok) in [
        (at, true),
        (at + 1000, true),
        (at - 1000, true),
        (at + 1001, false),
        (at - 1001, false),
    ] {
        let got = p.check(&auth(), now);
        if ok {
            assert_eq!(got, Ok(()), "now {now}");
        } else {
            assert_eq!(got, Err(Refusal::Clock(now - at)), "now {now}");
        }
    }
    let unchecked = Policy {
        max_time_diff_ms: 0,
        ..policy()
    };
    assert_eq!(unchecked.check(&auth(), 0), Ok(()));
    assert_eq!(unchecked.check(&auth(), i64::MAX), Ok(()));
}

#[test]
fn versions_and_short_ids_are_checked() {
    let now = i64::from(auth().unix_time) * 1000;
    let p = Policy {
        min_client_version: Some(ClientVersion([24, 11, 21])),
        max_client_version: Some(ClientVersion([25, 0, 0])),
        ..policy()
    };
    assert_eq!(p.check(&auth(), now), Ok(()));
    let old = ClientAuth {
        version: ClientVersion([24, 11, 20]),
        ..auth()
    };
    assert_eq!(p.check(&old, now), Err(Refusal::Version(old.version)));
    let new = ClientAuth {
        version: ClientVersion([25, 0, 1]),
        ..auth()
    };
    assert_eq!(p.check(&new, now), Err(Refusal::Version(new.version)));
    let stranger = ClientAuth {
        short_id: ShortId::parse("ff").unwrap(),
        ..auth()
    };
    assert_eq!(
        p.check(&stranger, now),
        Err(Refusal::ShortId("ff00000000000000".into()))
    );
}

/// The wire hello of a client holding `server`'s public key.
fn sealed_hello(server_public: &PublicKey, sni: Option<&str>, share: [u8; 32]) -> ClientHello {
    let client = PrivateKey(x25519_dalek::StaticSecret::from(hex::<32>(CLIENT_PRIVATE)));
    let shared = client.agree(&server_public.0).unwrap_or([0; 32]);
    let random = std::array::from_fn(|i| i as u8);
    let key = AuthKey::derive(&shared, &random);
    let suites = [0x0a0a, 0x1301];
    let mut m = message(&Spec {
        session_id: &[0; 32],
        suites: &suites,
        sni,
        shares: &[(X25519, &share)],
        ..Spec::default()
    });
    assert!(seal(&mut m, &random, &suites, &key, &auth()));
    client_hello::parse(&records(&m, 512)).unwrap().unwrap().0
}

#[test]
fn authenticate_runs_every_check() {
    let server = server_key();
    let now = i64::from(auth().unix_time) * 1000 + 500;
    let share = hex(CLIENT_PUBLIC);
    let hello = sealed_hello(&server.public_key(), Some("Target.TEST"), share);
    let (key, got) = authenticate(&policy(), &server, &hello, now).unwrap();
    assert_eq!(key.0, hex::<32>(AUTH_KEY));
    assert_eq!(got, auth());

    let other = PrivateKey::from_random([7; 32]);
    let hello = sealed_hello(&other.public_key(), Some("target.test"), share);
    assert_eq!(
        authenticate(&policy(), &server, &hello, now).unwrap_err(),
        Refusal::Unauthenticated
    );
    let hello = sealed_hello(&server.public_key(), Some("other.test"), share);
    assert_eq!(
        authenticate(&policy(), &server, &hello, now).unwrap_err(),
        Refusal::ServerName(Some("other.test".into()))
    );
    let hello = sealed_hello(&server.public_key(), None, share);
    assert_eq!(
        authenticate(&policy(), &server, &hello, now).unwrap_err(),
        Refusal::ServerName(None)
    );
    let mut no_sni = policy();
    no_sni.server_names.insert(String::new());
    let hello = sealed_hello(&server.public_key(), None, share);
    assert!(
        authenticate(&no_sni, &server, &hello, now).is_ok(),
        "\"\" accepts no SNI"
    );
    let hello = sealed_hello(&server.public_key(), Some("target.test"), [0; 32]);
    assert_eq!(
        authenticate(&policy(), &server, &hello, now).unwrap_err(),
        Refusal::NoX25519
    );
    let late = now + 61_000;
    let hello = sealed_hello(&server.public_key(), Some("target.test"), share);
    assert_eq!(
        authenticate(&policy(), &server, &hello, late).unwrap_err(),
        Refusal::Clock(61_500)
    );
}

#[test]
fn a_replay_is_refused_for_at_least_twice_the_allowed_difference() {
    let mut f = ReplayFilter::new(1000, 0);
    let (a, b) = ([1; 32], [2; 32]);
    assert!(f.first_time(&a, 0));
    assert!(!f.first_time(&a, 10));
    assert!(f.first_time(&b, 1999));
    assert!(
        !f.first_time(&a, 2000),
        "a new generation keeps the last one"
    );
    assert!(!f.first_time(&b, 3998));
    assert!(f.first_time(&a, 4000), "forgotten after two periods");
    assert!(
        f.first_time(&b, 4001),
        "seen at 1999: remembered one period at least"
    );
    assert!(!f.first_time(&b, 5000));
    assert!(f.first_time(&b, 10_000), "a long pause forgets everything");
    let mut unchecked = ReplayFilter::new(0, 0);
    assert!(unchecked.first_time(&a, 0));
    let memory = REPLAY_MEMORY_UNCHECKED_MS as i64;
    assert!(!unchecked.first_time(&a, memory - 1));
    assert!(!unchecked.first_time(&a, 2 * memory - 1));
    unchecked.set_max_time_diff(1);
    assert!(unchecked.first_time(&a, 2 * memory + 10));
}

#[test]
fn a_full_generation_starts_the_next() {
    let mut f = ReplayFilter::new(60_000, 0);
    for i in 0..REPLAY_CAPACITY as u32 {
        let mut r = [0u8; 32];
        r[..4].copy_from_slice(&i.to_be_bytes());
        assert!(f.first_time(&r, 1));
    }
    assert_eq!(f.current.len(), REPLAY_CAPACITY);
    assert!(f.first_time(&[0xff; 32], 2));
    assert_eq!((f.previous.len(), f.current.len()), (REPLAY_CAPACITY, 1));
    assert!(
        !f.first_time(&[0; 32], 3),
        "the full generation is still remembered"
    );
}

/// A ClientHello the real Xray 24.11.21 client (`fingerprint: chrome`, short id
/// `0123abcd`) sent to a node whose private key is below, recorded in the node's
/// tests at Unix time 1,796,173,586.
const XRAY_HELLO: &str = include_str!("testdata/xray-24.11.21-client-hello.hex");
const XRAY_HELLO_SERVER_KEY: &str = "6AYx0cfz9vfV_gh2XZrGM_TkhYEnIiETKYIuD-EuJ3k";
const XRAY_HELLO_AT_MS: i64 = 1_796_173_586_000;

#[test]
fn a_real_xray_hello_authenticates() {
    let text = XRAY_HELLO.trim();
    let wire: Vec<u8> = (0..text.len() / 2)
        .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let (hello, used) = client_hello::parse(&wire).unwrap().unwrap();
    assert_eq!(used, wire.len());
    assert_eq!(hello.server_name.as_deref(), Some("target.test"));
    assert!(hello.offers_tls13);
    assert_eq!(
        SessionCipher::for_suites(&hello.cipher_suites),
        SessionCipher::AesGcm
    );
    let key = PrivateKey::parse(XRAY_HELLO_SERVER_KEY).unwrap();
    let (_, got) = authenticate(&policy(), &key, &hello, XRAY_HELLO_AT_MS).unwrap();
    assert_eq!(got.version, ClientVersion([24, 11, 21]));
    assert_eq!(got.short_id, ShortId::parse("0123abcd").unwrap());
    let skew = XRAY_HELLO_AT_MS - i64::from(got.unix_time) * 1000;
    assert!(
        (0..5_000).contains(&skew),
        "sent {skew} ms before it was recorded"
    );
    let other = PrivateKey::from_random([1; 32]);
    assert_eq!(
        authenticate(&policy(), &other, &hello, XRAY_HELLO_AT_MS),
        Err(Refusal::Unauthenticated)
    );
}
