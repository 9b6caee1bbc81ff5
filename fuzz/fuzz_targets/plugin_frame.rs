//! The plugin wire decoder on arbitrary bytes, as a plugin's stdout: frames are read until one
//! fails, each reply header parsed. Errors only, never a panic, and no allocation beyond the
//! limits (the header limit, the agreed max_frame) whatever a length claims. A frame written
//! by `write_frame` reads back whole.

#![no_main]

use libfuzzer_sys::fuzz_target;
use recman_wire::frame::{read_frame, reply_header, write_frame};

const MAX_FRAME: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let mut r = data;
    while let Ok((head, payload)) = read_frame(&mut r, MAX_FRAME) {
        assert!(payload.len() <= MAX_FRAME);
        let _ = reply_header(&head);
    }
    let (head, payload) = data.split_at(data.len().min(64));
    let mut out = Vec::new();
    write_frame(&mut out, head, payload).unwrap();
    let (h, p) = read_frame(&mut &out[..], MAX_FRAME)
        .unwrap_or_else(|_| panic!("a written frame does not read back"));
    assert_eq!((&h[..], &p[..]), (head, payload));
});
