#![no_main]
//! Fuzz target `codecs`: see `rasdf_cli::fuzzing::run`.
libfuzzer_sys::fuzz_target!(init: rasdf_cli::fuzzing::install_panic_filter(), |data: &[u8]| rasdf_cli::fuzzing::run("codecs", data));
