//! `rasdf to-yaml FILE -o OUT`: the file as pure YAML (every array inline), like
//! `asdftool to_yaml`; tags, anchors and key order are kept, and the reference library
//! reads OUT to the same tree and values. Unlike the reference's own `to_yaml` it also
//! handles 0-d arrays, inline arrays with nulls and nested structured datatypes.
//!
//! The text is written as it is made, element by element from the arrays' bytes, into
//! the staged output file: memory stays at the input's arrays (a mapped file's, or its
//! decoded blocks) and a megabyte of text, however large the output. A large output may
//! be over the 1 GiB of YAML that readers take by default (`rasdf info` reads it with
//! `--max-tree-bytes`).

use rasdf::AsdfFile;
use rasdf::error::Result;
use rasdf::write::{ArrayStorage, Document, WriteOptions};

fn options() -> WriteOptions {
    WriteOptions::default().storage(Some(ArrayStorage::Inline))
}

/// The whole YAML-only ASDF file for `file`, in memory (for small files: [`write()`]
/// writes a file of any size).
///
/// # Errors
/// Any error reading an array.
pub fn to_yaml(file: &AsdfFile) -> Result<String> {
    let doc = Document::from_file(file)?;
    let mut out = std::io::Cursor::new(Vec::new());
    doc.write(&mut out, None, &options())?;
    Ok(String::from_utf8_lossy(&out.into_inner()).into_owned())
}

/// Writes `to_yaml(file)` to `path` through a temporary file in the same folder, as it
/// is made (the text is never held whole).
///
/// # Errors
/// Reading arrays, or writing the output.
pub fn write(file: &AsdfFile, path: &std::path::Path) -> Result<()> {
    crate::outputs::refuse(file, &[path])?;
    Document::from_file(file)?.write_to_path(path, &options())
}
