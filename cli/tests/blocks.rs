#![allow(clippy::cast_possible_truncation)] // test code on 64-bit hosts
//! The block layer against files the reference library wrote (testdata/pyasdf, made by
//! tests/python/make_fixtures.py) and the standard's reference files.

use rasdf_testkit as common;

use std::collections::BTreeMap;
use std::path::Path;

use rasdf::block::{ChecksumStatus, Compression};
use rasdf::index::{IndexError, IndexStatus};
use rasdf::{AsdfFile, OpenOptions};
use rasdf_cli::{Outcome, check};
use serde_json::Value;

/// Compares every block of `path` with the reference library's view of it.
fn assert_blocks_match(path: &Path, expected: &Value) {
    let file = AsdfFile::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let expected = expected.as_array().unwrap();
    assert_eq!(file.blocks().len(), expected.len(), "{}: block count", path.display());
    for (n, (b, e)) in file.blocks().iter().zip(expected).enumerate() {
        let what = format!("{} block {n}", path.display());
        assert_eq!(b.offset, e["offset"].as_u64().unwrap(), "{what}: offset");
        assert_eq!(b.compression.to_string(), e["compression"].as_str().unwrap(), "{what}: compression");
        let data = file.block_data(n).unwrap_or_else(|err| panic!("{what}: {err}"));
        assert_eq!(data.len() as u64, e["data_size"].as_u64().unwrap(), "{what}: data size");
        assert_eq!(common::md5_hex(data), e["md5"].as_str().unwrap(), "{what}: decoded bytes");
    }
}

fn check_outcome(path: &Path) -> (Outcome, String) {
    let mut out = Vec::new();
    let outcome = check::run(path, &OpenOptions::new(), &mut out).unwrap();
    (outcome, String::from_utf8(out).unwrap())
}

#[test]
fn fixtures_decode_to_the_reference_bytes() {
    let expected: BTreeMap<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(common::testdata("pyasdf/blocks.json")).unwrap()).unwrap();
    let mut seen = 0;
    for entry in std::fs::read_dir(common::testdata("pyasdf")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !name.ends_with(".asdf") {
            continue;
        }
        let e = expected.get(&name).unwrap_or_else(|| panic!("{name} is not in blocks.json: regenerate it"));
        assert_blocks_match(&path, e);
        let (outcome, report) = check_outcome(&path);
        assert_eq!(outcome, Outcome::Ok, "{report}");
        seen += 1;
    }
    assert_eq!(seen, expected.len(), "blocks.json lists files that are missing");
}

#[test]
fn fixture_specifics() {
    let open = |n: &str| AsdfFile::open(common::testdata(&format!("pyasdf/{n}"))).unwrap();

    let f = open("uncompressed.asdf");
    assert_eq!(f.index_status(), &IndexStatus::Valid);
    assert_eq!(f.header().standard_version.as_deref(), Some("1.6.0"));
    assert!(f.verify_blocks().iter().all(|s| matches!(s, Ok(ChecksumStatus::MatchesStored))));

    for (name, codec) in
        [("zlib.asdf", Compression::Zlib), ("bzp2.asdf", Compression::Bzp2), ("lz4.asdf", Compression::Lz4)]
    {
        let f = open(name);
        assert!(f.blocks().iter().all(|b| b.compression == codec), "{name}");
        // asdf >= 5.3 hashes the stored (compressed) bytes.
        assert!(f.verify_blocks().iter().all(|s| matches!(s, Ok(ChecksumStatus::MatchesStored))), "{name}");
    }
    let f = open("checksum_decoded.asdf");
    assert!(f.verify_blocks().iter().all(|s| matches!(s, Ok(ChecksumStatus::MatchesDecoded))));

    let f = open("lz4_records.asdf");
    let stored = f.block_stored(0).unwrap();
    let first_record = u32::from_be_bytes(stored[..4].try_into().unwrap()) as usize;
    assert!(first_record + 4 < stored.len(), "several lz4 records in one block");

    let f = open("padded.asdf");
    assert!(f.blocks().iter().all(|b| b.allocated_size > b.used_size));
    assert_eq!(f.index_status(), &IndexStatus::Valid);

    assert_eq!(open("no_index.asdf").index_status(), &IndexStatus::Missing);
    assert!(matches!(open("stale_index.asdf").index_status(), IndexStatus::Invalid(IndexError::FirstMismatch { .. })));
    assert_eq!(open("index_trailing_nuls.asdf").index_status(), &IndexStatus::Valid);

    let f = open("streamed.asdf");
    let last = f.blocks().last().unwrap();
    assert!(last.is_streamed());
    assert_eq!(last.data_size, 5 * 3 * 8);

    let f = open("no_tree.asdf");
    assert_eq!(f.header().tree, None);
    assert_eq!(f.blocks().len(), 3);

    let f = open("crlf.asdf");
    assert!(f.tree_bytes().unwrap().ends_with(b"\r\n...\r\n"));
    assert_eq!(f.blocks().len(), 3);

    let f = open("long_header.asdf");
    assert!(f.blocks().iter().all(|b| b.header_size == 60));
    assert_eq!(f.index_status(), &IndexStatus::Valid);

    let f = open("header_only.asdf");
    assert!(f.blocks().is_empty() && f.header().tree.is_none());
}

#[test]
fn reference_files_pass_check() {
    let files = common::reference_files();
    for path in &files {
        let (outcome, report) = check_outcome(path);
        assert_eq!(outcome, Outcome::Ok, "{report}");
    }
}

#[test]
fn reference_files_decode_as_the_reference_library_does() {
    let files = common::reference_files();
    let args: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let Some(json) = common::run_python("dump_blocks.py", &args) else {
        return;
    };
    let expected: BTreeMap<String, Value> = serde_json::from_str(&json).unwrap();
    assert_eq!(expected.len(), files.len());
    for path in &files {
        assert_blocks_match(path, &expected[&path.to_string_lossy().to_string()]);
    }
}

/// A compressed block past `STREAM_STATS_BYTES` is verified piece by piece, nothing
/// held decoded, and the verdicts are those of decoding it whole and checking that:
/// a checksum of the stored bytes, one of the decoded data (asdf <= 5.2), a wrong one,
/// and damaged data. `check` then finds the array readable without decoding it again.
#[test]
fn large_blocks_verify_in_pieces_with_the_whole_paths_verdicts() {
    use rasdf::block::verify_checksum;
    use rasdf::write::{Document, WriteOptions};

    let n = usize::try_from(rasdf::file::STREAM_STATS_BYTES).unwrap() / 8 + 1000;
    let values: ndarray::Array1<f64> = (0..n).map(|i| ((i * 7919) % 1000) as f64 / 8.0).collect();
    for codec in [Compression::Lz4, Compression::Bzp2, Compression::Zlib] {
        let mut doc = Document::new();
        doc.set_array("x", values.view(), codec).unwrap();
        let mut bytes = std::io::Cursor::new(Vec::new());
        doc.write(&mut bytes, None, &WriteOptions::default()).unwrap();
        let written = bytes.into_inner();
        // zlib blocks below STREAM_STATS_ZLIB_BYTES take the pieces only when told.
        let options = AsdfFile::options().stream_zlib_stats_from(0);
        let f = options.from_bytes(written.clone()).unwrap();
        let h = f.blocks()[0].clone();
        assert_eq!(h.compression, codec);
        let decoded_md5 =
            rasdf::block::md5(&rasdf::block::codec::decode(codec, f.block_stored(0).unwrap(), h.data_size).unwrap());
        let at = usize::try_from(h.offset).unwrap() + 38;
        let with_checksum = |sum: [u8; 16]| {
            let mut b = written.clone();
            b[at..at + 16].copy_from_slice(&sum);
            b
        };
        let mut damaged = written.clone();
        let middle = usize::try_from(h.data_offset() + h.used_size / 2).unwrap();
        damaged[middle] ^= 0x5a;
        for (what, file) in [
            ("stored", written.clone()),
            ("decoded", with_checksum(decoded_md5)),
            ("wrong", with_checksum([7; 16])),
            ("none", with_checksum([0; 16])),
            ("damaged", damaged),
        ] {
            let f = options.from_bytes(file).unwrap();
            let h = &f.blocks()[0];
            let stored = f.block_stored(0).unwrap();
            let all = f.read_bytes(0..f.len()).unwrap();
            let whole = verify_checksum(h, stored, || h.decode(&all, &rasdf::Limits::default()));
            let pieces = f.verify_blocks().remove(0);
            let expected = match what {
                "stored" => Some(ChecksumStatus::MatchesStored),
                "decoded" => Some(ChecksumStatus::MatchesDecoded),
                "none" => Some(ChecksumStatus::None),
                _ => None,
            };
            assert_eq!(pieces.as_ref().ok(), expected.as_ref(), "{codec} {what}: {pieces:?}");
            assert_eq!(whole.as_ref().ok(), expected.as_ref(), "{codec} {what}");
            match (&pieces, what) {
                (Err(e), "wrong") => assert_eq!(e.to_string(), whole.unwrap_err().with_block(0).to_string()),
                (Err(e), "damaged") => {
                    assert_eq!(e.location().block, Some(0), "{codec}: {e}");
                    // A decoding error, or a checksum mismatch where the damage still decodes.
                    assert!(matches!(e.kind(), rasdf::ErrorKind::Block(_)), "{codec}: {e}");
                }
                _ => {}
            }
            let mut report = Vec::new();
            let outcome = check::report(&f, "x", &mut report).unwrap();
            let report = String::from_utf8(report).unwrap();
            let sound = expected.is_some();
            assert_eq!(outcome == Outcome::Ok, sound, "{codec} {what}: {report}");
            // A block that fails (a wrong checksum, damage) fails its array too: its
            // bytes are not the ones written. zlib and bzip2 streams check themselves,
            // so damage always breaks them; an lz4 record has no check of its own, and a
            // flipped byte may still decode (to other data: then only the checksum tells).
            let decodes = h.decode(&all, &rasdf::Limits::default()).is_ok();
            if what == "damaged" && codec != Compression::Lz4 {
                assert!(!decodes, "{codec}: damage that still decodes");
            }
            let readable = if sound { "1 readable" } else { "0 readable" };
            if what == "wrong" {
                assert!(report.contains("checksum mismatch\n"), "{codec}: {report}");
            }
            assert!(report.contains(&format!("arrays: 1 declared, {readable}")), "{codec} {what}: {report}");
        }
    }
}

/// An index whose extra entry points at or past the index (where no block can be) is a
/// wrong index, not a damaged file: a warning, the blocks found by their headers, the
/// file sound; an entry before the index at bytes that are no block is damage.
#[test]
fn an_index_entry_where_no_block_can_be_is_the_index_alone_wrong() {
    let bytes = std::fs::read(common::testdata("pyasdf/uncompressed.asdf")).unwrap();
    let at = bytes.windows(17).position(|w| w == b"#ASDF BLOCK INDEX").unwrap();
    let dir = common::temp_dir("index-entries");
    let with_entry = |name: &str, offset: usize| {
        let (body, index) = bytes.split_at(at);
        let index = String::from_utf8(index.to_vec()).unwrap().replace("...", &format!("- {offset}\n..."));
        let path = dir.join(name);
        std::fs::write(&path, [body, index.as_bytes()].concat()).unwrap();
        path
    };
    let blocks = AsdfFile::open(common::testdata("pyasdf/uncompressed.asdf")).unwrap().blocks().len();
    for (name, offset) in [("self.asdf", at), ("inside.asdf", at + 20), ("past.asdf", bytes.len() + 100)] {
        let path = with_entry(name, offset);
        let f = AsdfFile::open(&path).unwrap();
        assert!(matches!(f.index_status(), IndexStatus::Invalid(_)), "{name}");
        assert_eq!(f.blocks().len(), blocks, "{name}");
        let (outcome, report) = check_outcome(&path);
        assert_eq!(outcome, Outcome::Ok, "{name}: {report}");
        assert!(report.contains("block index not used"), "{name}: {report}");
    }
    // Inside the tree, before the first block: no block there, and walking did not
    // reach it.
    let (outcome, report) = check_outcome(&with_entry("before.asdf", 40));
    assert_eq!(outcome, Outcome::Ok, "{report}");
    std::fs::remove_dir_all(&dir).unwrap();
}
