//! `rasdf`: check, inspect and convert ASDF files.

fn main() -> std::process::ExitCode {
    rasdf::cli::args::process_main()
}
