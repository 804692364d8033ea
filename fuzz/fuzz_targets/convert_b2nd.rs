#![no_main]
//! Fuzz target `convert_b2nd`: see `rasdf::fuzzing::convert_b2nd`.
libfuzzer_sys::fuzz_target!(init: rasdf::fuzzing::install_panic_filter(), |data: &[u8]| rasdf::fuzzing::run("convert_b2nd", data));
