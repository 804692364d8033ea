#![no_main]
//! Fuzz target `index`: see `rasdf::fuzzing::run`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| rasdf::fuzzing::run("index", data));
