//! `rasdf edit FILE`: the file's opening (its `#` comment lines and YAML tree) in an
//! editor; the edited tree must parse and validate, then it is written:
//! - in place, when it fits in the space before the first block (the rest of that space
//!   is padding of NUL bytes, as the reference pads it): one write, the blocks untouched;
//! - else by a staged rewrite ([`rasdf::write::stage`]): the new opening, the blocks
//!   copied byte for byte, and the block index with the blocks' new offsets, put in place
//!   atomically.
//!
//! An edit that fails (the editor fails, the tree does not parse or validate, the
//! versions change, an array names a block the file does not have, the file changed
//! meanwhile) changes nothing.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use rasdf::index::IndexStatus;
use rasdf::{AsdfFile, OpenOptions};

/// How an edit ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edited {
    /// The text came back unchanged: nothing was written.
    Unchanged,
    /// Written over the old opening, in place.
    InPlace,
    /// The file was rewritten (the new opening did not fit before the first block).
    Rewritten,
}

/// Why an edit was not written.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// The file cannot be edited (not opened, damaged blocks, a remote file).
    #[error("{0}")]
    File(String),
    /// The editor could not be run or failed.
    #[error("the editor {command:?} {what}")]
    Editor {
        /// The command.
        command: String,
        /// What happened.
        what: String,
    },
    /// The edited text is not a tree rasdf may write.
    #[error("the edited tree: {0}")]
    Invalid(String),
    /// An I/O error reading or writing.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        error: io::Error,
    },
}

/// The file's opening as it will be edited, and what follows it.
struct Layout {
    /// `#ASDF` to the end of the tree (or of the comment lines, without a tree).
    text_end: u64,
    /// Where the blocks end: the index's offset when there is one, else the file's end.
    blocks_end: u64,
    /// The blocks' offsets (the first bounds the space the opening may fill in place).
    offsets: Vec<u64>,
    /// Whether the file has a block index (rewritten with the new offsets).
    index: bool,
    /// The file's length and modification time, to see that it did not change meanwhile.
    stamp: (u64, Option<std::time::SystemTime>),
}

fn layout(path: &Path, options: &OpenOptions) -> Result<(AsdfFile, Layout), EditError> {
    let file = options.open(path).map_err(|e| EditError::File(e.to_string()))?;
    // The ASDF file is the data of one HDU: rewriting it would have to move the HDUs
    // after it and rewrite the FITS headers, which `edit` does not do.
    if file.fits().is_some() {
        return Err(EditError::File(format!(
            "{}: an ASDF-in-FITS file is not edited (its tree is the data of a FITS HDU); `rasdf defragment {} -o \
             OUT.asdf` makes an ASDF file of it",
            path.display(),
            path.display()
        )));
    }
    if let Some(e) = file.blocks_error() {
        return Err(EditError::File(format!("{e}: the blocks must be sound to be kept")));
    }
    let h = file.header();
    let text_end = h.tree.as_ref().map_or(h.blocks_from, |t| t.end);
    let offsets: Vec<u64> = file.blocks().iter().map(|b| b.offset).collect();
    let len = file.len();
    let index_at = match file.index_status() {
        IndexStatus::Missing => None,
        _ => {
            // After the last block (or the tree).
            let after = file.blocks().last().map_or(text_end, rasdf::block::BlockHeader::end).min(len);
            let tail = file.read_bytes(after..len).map_err(|e| EditError::File(e.to_string()))?;
            rasdf::index::find(&tail, 0, file.limits()).map(|at| at + after)
        }
    };
    let streamed = file.blocks().last().is_some_and(rasdf::block::BlockHeader::is_streamed);
    let index = index_at.is_some() && !streamed && !offsets.is_empty();
    let stamp = stamp(path)?;
    let layout =
        Layout { text_end, blocks_end: if index { index_at.unwrap_or(len) } else { len }, offsets, index, stamp };
    Ok((file, layout))
}

fn stamp(path: &Path) -> Result<(u64, Option<std::time::SystemTime>), EditError> {
    let m = std::fs::metadata(path).map_err(|error| EditError::Io { path: path.into(), error })?;
    Ok((m.len(), m.modified().ok()))
}

/// Runs `editor` (a shell command line, as `$VISUAL`/`$EDITOR` give it) on the opening
/// of the file at `path` and writes the result (see the module's text). With
/// `again`, an edit that is not valid is offered back to the editor while `again`
/// returns true (it is shown the reason).
///
/// # Errors
/// See [`EditError`]; the file is then unchanged.
pub fn edit(
    path: &Path,
    options: &OpenOptions,
    editor: &str,
    mut again: impl FnMut(&EditError) -> bool,
) -> Result<Edited, EditError> {
    let (file, layout) = layout(path, options)?;
    let original = file.read_bytes(0..layout.text_end).map_err(|e| EditError::File(e.to_string()))?;
    let original = &original[..];
    let scratch = Scratch::new(path, original)?;
    loop {
        run_editor(editor, &scratch.path)?;
        let mut edited =
            std::fs::read(&scratch.path).map_err(|error| EditError::Io { path: scratch.path.clone(), error })?;
        if edited == original {
            return Ok(Edited::Unchanged);
        }
        // An editor that drops the last line break: the tree's `...` ends a line.
        if edited.last().is_some_and(|&b| b != b'\n') {
            edited.push(b'\n');
        }
        if edited == original {
            return Ok(Edited::Unchanged);
        }
        match check(&file, &layout, &edited) {
            Ok(()) => {
                drop(file);
                return write(path, &layout, &edited);
            }
            Err(e) if again(&e) => {}
            Err(e) => return Err(e),
        }
    }
}

/// The copy of the opening the editor works on: `<stem>.yaml` (mode 0600) in a folder
/// of its own (`rasdf-edit-<random>`, mode 0700) in the temporary folder, so that no
/// other user can read or replace it. Removed when dropped, and, while it exists, when
/// the process is ended by `SIGINT`, `SIGTERM` or `SIGHUP` (see [`crate::signals`]).
struct Scratch {
    dir: PathBuf,
    path: PathBuf,
    _cleanup: [crate::signals::Registered; 2],
}

impl Scratch {
    fn new(target: &Path, text: &[u8]) -> Result<Scratch, EditError> {
        let stem = target.file_stem().map_or("tree".into(), |s| s.to_string_lossy().into_owned());
        let io = |path: &Path, error| EditError::Io { path: path.into(), error };
        for _ in 0..16 {
            let dir = std::env::temp_dir().join(format!("rasdf-edit-{}", random_hex()));
            #[cfg_attr(not(unix), allow(unused_mut))]
            let mut builder = std::fs::DirBuilder::new();
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            match builder.create(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io(&dir, e)),
            }
            let path = dir.join(format!("{stem}.yaml"));
            let _cleanup = [crate::signals::register(&path), crate::signals::register(&dir)];
            let scratch = Scratch { _cleanup, dir, path };
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut f = options.open(&scratch.path).map_err(|e| io(&scratch.path, e))?;
            f.write_all(text).map_err(|e| io(&scratch.path, e))?;
            return Ok(scratch);
        }
        Err(EditError::File("no free name for the editor's copy in the temporary folder".into()))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

fn random_hex() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

/// Runs `editor FILE` through the shell, as git runs its editor (so that `$EDITOR` may
/// hold arguments: `code --wait`, `emacs -nw`). A Ctrl-C meant for the editor (which
/// shares the terminal's process group) does not end rasdf while the editor runs; an
/// editor that ends of it has failed, and nothing is written.
fn run_editor(editor: &str, file: &Path) -> Result<(), EditError> {
    let failed = |what: String| EditError::Editor { command: editor.into(), what };
    let mut child = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("{editor} \"$@\""))
        .arg(editor)
        .arg(file)
        .spawn()
        .map_err(|e| failed(format!("could not be run: {e}")))?;
    let status = {
        let _editing = crate::signals::editing(child.id());
        child.wait().map_err(|e| failed(format!("could not be waited for: {e}")))?
    };
    if !status.success() {
        return Err(failed(format!("failed ({status})")));
    }
    Ok(())
}

/// Whether `edited` may replace the opening of `file`.
fn check(file: &AsdfFile, layout: &Layout, edited: &[u8]) -> Result<(), EditError> {
    let bad = |m: String| EditError::Invalid(m);
    let header = rasdf::header::parse(edited).map_err(|(e, at)| bad(format!("byte {at}: {e}")))?;
    let old = file.header();
    if header.standard_version != old.standard_version {
        return Err(bad(format!(
            "the #ASDF_STANDARD version may not change ({} to {})",
            old.standard_version.as_deref().unwrap_or("none"),
            header.standard_version.as_deref().unwrap_or("none")
        )));
    }
    let yaml_version = |text: &[u8]| text.windows(9).position(|w| w == b"%YAML 1.1").is_some();
    if old.tree.is_some() && !yaml_version(edited) {
        return Err(bad("the tree must stay YAML 1.1 (%YAML 1.1)".into()));
    }
    let end = header.tree.as_ref().map_or(header.blocks_from, |t| t.end);
    if old.tree.is_some() && header.tree.is_none() {
        return Err(bad("there is no tree (%YAML 1.1 ... ---, ended by a line '...')".into()));
    }
    if edited
        .get(usize::try_from(end).unwrap_or(usize::MAX)..)
        .is_some_and(|rest| !rest.iter().all(u8::is_ascii_whitespace))
    {
        return Err(bad(format!("text after the tree's end ('...') at byte {end}")));
    }
    let parsed =
        OpenOptions::new().limits(*file.limits()).from_bytes(edited.to_vec()).map_err(|e| bad(e.to_string()))?;
    let invalid = rasdf::schema::validate(parsed.tree(), Some(header.standard()));
    if let Some(first) = invalid.first() {
        let more = if invalid.len() > 1 { format!(" (and {} more)", invalid.len() - 1) } else { String::new() };
        return Err(bad(format!("{first}{more}")));
    }
    // Arrays may only name blocks the file has.
    let blocks = layout.offsets.len() as i64;
    for array in parsed.arrays() {
        let (path, node) = (array.path().unwrap_or_default(), array.node());
        if let Some(s) = node.key("source").and_then(|s| s.as_i64())
            && !(-blocks..blocks).contains(&s)
        {
            return Err(bad(format!("tree path {path}: source {s}, but the file has {blocks} blocks")));
        }
    }
    Ok(())
}

fn write(path: &Path, layout: &Layout, edited: &[u8]) -> Result<Edited, EditError> {
    let io = |error| EditError::Io { path: path.into(), error };
    if stamp(path)? != layout.stamp {
        return Err(EditError::File(format!("{} changed while it was edited: not written", path.display())));
    }
    let len = edited.len() as u64;
    if let Some(first) = layout.offsets.first().copied().filter(|&f| len <= f) {
        // In place: the opening and its padding, in one write.
        let mut bytes = edited.to_vec();
        bytes.resize(usize::try_from(first).map_err(|_| io(io::ErrorKind::InvalidInput.into()))?, 0);
        let mut f = std::fs::OpenOptions::new().write(true).open(path).map_err(io)?;
        f.write_all(&bytes).map_err(io)?;
        f.sync_data().map_err(io)?;
        return Ok(Edited::InPlace);
    }
    let mut src = File::open(path).map_err(io)?;
    crate::outputs::sweep(path);
    let from = layout.offsets.first().copied().unwrap_or(layout.text_end);
    rasdf::write::stage::write_atomically_with(path, |out| {
        out.write_all(edited)?;
        src.seek(SeekFrom::Start(from))?;
        let want = layout.blocks_end.saturating_sub(from);
        let copied = io::copy(&mut (&mut src).take(want), out)?;
        if copied != want {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the file was cut short while it was copied"));
        }
        if layout.index {
            let shifted: Vec<u64> = layout.offsets.iter().map(|o| o - from + len).collect();
            out.write_all(&rasdf::index::write(&shifted))?;
        }
        out.sync_data()
    })
    .map_err(io)?;
    Ok(Edited::Rewritten)
}

/// The editor a user chose: `$VISUAL`, else `$EDITOR`, else `vi`.
pub fn default_editor() -> String {
    ["VISUAL", "EDITOR"]
        .into_iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "vi".into())
}
