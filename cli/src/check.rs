//! `rasdf check FILE`: walk and decode every block, verify checksums and the index.

use std::io::{self, Write};
use std::path::Path;

use super::Outcome;
use rasdf::block::ChecksumStatus;
use rasdf::index::IndexStatus;
use rasdf::{AsdfFile, OpenOptions};

/// Checks the file at `path` and writes one line per block and one per problem to `out`.
///
/// Returns [`Outcome::Ok`] when the file is sound (warnings allowed: a missing or stale
/// index, junk after the blocks), [`Outcome::Failed`] when it is damaged.
///
/// # Errors
/// Only errors writing to `out`.
pub fn run(path: &Path, options: &OpenOptions, out: &mut impl Write) -> io::Result<Outcome> {
    let file = match crate::remote::open(path, options) {
        Ok(f) => f,
        // A file that cannot be opened (missing, a folder, no permission) is not damaged:
        // the caller named the wrong thing.
        Err(e) if matches!(e.kind(), rasdf::ErrorKind::Io(_)) => {
            writeln!(out, "error: {e}")?;
            return Ok(Outcome::Unopened);
        }
        Err(e) => {
            writeln!(out, "error: {e}")?;
            writeln!(out, "{}: damaged", path.display())?;
            return Ok(Outcome::Failed);
        }
    };
    let outcome = report(&file, &path.display().to_string(), out)?;
    // The verdict stands only for the file as it was read.
    if let Err(e) = file.check_unchanged() {
        writeln!(out, "error: {e}")?;
        return Ok(Outcome::Failed);
    }
    Ok(outcome)
}

/// Checks an open file; `name` heads the report.
///
/// # Errors
/// Only errors writing to `out`.
pub fn report(file: &AsdfFile, name: &str, out: &mut impl Write) -> io::Result<Outcome> {
    let mut errors = 0usize;
    let mut warnings = 0usize;
    let h = file.header();
    let tree = match &h.tree {
        Some(r) => format!("tree at bytes {}..{}", r.start, r.end),
        None => "no tree".to_string(),
    };
    let streamed = file.blocks().last().is_some_and(|b| b.is_streamed());
    writeln!(
        out,
        "{name}: ASDF {}, standard {}, {tree}, {} block{}",
        h.file_format_version,
        h.standard_version.as_deref().unwrap_or("1.0.0 (not stated)"),
        file.blocks().len(),
        if file.blocks().len() == 1 { "" } else { "s" }
    )?;
    for w in file.warnings() {
        writeln!(out, "warning: {w}")?;
        warnings += 1;
    }
    warnings += off_standard_tags(file, out)?;
    let statuses = file.verify_blocks();
    let sound: Vec<bool> = statuses.iter().map(Result::is_ok).collect();
    let mismatch = |e: &rasdf::Error| {
        matches!(e.kind(), rasdf::ErrorKind::Block(rasdf::block::BlockError::ChecksumMismatch { .. }))
    };
    for (n, (b, status)) in file.blocks().iter().zip(statuses).enumerate() {
        let sum = match &status {
            Ok(ChecksumStatus::None) => "checksum none",
            Ok(ChecksumStatus::MatchesStored) => "checksum ok",
            Ok(ChecksumStatus::MatchesDecoded) => "checksum ok (of decoded data, asdf < 5.3)",
            Err(e) if mismatch(e) => "checksum mismatch",
            Err(_) => "checksum not verified",
        };
        let kind = if b.is_streamed() { ", streamed" } else { "" };
        writeln!(
            out,
            "block {n} at byte {}: {}{kind}, used {}, data {}, allocated {}, {sum}",
            b.offset, b.compression, b.used_size, b.data_size, b.allocated_size
        )?;
        if let Err(e) = status {
            writeln!(out, "error: {e}")?;
            errors += 1;
        }
    }
    if let Some(e) = file.blocks_error() {
        writeln!(out, "error: {e}")?;
        errors += 1;
    }
    // Every array the tree declares must resolve: its block (or external file) exists
    // and holds the bytes its layout needs.
    let paths = file.ndarray_nodes();
    let mut bad_arrays = 0usize;
    for (path, node) in &paths {
        // An array whose block failed above is not readable (its bytes are not the
        // ones written), and one verified above is not decoded again.
        let failed_block = match file.ndarray_block(*node) {
            Ok(Some(n)) => (sound.get(n) == Some(&false)).then_some(n),
            _ => None,
        };
        if let Some(n) = failed_block {
            writeln!(out, "error: tree path {path}: its data is in block {n}, which failed (above)")?;
            errors += 1;
            bad_arrays += 1;
        } else if let Err(e) = file.check_ndarray_at(*node, |n| sound.get(n) == Some(&true)) {
            writeln!(out, "error: {}", e.at_path(path))?;
            errors += 1;
            bad_arrays += 1;
        } else if let Some(strides) = node.key("strides")
            && let Some(mut items) = strides.items()
            && items.any(|d| d.as_i64() == Some(0))
        {
            // The schema allows no stride of 0; numpy, and so the reference, read one.
            writeln!(
                out,
                "warning: tree path {path}: a stride of 0, which the ndarray schema does not allow (read as numpy reads it)"
            )?;
            warnings += 1;
        }
    }
    if !paths.is_empty() {
        writeln!(out, "arrays: {} declared, {} readable", paths.len(), paths.len() - bad_arrays)?;
    }
    // The tree against the schemas of the tags its standard lists, as `asdftool validate`
    // checks it (the reference refuses to write such a tree).
    let invalid = rasdf::schema::validate(file.tree(), Some(file.header().standard()));
    for e in &invalid {
        writeln!(out, "error: schema: {e}")?;
    }
    errors += invalid.len();
    match file.index_status() {
        IndexStatus::Valid => writeln!(out, "block index: ok")?,
        IndexStatus::Missing if file.blocks().is_empty() || streamed => {
            writeln!(out, "block index: none (not expected)")?;
        }
        IndexStatus::Missing => {
            writeln!(out, "warning: no block index; blocks were found by reading their headers")?;
            warnings += 1;
        }
        // Already among the file's warnings.
        IndexStatus::Invalid(_) => {}
    }
    let verdict = if errors > 0 { "damaged" } else { "sound" };
    writeln!(out, "{name}: {verdict} ({errors} error{}, {warnings} warning{})", plural(errors), plural(warnings))?;
    Ok(if errors > 0 { Outcome::Failed } else { Outcome::Ok })
}

/// Warns of core tags the file's ASDF Standard does not list (`core/ndarray-1.0.0` in a
/// 1.6.0 file): rasdf reads them, the reference leaves them unconverted. The first ten
/// are named; returns the number of warning lines.
fn off_standard_tags(file: &AsdfFile, out: &mut impl Write) -> io::Result<usize> {
    const NAMED: usize = 10;
    let standard = file.header().standard();
    let mut found = Vec::new();
    let mut count = 0usize;
    file.tree().walk(|path, node| {
        if node.in_standard(standard) == Some(false) {
            count += 1;
            if found.len() < NAMED {
                found.push((path.to_string(), node.tag().unwrap_or_default().to_string()));
            }
        }
    });
    for (path, tag) in &found {
        let path = if path.is_empty() { "/" } else { path };
        writeln!(
            out,
            "warning: tree path {path}: {tag} is not in ASDF Standard {standard}: rasdf reads it, the reference \
             library leaves it unconverted"
        )?;
    }
    if count > found.len() {
        writeln!(out, "warning: {} more core tags not in ASDF Standard {standard}", count - found.len())?;
        return Ok(found.len() + 1);
    }
    Ok(found.len())
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
