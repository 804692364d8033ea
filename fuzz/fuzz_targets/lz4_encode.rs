#![no_main]
//! Fuzz target `lz4_encode`: see `rasdf_cli::fuzzing::run`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| rasdf_cli::fuzzing::run("lz4_encode", data));
