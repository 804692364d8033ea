//! The bytes of an open file that the library keeps: all of it in memory (read at once,
//! or given), a memory map of it (on request: [`super::OpenOptions::memmap`]), or, for
//! a file read by ranges, the parts an open reads ([`SparseBytes`]).

use std::fs::File;
use std::io;
use std::ops::Range;

/// The bytes of a file, as kept by [`super::AsdfFile`].
#[derive(Debug)]
pub enum FileBytes {
    /// A read-only memory map of the file. Reading it is reading the file: bytes another
    /// process changes change under it, and a page the file no longer has (it was cut
    /// short) kills the process with `SIGBUS` when touched, as it does for any map
    /// (numpy's `memmap`, the reference's `memmap=True`). [`FileBytes::check`] tells
    /// when the file is shorter than it was mapped.
    Mapped(Map),
    /// Given in memory (bytes, a stream; a FITS file's ASDF extension copied out of
    /// it): immune to later changes of any file.
    Read(Vec<u8>),
    /// Read into memory at open from a local file, which [`FileBytes::check`] still
    /// watches by its path: the bytes never change, but the file rewritten or cut short
    /// since is told, as for a file read by ranges.
    ReadFrom(Vec<u8>, super::source::WatchedPath),
    /// The length of a file read by ranges, of which only the parts read at open are
    /// present (see [`SparseBytes`]).
    Sparse(SparseBytes),
}

/// A read-only map of a file (or of a range of one), and the file, to tell whether it
/// was cut short.
pub struct Map {
    map: memmap2::Mmap,
    file: File,
    /// Where the map starts in the file.
    offset: u64,
}

impl std::fmt::Debug for Map {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Map").field("offset", &self.offset).field("len", &self.map.len()).finish()
    }
}

impl Map {
    /// Maps `len` bytes of `file` from `offset`.
    ///
    /// # Errors
    /// The map's I/O errors.
    pub fn new(file: &File, offset: u64, len: u64) -> io::Result<Map> {
        let len = usize::try_from(len).map_err(|_| io::Error::new(io::ErrorKind::OutOfMemory, "too large to map"))?;
        let file = file.try_clone()?;
        // SAFETY: the map is read-only; another process may still change or cut the file
        // under it, which this type documents as the caller's hazard (as for any map of
        // a file); the bytes are only ever read through shared slices, and no code here
        // relies on reading the same byte twice giving the same value for its memory
        // safety (bounds-checked indexing throughout).
        let map = unsafe { memmap2::MmapOptions::new().offset(offset).len(len).map(&file)? };
        Ok(Map { map, file, offset })
    }
}

impl Map {
    /// A map of `len` bytes from `offset` of the same file (from this map's start).
    ///
    /// # Errors
    /// The map's I/O errors.
    pub fn window(&self, offset: u64, len: u64) -> io::Result<Map> {
        Map::new(&self.file, self.offset + offset, len)
    }
}

impl FileBytes {
    /// Reads the whole of `file` (opened from `path`, which is watched for changes) into memory.
    ///
    /// # Errors
    /// I/O errors; `UnexpectedEof` if the file shrinks while read; `OutOfMemory` when no
    /// buffer of its length can be had.
    pub fn read(file: &File, path: &std::path::Path) -> io::Result<FileBytes> {
        let watch = super::source::WatchedPath::new(path, file)?;
        let bytes = super::source::read_exact_at(file, 0..watch.len())?;
        // A file that changed while it was read is refused now, not at the first check.
        watch.check()?;
        Ok(FileBytes::ReadFrom(bytes, watch))
    }

    /// Maps the whole of `file` (see [`FileBytes::Mapped`] for what that promises).
    ///
    /// # Errors
    /// The map's I/O errors.
    pub fn map(file: &File) -> io::Result<FileBytes> {
        let len = file.metadata()?.len();
        Map::new(file, 0, len).map(FileBytes::Mapped)
    }

    /// The bytes (a sparse file's: zeros where nothing was read).
    pub fn as_slice(&self) -> &[u8] {
        match self {
            FileBytes::Mapped(m) => &m.map,
            FileBytes::Read(v) | FileBytes::ReadFrom(v, _) => v,
            FileBytes::Sparse(s) => s.as_slice(),
        }
    }

    /// Lets the pages of `range` go from the process's memory when the bytes are mapped
    /// (read again from the file if touched again); nothing otherwise.
    pub fn release(&self, range: Range<usize>) {
        if let FileBytes::Mapped(m) = self
            && range.start < range.end
            && range.end <= m.map.len()
        {
            let base = m.map.as_ptr() as usize;
            // SAFETY: the range lies inside this map, whose pages are file-backed and
            // read-only: letting them go only makes a later read fetch them again.
            unsafe { crate::hugepages::release(base + range.start, base + range.end) };
        }
    }

    /// Whether the bytes are a map of the file.
    pub fn is_mapped(&self) -> bool {
        matches!(self, FileBytes::Mapped(_))
    }

    /// `Ok` unless the bytes are a map of a file that is now shorter than the map (cut
    /// short since it was mapped: reading the pages it lost kills the process), or were
    /// read from a file that changed since (rewritten in place, cut short).
    ///
    /// # Errors
    /// `UnexpectedEof`, saying from which offset the file is gone; the change of a file
    /// read whole ([`super::source::FileChanged`]).
    pub fn check(&self) -> io::Result<()> {
        if let FileBytes::ReadFrom(_, watch) = self {
            return watch.check();
        }
        let FileBytes::Mapped(m) = self else { return Ok(()) };
        let now = m.file.metadata()?.len();
        let end = m.offset + m.map.len() as u64;
        if now < end {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("the file was cut short while mapped: it ends at byte {now}, not {end}"),
            ));
        }
        Ok(())
    }
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

/// A file's length in memory, the parts read present and the rest zeros: an anonymous
/// private mapping (`memmap2`'s, reserving no swap where the system allows it: Linux
/// and macOS `MAP_NORESERVE`; on Windows the pagefile backs the whole length), filled
/// once and read only after. The parts are what opening a file by ranges reads (its
/// header and tree, block headers, block index); no block's data is ever read from it.
pub struct SparseBytes {
    map: memmap2::MmapMut,
    pub(super) len: usize,
    present: Vec<Range<u64>>,
}

impl std::fmt::Debug for SparseBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparseBytes").field("len", &self.len).field("present", &self.present).finish()
    }
}

impl SparseBytes {
    /// `len` bytes holding `pieces` (offset, bytes; each inside `len`).
    ///
    /// # Errors
    /// No memory for the mapping.
    pub(super) fn new(len: u64, pieces: &[(u64, Vec<u8>)]) -> io::Result<SparseBytes> {
        let len = usize::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::OutOfMemory, "the file is too large for this machine"))?;
        let mut present: Vec<Range<u64>> =
            pieces.iter().map(|(at, b)| *at..at + b.len() as u64).filter(|r| !r.is_empty()).collect();
        present.sort_by_key(|r| r.start);
        let mut merged: Vec<Range<u64>> = Vec::new();
        for r in present {
            match merged.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => merged.push(r),
            }
        }
        let mut map = memmap2::MmapOptions::new().len(len).no_reserve_swap().map_anon()?;
        for (at, bytes) in pieces {
            let Ok(at) = usize::try_from(*at) else { continue };
            if let Some(dst) = at.checked_add(bytes.len()).and_then(|end| map.get_mut(at..end)) {
                dst.copy_from_slice(bytes);
            }
        }
        Ok(SparseBytes { map, len, present: merged })
    }

    /// The bytes (zeros where nothing was read).
    pub fn as_slice(&self) -> &[u8] {
        &self.map
    }

    /// How many bytes from `at` on were read, one run.
    pub(super) fn present_run(&self, at: u64) -> u64 {
        self.present.iter().find(|p| p.start <= at && at < p.end).map_or(0, |p| p.end - at)
    }

    /// Whether `range` was read.
    pub fn has(&self, range: Range<u64>) -> bool {
        range.is_empty() || self.present.iter().any(|p| p.start <= range.start && range.end <= p.end)
    }
}
