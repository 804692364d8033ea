#![no_main]
//! Fuzz target `roundtrip`: see `rasdf::fuzzing::run`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| rasdf::fuzzing::run("roundtrip", data));
