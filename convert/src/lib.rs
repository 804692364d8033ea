//! Conversion between ASDF and neighbouring array formats: RawArray (`.ra`, see [`ra`]),
//! GSD (`.gsd`, see [`gsd`]) and Blosc2 b2nd (`.b2nd`, see [`b2nd`]).
//!
//! [`convert`] reads one file and writes another, the formats told by the input's
//! magic number and the output's extension; `rasdf convert` is a thin main over it.

pub mod b2nd;
#[doc(hidden)]
pub mod fuzzing;
pub mod gsd;
pub mod npy;
pub mod ra;

use std::io::Write;
use std::path::Path;

use rasdf::block::Compression;
use rasdf::ndarray::{ByteOrder, Datatype, NdArray, ScalarType};
use rasdf::tree::Value;
use rasdf::write::{ArrayBytes, Document, WriteOptions};
use rasdf::{AsdfFile, ErrorKind, Limits, Location, OpenOptions};

/// What went wrong reading or writing a neighbouring format.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// The bytes are not of the format (no magic number).
    #[error("not a {format} file: {why}")]
    NotFormat {
        /// The format expected.
        format: &'static str,
        /// What is missing.
        why: String,
    },
    /// The file is of the format but malformed or truncated.
    #[error("{format} {what}")]
    Malformed {
        /// The format.
        format: &'static str,
        /// What is wrong, and where (a byte offset).
        what: String,
    },
    /// The file is sound but holds what the other format cannot.
    #[error("{0}")]
    Unsupported(String),
}

/// The converter's error: an ASDF error (reading or writing the ASDF side, I/O, a usage
/// error), or what is wrong with a file of a neighbouring format and where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error of the ASDF side, of I/O, or of usage, with its location.
    #[error(transparent)]
    Asdf(#[from] rasdf::Error),
    /// A file of a neighbouring format is malformed, or holds what the other cannot.
    #[error(transparent)]
    Format(Box<FormatError>),
}

/// What is wrong with a file of a neighbouring format, and where.
#[derive(Debug, thiserror::Error)]
#[error("{}{error}", Prefix(location))]
pub struct FormatError {
    /// What went wrong.
    pub error: ConvertError,
    /// Where: the file, a byte offset, a tree path.
    pub location: Location,
}

/// A location followed by `": "`, or nothing for an empty one.
struct Prefix<'a>(&'a Location);

impl std::fmt::Display for Prefix<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() { Ok(()) } else { write!(f, "{}: ", self.0) }
    }
}

impl Error {
    /// A format error at `location`.
    pub fn format(error: ConvertError, location: Location) -> Self {
        Error::Format(Box::new(FormatError { error, location }))
    }

    /// True for a usage error (exit code 2 on the command line): an ASDF usage error.
    pub fn is_usage(&self) -> bool {
        matches!(self, Error::Asdf(e) if matches!(e.kind(), ErrorKind::Usage(_)))
    }

    /// Names the file, when no file is named yet.
    #[must_use]
    pub fn in_file(self, file: &Path) -> Self {
        match self {
            Error::Asdf(e) => Error::Asdf(e.in_file(file)),
            Error::Format(mut f) => {
                if f.location.file.is_none() {
                    f.location.file = Some(file.to_path_buf());
                }
                Error::Format(f)
            }
        }
    }

    /// Names the tree path, when no path is named yet.
    #[must_use]
    pub fn at_path(self, path: &str) -> Self {
        match self {
            Error::Asdf(e) => Error::Asdf(e.at_path(path)),
            Error::Format(mut f) => {
                f.location.path.get_or_insert_with(|| path.to_string());
                Error::Format(f)
            }
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Asdf(e.into())
    }
}

impl From<ConvertError> for Error {
    fn from(e: ConvertError) -> Self {
        Error::format(e, Location::default())
    }
}

/// The converter's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A file format `convert` reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// ASDF.
    Asdf,
    /// RawArray (`.ra`).
    RawArray,
    /// GSD (`.gsd`).
    Gsd,
    /// Blosc2 b2nd in a contiguous frame (`.b2nd`).
    B2nd,
}

impl Format {
    /// The format an output path's extension names (`.asdf`, `.ra`, `.gsd`, `.b2nd`).
    pub fn from_extension(path: &Path) -> Option<Format> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "asdf" => Some(Format::Asdf),
            "ra" => Some(Format::RawArray),
            "gsd" => Some(Format::Gsd),
            "b2nd" => Some(Format::B2nd),
            _ => None,
        }
    }

    /// The format of a file, told by its first bytes (a FITS file is read as the ASDF
    /// file in its `ASDF` extension: see [`rasdf::fits`]).
    pub fn sniff(bytes: &[u8]) -> Option<Format> {
        if bytes.starts_with(b"#ASDF") || rasdf::fits::is_fits(bytes) {
            Some(Format::Asdf)
        } else if bytes.get(..8).is_some_and(|m| m == ra::MAGIC.to_le_bytes()) {
            Some(Format::RawArray)
        } else if bytes.get(..8).is_some_and(|m| m == gsd::MAGIC.to_le_bytes()) {
            Some(Format::Gsd)
        } else if bytes.starts_with(b2nd::MAGIC) {
            Some(Format::B2nd)
        } else {
            None
        }
    }

    /// The format's name.
    pub fn name(self) -> &'static str {
        match self {
            Format::Asdf => "ASDF",
            Format::RawArray => "RawArray",
            Format::Gsd => "GSD",
            Format::B2nd => "b2nd",
        }
    }
}

/// How to convert: [`ConvertOptions::default`], then a setter for each field to change.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConvertOptions {
    /// From ASDF: the tree path of the array to write (needed when the file has more
    /// than one). To ASDF: where the array goes (default `data`).
    pub array: Option<String>,
    /// To ASDF: the block's compression.
    pub compression: Compression,
    /// To b2nd: the chunks' codec (default Zstandard, as python-blosc2).
    pub blosc_codec: b2nd::BloscCodec,
    /// Limits on what is read.
    pub limits: Limits,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            array: None,
            compression: Compression::None,
            blosc_codec: b2nd::BloscCodec::Zstd,
            limits: Limits::default(),
        }
    }
}

impl ConvertOptions {
    /// These options with `array` set (see the field).
    #[must_use]
    pub fn array(mut self, array: Option<String>) -> Self {
        self.array = array;
        self
    }

    /// These options with `compression` set (see the field).
    #[must_use]
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// These options with `blosc_codec` set (see the field).
    #[must_use]
    pub fn blosc_codec(mut self, blosc_codec: b2nd::BloscCodec) -> Self {
        self.blosc_codec = blosc_codec;
        self
    }

    /// These options with `limits` set (see the field).
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

/// Outputs of this many data bytes or more are written past the page cache.
const DIRECT_MIN: u64 = 64 << 20;

fn usage(msg: impl Into<String>) -> Error {
    Error::Asdf(rasdf::Error::new(ErrorKind::Usage(msg.into()), Location::default()))
}

fn convert_error(e: ConvertError, file: &Path) -> Error {
    Error::format(e, Location::default().with_file(file))
}

/// Converts `input` to `output`: the input's format is told by its first bytes, the
/// output's by its extension, and one of them is ASDF (see [`ra`] and [`gsd`] for what
/// each becomes). The output is written through
/// a temporary file and a rename, so a failure leaves no partial file in its place.
///
/// # Errors
/// [`ErrorKind::Usage`] for an output extension rasdf does not write, two formats that
/// are not one ASDF and one other, or no array to choose; errors reading either file
/// (with the file, and the byte offset or tree path); I/O errors writing.
pub fn convert(input: &Path, output: &Path, options: &ConvertOptions) -> Result<()> {
    convert_with_warnings(input, output, options, &mut |_| {})
}

/// The format `output`'s extension names.
fn output_format(output: &Path) -> Result<Format> {
    Format::from_extension(output).ok_or_else(|| {
        usage(format!("{}: the output's extension names no format (.asdf, .ra, .gsd, .b2nd)", output.display()))
    })
}

/// [`convert`], telling `warn` of what the output cannot hold: each masked array written
/// without its mask (see [`masks_left_behind`]).
///
/// # Errors
/// As [`convert`].
pub fn convert_with_warnings(
    input: &Path,
    output: &Path,
    options: &ConvertOptions,
    warn: &mut dyn FnMut(String),
) -> Result<()> {
    let to = output_format(output)?;
    let (file, len) = rasdf::file::open_regular(input).map_err(|e| Error::from(e).in_file(input))?;
    // The first bytes tell the format; an ASDF input is opened by the library (read by
    // ranges), another read whole (positional reads: an input cut short by another
    // process while read is an error, never a crash).
    let head = rasdf::file::source::read_exact_at(&file, 0..len.min(64)).map_err(|e| Error::from(e).in_file(input))?;
    if Format::sniff(&head) == Some(Format::Asdf) {
        return match to {
            Format::RawArray | Format::Gsd | Format::B2nd => {
                let f = OpenOptions::new().limits(options.limits).open(input)?;
                from_asdf_file(&f, input, to, output, options, warn)
            }
            Format::Asdf => {
                Err(usage("ASDF to ASDF: convert reads or writes ASDF on one side, RawArray, GSD or b2nd on the other"))
            }
        };
    }
    let map = rasdf::file::FileBytes::read(&file, input).map_err(|e| Error::from(e).in_file(input))?;
    let bytes: &[u8] = &map;
    let from = Format::sniff(bytes).ok_or_else(|| {
        Error::Asdf(rasdf::Error::new(
            ErrorKind::Usage("the input is not ASDF, RawArray, GSD or b2nd (no magic number at byte 0)".into()),
            Location::at(0),
        ))
        .in_file(input)
    })?;
    match (from, to) {
        (Format::RawArray, Format::Asdf) => {
            let ra = ra::RaFile::parse(bytes, &options.limits).map_err(|e| convert_error(e, input))?;
            let path = options.array.as_deref().unwrap_or("data");
            let mut doc = Document::new();
            doc.set_array_bytes(path, ra.into_array_bytes(), options.compression)?;
            doc.add_source(&map);
            Ok(doc.write_to_path(output, &WriteOptions::default())?)
        }
        (Format::Gsd, Format::Asdf) => {
            let g = gsd::GsdFile::parse(bytes).map_err(|e| convert_error(e, input))?;
            let mut doc = gsd_to_asdf(&g, options.compression).map_err(|e| e.in_file(input))?;
            doc.add_source(&map);
            doc.write_to_path(output, &WriteOptions::default())?;
            Ok(())
        }
        (Format::B2nd, Format::Asdf) => {
            let b = b2nd::B2ndFile::parse(bytes, &options.limits).map_err(|e| convert_error(e, input))?;
            b2nd_to_asdf(&b, options, output, &map).map_err(|e| e.in_file(input))
        }
        (Format::Asdf, to @ (Format::RawArray | Format::Gsd | Format::B2nd)) => {
            let f = OpenOptions::new().limits(options.limits).open(input)?;
            from_asdf_file(&f, input, to, output, options, warn)
        }
        (from, to) => Err(usage(format!(
            "{} to {}: convert reads or writes ASDF on one side, RawArray, GSD or b2nd on the other",
            from.name(),
            to.name()
        ))),
    }
}

/// [`convert_with_warnings`] of an ASDF file already open (a remote one, say: see
/// [`rasdf::OpenOptions::open_url`]) to RawArray, GSD or b2nd, named in errors by its path.
///
/// # Errors
/// As [`convert`].
pub fn convert_asdf_file(
    f: &AsdfFile,
    output: &Path,
    options: &ConvertOptions,
    warn: &mut dyn FnMut(String),
) -> Result<()> {
    let to = output_format(output)?;
    let input = f.path().map(Path::to_path_buf).unwrap_or_default();
    match to {
        Format::RawArray | Format::Gsd | Format::B2nd => from_asdf_file(f, &input, to, output, options, warn),
        Format::Asdf => {
            Err(usage("ASDF to ASDF: convert reads or writes ASDF on one side, RawArray, GSD or b2nd on the other"))
        }
    }
}

fn from_asdf_file(
    f: &AsdfFile,
    input: &Path,
    to: Format,
    output: &Path,
    options: &ConvertOptions,
    warn: &mut dyn FnMut(String),
) -> Result<()> {
    match to {
        Format::RawArray => {
            for path in masks_left_behind(f, to, options.array.as_deref()) {
                warn(format!("{path}: the mask is not written ({} holds none)", to.name()));
            }
            let (path, node) = pick_array(f, options.array.as_deref()).map_err(|e| e.in_file(input))?;
            let (datatype, order, shape) = f.array_at(node).meta().map_err(|e| e.at_path(&path).in_file(input))?;
            let header = ra::header_of(&datatype, order, &shape).map_err(|e| convert_error(e, input).at_path(&path))?;
            // Streamed: neither file is held whole in memory (a large compressed block
            // is decoded piece by piece as it is written); a large output is written
            // past the page cache, as large ASDF files are.
            let mut failed = None;
            let mut body = |mut w: &mut dyn Write| {
                w.write_all(&header.to_bytes())?;
                write_ndarray_once(f, node, true, &mut w).map_err(|e| {
                    let io = std::io::Error::other(e.to_string());
                    failed = Some(e);
                    io
                })
            };
            rasdf::write::write_atomically_with(output, |file| {
                match (header.size >= DIRECT_MIN).then(|| rasdf::write::DirectWriter::new(file)).flatten() {
                    Some(mut w) => body(&mut w).and_then(|()| w.finish()),
                    None => {
                        let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
                        body(&mut w).and_then(|()| w.flush())
                    }
                }?;
                f.check_unchanged().map_err(|e| std::io::Error::other(e.to_string()))
            })
            .map_err(|e| {
                failed.take().map_or_else(|| Error::from(e).in_file(output), |e| e.at_path(&path).in_file(input))
            })
        }
        Format::Gsd => {
            for path in masks_left_behind(f, to, options.array.as_deref()) {
                warn(format!("{path}: the mask is not written ({} holds none)", to.name()));
            }
            // Written a chunk at a time; a tree GSD cannot hold leaves no output.
            let mut failed = None;
            rasdf::write::write_atomically_with(output, |file| {
                let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
                write_gsd(f, &mut w).map_err(|e| {
                    let io = std::io::Error::other(e.to_string());
                    failed = Some(e);
                    io
                })?;
                w.flush()?;
                f.check_unchanged().map_err(|e| std::io::Error::other(e.to_string()))
            })
            .map_err(|e| failed.take().map_or_else(|| Error::from(e).in_file(output), |e| e.in_file(input)))
        }
        Format::B2nd => {
            for path in masks_left_behind(f, to, options.array.as_deref()) {
                warn(format!("{path}: the mask is not written ({} holds none)", to.name()));
            }
            let (path, node) = pick_array(f, options.array.as_deref()).map_err(|e| e.in_file(input))?;
            let (datatype, stored_order, shape) =
                f.array_at(node).meta().map_err(|e| e.at_path(&path).in_file(input))?;
            // Numbers are written little-endian; text and records keep their bytes.
            let order = match datatype {
                Datatype::Scalar(_) => ByteOrder::Little,
                _ => stored_order,
            };
            let dtype = b2nd::dtype_string(&datatype, order);
            let vlmeta = match f.get("b2nd/vlmeta") {
                Some(node) => vlmeta_of(f, node).map_err(|e| e.in_file(input))?,
                None => Vec::new(),
            };
            let encode = b2nd::EncodeOptions { codec: options.blosc_codec, ..Default::default() };
            let read = |e: rasdf::Error| Error::from(e).at_path(&path).in_file(input);
            let array = f.array_at(node);
            let once = array.read_once(element_span(false));
            let (size, shape) = (datatype.size(), &shape);
            let bad = |e| convert_error(e, input).at_path(&path);
            // Written as the chunks are compressed: the frame is never held whole.
            let mut failed = None;
            let written = match once.map_err(read)? {
                // The stored bytes themselves, when they lie in C order as written.
                rasdf::file::ReadOnce::Whole(a)
                    if a.is_c_contiguous() && swap_part(&a.datatype, a.byteorder).is_none() =>
                {
                    let data = &a.data()[a.offset..a.offset + a.len() * size];
                    let encoder = b2nd::Encoder::new(shape, size, &dtype, &vlmeta, &encode)
                        .and_then(|e| e.with_items(data))
                        .map_err(bad)?;
                    rasdf::write::write_atomically_with(output, |file| {
                        let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
                        encoder.write_to(&mut w)?;
                        w.flush()?;
                        f.check_unchanged().map_err(|e| std::io::Error::other(e.to_string()))
                    })
                }
                // Else made in C order on a thread of their own (a large compressed
                // block decoded piece by piece, another layout walked, numbers swapped)
                // and compressed as they come, a few chunks' rows at a time: the array
                // is never held whole.
                once => {
                    let encoder = b2nd::Encoder::new(shape, size, &dtype, &vlmeta, &encode).map_err(bad)?;
                    rasdf::write::write_atomically_with(output, |file| {
                        let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
                        let (written, produced) = std::thread::scope(|scope| {
                            let (tx, rx) = std::sync::mpsc::sync_channel(16);
                            let array = &array;
                            let producer = scope.spawn(move || write_once(array, once, false, &mut PieceSender(tx)));
                            let written = encoder.write_from(PieceReceiver::new(rx), &mut w).and_then(|()| w.flush());
                            (written, producer.join())
                        });
                        let mut blame = |e: Error| {
                            let io = std::io::Error::other(e.to_string());
                            failed = Some(e);
                            io
                        };
                        match (written, produced) {
                            (Ok(()), Ok(Ok(()))) => {
                                f.check_unchanged().map_err(|e| std::io::Error::other(e.to_string()))
                            }
                            // The items ended early, or after: the reading thread says why.
                            (Ok(()), Ok(Err(e))) => Err(blame(e)),
                            (Err(w), Ok(Err(e))) if w.kind() == std::io::ErrorKind::UnexpectedEof => Err(blame(e)),
                            (Err(w), _) => Err(w),
                            (Ok(()), Err(_)) => Err(std::io::Error::other("the thread reading the array panicked")),
                        }
                    })
                }
            };
            written.map_err(|e| {
                failed.take().map_or_else(|| Error::from(e).in_file(output), |e| e.at_path(&path).in_file(input))
            })
        }
        Format::Asdf => Err(usage("ASDF to ASDF: convert writes RawArray, GSD or b2nd from ASDF")),
    }
}

/// Writes the ASDF file of a b2nd array (at `--array`, default `data`) and its
/// variable-length metadata (at `b2nd/vlmeta`). Numbers in the machine's byte order whose
/// chunks are runs of rows are decoded on a thread of their own while the writer hashes
/// and writes the chunks before them; other arrays are decoded whole first.
fn b2nd_to_asdf(
    b: &b2nd::B2ndFile<'_>,
    options: &ConvertOptions,
    output: &Path,
    source: &dyn rasdf::write::Source,
) -> Result<()> {
    let (datatype, byteorder, extra) = b.datatype().map_err(|e| Error::format(e, Location::default()))?;
    let path = options.array.as_deref().unwrap_or("data");
    let items: usize = b.shape.iter().product();
    let scalar = match datatype {
        Datatype::Scalar(t) if extra.is_none() && (byteorder == ByteOrder::NATIVE || t.size() == 1) => Some(t),
        _ => None,
    };
    let with_vlmeta = |doc: &mut Document<'_>| -> Result<()> {
        if b.vlmeta.is_empty() {
            return Ok(());
        }
        let pairs = b
            .vlmeta
            .iter()
            .map(|(name, bytes)| {
                // A value holding an extension type stays its msgpack bytes.
                let node = b2nd::msgpack::decode(bytes).ok().and_then(|v| msgpack_node(doc, &v));
                let node = node.unwrap_or_else(|| doc.tree_mut().push(plain(Value::Binary(bytes.clone()))));
                (doc.tree_mut().push(plain(Value::Str(name.as_str().into()))), node)
            })
            .collect();
        let map = doc.tree_mut().push(plain(Value::Map(pairs)));
        Ok(doc.set_node("b2nd/vlmeta", map)?)
    };
    let convert = |e| Error::format(e, Location::default());
    if let Some(t) = scalar.filter(|_| items > 0 && b.chunks_are_slabs()) {
        let failure = std::sync::Mutex::new(None);
        let written = std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(2);
            s.spawn(|| {
                if let Err(e) = b.decode_rows(|rows| tx.send(rows).is_ok()) {
                    *failure.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(e);
                }
                drop(tx);
            });
            // The document owns the receiver: returning drops it, which stops the
            // decoding thread if the write ended early.
            let mut doc = Document::new();
            doc.add_source(source);
            doc.set_array_chunks(path, t, &b.shape, options.compression, rx.into_iter())?;
            with_vlmeta(&mut doc)?;
            Ok(doc.write_to_path(output, &WriteOptions::default())?)
        });
        // A chunk that did not decode is what went wrong, not the short array it left.
        return match failure.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner) {
            Some(e) => Err(convert(e)),
            None => written,
        };
    }
    let data = b.decode().map_err(convert)?;
    let mut shape = b.shape.clone();
    shape.extend(extra);
    let strides = rasdf::ndarray::c_strides(&shape, datatype.size());
    let array = ArrayBytes { datatype, byteorder, shape, strides, data: std::borrow::Cow::Owned(data) };
    let mut doc = Document::new();
    doc.add_source(source);
    doc.set_array_bytes(path, array, options.compression)?;
    with_vlmeta(&mut doc)?;
    Ok(doc.write_to_path(output, &WriteOptions::default())?)
}

/// The array to convert, its path and node: `wanted`, or the file's only array (a
/// masked array's `mask` array does not count).
fn pick_array<'f>(f: &'f AsdfFile, wanted: Option<&str>) -> Result<(String, rasdf::tree::NodeRef<'f>)> {
    if let Some(p) = wanted {
        return Ok((p.to_string(), f.node_at(p)?));
    }
    let paths: Vec<String> = f.arrays().map(|a| a.path().unwrap_or_default().to_string()).collect();
    // Neither a masked array's mask nor the words of a big integer (core/integer) count.
    let inside = |p: &str, suffix: &str, tag: Option<&str>| {
        p.strip_suffix(suffix).is_some_and(|base| match tag {
            None => paths.iter().any(|q| q == base),
            Some(t) => f.get(base.trim_start_matches('/')).is_some_and(|n| n.is_asdf_tag(t)),
        })
    };
    let arrays: Vec<&String> =
        paths.iter().filter(|p| !inside(p, "/mask", None) && !inside(p, "/words", Some("core/integer"))).collect();
    match arrays.as_slice() {
        [one] => Ok((one.to_string(), f.node_at(one)?)),
        [] => Err(usage("the file has no array")),
        many => Err(usage(format!(
            "the file has {} arrays; choose one with --array ({})",
            many.len(),
            many.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// The tree paths of the masked arrays (a `mask`, or `null`s in inline data) of `file`
/// that converting it to `to` writes without their mask (RawArray, GSD and b2nd hold
/// none): every one for GSD, else the array `array` names (or the only one).
pub fn masks_left_behind(file: &AsdfFile, to: Format, array: Option<&str>) -> Vec<String> {
    let masked = |node: rasdf::tree::NodeRef<'_>| {
        node.key("mask").is_some_and(|m| !m.is_null())
            || node.key("data").is_some_and(|d| d.items().is_some())
                && file.array_at(node).read_dyn().is_ok_and(|a| a.inline_mask().is_some())
    };
    let nodes: Vec<(String, rasdf::tree::NodeRef<'_>)> = match to {
        Format::Asdf => Vec::new(),
        Format::Gsd => file.arrays().map(|a| (a.path().unwrap_or_default().to_string(), a.node())).collect(),
        _ => pick_array(file, array).into_iter().collect(),
    };
    nodes.into_iter().filter(|(_, n)| masked(*n)).map(|(p, _)| format!("/{}", p.trim_start_matches('/'))).collect()
}

/// Writes `array`'s elements to `out` in C order, or column-major order when
/// `column_major`; numbers little-endian (swapped when stored big-endian), strings and
/// records with their bytes as stored. Contiguous data goes in one write, other
/// layouts in pieces of 1 MiB.
///
/// # Errors
/// Those of `out`.
pub fn write_elements(array: &NdArray<'_>, column_major: bool, out: &mut impl Write) -> std::io::Result<()> {
    let n = array.datatype.size();
    let swap = swap_part(&array.datatype, array.byteorder);
    // Column-major order is C order over the axes reversed.
    let (shape, strides): (Vec<usize>, Vec<isize>) = match column_major {
        true => (array.shape.iter().rev().copied().collect(), array.strides.iter().rev().copied().collect()),
        false => (array.shape.clone(), array.strides.clone()),
    };
    let walk = NdArray::from_layout(&array.datatype, array.byteorder, &shape, &strides, array.offset, array.data());
    let data = array.data();
    if walk.is_c_contiguous() && swap.is_none() {
        return out.write_all(&data[array.offset..array.offset + array.len() * n]);
    }
    const PIECE: usize = 1 << 20;
    let mut buf = Vec::with_capacity(PIECE.min(array.len() * n) + n);
    for at in walk.byte_offsets() {
        let e = &data[at..at + n];
        match swap {
            Some(part) => push_swapped(&mut buf, e, part),
            None => buf.extend_from_slice(e),
        }
        if buf.len() >= PIECE {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)
}

/// The size of the parts to reverse in each element of `datatype` stored in `order`, to
/// write it little-endian: `None` when nothing is to be swapped (a little-endian number,
/// one byte, text, a record); half the element for a complex number.
fn swap_part(datatype: &Datatype, order: ByteOrder) -> Option<usize> {
    let n = datatype.size();
    match datatype {
        Datatype::Scalar(_) if order == ByteOrder::Big && n > 1 => Some(match datatype {
            Datatype::Scalar(ScalarType::Complex64 | ScalarType::Complex128) => n / 2,
            _ => n,
        }),
        _ => None,
    }
}

/// Appends the elements of `bytes` (a whole number of them) with each `part` of every
/// element reversed.
fn push_swapped(buf: &mut Vec<u8>, bytes: &[u8], part: usize) {
    for p in bytes.chunks_exact(part) {
        buf.extend(p.iter().rev());
    }
}

/// [`write_elements`] of the ndarray at `node` of `f`, reading it once
/// ([`rasdf::ArrayRef::read_once`]): a large compressed block whose elements lie in the
/// order to write is decoded and written piece by piece, never held whole; another
/// compressed block that only this array uses is decoded for the write and dropped.
///
/// # Errors
/// Those of reading the array, and of `out`.
pub fn write_ndarray_once(
    f: &AsdfFile,
    node: rasdf::tree::NodeRef<'_>,
    column_major: bool,
    out: &mut impl Write,
) -> Result<()> {
    let array = f.array_at(node);
    write_once(&array, array.read_once(element_span(column_major))?, column_major, out)
}

/// What [`rasdf::ArrayRef::read_once`] is given to write elements in C order, or in
/// column-major order when `column_major`: a span over the block's pieces when the
/// elements lie in that order (column-major is C order when at most one axis is longer
/// than 1), else nothing, and the array is read whole.
fn element_span(
    column_major: bool,
) -> impl FnOnce(&rasdf::ndarray::ArrayMeta, &rasdf::ndarray::Layout) -> Option<ElementSpan> {
    move |meta, layout| {
        let in_order = !column_major || layout.shape.iter().filter(|&&d| d > 1).count() <= 1;
        in_order.then(|| ElementSpan::new(&meta.datatype, meta.byteorder, layout.offset, layout.len())).flatten()
    }
}

/// [`write_elements`] of an array read once: whole, or its block decoded piece by piece
/// through its span.
fn write_once(
    array: &rasdf::ArrayRef<'_>,
    once: rasdf::file::ReadOnce<'_, ElementSpan>,
    column_major: bool,
    out: &mut impl Write,
) -> Result<()> {
    match once {
        rasdf::file::ReadOnce::Whole(a) => write_elements(&a, column_major, out).map_err(Error::from),
        rasdf::file::ReadOnce::Pieces { sink: mut span, .. } => {
            array.decode_pieces(|piece| span.feed(piece, out).map_err(Error::from))
        }
    }
}

/// A writer that sends what is written, in pieces of at most 1 MiB, to a
/// [`PieceReceiver`] on another thread.
struct PieceSender(std::sync::mpsc::SyncSender<Vec<u8>>);

impl Write for PieceSender {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = buf.len().min(1 << 20);
        let gone = |_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the b2nd writer stopped");
        self.0.send(buf[..n].to_vec()).map_err(gone)?;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A reader of what a [`PieceSender`] sends; its end is where the sender is dropped.
struct PieceReceiver {
    rx: std::sync::mpsc::Receiver<Vec<u8>>,
    piece: Vec<u8>,
    at: usize,
}

impl PieceReceiver {
    fn new(rx: std::sync::mpsc::Receiver<Vec<u8>>) -> Self {
        PieceReceiver { rx, piece: Vec::new(), at: 0 }
    }
}

impl std::io::Read for PieceReceiver {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.piece.len() {
            match self.rx.recv() {
                Ok(p) => (self.piece, self.at) = (p, 0),
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.piece.len() - self.at);
        buf[..n].copy_from_slice(&self.piece[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// `len` bytes from byte `skip` of data that comes in pieces, written as
/// [`write_elements`] writes elements in C order (numbers little-endian, the bytes of
/// others as they are).
struct ElementSpan {
    /// Bytes still to pass over before the elements.
    skip: usize,
    /// Bytes of elements still to come.
    left: usize,
    /// The element's size and the part of it to reverse, for big-endian numbers.
    swap: Option<(usize, usize)>,
    /// The start of an element cut where a piece ended.
    carry: Vec<u8>,
    /// Swapped bytes to write.
    buf: Vec<u8>,
}

impl ElementSpan {
    /// For `len` elements of `datatype` stored in `order`, from byte `offset`; `None`
    /// when their bytes overflow.
    fn new(datatype: &Datatype, order: ByteOrder, offset: usize, len: usize) -> Option<ElementSpan> {
        let n = datatype.size();
        let swap = swap_part(datatype, order).map(|part| (n, part));
        Some(ElementSpan { skip: offset, left: len.checked_mul(n)?, swap, carry: Vec::new(), buf: Vec::new() })
    }

    /// Writes what of `piece`, the next bytes of the data, belongs to the elements.
    fn feed(&mut self, piece: &[u8], out: &mut impl Write) -> std::io::Result<()> {
        let passed = self.skip.min(piece.len());
        self.skip -= passed;
        let piece = &piece[passed..];
        let mut piece = &piece[..self.left.min(piece.len())];
        self.left -= piece.len();
        let Some((n, part)) = self.swap else { return out.write_all(piece) };
        self.buf.clear();
        if !self.carry.is_empty() {
            let need = (n - self.carry.len()).min(piece.len());
            self.carry.extend_from_slice(&piece[..need]);
            piece = &piece[need..];
            if self.carry.len() < n {
                return Ok(());
            }
            push_swapped(&mut self.buf, &self.carry, part);
            self.carry.clear();
        }
        let whole = piece.len() - piece.len() % n;
        push_swapped(&mut self.buf, &piece[..whole], part);
        self.carry.extend_from_slice(&piece[whole..]);
        out.write_all(&self.buf)
    }
}

fn plain(value: rasdf::tree::Value) -> rasdf::tree::Node {
    rasdf::tree::Node { tag: None, value, line: 0, col: 0 }
}

/// A msgpack value as a tree node, or `None` when it holds an extension type or text that
/// is not UTF-8.
fn msgpack_node(doc: &mut Document<'_>, v: &b2nd::msgpack::Value) -> Option<rasdf::tree::NodeId> {
    use b2nd::msgpack::Value as M;
    let value = match v {
        M::Nil => Value::Null,
        M::Boolean(b) => Value::Bool(*b),
        M::Integer(i) => match (i.as_i64(), i.as_u64()) {
            (Some(i), _) => Value::Int(i),
            (None, u) => Value::BigInt(Box::new(u?.into())),
        },
        M::F32(f) => Value::Float(f64::from(*f)),
        M::F64(f) => Value::Float(*f),
        // Text that is not UTF-8 stays its msgpack bytes, as an extension type does.
        M::String(s) => Value::Str(s.as_str()?.into()),
        M::Binary(b) => Value::Binary(b.clone()),
        M::Array(items) => Value::Seq(items.iter().map(|i| msgpack_node(doc, i)).collect::<Option<_>>()?),
        M::Map(pairs) => Value::Map(
            pairs.iter().map(|(k, v)| Some((msgpack_node(doc, k)?, msgpack_node(doc, v)?))).collect::<Option<_>>()?,
        ),
        M::Ext(..) => return None,
    };
    Some(doc.tree_mut().push(plain(value)))
}

/// The variable-length metalayers of a `b2nd/vlmeta` mapping: each value msgpack-encoded
/// as python-blosc2 stores its `vlmeta` (timestamps as text, big integers as numbers,
/// other tags dropped).
///
/// # Errors
/// Not a mapping; an integer beyond 64 bits; nesting over 64 deep (an alias cycle).
fn vlmeta_of(f: &AsdfFile, node: rasdf::tree::NodeRef<'_>) -> Result<Vec<(String, Vec<u8>)>> {
    use b2nd::msgpack::Value as M;
    fn int(b: &num_bigint::BigInt) -> Result<M, &'static str> {
        i64::try_from(b)
            .map(M::from)
            .or_else(|_| u64::try_from(b).map(M::from))
            .map_err(|_| "an integer beyond 64 bits")
    }
    /// Values (aliases counted each time they are met) one vlmeta entry may expand to:
    /// `[&a [...], *a]` nested 40 deep would be 2^40.
    const MAX_VALUES: usize = 1 << 20;
    fn value(f: &AsdfFile, n: rasdf::tree::NodeRef<'_>, depth: usize, left: &mut usize) -> Result<M, &'static str> {
        if depth > 64 {
            return Err("nested over 64 deep (or an alias cycle)");
        }
        *left = left.checked_sub(1).ok_or("over a million values (aliases expanded)")?;
        if n.is_asdf_tag("core/integer") {
            return int(&f.integer_at(n).map_err(|_| "a core/integer that does not read")?);
        }
        let mut value = |n, depth| value(f, n, depth, left);
        Ok(match n.value() {
            Value::Null => M::Nil,
            Value::Bool(b) => M::Boolean(*b),
            Value::Int(i) => M::from(*i),
            Value::BigInt(b) => int(b)?,
            Value::Float(f) => M::F64(*f),
            Value::Str(s) | Value::Timestamp(s) => M::from(s.as_str()),
            Value::Binary(b) => M::Binary(b.clone()),
            Value::Seq(_) => {
                M::Array(n.items().into_iter().flatten().map(|i| value(i, depth + 1)).collect::<Result<_, _>>()?)
            }
            Value::Map(_) => M::Map(
                n.pairs()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| Ok::<_, &str>((value(k, depth + 1)?, value(v, depth + 1)?)))
                    .collect::<Result<_, _>>()?,
            ),
        })
    }
    let bad = |path: String, why: &str| Error::format(ConvertError::Unsupported(why.into()), Location::path(path));
    let pairs = node.pairs().ok_or_else(|| bad("/b2nd/vlmeta".into(), "vlmeta must be a mapping"))?;
    let mut out = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        let name = k.key_text();
        let path = format!("/b2nd/vlmeta/{}", rasdf::tree::escape_step(&name));
        let mut left = MAX_VALUES;
        let m = value(f, v, 0, &mut left).map_err(|why| bad(path, why))?;
        out.push((name, b2nd::msgpack::encode(&m)));
    }
    Ok(out)
}

/// The ASDF document of a GSD file (see [`gsd`]): `gsd` (the header's application,
/// schema, schema and file versions) and `frames`, each frame a mapping of its chunks.
///
/// # Errors
/// A text chunk that is not UTF-8.
pub fn gsd_to_asdf<'a>(g: &gsd::GsdFile<'a>, compression: Compression) -> Result<Document<'a>> {
    use rasdf::tree::Value;
    let mut doc = Document::new();
    let h = &g.header;
    doc.set("gsd/application", h.application.as_str())?;
    doc.set("gsd/schema", h.schema.as_str())?;
    let version = |v: u32| [v >> 16, v & 0xffff];
    doc.set_serialize("gsd/schema_version", &version(h.schema_version))?;
    doc.set_serialize("gsd/file_version", &version(h.gsd_version))?;
    let frame_count = usize::try_from(g.frames).map_err(|_| usage("too many frames"))?;
    let mut frames: Vec<Vec<_>> = vec![Vec::new(); frame_count];
    for c in &g.chunks {
        let at = |e: ConvertError| {
            Error::format(e, Location::path(format!("/frames/{}/{}", c.frame, rasdf::tree::escape_step(&c.name))))
        };
        let value = match (c.type_id, c.m) {
            (gsd::TYPE_CHARACTER, 1) => {
                // As gsd.fl reads it: the bytes up to the trailing NULs, as UTF-8.
                let end = c.data.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
                let s = std::str::from_utf8(&c.data[..end]).map_err(|_| {
                    at(ConvertError::Malformed { format: "GSD", what: "a text chunk is not UTF-8".into() })
                })?;
                doc.tree_mut().push(plain(Value::Str(s.into())))
            }
            _ => {
                let (n, m) = (
                    usize::try_from(c.n).map_err(|_| usage("chunk too large"))?,
                    usize::try_from(c.m).map_err(|_| usage("chunk too large"))?,
                );
                // Text of more than one column is read as int8, M x N.
                let (t, shape) = match gsd::scalar_of(c.type_id) {
                    Some(t) if m == 1 => (t, vec![n]),
                    Some(t) => (t, vec![n, m]),
                    None => (ScalarType::Int8, vec![m, n]),
                };
                let strides = rasdf::ndarray::c_strides(&shape, t.size());
                let data = std::borrow::Cow::Borrowed(c.data);
                let array =
                    ArrayBytes { datatype: Datatype::Scalar(t), byteorder: ByteOrder::Little, shape, strides, data };
                doc.array_node(array, compression)?
            }
        };
        let key = doc.tree_mut().push(plain(Value::Str(c.name.as_str().into())));
        // The last chunk's frame sets the count: every frame has its slot.
        if let Some(slot) = usize::try_from(c.frame).ok().and_then(|i| frames.get_mut(i)) {
            slot.push((key, value));
        }
    }
    let items = frames.into_iter().map(|pairs| doc.tree_mut().push(plain(Value::Map(pairs)))).collect();
    let seq = doc.tree_mut().push(plain(Value::Seq(items)));
    doc.set_node("frames", seq)?;
    Ok(doc)
}

/// The GSD file of an ASDF file whose tree has `frames` (a list of mappings of chunk
/// name to a 1-D or 2-D array of a type GSD holds, or text) and optionally `gsd`
/// (`application`, `schema`, `schema_version`), as [`gsd_to_asdf`] makes them.
///
/// # Errors
/// No `frames` list; a frame that is not a mapping; a value that is not text or an
/// array GSD can hold (with its tree path).
pub fn asdf_to_gsd(f: &AsdfFile) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    write_gsd(f, &mut out)?;
    Ok(out)
}

/// Where a GSD chunk's data comes from.
enum GsdSource<'t> {
    /// The node of an array and its tree path, read as its chunk is written
    /// ([`write_ndarray_once`]).
    Array(rasdf::tree::NodeRef<'t>, String),
    Text(&'t str),
}

/// Writes the GSD file of an ASDF file (see [`asdf_to_gsd`]) to `w`, one chunk at a
/// time: the tree is checked and the file laid out first, then each array's elements
/// are written from where they are.
///
/// # Errors
/// As [`asdf_to_gsd`]; write errors.
pub fn write_gsd(f: &AsdfFile, w: &mut impl Write) -> Result<()> {
    let (layout, sources) = gsd_layout(f)?;
    let mut failed = None;
    layout
        .write_to(w, |i, w| match &sources[i] {
            GsdSource::Text(s) => w.write_all(s.as_bytes()),
            GsdSource::Array(node, path) => write_ndarray_once(f, *node, false, &mut &mut *w).map_err(|e| {
                let e = e.at_path(path);
                let io = std::io::Error::other(e.to_string());
                failed = Some(e);
                io
            }),
        })
        .map_err(|e| failed.take().unwrap_or_else(|| Error::from(e)))
}

/// The layout of the GSD file of `f`, and where each chunk's data is.
fn gsd_layout(f: &AsdfFile) -> Result<(gsd::Layout, Vec<GsdSource<'_>>)> {
    let bad = |path: String, why: &str| Error::format(ConvertError::Unsupported(why.into()), Location::path(path));
    let frames_node = f.get("frames");
    let frames = frames_node
        .as_ref()
        .and_then(|n| n.items())
        .ok_or_else(|| usage("an ASDF file converts to GSD when its tree has `frames`: a list of mappings"))?;
    let text_at = |p: &str| f.get(p).and_then(|n| n.as_str().map(str::to_string));
    let application = text_at("gsd/application").unwrap_or_else(|| format!("rasdf {}", env!("CARGO_PKG_VERSION")));
    let schema = text_at("gsd/schema").unwrap_or_default();
    let version_node = f.get("gsd/schema_version");
    let version = version_node.as_ref().and_then(|n| n.items()).map(|i| i.map(|x| x.as_i64()).collect::<Vec<_>>());
    let schema_version = match version {
        Some(v) => match v.as_slice() {
            [Some(a), Some(b)] if (0..=0xffff).contains(a) && (0..=0xffff).contains(b) => {
                (u32::try_from(*a).unwrap_or(0) << 16) | u32::try_from(*b).unwrap_or(0)
            }
            _ => {
                return Err(bad(
                    "/gsd/schema_version".into(),
                    "schema_version must be [major, minor], each 0 to 65535",
                ));
            }
        },
        None => 0,
    };
    let mut chunks = Vec::new();
    let mut sources = Vec::new();
    for (frame, node) in frames.enumerate() {
        let pairs = node.pairs().ok_or_else(|| bad(format!("/frames/{frame}"), "a frame must be a mapping"))?;
        for (k, v) in pairs {
            let name = k.key_text();
            let path = format!("/frames/{frame}/{}", rasdf::tree::escape_step(&name));
            let (type_id, n, m, bytes) = if v.is_asdf_tag("core/ndarray") {
                let (datatype, _, shape) = f.array_at(v).meta().map_err(|e| e.at_path(&path))?;
                let t = gsd::type_of(&datatype)
                    .ok_or_else(|| bad(path.clone(), &format!("GSD holds no {datatype} arrays")))?;
                let (n, m) = match shape.as_slice() {
                    [n] => (*n, 1),
                    [n, m] => (*n, *m),
                    _ => return Err(bad(path, "GSD holds arrays of 1 or 2 dimensions")),
                };
                let m = u32::try_from(m).map_err(|_| bad(path.clone(), "more than 2^32 columns"))?;
                let bytes = (n * m as usize * datatype.size()) as u64;
                sources.push(GsdSource::Array(v, path));
                (t, n as u64, m, bytes)
            } else if let Some(s) = v.as_str() {
                sources.push(GsdSource::Text(s));
                (gsd::TYPE_CHARACTER, s.len() as u64, 1, s.len() as u64)
            } else {
                return Err(bad(path, "a chunk must be an array or text"));
            };
            chunks.push(gsd::ChunkPlan { frame: frame as u64, name, type_id, n, m, bytes });
        }
    }
    let layout = gsd::Layout::new(&application, &schema, schema_version, &chunks)
        .map_err(|e| Error::format(e, Location::default()))?;
    Ok((layout, sources))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rasdf::block::{BlockHeader, codec};

    /// What `write_elements` writes of `count` elements of `n` bytes from byte `skip` of
    /// `data`, each `part` reversed when swapped.
    fn expected(data: &[u8], skip: usize, count: usize, n: usize, part: Option<usize>) -> Vec<u8> {
        let mut out = Vec::new();
        for e in data[skip..skip + count * n].chunks_exact(n) {
            match part {
                Some(p) => e.chunks_exact(p).for_each(|h| out.extend(h.iter().rev())),
                None => out.extend_from_slice(e),
            }
        }
        out
    }

    #[test]
    fn element_spans_write_the_elements_however_the_pieces_fall() {
        let data = rasdf::samples::noise(5000, 7);
        let cases = [
            ("float64", ByteOrder::Big, Some(8)),
            ("complex128", ByteOrder::Big, Some(8)),
            ("int16", ByteOrder::Big, Some(2)),
            ("uint8", ByteOrder::Big, None),
            ("float32", ByteOrder::Little, None),
        ];
        let mut seed = 1u64;
        for (name, order, part) in cases {
            let datatype = Datatype::Scalar(*ScalarType::ALL.iter().find(|t| t.name() == name).unwrap());
            let n = datatype.size();
            for skip in [0, 1, 5, 12, 13] {
                let count = (data.len() - skip - 7) / n;
                let want = expected(&data, skip, count, n, part);
                // Pieces of 1 byte, of every size to 41, and of random sizes.
                for cut in 1..42 {
                    let mut span = ElementSpan::new(&datatype, order, skip, count).unwrap();
                    let mut got = Vec::new();
                    let mut at = 0;
                    while at < data.len() {
                        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        let len = if cut == 41 { 1 + (seed >> 33) as usize % 300 } else { cut };
                        let end = (at + len).min(data.len());
                        span.feed(&data[at..end], &mut got).unwrap();
                        at = end;
                    }
                    assert!(got == want, "{name} {order:?}, skip {skip}, pieces of {cut}");
                    assert_eq!((span.left, span.carry.len()), (0, 0));
                }
            }
        }
    }

    /// An ASDF file of one zlib block holding `data`, with `arrays` (YAML mappings
    /// without `source`) over it.
    fn one_block_file(data: &[u8], arrays: &[(&str, &str)]) -> Vec<u8> {
        let mut tree = String::from(
            "#ASDF 1.0.0\n#ASDF_STANDARD 1.6.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n",
        );
        for (name, body) in arrays {
            tree.push_str(&format!("{name}: !core/ndarray-1.1.0 {{source: 0, {body}}}\n"));
        }
        tree.push_str("...\n");
        let mut out = tree.into_bytes();
        let stored = codec::encode(Compression::Zlib, data).unwrap();
        let len = stored.len() as u64;
        let header = BlockHeader {
            offset: out.len() as u64,
            header_size: 48,
            flags: 0,
            compression: Compression::Zlib,
            allocated_size: len,
            used_size: len,
            data_size: data.len() as u64,
            checksum: [0; 16],
        };
        out.extend_from_slice(&header.to_bytes());
        out.extend_from_slice(&stored);
        out
    }

    #[test]
    fn compressed_arrays_are_written_piece_by_piece_as_they_are_written_whole() {
        // 1 MiB of data: four of the zlib decoder's pieces, cut inside elements when
        // an array starts at an odd offset.
        let data = rasdf::samples::noise(1 << 20, 3);
        let arrays = [
            ("whole", "datatype: float64, byteorder: big, shape: [131072]"),
            ("odd", "datatype: float64, byteorder: big, shape: [100000], offset: 12"),
            ("complex", "datatype: complex128, byteorder: big, shape: [1000, 60], offset: 4"),
            ("little", "datatype: int32, byteorder: little, shape: [5, 50000], offset: 3"),
            ("text", "datatype: [ascii, 7], byteorder: big, shape: [3000], offset: 1"),
            ("row", "datatype: uint16, byteorder: big, shape: [1, 1, 70000], offset: 1"),
            ("strided", "datatype: float32, byteorder: big, shape: [1000, 100], strides: [800, 4]"),
        ];
        let bytes = one_block_file(&data, &arrays);
        // Streamed from any size of zlib block; the other file holds its blocks whole.
        let pieces = AsdfFile::options().stream_zlib_stats_from(0).from_bytes(bytes.clone()).unwrap();
        let whole = AsdfFile::options().from_bytes(bytes).unwrap();
        let written = |name: &str, column_major: bool| {
            let mut want = Vec::new();
            write_elements(&whole.array(name).unwrap().read_dyn().unwrap(), column_major, &mut want).unwrap();
            let mut got = Vec::new();
            write_ndarray_once(&pieces, pieces.get(name).unwrap(), column_major, &mut got).unwrap();
            assert!(got == want, "{name}, column-major {column_major}");
        };
        let in_pieces = |name: &str| {
            let once = pieces.array(name).unwrap().read_once(|_, _| Some(())).unwrap();
            matches!(once, rasdf::file::ReadOnce::Pieces { .. })
        };
        for (name, _) in arrays {
            assert_eq!(in_pieces(name), name != "strided", "{name}");
            let array = whole.array(name).unwrap().read_dyn().unwrap();
            let shape = pieces.array_at(pieces.get(name).unwrap()).meta().unwrap();
            assert_eq!(shape, (array.datatype.clone(), array.byteorder, array.shape.clone()));
            written(name, false);
            // Nothing was left decoded in the file's cache (but by the strided array,
            // last, which reads the block whole, through the cache).
            assert_eq!(in_pieces(name), name != "strided", "{name}");
        }
        // In column-major order, arrays of one axis longer than 1 are still written in
        // pieces; others whole.
        for (name, _) in arrays {
            written(name, true);
        }
    }
}
