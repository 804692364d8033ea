//! ndarray nodes: datatypes, byte order, shape/strides/offset, inline data, masks, and
//! typed access through the `ndarray` crate.
//!
//! core/ndarray-1.0.0 and 1.1.0: an array's data is a block (`source: 0`, negative
//! numbers count from the end), another file in the same folder (`source:
//! exploded0000.asdf`, its first block), or inline (`data: [[1, 2], [3, 4]]`, or the tag
//! on a bare list). `shape` may start with `'*'` for a streamed block; `offset` and
//! `strides` (in bytes, negative allowed) select a view of the block.

pub mod datatype;
mod inline;
pub(crate) mod node;
pub mod stats;

use std::borrow::Cow;

use ndarray::{ArrayD, ArrayViewD, CowArray, IxDyn, ShapeBuilder};

use crate::Limits;
use crate::tree::NodeRef;
pub use datatype::{ByteOrder, Datatype, Element, Field, ScalarType};

/// What can be wrong with an ndarray node or its data.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ArrayError {
    /// The node is not a valid ndarray.
    #[error("invalid ndarray: {0}")]
    Invalid(String),
    /// The array would take more than a limit of [`crate::Limits`] allows
    /// (`max_array_elements`, `max_inline_bytes`).
    #[error(transparent)]
    Limit(#[from] crate::LimitError),
    /// The array needs bytes outside its block.
    #[error("the array needs bytes {lo}..{hi} of its data, which has {len}")]
    OutOfBounds {
        /// First byte the array reads.
        lo: i128,
        /// One past the last byte it reads.
        hi: i128,
        /// Bytes the data has.
        len: usize,
    },
    /// `source` names a block the file does not have.
    #[error("source {index} names a block the file does not have ({blocks} blocks)")]
    NoSuchBlock {
        /// The `source` value.
        index: i64,
        /// Blocks in the file.
        blocks: usize,
    },
    /// The caller asked for another element type than the array has.
    #[error("the array holds {found}, not {requested}")]
    TypeMismatch {
        /// The type asked for.
        requested: &'static str,
        /// The array's datatype.
        found: String,
    },
    /// A zero-copy view is not possible (compressed, byte-swapped or unaligned data).
    #[error("no zero-copy view: {0}")]
    NotZeroCopy(&'static str),
    /// Inline data does not match its shape or datatype.
    #[error("inline data: {0}")]
    Inline(String),
}

/// Where an array's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A block of this file (negative numbers count from the end).
    Block(i64),
    /// The first block of another file, relative to this file's folder.
    External(String),
    /// Inline in the tree.
    Inline,
    /// The data of an HDU of the FITS file holding this ASDF file: what follows
    /// `fits:` (`SCI,1`, or an HDU's index: see [`crate::fits`]).
    Fits(String),
}

/// One dimension of a declared shape. Displayed (and debug-printed) as it is written in
/// the tree: the length, or `*`; so a declared shape prints as `[*, 4]`, not
/// `[Stream, Fixed(4)]`.
///
/// ```
/// use rasdf::ndarray::Dim;
/// assert_eq!(Dim::Fixed(8192).to_string(), "8192");
/// assert_eq!(format!("{:?}", [Dim::Stream, Dim::Fixed(4)]), "[*, 4]");
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Dim {
    /// A fixed length.
    Fixed(u64),
    /// `'*'`: as many rows as the streamed block holds.
    Stream,
}

impl std::fmt::Display for Dim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dim::Fixed(n) => std::fmt::Display::fmt(n, f),
            Dim::Stream => f.write_str("*"),
        }
    }
}

impl std::fmt::Debug for Dim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// An ndarray node's declarations, before its data is read.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayMeta {
    /// Where the data is.
    pub source: Source,
    /// The element type.
    pub datatype: Datatype,
    /// The byte order of block data (inline data is native).
    pub byteorder: ByteOrder,
    /// The declared shape.
    pub shape: Vec<Dim>,
    /// Byte offset into the block.
    pub offset: u64,
    /// Byte strides, when given.
    pub strides: Option<Vec<i64>>,
}

fn int(node: NodeRef<'_>, what: &str) -> Result<i64, ArrayError> {
    node.as_i64().ok_or_else(|| ArrayError::Invalid(format!("{what} must be an integer, not {}", node.key_text())))
}

impl ArrayMeta {
    /// Reads the declarations of an ndarray node (a mapping, or a bare list of data).
    ///
    /// # Errors
    /// [`ArrayError::Invalid`] for a malformed node.
    pub fn parse(node: NodeRef<'_>) -> Result<Self, ArrayError> {
        if node.items().is_some() {
            let (datatype, shape) = inline::infer(node, None, None)?;
            return Ok(ArrayMeta {
                source: Source::Inline,
                datatype,
                byteorder: ByteOrder::NATIVE,
                shape: shape.into_iter().map(|d| Dim::Fixed(d as u64)).collect(),
                offset: 0,
                strides: None,
            });
        }
        if node.pairs().is_none() {
            return Err(ArrayError::Invalid("an ndarray must be a mapping or a list".into()));
        }
        // As the reference takes them: an integer (a bool too, as in Python) is a block
        // number, a string an external file, under `data` as under `source`; anything else
        // under `data` (a list) is inline data (`Err(data)` here).
        let source_of = |s: NodeRef<'_>| match (s.as_i64(), s.as_bool(), s.as_str()) {
            (Some(i), _, _) => Some(Source::Block(i)),
            (_, Some(b), _) => Some(Source::Block(i64::from(b))),
            // ASDF-in-FITS: an HDU of the FITS file around this one (stdatamodels reads
            // any string source so, under `source` or `data`).
            (_, _, Some(uri)) if !s.is_asdf_tag("core/complex") => Some(match uri.strip_prefix("fits:") {
                Some(hdu) => Source::Fits(hdu.to_string()),
                None => Source::External(uri.to_string()),
            }),
            _ => None,
        };
        let data = node.key("data");
        let source = match (node.key("source"), data) {
            (Some(_), Some(_)) => return Err(ArrayError::Invalid("both source and data are given".into())),
            (Some(s), None) => {
                Ok(source_of(s).ok_or_else(|| ArrayError::Invalid("source must be an integer or a string".into()))?)
            }
            // A mapping (another ndarray, say) is no inline data: the reference fails on it.
            (None, Some(d)) if d.pairs().is_some() => {
                return Err(ArrayError::Invalid("data must be a list of values, a block number or a file name".into()));
            }
            (None, Some(d)) => source_of(d).ok_or(d),
            (None, None) => return Err(ArrayError::Invalid("an ndarray needs source or data".into())),
        };
        let declared = match node.key("byteorder") {
            Some(b) => match b.as_str() {
                Some("big") => ByteOrder::Big,
                Some("little") => ByteOrder::Little,
                _ => {
                    return Err(ArrayError::Invalid(format!(
                        "byteorder must be 'big' or 'little', not {}",
                        b.key_text()
                    )));
                }
            },
            // The schema makes `byteorder` go with `source`, and the reference needs it.
            None if node.key("source").is_some() => {
                return Err(ArrayError::Invalid("an ndarray with a source needs a byteorder".into()));
            }
            None => ByteOrder::Big,
        };
        // Anything under `data` (inline data, or `data: 3`, block 3 to the reference) is
        // in the machine's order whatever `byteorder` says, and so are its fields by
        // default.
        let byteorder = if data.is_some() { ByteOrder::NATIVE } else { declared };
        let datatype = node.key("datatype").map(|d| Datatype::parse(d, byteorder)).transpose()?;
        let mut shape = match node.key("shape") {
            Some(s) => {
                let items = s.items().ok_or_else(|| ArrayError::Invalid("shape must be a list".into()))?;
                let mut dims = Vec::with_capacity(items.len());
                for (i, d) in items.enumerate() {
                    dims.push(match (d.as_str(), d.as_i64()) {
                        (Some("*"), _) if i == 0 => Dim::Stream,
                        (_, Some(v)) if v >= 0 => Dim::Fixed(v.unsigned_abs()),
                        _ => {
                            return Err(ArrayError::Invalid(format!("shape entry {i} must be a non-negative integer")));
                        }
                    });
                }
                Some(dims)
            }
            None => None,
        };
        let offset = match node.key("offset") {
            Some(o) => {
                u64::try_from(int(o, "offset")?).map_err(|_| ArrayError::Invalid("offset must be >= 0".into()))?
            }
            None => 0,
        };
        let strides = match node.key("strides") {
            Some(s) => {
                let items = s.items().ok_or_else(|| ArrayError::Invalid("strides must be a list".into()))?;
                Some(items.map(|d| int(d, "a stride")).collect::<Result<Vec<i64>, _>>()?)
            }
            None => None,
        };
        let source = match source {
            Ok(source) => source,
            Err(data) => {
                let (dt, inferred) = inline::infer(data, datatype.as_ref(), shape.as_deref())?;
                if shape.is_none() {
                    shape = Some(inferred.into_iter().map(|d| Dim::Fixed(d as u64)).collect());
                }
                // Inline data lies in C order from its start: the reference makes its
                // array of the lists alone, whatever `offset` and `strides` say.
                return Ok(ArrayMeta {
                    source: Source::Inline,
                    datatype: dt,
                    byteorder,
                    shape: shape.unwrap_or_default(),
                    offset: 0,
                    strides: None,
                });
            }
        };
        let datatype =
            datatype.ok_or_else(|| ArrayError::Invalid("an ndarray with a source needs a datatype".into()))?;
        let shape = shape.ok_or_else(|| ArrayError::Invalid("an ndarray with a source needs a shape".into()))?;
        if shape.contains(&Dim::Stream) && shape.first() != Some(&Dim::Stream) {
            return Err(ArrayError::Invalid("'*' may only be the first dimension".into()));
        }
        Ok(ArrayMeta { source, datatype, byteorder, shape, offset, strides })
    }
}

/// Where an array's data came from, for listings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Storage {
    /// Block `n` of the file (after resolving negative sources).
    Block(usize),
    /// The first block of another file.
    External(String),
    /// Inline in the tree.
    Inline,
    /// The data of HDU `n` of the FITS file holding this ASDF file.
    Fits(usize),
}

/// An array ready to read: its layout resolved and checked against its data, which is
/// borrowed from the file (mapped, or its block decoded and cached) or owned. Any
/// datatype, strings and records too; [`NdArray::view`], [`NdArray::to_array`] and
/// [`NdArray::to_cow`] give an `ndarray` array of a number type,
/// [`NdArray::elements`] the values of any. [`ArrayRef::read_dyn`](crate::ArrayRef::read_dyn)
/// makes one, reading (decoding) the data; to list arrays without reading them, see
/// [`ArrayRef::info`](crate::ArrayRef::info).
///
/// ```
/// use rasdf::ndarray::{Datatype, Element, ScalarType, Storage};
/// # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/example.asdf");
/// let file = rasdf::AsdfFile::open(path)?;
/// let data = file.array("sci/data")?.read_dyn()?;
/// assert_eq!(data.datatype, Datatype::Scalar(ScalarType::Float32));
/// assert_eq!((data.shape.as_slice(), data.storage.clone()), (&[64, 64][..], Storage::Block(0)));
/// let values = data.to_cow::<f32>()?; // a view when it can, else a copy
/// assert_eq!(values.shape(), &[64, 64]);
/// // Any datatype, element by element (the catalog is a table of records):
/// let catalog = file.array("catalog")?.read_dyn()?;
/// assert!(matches!(catalog.elements().next(), Some(Element::Record(_))));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct NdArray<'f> {
    /// The element type.
    pub datatype: Datatype,
    /// The byte order of `data`.
    pub byteorder: ByteOrder,
    /// The shape (a streamed `'*'` resolved).
    pub shape: Vec<usize>,
    /// Byte strides.
    pub strides: Vec<isize>,
    /// Byte offset of element `[0, 0, ...]` in `data`.
    pub offset: usize,
    /// Where the data came from.
    pub storage: Storage,
    data: Cow<'f, [u8]>,
    inline_mask: Option<Vec<bool>>,
}

/// Where an ndarray's elements lie in its data: the shape (a streamed `'*'` resolved),
/// byte strides, and the byte offset of element `[0, 0, ...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The shape.
    pub shape: Vec<usize>,
    /// Byte strides.
    pub strides: Vec<isize>,
    /// Byte offset of element `[0, 0, ...]`.
    pub offset: usize,
}

impl Layout {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether elements of `itemsize` bytes lie in C order, one after another, from
    /// `offset`.
    pub fn is_c_contiguous(&self, itemsize: usize) -> bool {
        self.strides == c_strides(&self.shape, itemsize) || self.is_empty()
    }
}

impl ArrayMeta {
    /// The layout of these declarations over `data_len` bytes of data (the whole block,
    /// or encoded inline data), which need not be at hand.
    ///
    /// # Errors
    /// [`ArrayError::OutOfBounds`] when the layout needs bytes the data does not have;
    /// [`ArrayError::Limit`] past `limits.max_array_elements`.
    pub fn layout(&self, data_len: usize, limits: &Limits) -> Result<Layout, ArrayError> {
        let itemsize = self.datatype.size();
        let too_big = || ArrayError::Invalid("shape, strides or offset overflow".into());
        let mut shape = Vec::with_capacity(self.shape.len());
        for (i, d) in self.shape.iter().enumerate() {
            shape.push(match d {
                Dim::Fixed(v) => usize::try_from(*v).map_err(|_| too_big())?,
                Dim::Stream => {
                    // Rows in the streamed block: reference notes 1.11.
                    let row: u64 = match &self.strides {
                        Some(s) => s.first().map_or(0, |v| v.unsigned_abs()),
                        None => self.shape[i + 1..]
                            .iter()
                            .map(|d| if let Dim::Fixed(v) = d { *v } else { 1 })
                            .try_fold(itemsize as u64, u64::checked_mul)
                            .ok_or_else(too_big)?,
                    };
                    usize::try_from((data_len as u64).checked_div(row).unwrap_or(0)).map_err(|_| too_big())?
                }
            });
        }
        let n = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d as u64)).ok_or_else(too_big)?;
        Limits::check("max_array_elements", n, limits.max_array_elements)?;
        let strides: Vec<isize> = match &self.strides {
            Some(s) => {
                if s.len() != shape.len() {
                    return Err(ArrayError::Invalid(format!("{} strides for {} dimensions", s.len(), shape.len())));
                }
                s.iter().map(|&v| isize::try_from(v).map_err(|_| too_big())).collect::<Result<_, _>>()?
            }
            None => c_strides(&shape, itemsize),
        };
        let offset = usize::try_from(self.offset).map_err(|_| too_big())?;
        if n == 0 && offset > data_len {
            // numpy refuses an offset past the buffer even for an empty array.
            return Err(ArrayError::OutOfBounds { lo: offset as i128, hi: offset as i128, len: data_len });
        }
        if n > 0 {
            let mut lo = i128::try_from(offset).map_err(|_| too_big())?;
            let mut hi = lo + itemsize as i128;
            for (&d, &s) in shape.iter().zip(&strides) {
                let span = (d as i128 - 1) * s as i128;
                if span < 0 { lo += span } else { hi += span }
            }
            if lo < 0 || hi > data_len as i128 {
                return Err(ArrayError::OutOfBounds { lo, hi, len: data_len });
            }
            // Elements in more bytes than the data has: strides that overlap.
            let bytes = n.saturating_mul(itemsize as u64);
            if bytes > data_len as u64 {
                Limits::check("max_overlap_bytes", bytes, limits.max_overlap_bytes)
                    .map_err(|e| ArrayError::Invalid(format!("overlapping strides: {e}")))?;
            }
        }
        Ok(Layout { shape, strides, offset })
    }
}

/// C-order byte strides for `shape` and `itemsize`.
pub fn c_strides(shape: &[usize], itemsize: usize) -> Vec<isize> {
    let mut strides = vec![0isize; shape.len()];
    let mut acc = isize::try_from(itemsize).unwrap_or(isize::MAX);
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        acc = acc.saturating_mul(isize::try_from(d.max(1)).unwrap_or(isize::MAX));
    }
    strides
}

impl<'f> NdArray<'f> {
    /// Resolves `meta` against its data bytes (the whole block, or encoded inline data).
    ///
    /// # Errors
    /// As [`ArrayMeta::layout`].
    pub fn new(
        meta: &ArrayMeta,
        data: Cow<'f, [u8]>,
        storage: Storage,
        inline_mask: Option<Vec<bool>>,
        limits: &Limits,
    ) -> Result<Self, ArrayError> {
        let Layout { shape, strides, offset } = meta.layout(data.len(), limits)?;
        Ok(NdArray {
            datatype: meta.datatype.clone(),
            byteorder: meta.byteorder,
            shape,
            strides,
            offset,
            storage,
            data,
            inline_mask,
        })
    }

    /// An array over `data` with a layout already checked against it (by
    /// [`NdArray::new`] on the same data, or built by the writer).
    pub fn from_layout(
        datatype: &Datatype,
        byteorder: ByteOrder,
        shape: &[usize],
        strides: &[isize],
        offset: usize,
        data: &'f [u8],
    ) -> Self {
        NdArray {
            datatype: datatype.clone(),
            byteorder,
            shape: shape.to_vec(),
            strides: strides.to_vec(),
            offset,
            storage: Storage::Inline,
            data: Cow::Borrowed(data),
            inline_mask: None,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// True when the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes the array reads from (the whole block).
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Whether the elements lie in C order, one after another, from `offset`.
    pub fn is_c_contiguous(&self) -> bool {
        self.strides == c_strides(&self.shape, self.datatype.size()) || self.is_empty()
    }

    /// Byte offset of every element, in C order.
    pub fn byte_offsets(&self) -> ByteOffsets<'_> {
        ByteOffsets {
            array: self,
            index: vec![0; self.shape.len()],
            next: Some(self.offset as isize),
            left: self.len(),
        }
    }

    /// Every element, in C order, as values (masked entries of inline data as stored:
    /// 0), one at a time: an array whose strides overlap stands for more elements than
    /// its data holds bytes, so they are not gathered.
    pub fn elements(&self) -> Elements<'_> {
        Elements { array: self, offsets: self.byte_offsets() }
    }

    /// The bytes the array reads from, taken out of it: borrowed from the file (mapped,
    /// or a decoded block in its cache) or owned (inline data), with no copy.
    pub fn into_data(self) -> Cow<'f, [u8]> {
        self.data
    }

    /// Which elements inline data left out (`null`), in C order, if any.
    pub fn inline_mask(&self) -> Option<&[bool]> {
        self.inline_mask.as_deref()
    }

    fn check_type<T: NativeType>(&self) -> Result<(), ArrayError> {
        if self.datatype != Datatype::Scalar(T::SCALAR) {
            return Err(ArrayError::TypeMismatch { requested: T::SCALAR.name(), found: self.datatype.to_string() });
        }
        Ok(())
    }

    /// A view of the data with no copy: needs an uncompressed (or cached) block, native
    /// byte order, and elements aligned for `T` (the reference writes data unaligned,
    /// at block offset + 54, so many blocks are not).
    ///
    /// # Errors
    /// [`ArrayError::TypeMismatch`], [`ArrayError::NotZeroCopy`].
    pub fn view<T: NativeType>(&self) -> Result<ArrayViewD<'_, T>, ArrayError> {
        self.view_in(&self.data)
    }

    /// [`NdArray::view`] over `data`, which is this array's data under another lifetime.
    fn view_in<'a, T: NativeType>(&self, data: &'a [u8]) -> Result<ArrayViewD<'a, T>, ArrayError> {
        self.check_type::<T>()?;
        if !T::ZERO_COPY {
            return Err(ArrayError::NotZeroCopy("bool elements are copied (a byte may be other than 0 or 1)"));
        }
        if self.byteorder != ByteOrder::NATIVE && T::SCALAR.size() > 1 {
            return Err(ArrayError::NotZeroCopy("the data is not in the machine's byte order"));
        }
        let size = std::mem::size_of::<T>();
        if self.is_empty() {
            return ArrayViewD::from_shape(IxDyn(&self.shape), &[]).map_err(|e| ArrayError::Invalid(e.to_string()));
        }
        if self.strides.iter().any(|s| s.unsigned_abs() % size != 0) {
            return Err(ArrayError::NotZeroCopy("strides are not a multiple of the element size"));
        }
        // The lowest address the array touches, then positive strides from there.
        let mut lo = self.offset as isize;
        for (&d, &s) in self.shape.iter().zip(&self.strides) {
            if s < 0 {
                lo += (d as isize - 1) * s;
            }
        }
        let lo = lo.unsigned_abs();
        let bytes = &data[lo..];
        if bytes.as_ptr().align_offset(std::mem::align_of::<T>()) != 0 {
            return Err(ArrayError::NotZeroCopy("the data is not aligned for the element type"));
        }
        // SAFETY: `bytes` is aligned for T (checked above), T is a plain number type for
        // which every bit pattern is valid (ZERO_COPY excludes bool), and the length is
        // rounded down to whole elements.
        let typed: &[T] = unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), bytes.len() / size) };
        let abs: Vec<usize> = self.strides.iter().map(|s| s.unsigned_abs() / size).collect();
        let mut view = ArrayViewD::from_shape(IxDyn(&self.shape).strides(IxDyn(&abs)), typed)
            .map_err(|e| ArrayError::Invalid(e.to_string()))?;
        for (axis, &s) in self.strides.iter().enumerate() {
            if s < 0 {
                view.invert_axis(ndarray::Axis(axis));
            }
        }
        Ok(view)
    }

    /// The elements copied into an owned array of `T`, converted from the file's byte
    /// order.
    ///
    /// # Errors
    /// [`ArrayError::TypeMismatch`].
    pub fn to_array<T: NativeType>(&self) -> Result<ArrayD<T>, ArrayError> {
        self.check_type::<T>()?;
        let order = self.byteorder;
        let values: Vec<T> = if self.is_c_contiguous() {
            let size = T::SCALAR.size();
            let end = self.offset + self.len() * size;
            self.data[self.offset..end].chunks_exact(size).map(|b| T::decode(b, order)).collect()
        } else {
            self.byte_offsets().map(|at| T::decode(&self.data[at..], order)).collect()
        };
        ArrayD::from_shape_vec(IxDyn(&self.shape), values).map_err(|e| ArrayError::Invalid(e.to_string()))
    }

    /// The elements as `f64`, whatever real number or boolean type the file holds
    /// (numpy's `astype(float64)`: integers beyond 2^53 rounded, booleans 0 and 1), in
    /// an owned array of the array's shape. For pipelines that take any image type.
    ///
    /// ```
    /// # let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/example.asdf");
    /// let file = rasdf::AsdfFile::open(example)?;
    /// let data = file.array("sci/data")?.read_dyn()?.to_array_f64()?; // float32 in the file
    /// assert_eq!(data.shape(), &[64, 64]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`ArrayError::TypeMismatch`] for strings, records and complex numbers.
    pub fn to_array_f64(&self) -> Result<ArrayD<f64>, ArrayError> {
        let mut values = Vec::with_capacity(self.len());
        self.for_each_f64(|x| values.push(x))?;
        ArrayD::from_shape_vec(IxDyn(&self.shape), values).map_err(|e| ArrayError::Invalid(e.to_string()))
    }

    /// A view when [`NdArray::view`] can make one, an owned copy otherwise.
    ///
    /// # Errors
    /// [`ArrayError::TypeMismatch`].
    pub fn to_cow<T: NativeType>(&self) -> Result<CowArray<'_, T, IxDyn>, ArrayError> {
        match self.view::<T>() {
            Ok(v) => Ok(CowArray::from(v)),
            Err(ArrayError::NotZeroCopy(_)) => Ok(CowArray::from(self.to_array::<T>()?)),
            Err(e) => Err(e),
        }
    }

    /// Like [`NdArray::to_cow`], but a view borrows the file rather than `self`.
    ///
    /// # Errors
    /// [`ArrayError::TypeMismatch`].
    pub fn into_cow<T: NativeType>(self) -> Result<CowArray<'f, T, IxDyn>, ArrayError> {
        if let Cow::Borrowed(data) = self.data {
            match self.view_in::<T>(data) {
                Ok(v) => return Ok(CowArray::from(v)),
                Err(ArrayError::NotZeroCopy(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(CowArray::from(self.to_array::<T>()?))
    }

    /// Calls `f` with every element as a float, in C order (numbers and booleans only).
    ///
    /// # Errors
    /// [`ArrayError::TypeMismatch`] for strings, records and complex numbers.
    pub fn for_each_f64(&self, mut f: impl FnMut(f64)) -> Result<(), ArrayError> {
        let Datatype::Scalar(t) = self.datatype else {
            return Err(ArrayError::TypeMismatch { requested: "a number", found: self.datatype.to_string() });
        };
        if matches!(t, ScalarType::Complex64 | ScalarType::Complex128) {
            return Err(ArrayError::TypeMismatch { requested: "a real number", found: self.datatype.to_string() });
        }
        let order = self.byteorder;
        macro_rules! run {
            ($ty:ty) => {{
                if self.is_c_contiguous() {
                    let size = std::mem::size_of::<$ty>();
                    let end = self.offset + self.len() * size;
                    for b in self.data[self.offset..end].chunks_exact(size) {
                        #[allow(clippy::cast_precision_loss)]
                        f(<$ty as NativeType>::decode(b, order).to_f64());
                    }
                } else {
                    for at in self.byte_offsets() {
                        f(<$ty as NativeType>::decode(&self.data[at..], order).to_f64());
                    }
                }
            }};
        }
        match t {
            ScalarType::Int8 => run!(i8),
            ScalarType::Int16 => run!(i16),
            ScalarType::Int32 => run!(i32),
            ScalarType::Int64 => run!(i64),
            ScalarType::UInt8 => run!(u8),
            ScalarType::UInt16 => run!(u16),
            ScalarType::UInt32 => run!(u32),
            ScalarType::UInt64 => run!(u64),
            ScalarType::Float16 => run!(half::f16),
            ScalarType::Float32 => run!(f32),
            ScalarType::Float64 => run!(f64),
            ScalarType::Bool8 => run!(bool),
            ScalarType::Complex64 | ScalarType::Complex128 => {}
        }
        Ok(())
    }
}

/// The elements of an array as values, in C order (see [`NdArray::elements`]).
pub struct Elements<'a> {
    array: &'a NdArray<'a>,
    offsets: ByteOffsets<'a>,
}

impl Iterator for Elements<'_> {
    type Item = Element;
    fn next(&mut self) -> Option<Element> {
        let at = self.offsets.next()?;
        Some(datatype::decode_element(&self.array.datatype, &self.array.data[at..], self.array.byteorder))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.offsets.size_hint()
    }
}

impl ExactSizeIterator for Elements<'_> {}

/// Iterator over the byte offsets of an array's elements, in C order.
pub struct ByteOffsets<'a> {
    array: &'a NdArray<'a>,
    index: Vec<usize>,
    next: Option<isize>,
    left: usize,
}

impl ExactSizeIterator for ByteOffsets<'_> {}

impl Iterator for ByteOffsets<'_> {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        if self.left == 0 {
            return None;
        }
        let cur = self.next?;
        self.left -= 1;
        // Advance the odometer.
        let mut pos = cur;
        for axis in (0..self.index.len()).rev() {
            self.index[axis] += 1;
            pos += self.array.strides[axis];
            if self.index[axis] < self.array.shape[axis] {
                self.next = Some(pos);
                return Some(cur.unsigned_abs());
            }
            pos -= self.array.strides[axis] * self.index[axis] as isize;
            self.index[axis] = 0;
        }
        self.next = None;
        Some(cur.unsigned_abs())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

/// Keeps [`NativeType`] to the types of this crate: a zero-copy read views a file's
/// bytes as the type, which is sound only for types every bit pattern of whose size is a
/// valid value (a `char` or an enum is not); and a write views the type's elements as
/// bytes ([`as_bytes`]), which is sound only for types without padding bytes (each of
/// them is a primitive, or `#[repr(C)]` of two equal floats).
mod sealed {
    pub trait Sealed {}
}

/// Element types that arrays can be read as: the integers, `f32`, `f64`, `half::f16`,
/// `bool` and `Complex<f32>`/`Complex<f64>`. Sealed: it cannot be implemented outside
/// this crate, for a zero-copy read views the file's bytes as the type.
///
/// ```compile_fail
/// #[derive(Clone, Copy)]
/// struct NotPod(char);
/// impl rasdf::ndarray::NativeType for NotPod {
///     const SCALAR: rasdf::ndarray::ScalarType = rasdf::ndarray::ScalarType::UInt32;
///     fn decode(_: &[u8], _: rasdf::ndarray::ByteOrder) -> Self { NotPod('x') }
///     fn encode(self, _: &mut Vec<u8>) {}
///     fn to_f64(self) -> f64 { 0.0 }
/// }
/// ```
pub trait NativeType: sealed::Sealed + Copy + Send + Sync + 'static {
    /// The datatype this Rust type reads.
    const SCALAR: ScalarType;
    /// Whether a byte slice may be viewed as this type without a copy.
    const ZERO_COPY: bool = true;
    /// Decodes one element from the start of `b`.
    fn decode(b: &[u8], order: ByteOrder) -> Self;
    /// Appends the element's bytes in the machine's order.
    fn encode(self, out: &mut Vec<u8>);
    /// As a float (complex: the real part).
    fn to_f64(self) -> f64;
}

macro_rules! native {
    ($ty:ty, $scalar:ident, $n:literal) => {
        impl sealed::Sealed for $ty {}
        impl NativeType for $ty {
            const SCALAR: ScalarType = ScalarType::$scalar;
            fn decode(b: &[u8], order: ByteOrder) -> Self {
                let mut a = [0u8; $n];
                a.copy_from_slice(&b[..$n]);
                match order {
                    ByteOrder::Big => <$ty>::from_be_bytes(a),
                    ByteOrder::Little => <$ty>::from_le_bytes(a),
                }
            }
            #[allow(clippy::cast_precision_loss, clippy::cast_lossless)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn encode(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_ne_bytes());
            }
        }
    };
}

native!(i8, Int8, 1);
native!(i16, Int16, 2);
native!(i32, Int32, 4);
native!(i64, Int64, 8);
native!(u8, UInt8, 1);
native!(u16, UInt16, 2);
native!(u32, UInt32, 4);
native!(u64, UInt64, 8);
native!(f32, Float32, 4);
native!(f64, Float64, 8);

impl sealed::Sealed for half::f16 {}
impl sealed::Sealed for bool {}
impl sealed::Sealed for num_complex::Complex<f32> {}
impl sealed::Sealed for num_complex::Complex<f64> {}

impl NativeType for half::f16 {
    const SCALAR: ScalarType = ScalarType::Float16;
    fn decode(b: &[u8], order: ByteOrder) -> Self {
        half::f16::from_bits(u16::decode(b, order))
    }
    fn encode(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_bits().to_ne_bytes());
    }
    fn to_f64(self) -> f64 {
        half::f16::to_f64(self)
    }
}

impl NativeType for bool {
    const SCALAR: ScalarType = ScalarType::Bool8;
    const ZERO_COPY: bool = false;
    fn decode(b: &[u8], _: ByteOrder) -> Self {
        b[0] != 0
    }
    fn encode(self, out: &mut Vec<u8>) {
        out.push(u8::from(self));
    }
    fn to_f64(self) -> f64 {
        if self { 1.0 } else { 0.0 }
    }
}

impl NativeType for num_complex::Complex<f32> {
    const SCALAR: ScalarType = ScalarType::Complex64;
    fn decode(b: &[u8], order: ByteOrder) -> Self {
        num_complex::Complex::new(f32::decode(b, order), f32::decode(&b[4..], order))
    }
    fn encode(self, out: &mut Vec<u8>) {
        self.re.encode(out);
        self.im.encode(out);
    }
    fn to_f64(self) -> f64 {
        f64::from(self.re)
    }
}

impl NativeType for num_complex::Complex<f64> {
    const SCALAR: ScalarType = ScalarType::Complex128;
    fn decode(b: &[u8], order: ByteOrder) -> Self {
        num_complex::Complex::new(f64::decode(b, order), f64::decode(&b[8..], order))
    }
    fn encode(self, out: &mut Vec<u8>) {
        self.re.encode(out);
        self.im.encode(out);
    }
    fn to_f64(self) -> f64 {
        self.re
    }
}

/// The bytes of `elements` as they lie in memory (the machine's byte order), with no
/// copy: what [`NativeType::encode`] appends for each, one after another.
pub(crate) fn as_bytes<T: NativeType>(elements: &[T]) -> &[u8] {
    // SAFETY: the pointer and length cover exactly the memory of `elements`, borrowed
    // for the returned lifetime; u8 has alignment 1; and every `NativeType` (sealed to
    // the types above) is plain data without padding, so every byte is initialized.
    unsafe { std::slice::from_raw_parts(elements.as_ptr().cast::<u8>(), std::mem::size_of_val(elements)) }
}

/// Parses a core/complex-1.0.0 text as Python's `complex()` does: `1+2j`, `(1-2j)`, `2j`,
/// `inf`, `(nan+infj)`, with `i`/`I` accepted for `j`.
pub fn parse_complex(text: &str) -> Option<(f64, f64)> {
    let t = text.trim();
    let t = t.strip_prefix('(').and_then(|r| r.strip_suffix(')')).unwrap_or(t).trim();
    let lower = t.to_ascii_lowercase();
    let parse = |s: &str| -> Option<f64> {
        match s {
            "" | "+" => Some(1.0),
            "-" => Some(-1.0),
            _ => {
                let (neg, u) = match s.as_bytes()[0] {
                    b'-' => (true, &s[1..]),
                    b'+' => (false, &s[1..]),
                    _ => (false, s),
                };
                let v = match u {
                    "inf" | "infinity" => f64::INFINITY,
                    "nan" => f64::NAN,
                    _ => {
                        if u.is_empty() || !u.bytes().all(|b| b.is_ascii_digit() || b".e+-_".contains(&b)) {
                            return None;
                        }
                        u.parse::<f64>().ok()?
                    }
                };
                Some(if neg { -v } else { v })
            }
        }
    };
    // As the reference: an `i` not followed by `nf` means `j`.
    let chars: Vec<char> = lower.chars().collect();
    let lower: String = chars
        .iter()
        .enumerate()
        .map(
            |(k, &c)| {
                if c == 'i' && !(chars.get(k + 1) == Some(&'n') && chars.get(k + 2) == Some(&'f')) { 'j' } else { c }
            },
        )
        .collect();
    let has_imag = lower.ends_with('j');
    let body = if has_imag { &lower[..lower.len() - 1] } else { &lower[..] };
    if !has_imag {
        return Some((parse(body).filter(|_| !body.is_empty())?, 0.0));
    }
    // Split at the last sign that does not follow an exponent's `e`.
    let bytes = body.as_bytes();
    let split = (1..bytes.len()).rev().find(|&i| matches!(bytes[i], b'+' | b'-') && bytes[i - 1] != b'e');
    match split {
        Some(i) => Some((parse(&body[..i]).filter(|_| i > 0)?, parse(&body[i..])?)),
        None => Some((0.0, parse(body)?)),
    }
}

/// Encodes inline data (see [`ArrayMeta::parse`]) into native-order bytes and a mask of
/// the `null` entries.
///
/// # Errors
/// [`ArrayError::Inline`] when the data does not fit its shape or datatype;
/// [`ArrayError::Invalid`] when its elements would take more than
/// `limits.max_inline_bytes`, checked before anything is allocated.
pub fn encode_inline(
    node: NodeRef<'_>,
    meta: &ArrayMeta,
    limits: &Limits,
) -> Result<(Vec<u8>, Option<Vec<bool>>), ArrayError> {
    let elements =
        meta.shape.iter().try_fold(1u64, |a, d| if let Dim::Fixed(v) = d { a.checked_mul(*v) } else { Some(a) });
    let bytes = elements.and_then(|n| n.checked_mul(meta.datatype.size() as u64)).unwrap_or(u64::MAX);
    Limits::check("max_inline_bytes", bytes, limits.max_inline_bytes)?;
    inline::encode(node, meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A string type of size 0 over inline data is numpy's flexible size: the longest
    /// text of an element, at least 1 (`np.array([1, 22], dtype="S0")` is `S2`).
    #[test]
    fn strings_of_size_0_take_the_longest_elements_size() {
        let datatype = |yaml: &str| {
            let tree = crate::tree::Tree::parse(&format!("a: {yaml}\n"), &crate::Limits::default()).unwrap();
            ArrayMeta::parse(tree.get("a").unwrap()).map(|m| m.datatype).unwrap()
        };
        assert_eq!(datatype("{data: [a, bcd], datatype: [ascii, 0]}"), Datatype::Ascii(3));
        assert_eq!(datatype("{data: [1, 22], datatype: [ucs4, 0]}"), Datatype::Ucs4(2));
        assert_eq!(datatype("{data: [1.5, true], datatype: [ascii, 0]}"), Datatype::Ascii(4));
        assert_eq!(datatype("{data: [], datatype: [ascii, 0]}"), Datatype::Ascii(1));
    }

    /// Inline data that numpy would not make a numeric or text array of (a list where a
    /// scalar belongs, a mapping, a date) is an error, never a placeholder text; binary
    /// values are bytes (`S`), as numpy makes them.
    #[test]
    fn inline_data_is_scalars_in_a_rectangle_or_an_error() {
        let read = |yaml: &str| {
            let tree = crate::tree::Tree::parse(&format!("a: {yaml}\n"), &crate::Limits::default()).unwrap();
            let node = tree.get("a").unwrap();
            let meta = ArrayMeta::parse(node).map_err(|e| e.to_string())?;
            let (bytes, _) = inline::encode(node.get("data").unwrap(), &meta).map_err(|e| e.to_string())?;
            Ok::<_, String>((meta.datatype, bytes))
        };
        for (data, why) in [
            ("[1, [2]]", "not rectangular"),
            ("[[1, 2], [3, [4]]]", "not rectangular"),
            ("[1, x, [2]]", "not rectangular"),
            ("[1, {k: v}, null, true, 2.5]", "a mapping"),
            ("[{a: 1}, {a: 2}]", "a mapping"),
            ("[2001-12-14, 2002-01-01]", "the timestamp 2001-12-14"),
            ("[1, 2001-12-14]", "the timestamp"),
            ("[x, !!binary /w==]", "not ASCII"),
        ] {
            let e = read(&format!("{{data: {data}}}")).unwrap_err();
            assert!(e.contains(why), "{data}: {e}");
        }
        // With a datatype given, the same leaves are refused (a time, a mapping, a
        // list), but for a date as text.
        for data in ["[a, [b]]", "[a, {k: v}]", "[a, 2001-12-14 10:00:00]"] {
            for datatype in ["[ucs4, 4]", "[ascii, 4]", "[ucs4, 0]", "float64", "int8", "bool8"] {
                assert!(read(&format!("{{data: {data}, datatype: {datatype}}}")).is_err(), "{data} {datatype}");
            }
        }
        let (datatype, bytes) = read("{data: [2001-12-14, x], datatype: [ascii, 10]}").unwrap();
        assert_eq!((datatype, &bytes[..10]), (Datatype::Ascii(10), &b"2001-12-14"[..]));
        // Text and (ASCII) binary together: text.
        let (datatype, bytes) = read("{data: [!!binary aGk=, x]}").unwrap();
        assert_eq!((datatype, bytes.len()), (Datatype::Ucs4(2), 16));
        assert_eq!(
            read("{data: [!!binary aGVsbG8=, !!binary aGk=]}").unwrap(),
            (Datatype::Ascii(5), b"hellohi\0\0\0".to_vec())
        );
        let (datatype, bytes) = read("{data: [1, !!binary aGk=]}").unwrap();
        assert_eq!(datatype, Datatype::Ascii(21));
        assert_eq!((&bytes[..2], &bytes[21..23]), (&b"1\0"[..], &b"hi"[..]));
        assert_eq!(read("{data: [!!binary aGk=, !!binary aA==], datatype: [ascii, 0]}").unwrap().0, Datatype::Ascii(2));
        assert_eq!(read("{data: [1, x, 2.5]}").unwrap().0, Datatype::Ucs4(32));
    }

    /// Inline data is read in C order from its start whatever `offset` and `strides`
    /// say, as the reference reads it (it makes its array of the lists alone).
    #[test]
    fn inline_data_ignores_offset_and_strides() {
        for extra in ["strides: [1, 2]", "offset: 1", "strides: [2, 1], offset: 3", "strides: [-1, 7]"] {
            let text = format!("a: {{data: [[1, 2], [3, 4]], datatype: int8, shape: [2, 2], {extra}}}\n");
            let tree = crate::tree::Tree::parse(&text, &crate::Limits::default()).unwrap();
            let node = tree.get("a").unwrap();
            let meta = ArrayMeta::parse(node).unwrap();
            assert_eq!((meta.offset, meta.strides.as_deref()), (0, None), "{extra}");
            let (bytes, _) = inline::encode(node.get("data").unwrap(), &meta).unwrap();
            let a =
                NdArray::new(&meta, std::borrow::Cow::Owned(bytes), Storage::Inline, None, &crate::Limits::default())
                    .unwrap();
            assert_eq!(a.to_array_f64().unwrap().iter().copied().collect::<Vec<_>>(), [1.0, 2.0, 3.0, 4.0], "{extra}");
        }
    }

    #[test]
    fn byteorder_goes_with_source() {
        let parse = |yaml: &str| {
            let tree = crate::tree::Tree::parse(&format!("a: {yaml}\n"), &crate::Limits::default()).unwrap();
            ArrayMeta::parse(tree.get("a").unwrap()).map(|m| m.byteorder)
        };
        let missing = parse("{source: 0, datatype: int16, shape: [2]}").unwrap_err();
        assert!(missing.to_string().contains("needs a byteorder"), "{missing}");
        assert_eq!(parse("{source: 0, datatype: int16, byteorder: big, shape: [2]}").unwrap(), ByteOrder::Big);
        // Inline data, and a block named by `data`, are in the machine's order.
        assert_eq!(parse("{data: [1, 2], datatype: int16}").unwrap(), ByteOrder::NATIVE);
        assert_eq!(parse("{data: 0, datatype: int16, shape: [2]}").unwrap(), ByteOrder::NATIVE);
    }

    #[test]
    fn record_fields_take_numpy_names() {
        let parse = |yaml: &str| {
            let tree = crate::tree::Tree::parse(&format!("a: {yaml}\n"), &crate::Limits::default()).unwrap();
            Datatype::parse(tree.get("a").unwrap(), ByteOrder::Little)
        };
        let Datatype::Record(fields) =
            parse("[uint8, {name: x, datatype: int16}, {name: '', datatype: int8}]").unwrap()
        else {
            panic!("not a record")
        };
        let names: Vec<String> = fields.iter().enumerate().map(|(i, f)| f.numpy_name(i).into_owned()).collect();
        assert_eq!(names, ["f0", "x", "f2"]);
        // numpy refuses a name twice, `f1` of an unnamed second field included.
        let twice = parse("[{name: f1, datatype: uint8}, int16]").unwrap_err();
        assert!(twice.to_string().contains("'f1' occurs more than once"), "{twice}");
        assert!(parse("[{name: a, datatype: uint8}, {name: a, datatype: uint8}]").is_err());
    }

    #[test]
    fn any_real_type_reads_as_f64() {
        // int16, big-endian, 2 x 3 over 16 bytes from byte 2, read transposed (strides
        // [2, 6]): elements [[a, d], [b, e], [c, f]].
        let words: [i16; 7] = [99, -3, 7, 300, -32768, 32767, 1];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
        let int16 = Datatype::Scalar(ScalarType::Int16);
        let a = NdArray::from_layout(&int16, ByteOrder::Big, &[3, 2], &[2, 6], 2, &bytes);
        let got = a.to_array_f64().unwrap();
        assert_eq!(got.shape(), &[3, 2]);
        assert_eq!(got.iter().copied().collect::<Vec<_>>(), [-3.0, -32768.0, 7.0, 32767.0, 300.0, 1.0]);
        // uint64 beyond 2^53 rounds as numpy's astype does; booleans are 0 and 1.
        let big = ((1u64 << 53) + 1).to_le_bytes();
        let u = NdArray::from_layout(&Datatype::Scalar(ScalarType::UInt64), ByteOrder::Little, &[1], &[8], 0, &big);
        assert_eq!(u.to_array_f64().unwrap()[[0]], 9007199254740992.0);
        let b = NdArray::from_layout(&Datatype::Scalar(ScalarType::Bool8), ByteOrder::Little, &[2], &[1], 0, &[1, 0]);
        assert_eq!(b.to_array_f64().unwrap().into_raw_vec_and_offset().0, [1.0, 0.0]);
        let c =
            NdArray::from_layout(&Datatype::Scalar(ScalarType::Complex64), ByteOrder::Little, &[1], &[8], 0, &[0; 8]);
        assert!(matches!(c.to_array_f64(), Err(ArrayError::TypeMismatch { .. })));
    }

    #[test]
    fn complex_texts_as_python() {
        let nan = |v: Option<(f64, f64)>| v.map(|(a, b)| (a.is_nan(), b.is_nan()));
        assert_eq!(parse_complex("1+2j"), Some((1.0, 2.0)));
        assert_eq!(parse_complex("(1-2j)"), Some((1.0, -2.0)));
        assert_eq!(parse_complex("2j"), Some((0.0, 2.0)));
        assert_eq!(parse_complex("0j"), Some((0.0, 0.0)));
        assert_eq!(parse_complex("-1.7976931348623157e+308j"), Some((0.0, -f64::MAX)));
        assert_eq!(parse_complex("(1e-05+2.5e+10j)"), Some((1e-5, 2.5e10)));
        assert_eq!(parse_complex("(nan+infj)").map(|(_, b)| b), Some(f64::INFINITY));
        assert_eq!(nan(parse_complex("(nan+nanj)")), Some((true, true)));
        assert_eq!(parse_complex("(inf-1.5j)"), Some((f64::INFINITY, -1.5)));
        assert_eq!(parse_complex("1+2i"), Some((1.0, 2.0)));
        assert_eq!(parse_complex("3"), Some((3.0, 0.0)));
        assert_eq!(parse_complex("inf"), Some((f64::INFINITY, 0.0)));
        assert_eq!(parse_complex("(-0+0j)").map(|(a, _)| a.is_sign_negative()), Some(true));
        assert_eq!(parse_complex("abc"), None);
    }

    #[test]
    fn negative_strides_view_and_copy() {
        // int16 (3, 4) C order, viewed as base[:, ::-1]: offset 6, strides [8, -2].
        let data: Vec<u8> = (0..12i16).flat_map(i16::to_le_bytes).collect();
        let meta = ArrayMeta {
            source: Source::Block(0),
            datatype: Datatype::Scalar(ScalarType::Int16),
            byteorder: ByteOrder::Little,
            shape: vec![Dim::Fixed(3), Dim::Fixed(4)],
            offset: 6,
            strides: Some(vec![8, -2]),
        };
        let a = NdArray::new(&meta, Cow::Borrowed(&data), Storage::Block(0), None, &Limits::default()).unwrap();
        let owned = a.to_array::<i16>().unwrap();
        assert_eq!(owned.iter().take(4).copied().collect::<Vec<_>>(), vec![3, 2, 1, 0]);
        assert_eq!(owned.iter().skip(8).copied().collect::<Vec<_>>(), vec![11, 10, 9, 8]);
        let cow = a.to_cow::<i16>().unwrap();
        assert_eq!(cow, owned);
        let bad = ArrayMeta { offset: 8, ..meta };
        assert!(matches!(
            NdArray::new(&bad, Cow::Borrowed(&data), Storage::Block(0), None, &Limits::default()),
            Err(ArrayError::OutOfBounds { .. })
        ));
    }

    /// The bytes viewed in place are the bytes `encode` makes, for every element type.
    #[test]
    fn as_bytes_is_encode() {
        fn check<T: NativeType>(values: &[T]) {
            let mut encoded = Vec::new();
            for &v in values {
                v.encode(&mut encoded);
            }
            assert_eq!(as_bytes(values), &encoded[..], "{}", T::SCALAR.name());
        }
        check(&[1i8, -2]);
        check(&[1u16, 0xfeff]);
        check(&[-1i32, 7]);
        check(&[u64::MAX, 3]);
        check(&[1.5f32, -0.0]);
        check(&[f64::NAN, 2.0]);
        check(&[half::f16::from_f32(0.5)]);
        check(&[true, false, true]);
        check(&[num_complex::Complex::new(1f32, -2.0)]);
        check(&[num_complex::Complex::new(1f64, f64::INFINITY)]);
        check::<u8>(&[]);
    }
}
