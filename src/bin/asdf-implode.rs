//! `asdf-implode IN [-o OUT]`: every array of an exploded file back in one file.

fn main() -> std::process::ExitCode {
    rasdf::cli::args::process_main()
}
