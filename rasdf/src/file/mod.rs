//! Opening files: lazily, with the blocks found and checked.
//!
//! Opening reads the header, the comments, the tree and the block headers. Block data is
//! read only when asked for, by positional reads of the file's ranges (a file of at most
//! [`READ_WHOLE_BYTES`] is read whole at once), or from a memory map of the file when
//! [`OpenOptions::memmap`] asks for one; compressed blocks are decoded once and cached.
//!
//! An array is reached through one lazy handle, [`ArrayRef`]: [`AsdfFile::array`] (by
//! path), [`AsdfFile::array_at`] (a node found already), [`AsdfFile::arrays`] (every
//! one, in tree order). Its methods, each in the file of its concern:
//! - Listing (`listing`): [`ArrayRef::info`] (path, [`Shape`], datatype, byte order,
//!   [`StorageInfo`]) from the tree and the block headers, decoding nothing; the way
//!   to see what a file holds. [`ArrayRef::meta`], [`ArrayRef::block`] (`array`).
//! - Reading (`array`): [`ArrayRef::read`] (typed, zero copy when it can),
//!   [`ArrayRef::read_dyn`] (any datatype), [`ArrayRef::check`]; a block's bytes:
//!   [`AsdfFile::block_data`].
//! - Rows (`rows`): [`ArrayRef::rows`], an lz4 block's records or a remote range alone.
//! - Reading once (`stream`): [`ArrayRef::stats`], [`ArrayRef::read_once`] and
//!   [`ArrayRef::decode_pieces`] hold as little of an array as they can, a large
//!   compressed block decoded piece by piece.
//! - Masks (`mask`): [`ArrayRef::mask`].
//!
//! ```
//! # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/example.asdf");
//! let file = rasdf::AsdfFile::open(path)?;
//! for array in file.arrays() {
//!     let info = array.info()?;
//!     println!("{}: {} {}, {}", info.path, info.shape, info.datatype, info.storage);
//! }
//! # Ok::<(), rasdf::Error>(())
//! ```

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rayon::prelude::*;

use crate::Limits;
use crate::block::{self, BlockHeader, ChecksumStatus, Compression, Trailer};
use crate::error::{Error, ErrorKind, Location, Result, Warning};
use crate::header::{self, Header};
use crate::index::{self, IndexStatus};
use crate::ndarray::{ArrayError, Element};
use crate::tree::{NodeRef, Tree};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

mod array;
mod bytes;
mod fits;
mod listing;
mod mask;
mod ranged;
mod regular;
#[cfg(feature = "remote")]
mod remote;
mod rows;
pub mod source;
mod stream;
pub use array::ArrayRef;
pub use bytes::{FileBytes, Map, SparseBytes};
pub use listing::{ArrayInfo, Shape, StorageInfo};
pub use ranged::Ends;
pub(crate) use regular::kind_of;
pub use regular::open_regular;
pub use stream::{ArrayStats, ReadOnce, STREAM_STATS_BYTES, STREAM_STATS_ZLIB_BYTES};

use source::{LocalFile, RangeSource};

/// Files of at most this many bytes are read whole when opened (one read); larger ones
/// by ranges, block data when first used.
pub const READ_WHOLE_BYTES: u64 = 256 << 10;

/// How to open a file. The defaults: [`Limits::default`], checksums not verified on
/// access (as the reference library; `rasdf check` verifies them all), schema defaults
/// filled into the tree of a file of standard 1.5.0 or older (as the reference does).
///
/// ```
/// use rasdf::{Limits, OpenOptions};
/// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/example.asdf");
/// let limits = Limits::default().max_array_elements(1 << 20);
/// let file = OpenOptions::new().verify_checksums(true).limits(limits).open(path)?;
/// assert_eq!(file.array("sci/data")?.read::<f32>()?.shape(), &[64, 64]); // checksum verified
///
/// // From bytes in memory (not mapped), the tree as written, no schema defaults:
/// let bytes = std::fs::read(path)?;
/// let file = OpenOptions::new().fill_defaults(false).from_bytes(bytes)?;
/// assert_eq!(file.arrays().len(), 4);
/// # Ok::<(), rasdf::Error>(())
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OpenOptions {
    limits: Limits,
    verify_checksums: bool,
    fill_defaults: bool,
    /// Overrides where [`ArrayRef::stats`] starts streaming zlib blocks.
    stream_zlib_stats_from: Option<u64>,
    /// Map the file rather than read it by ranges.
    memmap: bool,
    /// How remote files are reached ([`OpenOptions::open_url`]).
    #[cfg(feature = "remote")]
    remote: crate::remote::RemoteOptions,
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            verify_checksums: false,
            fill_defaults: true,
            stream_zlib_stats_from: None,
            memmap: false,
            #[cfg(feature = "remote")]
            remote: crate::remote::RemoteOptions::default(),
        }
    }
}

impl OpenOptions {
    /// Default options.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether to fill into the tree of a file of ASDF Standard 1.5.0 or older the schema
    /// defaults the reference library fills as it reads one (`description: ''` and
    /// `meta: {}` of a `core/column-1.0.0`...: see [`crate::schema`]). On by default;
    /// `false` keeps the tree as written.
    pub fn fill_defaults(mut self, yes: bool) -> Self {
        self.fill_defaults = yes;
        self
    }

    /// Sets the limits checked while reading.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// How remote files are reached: timeouts, retries, S3's endpoint and credentials
    /// (see [`OpenOptions::open_url`]).
    #[cfg(feature = "remote")]
    pub fn remote(mut self, options: crate::remote::RemoteOptions) -> Self {
        self.remote = options;
        self
    }

    /// Whether to read a local file through a memory map of it, rather than by positional
    /// reads (the default). A map reads uncompressed blocks in place, with no copy (an
    /// array view borrows the file's pages); but the bytes are the file's as it is when
    /// they are read, and a file cut short by another process while mapped kills the
    /// process with `SIGBUS` when a page it lost is touched, as any map of a file does
    /// (numpy's `memmap`, the reference's `memmap=True`): that is the caller's hazard.
    /// [`AsdfFile::check_unchanged`] tells a file cut short. Without a map, bytes that
    /// are not there are an error, and a file rewritten since it was opened is an error
    /// when read, never a mix of versions.
    pub fn memmap(mut self, yes: bool) -> Self {
        self.memmap = yes;
        self
    }

    /// Verifies each block's checksum the first time its data is read.
    pub fn verify_checksums(mut self, yes: bool) -> Self {
        self.verify_checksums = yes;
        self
    }

    /// zlib blocks of at least `bytes` decoded bytes are reduced piece by piece by
    /// [`ArrayRef::stats`] (by default those above
    /// [`STREAM_STATS_ZLIB_BYTES`]); for tests of that path on small blocks.
    #[doc(hidden)]
    pub fn stream_zlib_stats_from(mut self, bytes: u64) -> Self {
        self.stream_zlib_stats_from = Some(bytes);
        self
    }

    /// Opens the file at `path`: read whole when small ([`READ_WHOLE_BYTES`]), else by
    /// ranges (block data when first used), or mapped ([`OpenOptions::memmap`]). A FITS
    /// file (its first bytes `SIMPLE  =`, and a primary header that reads) is read as
    /// ASDF-in-FITS: the ASDF file in its `ASDF` extension, with arrays from its other
    /// HDUs (see [`crate::fits`]); anything else that is no ASDF file is a header error.
    ///
    /// # Errors
    /// I/O errors, and a malformed header or tree (see [`AsdfFile::open`]); for a FITS
    /// file, damaged headers before the ASDF extension, or none ([`crate::fits::FitsError`]).
    pub fn open(&self, path: impl AsRef<Path>) -> Result<AsdfFile> {
        let path = path.as_ref();
        let in_file = |e: Error| e.in_file(path);
        let (f, len) = open_regular(path).map_err(|e| in_file(Error::from(e)))?;
        if self.memmap || len <= READ_WHOLE_BYTES {
            let bytes = match self.memmap {
                true => FileBytes::map(&f),
                false => FileBytes::read(&f, path),
            }
            .map_err(|e| in_file(Error::from(e)))?;
            if crate::fits::is_fits(&bytes)
                && let Ok(fits) = crate::fits::Fits::parse(&bytes)
            {
                return AsdfFile::from_fits(bytes, fits, Some(path.to_path_buf()), self.clone()).map_err(in_file);
            }
            return AsdfFile::from_parts(bytes, Some(path.to_path_buf()), self.clone()).map_err(in_file);
        }
        let source = LocalFile::new(f).map_err(|e| in_file(Error::from(e)))?;
        let tail_at = len.saturating_sub(ranged::END_BYTES);
        let mut got = source
            .read_ranges(&[0..ranged::END_BYTES.min(len), tail_at..len])
            .map_err(|e| in_file(Error::from(e)))?
            .into_iter();
        let (head, tail) = (got.next().unwrap_or_default(), got.next().unwrap_or_default());
        let ends = Ends { head, tail: (tail_at, tail) };
        self.open_ranged(Arc::new(source), ends, path.to_path_buf()).map_err(in_file)
    }

    /// Opens `path_or_url`: a URL ([`url_of`]: `http://`, `https://`, `s3://`, or any
    /// other `SCHEME://...`) as `OpenOptions::open_url` (feature `remote`) opens it,
    /// anything else as the path of a local file ([`OpenOptions::open`]). A URL is never
    /// looked for on disk.
    ///
    /// ```
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/example.asdf");
    /// let file = rasdf::OpenOptions::new().open_any(path)?;
    /// # assert!(!file.is_remote());
    /// # Ok::<(), rasdf::Error>(())
    /// ```
    ///
    /// # Errors
    /// As `OpenOptions::open_url` (a URL of another scheme is an `InvalidInput` I/O
    /// error) or [`OpenOptions::open`]. Without the feature `remote`, a URL is an
    /// `Unsupported` I/O error.
    pub fn open_any(&self, path_or_url: impl AsRef<Path>) -> Result<AsdfFile> {
        let path_or_url = path_or_url.as_ref();
        match url_of(path_or_url) {
            #[cfg(feature = "remote")]
            Some(url) => self.open_url(url),
            #[cfg(not(feature = "remote"))]
            Some(url) => {
                // Only the scheme is shown: the rest may hold credentials, and the
                // redaction of URLs is the feature's.
                let scheme = url.split_once("://").map_or("", |(s, _)| s);
                let message = format!("{scheme}://...: this rasdf reads no URLs (built without its feature `remote`)");
                Err(Error::from(std::io::Error::new(std::io::ErrorKind::Unsupported, message)))
            }
            None => self.open(path_or_url),
        }
    }

    /// Reads a file from bytes in memory (an ASDF file, or a FITS file holding one).
    ///
    /// # Errors
    /// As [`OpenOptions::open`].
    pub fn from_bytes(&self, bytes: Vec<u8>) -> Result<AsdfFile> {
        if crate::fits::is_fits(&bytes)
            && let Ok(fits) = crate::fits::Fits::parse(&bytes)
        {
            return AsdfFile::from_fits(FileBytes::Read(bytes), fits, None, self.clone());
        }
        AsdfFile::from_parts(FileBytes::Read(bytes), None, self.clone())
    }
}

/// `path_or_url` as a URL, when it is one rather than a local path: `SCHEME://...` with a
/// scheme of two characters or more (`C://x` is a Windows path), whether rasdf reads that
/// scheme (`http`, `https`, `s3`: see `OpenOptions::open_url`) or not (`ftp`). What
/// [`OpenOptions::open_any`] opens as a URL.
///
/// ```
/// use std::path::Path;
/// assert_eq!(rasdf::file::url_of(Path::new("s3://bucket/x.asdf")), Some("s3://bucket/x.asdf"));
/// assert_eq!(rasdf::file::url_of(Path::new("ftp://host/x.asdf")), Some("ftp://host/x.asdf"));
/// assert_eq!(rasdf::file::url_of(Path::new("HTTPS://host/x")), Some("HTTPS://host/x"));
/// for path in ["C://x/y.asdf", "1a://x", "data/x.asdf", "/tmp/u:secret@h"] {
///     assert_eq!(rasdf::file::url_of(Path::new(path)), None);
/// }
/// ```
pub fn url_of(path_or_url: &Path) -> Option<&str> {
    path_or_url.to_str().filter(|s| {
        s.split_once("://").is_some_and(|(scheme, _)| {
            scheme.len() >= 2
                && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        })
    })
}

/// An open ASDF file: its header, tree and block headers read, its block data read on
/// demand (see the [module](self)). [`AsdfFile::arrays`] lists the arrays and
/// [`AsdfFile::array`] finds one, as a lazy handle ([`ArrayRef`]) that reads it;
/// [`AsdfFile::get`] finds any node of the tree.
///
/// ```
/// use rasdf::AsdfFile;
/// use rasdf::block::Compression;
/// use rasdf::write::{Document, WriteOptions};
///
/// let path = std::env::temp_dir().join(format!("rasdf-doc-asdffile-{}.asdf", std::process::id()));
/// let mut doc = Document::new();
/// doc.set("meta/telescope", "JWST")?;
/// let image = ndarray::Array2::<f32>::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as f32);
/// doc.set_array("sci/data", image.view(), Compression::Zlib)?;
/// doc.write_to_path(&path, &WriteOptions::default())?;
///
/// let file = AsdfFile::open(&path)?;
/// assert_eq!(file.get("meta/telescope").and_then(|n| n.as_str()), Some("JWST"));
/// let sci = file.array("sci/data")?; // a handle: nothing read
/// let info = sci.info()?; // from the tree and block headers: nothing decoded
/// assert_eq!((info.path.as_str(), info.shape.to_string()), ("/sci/data", "(2, 3)".into()));
/// assert_eq!(info.storage.to_string(), "block 0 (zlib)");
/// let data = sci.read::<f32>()?; // decoded now
/// assert_eq!(data.sum(), 15.0);
/// # drop(file);
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), rasdf::Error>(())
/// ```
pub struct AsdfFile {
    path: Option<PathBuf>,
    bytes: FileBytes,
    options: OpenOptions,
    header: Header,
    blocks: Vec<BlockHeader>,
    decoded: Vec<OnceLock<Vec<u8>>>,
    /// How many times a walk of the tree reaches an ndarray in each block; counted when
    /// first needed.
    block_users: OnceLock<Vec<u32>>,
    index: IndexStatus,
    walk_error: Option<Error>,
    warnings: Vec<Warning>,
    tree: Tree,
    /// Lines before the tree, to turn tree lines into file lines.
    tree_first_line: usize,
    /// The files of external sources, opened once each; entries are never removed
    /// (see `AsdfFile::external`).
    externals: Mutex<HashMap<PathBuf, Arc<AsdfFile>>>,
    /// The FITS file holding this one (ASDF-in-FITS), whose HDUs `fits:` sources name.
    fits: Option<Box<fits::Container>>,
    /// Where block data is read from, for a file read by ranges (local or remote); `None`
    /// when all of the file is in `bytes` (read whole, or mapped).
    source: Option<Arc<dyn RangeSource>>,
    /// A remote file's object (its URL, its folder on the server, its request counts).
    #[cfg(feature = "remote")]
    remote: Option<Arc<crate::remote::Remote>>,
    /// A file read by ranges: each block (header and stored data) read once, when it is
    /// kept (see `block_source`).
    fetched: Vec<OnceLock<Vec<u8>>>,
    /// A file read by ranges: its lz4 blocks' records walked so far (see
    /// `ranged_lz4_records`).
    lz4_walk: Vec<Mutex<Vec<ranged::Lz4Step>>>,
    /// The lz4 records [`ArrayRef::rows`] decoded last (see `rows::Recent`).
    recent_records: Mutex<Option<rows::Recent>>,
}

impl std::fmt::Debug for AsdfFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsdfFile")
            .field("path", &self.path)
            .field("len", &self.bytes.len())
            .field("header", &self.header)
            .field("blocks", &self.blocks.len())
            .finish_non_exhaustive()
    }
}

impl AsdfFile {
    /// Opens the file at `path` with default options.
    ///
    /// # Errors
    /// I/O errors; [`ErrorKind::Header`] when the file does not start like an ASDF file.
    /// Damaged blocks do not fail the open: they fail when read, and
    /// [`AsdfFile::blocks_error`] tells about them.
    pub fn open(path: impl AsRef<Path>) -> Result<AsdfFile> {
        OpenOptions::new().open(path)
    }

    /// Opens the remote file at `url` (`http(s)://`, `s3://bucket/key`) with default
    /// options (see [`OpenOptions::open_url`]).
    ///
    /// # Errors
    /// As [`OpenOptions::open_url`].
    #[cfg(feature = "remote")]
    pub fn open_url(url: &str) -> Result<AsdfFile> {
        OpenOptions::new().open_url(url)
    }

    /// Options for opening a file.
    pub fn options() -> OpenOptions {
        OpenOptions::new()
    }

    fn from_parts(bytes: FileBytes, path: Option<PathBuf>, options: OpenOptions) -> Result<AsdfFile> {
        let header = header::parse(&bytes).map_err(|(e, at)| Error::new(e, Location::at(at)))?;
        let mut warnings: Vec<Warning> =
            header.warnings.iter().map(|(at, m)| Warning { message: m.clone(), location: Location::at(*at) }).collect();
        if let Some(tree) = &header.tree {
            Limits::check("max_tree_bytes", tree.end - tree.start, options.limits.max_tree_bytes)
                .map_err(|e| Error::new(e, Location::at(tree.start)))?;
        }
        let (blocks, index, walk_error) = find_blocks(&bytes, &header, &options.limits, &mut warnings);
        let decoded = (0..blocks.len()).map(|_| OnceLock::new()).collect();
        let (tree, tree_first_line) = match &header.tree {
            Some(r) => {
                // The range lies inside the file: `header::parse` found it there.
                let (s, e) = (usize::try_from(r.start).unwrap_or(0), usize::try_from(r.end).unwrap_or(0));
                let first_line = memchr::memchr_iter(b'\n', &bytes[..s]).count();
                let text = std::str::from_utf8(&bytes[s..e]).map_err(|err| {
                    let at = r.start + err.valid_up_to() as u64;
                    Error::new(
                        crate::tree::TreeError::Syntax(format!("the tree is not UTF-8: {err}")),
                        Location::at(at),
                    )
                })?;
                let mut tree = Tree::parse(text, &options.limits).map_err(|(err, pos)| {
                    let mut loc = Location::at(r.start);
                    loc.line = pos.map(|(l, c)| (l + first_line, c));
                    Error::new(err, loc)
                })?;
                tree.settle_asdf_objects();
                if options.fill_defaults {
                    crate::schema::fill_defaults(&mut tree, header.standard());
                }
                (tree, first_line)
            }
            None => (Tree::empty(), 0),
        };
        Ok(AsdfFile {
            path,
            bytes,
            options,
            header,
            blocks,
            decoded,
            block_users: OnceLock::new(),
            index,
            walk_error,
            warnings,
            tree,
            tree_first_line,
            externals: Mutex::new(HashMap::new()),
            fits: None,
            source: None,
            #[cfg(feature = "remote")]
            remote: None,
            fetched: Vec::new(),
            lz4_walk: Vec::new(),
            recent_records: Mutex::new(None),
        })
    }

    /// The file's path, when opened from one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The file's length in bytes; for an ASDF file inside a FITS file, the ASDF file's.
    pub fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// Whether the file is empty (never: an ASDF file has at least its header).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The bytes `range` of the file (for an ASDF file inside a FITS file, of the ASDF
    /// file): from memory when the file is at hand whole (read, or mapped) or the range
    /// was read at open (the header and tree, block headers, the block index), else read
    /// now.
    ///
    /// # Errors
    /// A range past the end of the file; the read's I/O errors.
    pub fn read_bytes(&self, range: std::ops::Range<u64>) -> Result<Cow<'_, [u8]>> {
        let len = self.len();
        if range.start > range.end || range.end > len {
            let why = format!("bytes {}..{} of a file of {len}", range.start, range.end);
            return Err(Error::new(ErrorKind::NotFound(why), Location::default()).in_file_opt(self.path()));
        }
        let present = match (&self.bytes, &self.source) {
            (FileBytes::Sparse(s), Some(_)) => s.has(range.clone()),
            _ => true,
        };
        if present {
            // Inside the file (checked above), so inside `usize`.
            let (a, b) = (usize::try_from(range.start).unwrap_or(0), usize::try_from(range.end).unwrap_or(0));
            return Ok(Cow::Borrowed(self.bytes.get(a..b).unwrap_or_default()));
        }
        match &self.source {
            Some(source) => {
                source.read_range(range).map(Cow::Owned).map_err(|e| Error::from(e).in_file_opt(self.path()))
            }
            None => Ok(Cow::Borrowed(&[])),
        }
    }

    /// The parsed header and comments.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The YAML tree's text, if the file has a tree.
    pub fn tree_bytes(&self) -> Option<&[u8]> {
        let r = self.header.tree.as_ref()?;
        // The range was found inside the file by `header::parse`.
        self.bytes.get(usize::try_from(r.start).ok()?..usize::try_from(r.end).ok()?)
    }

    /// The YAML tree.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// The node at `path` (`sci/data`, `history/entries/0`), see [`Tree::get`].
    pub fn get(&self, path: &str) -> Option<NodeRef<'_>> {
        self.tree.get(path)
    }

    /// The file line (1-based) of a node.
    pub fn line_of(&self, node: NodeRef<'_>) -> (usize, usize) {
        (node.node().line as usize + self.tree_first_line, node.node().col as usize)
    }

    /// The node at `path` (as [`AsdfFile::get`]), or a [`ErrorKind::NotFound`] error
    /// naming the path.
    ///
    /// # Errors
    /// No node at `path`.
    pub fn node_at(&self, path: &str) -> Result<NodeRef<'_>> {
        self.get(path).ok_or_else(|| {
            Error::new(ErrorKind::NotFound(format!("no node at '{path}'")), Location::path(path))
                .in_file_opt(self.path.as_deref())
        })
    }

    /// The value of a core/integer node: uint32 words, least significant first, and a
    /// sign.
    ///
    /// # Errors
    /// A malformed node.
    pub fn integer_at(&self, node: NodeRef<'_>) -> Result<num_bigint::BigInt> {
        let loc = || Location { line: Some(self.line_of(node)), ..Location::default() };
        let bad = |m: &str| Error::new(crate::tree::TreeError::Unexpected(format!("core/integer: {m}")), loc());
        let words = node.key("words").ok_or_else(|| bad("no words"))?;
        let a = self.array_at(words).read_dyn()?;
        // 2^16 words is a number of 2 million bits: an array that stands for more (its
        // strides overlapping) would make a number of gigabytes.
        if a.len() > 1 << 16 {
            return Err(bad(&format!("{} words, more than 65536", a.len())));
        }
        let words: Vec<u64> = a
            .elements()
            .map(|e| match e {
                Element::UInt(w) => Some(w),
                Element::Int(w) => u64::try_from(w).ok(),
                _ => None,
            })
            .collect::<Option<_>>()
            .ok_or_else(|| bad("words must be non-negative integers"))?;
        let negative = crate::tree::integer_is_negative(node).ok_or_else(|| bad("no sign"))?;
        Ok(crate::tree::integer_from_words(&words, negative))
    }

    /// The block a `source` number names; negative numbers count from the end.
    fn resolve_block(&self, i: i64) -> std::result::Result<usize, ArrayError> {
        let n = self.blocks.len();
        let idx = if i < 0 { i64::try_from(n).unwrap_or(i64::MAX).checked_add(i) } else { Some(i) };
        idx.and_then(|k| usize::try_from(k).ok())
            // A block past the last one read is reported by `block_data` (with the reason
            // reading stopped, if it did).
            .filter(|&k| k < n || (i >= 0 && self.walk_error.is_some()))
            .ok_or(ArrayError::NoSuchBlock { index: i, blocks: n })
    }

    /// The codec of the block an external `uri` holds (its first; this file's first when
    /// `uri` names it); `None` when there is no block.
    pub(crate) fn external_compression(&self, uri: &str) -> Result<Option<Compression>> {
        let ext = self.external(uri).map_err(|e| e.in_file_opt(self.path.as_deref()))?;
        Ok(ext.unwrap_or(self).blocks().first().map(|b| b.compression))
    }

    /// Opens (once) the external file `uri` names; `None` when it names this file.
    fn external(&self, uri: &str) -> Result<Option<&AsdfFile>> {
        #[cfg(feature = "remote")]
        if let Some(remote) = &self.remote {
            return self.remote_external(remote, uri);
        }
        let base = self
            .path
            .as_deref()
            .map(|p| p.parent().map(Path::to_path_buf).unwrap_or_default())
            .ok_or_else(|| Error::new(crate::external::ExternalError::NoBase(uri.into()), Location::default()))?;
        let base = if base.as_os_str().is_empty() { PathBuf::from(".") } else { base };
        let mut resolved = crate::external::resolve(&base, uri);
        // A file opened through a symbolic link: its block files may lie beside the file
        // the link leads to (where rasdf writes them through a link) rather than beside
        // the link. Looked for there when not found here (each folder bounds its own).
        if let Err(crate::external::ExternalError::Io { .. }) = &resolved
            && let Some(real) = self.path.as_deref().and_then(|p| p.canonicalize().ok())
            && let Some(real_base) = real.parent()
            && base.canonicalize().ok().as_deref() != Some(real_base)
            && let Ok(found) = crate::external::resolve(real_base, uri)
        {
            resolved = Ok(found);
        }
        let Some(path) = resolved.map_err(|e| Error::new(e, Location::default()))? else {
            return Ok(None);
        };
        self.external_file(path.clone(), || self.options.open(&path)).map(Some)
    }

    /// The external file cached under `key`, opened by `open` the first time, lent for
    /// as long as `self` (local and remote external files alike).
    fn external_file(&self, key: PathBuf, open: impl FnOnce() -> Result<AsdfFile>) -> Result<&AsdfFile> {
        let mut cache = self.externals.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let f = match cache.get(&key) {
            Some(f) => Arc::clone(f),
            None => {
                let f = Arc::new(open()?);
                cache.insert(key, Arc::clone(&f));
                f
            }
        };
        // SAFETY: entries of `externals` are only ever inserted, never removed or
        // replaced, until `self` is dropped; the file an `Arc` points to never moves. So
        // the file outlives this borrow of `self`, and its mapped or cached block data
        // can be lent out for as long, with no copy.
        Ok(unsafe { &*Arc::as_ptr(&f) })
    }

    /// Whether the file was opened from a URL ([`OpenOptions::open_url`]).
    pub fn is_remote(&self) -> bool {
        #[cfg(feature = "remote")]
        return self.remote.is_some();
        #[cfg(not(feature = "remote"))]
        false
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.options.limits
    }

    /// Every block header, in file order.
    pub fn blocks(&self) -> &[BlockHeader] {
        &self.blocks
    }

    /// How the block index compared with the blocks.
    pub fn index_status(&self) -> &IndexStatus {
        &self.index
    }

    /// The error that stopped reading block headers early, if any: blocks after it are
    /// missing from [`AsdfFile::blocks`].
    pub fn blocks_error(&self) -> Option<&Error> {
        self.walk_error.as_ref()
    }

    /// Things that are odd but did not stop reading.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    fn block_header(&self, n: usize) -> Result<&BlockHeader> {
        self.blocks
            .get(n)
            .ok_or_else(|| match &self.walk_error {
                Some(e) if n >= self.blocks.len() => Error::new(
                    ErrorKind::NotFound(format!(
                        "block {n} cannot be read: reading block headers stopped at block {}: {}",
                        self.blocks.len(),
                        e.kind()
                    )),
                    Location { block: Some(n), ..e.location().clone() },
                ),
                _ => Error::new(
                    ErrorKind::NotFound(format!("block {n} does not exist; the file has {}", self.blocks.len())),
                    Location { block: Some(n), ..Location::default() },
                ),
            })
            // Named: the file may be an external one, a block of which an array names.
            .map_err(|e| e.in_file_opt(self.path.as_deref()))
    }

    /// The stored (possibly compressed) bytes of block `n`.
    ///
    /// # Errors
    /// [`ErrorKind::NotFound`] for a block the file does not have.
    pub fn block_stored(&self, n: usize) -> Result<&[u8]> {
        let (h, file, shift) = self.block_source(n)?;
        h.stored_bytes(file).map_err(|e| Error::new(e, Location::block(n, h.offset + shift)))
    }

    /// The header of block `n` and the bytes to read the block from, with the offset to
    /// add to the locations of errors: the file's own bytes when they are all at hand
    /// (read whole, or mapped); for a file read by ranges, the block read alone (once,
    /// and kept) and its header moved to offset 0.
    fn block_source(&self, n: usize) -> Result<(Cow<'_, BlockHeader>, &[u8], u64)> {
        let h = self.block_header(n)?;
        if let Some(source) = &self.source {
            let fetched = self.fetched_block(n, source.as_ref())?;
            return Ok((Cow::Owned(BlockHeader { offset: 0, ..h.clone() }), fetched, h.offset));
        }
        Ok((Cow::Borrowed(h), &self.bytes, 0))
    }

    /// [`AsdfFile::block_source`] for a use that needs the stored bytes once (decoding a
    /// compressed block, verifying it): a file read by ranges has the block read for
    /// this use alone, not kept, unless it was kept already.
    fn block_source_once(&self, n: usize) -> Result<(Cow<'_, BlockHeader>, Cow<'_, [u8]>, u64)> {
        let h = self.block_header(n)?;
        match &self.source {
            Some(source) if self.fetched.get(n).is_some_and(|f| f.get().is_none()) => {
                let got = self.read_block(n, source.as_ref())?;
                Ok((Cow::Owned(BlockHeader { offset: 0, ..h.clone() }), Cow::Owned(got), h.offset))
            }
            _ => self.block_source(n).map(|(h, bytes, shift)| (h, Cow::Borrowed(bytes), shift)),
        }
    }

    /// The decoded bytes of block `n`: borrowed from the file when uncompressed, decoded
    /// once and cached otherwise. Verifies the checksum first when the options say so.
    ///
    /// # Errors
    /// A missing block, a decoding error, a checksum mismatch, a limit.
    pub fn block_data(&self, n: usize) -> Result<&[u8]> {
        let h = self.block_header(n)?;
        if h.compression == Compression::None {
            let stored = self.block_stored(n)?;
            if self.options.verify_checksums {
                let verified = block::verify_checksum(h, stored, || Ok(Cow::Borrowed(stored)));
                self.unchanged(verified.map_err(|e| e.with_block(n)))?;
            }
            return Ok(stored);
        }
        if let Some(d) = self.decoded[n].get() {
            return Ok(d);
        }
        let data = self.decode_block(n);
        let data = self.unchanged(data)?;
        Ok(self.decoded[n].get_or_init(|| data))
    }

    /// Block `n` decoded, not cached; its checksum verified when the options say so.
    ///
    /// A mapped block's stored bytes are let go of as they are decoded (after the
    /// checksum, when it is verified), so that they do not add to the process's
    /// resident memory beside the decoded data: they are read once.
    fn decode_block(&self, n: usize) -> Result<Vec<u8>> {
        if let Some(data) = self.lz4_streamed(n)? {
            return Ok(data);
        }
        let (h, file, shift) = self.block_source_once(n)?;
        let stored = h.stored_bytes(&file).map_err(|e| Error::new(e, Location::block(n, h.offset + shift)))?;
        let release = |r: std::ops::Range<usize>| self.bytes.release(r);
        let verify = self.options.verify_checksums;
        let mapped = self.bytes.is_mapped() && self.source.is_none();
        // (Only where pages can be given back: else nothing is let go of, and the decoder
        // has no helper to run.)
        let during: Option<&(dyn Fn(std::ops::Range<usize>) + Sync)> =
            (mapped && !verify && crate::hugepages::RELEASES).then_some(&release);
        let data =
            h.decode_releasing(&file, &self.options.limits, during).map_err(|e| relocated(e, shift).with_block(n))?;
        let data = data.into_owned();
        if verify {
            block::verify_checksum(&h, stored, || Ok(Cow::Borrowed(&data))).map_err(|e| e.with_block(n))?;
            if mapped {
                let at = stored.as_ptr() as usize - self.bytes.as_ptr() as usize;
                release(at..at + stored.len());
            }
        }
        Ok(data)
    }

    /// Decodes every block and verifies every checksum, in parallel. Returns, per block,
    /// the checksum status or the error. Nothing is kept decoded: a large compressed
    /// block (as [`ArrayRef::stats`] chooses) is decoded piece by piece and
    /// hashed as it comes, when its checksum is of the decoded data; others are decoded
    /// whole, one per thread at a time.
    pub fn verify_blocks(&self) -> Vec<Result<ChecksumStatus>> {
        self.verify_blocks_with(None)
    }

    /// [`AsdfFile::verify_blocks`], telling `progress` of each block checked (in blocks).
    pub fn verify_blocks_with(&self, progress: Option<&crate::Progress>) -> Vec<Result<ChecksumStatus>> {
        if let Some(p) = progress {
            p.start(self.blocks.len() as u64);
        }
        (0..self.blocks.len())
            .into_par_iter()
            .map(|n| {
                let r = self.unchanged(self.verify_block(n).map_err(|e| e.with_block(n)));
                if let Some(p) = progress {
                    p.advance(1);
                }
                r
            })
            .collect()
    }

    /// `Ok` unless this file, or an external file it read blocks from, changed since it
    /// was opened:
    /// - read by ranges (the default): rewritten in place or cut short (its length or
    ///   modification time changed; a file replaced by a rename is read on as the one
    ///   opened); a remote object one of whose answers was of another version. Every
    ///   method that reads block data fails then, so no read mixes two versions; what
    ///   was read before keeps its values.
    /// - mapped ([`OpenOptions::memmap`]): cut short, so that reading the pages it lost
    ///   would kill the process (a map shows the file's bytes as they are when read: an
    ///   array view borrowed from it changes with the file).
    /// - read whole at open (a local file of [`READ_WHOLE_BYTES`] or less): rewritten in
    ///   place or cut short, as a file read by ranges (its bytes, in memory, never
    ///   change; a read after the change fails all the same, as it would for a larger
    ///   file). Bytes given to [`OpenOptions::from_bytes`]: never.
    ///
    /// # Errors
    /// An I/O error: `UnexpectedEof` for a file cut short, `Other` for one rewritten; for
    /// a remote file that changed, the remote error `Changed` (kind `Other`).
    pub fn check_unchanged(&self) -> Result<()> {
        if let Err(e) = self.bytes.check() {
            return Err(Error::from(e).in_file_opt(self.path.as_deref()));
        }
        // A file read by ranges that changed since it was opened (rewritten, cut short;
        // a remote object's other version): what was read of it may be of two versions.
        if let Some(Err(e)) = self.source.as_deref().map(RangeSource::check) {
            return Err(Error::from(e).in_file_opt(self.path.as_deref()));
        }
        self.fits_unchanged()?;
        let externals = self.externals.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        externals.values().try_for_each(|f| f.check_unchanged())
    }

    /// `r`, unless the file changed since it was opened: then that error, which explains
    /// a failure of `r` as well.
    fn unchanged<R>(&self, r: Result<R>) -> Result<R> {
        // A change found by `r` itself: its error, which names the block.
        if r.as_ref().is_err_and(Error::is_changed) {
            return r;
        }
        self.check_unchanged()?;
        r
    }

    fn verify_block(&self, n: usize) -> Result<ChecksumStatus> {
        let h = &self.blocks[n];
        if h.compression == Compression::None && self.in_pieces(n) {
            // A large uncompressed block read by ranges: hashed as its parts are read.
            let mut md5 = block::Md5::new();
            self.decode_pieces_unchecked(n, |piece| {
                md5.update(piece);
                Ok::<(), Error>(())
            })?;
            return block::checksum_status(h, md5.finalize(), None);
        }
        let (hs, file, shift) = self.block_source_once(n)?;
        let stored = hs.stored_bytes(&file).map_err(|e| Error::new(e, Location::block(n, h.offset)))?;
        let cached = self.decoded[n].get();
        if !self.in_pieces(n) || cached.is_some() {
            let decoded = match cached {
                Some(d) => Cow::Borrowed(&d[..]),
                None => hs.decode(&file, &self.options.limits).map_err(|e| relocated(e, shift))?,
            };
            return block::verify_checksum(h, stored, || Ok(Cow::Borrowed(&decoded)));
        }
        // The stored bytes' MD5 first: only when it does not match is the decoded data
        // hashed (a file of asdf <= 5.2), as it is decoded.
        let stored_md5 = block::md5(stored);
        let mut decoded_md5 = (h.has_checksum() && stored_md5 != h.checksum).then(block::Md5::new);
        hs.decode_pieces(&file, &self.options.limits, |piece| {
            if let Some(m) = &mut decoded_md5 {
                m.update(piece);
            }
            Ok::<(), Error>(())
        })
        .map_err(|e| relocated(e, shift))?;
        block::checksum_status(h, stored_md5, decoded_md5.map(block::Md5::finalize))
    }
}

/// `e`, its offset moved on by `shift` (an error of a remote block read apart).
fn relocated(e: Error, shift: u64) -> Error {
    #[cfg(feature = "remote")]
    if shift > 0 {
        return e.offset_by(shift);
    }
    let _ = shift;
    e
}

/// Finds the blocks: from a verified index when there is one, by walking headers otherwise.
fn find_blocks(
    file: &[u8],
    header: &Header,
    limits: &Limits,
    warnings: &mut Vec<Warning>,
) -> (Vec<BlockHeader>, IndexStatus, Option<Error>) {
    let Some(first) = block::find_first_block(file, header.blocks_from) else {
        // No magic at all; a file cut inside the first block's magic ends with part of one.
        let tail_at = file.len().saturating_sub(3).max(usize::try_from(header.blocks_from).unwrap_or(usize::MAX));
        let error = (tail_at..file.len())
            .find_map(|at| block::cut_magic(&file[at..]).map(|e| Error::new(e, Location::block(0, at as u64))));
        return (Vec::new(), IndexStatus::Missing, error);
    };
    let index_at = index::find(file, first, limits);
    if let Some(at) = index_at {
        let verified = index::parse(file, at).and_then(|offsets| {
            Limits::check("max_blocks", offsets.len() as u64, limits.max_blocks as u64)
                .map_err(|e| index::IndexError::Syntax(e.to_string()))?;
            index::verify(file, &offsets, first, at)
        });
        match verified {
            Ok(blocks) => return (blocks, IndexStatus::Valid, None),
            Err(e) => {
                let walk = block::walk(file, first, limits);
                warnings.push(Warning {
                    message: format!("block index not used ({e}); blocks found by reading their headers"),
                    location: Location::at(at),
                });
                note_trailer(&walk.trailer, Some(at), warnings);
                let mut error = walk.error;
                // The index points at a block that walking did not reach, and that is not
                // a valid block: the file is damaged there, not merely stale. (Not so an
                // entry at or past the index itself, where no block can be: the index
                // alone is wrong.)
                if let index::IndexError::BadEntry { entry, offset, reason } = &e
                    && error.is_none()
                    && *offset < at
                    && walk.blocks.len() <= *entry
                    && !walk.blocks.iter().any(|b| b.offset == *offset)
                {
                    error = Some(Error::new(reason.clone(), Location::block(*entry, *offset)));
                }
                return (walk.blocks, IndexStatus::Invalid(e), error);
            }
        }
    }
    let walk = block::walk(file, first, limits);
    let mut status = IndexStatus::Missing;
    if let Trailer::Index(at) = walk.trailer {
        // Found by walking but not by the bounded tail search: an index larger than
        // `max_index_bytes`, or one followed by junk. Check it anyway.
        status = match index::parse(file, at).and_then(|o| index::verify(file, &o, first, at)) {
            Ok(_) => IndexStatus::Valid,
            Err(e) => IndexStatus::Invalid(e),
        };
    }
    note_trailer(&walk.trailer, None, warnings);
    (walk.blocks, status, walk.error)
}

fn note_trailer(trailer: &Trailer, index_at: Option<u64>, warnings: &mut Vec<Warning>) {
    if let Trailer::Junk(at) = trailer
        && index_at != Some(*at)
    {
        warnings.push(Warning {
            message: "unexpected bytes after the last block; the file may be damaged".into(),
            location: Location::at(*at),
        });
    }
}
