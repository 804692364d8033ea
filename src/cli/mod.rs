//! The command-line tools as library functions: each writes its report to an
//! `impl Write`, so tests call them in process. The binaries only parse arguments.

pub mod args;
pub mod check;
pub mod info;
mod pyrepr;
pub mod rewrite;
pub mod to_yaml;

/// What a command tells its caller to exit with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0: all is well.
    Ok,
    /// Exit 1: the input is damaged or the command failed.
    Failed,
}

impl Outcome {
    /// The process exit code: 0 or 1 (usage errors, 2, are the argument parser's).
    pub fn code(self) -> u8 {
        match self {
            Outcome::Ok => 0,
            Outcome::Failed => 1,
        }
    }
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename, so
/// that `path` holds either its old content or all of the new, never part of it.
///
/// # Errors
/// I/O errors; the temporary file is removed on failure.
pub fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    write_atomically_with(path, |f| f.write_all(bytes))
}

/// Like [`write_atomically`], with `fill` writing the content to the temporary file.
/// The file is not synced to disk: a killed process leaves the old file or the new one,
/// as the rename is atomic; set `RASDF_SYNC=1` (or [`crate::write::WriteOptions::sync`])
/// to also survive a power loss, at the cost of waiting for the disk.
///
/// # Errors
/// I/O errors; the temporary file is removed on failure.
pub fn write_atomically_with(
    path: &std::path::Path,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    stage_with(path, fill)?.commit()
}

/// A file written in full under a temporary name beside its path, put in place by
/// [`Staged::commit`]; dropped uncommitted, it is removed. Several files staged, then
/// committed together, are all replaced or none is when a write fails (an exploded
/// file and its block files).
pub(crate) struct Staged {
    tmp: std::path::PathBuf,
    path: std::path::PathBuf,
    committed: bool,
}

impl Staged {
    /// Where the file goes.
    pub(crate) fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Renames the temporary file into place.
    pub(crate) fn commit(mut self) -> std::io::Result<()> {
        std::fs::rename(&self.tmp, &self.path)?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Writes a temporary file beside `path` with `fill`, to be put in place by
/// [`Staged::commit`] (see [`write_atomically_with`]).
pub(crate) fn stage_with(
    path: &std::path::Path,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> std::io::Result<Staged> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.rasdf-tmp-{}", std::process::id()));
    let mut f = std::fs::File::create(&tmp)?;
    // From here on, a failure removes the temporary file (Staged's drop).
    let staged = Staged { tmp, path: path.to_path_buf(), committed: false };
    fill(&mut f)?;
    if std::env::var_os("RASDF_SYNC").is_some_and(|v| v == "1") {
        f.sync_all()?;
    }
    Ok(staged)
}
