//! `rasdf check FILE`: walk and decode every block, verify checksums and the index.

use std::io::{self, Write};
use std::path::Path;

use super::Outcome;
use rasdf::block::ChecksumStatus;
use rasdf::index::IndexStatus;
use rasdf::schema::Schemas;
use rasdf::{AsdfFile, OpenOptions};

/// Checks the file at `path` and writes one line per block and one per problem to `out`.
///
/// Returns [`Outcome::Ok`] when the file is sound (warnings allowed: a missing or stale
/// index, junk after the blocks), [`Outcome::Failed`] when it is damaged.
///
/// # Errors
/// Only errors writing to `out`.
pub fn run(path: &Path, options: &OpenOptions, out: &mut impl Write) -> io::Result<Outcome> {
    run_with(path, options, false, None, out)
}

/// [`run`], the report as text or as JSON (see [`report_with`]), telling `progress` of
/// each block checked.
///
/// # Errors
/// Only errors writing to `out`.
pub fn run_with(
    path: &Path,
    options: &OpenOptions,
    json: bool,
    progress: Option<&rasdf::Progress>,
    out: &mut impl Write,
) -> io::Result<Outcome> {
    run_with_schemas(path, options, json, progress, &Schemas::new(), out)
}

/// [`run_with`], validating the tree against the extension schemas of `schemas` too
/// (`rasdf check --schemas DIR`).
///
/// # Errors
/// Only errors writing to `out`.
pub fn run_with_schemas(
    path: &Path,
    options: &OpenOptions,
    json: bool,
    progress: Option<&rasdf::Progress>,
    schemas: &Schemas,
    out: &mut impl Write,
) -> io::Result<Outcome> {
    let name = crate::remote::shown(path);
    let mut r = Report::new(json, &name);
    r.progress = progress.cloned();
    let file = match options.open_any(path) {
        Ok(f) => f,
        // A remote file that changed while it was read or a server that stopped
        // answering: not opened, a failure (neither damage nor a wrong name).
        Err(e) if crate::remote::failed_while_read(&e) => {
            r.error(out, &e.to_string())?;
            r.finish(out, false)?;
            return Ok(Outcome::Failed);
        }
        // A file that cannot be opened (missing, a folder, no permission) is not damaged:
        // the caller named the wrong thing.
        Err(e) if matches!(e.kind(), rasdf::ErrorKind::Io(_)) => {
            r.error(out, &e.to_string())?;
            r.finish(out, false)?;
            return Ok(Outcome::Unopened);
        }
        Err(e) => {
            r.error(out, &e.to_string())?;
            r.text(out, format_args!("{name}: damaged"))?;
            r.finish(out, true)?;
            return Ok(Outcome::Failed);
        }
    };
    let outcome = check(&file, &mut r, schemas, out)?;
    // The verdict stands only for the file as it was read.
    let outcome = match file.check_unchanged() {
        Err(e) => {
            r.error(out, &e.to_string())?;
            Outcome::Failed
        }
        Ok(()) => outcome,
    };
    r.finish(out, true)?;
    Ok(outcome)
}

/// What `check` found, written as it goes (text) or kept for one JSON document.
struct Report {
    /// The file's name, heading the report.
    name: String,
    /// `None`: text.
    json: Option<serde_json::Map<String, serde_json::Value>>,
    errors: usize,
    warnings: usize,
    /// Checks that could not be made (schema patterns that do not compile...).
    unchecked: usize,
    /// Told of each block checked.
    progress: Option<rasdf::Progress>,
}

impl Report {
    fn new(json: bool, name: &str) -> Report {
        let json = json.then(|| {
            let mut m = serde_json::Map::new();
            m.insert("file".into(), name.into());
            for list in ["blocks", "warnings", "errors", "unchecked"] {
                m.insert(list.into(), serde_json::Value::Array(Vec::new()));
            }
            m
        });
        Report { name: name.to_owned(), json, errors: 0, warnings: 0, unchecked: 0, progress: None }
    }

    fn text(&mut self, out: &mut impl Write, line: std::fmt::Arguments<'_>) -> io::Result<()> {
        if self.json.is_none() {
            writeln!(out, "{line}")?;
        }
        Ok(())
    }

    fn set(&mut self, key: &str, value: serde_json::Value) {
        if let Some(m) = &mut self.json {
            m.insert(key.into(), value);
        }
    }

    fn push(&mut self, list: &str, value: serde_json::Value) {
        if let Some(serde_json::Value::Array(a)) = self.json.as_mut().and_then(|m| m.get_mut(list)) {
            a.push(value);
        }
    }

    fn error(&mut self, out: &mut impl Write, message: &str) -> io::Result<()> {
        self.errors += 1;
        self.push("errors", message.into());
        self.text(out, format_args!("error: {message}"))
    }

    fn warning(&mut self, out: &mut impl Write, message: &str) -> io::Result<()> {
        self.warnings += 1;
        self.push("warnings", message.into());
        self.text(out, format_args!("warning: {message}"))
    }

    /// A check that could not be made: the file is not known to be sound.
    fn unchecked(&mut self, out: &mut impl Write, message: &str) -> io::Result<()> {
        self.unchecked += 1;
        self.push("unchecked", message.into());
        self.text(out, format_args!("unchecked: {message}"))
    }

    /// Ends a JSON report: the document, with whether the file `opened` and is sound.
    fn finish(self, out: &mut impl Write, opened: bool) -> io::Result<()> {
        if let Some(mut m) = self.json {
            m.insert("opened".into(), opened.into());
            m.insert("sound".into(), (opened && self.errors == 0 && self.unchecked == 0).into());
            serde_json::to_writer_pretty(&mut *out, &serde_json::Value::Object(m))?;
            writeln!(out)?;
        }
        Ok(())
    }
}

/// Checks an open file; `name` heads the report.
///
/// # Errors
/// Only errors writing to `out`.
pub fn report(file: &AsdfFile, name: &str, out: &mut impl Write) -> io::Result<Outcome> {
    report_with(file, name, false, out)
}

/// [`report`] as text, or as one JSON document (`--json`):
///
/// `{"file", "asdf_version", "standard", "tree": {"start", "end"} or null,
/// "blocks": [{"index", "offset", "compression", "streamed", "used_size", "data_size",
/// "allocated_size", "checksum" ("ok", "ok_decoded", "none", "mismatch",
/// "not_verified"), "error" (or null)}], "arrays": {"declared", "readable"},
/// "fits" (null, or for ASDF-in-FITS {"hdus": [{"index", "name", "label", "kind",
/// "header_at", "data_at", "data_len", "bitpix", "naxis"}], "asdf_hdu", "asdf": {"start",
/// "end"}}),
/// "block_index" ("ok", "none", "missing", "invalid"), "unvalidated_tags": [{"tag",
/// "nodes"}] (tags without a schema, not validated), "warnings": [..], "errors": [..],
/// "unchecked": [..] (schema checks that could not be made: a pattern that does not
/// compile...; the file is not sound then), "opened", "sound"}`.
///
/// # Errors
/// Only errors writing to `out`.
pub fn report_with(file: &AsdfFile, name: &str, json: bool, out: &mut impl Write) -> io::Result<Outcome> {
    report_with_schemas(file, name, json, &Schemas::new(), out)
}

/// [`report_with`], validating the tree against the extension schemas of `schemas` too.
///
/// # Errors
/// Only errors writing to `out`.
pub fn report_with_schemas(
    file: &AsdfFile,
    name: &str,
    json: bool,
    schemas: &Schemas,
    out: &mut impl Write,
) -> io::Result<Outcome> {
    let mut r = Report::new(json, name);
    let outcome = check(file, &mut r, schemas, out)?;
    r.finish(out, true)?;
    Ok(outcome)
}

fn check(file: &AsdfFile, r: &mut Report, schemas: &Schemas, out: &mut impl Write) -> io::Result<Outcome> {
    use serde_json::json;
    let name = r.name.clone();
    let h = file.header();
    let tree = match &h.tree {
        Some(t) => format!("tree at bytes {}..{}", t.start, t.end),
        None => "no tree".to_string(),
    };
    let streamed = file.blocks().last().is_some_and(|b| b.is_streamed());
    fits_hdus(file, r, out)?;
    r.text(
        out,
        format_args!(
            "{name}: ASDF {}, standard {}, {tree}, {} block{}",
            h.file_format_version,
            h.standard_version.as_deref().unwrap_or("1.0.0 (not stated)"),
            file.blocks().len(),
            if file.blocks().len() == 1 { "" } else { "s" }
        ),
    )?;
    r.set("asdf_version", h.file_format_version.to_string().into());
    r.set("standard", h.standard_version.clone().into());
    r.set("tree", h.tree.as_ref().map_or(serde_json::Value::Null, |t| json!({"start": t.start, "end": t.end})));
    for w in file.warnings() {
        r.warning(out, &w.to_string())?;
    }
    off_standard_tags(file, r, out)?;
    let statuses = file.verify_blocks_with(r.progress.as_ref());
    let sound: Vec<bool> = statuses.iter().map(Result::is_ok).collect();
    let mismatch = |e: &rasdf::Error| {
        matches!(e.kind(), rasdf::ErrorKind::Block(rasdf::block::BlockError::ChecksumMismatch { .. }))
    };
    for (n, (b, status)) in file.blocks().iter().zip(statuses).enumerate() {
        let (sum, key) = match &status {
            Ok(ChecksumStatus::None) => ("checksum none", "none"),
            Ok(ChecksumStatus::MatchesStored) => ("checksum ok", "ok"),
            Ok(ChecksumStatus::MatchesDecoded) => ("checksum ok (of decoded data, asdf < 5.3)", "ok_decoded"),
            Err(e) if mismatch(e) => ("checksum mismatch", "mismatch"),
            Err(_) => ("checksum not verified", "not_verified"),
        };
        let kind = if b.is_streamed() { ", streamed" } else { "" };
        r.text(
            out,
            format_args!(
                "block {n} at byte {}: {}{kind}, used {}, data {}, allocated {}, {sum}",
                b.offset, b.compression, b.used_size, b.data_size, b.allocated_size
            ),
        )?;
        r.push(
            "blocks",
            json!({
                "index": n, "offset": b.offset, "compression": b.compression.to_string(),
                "streamed": b.is_streamed(), "used_size": b.used_size, "data_size": b.data_size,
                "allocated_size": b.allocated_size, "checksum": key,
                "error": status.as_ref().err().map(ToString::to_string),
            }),
        );
        if let Err(e) = status {
            r.error(out, &e.to_string())?;
        }
    }
    if let Some(e) = file.blocks_error() {
        r.error(out, &e.to_string())?;
    }
    // Every array the tree declares must resolve: its block (or external file) exists
    // and holds the bytes its layout needs.
    let paths: Vec<_> = file.arrays().collect();
    let mut bad_arrays = 0usize;
    for array in &paths {
        let (path, node) = (array.path().unwrap_or_default(), array.node());
        // An array whose block failed above is not readable (its bytes are not the
        // ones written), and one verified above is not decoded again.
        let failed_block = match array.block() {
            Ok(Some(n)) => (sound.get(n) == Some(&false)).then_some(n),
            _ => None,
        };
        if let Some(n) = failed_block {
            r.error(out, &format!("tree path {path}: its data is in block {n}, which failed (above)"))?;
            bad_arrays += 1;
        } else if let Err(e) = array.check(|n| sound.get(n) == Some(&true)) {
            r.error(out, &e.at_path(path).to_string())?;
            bad_arrays += 1;
        } else if let Ok(Some(said)) = file.fits_disagreement(node) {
            r.warning(out, &format!("tree path {path}: {said}"))?;
        } else if let Some(strides) = node.key("strides")
            && let Some(mut items) = strides.items()
            && items.any(|d| d.as_i64() == Some(0))
        {
            // The schema allows no stride of 0; numpy, and so the reference, read one.
            r.warning(
                out,
                &format!(
                    "tree path {path}: a stride of 0, which the ndarray schema does not allow (read as numpy reads it)"
                ),
            )?;
        }
    }
    if !paths.is_empty() {
        r.text(out, format_args!("arrays: {} declared, {} readable", paths.len(), paths.len() - bad_arrays))?;
    }
    r.set("arrays", json!({"declared": paths.len(), "readable": paths.len() - bad_arrays}));
    // The tree against the schemas of the tags its standard lists (and the extensions'
    // given), as `asdftool validate` checks it (the reference refuses to write such a tree).
    // With extensions' schemas, the tree with their defaults filled in, as the reference
    // fills them before it validates (standards up to 1.5.0).
    let standard = file.header().standard();
    let filled = (!schemas.is_empty() && standard != "1.6.0").then(|| {
        let mut tree = file.tree().clone();
        rasdf::schema::fill_defaults_with(&mut tree, standard, schemas);
        tree
    });
    let invalid = rasdf::schema::validate_with(filled.as_ref().unwrap_or(file.tree()), Some(standard), schemas);
    for e in &invalid {
        match e.kind {
            rasdf::schema::SchemaErrorKind::CannotCheck => r.unchecked(out, &format!("schema: {e}"))?,
            _ => r.error(out, &format!("schema: {e}"))?,
        }
    }
    // What validation could not check: tags without a schema here (an extension's).
    let unchecked = rasdf::schema::tags_without_schema_with(file.tree(), Some(file.header().standard()), schemas);
    if !unchecked.is_empty() {
        const NAMED: usize = 8;
        let mut named: Vec<String> = unchecked.iter().take(NAMED).map(|(t, n)| format!("{t} ({n})")).collect();
        if unchecked.len() > NAMED {
            named.push(format!("{} more", unchecked.len() - NAMED));
        }
        // Without `--schemas`, a hint of how to have them validated.
        let hint = if schemas.is_empty() { " (--schemas DIR adds an extension's schemas)" } else { "" };
        r.text(
            out,
            format_args!(
                "not validated: {} tag{} without a schema here: {}{hint}",
                unchecked.len(),
                plural(unchecked.len()),
                named.join(", ")
            ),
        )?;
    }
    r.set("unvalidated_tags", unchecked.iter().map(|(t, n)| json!({"tag": t, "nodes": n})).collect());
    let index = match file.index_status() {
        IndexStatus::Valid => {
            r.text(out, format_args!("block index: ok"))?;
            "ok"
        }
        IndexStatus::Missing if file.blocks().is_empty() || streamed => {
            r.text(out, format_args!("block index: none (not expected)"))?;
            "none"
        }
        IndexStatus::Missing => {
            r.warning(out, "no block index; blocks were found by reading their headers")?;
            "missing"
        }
        // Already among the file's warnings.
        IndexStatus::Invalid(_) => "invalid",
    };
    r.set("block_index", index.into());
    let (errors, warnings, unchecked) = (r.errors, r.warnings, r.unchecked);
    // Not sound either when a check could not be made.
    let verdict = match (errors, unchecked) {
        (0, 0) => "sound",
        (0, _) => "cannot check",
        _ => "damaged",
    };
    let unchecked_count =
        if unchecked > 0 { format!(", {unchecked} check{} not made", plural(unchecked)) } else { String::new() };
    r.text(
        out,
        format_args!(
            "{name}: {verdict} ({errors} error{}, {warnings} warning{}{unchecked_count})",
            plural(errors),
            plural(warnings)
        ),
    )?;
    Ok(if errors > 0 || unchecked > 0 { Outcome::Failed } else { Outcome::Ok })
}

/// The HDUs of the FITS file holding the ASDF file (ASDF-in-FITS), one line each; a
/// damaged HDU (cut short, a header that does not read) is an error, bytes after the
/// last HDU a warning. Nothing for a plain ASDF file.
fn fits_hdus(file: &AsdfFile, r: &mut Report, out: &mut impl Write) -> io::Result<()> {
    use serde_json::json;
    let (Some(fits), Some((asdf, range))) = (file.fits(), file.fits_extension()) else {
        r.set("fits", serde_json::Value::Null);
        return Ok(());
    };
    let name = r.name.clone();
    let hdus = fits.hdus();
    let kind = hdus.get(asdf).map(|h| format!("{}, {}", h.label(), h.kind)).unwrap_or_default();
    r.text(
        out,
        format_args!(
            "{name}: FITS, {} HDU{}; the ASDF file is the data of HDU {asdf} ({kind}), bytes {}..{} (the offsets \
             of its tree and blocks below count from there)",
            hdus.len(),
            plural(hdus.len()),
            range.start,
            range.end
        ),
    )?;
    let mut listed = Vec::new();
    for h in hdus {
        let axes: Vec<String> = h.naxis.iter().map(ToString::to_string).collect();
        let data = if h.naxis.is_empty() {
            "no data".to_string()
        } else {
            format!(
                "BITPIX {}, NAXIS ({}), data at byte {}, {} bytes",
                h.bitpix,
                axes.join(", "),
                h.data_at,
                h.data_len
            )
        };
        r.text(out, format_args!("HDU {} at byte {}: {} {}, {data}", h.index, h.header_at, h.label(), h.kind))?;
        listed.push(json!({
            "index": h.index, "name": h.name, "label": h.label(), "kind": h.kind.to_string(), "header_at": h.header_at,
            "data_at": h.data_at, "data_len": h.data_len, "bitpix": h.bitpix, "naxis": h.naxis,
        }));
    }
    r.set("fits", json!({"hdus": listed, "asdf_hdu": asdf, "asdf": {"start": range.start, "end": range.end}}));
    if let Some(e) = fits.error() {
        r.error(out, &e.to_string())?;
    }
    if let Some(at) = fits.trailing() {
        r.warning(out, &format!("byte {at}: bytes after the last HDU that are not an HDU (astropy ignores them)"))?;
    }
    Ok(())
}

/// Warns of core tags the file's ASDF Standard does not list (`core/ndarray-1.0.0` in a
/// 1.6.0 file): rasdf reads them, the reference leaves them unconverted. The first ten
/// are named.
fn off_standard_tags(file: &AsdfFile, r: &mut Report, out: &mut impl Write) -> io::Result<()> {
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
        r.warning(
            out,
            &format!(
                "tree path {path}: {tag} is not in ASDF Standard {standard}: rasdf reads it, the reference library \
                 leaves it unconverted"
            ),
        )?;
    }
    if count > found.len() {
        r.warning(out, &format!("{} more core tags not in ASDF Standard {standard}", count - found.len()))?;
    }
    Ok(())
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
