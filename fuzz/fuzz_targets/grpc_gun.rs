//! gRPC gun/multi bytes, fed in arbitrary pieces: no panic, every call takes bytes,
//! and the payload given back is a slice of what was taken.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_proto::grpc::Decoder;

fuzz_target!(|data: &[u8]| {
    // The first byte chooses the piece size, the rest is the stream.
    let Some((&step, stream)) = data.split_first() else {
        return;
    };
    let mut d = Decoder::new();
    for piece in stream.chunks(usize::from(step).max(1)) {
        let mut rest = piece;
        while !rest.is_empty() {
            match d.feed(rest) {
                Ok((taken, payload)) => {
                    assert!(taken > 0 && taken <= rest.len());
                    assert!(payload.len() <= taken);
                    rest = &rest[taken..];
                }
                Err(_) => return,
            }
        }
    }
});
