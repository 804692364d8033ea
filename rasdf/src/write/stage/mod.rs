//! Staged, atomic file writes: the one mechanism by which rasdf writes a file "fully under no visible name, then
//! puts it in place".
//!
//! [`Staged::new`] begins a write destined for a path and hands out a normal read-write [`File`]
//! ([`Staged::file`]); [`Staged::commit`] puts the finished content in place atomically. Dropping a [`Staged`]
//! without committing leaves the folder exactly as it was.
//!
//! # How it is done
//!
//! * Linux: an **unnamed** temporary file in the target's folder (`O_TMPFILE`, mode 0600). A crash or `kill -9`
//!   at any point of the long write leaves nothing behind. On commit the file is given the mode a normal create
//!   would have, linked to a fresh random hidden name (`.rasdf-<16 hex>.tmp`) and renamed over the target; a name
//!   exists only for the few microseconds between `linkat` and `renameat`.
//! * Other Unix systems, and where `O_TMPFILE` is refused: a **named** hidden file `.rasdf-<16 hex>.tmp` in the
//!   same folder, created with `O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600, and renamed over the target. A `kill -9`
//!   during the write leaves this file behind; a binary's signal handlers need not: see
//!   [`remove_pending_files`], and [`sweep_stale`] for what a killed writer left.
//! * Elsewhere (Windows): a named hidden file `.rasdf-<16 hex>.tmp` in the same folder, created exclusively, and
//!   renamed over the target (`MoveFileEx` with `MOVEFILE_REPLACE_EXISTING`, which `std::fs::rename` uses).
//! * Temporary names are never reused: an existing name (even a planted symlink) makes the creation fail and
//!   another random name is tried, so no symlink is ever followed.
//! * If the target is a symbolic link, the file it leads to is replaced (the link is
//!   followed as `open(2)` follows it, a dangling one to the name it holds) and the link
//!   stays, as a program writing through the link would leave it. A hard link is split:
//!   the new file is a new inode under the target's name.
//!
//! # Mode (Unix)
//!
//! If the target exists as a regular file its permission bits (`0o777`; set-user-ID, set-group-ID and sticky bits
//! are not carried over) are kept; otherwise the new file gets `0o666 & !umask`, the umask being read from
//! `/proc/self/status` (never by calling `umask(2)`, which is process-wide and racy; `0o022` where it cannot be
//! read). Owner and group are those of the writing process; they are not copied from the old file.
//!
//! # Targets that are not regular files
//!
//! A target that exists and is a folder, a FIFO, a device or a socket is refused (`InvalidInput`, or `EISDIR`):
//! it is never replaced by a file. Writing into such a target, or to standard output, is a binary's choice: the
//! command line stages the output in a temporary folder and copies it there.
//!
//! # For binaries
//!
//! A library sets no process-wide policy: this module installs no signal handler and sweeps no folder by itself.
//! A binary may, early in `main`, ignore `SIGXFSZ` (so that exceeding `ulimit -f` makes `write` fail with `EFBIG`,
//! which the library reports and cleans up after) and call [`remove_pending_files`] from its `SIGINT`, `SIGTERM`
//! and `SIGHUP` handlers; and [`sweep_stale`] a folder before writing into it. The command line does all three.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix::may_follow;
#[cfg(unix)]
pub use unix::{Staged, commit_all, remove_pending_files, sweep_stale};

#[cfg(not(unix))]
mod portable;
#[cfg(not(unix))]
use portable::may_follow;
#[cfg(not(unix))]
pub use portable::{Staged, commit_all, remove_pending_files, sweep_stale};

/// Where a write to `path` puts its file: `path`, or the file a symbolic link there
/// leads to (each link of a chain followed, relative to its folder), as `open(2)`
/// follows it. Under the kernel's rule for links in sticky folders that anyone may
/// write (`/tmp`; `fs.protected_symlinks`), a link there owned by neither this process's
/// user nor the folder's owner is not followed: the write then replaces the link itself,
/// which the folder's sticky bit refuses unless the link is ours.
///
/// # Errors
/// `ELOOP` for a chain of more than 40 links.
pub(crate) fn through_links(path: &Path) -> io::Result<std::path::PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        let link = match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => m,
            _ => return Ok(p),
        };
        if !may_follow(&p, &link) {
            return Ok(p);
        }
        match std::fs::read_link(&p) {
            Ok(to) if to.is_relative() => p = p.parent().map_or_else(|| to.clone(), |parent| parent.join(&to)),
            Ok(to) => p = to,
            Err(_) => return Ok(p),
        }
    }
    Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{}: too many levels of symbolic links", path.display())))
}

/// Options for [`Staged::new_with`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StageOptions {
    /// Make the write durable: `fsync` the file before it is linked/renamed into place, and `fsync` the folder
    /// after the rename (on Unix).
    pub sync: bool,
}

crate::setters::setters!(StageOptions { sync: bool });

/// Writes `bytes` to `path` atomically (see [`Staged`]): `path` holds either its old
/// content or all of the new, never part of it, and a failure leaves nothing behind.
///
/// # Errors
/// I/O errors, with the path.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomically_with(path, |f| f.write_all(bytes))
}

/// Like [`write_atomically`], with `fill` writing the content to the staged file.
///
/// # Errors
/// I/O errors, with the path, and those of `fill`.
pub fn write_atomically_with(path: &Path, fill: impl FnOnce(&mut File) -> io::Result<()>) -> io::Result<()> {
    stage_with(path, StageOptions::default(), fill)?.commit()
}

/// Stages a file for `path` and fills it with `fill`, to be committed by the caller.
pub(crate) fn stage_with(
    path: &Path,
    options: StageOptions,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<Staged> {
    let mut staged = Staged::new_with(path, options)?;
    fill(staged.file())?;
    Ok(staged)
}
