//! `asdf-implode IN [-o OUT]`: every array of an exploded file back in one file.

/// mimalloc, as in `rasdf`.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    rasdf::cli::args::process_main()
}
