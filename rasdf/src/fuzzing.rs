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
        max_inline_bytes: 1 << 24,
    }
}

/// The names of the library's targets (fuzz/Cargo.toml has these, and those of
/// `rasdf_convert::fuzzing` and `rasdf_cli::fuzzing`).
pub const TARGETS: &[&str] =
    &["header", "tree", "block_header", "block_walk", "index", "open_all", "roundtrip", "lz4_encode", "codecs"];

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
        "open_all" => {
            let _ = open_all(data);
        }
        "roundtrip" => roundtrip(data),
        "lz4_encode" => lz4_encode(data),
        "codecs" => codecs(data),
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
    let _ = crate::header::parse(data);
}

/// YAML to a tree; the fast scanner, where it does not give up, must agree with
/// libyaml, and a parse in parts with the parse of the whole; a tree that parses must
/// emit YAML that parses to the same emission.
pub fn tree(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let limits = tight_limits();
    let slow = Tree::parse_libyaml(text, &limits);
    #[cfg(feature = "fast-yaml")]
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
    #[cfg(feature = "fast-yaml")]
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

/// Every block codec on arbitrary stored bytes (the bytes after the first three): the
/// first byte picks the codec, the next two (big-endian, times 16) give `data_size`. A
/// decode that succeeds gives exactly `data_size` bytes, and decoding in pieces gives
/// the same bytes or fails too. (Without the feature `extra-codecs`, only the
/// reference's codecs.)
pub fn codecs(data: &[u8]) {
    use block::Compression as C;
    let [pick, hi, lo, stored @ ..] = data else { return };
    let all = [C::Zlib, C::Bzp2, C::Lz4, C::Zstd, C::Lz4Frame, C::Blosc, C::Blosc2, C::Xz, C::None];
    let codec = all[usize::from(*pick) % all.len()];
    let n = u64::from(u16::from_be_bytes([*hi, *lo])) * 16;
    let whole = block::codec::decode(codec, stored, n);
    if let Ok(d) = &whole {
        assert_eq!(d.len() as u64, n, "{codec}: decoded to another size than data_size");
    }
    let mut joined = Vec::new();
    let pieces = block::codec::decode_pieces(codec, stored, n, |p: &[u8]| {
        joined.extend_from_slice(p);
        Ok::<(), block::BlockError>(())
    });
    match (&whole, &pieces) {
        (Ok(d), Ok(())) => assert!(joined == d[..], "{codec}: the pieces differ from the whole decode"),
        (Err(_), Err(_)) => {}
        (w, p) => panic!("{codec}: decoding whole: {:?}; in pieces: {p:?}", w.as_ref().map(Vec::len)),
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

/// Opens a whole file with tight limits and touches what the library reads: every
/// block, every array (elements, statistics, mask). Returns the file when it opened, for
/// the command-line package's target to go on with (`info`, `check`, `to-yaml`).
pub fn open_all(data: &[u8]) -> Option<crate::AsdfFile> {
    let f = OpenOptions::new().limits(tight_limits()).from_bytes(data.to_vec()).ok()?;
    let _ = f.verify_blocks();
    for array in f.arrays() {
        if let Ok(a) = array.read_dyn() {
            a.elements().for_each(drop);
            let _ = crate::ndarray::stats::stats(&a);
            let _ = array.mask(&a);
        }
    }
    Some(f)
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
    for array in f.arrays() {
        let path = array.path().unwrap_or_default();
        // The writer puts its own `asdf_library` in place of the file's, as the reference does.
        if path.trim_start_matches('/').split('/').next() == Some("asdf_library") {
            continue;
        }
        if let Ok(a) = f.array(path).and_then(|a| a.read_dyn()) {
            let b = g
                .array(path)
                .and_then(|a| a.read_dyn())
                .expect("an array that read before does not read after a rewrite");
            assert_eq!(a.shape, b.shape, "{path}: shape changed by a rewrite");
            let (ea, eb) = (a.elements(), b.elements());
            assert_eq!(ea.len(), eb.len());
            for (x, y) in ea.zip(eb) {
                assert!(x == y || format!("{x:?}") == format!("{y:?}"), "{path}: {x:?} != {y:?}");
            }
        }
    }
}
