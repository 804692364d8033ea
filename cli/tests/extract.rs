#![allow(clippy::cast_possible_truncation)] // test code on 64-bit hosts
//! `rasdf extract FILE PATH -o OUT.npy`: every array of the fixtures (every datatype in
//! both byte orders, each codec, inline, exploded, views, 0-d, empty, strings, records,
//! masks) extracted by the `rasdf` binary reads back in numpy as the reference library
//! reads it, byte for byte what `numpy.save` writes (`tests/python/check_npy.py`);
//! `--raw`, `--mask`, `-o -`; blocks decoded piece by piece write what whole ones do;
//! errors (exit codes, messages naming the path) leave no file, nor part of one.

use rasdf_testkit as common;
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use rasdf::AsdfFile;

use support::rasdf_bytes as rasdf;

/// The `rasdf` binary run with `args`: exit code, standard output, standard error.
fn rasdf_binary(args: &[&str]) -> (i32, Vec<u8>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rasdf")).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), out.stdout, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The files of a folder, sorted by name.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// The length of a `.npy` file's header (magic to the `\n` before the data).
fn header_len(npy: &[u8]) -> usize {
    assert_eq!(&npy[..6], b"\x93NUMPY", "not a .npy");
    let len = match npy[6] {
        1 => 10 + usize::from(u16::from_le_bytes([npy[8], npy[9]])),
        _ => 12 + u32::from_le_bytes(npy[8..12].try_into().unwrap()) as usize,
    };
    assert_eq!((len % 64, npy[len - 1]), (0, b'\n'));
    len
}

/// Fixtures with arrays of every kind the reference reads.
fn fixtures() -> Vec<PathBuf> {
    let arrays = [
        "dtypes.asdf",
        "dtypes_zlib.asdf",
        "dtypes_bzp2.asdf",
        "dtypes_lz4.asdf",
        "dtypes_inline.asdf",
        "strings_records.asdf",
        "shared_views.asdf",
        "views_masks.asdf",
        "exploded.asdf",
    ];
    let mut out: Vec<PathBuf> = arrays.iter().map(|f| common::testdata(&format!("pyasdf/arrays/{f}"))).collect();
    out.push(common::testdata("oldasdf/inline.asdf"));
    out.push(common::testdata("example.asdf"));
    out
}

/// The arrays of `f` the reference gives at their path: every ndarray but those inside
/// another tagged object (a masked array's `mask`).
fn array_paths(f: &AsdfFile) -> Vec<String> {
    common::array_paths(f)
        .into_iter()
        .filter(|p| {
            let parent = &p[..p.rfind('/').unwrap_or(0)];
            parent.is_empty() || f.get(parent).is_some_and(|n| n.tag().is_none())
        })
        .collect()
}

#[test]
fn every_array_extracts_as_the_reference_reads_it() {
    let dir = common::temp_dir("extract-cross");
    let mut cases = Vec::new();
    let mut masks = 0;
    for (n, file) in fixtures().iter().enumerate() {
        let f = AsdfFile::open(file).unwrap();
        for (k, path) in array_paths(&f).iter().enumerate() {
            let node = f.get(path).unwrap();
            let array = f.array_at(node).read_dyn().unwrap();
            let masked = f.array_at(node).mask(&array).unwrap().is_some();
            let inline = array.storage == rasdf::ndarray::Storage::Inline;
            masks += usize::from(masked);
            for raw in [false, true] {
                let stem = format!("{n}_{k}{}", if raw { "_raw" } else { "" });
                let out = dir.join(format!("{stem}.npy"));
                let mask = dir.join(format!("{stem}_mask.npy"));
                let mut args = vec!["extract", s(file), path, "-o", s(&out)];
                if masked {
                    args.extend(["--mask", s(&mask)]);
                }
                if raw {
                    args.push("--raw");
                }
                // The binary for the .npy files; in process for the raw bytes.
                let code = match raw {
                    false => {
                        let (code, _, err) = rasdf_binary(&args);
                        assert!(err.is_empty(), "{err}");
                        code
                    }
                    true => i32::from(rasdf(&args).0),
                };
                assert_eq!(code, 0, "{} {path}", file.display());
                cases.push(serde_json::json!({
                    "file": file, "path": path, "out": out, "mask": masked.then_some(&mask), "raw": raw,
                    "inline": inline,
                }));
            }
            // The .npy's data is the raw bytes.
            let npy = std::fs::read(dir.join(format!("{n}_{k}.npy"))).unwrap();
            let raw = std::fs::read(dir.join(format!("{n}_{k}_raw.npy"))).unwrap();
            assert!(npy[header_len(&npy)..] == raw[..], "{} {path}", file.display());
        }
    }
    assert!(cases.len() > 250 && masks >= 3, "{} cases, {masks} masked", cases.len());
    let list = dir.join("cases.json");
    std::fs::write(&list, serde_json::to_vec(&cases).unwrap()).unwrap();
    let Some(out) = common::run_python("check_npy.py", &[list.as_path()]) else { return };
    let bad: Vec<&str> = out.lines().filter(|l| !l.starts_with("ok ")).collect();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert_eq!(out.lines().count(), cases.len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn standard_output_raw_bytes_and_masks() {
    let dir = common::temp_dir("extract-stdout");
    let file = common::testdata("pyasdf/arrays/views_masks.asdf");
    let out = dir.join("slice.npy");
    assert_eq!(rasdf(&["extract", s(&file), "/slice", "-o", s(&out)]).0, 0);
    let written = std::fs::read(&out).unwrap();
    // int16 3 x 4 from a 6 x 8 base: 24 bytes after a 128-byte header.
    assert_eq!((header_len(&written), written.len()), (128, 152));
    assert_eq!(rasdf(&["extract", s(&file), "slice", "-o", "-"]), (0, written.clone()));
    assert_eq!(rasdf(&["extract", s(&file), "slice", "-o", "-", "--raw"]), (0, written[128..].to_vec()));
    // Through the binary's own standard output too.
    let (code, stdout, err) = rasdf_binary(&["extract", s(&file), "slice", "-o", "-"]);
    assert_eq!((code, stdout == written, err.as_str()), (0, true, ""));
    // A masked array: its data to standard output, its mask to a file; raw, a byte each.
    let mask = dir.join("mask.npy");
    let (code, data) = rasdf(&["extract", s(&file), "masked_int", "-o", "-", "--mask", s(&mask)]);
    assert_eq!(code, 0);
    let body: Vec<i64> =
        data[header_len(&data)..].chunks(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(body, [0, 1, 2, 3]);
    let m = std::fs::read(&mask).unwrap();
    assert!(String::from_utf8_lossy(&m).contains("{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }"));
    assert_eq!(&m[header_len(&m)..], [1, 0, 0, 1]);
    let (code, data) = rasdf(&["extract", s(&file), "masked_int", "-o", "-", "--mask", s(&mask), "--raw"]);
    assert_eq!((code, data.len(), std::fs::read(&mask).unwrap()), (0, 32, vec![1, 0, 0, 1]));
    // The mask to standard output, the data to a file.
    let (code, m) = rasdf(&["extract", s(&file), "masked", "-o", s(&out), "--mask", "-"]);
    assert_eq!((code, &m[header_len(&m)..]), (0, &[0u8, 1, 0, 0, 1, 0][..]));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn blocks_decoded_piece_by_piece_write_what_whole_blocks_do() {
    let path = common::testdata("pyasdf/arrays/dtypes_zlib.asdf");
    let whole = AsdfFile::open(&path).unwrap();
    let pieces = AsdfFile::options().stream_zlib_stats_from(0).open(&path).unwrap();
    for p in common::array_paths(&pieces) {
        let once = pieces.array(&p).unwrap().read_once(|_, _| Some(())).unwrap();
        assert!(matches!(once, rasdf::file::ReadOnce::Pieces { .. }), "{p}");
        for raw in [false, true] {
            let mut want = Vec::new();
            rasdf_cli::extract::run(&whole, &p, Path::new("-"), None, raw, &mut want).unwrap();
            let mut got = Vec::new();
            rasdf_cli::extract::run(&pieces, &p, Path::new("-"), None, raw, &mut got).unwrap();
            assert!(got == want, "{p}, raw {raw}");
        }
    }
}

#[test]
fn errors_name_the_path_and_leave_no_file() {
    let dir = common::temp_dir("extract-errors");
    let file = dir.join("in.asdf");
    std::fs::copy(common::testdata("pyasdf/arrays/views_masks.asdf"), &file).unwrap();
    let before = std::fs::read(&file).unwrap();
    let out = dir.join("out.npy");
    let mask = dir.join("mask.npy");
    let f = s(&file);
    // Exit 1: no node, a node that is not an array, --mask of an array with no mask.
    let (code, _, err) = rasdf_binary(&["extract", f, "/no/such", "-o", s(&out)]);
    assert_eq!(code, 1);
    assert!(err.contains("tree path /no/such") && err.contains("no node at"), "{err}");
    let (code, _, err) = rasdf_binary(&["extract", f, "asdf_library", "-o", s(&out)]);
    assert_eq!(code, 1);
    assert!(err.contains("tree path asdf_library: not an ndarray, but a core/software-1.0.0"), "{err}");
    let (code, _, err) = rasdf_binary(&["extract", f, "base", "-o", s(&out), "--mask", s(&mask)]);
    assert_eq!(code, 1);
    assert!(err.contains("tree path base: the array has no mask"), "{err}");
    assert_eq!(rasdf(&["extract", f, "history", "-o", "-"]), (1, Vec::new()));
    // Exit 2: an input that cannot be opened; outputs that cannot go together.
    assert_eq!(rasdf(&["extract", s(&dir.join("missing.asdf")), "base", "-o", s(&out)]).0, 2);
    assert_eq!(rasdf(&["extract", s(&dir), "base", "-o", s(&out)]).0, 2);
    let (code, _, err) = rasdf_binary(&["extract", f, "base", "-o", f]);
    assert_eq!(code, 2);
    assert!(err.contains("is the input file"), "{err}");
    let linked = dir.join("link.asdf");
    std::fs::hard_link(&file, &linked).unwrap();
    assert_eq!(rasdf(&["extract", f, "masked", "-o", s(&out), "--mask", s(&linked)]).0, 2);
    assert_eq!(rasdf(&["extract", f, "masked", "-o", "-", "--mask", "-"]).0, 2);
    let dotted = format!("{}/./out.npy", s(&dir));
    assert_eq!(rasdf(&["extract", f, "masked", "-o", s(&out), "--mask", &dotted]).0, 2);
    // Usage: -o is needed.
    assert_eq!(rasdf(&["extract", f, "base"]).0, 2);
    assert_eq!(std::fs::read(&file).unwrap(), before);
    assert_eq!(listing(&dir), ["in.asdf", "link.asdf"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_damaged_block_leaves_the_old_output_whole() {
    let dir = common::temp_dir("extract-damaged");
    let file = dir.join("in.asdf");
    let mut bytes = std::fs::read(common::testdata("pyasdf/arrays/dtypes_zlib.asdf")).unwrap();
    let blocks = AsdfFile::open(common::testdata("pyasdf/arrays/dtypes_zlib.asdf")).unwrap().blocks().to_vec();
    for b in &blocks {
        let at = (b.data_offset() + b.used_size / 2) as usize;
        bytes[at] ^= 0x5a;
    }
    std::fs::write(&file, &bytes).unwrap();
    let out = dir.join("out.npy");
    std::fs::write(&out, b"old").unwrap();
    for args in [vec!["f8>", "-o", s(&out)], vec!["f8>", "-o", s(&out), "--raw"]] {
        let mut argv = vec!["extract", s(&file)];
        argv.extend(args);
        let (code, _, err) = rasdf_binary(&argv);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("block"), "{err}");
        assert_eq!(std::fs::read(&out).unwrap(), b"old");
        assert_eq!(listing(&dir), ["in.asdf", "out.npy"]);
    }
    // An output that did not exist is not made.
    let fresh = dir.join("fresh.npy");
    assert_eq!(rasdf(&["extract", s(&file), "i4<", "-o", s(&fresh)]).0, 1);
    assert_eq!(listing(&dir), ["in.asdf", "out.npy"]);
    let _ = std::fs::remove_dir_all(&dir);
}
