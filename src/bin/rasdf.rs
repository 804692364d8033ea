//! `rasdf`: check, inspect and convert ASDF files.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use rasdf::OpenOptions;
use rasdf::cli::{self, Outcome};

#[derive(Parser)]
#[command(name = "rasdf", version, about = "Check, inspect and convert ASDF files")]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Walk and decode every block, verify checksums and the block index.
    Check {
        /// The ASDF file.
        file: PathBuf,
    },
}

fn main() -> ExitCode {
    let args = Args::parse();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let result = match args.command {
        Command::Check { file } => cli::check::run(&file, &OpenOptions::new(), &mut out),
    };
    match result {
        Ok(outcome) => ExitCode::from(outcome.code()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rasdf: {e}");
            ExitCode::from(Outcome::Failed.code())
        }
    }
}
