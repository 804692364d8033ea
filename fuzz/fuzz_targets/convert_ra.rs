#![no_main]
//! Fuzz target `convert_ra`: see `rasdf_cli::fuzzing::convert_ra`.
libfuzzer_sys::fuzz_target!(init: rasdf_cli::fuzzing::install_panic_filter(), |data: &[u8]| rasdf_cli::fuzzing::run("convert_ra", data));
