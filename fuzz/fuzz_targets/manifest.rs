//! The manifest parser on arbitrary bytes: the sealed reader (checksum member, then JSON) must
//! return an error, never panic. Whatever parses as a manifest must seal and read back to the
//! same value. The JSON is also parsed unsealed, so the fuzzer reaches the manifest's fields
//! without having to forge a CRC.

#![no_main]

use libfuzzer_sys::fuzz_target;
use recman_format::manifest::BackupManifest;
use recman_format::seal::{read_sealed, write_sealed};

fuzz_target!(|data: &[u8]| {
    let sealed = read_sealed::<BackupManifest>(data);
    let plain = serde_json::from_slice::<BackupManifest>(data);
    for m in [sealed.ok(), plain.ok()].into_iter().flatten() {
        let mut out = Vec::new();
        write_sealed(&mut out, &m).expect("a parsed manifest seals");
        let back: BackupManifest = read_sealed(&out).expect("a sealed manifest reads back");
        assert_eq!(back, m);
    }
});
