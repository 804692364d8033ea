#![no_main]
//! Fuzz target `convert_b2nd`: see `rasdf_cli::fuzzing::convert_b2nd`.
libfuzzer_sys::fuzz_target!(init: rasdf_cli::fuzzing::install_panic_filter(), |data: &[u8]| rasdf_cli::fuzzing::run("convert_b2nd", data));
