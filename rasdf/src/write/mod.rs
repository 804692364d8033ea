//! Writing ASDF files: the tree, the blocks (compressed as asked, MD5 of the stored
//! bytes), the block index, external (exploded) files; always through a temporary file
//! in the same folder and a rename, so a path holds its old content or all of the new.
//!
//! ```no_run
//! use rasdf::write::{Document, WriteOptions};
//! use rasdf::block::Compression;
//!
//! let mut doc = Document::new();
//! doc.set("meta/telescope", "JWST")?;
//! doc.set("meta/exposure", 120.5)?;
//! let image = ndarray::Array2::<f32>::zeros((64, 64));
//! doc.set_array("sci/data", image, Compression::Zlib)?;
//! doc.write_to_path("out.asdf", &WriteOptions::default())?;
//! # Ok::<(), rasdf::Error>(())
//! ```
//!
//! The parts, by job:
//!
//! - [`Document`] (`document.rs`): the tree being built and its arrays: [`Document::set`]
//!   for scalars, [`Document::set_serialize`] for any serde value (an [`Ndarray`] field
//!   in it becomes an array of its own), [`Document::set_array`] for `ndarray` arrays
//!   ([`IntoArrayBytes`]), [`Document::set_array_bytes`] for raw bytes ([`ArrayBytes`]),
//!   [`Document::from_file`] to rewrite a file;
//! - the layout plan (`plan.rs`): which block or external file each array goes in, the
//!   views written whole or alone, the output tree (the ndarray nodes themselves are
//!   written by `crate::ndarray`'s node writer, beside their reader);
//! - the blocks (`blocks.rs`): compressing (in parallel, at
//!   [`WriteOptions::compression_level`]), hashing, padding and writing them, through a
//!   buffered or a direct (page-cache bypassing) writer;
//! - streaming (`stream.rs`): [`StreamWriter`] for a last block of rows appended after
//!   the tree, and arrays whose data arrives in chunks ([`Document::set_array_chunks`]);
//! - [`stage`]: temporary files renamed into place.

mod array;
mod blocks;
mod document;
mod plan;
pub mod stage;
mod stream;

pub use crate::direct::{CopyHasher, DirectWriter};
pub use crate::progress::Progress;
pub use array::{ArrayBytes, IntoArrayBytes, Ndarray};
pub use document::{Document, Scalar, Source};
pub use plan::external_path;
pub use stage::{
    StageOptions, Staged, commit_all, remove_pending_files, sweep_stale, write_atomically, write_atomically_with,
};
pub use stream::StreamWriter;

use crate::block::Compression;
use crate::error::{Error, ErrorKind, Location, Result};
use crate::tree::{Node, Value};

/// Where an array's data goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrayStorage {
    /// A block of the file.
    Internal,
    /// Nested lists in the tree.
    Inline,
    /// A file of its own beside the main one (`<stem>0000.asdf`).
    External,
}

/// How to write. Defaults: each array's own compression and storage, the reference
/// library's compression levels, no padding, a block index, checksums, ASDF Standard
/// 1.6.0.
///
/// ```
/// use rasdf::block::Compression;
/// use rasdf::write::{Document, WriteOptions};
///
/// let mut doc = Document::new();
/// doc.set_array("ramp", ndarray::Array1::from_iter(0..100_000i64), Compression::None)?;
/// // Every block zlib-compressed, at the fastest level.
/// let options = WriteOptions::default().compression(Some(Compression::Zlib)).compression_level(Some(1));
/// let path = std::env::temp_dir().join(format!("rasdf-options-{}.asdf", std::process::id()));
/// doc.write_to_path(&path, &options)?;
///
/// let file = rasdf::AsdfFile::open(&path)?;
/// assert_eq!(file.blocks()[0].compression, Compression::Zlib);
/// assert_eq!(file.array("ramp")?.read::<i64>()?[99_999], 99_999);
/// # drop(file);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), rasdf::Error>(())
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WriteOptions {
    /// Compress every block with this (overrides each array's).
    pub compression: Option<Compression>,
    /// The level of zlib (1-9, default 6), bzp2 (1-9, default 9) and zstd (1-9, default
    /// 3; also the Zstandard of blsc's blocks) compression, for every block so
    /// compressed; lz4 has no levels here, and ignores it. Faster levels compress less;
    /// any level reads back the same. `None`: the reference library's levels (and the
    /// asdf-compression plugin's zstd level).
    pub compression_level: Option<u32>,
    /// Store every array this way (overrides each array's).
    pub storage: Option<ArrayStorage>,
    /// Reserve room after the tree and each block, as the reference's `pad_blocks`.
    pub pad_blocks: bool,
    /// Write the block index.
    pub include_index: bool,
    /// Write MD5 checksums (of the stored bytes).
    pub checksums: bool,
    /// Write only the part of the base a view selects (instead of the whole base).
    pub views_only: bool,
    /// Sync the file to disk before renaming it into place (survives a power loss; the
    /// rename alone already survives a killed process).
    pub sync: bool,
    /// Told how far the write has come, in bytes of array data.
    pub progress: Option<Progress>,
    /// Whether a file written to a path goes past the page cache (`O_DIRECT`): by
    /// default ([`DirectIo::Auto`]) documents of 64 MiB of array data or more, on Linux
    /// (with the feature `linux-tuning`) where the filesystem takes it. The file is the
    /// same either way.
    pub direct_io: DirectIo,
}

/// Whether a write to a path bypasses the page cache ([`WriteOptions::direct_io`]).
///
/// Direct I/O exists only on Linux, with the library's feature `linux-tuning` (on by
/// default); elsewhere every choice writes through the page cache. Where it is used, the
/// file's bytes go to the disk in 8 MiB aligned pieces from a thread of its own (see
/// [`DirectWriter`]), while the calling thread compresses and hashes the next ones; a
/// filesystem that refuses it (`tmpfs`, some network filesystems) gets the page cache.
/// The file is the same either way; a side effect is that a freshly written file is not
/// in the page cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DirectIo {
    /// Documents with at least 64 MiB of array data (where writing through the page
    /// cache costs more than the disk; measured 360 MB/s buffered against 1.6-2.6 GB/s
    /// direct for 1 GiB on a VM); smaller ones through the page cache.
    #[default]
    Auto,
    /// Never: everything through the page cache, on the calling thread.
    Never,
    /// Every document, whatever its size.
    Always,
}

crate::setters::setters!(WriteOptions {
    compression: Option<Compression>,
    compression_level: Option<u32>,
    storage: Option<ArrayStorage>,
    pad_blocks: bool,
    include_index: bool,
    checksums: bool,
    views_only: bool,
    sync: bool,
    progress: Option<Progress>,
    direct_io: DirectIo,
});

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            compression: None,
            compression_level: None,
            storage: None,
            pad_blocks: false,
            include_index: true,
            checksums: true,
            views_only: false,
            sync: false,
            progress: None,
            direct_io: DirectIo::Auto,
        }
    }
}

/// The zlib level when none is given: `zlib.compress`'s, as the reference writes.
const ZLIB_LEVEL: u32 = 6;
/// The bzip2 level when none is given: `bz2.compress`'s, as the reference writes.
const BZP2_LEVEL: u32 = 9;
/// The zstd level when none is given: the asdf-compression plugin's.
const ZSTD_LEVEL: u32 = 3;

impl WriteOptions {
    /// The level `comp` compresses at.
    fn level(&self, comp: Compression) -> u32 {
        match comp {
            Compression::Zlib => self.compression_level.unwrap_or(ZLIB_LEVEL),
            Compression::Bzp2 => self.compression_level.unwrap_or(BZP2_LEVEL),
            Compression::Zstd | Compression::Blosc => self.compression_level.unwrap_or(ZSTD_LEVEL),
            _ => 0,
        }
    }

    /// Refuses options no write can follow (before any file is made).
    fn check(&self) -> Result<()> {
        match self.compression_level {
            Some(level) if !(1..=9).contains(&level) => {
                Err(usage(format!("compression level {level}: zlib, bzp2, zstd and blsc take levels 1 to 9")))
            }
            _ => Ok(()),
        }
    }
}

/// An empty buffer with room for `len` bytes, for `what` (an array's copy, a block):
/// when the memory cannot be had, an error that says how much was asked and what for,
/// instead of the abort of a failed allocation. Sizes that overflow (`None`) too.
///
/// # Errors
/// An I/O error of kind [`std::io::ErrorKind::OutOfMemory`].
pub(crate) fn try_buffer(len: Option<usize>, what: &str) -> Result<Vec<u8>> {
    let mut v = Vec::new();
    match len {
        Some(n) if v.try_reserve_exact(n).is_ok() => Ok(v),
        _ => Err(out_of_memory(len, what)),
    }
}

/// The error of [`try_buffer`]: `len` bytes (`None`: more than the address space holds)
/// could not be had for `what`.
pub(crate) fn out_of_memory(len: Option<usize>, what: &str) -> Error {
    let asked = match len {
        #[allow(clippy::cast_precision_loss)]
        Some(n) => format!("{n} bytes ({:.1} GiB)", n as f64 / f64::from(1u32 << 30)),
        None => "more bytes than memory can address".into(),
    };
    let e = std::io::Error::new(std::io::ErrorKind::OutOfMemory, format!("cannot allocate {asked} for {what}"));
    Error::from(e)
}

fn node(value: Value) -> Node {
    Node { tag: None, value, line: 0, col: 0 }
}

fn usage(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Usage(msg.into()), Location::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A document written for another standard: its header and the versions of its
    /// root and ndarray tags; unknown standards refused.
    #[test]
    fn documents_are_written_for_the_standard_set() {
        let mut doc = Document::new();
        assert_eq!(doc.standard(), "1.6.0");
        doc.set_array("a", ndarray::Array1::from_vec(vec![1.5f64, 2.5]), Compression::None).unwrap();
        doc.set_standard("1.3.0").unwrap();
        assert!(doc.set_standard("1.7.0").is_err() && doc.set_standard("x").is_err());
        assert_eq!(doc.standard(), "1.3.0");
        let mut out = std::io::Cursor::new(Vec::new());
        doc.write(&mut out, None, &WriteOptions::default()).unwrap();
        let bytes = out.into_inner();
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.starts_with("#ASDF 1.0.0\n#ASDF_STANDARD 1.3.0\n"), "{text}");
        assert!(text.contains("--- !core/asdf-1.1.0") && text.contains("a: !core/ndarray-1.0.0"), "{text}");
        let file = crate::OpenOptions::new().from_bytes(bytes).unwrap();
        assert_eq!(file.array("a").unwrap().read::<f64>().unwrap().iter().copied().collect::<Vec<_>>(), [1.5, 2.5]);
    }

    /// Every choice of direct I/O writes the same file (past the page cache or not, where
    /// the platform and filesystem allow it).
    #[test]
    fn direct_io_changes_no_byte() {
        let mut doc = Document::new();
        let data = ndarray::Array1::from_iter((0..3_000_000u32).map(|i| i.wrapping_mul(2_654_435_761)));
        doc.set_array("a", data.view(), Compression::None).unwrap();
        doc.set_array("b", data.view(), Compression::Lz4).unwrap();
        let dir = std::env::temp_dir();
        let mut files = Vec::new();
        for (n, direct_io) in [DirectIo::Never, DirectIo::Always, DirectIo::Auto].into_iter().enumerate() {
            let path = dir.join(format!("rasdf-direct-io-{}-{n}.asdf", std::process::id()));
            doc.write_to_path(&path, &WriteOptions { direct_io, ..WriteOptions::default() }).unwrap();
            files.push(std::fs::read(&path).unwrap());
            std::fs::remove_file(&path).unwrap();
        }
        assert!(files[0] == files[1] && files[0] == files[2]);
        assert_eq!(WriteOptions::default().direct_io, DirectIo::Auto);
    }

    /// A buffer larger than memory is an error that says how much was asked, not an
    /// abort; one that fits is empty with its room.
    #[test]
    fn buffers_that_cannot_be_had_are_errors() {
        let b = try_buffer(Some(1 << 20), "a test").unwrap();
        assert!(b.is_empty() && b.capacity() >= 1 << 20);
        // More than the address space (isize::MAX), and more than any machine has.
        for (len, says) in [
            (Some(usize::MAX / 2 + 1), "9223372036854775808 bytes"),
            (Some(1usize << 62), "4611686018427387904 bytes (4294967296.0 GiB)"),
            (None, "more bytes than memory can address"),
        ] {
            let e = try_buffer(len, "the copy of a view").unwrap_err();
            let text = e.to_string();
            assert!(text.contains(says) && text.contains("for the copy of a view"), "{text}");
            assert!(matches!(e.kind(), ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::OutOfMemory));
        }
    }
}
