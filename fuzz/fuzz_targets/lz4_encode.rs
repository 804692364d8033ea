#![no_main]
//! Fuzz target `lz4_encode`: see `rasdf::fuzzing::run`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| rasdf::fuzzing::run("lz4_encode", data));
