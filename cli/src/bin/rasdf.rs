//! `rasdf`: check, inspect and convert ASDF files.

mod shared;

fn main() -> std::process::ExitCode {
    shared::setup();
    rasdf_cli::args::process_main()
}
