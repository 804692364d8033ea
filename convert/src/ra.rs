//! RawArray (`.ra`): a 48-byte little-endian header (magic `rawarray`, flags, element
//! class, element size, data size, number of dimensions), the dimensions, then the
//! elements in column-major order (the first dimension varies fastest).
//!
//! What is read, as the format's implementations write it:
//! - flag 1, big-endian data; flag 2 means an LZ4 block in the C library (`size` is
//!   then the compressed size) and LEB128 integers in the Julia package (`size` stays
//!   the raw size, the varints run to the end of the file, signed ones zigzagged);
//!   rasdf tells them apart by `size`. Flag 4 (Julia's bit arrays, whose writer stores
//!   the chunk count in place of the number of dimensions) is refused.
//! - classes 1 int, 2 uint, 3 float (2, 4 or 8 bytes), 4 complex (8 or 16), 5 with one
//!   byte a bool (Julia; with two, Rust's bfloat16, refused: ASDF has no such type), 0
//!   user-defined, read as bytes: a `uint8` array with one more, last, axis of `elbyte`.
//! - Bytes after the data (the format's "volatile metadata") are ignored.
//!
//! An array keeps its dimensions as its shape, with column-major strides, so element
//! `[i, j]` is the same in ASDF (and numpy) as in the `.ra` readers of Python (`ra.py`
//! reads `dims` as the shape), Julia and MATLAB. The bytes are not moved.

use std::borrow::Cow;

use super::ConvertError;
use rasdf::Limits;
use rasdf::ndarray::{ByteOrder, Datatype, NdArray, ScalarType};

/// `rawarray` as a little-endian u64.
pub const MAGIC: u64 = 0x7961_7272_6177_6172;
/// Flag: the data is big-endian.
pub const FLAG_BIG_ENDIAN: u64 = 1;
/// Flag: the data is compressed (C: an LZ4 block; Julia: LEB128 integers).
pub const FLAG_COMPRESSED: u64 = 2;
/// Flag: a Julia bit array.
pub const FLAG_BITS: u64 = 4;

const FORMAT: &str = "RawArray";

fn malformed(what: impl Into<String>) -> ConvertError {
    ConvertError::Malformed { format: FORMAT, what: what.into() }
}

/// The header of a `.ra` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaHeader {
    /// Flags ([`FLAG_BIG_ENDIAN`], [`FLAG_COMPRESSED`], [`FLAG_BITS`]).
    pub flags: u64,
    /// Element class: 0 user-defined, 1 int, 2 uint, 3 float, 4 complex, 5 bool.
    pub eltype: u64,
    /// Bytes per element.
    pub elbyte: u64,
    /// Bytes of data as stored (compressed, when compressed by the C library).
    pub size: u64,
    /// The dimensions, first varying fastest.
    pub dims: Vec<u64>,
}

impl RaHeader {
    /// Reads the header at the start of `file`.
    ///
    /// # Errors
    /// A wrong magic number, or a header longer than the file.
    pub fn parse(file: &[u8]) -> Result<RaHeader, ConvertError> {
        let word = |i: usize| -> Result<u64, ConvertError> {
            file.get(8 * i..8 * i + 8)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_le_bytes)
                .ok_or_else(|| malformed(format!("header: the file ends at byte {} inside it", file.len())))
        };
        if file.len() < 8 || word(0)? != MAGIC {
            return Err(ConvertError::NotFormat { format: FORMAT, why: "no `rawarray` magic at byte 0".into() });
        }
        let ndims = word(5)?;
        // Each dimension takes 8 bytes of the file: no more can be read than it has.
        if ndims > (file.len() as u64).saturating_sub(48) / 8 {
            return Err(malformed(format!("header: {ndims} dimensions do not fit in a file of {} bytes", file.len())));
        }
        // Bounded by the file's length just above.
        let ndims = usize::try_from(ndims).map_err(|_| malformed("header: too many dimensions"))?;
        let dims = (0..ndims).map(|i| word(6 + i)).collect::<Result<_, _>>()?;
        Ok(RaHeader { flags: word(1)?, eltype: word(2)?, elbyte: word(3)?, size: word(4)?, dims })
    }

    /// Where the data starts.
    pub fn data_offset(&self) -> usize {
        48 + 8 * self.dims.len()
    }

    /// The header's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let words = [MAGIC, self.flags, self.eltype, self.elbyte, self.size, self.dims.len() as u64];
        words.iter().chain(&self.dims).flat_map(|w| w.to_le_bytes()).collect()
    }
}

/// A `.ra` file read: its header, and its array over the file's bytes (decoded into
/// memory only when compressed).
#[derive(Debug, Clone)]
pub struct RaFile<'a> {
    /// The header as stored.
    pub header: RaHeader,
    /// The element type.
    pub datatype: Datatype,
    /// The byte order of the data.
    pub byteorder: ByteOrder,
    /// The array's shape: the dimensions (with `elbyte` added last for user-defined
    /// elements).
    pub shape: Vec<usize>,
    /// Byte strides: column-major over the dimensions.
    pub strides: Vec<isize>,
    data: Cow<'a, [u8]>,
}

impl<'a> RaFile<'a> {
    /// Reads a `.ra` file from its bytes.
    ///
    /// # Errors
    /// [`ConvertError::NotFormat`] without the magic; [`ConvertError::Malformed`] for a
    /// header that does not match the data (with the byte offset); [`ConvertError::Unsupported`]
    /// for an element type or flag ASDF cannot hold; a limit of `limits` exceeded.
    pub fn parse(file: &'a [u8], limits: &Limits) -> Result<RaFile<'a>, ConvertError> {
        let header = RaHeader::parse(file)?;
        if header.flags & FLAG_BITS != 0 {
            return Err(ConvertError::Unsupported("RawArray bit arrays (flag 4) are not read".into()));
        }
        if header.flags & !(FLAG_BIG_ENDIAN | FLAG_COMPRESSED) != 0 {
            return Err(ConvertError::Unsupported(format!("RawArray flags {:#x}: unknown bits", header.flags)));
        }
        let byteorder = if header.flags & FLAG_BIG_ENDIAN != 0 { ByteOrder::Big } else { ByteOrder::Little };
        let datatype = datatype_of(header.eltype, header.elbyte)?;
        let itemsize = datatype.size();
        let overflow = || malformed("dimensions: their product overflows");
        let count = header.dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d)).ok_or_else(overflow)?;
        rasdf::Limits::check("max_array_elements", count, limits.max_array_elements)
            .map_err(|e| ConvertError::Unsupported(e.to_string()))?;
        let raw_len = count.checked_mul(header.elbyte).ok_or_else(overflow)?;
        let raw_len = usize::try_from(raw_len).map_err(|_| overflow())?;
        let elbyte = usize::try_from(header.elbyte).map_err(|_| overflow())?;
        let dims: Vec<usize> =
            header.dims.iter().map(|&d| usize::try_from(d).map_err(|_| overflow())).collect::<Result<_, _>>()?;
        // The product fits: checked in u64 above, and each factor fits a usize.
        let count = usize::try_from(count).map_err(|_| overflow())?;
        let start = header.data_offset();
        let rest = &file[start..];
        let compressed = header.flags & FLAG_COMPRESSED != 0;
        let data: Cow<'a, [u8]> = if !compressed || header.size == raw_len as u64 {
            if compressed && matches!(header.eltype, 1 | 2) {
                // Julia's LEB128 (size stays the raw size); the C library's LZ4 block of
                // exactly the raw size, seldom as it happens, is tried when that fails.
                match leb128_decode(rest, count, elbyte, header.eltype == 1) {
                    Ok(v) => Cow::Owned(v),
                    Err(e) => Cow::Owned(
                        lz4_data(rest, header.size, raw_len, start)
                            .map_err(|_| malformed(format!("LEB128 data at byte {start}: {e}")))?,
                    ),
                }
            } else {
                // Julia writes non-integers raw even when asked to compress.
                if (rest.len() as u64) < header.size || header.size != raw_len as u64 {
                    return Err(malformed(format!(
                        "data at byte {start}: size says {} bytes, the dimensions need {raw_len}, the file has {}",
                        header.size,
                        rest.len()
                    )));
                }
                Cow::Borrowed(&rest[..raw_len])
            }
        } else {
            Cow::Owned(lz4_data(rest, header.size, raw_len, start)?)
        };
        let (shape, strides) = match datatype {
            Datatype::Scalar(ScalarType::UInt8) if header.eltype == 0 => {
                let mut shape = dims;
                shape.push(elbyte);
                let mut strides = f_strides(&shape[..shape.len() - 1], elbyte);
                strides.push(1);
                (shape, strides)
            }
            _ => {
                let strides = f_strides(&dims, itemsize);
                (dims, strides)
            }
        };
        Ok(RaFile { header, datatype, byteorder, shape, strides, data })
    }

    /// The array (its data borrowed from the file, unless it was compressed).
    pub fn ndarray(&self) -> NdArray<'_> {
        NdArray::from_layout(&self.datatype, self.byteorder, &self.shape, &self.strides, 0, &self.data)
    }

    /// The data bytes, decoded.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The data bytes, decoded, borrowed from the file when they were not compressed.
    pub fn into_data(self) -> Cow<'a, [u8]> {
        self.data
    }

    /// The array as [`rasdf::write::Document::set_array_bytes`] takes it.
    pub fn into_array_bytes(self) -> rasdf::write::ArrayBytes<'a> {
        let RaFile { datatype, byteorder, shape, strides, data, .. } = self;
        rasdf::write::ArrayBytes { datatype, byteorder, shape, strides, data }
    }
}

/// The C library's compressed data: one raw LZ4 block of `size` bytes at the start of
/// `rest` (byte `start` of the file), decoding to `raw_len` bytes.
fn lz4_data(rest: &[u8], size: u64, raw_len: usize, start: usize) -> Result<Vec<u8>, ConvertError> {
    let size = usize::try_from(size).ok().filter(|&s| s <= rest.len()).ok_or_else(|| {
        malformed(format!("LZ4 data at byte {start}: size says {size} bytes, the file has {}", rest.len()))
    })?;
    // An LZ4 block expands at most 255 times (plus its last literals): a larger claim is
    // refused before anything is allocated.
    if raw_len > size.saturating_mul(255).saturating_add(16) {
        return Err(malformed(format!(
            "LZ4 data at byte {start}: {size} bytes cannot decode to the {raw_len} the dimensions need"
        )));
    }
    let mut out = vec![0u8; raw_len];
    let n = lz4_flex::block::decompress_into(&rest[..size], &mut out)
        .map_err(|e| malformed(format!("LZ4 data at byte {start}: {e}")))?;
    if n != raw_len {
        return Err(malformed(format!("LZ4 data at byte {start}: decodes to {n} bytes, not {raw_len}")));
    }
    Ok(out)
}

/// Column-major byte strides.
pub fn f_strides(shape: &[usize], itemsize: usize) -> Vec<isize> {
    let mut acc = itemsize as isize;
    shape
        .iter()
        .map(|&d| {
            let s = acc;
            acc = acc.saturating_mul(d.max(1) as isize);
            s
        })
        .collect()
}

fn datatype_of(eltype: u64, elbyte: u64) -> Result<Datatype, ConvertError> {
    use ScalarType::*;
    let t = match (eltype, elbyte) {
        (1, 1) => Int8,
        (1, 2) => Int16,
        (1, 4) => Int32,
        (1, 8) => Int64,
        (2, 1) => UInt8,
        (2, 2) => UInt16,
        (2, 4) => UInt32,
        (2, 8) => UInt64,
        (3, 2) => Float16,
        (3, 4) => Float32,
        (3, 8) => Float64,
        (4, 8) => Complex64,
        (4, 16) => Complex128,
        (5, 1) => Bool8,
        (0, 1..) => UInt8,
        (5, 2) => {
            return Err(ConvertError::Unsupported(
                "RawArray bfloat16 (class 5 of 2 bytes) has no ASDF datatype".into(),
            ));
        }
        _ => {
            return Err(ConvertError::Unsupported(format!(
                "RawArray element class {eltype} of {elbyte} bytes has no ASDF datatype"
            )));
        }
    };
    Ok(Datatype::Scalar(t))
}

/// `count` LEB128 varints of `size`-byte integers (zigzagged when `signed`), in
/// little-endian bytes.
fn leb128_decode(input: &[u8], count: usize, size: usize, signed: bool) -> Result<Vec<u8>, String> {
    // Each value takes at least one byte.
    if count > input.len() {
        return Err(format!("{count} values cannot fit in {} bytes", input.len()));
    }
    // size is 1, 2, 4 or 8.
    let bits = u32::try_from(8 * size).map_err(|_| format!("{size}-byte integers"))?;
    let mut out = Vec::with_capacity(count * size);
    let mut pos = 0;
    for i in 0..count {
        let mut v: u64 = 0;
        let mut shift = 0u32;
        loop {
            let Some(&b) = input.get(pos) else {
                return Err(format!("value {i} of {count} runs past the end of the file"));
            };
            pos += 1;
            let part = u64::try_from(u128::from(b & 0x7f) << shift)
                .ok()
                .filter(|p| shift < bits && (bits == 64 || p >> bits == 0));
            let Some(part) = part else {
                return Err(format!("value {i} does not fit in {bits} bits"));
            };
            v |= part;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        if signed {
            v = (v >> 1) ^ (v & 1).wrapping_neg();
        }
        out.extend_from_slice(&v.to_le_bytes()[..size]);
    }
    Ok(out)
}

/// The `.ra` class and element size of `datatype`: numbers as themselves, bools as
/// Julia's (class 5, one byte), anything else (strings, records) user-defined.
pub fn class_of(datatype: &Datatype) -> (u64, usize) {
    use ScalarType::*;
    let size = datatype.size();
    let class = match datatype {
        Datatype::Scalar(Int8 | Int16 | Int32 | Int64) => 1,
        Datatype::Scalar(UInt8 | UInt16 | UInt32 | UInt64) => 2,
        Datatype::Scalar(Float16 | Float32 | Float64) => 3,
        Datatype::Scalar(Complex64 | Complex128) => 4,
        Datatype::Scalar(Bool8) => 5,
        _ => 0,
    };
    (class, size)
}

/// The header of the `.ra` file of `array` (see [`encode`]).
///
/// # Errors
/// An element size of zero (a zero-length string type), which `.ra` cannot declare.
pub fn header_for(array: &NdArray<'_>) -> Result<RaHeader, ConvertError> {
    header_of(&array.datatype, array.byteorder, &array.shape)
}

/// [`header_for`] an array of `datatype` stored in `order`, of `shape`.
pub(crate) fn header_of(datatype: &Datatype, order: ByteOrder, shape: &[usize]) -> Result<RaHeader, ConvertError> {
    let (eltype, elbyte) = class_of(datatype);
    if elbyte == 0 {
        return Err(ConvertError::Unsupported("an element of 0 bytes cannot be written to RawArray".into()));
    }
    let scalar = matches!(datatype, Datatype::Scalar(_));
    let flags = if !scalar && order == ByteOrder::Big { FLAG_BIG_ENDIAN } else { 0 };
    let size = (shape.iter().product::<usize>() * elbyte) as u64;
    let dims = shape.iter().map(|&d| d as u64).collect();
    Ok(RaHeader { flags, eltype, elbyte: elbyte as u64, size, dims })
}

/// A `.ra` file of `array`: its shape as the dimensions, its elements in column-major
/// order. Numbers are written little-endian (swapped if stored big-endian); strings
/// and records keep their bytes, with the big-endian flag when the array is big-endian.
/// (`rasdf convert` writes the same bytes streamed, from [`header_for`].)
///
/// # Errors
/// As [`header_for`].
pub fn encode(array: &NdArray<'_>) -> Result<Vec<u8>, ConvertError> {
    let header = header_for(array)?;
    let mut out = header.to_bytes();
    out.reserve(usize::try_from(header.size).unwrap_or(0));
    // Writing to a Vec cannot fail.
    let _ = super::write_elements(array, true, &mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ra(flags: u64, eltype: u64, elbyte: u64, dims: &[u64], data: &[u8]) -> Vec<u8> {
        let mut h = RaHeader { flags, eltype, elbyte, size: data.len() as u64, dims: dims.to_vec() }.to_bytes();
        h.extend_from_slice(data);
        h
    }

    #[test]
    fn column_major_shape_and_values() {
        // 2 x 3 int16, column-major: [[1, 3, 5], [2, 4, 6]].
        let data: Vec<u8> = (1..=6i16).flat_map(|v| v.to_le_bytes()).collect();
        let bytes = ra(0, 1, 2, &[2, 3], &data);
        let f = RaFile::parse(&bytes, &Limits::default()).unwrap();
        assert_eq!(f.shape, vec![2, 3]);
        let a = f.ndarray();
        let v = a.to_array::<i16>().unwrap();
        assert_eq!(v.into_raw_vec_and_offset().0, vec![1, 3, 5, 2, 4, 6]);
        assert!(matches!(f.into_data(), Cow::Borrowed(_)));
        // And back, byte for byte.
        let again = RaFile::parse(&bytes, &Limits::default()).unwrap();
        assert_eq!(encode(&again.ndarray()).unwrap(), bytes);
    }

    #[test]
    fn big_endian_is_swapped_on_write() {
        let data: Vec<u8> = [1.5f32, -2.0].iter().flat_map(|v| v.to_be_bytes()).collect();
        let bytes = ra(FLAG_BIG_ENDIAN, 3, 4, &[2], &data);
        let f = RaFile::parse(&bytes, &Limits::default()).unwrap();
        assert_eq!(f.byteorder, ByteOrder::Big);
        assert_eq!(f.ndarray().to_array::<f32>().unwrap().into_raw_vec_and_offset().0, vec![1.5, -2.0]);
        let le: Vec<u8> = [1.5f32, -2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(encode(&f.ndarray()).unwrap(), ra(0, 3, 4, &[2], &le));
    }

    #[test]
    fn c_lz4_and_julia_leb128() {
        let raw: Vec<u8> = (0..1000u32).map(|i| (i % 7) as u8).collect();
        let z = lz4_flex::block::compress(&raw);
        let bytes = ra(FLAG_COMPRESSED, 2, 1, &[10, 100], &z);
        let f = RaFile::parse(&bytes, &Limits::default()).unwrap();
        assert_eq!(f.data(), &raw[..]);
        // Julia: -3, 300, 0 as zigzag LEB128 int16; size stays the raw size.
        let mut b = RaHeader { flags: FLAG_COMPRESSED, eltype: 1, elbyte: 2, size: 6, dims: vec![3] }.to_bytes();
        b.extend_from_slice(&[0x05, 0xd8, 0x04, 0x00]);
        let f = RaFile::parse(&b, &Limits::default()).unwrap();
        assert_eq!(f.ndarray().to_array::<i16>().unwrap().into_raw_vec_and_offset().0, vec![-3, 300, 0]);
        // A varint too wide for the type, and one cut short.
        let mut wide = b[..b.len() - 4].to_vec();
        wide.extend_from_slice(&[0xff, 0xff, 0x7f, 0, 0]);
        assert!(RaFile::parse(&wide, &Limits::default()).unwrap_err().to_string().contains("does not fit in 16 bits"));
        let cut = &b[..b.len() - 1];
        assert!(RaFile::parse(cut, &Limits::default()).unwrap_err().to_string().contains("value 2 of 3 runs past"));
        let cut = &b[..b.len() - 2];
        assert!(
            RaFile::parse(cut, &Limits::default()).unwrap_err().to_string().contains("3 values cannot fit in 2 bytes")
        );
    }

    #[test]
    fn an_lz4_block_as_long_as_the_raw_data_is_still_read() {
        // Noise then a run of zeros, of lengths where the block is exactly as long as
        // the data (the run saves what the token and literal lengths cost).
        let (raw, z) = (20..300usize)
            .flat_map(|n| (0..40usize).map(move |k| (n, k)))
            .map(|(n, k)| {
                let mut r = rasdf::samples::noise(n, 0x9e37_79b9);
                r.resize(n + k, 0);
                let z = lz4_flex::block::compress(&r);
                (r, z)
            })
            .find(|(r, z)| r.len() == z.len())
            .expect("some lengths give a block as long as its data");
        let bytes = ra(FLAG_COMPRESSED, 2, 1, &[raw.len() as u64], &z);
        let f = RaFile::parse(&bytes, &Limits::default()).unwrap();
        assert_eq!(f.data(), &raw[..]);
    }

    #[test]
    fn hostile_headers_are_refused_before_allocating() {
        let limits = Limits::default();
        let err = |b: &[u8]| RaFile::parse(b, &limits).unwrap_err().to_string();
        assert!(err(b"rawarra").contains("magic"));
        // 2^40 dimensions claimed in a short file.
        let mut b = ra(0, 1, 1, &[], &[]);
        b[40..48].copy_from_slice(&(1u64 << 40).to_le_bytes());
        assert!(err(&b).contains("do not fit"));
        // Dimensions whose product overflows.
        assert!(err(&ra(0, 1, 8, &[1 << 40, 1 << 40], &[])).contains("overflow"));
        // An LZ4 claim of 1 TB from 10 bytes.
        let mut b = ra(FLAG_COMPRESSED, 2, 1, &[1 << 20, 1 << 20], &[0; 10]);
        b[32..40].copy_from_slice(&10u64.to_le_bytes());
        assert!(err(&b).contains("cannot decode") || err(&b).contains("max_array_elements"));
        // Data shorter than the dimensions need.
        assert!(err(&ra(0, 3, 8, &[4], &[0; 16])).contains("the dimensions need 32"));
        assert!(err(&ra(0, 5, 2, &[1], &[0; 2])).contains("bfloat16"));
        assert!(err(&ra(FLAG_BITS, 5, 8, &[1], &[0; 8])).contains("bit arrays"));
        assert!(err(&ra(0, 3, 3, &[1], &[0; 3])).contains("class 3 of 3 bytes"));
    }

    #[test]
    fn user_defined_elements_are_bytes_with_a_last_axis() {
        let data: Vec<u8> = (0..12).collect();
        let bytes = ra(0, 0, 3, &[2, 2], &data);
        let f = RaFile::parse(&bytes, &Limits::default()).unwrap();
        assert_eq!(f.shape, vec![2, 2, 3]);
        let a = f.ndarray().to_array::<u8>().unwrap();
        // Element [1, 0] is the second stored element: bytes 3..6.
        assert_eq!(a[[1, 0, 0]], 3);
        assert_eq!(a[[0, 1, 2]], 8);
    }

    #[test]
    fn strided_views_write_in_column_major_order() {
        // A C-order 2 x 3 float64 array: [[0, 1, 2], [3, 4, 5]].
        let data: Vec<u8> = (0..6).flat_map(|v| f64::from(v).to_le_bytes()).collect();
        let a = NdArray::from_layout(
            &Datatype::Scalar(ScalarType::Float64),
            ByteOrder::Little,
            &[2, 3],
            &[24, 8],
            0,
            &data,
        );
        let out = encode(&a).unwrap();
        let back = RaFile::parse(&out, &Limits::default()).unwrap();
        assert_eq!(back.header.dims, vec![2, 3]);
        let vals: Vec<f64> = back.data().chunks(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(vals, vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
        assert_eq!(back.ndarray().to_array::<f64>().unwrap(), a.to_array::<f64>().unwrap());
    }
}
