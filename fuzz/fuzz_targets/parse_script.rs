//! Coverage-guided fuzzing of the script parser: the property of `crates/recman-lang/tests/fuzz.rs`
//! with libFuzzer choosing the inputs. Nothing may panic, and whatever parses must print to a
//! canonical form that parses back to the same statements (`parse(print(ast)) == ast`, where
//! each statement starts aside).

#![no_main]

use libfuzzer_sys::fuzz_target;
use recman_lang::check_round_trip;

fuzz_target!(|data: &[u8]| {
    if let Ok(src) = std::str::from_utf8(data)
        && let Err(e) = check_round_trip(src)
    {
        panic!("{e}");
    }
});
