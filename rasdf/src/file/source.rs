//! Where a file's bytes come from when they are read by ranges: a local file by
//! positional reads ([`LocalFile`]), or a remote object ([`crate::remote::Remote`], with
//! the feature `remote`). Every read is fallible: bytes that are not there (a file cut
//! short, a server that sends less) are an error, never zeros; and a source that changed
//! since it was first read (a file rewritten in place, another version of a remote
//! object) says so ([`RangeSource::check`]) rather than mixing versions.

use std::fs::File;
use std::io;
use std::ops::Range;

/// A file read by byte ranges.
pub trait RangeSource: Send + Sync + std::fmt::Debug {
    /// The length in bytes, as first seen.
    fn len(&self) -> u64;

    /// Whether it is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of each range (each inside `0..len()`), in order: all of them, or an
    /// error. Several ranges may be read side by side.
    ///
    /// # Errors
    /// I/O errors; `UnexpectedEof` for bytes that are not there; the source's error for
    /// a change ([`RangeSource::check`]).
    fn read_ranges(&self, ranges: &[Range<u64>]) -> io::Result<Vec<Vec<u8>>>;

    /// The bytes of one range.
    ///
    /// # Errors
    /// As [`RangeSource::read_ranges`].
    fn read_range(&self, range: Range<u64>) -> io::Result<Vec<u8>> {
        self.read_ranges(std::slice::from_ref(&range))?
            .pop()
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "nothing read"))
    }

    /// Reads `range` in parts handed to `consume` in order, as they come (a remote
    /// object's parts as they arrive, so that decoding overlaps fetching).
    ///
    /// # Errors
    /// As [`RangeSource::read_ranges`], and those of `consume`.
    fn read_in_order(&self, range: Range<u64>, consume: &mut dyn FnMut(Vec<u8>) -> io::Result<()>) -> io::Result<()> {
        const PART: u64 = 8 << 20;
        let mut at = range.start;
        while at < range.end {
            let to = range.end.min(at.saturating_add(PART));
            consume(self.read_range(at..to)?)?;
            at = to;
        }
        Ok(())
    }

    /// `Ok` while the source is the one first read; an error once it changed (a local
    /// file rewritten or cut short since it was opened; another version of a remote
    /// object, `RemoteError::Changed`).
    ///
    /// # Errors
    /// That change.
    fn check(&self) -> io::Result<()>;
}

/// A local file that changed since it was opened (rewritten in place, cut short): the
/// error inside the `io::Error` [`LocalFile`] gives for it (see
/// [`crate::Error::is_changed`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FileChanged(pub String);

/// A local file read by positional reads (`pread` on Unix, `seek_read` on Windows): no
/// map, so a file cut short while it is read gives an error, never a signal. The file's
/// length and modification time are taken at open and compared after every read: a
/// file rewritten in place since then is an error, never a mix of two versions. (A file
/// replaced by a rename is read on as the file that was opened.)
#[derive(Debug)]
pub struct LocalFile {
    file: File,
    len: u64,
    stamp: Stamp,
}

/// What tells one version of a file from another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl Stamp {
    fn of(file: &File) -> io::Result<Stamp> {
        let m = file.metadata()?;
        Ok(Stamp { len: m.len(), modified: m.modified().ok() })
    }
}

/// A local file read whole, watched by its path without holding it open (an open file
/// per small file would run a process out of descriptors): a change of the file the
/// path still names (the same one, on Unix: its device and inode) is told as
/// [`LocalFile`] tells it; a file replaced by a rename, or removed, is not a change of
/// the bytes read.
#[derive(Debug)]
pub struct WatchedPath {
    path: std::path::PathBuf,
    stamp: Stamp,
    id: Option<(u64, u64)>,
}

/// The device and inode of a file (Unix); `None` elsewhere.
fn file_id(m: &std::fs::Metadata) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        None
    }
}

impl WatchedPath {
    /// Watches `path`, whose open file `file` is.
    ///
    /// # Errors
    /// Its metadata's I/O errors.
    pub fn new(path: &std::path::Path, file: &File) -> io::Result<WatchedPath> {
        let m = file.metadata()?;
        let stamp = Stamp { len: m.len(), modified: m.modified().ok() };
        // Absolute, so that a later change of the working folder changes nothing.
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        Ok(WatchedPath { path, stamp, id: file_id(&m) })
    }

    /// The length at open.
    pub fn len(&self) -> u64 {
        self.stamp.len
    }

    /// Whether it was empty at open.
    pub fn is_empty(&self) -> bool {
        self.stamp.len == 0
    }

    /// `Ok` while the file the path names is another one (or none), or the one opened
    /// unchanged.
    ///
    /// # Errors
    /// [`FileChanged`] (as [`LocalFile`] gives it) for the same file rewritten or cut.
    pub fn check(&self) -> io::Result<()> {
        let Ok(m) = std::fs::metadata(&self.path) else { return Ok(()) };
        if self.id.is_some() && file_id(&m) != self.id {
            return Ok(());
        }
        let now = Stamp { len: m.len(), modified: m.modified().ok() };
        if now == self.stamp { Ok(()) } else { Err(changed(self.stamp, now)) }
    }
}

/// The error for a file whose stamp went from `was` to `now`.
fn changed(was: Stamp, now: Stamp) -> io::Error {
    if now.len < was.len {
        let e = FileChanged(format!("the file was cut short since it was opened ({} bytes, now {})", was.len, now.len));
        io::Error::new(io::ErrorKind::UnexpectedEof, e)
    } else {
        io::Error::other(FileChanged("the file changed since it was opened (its length or modification time)".into()))
    }
}

impl LocalFile {
    /// Reads `file` by ranges from now on.
    ///
    /// # Errors
    /// Its metadata's I/O errors.
    pub fn new(file: File) -> io::Result<LocalFile> {
        let stamp = Stamp::of(&file)?;
        Ok(LocalFile { file, len: stamp.len, stamp })
    }

    fn changed(&self, now: Stamp) -> io::Error {
        changed(self.stamp, now)
    }
}

impl RangeSource for LocalFile {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> io::Result<Vec<Vec<u8>>> {
        let out = ranges.iter().map(|r| read_exact_at(&self.file, r.clone())).collect::<io::Result<Vec<_>>>()?;
        self.check()?;
        Ok(out)
    }

    fn check(&self) -> io::Result<()> {
        let now = Stamp::of(&self.file)?;
        if now == self.stamp { Ok(()) } else { Err(self.changed(now)) }
    }
}

/// Bytes of a read larger than this are read in parts side by side.
const PARALLEL_PART: usize = 8 << 20;

/// The bytes `range` of `file`, by positional reads, into a buffer fresh from the system
/// (large ones in parts on the thread pool, whose page faults then overlap).
///
/// # Errors
/// I/O errors; `UnexpectedEof` when the file ends before the range does; `OutOfMemory`
/// when no buffer of its length can be had.
pub fn read_exact_at(file: &File, range: Range<u64>) -> io::Result<Vec<u8>> {
    let n = usize::try_from(range.end.saturating_sub(range.start))
        .map_err(|_| io::Error::new(io::ErrorKind::OutOfMemory, "the range does not fit in memory"))?;
    let mut buf = crate::block::codec::zeroed(n)
        .ok_or_else(|| io::Error::new(io::ErrorKind::OutOfMemory, format!("no memory for {n} bytes of the file")))?;
    if n > 2 * PARALLEL_PART {
        use rayon::prelude::*;
        buf.par_chunks_mut(PARALLEL_PART)
            .enumerate()
            .try_for_each(|(i, part)| positional::read_exact(file, part, range.start + (i * PARALLEL_PART) as u64))?;
    } else {
        positional::read_exact(file, &mut buf, range.start)?;
    }
    Ok(buf)
}

#[cfg(unix)]
mod positional {
    use std::fs::File;
    use std::io;
    use std::os::unix::fs::FileExt;

    pub(super) fn read_exact(file: &File, buf: &mut [u8], at: u64) -> io::Result<()> {
        file.read_exact_at(buf, at).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("the file ends before byte {}", at + buf.len() as u64),
            ),
            _ => e,
        })
    }
}

#[cfg(windows)]
mod positional {
    use std::fs::File;
    use std::io;
    use std::os::windows::fs::FileExt;

    pub(super) fn read_exact(file: &File, mut buf: &mut [u8], mut at: u64) -> io::Result<()> {
        let end = at + buf.len() as u64;
        while !buf.is_empty() {
            match file.seek_read(buf, at) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("the file ends before byte {end}"),
                    ));
                }
                Ok(k) => {
                    buf = &mut buf[k..];
                    at += k as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

#[cfg(not(any(unix, windows)))]
mod positional {
    use std::fs::File;
    use std::io::{self, Read, Seek, SeekFrom};

    /// Elsewhere: a seek and a read of a clone of the file, under a lock.
    pub(super) fn read_exact(file: &File, buf: &mut [u8], at: u64) -> io::Result<()> {
        static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _held = LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut f = file.try_clone()?;
        f.seek(SeekFrom::Start(at))?;
        f.read_exact(buf)
    }
}
