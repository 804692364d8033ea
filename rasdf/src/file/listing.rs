//! Listing a file's arrays from the tree and the block headers alone: path, shape,
//! datatype, byte order and where the data is, as `rasdf info` shows them, with no block
//! read or decoded ([`ArrayRef::info`]).

use std::fmt;

use super::{ArrayRef, AsdfFile};
use crate::Limits;
use crate::block::Compression;
use crate::error::Result;
use crate::ndarray::{ArrayError, ArrayMeta, ByteOrder, Datatype, Dim, Source};
use crate::tree::NodeRef;

/// An array's shape, its lengths as numbers. Displayed as numpy prints a shape (and
/// `rasdf info` shows it): `(64, 64)`, `(3,)`, `()`; debug-printed as a list,
/// `[64, 64]`. It derefs to `[usize]` and compares with slices, arrays and vectors.
///
/// ```
/// use rasdf::file::Shape;
/// let shape = Shape::from(vec![64, 64]);
/// assert_eq!(shape.to_string(), "(64, 64)");
/// assert_eq!(Shape::from(vec![3]).to_string(), "(3,)");
/// assert_eq!(format!("{shape:?}"), "[64, 64]");
/// assert_eq!(shape, [64, 64]);
/// assert_eq!(shape.iter().product::<usize>(), 4096);
/// ```
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Shape(Vec<usize>);

impl Shape {
    /// The lengths, outermost first.
    pub fn as_slice(&self) -> &[usize] {
        &self.0
    }

    /// The lengths, as a vector.
    pub fn into_vec(self) -> Vec<usize> {
        self.0
    }
}

impl From<Vec<usize>> for Shape {
    fn from(dims: Vec<usize>) -> Self {
        Shape(dims)
    }
}

impl std::ops::Deref for Shape {
    type Target = [usize];
    fn deref(&self) -> &[usize] {
        &self.0
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str(if self.0.len() == 1 { ",)" } else { ")" })
    }
}

impl fmt::Debug for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.0).finish()
    }
}

impl PartialEq<[usize]> for Shape {
    fn eq(&self, other: &[usize]) -> bool {
        self.0 == other
    }
}

impl PartialEq<&[usize]> for Shape {
    fn eq(&self, other: &&[usize]) -> bool {
        self.0 == *other
    }
}

impl<const N: usize> PartialEq<[usize; N]> for Shape {
    fn eq(&self, other: &[usize; N]) -> bool {
        self.0 == other
    }
}

impl PartialEq<Vec<usize>> for Shape {
    fn eq(&self, other: &Vec<usize>) -> bool {
        &self.0 == other
    }
}

/// Where an array's data is, as a listing tells it ([`ArrayInfo::storage`]). Displayed
/// as `rasdf info` shows it: `block 0 (zlib)`, `external exploded0000.asdf`, `inline`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StorageInfo {
    /// A block of this file.
    Block {
        /// The block's number in the file (a negative `source` resolved).
        index: usize,
        /// The block's compression, from its header ([`Compression::None`] when stored
        /// as is).
        compression: Compression,
    },
    /// The first block of another file, beside this one (an exploded file's part).
    External {
        /// The `source` as written in the tree: a file name relative to this file's
        /// folder.
        source: String,
    },
    /// Inline in the tree.
    Inline,
    /// The data of an HDU of the FITS file holding this ASDF file (ASDF-in-FITS).
    Fits {
        /// The `source` after `fits:`, as written (`SCI,1`).
        source: String,
        /// The HDU's number in the FITS file (0 is the primary HDU).
        hdu: usize,
        /// Whether the data is read in place (big-endian, with no `BZERO`, `BSCALE` or
        /// `BLANK` to apply), or converted as astropy converts it.
        in_place: bool,
    },
}

impl fmt::Display for StorageInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StorageInfo::Block { index, compression } => write!(f, "block {index} ({compression})"),
            StorageInfo::External { source } => write!(f, "external {source}"),
            StorageInfo::Inline => f.write_str("inline"),
            StorageInfo::Fits { source, hdu, in_place } => {
                write!(f, "fits:{source} (HDU {hdu}{})", if *in_place { "" } else { ", scaled" })
            }
        }
    }
}

/// One ndarray of a file as [`ArrayRef::info`] lists it: what the tree declares,
/// checked against the block headers, with no block data read.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ArrayInfo {
    /// The node's path in the tree, `/sci/data` (keys holding `/` or `~` escaped as
    /// `~1` and `~0`); [`AsdfFile::array`] and [`AsdfFile::get`] take it as it is.
    pub path: String,
    /// The shape. A streamed array's first length (`*` in the tree) is the rows its
    /// block holds now, from the block header's data size.
    pub shape: Shape,
    /// Whether the first dimension is streamed (`*` in the tree): the block may grow.
    pub streamed: bool,
    /// The element type.
    pub datatype: Datatype,
    /// The byte order of the data (the machine's for inline data).
    pub byteorder: ByteOrder,
    /// Where the data is.
    pub storage: StorageInfo,
}

impl ArrayRef<'_> {
    /// The array's listing: its path, shape, datatype, byte order and storage, the way
    /// to see what a file holds. Built from the tree and the block headers read at
    /// open, it reads and decodes no block data, so it is cheap whatever the array's
    /// size, and it lists the arrays of a file whose blocks are damaged (their faults
    /// come out when an array is read, or from [`AsdfFile::verify_blocks`]).
    ///
    /// The layout (shape, strides, offset) is checked against its block's data size as
    /// the header gives it, and inline data against its datatype. An external array's
    /// file is not opened, unless its shape is streamed (its rows are counted from that
    /// file's block header).
    ///
    /// Its [`ArrayInfo::path`] is the handle's path with a leading `/`; for a handle
    /// made from a node ([`AsdfFile::array_at`]), the first path at which a walk of the
    /// tree finds the node.
    ///
    /// ```
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/example.asdf");
    /// let file = rasdf::AsdfFile::open(path)?;
    /// for array in file.arrays() {
    ///     let info = array.info()?;
    ///     // "/sci/data: (64, 64) float32, block 0 (zlib)"
    ///     println!("{}: {} {}, {}", info.path, info.shape, info.datatype, info.storage);
    /// }
    /// let data = file.array("sci/data")?.info()?;
    /// assert_eq!(data.shape, [64, 64]);
    /// assert_eq!(data.datatype.to_string(), "float32");
    /// # Ok::<(), rasdf::Error>(())
    /// ```
    ///
    /// # Errors
    /// With the array's path: a malformed node, a `source` naming a block the file does
    /// not have (or one past where reading block headers stopped, see
    /// [`AsdfFile::blocks_error`]), a layout that needs bytes outside its block, inline
    /// data that does not fit its datatype.
    pub fn info(&self) -> Result<ArrayInfo> {
        let path = match &self.path {
            Some(p) if p.starts_with('/') => p.clone(),
            Some(p) => format!("/{p}"),
            None => {
                let mut found = None;
                self.file.tree.walk(|path, node| {
                    if found.is_none() && node.id() == self.node.id() {
                        found = Some(path.to_string());
                    }
                });
                found.unwrap_or_default()
            }
        };
        self.file.info_of(path, self.node)
    }
}

impl AsdfFile {
    fn info_of(&self, path: String, node: NodeRef<'_>) -> Result<ArrayInfo> {
        self.info_unlocated(&path, node).map_err(|e| e.at_path(&path))
    }

    fn info_unlocated(&self, path: &str, node: NodeRef<'_>) -> Result<ArrayInfo> {
        let arr = |e: ArrayError| self.array_error(node, e);
        let meta = ArrayMeta::parse(node).map_err(arr)?;
        let streamed = meta.shape.first() == Some(&Dim::Stream);
        let (shape, byteorder, storage) = match &meta.source {
            // The data is in the tree already: encoded, as reading would, to check it.
            Source::Inline => {
                let a = self.ndarray_of(node, &meta)?;
                (a.shape, a.byteorder, StorageInfo::Inline)
            }
            Source::Block(i) => {
                let n = self.resolve_block(*i).map_err(arr)?;
                let h = self.block_header(n)?;
                let size = usize::try_from(h.data_size).unwrap_or(usize::MAX);
                let layout = meta.layout(size, &self.options.limits).map_err(arr)?;
                (layout.shape, meta.byteorder, StorageInfo::Block { index: n, compression: h.compression })
            }
            Source::External(uri) => {
                let shape = if streamed {
                    let ext = self.external(uri).map_err(|e| e.in_file_opt(self.path.as_deref()))?;
                    let h = ext.unwrap_or(self).block_header(0)?;
                    let size = usize::try_from(h.data_size).unwrap_or(usize::MAX);
                    meta.layout(size, &self.options.limits).map_err(arr)?.shape
                } else {
                    declared_shape(&meta.shape).map_err(arr)?
                };
                (shape, meta.byteorder, StorageInfo::External { source: uri.clone() })
            }
            // What the HDU's header says (the data is not read), as `ndarray` reads it.
            Source::Fits(spec) => {
                let (a, hdu) = self.fits_shape(node, spec)?;
                Limits::check(
                    "max_array_elements",
                    a.shape.iter().product::<usize>() as u64,
                    self.limits().max_array_elements,
                )
                .map_err(|e| self.array_error(node, ArrayError::Invalid(e.to_string())))?;
                let info = ArrayInfo {
                    path: path.to_string(),
                    shape: Shape(a.shape),
                    streamed: false,
                    datatype: a.datatype,
                    byteorder: a.byteorder,
                    storage: StorageInfo::Fits { source: spec.clone(), hdu, in_place: a.zero_copy },
                };
                return Ok(info);
            }
        };
        Ok(ArrayInfo {
            path: path.to_string(),
            shape: Shape(shape),
            streamed,
            datatype: meta.datatype,
            byteorder,
            storage,
        })
    }
}

/// The lengths of a shape with no `*`.
fn declared_shape(dims: &[Dim]) -> std::result::Result<Vec<usize>, ArrayError> {
    dims.iter()
        .map(|d| match d {
            Dim::Fixed(v) => usize::try_from(*v).map_err(|_| ArrayError::Invalid("shape too large".into())),
            Dim::Stream => Err(ArrayError::Invalid("'*' needs a streamed block".into())),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::AsdfFile;
    use crate::block::Compression;

    /// Listing leaves every compressed block undecoded (none in the cache).
    #[test]
    fn listing_decodes_nothing() {
        let f = AsdfFile::open(concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/example.asdf")).unwrap();
        assert!(f.blocks().iter().any(|b| b.compression == Compression::Zlib));
        assert!(f.blocks().iter().any(|b| b.compression == Compression::Lz4));
        let listed: Vec<_> = f.arrays().map(|a| a.info()).collect::<crate::Result<_>>().unwrap();
        assert_eq!(listed.len(), 4);
        assert!(f.decoded.iter().all(|d| d.get().is_none()), "a block was decoded");
        assert!(f.block_users.get().is_none());
        f.array("sci/data").unwrap().read_dyn().unwrap();
        assert!(f.decoded[0].get().is_some(), "reading caches the block (the check above means something)");
    }
}
