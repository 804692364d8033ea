//! `asdf-explode IN [-o OUT]`: every array of IN in a file of its own beside OUT.

/// mimalloc, as in `rasdf`.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    rasdf::cli::args::process_main()
}
