//! Conversion between ASDF and neighbouring array formats: RawArray (`.ra`, see [`ra`]).
//!
//! [`convert`] reads one file and writes another, the formats told by the input's
//! magic number and the output's extension; `rasdf convert` is a thin main over it.

pub mod ra;

use std::path::Path;

use crate::block::Compression;
use crate::write::{Document, WriteOptions};
use crate::{AsdfFile, Error, ErrorKind, Limits, Location, OpenOptions};

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

/// A file format `convert` reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// ASDF.
    Asdf,
    /// RawArray (`.ra`).
    RawArray,
}

impl Format {
    /// The format an output path's extension names (`.asdf`, `.ra`).
    pub fn from_extension(path: &Path) -> Option<Format> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "asdf" => Some(Format::Asdf),
            "ra" => Some(Format::RawArray),
            _ => None,
        }
    }

    /// The format of a file, told by its first bytes.
    pub fn sniff(bytes: &[u8]) -> Option<Format> {
        if bytes.starts_with(b"#ASDF") {
            Some(Format::Asdf)
        } else if bytes.get(..8).is_some_and(|m| m == ra::MAGIC.to_le_bytes()) {
            Some(Format::RawArray)
        } else {
            None
        }
    }

    /// The format's name.
    pub fn name(self) -> &'static str {
        match self {
            Format::Asdf => "ASDF",
            Format::RawArray => "RawArray",
        }
    }
}

/// How to convert.
#[derive(Debug, Clone)]
pub struct ConvertOptions {
    /// From ASDF: the tree path of the array to write (needed when the file has more
    /// than one). To ASDF: where the array goes (default `data`).
    pub array: Option<String>,
    /// To ASDF: the block's compression.
    pub compression: Compression,
    /// Limits on what is read.
    pub limits: Limits,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions { array: None, compression: Compression::None, limits: Limits::default() }
    }
}

fn usage(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Usage(msg.into()), Location::default())
}

fn convert_error(e: ConvertError, file: &Path) -> Error {
    Error::new(ErrorKind::Convert(e), Location::default()).in_file(file)
}

/// Converts `input` to `output`: the input's format is told by its first bytes, the
/// output's by its extension, and one of them is ASDF. The output is written through
/// a temporary file and a rename, so a failure leaves no partial file in its place.
///
/// # Errors
/// [`ErrorKind::Usage`] for an output extension rasdf does not write, two formats that
/// are not one ASDF and one other, or no array to choose; errors reading either file
/// (with the file, and the byte offset or tree path); I/O errors writing.
pub fn convert(input: &Path, output: &Path, options: &ConvertOptions) -> crate::Result<()> {
    let to = Format::from_extension(output)
        .ok_or_else(|| usage(format!("{}: the output's extension names no format (.asdf, .ra)", output.display())))?;
    let file = std::fs::File::open(input).map_err(|e| Error::from(e).in_file(input))?;
    let len = file.metadata().map_err(|e| Error::from(e).in_file(input))?.len();
    // SAFETY: the map is read-only; a file truncated by another process while mapped
    // faults on reads past its new end, as with every reader of mapped files.
    let map = match len {
        0 => None,
        _ => Some(unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::from(e).in_file(input))?),
    };
    let bytes: &[u8] = map.as_deref().unwrap_or(&[]);
    let from = Format::sniff(bytes).ok_or_else(|| {
        Error::new(
            ErrorKind::Usage("the input is not ASDF or RawArray (no magic number at byte 0)".into()),
            Location::at(0),
        )
        .in_file(input)
    })?;
    match (from, to) {
        (Format::RawArray, Format::Asdf) => {
            let ra = ra::RaFile::parse(bytes, &options.limits).map_err(|e| convert_error(e, input))?;
            let path = options.array.as_deref().unwrap_or("data");
            let (datatype, byteorder, shape, strides) =
                (ra.datatype.clone(), ra.byteorder, ra.shape.clone(), ra.strides.clone());
            let mut doc = Document::new();
            doc.set_array_bytes(path, datatype, byteorder, &shape, &strides, ra.into_data(), options.compression)?;
            doc.write_to_path(output, &WriteOptions::default())
        }
        (Format::Asdf, Format::RawArray) => {
            let f = OpenOptions::new().limits(options.limits).open(input)?;
            let path = pick_array(&f, options.array.as_deref()).map_err(|e| e.in_file(input))?;
            let array = f.ndarray(&path).map_err(|e| e.in_file(input))?;
            let bytes = ra::encode(&array).map_err(|e| convert_error(e, input).at_path(&path))?;
            crate::cli::write_atomically(output, &bytes).map_err(|e| Error::from(e).in_file(output))
        }
        (from, to) => Err(usage(format!(
            "{} to {}: convert reads or writes ASDF on one side, RawArray on the other",
            from.name(),
            to.name()
        ))),
    }
}

/// The array to convert: `wanted`, or the file's only array (a masked array's `mask`
/// array does not count).
fn pick_array(f: &AsdfFile, wanted: Option<&str>) -> crate::Result<String> {
    if let Some(p) = wanted {
        return Ok(p.to_string());
    }
    let paths = f.ndarray_paths();
    let arrays: Vec<&String> =
        paths.iter().filter(|p| !p.strip_suffix("/mask").is_some_and(|base| paths.iter().any(|q| q == base))).collect();
    match arrays.as_slice() {
        [one] => Ok(one.to_string()),
        [] => Err(usage("the file has no array")),
        many => Err(usage(format!(
            "the file has {} arrays; choose one with --array ({})",
            many.len(),
            many.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        ))),
    }
}
