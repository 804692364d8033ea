#![no_main]
//! Fuzz target `block_header`: see `rasdf::fuzzing::run`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| rasdf::fuzzing::run("block_header", data));
