//! Staged writes where there is no Unix: a named hidden file in the target's folder,
//! created exclusively and renamed over the target (see the [parent module](super)).

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use super::StageOptions;

/// A file write in progress, invisible under the target's name until [`Staged::commit`].
///
/// Dropping it without committing discards the content and leaves the target's folder as it was.
pub struct Staged {
    file: File,
    target: PathBuf,
    sync: bool,
    temp: TempPath,
}

/// The temporary file's path, removed when dropped unless taken.
struct TempPath(Option<PathBuf>);

impl Drop for TempPath {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl fmt::Debug for Staged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Staged").field("target", &self.target).field("how", &"named").field("sync", &self.sync).finish()
    }
}

/// `.rasdf-<16 hex>.tmp`, from a value the standard library keys from the system.
fn temp_name() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    format!(".rasdf-{:016x}.tmp", h.finish())
}

fn with_path(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

impl Staged {
    /// Begins a write destined for `path` (see the [module docs](super)).
    ///
    /// # Errors
    /// A folder that cannot be written, a target that is a folder or not a regular file.
    pub fn new(path: &Path) -> io::Result<Staged> {
        Self::new_with(path, StageOptions::default())
    }

    /// Like [`Staged::new`], with options.
    ///
    /// # Errors
    /// As [`Staged::new`].
    pub fn new_with(path: &Path, options: StageOptions) -> io::Result<Staged> {
        let path = &super::through_links(path)?;
        if let Ok(m) = std::fs::metadata(path) {
            if m.is_dir() {
                return Err(with_path(io::ErrorKind::IsADirectory.into(), "cannot write", path));
            }
            if !m.is_file() {
                let e = io::Error::new(io::ErrorKind::InvalidInput, "not a regular file");
                return Err(with_path(e, "cannot replace", path));
            }
        }
        if path.file_name().is_none() {
            return Err(with_path(io::ErrorKind::InvalidInput.into(), "not a file path:", path));
        }
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        for _ in 0..64 {
            let temp = dir.join(temp_name());
            match OpenOptions::new().read(true).write(true).create_new(true).open(&temp) {
                Ok(file) => {
                    return Ok(Staged {
                        file,
                        target: path.to_path_buf(),
                        sync: options.sync,
                        temp: TempPath(Some(temp)),
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(with_path(e, "cannot create a temporary file for", path)),
            }
        }
        Err(with_path(io::ErrorKind::AlreadyExists.into(), "no free temporary name for", path))
    }

    /// The staged file: a normal read-write [`File`], initially empty. What [`Staged::commit`] puts in place is
    /// its whole content.
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// The path this write is destined for.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Puts the content in place atomically: afterwards the target holds the whole new content; before, it held
    /// the whole old content (or did not exist).
    ///
    /// # Errors
    /// The sync or the rename; the target is then unchanged and the temporary file removed.
    pub fn commit(mut self) -> io::Result<()> {
        self.prepare()?;
        self.finish()
    }

    fn prepare(&mut self) -> io::Result<()> {
        if self.sync {
            self.file.sync_all().map_err(|e| with_path(e, "cannot sync the temporary file for", &self.target))?;
        }
        Ok(())
    }

    fn finish(self) -> io::Result<()> {
        let Staged { file, target, mut temp, .. } = self;
        // Closed first: a file still open cannot be renamed everywhere.
        drop(file);
        let Some(from) = temp.0.take() else { return Ok(()) };
        std::fs::rename(&from, &target).map_err(|e| {
            let _ = std::fs::remove_file(&from);
            with_path(e, "cannot rename into place", &target)
        })
    }
}

/// Commits several staged writes, in order: all synced first, then renamed one after the other (see the Unix
/// version's documentation for what a failure between two renames leaves).
///
/// # Errors
/// The first that fails; the writes not yet committed are discarded.
pub fn commit_all(staged: Vec<Staged>) -> io::Result<()> {
    let mut staged = staged;
    for s in &mut staged {
        s.prepare()?;
    }
    for s in staged {
        s.finish()?;
    }
    Ok(())
}

/// Here temporary names are only left by a process killed while it writes; there is no
/// signal handler to remove them from.
pub fn remove_pending_files() {}

/// Nothing to sweep here: the Unix version removes names left by writers killed between
/// naming a file and renaming it, which this version has no such window for.
pub fn sweep_stale(_dir: &Path) {}

/// Whether the symbolic link at `path` may be followed by a write: always here (the
/// sticky-folder rule is Unix's).
pub(super) fn may_follow(_path: &Path, _link: &std::fs::Metadata) -> bool {
    true
}
