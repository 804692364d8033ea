//! The crate's error type: what went wrong (one enum per layer) and where.
//!
//! Each layer (`block`, `index`, `tree`, `ndarray`, `external`) has its own error enum
//! that says only what went wrong at its level. The layer that knows the position (the
//! file, a byte offset, a block number, a tree path) wraps it into an [`Error`] with a
//! [`Location`], and the top-level `Display` prints both:
//!
//! ```text
//! data.asdf: block 2 at byte 4096: checksum mismatch: header says 0f3c…, stored bytes hash to 9a11…
//! ```

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::block::BlockError;
use crate::header::HeaderError;
use crate::limits::LimitError;
use crate::ndarray::ArrayError;
use crate::tree::TreeError;

/// Where in a file an error happened. Every field is optional; `Display` prints those set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Location {
    /// The file, when the error came from one on disk.
    pub file: Option<PathBuf>,
    /// The block number (0-based, in file order).
    pub block: Option<usize>,
    /// The byte offset from the start of the file.
    pub offset: Option<u64>,
    /// The path of the node in the tree, as `/key/0/key`.
    pub path: Option<String>,
    /// Line and column (both 1-based) inside the YAML tree.
    pub line: Option<(usize, usize)>,
}

impl Location {
    /// A location that names only a byte offset.
    pub fn at(offset: u64) -> Self {
        Location { offset: Some(offset), ..Location::default() }
    }

    /// A location that names a block and the byte offset of its magic.
    pub fn block(block: usize, offset: u64) -> Self {
        Location { block: Some(block), offset: Some(offset), ..Location::default() }
    }

    /// A location that names a tree path.
    pub fn path(path: impl Into<String>) -> Self {
        Location { path: Some(path.into()), ..Location::default() }
    }

    /// Sets the file, keeping the rest.
    pub fn with_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.file = Some(file.into());
        self
    }

    /// True when no field is set.
    pub fn is_empty(&self) -> bool {
        self.file.is_none()
            && self.block.is_none()
            && self.offset.is_none()
            && self.path.is_none()
            && self.line.is_none()
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        if let Some(file) = &self.file {
            parts.push(file.display().to_string());
        }
        match (self.block, self.offset) {
            (Some(b), Some(o)) => parts.push(format!("block {b} at byte {o}")),
            (Some(b), None) => parts.push(format!("block {b}")),
            (None, Some(o)) => parts.push(format!("byte {o}")),
            (None, None) => {}
        }
        if let Some(p) = &self.path {
            parts.push(format!("tree path {}", if p.is_empty() { "/" } else { p }));
        }
        if let Some((l, c)) = self.line {
            parts.push(format!("line {l}, column {c}"));
        }
        f.write_str(&parts.join(": "))
    }
}

/// What went wrong, by layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Reading or writing the underlying file failed.
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
    /// The `#ASDF` header line or the comment section is malformed.
    #[error(transparent)]
    Header(#[from] HeaderError),
    /// A binary block is malformed, truncated, or does not decode.
    #[error(transparent)]
    Block(#[from] BlockError),
    /// The YAML tree is malformed or holds a value of the wrong kind.
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// An ndarray node is malformed or does not match its data.
    #[error(transparent)]
    Array(#[from] ArrayError),
    /// An exploded file's external `source` was refused or could not be read.
    #[error(transparent)]
    External(#[from] crate::external::ExternalError),
    /// A FITS file holding an ASDF file (ASDF-in-FITS) is damaged, or a `fits:` source
    /// names no HDU's data rasdf reads.
    #[error(transparent)]
    Fits(#[from] crate::fits::FitsError),
    /// A limit from [`crate::Limits`] was exceeded.
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// The caller asked for something the file does not have (a path, a block).
    #[error("{0}")]
    NotFound(String),
    /// The caller asked for something invalid.
    #[error("{0}")]
    Usage(String),
}

/// The crate's error: a kind and the location it happened at.
pub struct Error {
    inner: Box<(ErrorKind, Location)>,
}

impl Error {
    /// An error of `kind` at `location`.
    pub fn new(kind: impl Into<ErrorKind>, location: Location) -> Self {
        Error { inner: Box::new((kind.into(), location)) }
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.inner.0
    }

    /// Where it went wrong.
    pub fn location(&self) -> &Location {
        &self.inner.1
    }

    /// The limit of [`crate::Limits`] this error is about, if it is one (whichever layer
    /// hit it): its `what` names the `Limits` field that raises it.
    pub fn limit(&self) -> Option<&LimitError> {
        match self.kind() {
            ErrorKind::Limit(l)
            | ErrorKind::Array(ArrayError::Limit(l))
            | ErrorKind::Tree(TreeError::Limit(l))
            | ErrorKind::Fits(crate::fits::FitsError::Limit { error: l, .. }) => Some(l),
            _ => None,
        }
    }

    /// Whether this error says the file changed while it was read: a local file
    /// rewritten or cut short since it was opened
    /// ([`FileChanged`](crate::file::source::FileChanged)), or a remote object seen in
    /// another version (`RemoteError::Changed`). What was read of it may then be of
    /// two versions: nothing more is read from it.
    pub fn is_changed(&self) -> bool {
        let ErrorKind::Io(io) = self.kind() else { return false };
        let Some(inner) = io.get_ref() else { return false };
        #[cfg(feature = "remote")]
        if inner.downcast_ref::<crate::remote::RemoteError>().is_some_and(crate::remote::RemoteError::is_changed) {
            return true;
        }
        inner.is::<crate::file::source::FileChanged>()
    }

    /// Splits the error into its kind and location.
    pub fn into_parts(self) -> (ErrorKind, Location) {
        *self.inner
    }

    /// Adds the file name to the location when it has none.
    pub fn in_file(mut self, file: impl Into<PathBuf>) -> Self {
        if self.inner.1.file.is_none() {
            self.inner.1.file = Some(file.into());
        }
        self
    }

    /// Adds the file name when there is one and the location has none.
    pub fn in_file_opt(self, file: Option<&std::path::Path>) -> Self {
        match file {
            Some(f) => self.in_file(f),
            None => self,
        }
    }

    /// Moves the location's offset on by `by` bytes (an error found in a part of the
    /// file read apart, whose offsets count from the part's start).
    #[cfg(feature = "remote")]
    pub(crate) fn offset_by(mut self, by: u64) -> Self {
        if let Some(o) = &mut self.inner.1.offset {
            *o = o.saturating_add(by);
        }
        self
    }

    /// Sets the block number of the location.
    pub fn with_block(mut self, block: usize) -> Self {
        self.inner.1.block = Some(block);
        self
    }

    /// Adds a tree path to the location when it has none.
    pub fn at_path(mut self, path: &str) -> Self {
        if self.inner.1.path.is_none() {
            self.inner.1.path = Some(path.to_string());
        }
        self
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error").field("kind", self.kind()).field("location", self.location()).finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.location().is_empty() {
            write!(f, "{}", self.kind())
        } else {
            write!(f, "{}: {}", self.location(), self.kind())
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(self.kind())
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::new(e, Location::default())
    }
}

/// A problem that does not stop reading (a stale index, junk after the blocks...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// What is odd.
    pub message: String,
    /// Where.
    pub location: Location,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.location.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.location, self.message)
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
