//! Entry points for the fuzz targets (fuzz/), shared with `cargo test`, which replays
//! every input kept under `testdata/fuzz/<target>/`. Each takes arbitrary bytes and must
//! return without panicking, hanging or allocating without bound.

use std::io::Cursor;

use crate::block::{self, BlockHeader};
use crate::tree::Tree;
use crate::write::{Document, WriteOptions};
use crate::{Limits, OpenOptions, index};

/// Limits tight enough that every input finishes quickly.
pub fn tight_limits() -> Limits {
    Limits {
        max_tree_bytes: 1 << 20,
        max_depth: 64,
        max_nodes: 100_000,
        max_alias_expansion: 10_000,
        max_blocks: 1_000,
        max_block_bytes: 1 << 24,
        max_array_elements: 1 << 20,
        max_overlap_bytes: 1 << 24,
        max_index_bytes: 1 << 20,
    }
}

/// The names of the targets, as in fuzz/Cargo.toml.
pub const TARGETS: &[&str] = &[
    "header",
    "tree",
    "block_header",
    "block_walk",
    "index",
    "open_all",
    "roundtrip",
    "convert_ra",
    "convert_gsd",
    "convert_b2nd",
    "lz4_encode",
];

/// Makes panics inside the YAML parser (which rasdf turns into errors) pass quietly
/// through the panic hook in force (libFuzzer's aborts on any panic); others still abort.
pub fn install_panic_filter() {
    let abort = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !crate::tree::panic_is_from_yaml_parser(info) {
            abort(info);
        }
    }));
}

/// Runs target `name` on `data`.
pub fn run(name: &str, data: &[u8]) {
    match name {
        "header" => header(data),
        "tree" => tree(data),
        "block_header" => block_header(data),
        "block_walk" => block_walk(data),
        "index" => index_target(data),
        "open_all" => open_all(data),
        "roundtrip" => roundtrip(data),
        "convert_ra" => convert_ra(data),
        "convert_gsd" => convert_gsd(data),
        "convert_b2nd" => convert_b2nd(data),
        "lz4_encode" => lz4_encode(data),
        _ => {}
    }
}

/// rasdf's LZ4 encoder (the one input that is not a file): the bytes after the first,
/// cut in two where the first says, compressed alone and as a pair, must be blocks that
/// the bounds-checked decoder gives back as they were, each within the room promised,
/// and the pair's blocks the same as the singles'. The bytes are also stretched (each
/// repeated as often as the next says) so that long matches and long runs come up.
pub fn lz4_encode(data: &[u8]) {
    use crate::block::lz4;
    let Some((&cut, rest)) = data.split_first() else { return };
    let stretched: Vec<u8> =
        rest.chunks(2).flat_map(|p| std::iter::repeat_n(p[0], usize::from(p[p.len() - 1]))).collect();
    for input in [rest, &stretched[..]] {
        let (a, b) = input.split_at(input.len() * usize::from(cut) / 255);
        let mut out_a = vec![0u8; lz4::max_compressed_len(a.len())];
        let mut out_b = vec![0u8; lz4::max_compressed_len(b.len())];
        let (na, nb) = lz4::compress_pair(a, &mut out_a, b, &mut out_b).expect("room as promised");
        for (block, raw) in [(&out_a[..na], a), (&out_b[..nb], b)] {
            let back = lz4_flex::block::decompress(block, raw.len()).expect("a valid LZ4 block");
            assert!(back == raw, "the LZ4 block does not give back its input");
            let mut single = vec![0u8; lz4::max_compressed_len(raw.len())];
            let n = lz4::compress(raw, &mut single).expect("room as promised");
            assert!(single[..n] == *block, "a pair's block differs from the single's");
        }
    }
}

/// The header line, comments and tree range.
pub fn header(data: &[u8]) {
    let _ = crate::tree::header::parse(data);
}

/// YAML to a tree; the fast scanner, where it does not give up, must agree with
/// libyaml, and a parse in parts with the parse of the whole; a tree that parses must
/// emit YAML that parses to the same emission.
pub fn tree(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let limits = tight_limits();
    let slow = Tree::parse_libyaml(text, &limits);
    if let Some(fast) = Tree::parse_fast(text, &limits) {
        match (fast, &slow) {
            (Ok(a), Ok(b)) => assert_eq!(
                crate::tree::emit::Emitter::new(&a).document(),
                crate::tree::emit::Emitter::new(b).document(),
                "the fast scanner and libyaml disagree"
            ),
            (Ok(_), Err(e)) => panic!("the fast scanner accepted what libyaml refuses: {e:?}"),
            // (`Tree::parse` hands a fast-path error to libyaml.)
            (Err(_), _) => {}
        }
    }
    // What users get is what libyaml gives: the same tree, or an error where it fails.
    match (Tree::parse(text, &limits), slow) {
        (Ok(a), Ok(b)) => {
            assert_eq!(
                crate::tree::emit::Emitter::new(&a).document(),
                crate::tree::emit::Emitter::new(&b).document(),
                "Tree::parse and libyaml disagree"
            );
            // Schema validation ends on any tree, under the standards with most tags.
            for standard in ["1.0.0", "1.5.0", "1.6.0"] {
                let _ = crate::schema::validate(&a, Some(standard));
            }
        }
        (Err(_), Err(_)) => {}
        (a, b) => panic!("Tree::parse gives {:?}, libyaml {:?}", a.map(|_| "a tree"), b.map(|_| "a tree")),
    }
    // A parse in parts, where it does not decline, is the parse of the whole text.
    for parts in 2..=3 {
        if let Some(split) = Tree::parse_in_parts(text, &limits, parts) {
            match Tree::parse_fast_whole(text, &limits) {
                // (Compared as printed: NaN is not equal to itself.)
                Some(Ok(whole)) => {
                    assert_eq!(format!("{split:?}"), format!("{whole:?}"), "the parse in {parts} parts differs");
                }
                other => panic!("a parse in {parts} parts joined what the whole parse gives as {other:?}"),
            }
        }
    }
    if let Ok(t) = Tree::parse(text, &limits) {
        let out = crate::tree::emit::Emitter::new(&t).document();
        let again = Tree::parse(&out, &Limits { max_nodes: limits.max_nodes * 4, ..limits });
        if let Ok(t2) = again {
            assert_eq!(crate::tree::emit::Emitter::new(&t2).document(), out, "emitted YAML does not read back");
        }
    }
}

/// One block header at offset 0, its data decoded and its checksum verified; decoded
/// piece by piece too, which must give the same bytes or fail as decoding whole does.
pub fn block_header(data: &[u8]) {
    let limits = tight_limits();
    if let Ok(h) = BlockHeader::parse(data, 0) {
        let whole = h.decode(data, &limits);
        if let Ok(d) = &whole {
            assert_eq!(d.len() as u64, h.data_size);
        }
        let mut joined = Vec::new();
        let pieces = h.decode_pieces(data, &limits, |p| {
            joined.extend_from_slice(p);
            Ok::<(), crate::Error>(())
        });
        match (&whole, &pieces) {
            (Ok(d), Ok(())) => assert!(joined == d[..], "the pieces differ from the whole decode"),
            (Err(_), Err(_)) => {}
            (w, p) => panic!("decoding whole: {:?}; in pieces: {p:?}", w.as_ref().map(|d| d.len())),
        }
        let stored = h.stored_bytes(data).unwrap_or_default();
        let _ = block::verify_checksum(&h, stored, || h.decode(data, &limits));
    }
}

/// Walking block headers from the first magic.
pub fn block_walk(data: &[u8]) {
    let limits = tight_limits();
    if let Some(first) = block::find_first_block(data, 0) {
        let w = block::walk(data, first, &limits);
        assert!(w.blocks.len() <= limits.max_blocks);
        for pair in w.blocks.windows(2) {
            assert!(pair[1].offset > pair[0].offset, "the walk must advance");
        }
    }
}

/// Finding, parsing and verifying a block index; where the index is read without the YAML
/// parser (as writers lay it out), the parser must read the same list.
pub fn index_target(data: &[u8]) {
    let limits = tight_limits();
    let _ = index::parse(data, 0);
    // The index as writers lay it out is read without the YAML parser: the same list.
    if let Ok(text) = std::str::from_utf8(data)
        && let Some(plain) = index::plain_list(text)
    {
        assert_eq!(index::parse_yaml(text), Ok(plain), "the plain index reads differently through YAML");
    }
    if let (Some(at), Some(first)) = (index::find(data, 0, &limits), block::find_first_block(data, 0))
        && let Ok(offsets) = index::parse(data, at)
    {
        let _ = index::verify(data, &offsets, first, at);
    }
}

/// Opens a whole file with tight limits and touches everything: every block, every
/// array (elements, statistics, mask), `info`, `check` and `to-yaml`.
pub fn open_all(data: &[u8]) {
    let Ok(f) = OpenOptions::new().limits(tight_limits()).from_bytes(data.to_vec()) else { return };
    let _ = f.verify_blocks();
    for path in f.ndarray_paths() {
        if let (Ok(a), Some(node)) = (f.ndarray(&path), f.get(&path)) {
            let _ = a.elements();
            let _ = crate::ndarray::stats::stats(&a);
            let _ = f.mask_at(node, &a);
        }
    }
    let mut sink = Vec::new();
    // Every line, and a drawing cut in both directions with the block tables.
    let all = crate::cli::info::InfoOptions::default();
    let _ = crate::cli::info::report(&f, &all, &mut sink);
    let cut = crate::cli::info::InfoOptions {
        max_rows: Some(data.len() % 40),
        max_cols: Some(data.len() % 50),
        show_blocks: true,
        ..Default::default()
    };
    let _ = crate::cli::info::report(&f, &cut, &mut sink);
    let _ = crate::cli::check::report(&f, "fuzz", &mut sink);
    let _ = crate::cli::to_yaml::to_yaml(&f);
    // Read once, as the converters read (zlib blocks of any size piece by piece), every
    // array that reads gives the bytes it gives read whole.
    let Ok(once) = OpenOptions::new().limits(tight_limits()).stream_zlib_stats_from(0).from_bytes(data.to_vec()) else {
        panic!("a file that opened does not open again");
    };
    for path in f.ndarray_paths() {
        if let (Ok(a), Some(node)) = (f.ndarray(&path), once.get(&path)) {
            let mut whole = Vec::new();
            let mut pieces = Vec::new();
            let _ = crate::convert::write_elements(&a, false, &mut whole);
            let read = crate::convert::write_ndarray_once(&once, node, false, &mut pieces);
            assert!(read.is_ok() && pieces == whole, "{path}: read once, {read:?}, not as read whole");
        }
    }
}

/// Opens a file, writes it again, and reads what was written: it must open, and every
/// array that could be read before reads to the same elements.
pub fn roundtrip(data: &[u8]) {
    let Ok(f) = OpenOptions::new().limits(tight_limits()).from_bytes(data.to_vec()) else { return };
    let Ok(doc) = Document::from_file(&f) else { return };
    let mut out = Cursor::new(Vec::new());
    if doc.write(&mut out, None, &WriteOptions::default()).is_err() {
        return;
    }
    let written = out.into_inner();
    let g = OpenOptions::new()
        .limits(Limits { max_nodes: 1_000_000, ..tight_limits() })
        .from_bytes(written)
        .expect("rasdf cannot read what it wrote");
    for path in f.ndarray_paths() {
        // The writer puts its own `asdf_library` in place of the file's, as the reference does.
        if path.trim_start_matches('/').split('/').next() == Some("asdf_library") {
            continue;
        }
        if let Ok(a) = f.ndarray(&path) {
            let b = g.ndarray(&path).expect("an array that read before does not read after a rewrite");
            assert_eq!(a.shape, b.shape, "{path}: shape changed by a rewrite");
            let (ea, eb) = (a.elements(), b.elements());
            assert_eq!(ea.len(), eb.len());
            for (x, y) in ea.iter().zip(&eb) {
                assert!(x == y || format!("{x:?}") == format!("{y:?}"), "{path}: {x:?} != {y:?}");
            }
        }
    }
}

/// A RawArray file: read, every element decoded; one that reads is written back and
/// must read again to the same shape and elements.
pub fn convert_ra(data: &[u8]) {
    let Ok(f) = crate::convert::ra::RaFile::parse(data, &tight_limits()) else { return };
    let array = f.ndarray();
    let elements = array.elements();
    let Ok(again) = crate::convert::ra::encode(&array) else { return };
    let back = crate::convert::ra::RaFile::parse(&again, &tight_limits());
    let back = back.unwrap_or_else(|e| panic!("a .ra file rasdf wrote does not read: {e}"));
    assert_eq!(back.shape, f.shape, "shape changed by a write");
    // Compared as printed, so that NaN equals NaN.
    assert_eq!(format!("{:?}", back.ndarray().elements()), format!("{elements:?}"), "elements changed by a write");
}

/// A chunk as compared: frame, name, type, N, M, bytes.
type ChunkKey = (u64, String, u8, u64, u32, Vec<u8>);

/// A GSD file: read, made an ASDF document, written; one that reads is written back to
/// GSD through that document, and must read again to the same chunks.
pub fn convert_gsd(data: &[u8]) {
    let Ok(g) = crate::convert::gsd::GsdFile::parse(data) else { return };
    let Ok(doc) = crate::convert::gsd_to_asdf(&g, crate::block::Compression::None) else { return };
    let mut out = Cursor::new(Vec::new());
    if doc.write(&mut out, None, &WriteOptions::default()).is_err() {
        return;
    }
    let limits = Limits { max_nodes: 1_000_000, ..tight_limits() };
    let Ok(f) = OpenOptions::new().limits(limits).from_bytes(out.into_inner()) else { return };
    let Ok(again) = crate::convert::asdf_to_gsd(&f) else { return };
    let back = crate::convert::gsd::GsdFile::parse(&again);
    let back = back.unwrap_or_else(|e| panic!("a GSD file rasdf wrote does not read: {e}"));
    // Text of more than one column comes back as int8, M x N, as gsd.fl reads it; text
    // is kept up to its trailing NULs.
    let key = |c: &crate::convert::gsd::Chunk<'_>| -> ChunkKey {
        let mut data = c.data.to_vec();
        match (c.type_id, c.m) {
            (crate::convert::gsd::TYPE_CHARACTER, 1) => {
                while data.last() == Some(&0) {
                    data.pop();
                }
                (c.frame, c.name.clone(), c.type_id, data.len() as u64, 1, data)
            }
            (crate::convert::gsd::TYPE_CHARACTER, m) => {
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
    use crate::convert::b2nd;
    let Ok(f) = b2nd::B2ndFile::parse(data, &tight_limits()) else { return };
    let Ok(_) = f.datatype() else { return };
    let Ok(bytes) = f.decode() else { return };
    let dtype = f.dtype.clone().unwrap_or_else(|| format!("|S{}", f.typesize));
    let options = b2nd::EncodeOptions { codec: b2nd::BloscCodec::Lz4, max_chunk_bytes: 4096, max_block_bytes: 512 };
    let Ok(again) = b2nd::encode(&bytes, &f.shape, f.typesize, &dtype, &f.vlmeta, &options) else { return };
    let back = b2nd::B2ndFile::parse(&again, &tight_limits());
    let back = back.unwrap_or_else(|e| panic!("a b2nd file rasdf wrote does not read: {e}"));
    assert_eq!(back.shape, f.shape, "shape changed by a write");
    assert_eq!(back.dtype.as_deref(), Some(dtype.as_str()), "dtype changed by a write");
    assert_eq!(back.vlmeta, f.vlmeta, "vlmeta changed by a write");
    let decoded = back.decode().unwrap_or_else(|e| panic!("a b2nd file rasdf wrote does not decode: {e}"));
    assert!(decoded == bytes, "bytes changed by a write");
}
