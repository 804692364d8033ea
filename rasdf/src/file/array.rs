//! One ndarray of a file, as a lazy handle: [`ArrayRef`]. Making one reads nothing; each
//! of its methods reads what it needs.
//!
//! Where each read lives: this file (the handle, [`ArrayRef::meta`],
//! [`ArrayRef::read`], [`ArrayRef::read_dyn`], [`ArrayRef::block`],
//! [`ArrayRef::check`]); `listing.rs` ([`ArrayRef::info`]); `rows.rs`
//! ([`ArrayRef::rows`]); `mask.rs` ([`ArrayRef::mask`]); `stream.rs`
//! ([`ArrayRef::stats`], [`ArrayRef::read_once`], [`ArrayRef::decode_pieces`]).

use std::borrow::Cow;

use ::ndarray::{CowArray, IxDyn};

use super::AsdfFile;
use crate::block::Compression;
use crate::error::{Error, Location, Result};
use crate::ndarray::{ArrayError, ArrayMeta, ByteOrder, Datatype, Layout, NativeType, NdArray, Source, Storage};
use crate::tree::NodeRef;

/// One ndarray of an [`AsdfFile`], not read yet: [`AsdfFile::array`] (by path),
/// [`AsdfFile::array_at`] (a node found already) and [`AsdfFile::arrays`] (every one)
/// make it. Its methods read:
///
/// | method | what | reads |
/// |---|---|---|
/// | [`info`](ArrayRef::info) | path, shape, datatype, byte order, storage | no block data |
/// | [`meta`](ArrayRef::meta) | datatype, byte order, shape | no compressed block |
/// | [`block`](ArrayRef::block) | the block holding the data | nothing |
/// | [`read`](ArrayRef::read) | an `ndarray` array of `T` | the data, zero copy when it can |
/// | [`read_dyn`](ArrayRef::read_dyn) | an [`NdArray`] of any datatype | the data |
/// | [`rows`](ArrayRef::rows) | rows along the first axis | those rows' records or range |
/// | [`mask`](ArrayRef::mask) | the mask, in C order | the `mask` node's data |
/// | [`stats`](ArrayRef::stats) | min, max, mean, NaN count | piece by piece when large |
/// | [`read_once`](ArrayRef::read_once), [`decode_pieces`](ArrayRef::decode_pieces) | the data, holding as little as possible | piece by piece when large |
/// | [`check`](ArrayRef::check) | whether it can be read | as `read_dyn`, or the block's size |
///
/// Errors of a handle that knows its path (made by [`AsdfFile::array`] or
/// [`AsdfFile::arrays`]) name that path.
///
/// ```
/// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/example.asdf");
/// let file = rasdf::AsdfFile::open(path)?;
/// let sci = file.array("sci/data")?; // nothing read yet
/// assert_eq!(sci.info()?.shape, [64, 64]); // from the tree and the block header
/// let data = sci.read::<f32>()?; // decoded now (a zlib block)
/// assert_eq!(data.shape(), &[64, 64]);
/// assert!(sci.read::<f64>().is_err()); // float32, not float64
/// for array in file.arrays() {
///     let stats = array.stats()?; // a large compressed block piece by piece
///     println!("{}: {:?}", array.path().unwrap_or_default(), stats.stats);
/// }
/// # Ok::<(), rasdf::Error>(())
/// ```
#[derive(Clone)]
pub struct ArrayRef<'f> {
    pub(super) file: &'f AsdfFile,
    pub(super) node: NodeRef<'f>,
    /// The path the handle was made with, as given (`sci/data`, `/sci/data`).
    pub(super) path: Option<String>,
}

impl std::fmt::Debug for ArrayRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrayRef").field("path", &self.path).field("node", &self.node.id()).finish_non_exhaustive()
    }
}

impl AsdfFile {
    /// The ndarray at `path` (`sci/data`, or `/sci/data` as [`ArrayInfo::path`]
    /// writes it), as a handle that reads nothing until asked (see [`ArrayRef`]).
    ///
    /// ```
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/example.asdf");
    /// let file = rasdf::AsdfFile::open(path)?;
    /// let data = file.array("sci/data")?.read::<f32>()?;
    /// assert_eq!(data.shape(), &[64, 64]);
    /// assert!(file.array("no/such/path").is_err());
    /// # Ok::<(), rasdf::Error>(())
    /// ```
    ///
    /// # Errors
    /// No node at `path` (a node that is not a valid ndarray fails when read).
    ///
    /// [`ArrayInfo::path`]: super::ArrayInfo::path
    pub fn array(&self, path: &str) -> Result<ArrayRef<'_>> {
        let node = self.node_at(path)?;
        Ok(ArrayRef { file: self, node, path: Some(path.to_string()) })
    }

    /// The ndarray of `node`, a node of this file's tree, as a handle (see [`ArrayRef`]);
    /// its errors name no path.
    pub fn array_at<'f>(&'f self, node: NodeRef<'f>) -> ArrayRef<'f> {
        ArrayRef { file: self, node, path: None }
    }

    /// Every ndarray node of the tree, in tree order, each a handle knowing its path
    /// (`/sci/data`, keys holding `/` or `~` escaped as `~1` and `~0`). Found by one
    /// walk of the tree; nothing else is read.
    ///
    /// ```
    /// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/example.asdf");
    /// let file = rasdf::AsdfFile::open(path)?;
    /// // The listing: "/sci/data: (64, 64) float32, block 0 (zlib)", no block data read.
    /// for array in file.arrays() {
    ///     let info = array.info()?;
    ///     println!("{}: {} {}, {}", info.path, info.shape, info.datatype, info.storage);
    /// }
    /// assert_eq!(file.arrays().len(), 4);
    /// # Ok::<(), rasdf::Error>(())
    /// ```
    pub fn arrays(&self) -> impl ExactSizeIterator<Item = ArrayRef<'_>> + '_ {
        let mut out = Vec::new();
        self.tree.walk(|path, node| {
            if node.is_asdf_tag("core/ndarray") {
                out.push(ArrayRef { file: self, node, path: Some(path.to_string()) });
            }
        });
        out.into_iter()
    }

    /// An [`ArrayError`] at `node`: this file, the node's line.
    pub(super) fn array_error(&self, node: NodeRef<'_>, e: ArrayError) -> Error {
        Error::new(e, Location { line: Some(self.line_of(node)), file: self.path.clone(), ..Location::default() })
    }

    /// The node's declarations, or the error of a malformed ndarray node.
    pub(super) fn array_meta(&self, node: NodeRef<'_>) -> Result<ArrayMeta> {
        ArrayMeta::parse(node).map_err(|e| self.array_error(node, e))
    }

    /// The ndarray of `node` with the node's declarations read already: its layout
    /// resolved and checked, its data read (decoded if compressed) but not copied.
    pub(super) fn ndarray_of(&self, node: NodeRef<'_>, meta: &ArrayMeta) -> Result<NdArray<'_>> {
        let arr = |e: ArrayError| self.array_error(node, e);
        let limits = &self.options.limits;
        match &meta.source {
            Source::Inline => {
                let data = node.key("data").unwrap_or(node);
                let (bytes, mask) = crate::ndarray::encode_inline(data, meta, limits).map_err(arr)?;
                NdArray::new(meta, Cow::Owned(bytes), Storage::Inline, mask, limits).map_err(arr)
            }
            Source::Block(i) => {
                let n = self.resolve_block(*i).map_err(arr)?;
                let data = self.block_data(n)?;
                NdArray::new(meta, Cow::Borrowed(data), Storage::Block(n), None, limits).map_err(arr)
            }
            Source::External(uri) => {
                let ext = self.external(uri).map_err(|e| e.in_file_opt(self.path.as_deref()))?;
                // The other file's block as it holds it (mapped, or decoded in its cache),
                // not copied.
                let data = match ext {
                    Some(f) => f.block_data(0)?,
                    None => self.block_data(0)?,
                };
                NdArray::new(meta, Cow::Borrowed(data), Storage::External(uri.clone()), None, limits).map_err(arr)
            }
            Source::Fits(hdu) => self.fits_ndarray(node, hdu),
        }
    }

    /// The layout of `meta` (`node`'s declarations) checked against its block's
    /// `data_size` without decoding the block, when its data is in a compressed block
    /// `n` for which `skip_decode(n)` holds (an uncompressed one too when `any` holds);
    /// `None` otherwise.
    fn block_layout(
        &self,
        node: NodeRef<'_>,
        meta: &ArrayMeta,
        skip_decode: impl Fn(usize) -> bool,
        any: bool,
    ) -> Result<Option<Layout>> {
        let arr = |e: ArrayError| self.array_error(node, e);
        let Source::Block(i) = meta.source else { return Ok(None) };
        let n = self.resolve_block(i).map_err(arr)?;
        let h = self.block_header(n)?;
        if (h.compression == Compression::None && !any) || !skip_decode(n) {
            return Ok(None);
        }
        let size = usize::try_from(h.data_size).unwrap_or(usize::MAX);
        meta.layout(size, &self.options.limits).map(Some).map_err(arr)
    }
}

impl<'f> ArrayRef<'f> {
    /// The path the handle was made with ([`AsdfFile::array`]'s as given;
    /// [`AsdfFile::arrays`]'s as `/sci/data`); `None` for [`AsdfFile::array_at`]'s.
    pub fn path(&self) -> Option<&str> {
        self.path.as_deref()
    }

    /// The ndarray's node in the tree.
    pub fn node(&self) -> NodeRef<'f> {
        self.node
    }

    /// `e`, naming the handle's path if it knows one (and `e` names none).
    pub(super) fn located(&self, e: Error) -> Error {
        match &self.path {
            Some(p) => e.at_path(p),
            None => e,
        }
    }

    /// The datatype, byte order and shape, as [`ArrayRef::read_dyn`] finds them, but with
    /// no compressed block decoded: the layout is checked against the block's
    /// `data_size` (the block's own faults come out when it is read). A FITS HDU's come
    /// from its header. Unlike [`ArrayRef::info`], an external array's file is opened
    /// and inline data encoded.
    ///
    /// # Errors
    /// As [`ArrayRef::read_dyn`], but for a damaged compressed block.
    pub fn meta(&self) -> Result<(Datatype, ByteOrder, Vec<usize>)> {
        let (file, node) = (self.file, self.node);
        let meta = (|| -> Result<(Datatype, ByteOrder, Vec<usize>)> {
            let meta = file.array_meta(node)?;
            // From the HDU's header, its data untouched.
            if let Source::Fits(spec) = &meta.source {
                let (a, _) = file.fits_shape(node, spec)?;
                return Ok((a.datatype, a.byteorder, a.shape));
            }
            // From the block's header, its data untouched; for a file read by ranges an
            // uncompressed block's too (its data is not read for its shape).
            if let Some(layout) = file.block_layout(node, &meta, |_| true, file.source.is_some())? {
                return Ok((meta.datatype, meta.byteorder, layout.shape));
            }
            let a = file.ndarray_of(node, &meta)?;
            Ok((a.datatype, a.byteorder, a.shape))
        })();
        meta.map_err(|e| self.located(e))
    }

    /// The number of the block holding the data: `None` for inline data, external files
    /// and FITS HDUs. Its header ([`AsdfFile::blocks`]) tells the codec and sizes;
    /// [`ArrayRef::info`] the codec too.
    ///
    /// # Errors
    /// A malformed ndarray node, or a `source` naming a block the file does not have.
    pub fn block(&self) -> Result<Option<usize>> {
        let (file, node) = (self.file, self.node);
        let block = file.array_meta(node).and_then(|meta| {
            let Source::Block(i) = meta.source else { return Ok(None) };
            file.resolve_block(i).map(Some).map_err(|e| file.array_error(node, e))
        });
        block.map_err(|e| self.located(e))
    }

    /// The data as an [`NdArray`] of any datatype (strings and records too), its layout
    /// resolved and checked, its block read (decoded if compressed, and cached) but not
    /// copied.
    ///
    /// # Errors
    /// A node that is not a valid ndarray, a missing or damaged block, a refused external
    /// source, a layout that needs bytes outside its block, a limit.
    pub fn read_dyn(&self) -> Result<NdArray<'f>> {
        let (file, node) = (self.file, self.node);
        file.array_meta(node).and_then(|meta| file.ndarray_of(node, &meta)).map_err(|e| self.located(e))
    }

    /// The data as an `ndarray` array of `T`: a view with no copy when the block is
    /// uncompressed, in the machine's byte order and aligned; an owned copy otherwise.
    ///
    /// # Errors
    /// As [`ArrayRef::read_dyn`], and [`ArrayError::TypeMismatch`] when the array does
    /// not hold `T`.
    pub fn read<T: NativeType>(&self) -> Result<CowArray<'f, T, IxDyn>> {
        let file = self.file;
        let array = self.read_dyn().and_then(|a| {
            a.into_cow::<T>().map_err(|e| {
                let at = self.path.as_deref().map(Location::path).unwrap_or_default();
                Error::new(e, at).in_file_opt(file.path.as_deref())
            })
        });
        file.unchanged(array)
    }

    /// Whether the array can be read, as [`ArrayRef::read_dyn`] tells, with the same
    /// error; but an array in a compressed block for which `sound(block)` holds (decoded
    /// and verified already, by [`AsdfFile::verify_blocks`]) is checked against the
    /// block's `data_size`, without decoding the block again.
    ///
    /// # Errors
    /// As [`ArrayRef::read_dyn`].
    pub fn check(&self, sound: impl Fn(usize) -> bool) -> Result<()> {
        let (file, node) = (self.file, self.node);
        let checked = file.array_meta(node).and_then(|meta| {
            if file.block_layout(node, &meta, sound, false)?.is_some() {
                return Ok(());
            }
            file.ndarray_of(node, &meta).map(drop)
        });
        checked.map_err(|e| self.located(e))
    }
}
