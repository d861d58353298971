//! XTLS Vision blocks from arbitrary bytes, fed in arbitrary pieces: no panic, the
//! content handed out is never longer than the input, a stream ended stays ended;
//! and whatever a padder writes from the same bytes reads back to them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_proto::vision::{Filter, Padder, Status, Unpadder};

const UUID: [u8; 16] = *b"fuzz-vision-uuid";

fuzz_target!(|data: &[u8]| {
    let (cuts, bytes) = data.split_at(data.len().min(4));
    let step = usize::from(cuts.first().copied().unwrap_or(1)).max(1);
    // Arbitrary bytes as a peer's blocks, with and without the right UUID first.
    for prefix in [&UUID[..], &[][..]] {
        let stream = [prefix, bytes].concat();
        let mut reader = Unpadder::new(UUID);
        let mut out = Vec::new();
        let mut ended = false;
        for piece in stream.chunks(step) {
            match reader.push(piece, &mut out) {
                Ok(Status::Blocks) => assert!(!ended, "an ended stream went back to blocks"),
                Ok(_) => ended = true,
                Err(_) => break,
            }
        }
        assert!(out.len() <= stream.len());
    }
    // Our own blocks of the same bytes read back to them, whatever the writes' sizes.
    let mut filter = Filter::default();
    let mut padder = Padder::new(UUID);
    let mut wire = Vec::new();
    let mut draw = cuts.get(1).copied().unwrap_or(0) as u32;
    let mut random = |n: u32| {
        draw = draw.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        draw % n
    };
    let write = usize::from(cuts.get(2).copied().unwrap_or(200)) * 64 + 1;
    for piece in bytes.chunks(write) {
        padder.write(&mut filter, piece, &mut wire, &mut random);
    }
    let mut reader = Unpadder::new(UUID);
    let mut back = Vec::new();
    for piece in wire.chunks(step) {
        reader
            .push(piece, &mut back)
            .expect("our own blocks read back");
    }
    assert_eq!(back, bytes);
});
