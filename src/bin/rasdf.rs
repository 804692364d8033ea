//! `rasdf`: check, inspect and convert ASDF files.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use rasdf::cli::{self, Outcome};
use rasdf::{AsdfFile, OpenOptions};

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
    /// Show the tree, with arrays' shape, datatype and storage.
    Info {
        /// The ASDF file.
        file: PathBuf,
        /// Most tree lines to show (0: all).
        #[arg(long, default_value_t = 24)]
        max_rows: usize,
        /// Cut lines at this many characters (0: never).
        #[arg(long, default_value_t = 120)]
        max_cols: usize,
        /// Do not show scalar values.
        #[arg(long)]
        no_show_values: bool,
        /// Also read every array and show its min, max, mean and NaN count.
        #[arg(long)]
        stats: bool,
    },
    /// Write the file as YAML only, every array inline (like asdftool to_yaml).
    ToYaml {
        /// The ASDF file.
        file: PathBuf,
        /// Output file (default: FILE with the extension .yaml).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
}

fn open(file: &PathBuf) -> Result<AsdfFile, ExitCode> {
    OpenOptions::new().open(file).map_err(|e| {
        eprintln!("rasdf: {e}");
        ExitCode::from(Outcome::Failed.code())
    })
}

fn run(args: Args, out: &mut impl std::io::Write) -> Result<Outcome, ExitCode> {
    let io = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            ExitCode::SUCCESS
        } else {
            eprintln!("rasdf: {e}");
            ExitCode::from(Outcome::Failed.code())
        }
    };
    match args.command {
        Command::Check { file } => cli::check::run(&file, &OpenOptions::new(), out).map_err(io),
        Command::Info { file, max_rows, max_cols, no_show_values, stats } => {
            let f = open(&file)?;
            let options = cli::info::InfoOptions {
                max_rows: (max_rows > 0).then_some(max_rows),
                max_cols: (max_cols > 0).then_some(max_cols),
                show_values: !no_show_values,
                stats,
            };
            cli::info::report(&f, &options, out).map_err(io)
        }
        Command::ToYaml { file, output } => {
            let f = open(&file)?;
            let output = output.unwrap_or_else(|| file.with_extension("yaml"));
            match cli::to_yaml::write(&f, &output) {
                Ok(()) => Ok(Outcome::Ok),
                Err(e) => {
                    eprintln!("rasdf: {e}");
                    Ok(Outcome::Failed)
                }
            }
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match run(args, &mut out) {
        Ok(outcome) => ExitCode::from(outcome.code()),
        Err(code) => code,
    }
}
