#![no_main]
//! Fuzz target `block_walk`: see `rasdf::fuzzing::run`.
libfuzzer_sys::fuzz_target!(init: rasdf::fuzzing::install_panic_filter(), |data: &[u8]| rasdf::fuzzing::run("block_walk", data));
