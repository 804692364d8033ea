//! `rasdf`: check, inspect and convert ASDF files.

fn main() -> std::process::ExitCode {
    let stdout = std::io::stdout();
    std::process::ExitCode::from(rasdf::cli::args::main(std::env::args_os().collect(), &mut stdout.lock()))
}
