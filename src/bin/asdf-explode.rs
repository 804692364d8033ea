//! `asdf-explode IN [-o OUT]`: every array of IN in a file of its own beside OUT.

fn main() -> std::process::ExitCode {
    let stdout = std::io::stdout();
    std::process::ExitCode::from(rasdf::cli::args::main(std::env::args_os().collect(), &mut stdout.lock()))
}
