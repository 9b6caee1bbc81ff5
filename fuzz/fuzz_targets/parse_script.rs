//! Coverage-guided fuzzing of the script parser: the property of `crates/recman-lang/tests/fuzz.rs`
//! with libFuzzer choosing the inputs. Nothing may panic, and whatever parses must print to a
//! canonical form that parses and prints back to itself.

#![no_main]

use libfuzzer_sys::fuzz_target;
use recman_lang::{is_complete, parse_script};

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let _ = is_complete(src);
    if let Ok(script) = parse_script(src) {
        let canon = script.to_string();
        let again = parse_script(&canon).unwrap_or_else(|e| {
            panic!("canonical form does not parse\nsource: {src:?}\ncanon: {canon}\n{e}")
        });
        assert_eq!(again.to_string(), canon, "unstable print for {src:?}");
    }
});
