//! The codecs of other writers, both ways: the files of `testdata/codecs/` (made by
//! `tests/python/make_codec_fixtures.py`: the asdf-compression plugin's `zstd`, `lz4f`
//! and `blsc`, and the forms AbacusSummit, asdf-cxx and ASDF.jl write, laid out as their
//! documents say) and a real file of asdf-cxx (`testdata/codecs/real/`)
//! read to the bytes `manifest.json` records; fresh files from the plugin (under
//! `RASDF_PYTHON`); and files rasdf writes with `zstd` and `blsc` (the library, `rasdf
//! defragment -c`, `rasdf convert -c`) read back by the reference with the plugin
//! (`tests/python/read_codec_files.py`).

use rasdf_testkit as common;
mod support;

use support::cli;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rasdf::block::{ChecksumStatus, Compression};
use rasdf::write::{Document, WriteOptions};
use rasdf::{AsdfFile, Limits};

/// The md5 of each array's bytes in C order (as stored) at each path of `paths`.
fn md5s(path: &Path, paths: impl Iterator<Item = String>) -> BTreeMap<String, String> {
    let f = AsdfFile::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    paths
        .map(|p| {
            let a = f.array(&p).and_then(|a| a.read_dyn()).unwrap_or_else(|e| panic!("{}: {p}: {e}", path.display()));
            let size = a.datatype.size();
            let data = a.data();
            let bytes: Vec<u8> = a.byte_offsets().flat_map(|o| data[o..o + size].iter().copied()).collect();
            (p, common::md5_hex(&bytes))
        })
        .collect()
}

/// Every block of `path` decodes and its checksum holds (of the stored or the decoded
/// bytes); the labels of its blocks.
fn sound(path: &Path) -> Vec<Compression> {
    let f = AsdfFile::open(path).unwrap();
    for (n, r) in f.verify_blocks().into_iter().enumerate() {
        let status = r.unwrap_or_else(|e| panic!("{} block {n}: {e}", path.display()));
        assert_ne!(status, ChecksumStatus::None, "{} block {n} has a checksum", path.display());
    }
    f.blocks().iter().map(|b| b.compression).collect()
}

/// Checks every file a manifest names (relative to `dir`): its blocks, and its arrays'
/// bytes.
fn check_manifest(dir: &Path, manifest: &serde_json::Value) -> usize {
    let mut n = 0;
    for (file, arrays) in manifest.as_object().unwrap() {
        let path = dir.join(file);
        let labels = sound(&path);
        assert!(!labels.is_empty() && labels.iter().all(|c| *c != Compression::None), "{file}: {labels:?}");
        let want: BTreeMap<String, String> =
            arrays.as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string())).collect();
        assert_eq!(md5s(&path, want.keys().cloned()), want, "{file}");
        n += 1;
    }
    n
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

#[test]
fn committed_files_of_other_writers_read_to_their_bytes() {
    let dir = common::testdata("codecs");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    assert!(check_manifest(&dir, &manifest) >= 15);
    // The labels each writer uses.
    for (file, label) in [
        ("plugin_zstd.asdf", Compression::Zstd),
        ("plugin_lz4f.asdf", Compression::Lz4Frame),
        ("plugin_blsc.asdf", Compression::Blosc),
        ("abacus_blsc.asdf", Compression::Blosc),
        ("abacus_bsc2.asdf", Compression::Bsc2),
        ("cxx_bls2.asdf", Compression::Blosc2),
        ("bls2_chunk.asdf", Compression::Blosc2),
        ("jl_xz_sha256.asdf", Compression::Xz),
        ("real/asdf-cxx_blue_upchan_gain.asdf", Compression::Blosc),
    ] {
        assert!(sound(&dir.join(file)).contains(&label), "{file}");
    }
    // `rasdf check` agrees (asdf-cxx's file has a stale block index and a tree its
    // schema refuses: it is checked block by block above).
    for file in ["abacus_blsc.asdf", "jl_xz_crc32.asdf", "cxx_bls2.asdf", "plugin_blsc.asdf"] {
        assert_eq!(cli(&["check", &s(&dir.join(file))]), 0, "{file}");
    }
}

/// Damaged copies of the files of other writers: errors with the block, never a panic.
#[test]
fn damaged_blocks_of_other_writers_are_errors() {
    let dir = common::testdata("codecs");
    for file in ["plugin_zstd.asdf", "plugin_lz4f.asdf", "abacus_blsc.asdf", "cxx_bls2.asdf", "jl_xz_crc32.asdf"] {
        let bytes = std::fs::read(dir.join(file)).unwrap();
        let f = AsdfFile::open(dir.join(file)).unwrap();
        let h = f.blocks()[0].clone();
        let data_at = usize::try_from(h.offset).unwrap() + 6 + usize::from(h.header_size);
        // A byte inside the stored data flipped, with no checksum to catch it first.
        for delta in [20, usize::try_from(h.used_size).unwrap() / 2] {
            let mut b = bytes.clone();
            b[data_at + delta] ^= 0x5a;
            let at = usize::try_from(h.offset).unwrap() + 38;
            b[at..at + 16].fill(0);
            let g = rasdf::OpenOptions::new().from_bytes(b).unwrap();
            if let Err(e) = g.block_data(0) {
                assert_eq!(e.location().block, Some(0), "{file}: {e}");
            }
        }
        // data_size one smaller: the stream decodes to more.
        let mut b = bytes.clone();
        let at = usize::try_from(h.offset).unwrap() + 30;
        b[at..at + 8].copy_from_slice(&(h.data_size - 1).to_be_bytes());
        let g = rasdf::OpenOptions::new().from_bytes(b).unwrap();
        let e = g.block_data(0).unwrap_err();
        assert!(e.to_string().contains("more than data_size"), "{file}: {e}");
    }
}

/// What the asdf-compression plugin and the other writers' forms write now, read by
/// rasdf to the bytes the reference reads.
#[test]
fn fresh_files_of_the_plugin_read_to_their_bytes() {
    let dir = common::temp_dir("codecs-fresh");
    let Some(out) = common::run_python("make_codec_fixtures.py", &[&dir]) else { return };
    let manifest: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(check_manifest(&dir, &manifest) >= 14);
}

/// An array of each datatype family, some large enough for many Blosc blocks.
fn document() -> Document<'static> {
    let mut doc = Document::new();
    let big: Vec<f64> = (0..700_000).map(|i| (f64::from(i) * 0.001).sin()).collect();
    doc.set_array("big", ndarray::Array1::from(big), Compression::None).unwrap();
    let image: Vec<f32> = (0..120 * 77).map(|i| i as f32 * 0.5).collect();
    doc.set_array("image", ndarray::Array2::from_shape_vec((120, 77), image).unwrap(), Compression::None).unwrap();
    doc.set_array("counts", ndarray::Array1::from_iter((0..5000i16).map(|i| i % 77)), Compression::None).unwrap();
    doc.set_array("bytes", ndarray::Array1::from_iter((0..3333u32).map(|i| (i % 251) as u8)), Compression::None)
        .unwrap();
    doc.set_array(
        "complex",
        ndarray::Array1::from_iter((0..400).map(|i| num_complex::Complex64::new(i as f64, -1.0))),
        Compression::None,
    )
    .unwrap();
    doc.set_array("empty", ndarray::Array1::<u32>::zeros(0), Compression::None).unwrap();
    doc
}

#[test]
fn the_reference_with_the_plugin_reads_what_rasdf_writes() {
    let dir = common::temp_dir("codecs-written");
    let doc = document();
    let mut files: Vec<PathBuf> = Vec::new();
    for (name, comp, level) in [
        ("zstd.asdf", Compression::Zstd, None),
        ("zstd9.asdf", Compression::Zstd, Some(9)),
        ("blsc.asdf", Compression::Blosc, None),
        ("blsc1.asdf", Compression::Blosc, Some(1)),
    ] {
        let path = dir.join(name);
        let options = WriteOptions::default().compression(Some(comp)).compression_level(level);
        doc.write_to_path(&path, &options).unwrap();
        assert!(sound(&path).iter().all(|c| *c == comp), "{name}");
        files.push(path);
    }
    // Per array: each its own codec.
    let mut mixed = Document::new();
    mixed.set_array("a", ndarray::Array1::from_iter(0..10_000i64), Compression::Zstd).unwrap();
    mixed.set_array("b", ndarray::Array1::from_iter(0..10_000i32), Compression::Blosc).unwrap();
    mixed.set_array("c", ndarray::Array1::from_iter(0..10_000u16), Compression::Lz4).unwrap();
    let path = dir.join("mixed.asdf");
    mixed.write_to_path(&path, &WriteOptions::default()).unwrap();
    assert_eq!(sound(&path), [Compression::Zstd, Compression::Blosc, Compression::Lz4]);
    files.push(path);
    // Rewritten without -c, each array keeps its codec, or the nearest rasdf writes.
    for (file, now) in [
        ("cxx_lz4f.asdf", Compression::Lz4),
        ("abacus_bsc2.asdf", Compression::Blosc),
        ("jl_xz_crc32.asdf", Compression::Bzp2),
        ("jl_zstd.asdf", Compression::Zstd),
        ("abacus_blsc.asdf", Compression::Blosc),
    ] {
        let out = dir.join(format!("kept_{file}"));
        assert_eq!(cli(&["defragment", &s(&common::testdata("codecs").join(file)), "-o", &s(&out)]), 0, "{file}");
        assert!(sound(&out).iter().all(|c| *c == now), "{file}");
        files.push(out);
    }
    // The command line: defragment and convert, -c zstd and -c blsc.
    let source = common::testdata("codecs/plugin_lz4f.asdf");
    for codec in ["zstd", "blsc"] {
        let out = dir.join(format!("defrag_{codec}.asdf"));
        assert_eq!(cli(&["defragment", &s(&source), "-o", &s(&out), "-c", codec]), 0);
        files.push(out);
        let b2nd = common::testdata("b2nd/bytedelta_floats_zstd.b2nd");
        let out = dir.join(format!("convert_{codec}.asdf"));
        assert_eq!(cli(&["convert", &s(&b2nd), &s(&out), "-c", codec]), 0);
        files.push(out);
    }
    // rasdf reads them all to the arrays written.
    let want = md5s(
        &dir.join("zstd.asdf"),
        ["big", "image", "counts", "bytes", "complex", "empty"].map(String::from).into_iter(),
    );
    for name in ["zstd9.asdf", "blsc.asdf", "blsc1.asdf"] {
        assert_eq!(md5s(&dir.join(name), want.keys().cloned()), want, "{name}");
    }
    let args: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let Some(out) = common::run_python("read_codec_files.py", &args) else { return };
    let read: serde_json::Value = serde_json::from_str(&out).unwrap();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let entry = &read[&name];
        let arrays = entry["arrays"].as_object().unwrap_or_else(|| panic!("{name}: {entry}"));
        assert!(!arrays.is_empty(), "{name}");
        let theirs: BTreeMap<String, String> =
            arrays.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string())).collect();
        assert_eq!(md5s(path, theirs.keys().cloned()), theirs, "{name}");
        let labels: Vec<&str> = entry["labels"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
        assert!(labels.iter().all(|l| ["zstd", "blsc", "lz4", "bzp2"].contains(l)), "{name}: {labels:?}");
    }
}

/// The blsc buffer rasdf writes is c-blosc1's: python-blosc decodes each block's stored
/// bytes to the array's, with the header python-blosc reports (typesize, shuffle).
#[test]
fn python_blosc_reads_the_buffers_rasdf_writes() {
    let dir = common::temp_dir("codecs-blosc");
    let doc = document();
    let path = dir.join("blsc.asdf");
    doc.write_to_path(&path, &WriteOptions::default().compression(Some(Compression::Blosc))).unwrap();
    let f = AsdfFile::open(&path).unwrap();
    let limits = Limits::default();
    let mut stored_dir = Vec::new();
    for (n, h) in f.blocks().iter().enumerate() {
        let raw = dir.join(format!("{n}.blosc"));
        std::fs::write(&raw, f.block_stored(n).unwrap()).unwrap();
        let all = f.read_bytes(0..f.len()).unwrap();
        let decoded = h.decode(&all, &limits).unwrap();
        stored_dir.push((raw, common::md5_hex(&decoded)));
    }
    let code = format!(
        "import blosc, hashlib\nfor p in {:?}:\n    b = open(p, 'rb').read()\n    print(hashlib.md5(blosc.decompress(b)).hexdigest(), blosc.get_clib(b))",
        stored_dir.iter().map(|(p, _)| s(p)).collect::<Vec<_>>()
    );
    let Some(out) = common::run_python_code(&code) else { return };
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), stored_dir.len());
    for (line, (_, md5)) in lines.iter().zip(&stored_dir) {
        assert_eq!(line, &format!("{md5} Zstd"));
    }
}

/// The seeds of the fuzz target `codecs` (made by python-zstandard, lz4, python-blosc,
/// python-blosc2 and lzma: see testdata/codecs/README.md) decode to their bytes.
#[test]
fn the_fuzz_seeds_of_each_codec_decode() {
    let want: Vec<u8> = (0..4096u32).map(|i| u8::try_from(i * 7 / 5 % 256).unwrap()).collect();
    let all = [
        Compression::Zlib,
        Compression::Bzp2,
        Compression::Lz4,
        Compression::Zstd,
        Compression::Lz4Frame,
        Compression::Blosc,
        Compression::Blosc2,
        Compression::Xz,
    ];
    let dir = common::testdata("fuzz/codecs");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let data = std::fs::read(e.unwrap().path()).unwrap();
        let codec = all[usize::from(data[0]) % 9];
        let size = u64::from(u16::from_be_bytes([data[1], data[2]])) * 16;
        assert!(rasdf::block::codec::decode(codec, &data[3..], size).unwrap() == want, "{codec}");
        n += 1;
    }
    assert_eq!(n, 7);
}
