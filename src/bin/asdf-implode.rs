//! `asdf-implode IN [-o OUT]`: every array of an exploded file back in one file.

fn main() -> std::process::ExitCode {
    // Panics inside the YAML parser are turned into errors (with their location); keep
    // the default message for any other panic.
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !rasdf::tree::panic_is_from_yaml_parser(info) {
            default(info);
        }
    }));
    let stdout = std::io::stdout();
    std::process::ExitCode::from(rasdf::cli::args::main(std::env::args_os().collect(), &mut stdout.lock()))
}
