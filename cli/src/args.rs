//! The command line of `rasdf` (and `asdf-explode`, `asdf-implode`): argument parsing
//! over the library functions of this crate. [`main`] returns the exit code.

use std::path::PathBuf;

use crate::Outcome;
use crate::rewrite::{self, rewrite_with};
use clap::{Parser, Subcommand};
use rasdf::write::ArrayStorage;
use rasdf::{AsdfFile, OpenOptions};

/// The command line.
#[derive(Parser)]
#[command(name = "rasdf", version, about = "Check, inspect and convert ASDF files")]
struct Args {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    limits: LimitArgs,
}

/// Limits on what an input may make rasdf read or allocate (rasdf::Limits); each
/// defaults to the library's.
#[derive(clap::Args, Default)]
struct LimitArgs {
    /// Largest YAML tree to read, in bytes (default 1 GiB).
    #[arg(long, global = true, value_name = "BYTES")]
    max_tree_bytes: Option<u64>,
    /// Most nodes in the tree (default 100 000 000).
    #[arg(long, global = true, value_name = "N")]
    max_nodes: Option<usize>,
    /// Largest decoded block, in bytes (default 64 GiB).
    #[arg(long, global = true, value_name = "BYTES")]
    max_block_bytes: Option<u64>,
    /// Most elements in one array (default 2^40).
    #[arg(long, global = true, value_name = "N")]
    max_array_elements: Option<u64>,
}

impl LimitArgs {
    fn limits(&self) -> rasdf::Limits {
        let d = rasdf::Limits::default();
        rasdf::Limits {
            max_tree_bytes: self.max_tree_bytes.unwrap_or(d.max_tree_bytes),
            max_nodes: self.max_nodes.unwrap_or(d.max_nodes),
            max_block_bytes: self.max_block_bytes.unwrap_or(d.max_block_bytes),
            max_array_elements: self.max_array_elements.unwrap_or(d.max_array_elements),
            ..d
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Walk and decode every block, verify checksums and the block index, check that
    /// every array reads and validate the tree against the standard's schemas (also
    /// `rasdf validate`, as asdftool names it).
    #[command(alias = "validate")]
    Check {
        /// The ASDF file.
        file: PathBuf,
    },
    /// Show the tree, with arrays' shape, datatype and storage.
    Info {
        /// The ASDF file.
        file: PathBuf,
        /// Most lines of the tree to show (all if not given); the shallowest nodes are
        /// kept, as asdftool info keeps them.
        #[arg(long)]
        max_rows: Option<usize>,
        /// Cut longer lines to this many characters (never if not given).
        #[arg(long)]
        max_cols: Option<usize>,
        /// Show scalar values (the default).
        #[arg(long, overrides_with = "no_show_values")]
        show_values: bool,
        /// Do not show scalar values.
        #[arg(long, overrides_with = "show_values")]
        no_show_values: bool,
        /// Also print each block's header as a table.
        #[arg(long)]
        show_blocks: bool,
        /// Also read every array and show its min, max, mean and NaN count.
        #[arg(long)]
        stats: bool,
    },
    /// Rewrite the file with every array in a block of its own file, optionally
    /// compressed (like asdftool defragment).
    Defragment {
        /// The ASDF file.
        file: PathBuf,
        /// Output file.
        #[arg(short, long)]
        output: PathBuf,
        /// Compress every block.
        #[arg(short, long, value_parser = ["zlib", "bzp2", "lz4", "none"])]
        compress: Option<String>,
        /// Write only what each view shows, not its whole base array.
        #[arg(long)]
        views_only: bool,
    },
    /// Split the file: every array in a file of its own beside the output (like
    /// asdftool explode).
    #[command(mut_arg("output", |a| a.help(EXPLODE_OUTPUT)))]
    Explode(FileArgs),
    /// Join an exploded file: every array back in a block of one file (like asdftool
    /// implode).
    #[command(mut_arg("output", |a| a.help(IMPLODE_OUTPUT)))]
    Implode(FileArgs),
    /// Convert between ASDF and RawArray (.ra, one array), GSD (.gsd, frames of chunks)
    /// or Blosc2 b2nd (.b2nd, one array): the input's format is told by its first
    /// bytes, the output's by its extension.
    Convert {
        /// The input file (ASDF, RawArray, GSD or b2nd).
        input: PathBuf,
        /// The output file: `.asdf`, `.ra`, `.gsd` or `.b2nd`.
        output: PathBuf,
        /// From ASDF to RawArray or b2nd: the tree path of the array (needed when there
        /// are several). From RawArray or b2nd: where to put it (default: data).
        #[arg(long)]
        array: Option<String>,
        /// To ASDF: compress the blocks (zlib, bzp2, lz4, none). To b2nd: the chunks'
        /// codec (zstd, the default, lz4, zlib, none).
        #[arg(short, long, value_parser = ["zlib", "bzp2", "lz4", "zstd", "none"])]
        compress: Option<String>,
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

/// The arguments of `explode` and `implode`, which are also the command lines of
/// `asdf-explode` and `asdf-implode`.
#[derive(Parser)]
struct FileArgs {
    /// The ASDF file.
    file: PathBuf,
    /// Output file.
    #[arg(short, long)]
    output: Option<PathBuf>,
}

const EXPLODE_OUTPUT: &str = "Output file (default: FILE_exploded.asdf)";
const IMPLODE_OUTPUT: &str = "Output file (default: FILE_all.asdf)";

/// Opens the input, or tells why it cannot be opened: exit 2 for a path that names no
/// readable regular file (missing, a folder, no permission), 1 for a damaged file.
fn open(file: &std::path::Path, options: &OpenOptions) -> Result<AsdfFile, u8> {
    if !crate::remote::is_url(file) {
        readable(file)?;
    }
    crate::remote::open(file, options).map_err(|e| {
        say(&e);
        match e.kind() {
            rasdf::ErrorKind::Io(_) => Outcome::Unopened.code(),
            _ => Outcome::Failed.code(),
        }
    })
}

/// `Err(2)`, with a message, unless `file` opens for reading as a regular file.
fn readable(file: &std::path::Path) -> Result<(), u8> {
    match rasdf::file::open_regular(file) {
        Ok(_) => Ok(()),
        Err(e) => {
            eprintln!("rasdf: {}: cannot be opened: {e}", file.display());
            Err(Outcome::Unopened.code())
        }
    }
}

fn run(args: Args, out: &mut impl std::io::Write) -> Result<Outcome, u8> {
    let io = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            0
        } else {
            eprintln!("rasdf: {e}");
            Outcome::Failed.code()
        }
    };
    let limits = args.limits.limits();
    let options = OpenOptions::new().limits(limits).remote(crate::remote::options_from_env());
    match args.command {
        Command::Check { file } => crate::check::run(&file, &options, out).map_err(io),
        Command::Info { file, max_rows, max_cols, show_values: _, no_show_values, show_blocks, stats } => {
            let f = open(&file, &options)?;
            let options =
                crate::info::InfoOptions { max_rows, max_cols, show_values: !no_show_values, show_blocks, stats };
            let outcome = crate::info::report(&f, &options, out).map_err(io);
            release(f);
            outcome
        }
        Command::Defragment { file, output, compress, views_only } => {
            readable(&file)?;
            let compression = compress.as_deref().and_then(rasdf::block::Compression::from_name);
            report(rewrite_with(&options, &file, &output, ArrayStorage::Internal, compression, views_only))
        }
        Command::Explode(FileArgs { file, output }) => {
            readable(&file)?;
            let output = output.unwrap_or_else(|| rewrite::default_output(&file, "_exploded"));
            report(rewrite_with(&options, &file, &output, ArrayStorage::External, None, false))
        }
        Command::Implode(FileArgs { file, output }) => {
            readable(&file)?;
            let output = output.unwrap_or_else(|| rewrite::default_output(&file, "_all"));
            report(rewrite_with(&options, &file, &output, ArrayStorage::Internal, None, false))
        }
        Command::Convert { input, output, array, compress } => {
            let remote = crate::remote::is_url(&input);
            if !remote {
                readable(&input)?;
            }
            use rasdf_convert::{Format, b2nd::BloscCodec};
            let to_b2nd = Format::from_extension(&output) == Some(Format::B2nd);
            let name = compress.as_deref().unwrap_or(if to_b2nd { "zstd" } else { "none" });
            let (compression, blosc_codec) = match to_b2nd {
                true => (rasdf::block::Compression::None, BloscCodec::from_name(name)),
                false => (rasdf::block::Compression::from_name(name).unwrap_or(rasdf::block::Compression::None), None),
            };
            let blosc_codec = match (to_b2nd, blosc_codec) {
                (true, None) => {
                    eprintln!("rasdf: -c {name}: b2nd chunks are zstd, lz4, zlib or none");
                    return Err(2);
                }
                (false, _) if name == "zstd" => {
                    eprintln!("rasdf: -c zstd: ASDF blocks are zlib, bzp2, lz4 or none");
                    return Err(2);
                }
                (_, codec) => codec.unwrap_or(BloscCodec::Zstd),
            };
            let options = rasdf_convert::ConvertOptions { array, compression, blosc_codec, limits };
            let mut warn = |w: String| eprintln!("rasdf: warning: {w}");
            if remote {
                // A remote input is ASDF (the other formats are read from local files).
                let f = open(&input, &OpenOptions::new().limits(limits).remote(crate::remote::options_from_env()))?;
                return report(rasdf_convert::convert_asdf_file(&f, &output, &options, &mut warn));
            }
            report(rasdf_convert::convert_with_warnings(&input, &output, &options, &mut warn))
        }
        Command::ToYaml { file, output } => {
            let f = open(&file, &options)?;
            // A URL's YAML goes to the current folder, named after the URL's last part.
            let output = output.unwrap_or_else(|| match crate::remote::is_url(&file) {
                true => PathBuf::from(file.file_name().unwrap_or(file.as_os_str())).with_extension("yaml"),
                false => file.with_extension("yaml"),
            });
            match crate::to_yaml::write(&f, &output) {
                Ok(()) => Ok(Outcome::Ok),
                Err(e) => {
                    say(&e);
                    Ok(Outcome::Failed)
                }
            }
        }
    }
}

/// Prints an error on standard error, with the option that raises a limit it hit.
fn say(e: &(impl MaybeUsage + ?Sized)) {
    eprintln!("rasdf: {e}");
    if let Some(what) = e.limit() {
        let option = format!("--{}", what.replace('_', "-"));
        let known = ["--max-tree-bytes", "--max-nodes", "--max-block-bytes", "--max-array-elements"];
        if known.contains(&option.as_str()) {
            eprintln!("rasdf: a file you trust may raise the limit with {option}");
        }
    }
}

/// An error that may be the caller's (exit code 2) rather than the input's.
trait MaybeUsage: std::fmt::Display {
    fn is_usage(&self) -> bool;
    /// The `Limits` field the error hit, if it is a limit.
    fn limit(&self) -> Option<&'static str>;
}

impl MaybeUsage for rasdf::Error {
    fn is_usage(&self) -> bool {
        matches!(self.kind(), rasdf::ErrorKind::Usage(_))
    }
    fn limit(&self) -> Option<&'static str> {
        match self.kind() {
            rasdf::ErrorKind::Limit(l) => Some(l.what),
            _ => None,
        }
    }
}

impl MaybeUsage for rasdf_convert::Error {
    fn is_usage(&self) -> bool {
        rasdf_convert::Error::is_usage(self)
    }
    fn limit(&self) -> Option<&'static str> {
        match self {
            rasdf_convert::Error::Asdf(e) => e.limit(),
            _ => None,
        }
    }
}

/// The outcome of a command that reads and writes: a usage error (arguments that cannot
/// go together, such as an output that would replace the input's own file) exits with 2.
fn report(result: Result<(), impl MaybeUsage>) -> Result<Outcome, u8> {
    match result {
        Ok(()) => Ok(Outcome::Ok),
        Err(e) => {
            say(&e);
            if e.is_usage() { Err(2) } else { Ok(Outcome::Failed) }
        }
    }
}

/// A subcommand that is also a program of its own.
struct Standalone {
    name: &'static str,
    about: &'static str,
    output_help: &'static str,
    command: fn(FileArgs) -> Command,
}

const STANDALONE: [Standalone; 2] = [
    Standalone {
        name: "asdf-explode",
        about: "Split an ASDF file: every array in a file of its own beside the output (like asdftool explode)",
        output_help: EXPLODE_OUTPUT,
        command: Command::Explode,
    },
    Standalone {
        name: "asdf-implode",
        about: "Join an exploded ASDF file: every array back in a block of one file (like asdftool implode)",
        output_help: IMPLODE_OUTPUT,
        command: Command::Implode,
    },
];

/// The arguments of a [`Standalone`] program (which also has `--version`).
fn standalone(argv: Vec<std::ffi::OsString>, tool: &Standalone) -> Result<FileArgs, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let mut command = FileArgs::command()
        .name(tool.name)
        .bin_name(tool.name)
        .about(tool.about)
        .version(env!("CARGO_PKG_VERSION"))
        .mut_arg("output", |a| a.help(tool.output_help));
    let matches = command.try_get_matches_from_mut(argv)?;
    FileArgs::from_arg_matches(&matches).map_err(|e| e.format(&mut command))
}

/// The `main` of the binaries: the process's arguments, standard output, exit code.
/// Panics inside the YAML parser are turned into errors (with their location), so the
/// panic hook stays quiet about them; any other panic is reported as usual.
pub fn process_main() -> std::process::ExitCode {
    rasdf::fuzzing::install_panic_filter();
    ENDS_PROCESS.store(true, std::sync::atomic::Ordering::Relaxed);
    // Reports are written in blocks, not a system call per line (standard output is
    // line-buffered); flushed before the process ends.
    let mut stdout = std::io::BufWriter::with_capacity(64 << 10, std::io::stdout().lock());
    let code = main(std::env::args_os().collect(), &mut stdout);
    // Also what the argument parser printed on its own (help, version).
    let flushed = std::io::Write::flush(&mut stdout);
    drop(stdout);
    if let Err(e) = flushed.and_then(|()| std::io::Write::flush(&mut std::io::stdout()))
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        eprintln!("rasdf: writing the report: {e}");
        return std::process::ExitCode::from(1);
    }
    end_process(code)
}

/// Set by [`process_main`]: the command runs in a process that ends when it returns, so
/// its big structures need not be freed one allocation at a time.
static ENDS_PROCESS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Drops `x`, or when the process is about to end anyway, leaves its memory to the
/// operating system (a tree of 200 000 nodes takes milliseconds to free).
fn release<T>(x: T) {
    if ENDS_PROCESS.load(std::sync::atomic::Ordering::Relaxed) {
        std::mem::forget(x);
    }
}

/// Ends the process with `code` once the report is flushed. On Unix without the C
/// library's exit handlers: the allocator would otherwise walk and return all of its
/// memory first, which the kernel does at once.
#[cfg(unix)]
fn end_process(code: u8) -> std::process::ExitCode {
    // SAFETY: `_exit` ends the process at once; standard output and every file written
    // are flushed or closed before this point (files by their owners, the report above),
    // and nothing else needs to run at exit.
    unsafe { libc::_exit(i32::from(code)) }
}

#[cfg(not(unix))]
fn end_process(code: u8) -> std::process::ExitCode {
    std::process::ExitCode::from(code)
}

/// Runs the command line `argv` (program name first), writing reports to `out`;
/// returns the exit code: 0 ok, 1 error, 2 usage. Called as `asdf-explode` or
/// `asdf-implode`, the program name picks the subcommand.
pub fn main(argv: Vec<std::ffi::OsString>, out: &mut impl std::io::Write) -> u8 {
    // `asdf-explode` and `asdf-implode` are their subcommand's own command line (so
    // their usage and help name them, not `rasdf explode`).
    let name = argv.first().and_then(|a| PathBuf::from(a).file_stem().map(|s| s.to_string_lossy().into_owned()));
    let tool = STANDALONE.iter().find(|t| name.as_deref() == Some(t.name));
    let parsed = match tool {
        Some(tool) => standalone(argv, tool).map(|a| Args { command: (tool.command)(a), limits: LimitArgs::default() }),
        None => Args::try_parse_from(argv),
    };
    let args = match parsed {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match run(args, out) {
        Ok(outcome) => outcome.code(),
        Err(code) => code,
    }
}
