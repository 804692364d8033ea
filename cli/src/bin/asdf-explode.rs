//! `asdf-explode IN [-o OUT]`: every array of IN in a file of its own beside OUT.

mod shared;

fn main() -> std::process::ExitCode {
    shared::setup();
    rasdf_cli::args::process_main()
}
