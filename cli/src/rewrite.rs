//! `defragment`, `explode` and `implode`: rewrite a file with its arrays stored anew.

use std::path::{Path, PathBuf};

use rasdf::block::Compression;
use rasdf::error::Result;
use rasdf::write::{ArrayStorage, Document, WriteOptions};
use rasdf::{AsdfFile, OpenOptions};

/// `<dir>/<stem><suffix>.asdf` for `input` (the stem's bytes kept as they are, UTF-8 or
/// not).
pub fn default_output(input: &Path, suffix: &str) -> PathBuf {
    let mut name = input.file_stem().map(std::ffi::OsStr::to_os_string).unwrap_or_default();
    name.push(suffix);
    name.push(".asdf");
    input.with_file_name(name)
}

/// Rewrites `input` to `output` with every array stored as `storage` and, when given,
/// compressed with `compression`. External files go beside `output`.
///
/// # Errors
/// Reading the input, writing the output.
pub fn rewrite(
    input: &Path,
    output: &Path,
    storage: ArrayStorage,
    compression: Option<Compression>,
    views_only: bool,
) -> Result<()> {
    rewrite_with(&OpenOptions::new(), input, output, storage, compression, views_only, None)
}

/// [`rewrite`], the input opened with `options` (its limits), telling `progress` how
/// many bytes of array data are written.
///
/// # Errors
/// As [`rewrite`].
pub fn rewrite_with(
    options: &OpenOptions,
    input: &Path,
    output: &Path,
    storage: ArrayStorage,
    compression: Option<Compression>,
    views_only: bool,
    progress: Option<rasdf::Progress>,
) -> Result<()> {
    let file = options.open(input)?;
    rewrite_file(&file, output, storage, compression, views_only, progress)
}

/// Rewrites `file` over itself with every array in a block of it, compressed with
/// `compression` when given (each array's own codec otherwise): staged beside it and put
/// in its place only when whole, so that the old file stays whole until then.
///
/// # Errors
/// As [`rewrite`]; a file with no path (a URL).
pub fn rewrite_in_place(
    file: &AsdfFile,
    compression: Option<Compression>,
    views_only: bool,
    progress: Option<rasdf::Progress>,
) -> Result<()> {
    let Some(path) = file.path() else {
        let why = "only a local file can be rewritten in place".to_string();
        return Err(rasdf::Error::new(rasdf::ErrorKind::Usage(why), rasdf::Location::default()));
    };
    let doc = Document::from_file(file)?;
    let storage = Some(ArrayStorage::Internal);
    doc.write_to_path(
        path,
        &WriteOptions::default().storage(storage).compression(compression).views_only(views_only).progress(progress),
    )
}

/// [`rewrite`] from an open file; an output that is a file `file` reads (the file itself
/// or a block file of it) is refused ([`crate::outputs::refuse`]).
///
/// # Errors
/// As [`rewrite`].
pub fn rewrite_file(
    file: &AsdfFile,
    output: &Path,
    storage: ArrayStorage,
    compression: Option<Compression>,
    views_only: bool,
    progress: Option<rasdf::Progress>,
) -> Result<()> {
    // RASDF_TIMINGS=1 reports the two phases (benches/compare.py times the write alone,
    // as it times the reference writing data it has already read).
    crate::outputs::refuse(file, &[output])?;
    let t0 = std::time::Instant::now();
    let doc = Document::from_file(file)?;
    let t1 = std::time::Instant::now();
    let options = WriteOptions::default()
        .storage(Some(storage))
        .compression(compression)
        .views_only(views_only)
        .progress(progress);
    doc.write_to_path(output, &options)?;
    if std::env::var_os("RASDF_TIMINGS").is_some_and(|v| v == "1") {
        eprintln!("timings: read {:.6} s, write {:.6} s", (t1 - t0).as_secs_f64(), t1.elapsed().as_secs_f64());
    }
    Ok(())
}
