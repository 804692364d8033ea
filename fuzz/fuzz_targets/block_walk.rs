#![no_main]
//! Fuzz target `block_walk`: see `rasdf::fuzzing::run`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| rasdf::fuzzing::run("block_walk", data));
