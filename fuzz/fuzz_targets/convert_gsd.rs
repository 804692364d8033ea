#![no_main]
//! Fuzz target `convert_gsd`: see `rasdf_cli::fuzzing::convert_gsd`.
libfuzzer_sys::fuzz_target!(init: rasdf_cli::fuzzing::install_panic_filter(), |data: &[u8]| rasdf_cli::fuzzing::run("convert_gsd", data));
