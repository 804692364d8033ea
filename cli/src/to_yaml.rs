//! `rasdf to-yaml FILE -o OUT`: the file as pure YAML (every array inline), like
//! `asdftool to_yaml`; tags, anchors and key order are kept, and the reference library
//! reads OUT to the same tree and values. Unlike the reference's own `to_yaml` it also
//! handles 0-d arrays, inline arrays with nulls and nested structured datatypes.

use rasdf::AsdfFile;
use rasdf::error::{Error, Result};
use rasdf::write::{ArrayStorage, Document, WriteOptions};

/// The whole YAML-only ASDF file for `file`.
///
/// # Errors
/// Any error reading an array.
pub fn to_yaml(file: &AsdfFile) -> Result<String> {
    let doc = Document::from_file(file)?;
    let mut out = std::io::Cursor::new(Vec::new());
    let options = WriteOptions { storage: Some(ArrayStorage::Inline), ..WriteOptions::default() };
    doc.write(&mut out, None, &options)?;
    Ok(String::from_utf8_lossy(&out.into_inner()).into_owned())
}

/// Writes `to_yaml(file)` to `path` through a temporary file in the same folder.
///
/// # Errors
/// Reading arrays, or writing the output.
pub fn write(file: &AsdfFile, path: &std::path::Path) -> Result<()> {
    let text = to_yaml(file)?;
    rasdf::write::write_atomically(path, text.as_bytes()).map_err(|e| Error::from(e).in_file(path))
}
