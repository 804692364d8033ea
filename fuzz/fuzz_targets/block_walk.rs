#![no_main]
//! Fuzz target `block_walk`: see `rasdf::fuzzing::run`.
libfuzzer_sys::fuzz_target!(
    init: {
        // rasdf turns panics inside the YAML parser into errors; only other panics are crashes.
        let abort = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !rasdf::tree::panic_is_from_yaml_parser(info) {
                abort(info);
            }
        }));
    },
    |data: &[u8]| rasdf::fuzzing::run("block_walk", data)
);
