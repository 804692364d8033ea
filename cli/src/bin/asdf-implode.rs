//! `asdf-implode IN [-o OUT]`: every array of an exploded file back in one file.

mod shared;

fn main() -> std::process::ExitCode {
    shared::setup();
    rasdf_cli::args::process_main()
}
