//! Entry points of the converters' fuzz targets (fuzz/), shared with `cargo test`, which
//! replays every input kept under `testdata/fuzz/<target>/`. Each takes arbitrary bytes
//! and must return without panicking, hanging or allocating without bound.

use std::io::Cursor;

use rasdf::OpenOptions;
use rasdf::fuzzing::tight_limits;
use rasdf::write::WriteOptions;

/// The names of the converters' targets, as in fuzz/Cargo.toml.
pub const TARGETS: &[&str] = &["convert_ra", "convert_gsd", "convert_b2nd"];

/// Runs target `name` on `data` (nothing for a name not in [`TARGETS`]).
pub fn run(name: &str, data: &[u8]) {
    match name {
        "convert_ra" => convert_ra(data),
        "convert_gsd" => convert_gsd(data),
        "convert_b2nd" => convert_b2nd(data),
        _ => {}
    }
}

/// A RawArray file: read, every element decoded; one that reads is written back and
/// must read again to the same shape and elements.
pub fn convert_ra(data: &[u8]) {
    let Ok(f) = crate::ra::RaFile::parse(data, &tight_limits()) else { return };
    let array = f.ndarray();
    let elements: Vec<_> = array.elements().collect();
    let Ok(again) = crate::ra::encode(&array) else { return };
    let back = crate::ra::RaFile::parse(&again, &tight_limits());
    let back = back.unwrap_or_else(|e| panic!("a .ra file rasdf wrote does not read: {e}"));
    assert_eq!(back.shape, f.shape, "shape changed by a write");
    // Compared as printed, so that NaN equals NaN.
    let again: Vec<_> = back.ndarray().elements().collect();
    assert_eq!(format!("{again:?}"), format!("{elements:?}"), "elements changed by a write");
}

/// A chunk as compared: frame, name, type, N, M, bytes.
type ChunkKey = (u64, String, u8, u64, u32, Vec<u8>);

/// A GSD file: read, made an ASDF document, written; one that reads is written back to
/// GSD through that document, and must read again to the same chunks.
pub fn convert_gsd(data: &[u8]) {
    let Ok(g) = crate::gsd::GsdFile::parse(data) else { return };
    let Ok(doc) = crate::gsd_to_asdf(&g, rasdf::block::Compression::None) else { return };
    let mut out = Cursor::new(Vec::new());
    if doc.write(&mut out, None, &WriteOptions::default()).is_err() {
        return;
    }
    let limits = tight_limits().max_nodes(1_000_000);
    let Ok(f) = OpenOptions::new().limits(limits).from_bytes(out.into_inner()) else { return };
    let Ok(again) = crate::asdf_to_gsd(&f) else { return };
    let back = crate::gsd::GsdFile::parse(&again);
    let back = back.unwrap_or_else(|e| panic!("a GSD file rasdf wrote does not read: {e}"));
    // Text of more than one column comes back as int8, M x N, as gsd.fl reads it; text
    // is kept up to its trailing NULs.
    let key = |c: &crate::gsd::Chunk<'_>| -> ChunkKey {
        let mut data = c.data.to_vec();
        match (c.type_id, c.m) {
            (crate::gsd::TYPE_CHARACTER, 1) => {
                while data.last() == Some(&0) {
                    data.pop();
                }
                (c.frame, c.name.clone(), c.type_id, data.len() as u64, 1, data)
            }
            (crate::gsd::TYPE_CHARACTER, m) => {
                (c.frame, c.name.clone(), 5, u64::from(m), u32::try_from(c.n).unwrap_or(u32::MAX), data)
            }
            _ => (c.frame, c.name.clone(), c.type_id, c.n, c.m, data),
        }
    };
    let mut a: Vec<ChunkKey> = g.chunks.iter().map(key).collect();
    let mut b: Vec<ChunkKey> = back.chunks.iter().map(key).collect();
    a.sort();
    b.sort();
    assert_eq!(a, b, "chunks changed by a round trip through ASDF");
}

/// A b2nd frame: read, its datatype found, every chunk decoded; one that decodes is
/// written back (in small chunks and blocks, so that the scatter and gather meet ragged
/// edges) and must read again to the same shape, dtype and bytes.
pub fn convert_b2nd(data: &[u8]) {
    use crate::b2nd;
    let Ok(f) = b2nd::B2ndFile::parse(data, &tight_limits()) else { return };
    let Ok(_) = f.datatype() else { return };
    let Ok(bytes) = f.decode() else { return };
    let dtype = f.dtype.clone().unwrap_or_else(|| format!("|S{}", f.typesize));
    let options =
        b2nd::EncodeOptions::default().codec(b2nd::BloscCodec::Lz4).max_chunk_bytes(4096).max_block_bytes(512);
    let Ok(again) = b2nd::encode(&bytes, &f.shape, f.typesize, &dtype, &f.vlmeta, &options) else { return };
    let back = b2nd::B2ndFile::parse(&again, &tight_limits());
    let back = back.unwrap_or_else(|e| panic!("a b2nd file rasdf wrote does not read: {e}"));
    assert_eq!(back.shape, f.shape, "shape changed by a write");
    assert_eq!(back.dtype.as_deref(), Some(dtype.as_str()), "dtype changed by a write");
    assert_eq!(back.vlmeta, f.vlmeta, "vlmeta changed by a write");
    let decoded = back.decode().unwrap_or_else(|e| panic!("a b2nd file rasdf wrote does not decode: {e}"));
    assert!(decoded == bytes, "bytes changed by a write");
}
