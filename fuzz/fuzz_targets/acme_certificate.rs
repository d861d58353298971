//! A certificate chain and key as an ACME server may hand them to the panel (or as
//! they lie in `DATA_DIR/acme/`): arbitrary bytes split in two, read through the same
//! path the panel takes (rustls-pemfile, rustls, x509-parser). No panic; a chain that
//! passes has an expiry.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let cut = data.first().map_or(0, |b| usize::from(*b)).min(data.len());
    let (cert, key) = data.split_at(cut);
    let _ = switchyard_panel::acme::check_issued(cert, key);
});
