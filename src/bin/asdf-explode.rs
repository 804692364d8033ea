//! `asdf-explode IN [-o OUT]`: every array of IN in a file of its own beside OUT.

fn main() -> std::process::ExitCode {
    rasdf::cli::args::process_main()
}
