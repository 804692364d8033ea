#![no_main]
//! Fuzz target `tree`: see `rasdf::fuzzing::run`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| rasdf::fuzzing::run("tree", data));
