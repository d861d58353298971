//! An imported panel's subscription token, as any anonymous client sends one to
//! `/sub/{token}`: no panic, and what verifies is what was signed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_panel::import::marzban_token::{issue, verify};
use switchyard_panel::import::pasarguard_token::{self, Subject};

const SECRET: &str = "7a6a6f2bef4d22379a2d4f676461829446a8dbbdb0380d5df4fcaaf218378133";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(t) = verify(text, SECRET) {
        // Only the secret's holder can make one: the short form re-signs the same.
        if !text.starts_with("eyJ") {
            assert_eq!(
                verify(&issue(&t.username, t.issued_s, SECRET), SECRET),
                Some(t)
            );
        }
    }
    // PasarGuard's forms: what verifies names a user, and its 5.x form of the same
    // user and time verifies to the same.
    if let Some(t) = pasarguard_token::verify(text, SECRET)
        && let Subject::Id(id) = t.subject
    {
        assert_eq!(
            pasarguard_token::verify(&pasarguard_token::issue(id, t.issued_s, SECRET), SECRET),
            Some(t)
        );
    }
    // Whatever name and time, a token we issue verifies to them.
    if text.len() <= 64 && !text.contains(',') {
        let t = verify(&issue(text, 1_796_400_000, SECRET), SECRET).unwrap();
        assert_eq!((t.username.as_str(), t.issued_s), (text, 1_796_400_000));
    }
});
