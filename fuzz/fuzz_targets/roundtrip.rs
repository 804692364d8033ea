#![no_main]
//! Fuzz target `roundtrip`: see `rasdf::fuzzing::run`.
libfuzzer_sys::fuzz_target!(init: rasdf::fuzzing::install_panic_filter(), |data: &[u8]| rasdf::fuzzing::run("roundtrip", data));
