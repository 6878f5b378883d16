//! cargo-fuzz target: arbitrary bytes through parse → layout → link
//! (`um_module::fuzzing::exercise`). Nothing may panic.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = um_module::fuzzing::exercise(data);
});
