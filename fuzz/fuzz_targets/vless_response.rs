//! The client reading a VLESS server's answer: the response header (version, addons)
//! taken off the stream, in any split of the bytes. No panic; what comes out is the
//! input after the header, or an error for a bad version.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_client::outbound::VlessResponse;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fuzz_target!(|data: &[u8]| {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let (a, mut b) = tokio::io::duplex(64);
        let input = data.to_vec();
        let writer = async move {
            for chunk in input.chunks(7) {
                if b.write_all(chunk).await.is_err() {
                    return;
                }
            }
        };
        let reader = async move {
            let mut out = Vec::new();
            let r = VlessResponse::new(a).read_to_end(&mut out).await;
            (r, out)
        };
        let ((), (r, out)) = tokio::join!(writer, reader);
        if r.is_ok() {
            if data.len() >= 2 && data[0] == 0 && data.len() >= 2 + usize::from(data[1]) {
                assert_eq!(out, data[2 + usize::from(data[1])..]);
            }
        }
    });
});
