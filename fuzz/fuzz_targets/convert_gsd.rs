#![no_main]
//! Fuzz target `convert_gsd`: see `rasdf::fuzzing::convert_gsd`.
libfuzzer_sys::fuzz_target!(init: rasdf::fuzzing::install_panic_filter(), |data: &[u8]| rasdf::fuzzing::run("convert_gsd", data));
