//! What a document's arrays are made of: `ndarray` arrays ([`IntoArrayBytes`]), raw
//! bytes with a layout ([`ArrayBytes`]), and arrays inside serde values ([`Ndarray`]).

use std::borrow::Cow;
use std::sync::Arc;

use ndarray::{Array, ArrayBase, ArrayView, ArrayViewMut, CowArray, Data, Dimension};
use serde::ser::SerializeStruct;

use crate::block::Compression;
use crate::ndarray::{ByteOrder, Datatype, NativeType, ScalarType, as_bytes};

/// An array's bytes and their layout, for [`Document::set_array_bytes`](super::Document::set_array_bytes).
#[derive(Debug, Clone)]
pub struct ArrayBytes<'f> {
    /// The element type.
    pub datatype: Datatype,
    /// The byte order of `data`.
    pub byteorder: ByteOrder,
    /// The shape.
    pub shape: Vec<usize>,
    /// Byte strides, from the first byte of `data`.
    pub strides: Vec<isize>,
    /// The bytes.
    pub data: Cow<'f, [u8]>,
}

/// The bytes of a document's base: borrowed (a file's block, a caller's slice), owned,
/// or the elements of an owned array, moved in and read as bytes in place.
#[derive(Clone)]
pub(super) enum BaseData<'f> {
    Bytes(Cow<'f, [u8]>),
    Elements(Arc<dyn ElementBytes>),
}

impl std::ops::Deref for BaseData<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            BaseData::Bytes(b) => b,
            BaseData::Elements(e) => e.bytes(),
        }
    }
}

impl std::fmt::Debug for BaseData<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BaseData::Bytes(Cow::Borrowed(b)) => write!(f, "Borrowed({} bytes)", b.len()),
            BaseData::Bytes(Cow::Owned(b)) => write!(f, "Owned({} bytes)", b.len()),
            BaseData::Elements(e) => write!(f, "Elements({} bytes)", e.bytes().len()),
        }
    }
}

/// A buffer of elements read as their bytes.
pub(super) trait ElementBytes: Send + Sync {
    fn bytes(&self) -> &[u8];
}

impl<T: NativeType> ElementBytes for Vec<T> {
    fn bytes(&self) -> &[u8] {
        as_bytes(self)
    }
}

mod sealed {
    /// Keeps [`super::IntoArrayBytes`] to the arrays of the `ndarray` crate.
    pub trait Sealed {}

    /// An array's elements (the machine's byte order, C order) and shape.
    pub struct ArrayParts {
        pub(in crate::write) scalar: crate::ndarray::ScalarType,
        pub(in crate::write) shape: Vec<usize>,
        pub(in crate::write) data: super::BaseData<'static>,
    }
}
pub(super) use sealed::ArrayParts;

/// The arrays [`Document::set_array`](super::Document::set_array) takes: `ndarray`'s
/// owned arrays ([`Array`], of any dimension), views ([`ArrayView`],
/// [`ArrayViewMut`]), references to any array (`&Array`, `&ArcArray`, `&ArrayView`...),
/// and [`CowArray`] (what [`ArrayRef::read`](crate::ArrayRef::read) returns), of the
/// [`NativeType`] element types. Sealed.
///
/// An owned array in C order (`is_standard_layout`, not a slice of a larger buffer)
/// is moved in: its buffer becomes the block's data with no copy. Anything else is
/// copied, in C order: a view is written as what it shows, whatever its strides.
pub trait IntoArrayBytes: sealed::Sealed {
    /// The array's elements and shape.
    #[doc(hidden)]
    fn into_parts(self) -> ArrayParts;
}

/// The elements of `a` in C order, copied.
fn copied<S: Data<Elem = T>, T: NativeType, D: Dimension>(a: &ArrayBase<S, D>) -> ArrayParts {
    let bytes = match a.as_slice() {
        Some(elements) => as_bytes(elements).to_vec(),
        None => {
            let mut bytes = Vec::with_capacity(a.len() * T::SCALAR.size());
            for &x in a {
                x.encode(&mut bytes);
            }
            bytes
        }
    };
    ArrayParts { scalar: T::SCALAR, shape: a.shape().to_vec(), data: BaseData::Bytes(Cow::Owned(bytes)) }
}

impl<T: NativeType, D: Dimension> sealed::Sealed for Array<T, D> {}
impl<T: NativeType, D: Dimension> IntoArrayBytes for Array<T, D> {
    fn into_parts(self) -> ArrayParts {
        if !self.is_standard_layout() {
            return copied(&self);
        }
        let shape = self.shape().to_vec();
        let n = self.len();
        let (elements, offset) = self.into_raw_vec_and_offset();
        let offset = offset.unwrap_or(0);
        let data = if offset == 0 && elements.len() == n {
            BaseData::Elements(Arc::new(elements))
        } else {
            // A slice of a larger buffer: its own elements, in order from `offset`.
            BaseData::Bytes(Cow::Owned(as_bytes(&elements[offset..offset + n]).to_vec()))
        };
        ArrayParts { scalar: T::SCALAR, shape, data }
    }
}

impl<T: NativeType, D: Dimension> sealed::Sealed for ArrayView<'_, T, D> {}
impl<T: NativeType, D: Dimension> IntoArrayBytes for ArrayView<'_, T, D> {
    fn into_parts(self) -> ArrayParts {
        copied(&self)
    }
}

impl<T: NativeType, D: Dimension> sealed::Sealed for ArrayViewMut<'_, T, D> {}
impl<T: NativeType, D: Dimension> IntoArrayBytes for ArrayViewMut<'_, T, D> {
    fn into_parts(self) -> ArrayParts {
        copied(&self)
    }
}

impl<T: NativeType, D: Dimension> sealed::Sealed for CowArray<'_, T, D> {}
impl<T: NativeType, D: Dimension> IntoArrayBytes for CowArray<'_, T, D> {
    fn into_parts(self) -> ArrayParts {
        if self.is_view() { copied(&self) } else { self.into_owned().into_parts() }
    }
}

impl<S: Data<Elem = T>, T: NativeType, D: Dimension> sealed::Sealed for &ArrayBase<S, D> {}
impl<S: Data<Elem = T>, T: NativeType, D: Dimension> IntoArrayBytes for &ArrayBase<S, D> {
    fn into_parts(self) -> ArrayParts {
        copied(self)
    }
}

/// An `ndarray` array as a field of a serde value: [`Document::set_serialize`] and
/// [`Document::from_serialize`] make it a `core/ndarray` node with a block of its own
/// (compressed with [`Ndarray::compression`], unless [`WriteOptions::compression`]
/// overrides it), as [`Document::set_array`] would, not nested lists of numbers.
///
/// serde has no notion of an array: the wrapper serializes as a newtype struct with a
/// name private to rasdf, around a struct of the array's `datatype`, `byteorder`,
/// `shape`, `compression` and `data` (its bytes, C order); the document's serializer
/// recognizes the name and takes the bytes for a block. Other serializers (JSON, say)
/// see that struct. The array is any of `ndarray`'s (owned, a view, shared), of the
/// [`NativeType`] element types; views are written as what they show. Read it back
/// with [`AsdfFile::array`](crate::AsdfFile::array) at the field's path and
/// [`ArrayRef::read`](crate::ArrayRef::read).
///
/// ```
/// use rasdf::block::Compression;
/// use rasdf::write::{Document, Ndarray, WriteOptions};
///
/// #[derive(serde::Serialize)]
/// struct Exposure {
///     name: String,
///     seconds: f64,
///     image: Ndarray<ndarray::Array2<f32>>,
/// }
///
/// let image = ndarray::Array2::from_shape_fn((4, 3), |(y, x)| (10 * y + x) as f32);
/// let exposure = Exposure {
///     name: "dark".into(),
///     seconds: 30.0,
///     image: Ndarray::compressed(image, Compression::Zlib),
/// };
/// let doc = Document::from_serialize(&exposure)?;
/// let path = std::env::temp_dir().join(format!("rasdf-ndarray-field-{}.asdf", std::process::id()));
/// doc.write_to_path(&path, &WriteOptions::default())?;
///
/// let file = rasdf::AsdfFile::open(&path)?;
/// assert_eq!(file.get("name").and_then(|n| n.as_str()), Some("dark"));
/// assert_eq!(file.array("image")?.read::<f32>()?[[3, 2]], 32.0);
/// assert_eq!(file.blocks()[0].compression, Compression::Zlib);
/// # drop(file);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), rasdf::Error>(())
/// ```
///
/// [`Document::set_serialize`]: super::Document::set_serialize
/// [`Document::from_serialize`]: super::Document::from_serialize
/// [`Document::set_array`]: super::Document::set_array
/// [`WriteOptions::compression`]: super::WriteOptions::compression
#[derive(Debug, Clone, PartialEq)]
pub struct Ndarray<A> {
    /// The array.
    pub array: A,
    /// The compression of its block.
    pub compression: Compression,
}

impl<A> Ndarray<A> {
    /// `array`, written uncompressed.
    pub fn new(array: A) -> Self {
        Ndarray { array, compression: Compression::None }
    }

    /// `array`, compressed with `compression`.
    pub fn compressed(array: A, compression: Compression) -> Self {
        Ndarray { array, compression }
    }
}

impl<A> From<A> for Ndarray<A> {
    fn from(array: A) -> Self {
        Ndarray::new(array)
    }
}

impl<A> std::ops::Deref for Ndarray<A> {
    type Target = A;
    fn deref(&self) -> &A {
        &self.array
    }
}

impl<A> std::ops::DerefMut for Ndarray<A> {
    fn deref_mut(&mut self) -> &mut A {
        &mut self.array
    }
}

/// The bytes of a serialized array (`serialize_bytes`).
struct Bytes<'a>(&'a [u8]);

impl serde::Serialize for Bytes<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

/// What an [`Ndarray`] serializes as, inside the newtype struct the tree's serializer
/// recognizes.
struct Payload<'a> {
    datatype: ScalarType,
    shape: &'a [usize],
    compression: Compression,
    data: &'a [u8],
}

impl serde::Serialize for Payload<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_struct("Ndarray", 5)?;
        m.serialize_field("datatype", self.datatype.name())?;
        m.serialize_field("byteorder", ByteOrder::NATIVE.name())?;
        m.serialize_field("shape", self.shape)?;
        m.serialize_field("compression", compression_name(self.compression))?;
        m.serialize_field("data", &Bytes(self.data))?;
        m.end()
    }
}

fn compression_name(c: Compression) -> &'static str {
    match c {
        Compression::Zlib => "zlib",
        Compression::Bzp2 => "bzp2",
        Compression::Lz4 => "lz4",
        Compression::Zstd => "zstd",
        Compression::Blosc => "blsc",
        _ => "none",
    }
}

impl<S: Data<Elem = T>, T: NativeType, D: Dimension> serde::Serialize for Ndarray<ArrayBase<S, D>> {
    fn serialize<Ser: serde::Serializer>(&self, s: Ser) -> Result<Ser::Ok, Ser::Error> {
        let a = &self.array;
        let copy;
        let data = match a.as_slice() {
            Some(elements) => as_bytes(elements),
            None => {
                copy = copied(a);
                &*copy.data
            }
        };
        let payload = Payload { datatype: T::SCALAR, shape: a.shape(), compression: self.compression, data };
        s.serialize_newtype_struct(crate::ndarray::node::SERDE_NDARRAY, &payload)
    }
}

/// An array serialized by [`Ndarray`] that the tree's serializer marked: its
/// declarations, read from the payload's node (its bytes are taken apart).
pub(super) struct SerializedArray {
    pub(super) datatype: ScalarType,
    pub(super) shape: Vec<usize>,
    pub(super) compression: Compression,
}

impl SerializedArray {
    /// Reads the payload mapping at `node` (see [`Payload`]).
    pub(super) fn parse(node: crate::tree::NodeRef<'_>) -> Result<Self, String> {
        let text = |k: &str| node.key(k).and_then(|n| n.as_str()).ok_or_else(|| format!("an array without {k}"));
        let datatype = text("datatype")?;
        let datatype = ScalarType::from_name(datatype).ok_or_else(|| format!("unknown datatype {datatype}"))?;
        if text("byteorder")? != ByteOrder::NATIVE.name() {
            return Err("an array serialized on a machine of another byte order".into());
        }
        let compression = text("compression")?;
        let compression =
            Compression::from_name(compression).ok_or_else(|| format!("unknown compression {compression}"))?;
        let shape = node.key("shape").ok_or("an array without shape")?;
        let shape = shape
            .items()
            .ok_or("a shape that is not a list")?
            .map(|d| d.as_i64().and_then(|d| usize::try_from(d).ok()).ok_or("a shape of non-negative integers"))
            .collect::<Result<Vec<usize>, _>>()?;
        Ok(SerializedArray { datatype, shape, compression })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An owned C-order array hands over its buffer: the base's bytes are its elements'
    /// own memory. Other arrays are copied, in C order.
    #[test]
    fn owned_arrays_move_and_others_copy_in_c_order() {
        let a = ndarray::Array2::from_shape_fn((3, 4), |(i, j)| u32::try_from(10 * i + j).unwrap());
        let at = a.as_ptr().cast::<u8>();
        let parts = a.into_parts();
        assert_eq!(parts.data.as_ptr(), at, "moved, not copied");
        assert!(matches!(parts.data, BaseData::Elements(_)));
        assert_eq!((parts.scalar, &parts.shape[..]), (ScalarType::UInt32, &[3, 4][..]));
        assert_eq!(&parts.data[4..8], &1u32.to_ne_bytes());

        // Fortran order: copied, in C order.
        let t = ndarray::Array2::from_shape_fn((3, 4), |(i, j)| u32::try_from(10 * i + j).unwrap()).reversed_axes();
        let parts = t.into_parts();
        assert!(matches!(parts.data, BaseData::Bytes(_)));
        assert_eq!(parts.shape, [4, 3]);
        assert_eq!(&parts.data[4..8], &10u32.to_ne_bytes());

        // A slice of a larger buffer: its own elements only.
        let mut s = ndarray::Array1::from_iter(0u16..10);
        s.slice_collapse(ndarray::s![3..6]);
        let parts = s.into_parts();
        assert_eq!(&*parts.data, crate::ndarray::as_bytes(&[3u16, 4, 5]));

        // A view with steps.
        let a = ndarray::Array1::from_iter(0i8..10);
        let parts = a.slice(ndarray::s![..;-3]).into_parts();
        assert_eq!(&*parts.data, &[9u8, 6, 3, 0]);
        // A 0-d array.
        let parts = ndarray::arr0(2.5f64).into_parts();
        assert!(parts.shape.is_empty());
        assert_eq!(&*parts.data, &2.5f64.to_ne_bytes());
    }
}
