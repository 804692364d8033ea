//! The command line of `rasdf` (and `asdf-explode`, `asdf-implode`): argument parsing
//! over the library functions of this crate. [`main`] returns the exit code.

use std::path::{Path, PathBuf};

use crate::Outcome;
use crate::rewrite::{self, rewrite_with};

/// Prints `rasdf: ` and a message on standard error, its control characters escaped (a
/// message may quote the file: keys, tags, paths; see [`crate::terminal`]).
macro_rules! say_line {
    ($($t:tt)*) => {
        eprintln!("rasdf: {}", crate::terminal::escape(&format!($($t)*)))
    };
}
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
    #[command(flatten)]
    remote: RemoteArgs,
    /// No progress bars (they are drawn on standard error only when it is a terminal).
    #[arg(short, long, global = true)]
    quiet: bool,
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
    /// Largest array whose data is inline in the tree, in bytes (default 256 MiB).
    #[arg(long, global = true, value_name = "BYTES")]
    max_inline_bytes: Option<u64>,
}

impl LimitArgs {
    fn limits(&self) -> rasdf::Limits {
        let d = rasdf::Limits::default();
        d.max_tree_bytes(self.max_tree_bytes.unwrap_or(d.max_tree_bytes))
            .max_nodes(self.max_nodes.unwrap_or(d.max_nodes))
            .max_block_bytes(self.max_block_bytes.unwrap_or(d.max_block_bytes))
            .max_array_elements(self.max_array_elements.unwrap_or(d.max_array_elements))
            .max_inline_bytes(self.max_inline_bytes.unwrap_or(d.max_inline_bytes))
    }
}

/// How inputs given as URLs (http://, https://, s3://) are read.
#[derive(clap::Args, Default)]
struct RemoteArgs {
    /// Seconds a server may stay silent, connecting or sending an answer, before a
    /// remote read fails (default 60); a read that timed out is not retried.
    #[arg(long, global = true, value_name = "SECONDS", value_parser = seconds)]
    timeout: Option<std::time::Duration>,
}

impl RemoteArgs {
    /// The library's options: the environment's S3 settings and this timeout.
    fn options(&self) -> rasdf::remote::RemoteOptions {
        let options = rasdf::remote::RemoteOptions::from_env();
        match self.timeout {
            Some(t) => options.timeout(t),
            None => options,
        }
    }
}

/// A number of seconds above 0 (fractions allowed).
fn seconds(s: &str) -> Result<std::time::Duration, String> {
    let v: f64 = s.trim().parse().map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if v.is_nan() || v <= 0.0 {
        return Err(format!("{s}: the timeout must be above 0"));
    }
    std::time::Duration::try_from_secs_f64(v).map_err(|_| format!("{s}: too long a timeout"))
}

#[derive(Subcommand)]
enum Command {
    /// Walk and decode every block, verify checksums and the block index, check that
    /// every array reads and validate the tree against the standard's schemas, and
    /// extensions' with --schemas (also `rasdf validate`, as asdftool names it).
    #[command(
        alias = "validate",
        after_help = "Examples:\n  rasdf check file.asdf\n  rasdf check https://example.org/file.asdf --json\n  \
                      rasdf validate roman.asdf --schemas $SITE/rad/resources --schemas $SITE/asdf_standard/resources\n    \
                      (SITE: a Python site-packages folder; also asdf_transform_schemas, asdf_wcs_schemas,\n    \
                      asdf_coordinates_schemas, asdf_astropy: each package's resources folder)"
    )]
    Check {
        /// The ASDF file.
        file: PathBuf,
        /// The report as JSON: {"file", "blocks": [...], "warnings", "errors", "sound", ...}.
        #[arg(long)]
        json: bool,
        /// A folder of extension schemas and manifests, laid out as an extension's Python
        /// package ships them (its `resources` folder; sub-folders are read too): the
        /// tags its manifests define are validated against their schemas, as asdftool
        /// validates them with the package installed. Repeatable.
        #[arg(long, value_name = "DIR")]
        schemas: Vec<PathBuf>,
    },
    /// Show the tree, with arrays' shape, datatype and storage.
    #[command(
        after_help = "Examples:\n  rasdf info file.asdf --max-rows 40\n  rasdf info file.asdf --stats --show-blocks\n  rasdf info file.asdf --json"
    )]
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
        /// The tree as JSON: {"nodes": [{"path", "type", "tag", "value", "array"}],
        /// "blocks", "stats"} (--max-rows and --max-cols do not apply).
        #[arg(long)]
        json: bool,
    },
    /// Rewrite the file with every array in a block of its own file, optionally
    /// compressed (like asdftool defragment).
    #[command(after_help = "Example:\n  rasdf defragment file.asdf -o packed.asdf -c lz4")]
    Defragment {
        /// The ASDF file.
        file: PathBuf,
        /// Output file (it may not be FILE: see --in-place).
        #[arg(short, long, required_unless_present = "in_place", conflicts_with = "in_place")]
        output: Option<PathBuf>,
        /// Rewrite FILE itself, atomically (the old file stays whole until the new one
        /// replaces it).
        #[arg(long)]
        in_place: bool,
        /// Compress every block. zstd and blsc (one c-blosc buffer) are the
        /// asdf-compression plugin's codecs: the reference library (asdf) reads them
        /// only with that plugin installed (pip install asdf-compression[zstd,blsc]).
        #[arg(short, long, value_parser = ["zlib", "bzp2", "lz4", "zstd", "blsc", "none"])]
        compress: Option<String>,
        /// Write only what each view shows, not its whole base array.
        #[arg(long)]
        views_only: bool,
    },
    /// Split the file: every array in a file of its own beside the output (like
    /// asdftool explode).
    #[command(mut_arg("output", |a| a.help(EXPLODE_OUTPUT)), after_help = EXPLODE_EXAMPLE)]
    Explode(FileArgs),
    /// Join an exploded file: every array back in a block of one file (like asdftool
    /// implode).
    #[command(mut_arg("output", |a| a.help(IMPLODE_OUTPUT)), after_help = IMPLODE_EXAMPLE)]
    Implode(FileArgs),
    /// Convert between ASDF and RawArray (.ra, one array), GSD (.gsd, frames of chunks)
    /// or Blosc2 b2nd (.b2nd, one array): the input's format is told by its first
    /// bytes, the output's by its extension.
    #[command(
        after_help = "Examples:\n  rasdf convert image.asdf image.b2nd --array /sci/data -c zstd\n  rasdf convert run.gsd run.asdf -c lz4"
    )]
    Convert {
        /// The input file (ASDF, RawArray, GSD or b2nd).
        input: PathBuf,
        /// The output file: `.asdf`, `.ra`, `.gsd` or `.b2nd`.
        output: PathBuf,
        /// From ASDF to RawArray or b2nd: the tree path of the array (needed when there
        /// are several). From RawArray or b2nd: where to put it (default: data).
        #[arg(long)]
        array: Option<String>,
        /// To ASDF: compress the blocks (zlib, bzp2, lz4, zstd, blsc, none; the
        /// reference library reads zstd and blsc only with the asdf-compression plugin
        /// installed). To b2nd: the chunks' codec (zstd, the default, lz4, zlib, none).
        #[arg(short, long, value_parser = ["zlib", "bzp2", "lz4", "zstd", "blsc", "none"])]
        compress: Option<String>,
    },
    /// Report the differences between two ASDF files, one a line with its tree path:
    /// keys, tags, values, arrays' shapes, datatypes and elements. How the files are
    /// stored (compression, block order, byte order, inline or not) is no difference.
    /// Exit 0 when equal, 1 when different, 2 when they cannot be compared.
    #[command(
        after_help = "Example:\n  rasdf diff before.asdf after.asdf --rtol 1e-6 --ignore history --ignore '[asdf_library]'"
    )]
    Diff {
        /// The first file (A).
        a: PathBuf,
        /// The second file (B).
        b: PathBuf,
        /// Relative tolerance for floats: |a - b| <= atol + rtol * |b|.
        #[arg(long, default_value_t = 0.0, value_name = "R")]
        rtol: f64,
        /// Absolute tolerance for floats.
        #[arg(long, default_value_t = 0.0, value_name = "A")]
        atol: f64,
        /// A tree path not to compare (repeatable): /meta/date, /list/*/date (`*`: any
        /// one step), or asdftool's JMESPath form: meta.date, list[*].date, [a,b].
        #[arg(short, long, value_name = "PATH")]
        ignore: Vec<String>,
        /// The differences as JSON: {"equal", "differences": [{"path", "kind", ...}]}.
        #[arg(long)]
        json: bool,
        /// Accepted as asdftool spells it: the report is one line a difference already.
        #[arg(short, long)]
        minimal: bool,
    },
    /// Draw an array as a PNG: a 2-D array (or one plane of a cube) as a grey image of
    /// its width and height, a 1-D array as a line plot.
    ///
    /// Grey = round(255 * clamp((v - vmin) / (vmax - vmin), 0, 1)), halves rounded up;
    /// vmin and vmax from the stretch, over the values that are finite and not masked.
    /// Masked pixels are magenta (255, 0, 255), NaN and infinite ones red (255, 0, 0).
    /// Row 0 of the array is at the bottom of the image (--origin lower, as ds9 and
    /// astropy show images), column 0 at the left. A cube's last two axes are the image;
    /// its leading axes, flattened in C order, number the planes (--plane, needed).
    /// A plot is 800x400: the values from left to right, the y axis from the stretch
    /// (minmax by default), masked and NaN values leaving gaps marked by a tick of their
    /// colour below the frame. Strings, records and complex numbers have no preview;
    /// images of more than 2^31 pixels are refused.
    #[command(
        after_help = "Examples:\n  rasdf preview image.asdf sci/data -o data.png\n  rasdf preview cube.asdf /data -o plane3.png --plane 3 --stretch percentile --percentile 99"
    )]
    Preview {
        /// The ASDF file.
        file: PathBuf,
        /// The tree path of the array: /sci/data or sci/data.
        path: String,
        /// The PNG to write (`-`: standard output).
        #[arg(short, long)]
        output: PathBuf,
        /// The interval that spans black to white: zscale (IRAF's, as astropy's
        /// ZScaleInterval; the default for images), minmax (the default for plots) or
        /// percentile (the central --percentile per cent of the values).
        #[arg(long, value_enum)]
        stretch: Option<crate::preview::Stretch>,
        /// For --stretch percentile: the per cent of the values kept, as many left out
        /// at each end (astropy's PercentileInterval).
        #[arg(long, value_name = "P", default_value_t = 99.5)]
        percentile: f64,
        /// For --stretch zscale: the contrast (0 < C <= 1; smaller widens the interval).
        #[arg(long, value_name = "C", default_value_t = 0.25)]
        contrast: f64,
        /// The plane of a cube: an index over its leading axes flattened in C order.
        #[arg(long, value_name = "N")]
        plane: Option<usize>,
        /// Where row 0 of the array goes: lower (the bottom, the default) or upper.
        #[arg(long, value_enum, default_value_t = crate::preview::Origin::Lower)]
        origin: crate::preview::Origin,
    },
    /// Edit the tree in $VISUAL or $EDITOR (run through the shell, so it may hold
    /// arguments; vi when neither is set). The edited tree must parse and validate; it is
    /// written in place when it fits before the first block, else the file is rewritten
    /// atomically with its blocks copied byte for byte. A failed edit changes nothing.
    #[command(after_help = "Examples:\n  rasdf edit file.asdf\n  EDITOR='code --wait' rasdf edit file.asdf")]
    Edit {
        /// The ASDF file.
        file: PathBuf,
    },
    /// List the tree paths whose key, type and value match (like asdftool search), breadth
    /// first, one a line. Exit 0 when something matched, 1 when nothing did.
    #[command(
        after_help = "Examples:\n  rasdf search file.asdf 'exp.*time'\n  rasdf search file.asdf --type ndarray\n  \
                            rasdf search file.asdf --value 'JWST|HST'\n  rasdf search file.asdf date --type str --json"
    )]
    Search {
        /// The ASDF file.
        file: PathBuf,
        /// A regular expression searched in each key (or list index).
        key: Option<String>,
        /// The same, as asdftool spells it.
        #[arg(long = "key", value_name = "KEY", conflicts_with = "key")]
        key_option: Option<String>,
        /// A Python type (int, float, str, bool, dict, list, NoneType, bytes, complex,
        /// datetime, date, ndarray; int matches booleans too, as in Python), else a regular
        /// expression searched in the type name and the tag.
        #[arg(long = "type", value_name = "T")]
        type_: Option<String>,
        /// A JSON number, true, false or null the value must equal (1 == 1.0 == true),
        /// else a regular expression searched in scalar values.
        #[arg(long, value_name = "V")]
        value: Option<String>,
        /// The matches as JSON: {"matches": [{"path", "type", "tag", "value", "array"}]}.
        #[arg(long)]
        json: bool,
    },
    /// Print a completion script for a shell (bash, zsh, fish, elvish, powershell).
    #[command(
        after_help = "Examples:\n  rasdf completions bash > ~/.local/share/bash-completion/completions/rasdf\n  \
                            rasdf completions zsh > ~/.zfunc/_rasdf"
    )]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Write the file as YAML only, every array inline (like asdftool to_yaml).
    #[command(alias = "to_yaml", after_help = "Example:\n  rasdf to-yaml file.asdf -o file.yaml")]
    ToYaml {
        /// The ASDF file.
        file: PathBuf,
        /// Output file (default: FILE with the extension .yaml).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Write one array as a NumPy .npy file: any datatype (records, strings, complex,
    /// big-endian), its bytes as stored, in C order; a masked array's data, and its
    /// mask with --mask. --raw writes the elements alone, with no header.
    #[command(
        after_help = "Examples:\n  rasdf extract image.asdf /sci/data -o data.npy\n  rasdf extract image.asdf sci/data -o - --raw | od -f"
    )]
    Extract {
        /// The ASDF file.
        file: PathBuf,
        /// The tree path of the array: /sci/data or sci/data.
        path: String,
        /// Output file (`-`: standard output).
        #[arg(short, long)]
        output: PathBuf,
        /// Also write the array's mask as a .npy of booleans (an array with no mask is
        /// an error).
        #[arg(long, value_name = "M.npy")]
        mask: Option<PathBuf>,
        /// Write the elements alone (C order, the file's byte order), with no header;
        /// the mask, a byte each.
        #[arg(long)]
        raw: bool,
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

const EXPLODE_EXAMPLE: &str = "Example:\n  asdf-explode file.asdf -o parts/file.asdf   (or: rasdf explode ...)";
const IMPLODE_EXAMPLE: &str = "Example:\n  asdf-implode parts/file.asdf -o whole.asdf   (or: rasdf implode ...)";
const EXPLODE_OUTPUT: &str = "Output file (default: FILE_exploded.asdf)";
const IMPLODE_OUTPUT: &str = "Output file (default: FILE_all.asdf)";

/// Opens the input, or tells why it cannot be opened: exit 2 for a path that names no
/// readable regular file (missing, a folder, no permission), 1 for a damaged file.
fn open(file: &std::path::Path, options: &OpenOptions) -> Result<AsdfFile, u8> {
    if !crate::remote::is_url(file) {
        readable(file)?;
    }
    options.open_any(file).map_err(|e| {
        say(&e);
        match e.kind() {
            _ if crate::remote::failed_while_read(&e) => Outcome::Failed.code(),
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
            say_line!("{}: cannot be opened: {e}", crate::remote::shown(file));
            Err(Outcome::Unopened.code())
        }
    }
}

/// Set by [`process_main`] when standard output is a terminal: what is printed there has
/// its control characters escaped ([`crate::terminal`]).
static STDOUT_IS_TERMINAL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn run(args: Args, out: &mut impl std::io::Write) -> Result<Outcome, u8> {
    if !STDOUT_IS_TERMINAL.load(std::sync::atomic::Ordering::Relaxed) {
        return run_command(args, out);
    }
    let json = matches!(
        args.command,
        Command::Check { json: true, .. }
            | Command::Info { json: true, .. }
            | Command::Diff { json: true, .. }
            | Command::Search { json: true, .. }
    );
    let style = if json { crate::terminal::Escapes::Json } else { crate::terminal::Escapes::Python };
    let mut safe = crate::terminal::Escaping::new(out, style);
    let outcome = run_command(args, &mut safe);
    let _ = std::io::Write::flush(&mut safe);
    outcome
}

fn run_command(args: Args, out: &mut impl std::io::Write) -> Result<Outcome, u8> {
    let io = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            0
        } else {
            say_line!("{e}");
            Outcome::Failed.code()
        }
    };
    let limits = args.limits.limits();
    let options = OpenOptions::new().limits(limits).remote(args.remote.options());
    match args.command {
        Command::Check { file, json, schemas } => {
            let schemas = rasdf::schema::Schemas::from_dirs(&schemas).map_err(|e| {
                say_line!("--schemas: {e}");
                Outcome::Unopened.code()
            })?;
            let (_bar, progress) = crate::progress::bar(args.quiet, "check", crate::progress::Unit::Blocks).unzip();
            crate::check::run_with_schemas(&file, &options, json, progress.as_ref(), &schemas, out).map_err(io)
        }
        Command::Info { file, max_rows, max_cols, show_values: _, no_show_values, show_blocks, stats, json } => {
            let f = open(&file, &options)?;
            let options = rasdf_info::InfoOptions::default()
                .max_rows(max_rows)
                .max_cols(max_cols)
                .show_values(!no_show_values)
                .show_blocks(show_blocks)
                .stats(stats);
            let all_read = match json {
                true => rasdf_info::report_json(&f, &options, out),
                false => rasdf_info::report(&f, &options, out),
            };
            // An array whose statistics could not be read fails the command.
            let outcome = all_read.map(|read| if read { Outcome::Ok } else { Outcome::Failed }).map_err(io);
            release(f);
            outcome
        }
        Command::Defragment { file, output, in_place: _, compress, views_only } => {
            readable(&file)?;
            let compression = compress.as_deref().and_then(rasdf::block::Compression::from_name);
            let (_bar, progress) = write_bar(args.quiet, "defragment");
            let Some(output) = output else {
                let f = open(&file, &options)?;
                crate::outputs::sweep(&file);
                let done = rewrite::rewrite_in_place(&f, compression, views_only, progress);
                return report(done);
            };
            report(crate::outputs::write_output(&output, out, |output| {
                rewrite_with(&options, &file, output, ArrayStorage::Internal, compression, views_only, progress)
            }))
        }
        Command::Explode(FileArgs { file, output }) => {
            readable(&file)?;
            let output = output.unwrap_or_else(|| rewrite::default_output(&file, "_exploded"));
            if crate::outputs::is_special(&output) {
                say_line!("{}: explode writes files beside its output: give a file's path", output.display());
                return Err(2);
            }
            let (_bar, progress) = write_bar(args.quiet, "explode");
            crate::outputs::sweep(&output);
            report(rewrite_with(&options, &file, &output, ArrayStorage::External, None, false, progress))
        }
        Command::Implode(FileArgs { file, output }) => {
            readable(&file)?;
            let output = output.unwrap_or_else(|| rewrite::default_output(&file, "_all"));
            let (_bar, progress) = write_bar(args.quiet, "implode");
            report(crate::outputs::write_output(&output, out, |output| {
                rewrite_with(&options, &file, output, ArrayStorage::Internal, None, false, progress)
            }))
        }
        Command::Convert { input, output, array, compress } => {
            let remote = crate::remote::is_url(&input);
            if !remote {
                readable(&input)?;
            }
            use rasdf_convert::{Format, b2nd::BloscCodec};
            // Told here, by the name given: a FIFO or `-` is written through a staged
            // file whose name says nothing.
            if Format::from_extension(&output).is_none() {
                say_line!(
                    "{}: the output's extension names no format (.asdf, .ra, .gsd, .b2nd)",
                    if output == Path::new("-") { "standard output".into() } else { output.display().to_string() }
                );
                return Err(2);
            }
            let to_b2nd = Format::from_extension(&output) == Some(Format::B2nd);
            let name = compress.as_deref().unwrap_or(if to_b2nd { "zstd" } else { "none" });
            let (compression, blosc_codec) = match to_b2nd {
                true => (rasdf::block::Compression::None, BloscCodec::from_name(name)),
                false => (rasdf::block::Compression::from_name(name).unwrap_or(rasdf::block::Compression::None), None),
            };
            let blosc_codec = match (to_b2nd, blosc_codec) {
                (true, None) => {
                    say_line!("-c {name}: b2nd chunks are zstd, lz4, zlib or none");
                    return Err(2);
                }
                (_, codec) => codec.unwrap_or(BloscCodec::Zstd),
            };
            if !remote && let Err(m) = crate::outputs::refuse_inputs(std::slice::from_ref(&input), &[&output]) {
                say_line!("{m}");
                return Err(2);
            }
            let options = rasdf_convert::ConvertOptions::default()
                .array(array)
                .compression(compression)
                .blosc_codec(blosc_codec)
                .limits(limits);
            let _spinner = crate::progress::spinner(args.quiet, &format!("convert to {}", output.display()));
            let mut warn = |w: String| say_line!("warning: {w}");
            if remote {
                // A remote input is ASDF (the other formats are read from local files).
                let f = open(&input, &OpenOptions::new().limits(limits).remote(args.remote.options()))?;
                return report(crate::outputs::write_output(&output, out, |output| {
                    rasdf_convert::convert_asdf_file(&f, output, &options, &mut warn)
                }));
            }
            report(crate::outputs::write_output(&output, out, |output| {
                rasdf_convert::convert_with_warnings(&input, output, &options, &mut warn)
            }))
        }
        Command::Diff { a, b, rtol, atol, ignore, json, minimal: _ } => {
            // Exit 1 means "different": a file that cannot be read is 2, as for diff(1).
            let fa = open(&a, &options).map_err(|_| 2u8)?;
            let fb = open(&b, &options).map_err(|_| 2u8)?;
            let options = crate::diff::DiffOptions { rtol, atol, ignore };
            match crate::diff::diff(&fa, &fb, &options) {
                Ok(d) => {
                    crate::diff::report(&d, json, out).map_err(io)?;
                    Ok(if d.is_empty() { Outcome::Ok } else { Outcome::Failed })
                }
                Err(e) => {
                    say(&e);
                    Err(2)
                }
            }
        }
        Command::Extract { file, path, output, mask, raw } => {
            let f = open(&file, &options)?;
            let outcome = report(crate::extract::run(&f, &path, &output, mask.as_deref(), raw, out));
            release(f);
            outcome
        }
        Command::Preview { file, path, output, stretch, percentile, contrast, plane, origin } => {
            let f = open(&file, &options)?;
            let zscale = crate::preview::ZScale { contrast, ..Default::default() };
            let options = crate::preview::PreviewOptions { stretch, percentile, zscale, plane, origin };
            let outcome = report(crate::preview::run(&f, &path, &options, &output, out));
            release(f);
            outcome
        }
        Command::Edit { file } => {
            readable(&file)?;
            use std::io::IsTerminal;
            let interactive = std::io::stdin().is_terminal();
            let again = |e: &crate::edit::EditError| {
                if !interactive || !matches!(e, crate::edit::EditError::Invalid(_)) {
                    return false;
                }
                say_line!("{e}");
                eprint!("rasdf: edit again? [Y/n] ");
                let mut answer = String::new();
                std::io::stdin().read_line(&mut answer).is_ok_and(|_| !answer.trim().to_lowercase().starts_with('n'))
            };
            match crate::edit::edit(&file, &options, &crate::edit::default_editor(), again) {
                Ok(crate::edit::Edited::Unchanged) => {
                    say_line!("{}: no changes", file.display());
                    Ok(Outcome::Ok)
                }
                Ok(_) => Ok(Outcome::Ok),
                Err(e) => {
                    say_line!("{e}; {} is unchanged", file.display());
                    Ok(Outcome::Failed)
                }
            }
        }
        Command::Search { file, key, key_option, type_, value, json } => {
            let key = key.or(key_option);
            let query = match crate::search::Query::new(key.as_deref(), type_.as_deref(), value.as_deref()) {
                Ok(q) => q,
                Err(e) => {
                    say_line!("{e}");
                    return Err(2);
                }
            };
            let f = open(&file, &options)?;
            let found = crate::search::search(&f, &query);
            let outcome = crate::search::report(&f, &found, json, out).map_err(io);
            drop(found);
            release(f);
            outcome
        }
        Command::Completions { shell } => {
            use clap::CommandFactory;
            clap_complete::generate(shell, &mut Args::command(), "rasdf", out);
            Ok(Outcome::Ok)
        }
        Command::ToYaml { file, output } => {
            let f = open(&file, &options)?;
            // A URL's YAML goes to the current folder, named after the URL's last part.
            let output = output.unwrap_or_else(|| match rasdf::file::url_of(&file) {
                Some(url) => PathBuf::from(crate::remote::file_name_of_url(url)).with_extension("yaml"),
                None => file.with_extension("yaml"),
            });
            let _spinner = crate::progress::spinner(args.quiet, &format!("to-yaml {}", output.display()));
            report(crate::outputs::write_output(&output, out, |output| crate::to_yaml::write(&f, output)))
        }
    }
}

/// A bar of bytes written for a rewrite, and the progress that moves it (none unless
/// standard error is a terminal and not `--quiet`).
fn write_bar(quiet: bool, what: &str) -> (Option<crate::progress::Bar>, Option<rasdf::Progress>) {
    crate::progress::bar(quiet, what, crate::progress::Unit::Bytes).unzip()
}

/// Prints an error on standard error, with the option that raises a limit it hit.
fn say(e: &(impl MaybeUsage + ?Sized)) {
    say_line!("{e}");
    if let Some(what) = e.limit() {
        let option = format!("--{}", what.replace('_', "-"));
        let known =
            ["--max-tree-bytes", "--max-nodes", "--max-block-bytes", "--max-array-elements", "--max-inline-bytes"];
        if known.contains(&option.as_str()) {
            say_line!("a file you trust may raise the limit with {option}");
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
        rasdf::Error::limit(self).map(|l| l.what)
    }
}

impl MaybeUsage for rasdf_convert::Error {
    fn is_usage(&self) -> bool {
        rasdf_convert::Error::is_usage(self)
    }
    fn limit(&self) -> Option<&'static str> {
        match self {
            rasdf_convert::Error::Asdf(e) => rasdf::Error::limit(e).map(|l| l.what),
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
    example: &'static str,
    command: fn(FileArgs) -> Command,
}

const STANDALONE: [Standalone; 2] = [
    Standalone {
        name: "asdf-explode",
        about: "Split an ASDF file: every array in a file of its own beside the output (like asdftool explode)",
        output_help: EXPLODE_OUTPUT,
        example: EXPLODE_EXAMPLE,
        command: Command::Explode,
    },
    Standalone {
        name: "asdf-implode",
        about: "Join an exploded ASDF file: every array back in a block of one file (like asdftool implode)",
        output_help: IMPLODE_OUTPUT,
        example: IMPLODE_EXAMPLE,
        command: Command::Implode,
    },
];

/// The arguments of a [`Standalone`] program (which also has `--version`).
fn standalone(argv: Vec<std::ffi::OsString>, tool: &Standalone) -> Result<(FileArgs, bool), clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let mut command = FileArgs::command()
        .name(tool.name)
        .bin_name(tool.name)
        .about(tool.about)
        .version(env!("CARGO_PKG_VERSION"))
        .mut_arg("output", |a| a.help(tool.output_help))
        .after_help(tool.example)
        .arg(
            clap::Arg::new("quiet")
                .short('q')
                .long("quiet")
                .action(clap::ArgAction::SetTrue)
                .help("No progress bar (drawn on standard error only when it is a terminal)"),
        );
    let matches = command.try_get_matches_from_mut(argv)?;
    let quiet = matches.get_flag("quiet");
    FileArgs::from_arg_matches(&matches).map(|a| (a, quiet)).map_err(|e| e.format(&mut command))
}

/// The `main` of the binaries: the process's arguments, standard output, exit code.
/// Panics inside the YAML parser are turned into errors (with their location), so the
/// panic hook stays quiet about them; any other panic is reported as usual.
pub fn process_main() -> std::process::ExitCode {
    rasdf::fuzzing::install_panic_filter();
    ENDS_PROCESS.store(true, std::sync::atomic::Ordering::Relaxed);
    STDOUT_IS_TERMINAL
        .store(std::io::IsTerminal::is_terminal(&std::io::stdout()), std::sync::atomic::Ordering::Relaxed);
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
        say_line!("writing the report: {e}");
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
        Some(tool) => standalone(argv, tool).map(|(a, quiet)| Args {
            command: (tool.command)(a),
            limits: LimitArgs::default(),
            remote: RemoteArgs::default(),
            quiet,
        }),
        None => Args::try_parse_from(argv),
    };
    let args = match parsed {
        Ok(a) => a,
        Err(e) if e.use_stderr() => {
            // One prefix for every error of every program: clap's own `error: ` becomes
            // the `rasdf: ` of rasdf's messages.
            let text = e.render().to_string();
            let text = text.strip_prefix("error: ").unwrap_or(&text);
            eprint!("rasdf: {text}");
            return 2;
        }
        Err(e) => {
            let _ = e.print();
            return 0;
        }
    };
    match run(args, out) {
        Ok(outcome) => outcome.code(),
        Err(code) => code,
    }
}
