#![no_main]
//! Fuzz target `open_all`: see `rasdf::fuzzing::run`.
libfuzzer_sys::fuzz_target!(init: rasdf::fuzzing::install_panic_filter(), |data: &[u8]| rasdf::fuzzing::run("open_all", data));
