#![no_main]
//! Fuzz target `header`: see `rasdf::fuzzing::run`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| rasdf::fuzzing::run("header", data));
