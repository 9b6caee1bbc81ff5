//! The key envelope: the key record `recman.key` on arbitrary bytes is parsed and its
//! key-encryption keys unwrapped with a fixed master key. Errors only, never a panic; a record
//! that unwraps must serialize and parse back to itself, and only the right master key may
//! unwrap it (a record's keys are authenticated).

#![no_main]

use libfuzzer_sys::fuzz_target;
use recman_wire::keyrecord::{UnwrapError, parse, unwrap};

const MASTER: [u8; 32] = [7; 32];

fuzz_target!(|data: &[u8]| {
    let Ok(rec) = parse(data) else {
        return;
    };
    let text = serde_json::to_vec(&rec).unwrap();
    assert_eq!(parse(&text).unwrap(), rec);
    if let Ok(k) = unwrap(&rec, &MASTER) {
        assert!(k.keks.iter().any(|(id, _)| *id == k.current));
        // A wrong master key never opens a record with keys.
        let wrong = unwrap(&rec, &[8; 32]);
        assert!(
            k.keks.is_empty()
                || matches!(wrong, Err(UnwrapError::WrongKey | UnwrapError::Damaged(_))),
            "another master key unwrapped the record"
        );
    }
});
