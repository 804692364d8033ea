//! NumPy `.npy` files of ASDF arrays, as `numpy.save` writes them (`numpy.lib.format`):
//! the magic `\x93NUMPY`, the format version, the header's length (little-endian; 2 bytes
//! in version 1.0, 4 in 2.0 and 3.0), then the header, a Python dict literal
//! `{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }` padded with spaces and
//! ended by `\n` so that the data starts at a multiple of 64 bytes, then the elements in
//! C order.
//!
//! - `descr` is numpy's `dtype.str` (`'<f8'`, `'>c16'`, `'|b1'`, `'|S5'`, `'>U3'`), or
//!   for a record the list `dtype.descr` (fields with their own byte order, subarrays,
//!   nested records), as [`crate::b2nd::dtype_string`] spells it.
//! - The elements keep the array's byte order, which `descr` names: no byte is changed.
//! - The version is the oldest that holds the header, as numpy chooses it: 1.0; 2.0 for
//!   a header over 65535 bytes (numpy loads a header over 10000 bytes only when given
//!   `max_header_size`); 3.0 (UTF-8) when a field name is not Latin-1.
//! - As numpy does, the header has room for the first axis to grow to 21 digits, so a
//!   file is byte for byte what `numpy.save` writes of the same array.
//!
//! No crate is used: the npy crates write typed elements one by one, converting each;
//! the elements here are already bytes in the file's byte order, of any datatype,
//! records included, and only the header is to be written.

use std::io::Write;

use super::{ConvertError, Error, Result};
use rasdf::AsdfFile;
use rasdf::file::ReadOnce;
use rasdf::ndarray::{ByteOrder, Datatype, NdArray, ScalarType};
use rasdf::tree::NodeRef;

/// The first bytes of a `.npy` file.
pub const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// The data starts at a multiple of this many bytes.
const ALIGN: usize = 64;

/// The digits numpy leaves room for in the first axis (`GROWTH_AXIS_MAX_DIGITS`).
const GROWTH_DIGITS: usize = 21;

/// The header of a `.npy` file of elements of `datatype` stored in `order`, of `shape`
/// (C order): magic, version, length and the padded dict, as `numpy.save` writes it.
///
/// # Errors
/// [`ConvertError::Unsupported`] for a field name holding a control character (the
/// header spells names as written), or a header over 4 GiB.
pub fn header(datatype: &Datatype, order: ByteOrder, shape: &[usize]) -> Result<Vec<u8>, ConvertError> {
    check_names(datatype)?;
    let descr = match datatype {
        Datatype::Record(_) => crate::b2nd::dtype_string(datatype, order),
        _ => format!("'{}'", crate::b2nd::dtype_string(datatype, order)),
    };
    let mut dict = format!("{{'descr': {descr}, 'fortran_order': False, 'shape': {}, }}", shape_repr(shape));
    if let Some(first) = shape.first() {
        let digits = first.to_string().len();
        dict.extend(std::iter::repeat_n(' ', GROWTH_DIGITS.saturating_sub(digits)));
    }
    // Latin-1 when every character is (versions 1.0 and 2.0), else UTF-8 (3.0).
    let latin1: Option<Vec<u8>> = dict.chars().map(|c| u8::try_from(u32::from(c)).ok()).collect();
    let (text, major) = match latin1 {
        Some(bytes) => {
            let major = if wrapped_len(bytes.len(), 2) <= usize::from(u16::MAX) { 1 } else { 2 };
            (bytes, major)
        }
        None => (dict.into_bytes(), 3),
    };
    let size_bytes = if major == 1 { 2 } else { 4 };
    let len = wrapped_len(text.len(), size_bytes);
    let mut out = Vec::with_capacity(MAGIC.len() + 2 + size_bytes + len);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[major, 0]);
    if major == 1 {
        out.extend_from_slice(&u16::try_from(len).unwrap_or(u16::MAX).to_le_bytes());
    } else {
        let len = u32::try_from(len).map_err(|_| ConvertError::Unsupported(format!("a .npy header of {len} bytes")))?;
        out.extend_from_slice(&len.to_le_bytes());
    }
    out.extend_from_slice(&text);
    out.resize(out.len() + len - text.len() - 1, b' ');
    out.push(b'\n');
    Ok(out)
}

/// The length of a header of `text` bytes once padded (as numpy pads: with 1 to 64
/// spaces, then `\n`), after the magic, version and `size_bytes` of length.
fn wrapped_len(text: usize, size_bytes: usize) -> usize {
    let hlen = text + 1;
    let pad = ALIGN - (MAGIC.len() + 2 + size_bytes + hlen) % ALIGN;
    hlen + pad
}

/// A shape as Python spells the tuple: `()`, `(5,)`, `(2, 3)`.
fn shape_repr(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        dims => format!("({})", dims.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")),
    }
}

/// Refuses field names with a control character: `dtype_string` quotes names without
/// escaping them, and a line break (or a NUL) would end the header's literal.
fn check_names(datatype: &Datatype) -> Result<(), ConvertError> {
    let Datatype::Record(fields) = datatype else { return Ok(()) };
    for (i, f) in fields.iter().enumerate() {
        let name = f.numpy_name(i);
        if name.chars().any(char::is_control) {
            return Err(ConvertError::Unsupported(format!(
                "field name {name:?} holds a control character, which rasdf does not write in a .npy header"
            )));
        }
        check_names(&f.datatype)?;
    }
    Ok(())
}

/// Writes `array` as a `.npy` file to `out`: [`header`], then [`write_raw`].
///
/// # Errors
/// As [`header`]; those of `out`.
pub fn write_array(array: &NdArray<'_>, out: &mut impl Write) -> Result<()> {
    out.write_all(&header(&array.datatype, array.byteorder, &array.shape)?)?;
    Ok(write_raw(array, out)?)
}

/// Writes `array`'s elements to `out` in C order, each with its bytes as stored (the
/// array's byte order): the data of a `.npy` file, or the decoded bytes alone.
/// Contiguous elements go in one write; a view's (offset, strides) are gathered in
/// pieces of 1 MiB.
///
/// # Errors
/// Those of `out`.
pub fn write_raw(array: &NdArray<'_>, out: &mut impl Write) -> std::io::Result<()> {
    let n = array.datatype.size();
    let data = array.data();
    if array.is_c_contiguous() {
        return out.write_all(&data[array.offset..array.offset + array.len() * n]);
    }
    const PIECE: usize = 1 << 20;
    let mut buf = Vec::with_capacity(PIECE.min(array.len() * n) + n);
    for at in array.byte_offsets() {
        buf.extend_from_slice(&data[at..at + n]);
        if buf.len() >= PIECE {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)
}

/// Writes `mask` (C order) as a `.npy` file of booleans (`|b1`) of `shape`.
///
/// # Errors
/// [`rasdf::ErrorKind::Usage`] when `mask` does not have as many elements as `shape`;
/// those of `out`.
pub fn write_bools(mask: &[bool], shape: &[usize], out: &mut impl Write) -> Result<()> {
    if shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d)) != Some(mask.len()) {
        return Err(crate::usage(format!("a mask of {} elements for shape {}", mask.len(), shape_repr(shape))));
    }
    out.write_all(&header(&Datatype::Scalar(ScalarType::Bool8), ByteOrder::Little, shape)?)?;
    let bytes: Vec<u8> = mask.iter().map(|&b| u8::from(b)).collect();
    Ok(out.write_all(&bytes)?)
}

/// Writes the ndarray at `node` of `f` as a `.npy` file ([`write_array`]), or its
/// elements alone when `raw` ([`write_raw`]), reading it once
/// ([`rasdf::ArrayRef::read_once`]): a large compressed block whose elements lie in C
/// order is decoded and written piece by piece, never held whole.
///
/// # Errors
/// Those of reading the array (a damaged block stops the write part-way: write to a
/// staged file); as [`header`]; those of `out`.
pub fn write_ndarray_once(f: &AsdfFile, node: NodeRef<'_>, raw: bool, out: &mut impl Write) -> Result<()> {
    // A span that swaps nothing: little-endian is the order it writes, so elements
    // declared little-endian are passed on as they are, and so are any here.
    let as_stored = |meta: &rasdf::ndarray::ArrayMeta, layout: &rasdf::ndarray::Layout| {
        crate::ElementSpan::new(&meta.datatype, ByteOrder::Little, layout.offset, layout.len())
    };
    let array = f.array_at(node);
    match array.read_once(as_stored)? {
        ReadOnce::Whole(a) if raw => Ok(write_raw(&a, out)?),
        ReadOnce::Whole(a) => write_array(&a, out),
        ReadOnce::Pieces { meta, layout, sink: mut span, .. } => {
            if !raw {
                out.write_all(&header(&meta.datatype, meta.byteorder, &layout.shape)?)?;
            }
            array.decode_pieces(|piece| span.feed(piece, out).map_err(Error::from))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rasdf::ndarray::Field;

    fn scalar(name: &str) -> Datatype {
        Datatype::Scalar(ScalarType::from_name(name).unwrap())
    }

    /// The header's dict, without magic, version, length and padding.
    fn dict(h: &[u8]) -> String {
        let start = if h[6] == 1 { 10 } else { 12 };
        String::from_utf8_lossy(&h[start..]).trim_end().to_string()
    }

    #[test]
    fn headers_are_what_numpy_save_writes() {
        // np.save(f, np.zeros((2, 3), '<f8')): 128 bytes, the dict padded to the 64-byte boundary.
        let h = header(&scalar("float64"), ByteOrder::Little, &[2, 3]).unwrap();
        let mut want = b"\x93NUMPY\x01\x00\x76\x00{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }".to_vec();
        want.resize(127, b' ');
        want.push(b'\n');
        assert_eq!(h, want);
        for (datatype, order, shape, text) in [
            (scalar("int32"), ByteOrder::Big, vec![5], "{'descr': '>i4', 'fortran_order': False, 'shape': (5,), }"),
            (scalar("uint8"), ByteOrder::Big, vec![], "{'descr': '|u1', 'fortran_order': False, 'shape': (), }"),
            (
                scalar("bool8"),
                ByteOrder::Little,
                vec![0, 4],
                "{'descr': '|b1', 'fortran_order': False, 'shape': (0, 4), }",
            ),
            (scalar("complex64"), ByteOrder::Big, vec![1], "{'descr': '>c8', 'fortran_order': False, 'shape': (1,), }"),
            (
                scalar("float16"),
                ByteOrder::Little,
                vec![1],
                "{'descr': '<f2', 'fortran_order': False, 'shape': (1,), }",
            ),
            (Datatype::Ascii(5), ByteOrder::Big, vec![1], "{'descr': '|S5', 'fortran_order': False, 'shape': (1,), }"),
            (Datatype::Ucs4(3), ByteOrder::Big, vec![1], "{'descr': '>U3', 'fortran_order': False, 'shape': (1,), }"),
        ] {
            let h = header(&datatype, order, &shape).unwrap();
            assert_eq!(h.len() % ALIGN, 0, "{text}");
            assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
            assert_eq!(usize::from(u16::from_le_bytes([h[8], h[9]])), h.len() - 10);
            assert_eq!(h.last(), Some(&b'\n'));
            assert_eq!(dict(&h), text);
            // Room for the first axis to grow to 21 digits; none for a 0-d array.
            let spaces = h.len() - 10 - 1 - text.len();
            let room = shape.first().map_or(0, |d| 21 - d.to_string().len());
            assert!(spaces > room && spaces <= room + 64, "{text}: {spaces} spaces");
        }
    }

    #[test]
    fn records_are_described_as_lists_of_fields() {
        let field = |name: &str, datatype, byteorder, shape: Vec<usize>| Field {
            name: Some(name.into()),
            datatype,
            byteorder,
            shape,
        };
        let inner = Datatype::Record(vec![
            field("a", scalar("uint8"), ByteOrder::Big, vec![]),
            field("b", scalar("float32"), ByteOrder::Little, vec![]),
        ]);
        let rec = Datatype::Record(vec![
            field("id", scalar("int32"), ByteOrder::Little, vec![]),
            field("pos", scalar("float64"), ByteOrder::Big, vec![2]),
            field("name", Datatype::Ascii(5), ByteOrder::Little, vec![]),
            field("inner", inner, ByteOrder::Little, vec![]),
            Field { name: None, datatype: scalar("int16"), byteorder: ByteOrder::Big, shape: vec![2, 3] },
        ]);
        let h = header(&rec, ByteOrder::Little, &[3]).unwrap();
        assert_eq!(
            dict(&h),
            "{'descr': [('id', '<i4'), ('pos', '>f8', (2,)), ('name', '|S5'), ('inner', [('a', '|u1'), \
             ('b', '<f4')]), ('f4', '>i2', (2, 3))], 'fortran_order': False, 'shape': (3,), }"
        );
        // A name outside Latin-1 makes it version 3.0, UTF-8; one inside stays 1.0, Latin-1.
        let named = |name: &str| Datatype::Record(vec![field(name, scalar("int8"), ByteOrder::Little, vec![])]);
        let h = header(&named("été"), ByteOrder::Little, &[1]).unwrap();
        assert_eq!((&h[6..8], h.len() % ALIGN), (&[1u8, 0][..], 0));
        assert!(h.windows(5).any(|w| w == b"'\xe9t\xe9'"));
        let h = header(&named("δ😀"), ByteOrder::Little, &[1]).unwrap();
        assert_eq!((&h[6..8], h.len() % ALIGN), (&[3u8, 0][..], 0));
        assert_eq!(u32::from_le_bytes(h[8..12].try_into().unwrap()) as usize, h.len() - 12);
        assert!(dict(&h).contains("'δ😀'"));
        // Quotes as Python's repr puts them; control characters refused.
        assert!(dict(&header(&named("it's"), ByteOrder::Little, &[1]).unwrap()).contains("(\"it's\", '|i1')"));
        assert!(header(&named("a\nb"), ByteOrder::Little, &[1]).is_err());
    }

    #[test]
    fn long_headers_are_version_2() {
        let fields: Vec<Field> = (0..4000)
            .map(|i| Field {
                name: Some(format!("field_{i}")),
                datatype: scalar("float64"),
                byteorder: ByteOrder::Little,
                shape: vec![],
            })
            .collect();
        let h = header(&Datatype::Record(fields), ByteOrder::Little, &[7]).unwrap();
        assert!(h.len() > 65535);
        assert_eq!((&h[6..8], h.len() % ALIGN), (&[2u8, 0][..], 0));
        assert_eq!(u32::from_le_bytes(h[8..12].try_into().unwrap()) as usize, h.len() - 12);
        // Version 1.0 up to a padded header of 65535 bytes.
        let most = (60000..70000).filter(|&t| wrapped_len(t, 2) <= 65535).max().unwrap();
        assert_eq!(wrapped_len(most, 2) + 10, 65536);
    }

    #[test]
    fn views_are_gathered_in_c_order_with_their_bytes_as_stored() {
        let data: Vec<u8> = (0..48).collect();
        // A 2 x 3 view of big-endian int16 from byte 2, rows 16 bytes apart, every other column.
        let view = NdArray::from_layout(&scalar("int16"), ByteOrder::Big, &[2, 3], &[16, 4], 2, &data);
        let mut out = Vec::new();
        write_array(&view, &mut out).unwrap();
        let (h, body) = out.split_at(128);
        assert_eq!(dict(h), "{'descr': '>i2', 'fortran_order': False, 'shape': (2, 3), }");
        assert_eq!(body, [2, 3, 6, 7, 10, 11, 18, 19, 22, 23, 26, 27]);
        let mut raw = Vec::new();
        write_raw(&view, &mut raw).unwrap();
        assert_eq!(raw, body);
        // Contiguous from an offset; 0-d; empty.
        let row = NdArray::from_layout(&scalar("uint8"), ByteOrder::Little, &[4], &[1], 5, &data);
        let mut raw = Vec::new();
        write_raw(&row, &mut raw).unwrap();
        assert_eq!(raw, [5, 6, 7, 8]);
        let zero_d = NdArray::from_layout(&scalar("float32"), ByteOrder::Little, &[], &[], 8, &data);
        let mut out = Vec::new();
        write_array(&zero_d, &mut out).unwrap();
        assert_eq!((out.len(), &out[128..]), (132, &data[8..12]));
        let empty = NdArray::from_layout(&scalar("float32"), ByteOrder::Little, &[0, 3], &[12, 4], 0, &data);
        let mut out = Vec::new();
        write_array(&empty, &mut out).unwrap();
        assert_eq!(out.len(), 128);
    }

    #[test]
    fn masks_are_booleans() {
        let mut out = Vec::new();
        write_bools(&[true, false, false, true], &[2, 2], &mut out).unwrap();
        assert_eq!(dict(&out[..128]), "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 2), }");
        assert_eq!(&out[128..], [1, 0, 0, 1]);
        assert!(write_bools(&[true], &[2, 2], &mut Vec::new()).is_err());
    }
}
