//! The first bytes of a connection to a REALITY inbound, as the node reads them: no
//! panic, bounded work; a hello that reads has its records within the input and its
//! message within the bound, and every prefix of its records waits for more; its
//! REALITY auth is checked with a fixed key (nothing random can pass it).
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_proto::client_hello::{self, MAX_MESSAGE};
use switchyard_proto::reality::{self, Policy, PrivateKey, ShortId};

fuzz_target!(|data: &[u8]| {
    let Ok(Some((hello, used))) = client_hello::parse(data) else {
        return;
    };
    assert!(used <= data.len());
    assert!(hello.message.len() <= MAX_MESSAGE);
    assert!(hello.session_id.len() <= 32);
    assert_eq!(client_hello::parse(&data[..used - 1]), Ok(None));
    let policy = Policy {
        server_names: [String::new(), "target.test".to_owned()].into(),
        short_ids: [ShortId([0; 8])].into(),
        max_time_diff_ms: 60_000,
        min_client_version: None,
        max_client_version: None,
    };
    let key = PrivateKey::from_random([0x42; 32]);
    assert!(reality::authenticate(&policy, &key, &hello, 1_700_000_000_000).is_err());
});
