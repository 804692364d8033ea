#![no_main]
//! Fuzz target `convert_ra`: see `rasdf::fuzzing::convert_ra`.
libfuzzer_sys::fuzz_target!(init: rasdf::fuzzing::install_panic_filter(), |data: &[u8]| rasdf::fuzzing::run("convert_ra", data));
