//! `rasdf convert` between ASDF and its neighbours. RawArray: the fixtures of
//! `testdata/ra/` (made by `tests/python/make_ra_fixtures.py`, each `.ra` with the `.npy`
//! of the array it holds) converted to ASDF and read back by the reference library; ASDF
//! files the reference writes converted to `.ra` and read back as `ra.py` reads them;
//! round trips, the command line's exit codes, and damaged `.ra` files. GSD and Blosc2
//! b2nd (`testdata/gsd/`, `testdata/b2nd/`, the latter made by python-blosc2 through
//! `tests/python/make_b2nd_fixtures.py`) the same ways, with gsd.fl and python-blosc2 as
//! the other side.

use rasdf_testkit as common;
mod support;

use support::cli;

use std::path::{Path, PathBuf};

use rasdf::{AsdfFile, Limits};
use rasdf_convert::{self as convert, ConvertOptions, ra::RaFile};

/// The files `testdata/<ext>/*.<ext>`, sorted.
fn files_of(ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(common::root().join("testdata").join(ext))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    out.sort();
    out
}

fn fixtures() -> Vec<PathBuf> {
    let out = files_of("ra");
    assert!(out.len() >= 25, "testdata/ra holds {} .ra files", out.len());
    out
}

fn stem(p: &Path) -> String {
    p.file_stem().unwrap().to_string_lossy().into_owned()
}

/// Checks the lines a check of make_ra_fixtures.py printed: one `ok` per pair.
fn all_ok(out: &str, pairs: usize) {
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), pairs, "{out}");
    let bad: Vec<&&str> = lines.iter().filter(|l| !l.starts_with("ok ")).collect();
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn every_ra_fixture_converts_to_asdf_the_reference_reads() {
    let dir = common::temp_dir("convert-ra");
    let mut args: Vec<PathBuf> = vec![PathBuf::from("check-asdf"), PathBuf::from("data")];
    for ra in fixtures() {
        let out = dir.join(format!("{}.asdf", stem(&ra)));
        convert::convert(&ra, &out, &ConvertOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", ra.display()));
        // rasdf reads its own output to the shape the .ra dimensions give (plus a byte
        // axis for user-defined elements).
        let f = AsdfFile::open(&out).unwrap();
        let a = f.array("data").unwrap().read_dyn().unwrap();
        let bytes = std::fs::read(&ra).unwrap();
        let header = rasdf_convert::ra::RaHeader::parse(&bytes).unwrap();
        let dims: Vec<usize> = header.dims.iter().map(|&d| usize::try_from(d).unwrap()).collect();
        assert_eq!(a.shape[..dims.len()], dims[..], "{}", ra.display());
        args.push(out);
        args.push(ra.with_extension("npy"));
    }
    let refs: Vec<&Path> = args.iter().map(PathBuf::as_path).collect();
    if let Some(out) = common::run_python("make_ra_fixtures.py", &refs) {
        all_ok(&out, (args.len() - 2) / 2);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn plain_ra_files_round_trip_byte_for_byte() {
    let dir = common::temp_dir("convert-ra-round");
    let mut checked = 0;
    for ra in fixtures() {
        let bytes = std::fs::read(&ra).unwrap();
        let header = rasdf_convert::ra::RaHeader::parse(&bytes).unwrap();
        // Written back little-endian, uncompressed, without trailing bytes: only such
        // inputs come back as they were.
        let plain =
            header.flags == 0 && bytes.len() as u64 == header.data_offset() as u64 + header.size && header.eltype != 0;
        let asdf = dir.join(format!("{}.asdf", stem(&ra)));
        let back = dir.join(format!("{}.ra", stem(&ra)));
        for compression in ["none", "zlib"] {
            let options =
                ConvertOptions::default().compression(rasdf::block::Compression::from_name(compression).unwrap());
            convert::convert(&ra, &asdf, &options).unwrap();
            convert::convert(&asdf, &back, &ConvertOptions::default()).unwrap();
            let again = std::fs::read(&back).unwrap();
            if plain {
                assert_eq!(again, bytes, "{} ({compression})", ra.display());
            } else {
                // The same array, normalized.
                let (a, b) = (
                    RaFile::parse(&bytes, &Limits::default()).unwrap(),
                    RaFile::parse(&again, &Limits::default()).unwrap(),
                );
                assert_eq!(b.header.flags & 2, 0);
                assert_eq!(a.shape, b.shape, "{}", ra.display());
                assert!(a.ndarray().elements().eq(b.ndarray().elements()), "{}", ra.display());
            }
        }
        checked += usize::from(plain);
    }
    assert!(checked >= 15, "{checked} plain fixtures");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Has `script` make ASDF files with the reference library (`make-asdf DIR`, which
/// prints their names), converts each to `ext` (then calls `also` with the input, the
/// output and the name), and has `check` compare each pair (`pair` orders them);
/// returns without checking when there is no Python.
fn reference_files_convert(
    script: &str,
    check: &str,
    ext: &str,
    pair: fn(PathBuf, PathBuf) -> [PathBuf; 2],
    also: impl Fn(&Path, &Path, &str),
) {
    let dir = common::temp_dir(&format!("convert-to-{ext}"));
    let Some(names) = common::run_python(script, &[Path::new("make-asdf"), &dir]) else {
        return;
    };
    let mut args = vec![PathBuf::from(check)];
    for name in names.lines() {
        let input = dir.join(format!("{name}.asdf"));
        let out = dir.join(format!("{name}.{ext}"));
        convert::convert(&input, &out, &ConvertOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        also(&input, &out, name);
        args.extend(pair(input, out));
    }
    assert!(args.len() >= 5, "{args:?}");
    let refs: Vec<&Path> = args.iter().map(PathBuf::as_path).collect();
    all_ok(&common::run_python(script, &refs).unwrap(), (args.len() - 1) / 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn asdf_files_of_the_reference_convert_to_ra() {
    let npy = |_: PathBuf, out: PathBuf| {
        let npy = out.with_extension("npy");
        [out, npy]
    };
    reference_files_convert("make_ra_fixtures.py", "check-ra", "ra", npy, |input, out, name| {
        // The only array is found without --array; named, it is the same.
        let named = out.with_file_name(format!("{name}_named.ra"));
        let options = ConvertOptions::default().array(Some("x/y".into()));
        convert::convert(input, &named, &options).unwrap();
        assert_eq!(std::fs::read(out).unwrap(), std::fs::read(&named).unwrap());
    });
}

/// RawArray, GSD and b2nd hold no mask: the masked arrays a conversion writes without
/// theirs are named (the command line warns of each).
#[test]
fn masks_left_behind_are_named() {
    let dir = common::temp_dir("convert-masks");
    let path = dir.join("masked.asdf");
    std::fs::write(
        &path,
        "#ASDF 1.0.0\n#ASDF_STANDARD 1.6.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n\
         frames:\n- a: !core/ndarray-1.1.0 {data: [1, null], datatype: int8}\n\
         \x20 b: !core/ndarray-1.1.0 {data: [1.5, 2.5], datatype: float64, mask: 2.5}\n\
         \x20 c: !core/ndarray-1.1.0 {data: [1, 2], datatype: int8}\n...\n",
    )
    .unwrap();
    let f = AsdfFile::open(&path).unwrap();
    let named = |to, array| convert::masks_left_behind(&f, to, array);
    assert_eq!(named(convert::Format::Gsd, None), ["/frames/0/a", "/frames/0/b"]);
    assert_eq!(named(convert::Format::RawArray, Some("frames/0/b")), ["/frames/0/b"]);
    assert!(named(convert::Format::B2nd, Some("frames/0/c")).is_empty());
    assert!(named(convert::Format::Asdf, None).is_empty());
    // The conversion tells of them as it writes.
    let mut warnings = Vec::new();
    let options = ConvertOptions::default().array(Some("frames/0/b".into()));
    convert::convert_with_warnings(&path, &dir.join("b.ra"), &options, &mut |w| warnings.push(w)).unwrap();
    assert_eq!(warnings, ["/frames/0/b: the mask is not written (RawArray holds none)"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn command_line_exit_codes() {
    let dir = common::temp_dir("convert-cli");
    let ra = common::root().join("testdata/ra/cube_f8.ra");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let asdf = dir.join("cube.asdf");
    assert_eq!(cli(&["convert", &s(&ra), &s(&asdf), "--array", "a/b", "-c", "lz4"]), 0);
    let f = AsdfFile::open(&asdf).unwrap();
    assert_eq!(f.array("a/b").unwrap().read_dyn().unwrap().shape, vec![2, 3, 4]);
    assert_eq!(f.blocks()[0].compression, rasdf::block::Compression::Lz4);
    // Back to .ra: the only array is found.
    assert_eq!(cli(&["convert", &s(&asdf), &s(&dir.join("cube.ra"))]), 0);
    assert_eq!(std::fs::read(dir.join("cube.ra")).unwrap(), std::fs::read(&ra).unwrap());
    // Usage: an output extension that names no format, no input, a bad flag.
    assert_eq!(cli(&["convert", &s(&ra), &s(&dir.join("cube.txt"))]), 2);
    // Standard output has no extension to tell the format by: said so, by that name.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_rasdf")).args(["convert", &s(&ra), "-"]).output().unwrap();
    let said = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{said}");
    assert!(said.contains("standard output: the output's extension names no format"), "{said}");
    assert!(o.stdout.is_empty());
    assert_eq!(cli(&["convert", &s(&ra)]), 2);
    assert_eq!(cli(&["convert", &s(&ra), &s(&asdf), "-c", "xz"]), 2);
    // Several arrays and no --array: a usage error that lists them.
    let two = common::root().join("testdata/example.asdf");
    assert_eq!(cli(&["convert", &s(&two), &s(&dir.join("x.ra"))]), 2);
    assert!(!dir.join("x.ra").exists());
    assert_eq!(cli(&["convert", &s(&two), &s(&dir.join("x.ra")), "--array", "sci/data"]), 0);
    let x = RaFile::parse(&std::fs::read(dir.join("x.ra")).unwrap(), &Limits::default())
        .unwrap()
        .ndarray()
        .to_array::<f32>()
        .unwrap();
    let e = AsdfFile::open(&two).unwrap();
    assert_eq!(x, e.array("sci/data").unwrap().read::<f32>().unwrap().to_owned());
    // A damaged input: exit 1, and the output is not made.
    let bad = dir.join("bad.ra");
    let mut bytes = std::fs::read(&ra).unwrap();
    bytes.truncate(bytes.len() - 1);
    std::fs::write(&bad, &bytes).unwrap();
    assert_eq!(cli(&["convert", &s(&bad), &s(&dir.join("bad.asdf"))]), 1);
    assert!(!dir.join("bad.asdf").exists());
    // ASDF to ASDF is not a conversion.
    assert_eq!(cli(&["convert", &s(&asdf), &s(&dir.join("again.asdf"))]), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn damaged_ra_files_give_errors_not_panics() {
    let limits = Limits::default();
    for name in ["cube_f8", "c_lz4_u1", "julia_leb128_i4", "user_records", "big_endian_c16"] {
        let bytes = std::fs::read(common::root().join(format!("testdata/ra/{name}.ra"))).unwrap();
        // Every prefix.
        for n in 0..bytes.len() {
            let _ = RaFile::parse(&bytes[..n], &limits).map(|f| f.ndarray().elements().count());
        }
        // Every header word set to a few hostile values.
        for w in 0..(48 + 8 * 3).min(bytes.len()) / 8 {
            for v in [0u64, 1, 2, 3, 7, 255, 1 << 31, 1 << 40, u64::MAX] {
                let mut b = bytes.clone();
                b[8 * w..8 * w + 8].copy_from_slice(&v.to_le_bytes());
                if let Ok(f) = RaFile::parse(&b, &limits) {
                    let _ = f.ndarray().elements().count();
                }
            }
        }
        // Every byte of the data flipped.
        for i in 48..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0xa5;
            let _ = RaFile::parse(&b, &limits).map(|f| f.ndarray().elements().count());
        }
    }
}

fn gsd_fixtures() -> Vec<PathBuf> {
    let out = files_of("gsd");
    assert_eq!(out.len(), 3, "{out:?}");
    out
}

/// A GSD file's chunks as (frame, name, type, N, M, bytes).
fn gsd_chunks(bytes: &[u8]) -> Vec<(u64, String, u8, u64, u32, Vec<u8>)> {
    let g = rasdf_convert::gsd::GsdFile::parse(bytes).unwrap();
    g.chunks.into_iter().map(|c| (c.frame, c.name, c.type_id, c.n, c.m, c.data.to_vec())).collect()
}

#[test]
fn gsd_files_convert_to_asdf_the_reference_reads_as_gsd_reads_them() {
    let dir = common::temp_dir("convert-gsd");
    let mut args = vec![PathBuf::from("check-asdf")];
    for g in gsd_fixtures() {
        let out = dir.join(format!("{}.asdf", stem(&g)));
        convert::convert(&g, &out, &ConvertOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", g.display()));
        let f = AsdfFile::open(&out).unwrap();
        let frames = f.get("frames").unwrap().items().unwrap().len();
        let raw = std::fs::read(&g).unwrap();
        assert_eq!(frames as u64, rasdf_convert::gsd::GsdFile::parse(&raw).unwrap().frames);
        // And back: the same chunks, whatever the layout (gsd.fl writes them in its own).
        let back = dir.join(format!("{}.gsd", stem(&g)));
        convert::convert(&out, &back, &ConvertOptions::default()).unwrap();
        let (a, b) = (std::fs::read(&g).unwrap(), std::fs::read(&back).unwrap());
        let mut theirs = gsd_chunks(&a);
        theirs.sort();
        let mut ours = gsd_chunks(&b);
        ours.sort();
        assert_eq!(ours, theirs, "{}", g.display());
        args.push(g);
        args.push(out);
    }
    let refs: Vec<&Path> = args.iter().map(PathBuf::as_path).collect();
    if let Some(out) = common::run_python("make_gsd_fixtures.py", &refs) {
        all_ok(&out, (args.len() - 1) / 2);
    }
    // Compressed blocks hold the same.
    let g = common::root().join("testdata/gsd/hoomd.gsd");
    let z = dir.join("hoomd_zlib.asdf");
    let options = ConvertOptions::default().compression(rasdf::block::Compression::Zlib);
    convert::convert(&g, &z, &options).unwrap();
    let f = AsdfFile::open(&z).unwrap();
    assert!(f.blocks().iter().all(|b| b.compression == rasdf::block::Compression::Zlib));
    let plain = AsdfFile::open(dir.join("hoomd.asdf")).unwrap();
    let arrays = |f: &AsdfFile| -> Vec<String> {
        f.arrays().map(|a| format!("{:?}", a.read_dyn().unwrap().elements().collect::<Vec<_>>())).collect()
    };
    assert!(arrays(&f).len() > 10);
    assert_eq!(arrays(&f), arrays(&plain));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn asdf_files_of_the_reference_convert_to_gsd() {
    reference_files_convert("make_gsd_fixtures.py", "check-gsd", "gsd", |a, g| [a, g], |_, _, _| {});
}

#[test]
fn asdf_trees_gsd_cannot_hold_are_refused() {
    let dir = common::temp_dir("convert-gsd-refused");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    // No frames: a usage error.
    let example = common::root().join("testdata/example.asdf");
    assert_eq!(cli(&["convert", &s(&example), &s(&dir.join("x.gsd"))]), 2);
    // A 3-D array, a complex array, a frame that is not a mapping: errors naming the path.
    for (yaml, why) in [
        (
            "frames:\n- {a: !core/ndarray-1.1.0 {data: [[[1]]], datatype: int8, shape: [1, 1, 1]}}\n",
            "1 or 2 dimensions",
        ),
        ("frames:\n- {a: !core/ndarray-1.1.0 {data: [1], datatype: complex64, shape: [1]}}\n", "no complex64"),
        ("frames:\n- [1, 2]\n", "must be a mapping"),
        ("frames:\n- {a: 3}\n", "array or text"),
        ("gsd: {schema_version: [1]}\nframes: []\n", "schema_version"),
    ] {
        let p = dir.join("in.asdf");
        std::fs::write(&p, format!("#ASDF 1.0.0\n#ASDF_STANDARD 1.6.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n{yaml}...\n"))
            .unwrap();
        let f = AsdfFile::open(&p).unwrap();
        let e = convert::asdf_to_gsd(&f).unwrap_err().to_string();
        assert!(e.contains(why), "{yaml}: {e}");
        assert_eq!(cli(&["convert", &s(&p), &s(&dir.join("x.gsd"))]), 1);
        assert!(!dir.join("x.gsd").exists());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn damaged_gsd_files_give_errors_not_panics() {
    for g in gsd_fixtures() {
        let bytes = std::fs::read(&g).unwrap();
        let touch = |b: &[u8]| {
            if let Ok(f) = rasdf_convert::gsd::GsdFile::parse(b) {
                let _ = convert::gsd_to_asdf(&f, rasdf::block::Compression::None)
                    .map(|d| d.write(&mut std::io::Cursor::new(Vec::new()), None, &Default::default()));
            }
        };
        for n in (0..bytes.len()).step_by(7) {
            touch(&bytes[..n]);
        }
        for w in 1..6 {
            for v in [0u64, 1, 31, 32, 255, 4096, 1 << 31, 1 << 40, u64::MAX] {
                let mut b = bytes.clone();
                b[8 * w..8 * w + 8].copy_from_slice(&v.to_le_bytes());
                touch(&b);
            }
        }
        for i in (256..bytes.len()).step_by(3) {
            let mut b = bytes.clone();
            b[i] ^= 0x5a;
            touch(&b);
        }
    }
    // Errors say what and where.
    let bytes = std::fs::read(common::root().join("testdata/gsd/every_type.gsd")).unwrap();
    let mut b = bytes.clone();
    b[256 + 30] = 99; // the first entry's type
    let e = rasdf_convert::gsd::GsdFile::parse(&b).unwrap_err().to_string();
    assert!(e.contains("index entry 0 at byte 256: unknown type 99"), "{e}");
    let mut b = bytes.clone();
    b[256 + 16..256 + 24].copy_from_slice(&(1u64 << 40).to_le_bytes()); // its location
    let e = rasdf_convert::gsd::GsdFile::parse(&b).unwrap_err().to_string();
    assert!(e.contains("the data of index entry 0 at byte 1099511627776"), "{e}");
    let e = rasdf_convert::gsd::GsdFile::parse(&bytes[..100]).unwrap_err().to_string();
    assert!(e.contains("ends at byte 100"), "{e}");
}

#[test]
fn a_large_strided_big_endian_array_streams_to_ra() {
    // 600 x 700 big-endian float64 in C order: 3.4 MB written column-major and swapped,
    // in several 1 MiB pieces.
    let dir = common::temp_dir("convert-large");
    let (rows, cols) = (600usize, 700usize);
    let data: Vec<u8> = (0..rows * cols).flat_map(|i| (i as f64 * 0.5).to_be_bytes()).collect();
    let mut doc = rasdf::write::Document::new();
    let array = rasdf::write::ArrayBytes {
        datatype: rasdf::ndarray::Datatype::Scalar(rasdf::ndarray::ScalarType::Float64),
        byteorder: rasdf::ndarray::ByteOrder::Big,
        shape: vec![rows, cols],
        strides: vec![8 * cols as isize, 8],
        data: data.into(),
    };
    doc.set_array_bytes("big", array, rasdf::block::Compression::None).unwrap();
    let asdf = dir.join("big.asdf");
    doc.write_to_path(&asdf, &Default::default()).unwrap();
    let ra = dir.join("big.ra");
    convert::convert(&asdf, &ra, &ConvertOptions::default()).unwrap();
    let bytes = std::fs::read(&ra).unwrap();
    let f = RaFile::parse(&bytes, &Limits::default()).unwrap();
    assert_eq!(f.header.dims, vec![rows as u64, cols as u64]);
    assert_eq!(f.header.flags, 0);
    // Column-major: element [i, j] at i + rows * j, little-endian.
    for (i, j) in [(0, 0), (1, 0), (0, 1), (599, 699), (123, 456)] {
        let at = 8 * (i + rows * j);
        let v = f64::from_le_bytes(f.data()[at..at + 8].try_into().unwrap());
        assert_eq!(v, (i * cols + j) as f64 * 0.5, "[{i}, {j}]");
    }
    let a = AsdfFile::open(&asdf).unwrap();
    assert_eq!(f.ndarray().to_array::<f64>().unwrap(), a.array("big").unwrap().read::<f64>().unwrap().to_owned());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_ra_file_of_64_mib_is_written_past_the_page_cache_and_reads_back() {
    // 8 Mi float64 elements, stored Fortran order: written in one direct write.
    let dir = common::temp_dir("convert-direct");
    let (rows, cols) = (1024usize, 8192usize);
    let data: Vec<u8> = (0..rows * cols).flat_map(|i| (i as f64).to_le_bytes()).collect();
    let mut doc = rasdf::write::Document::new();
    let array = rasdf::write::ArrayBytes {
        datatype: rasdf::ndarray::Datatype::Scalar(rasdf::ndarray::ScalarType::Float64),
        byteorder: rasdf::ndarray::ByteOrder::Little,
        shape: vec![rows, cols],
        strides: vec![8, 8 * rows as isize],
        data: data.as_slice().into(),
    };
    doc.set_array_bytes("f", array, rasdf::block::Compression::None).unwrap();
    let asdf = dir.join("f.asdf");
    doc.write_to_path(&asdf, &rasdf::write::WriteOptions::default().checksums(false)).unwrap();
    let ra = dir.join("f.ra");
    convert::convert(&asdf, &ra, &ConvertOptions::default()).unwrap();
    let bytes = std::fs::read(&ra).unwrap();
    let header = rasdf_convert::ra::RaHeader::parse(&bytes).unwrap();
    assert_eq!(header.dims, vec![rows as u64, cols as u64]);
    assert!(bytes[header.data_offset()..] == data[..], "the data differs");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn b2nd_fixtures() -> Vec<PathBuf> {
    let out = files_of("b2nd");
    assert!(out.len() >= 60, "testdata/b2nd holds {} .b2nd files", out.len());
    out
}

fn b2nd_parse(bytes: &[u8]) -> rasdf_convert::b2nd::B2ndFile<'_> {
    rasdf_convert::b2nd::B2ndFile::parse(bytes, &Limits::default()).unwrap()
}

#[test]
fn every_b2nd_fixture_converts_to_asdf_the_reference_reads_as_blosc2_reads_it() {
    let dir = common::temp_dir("convert-b2nd");
    let mut args: Vec<PathBuf> = vec![PathBuf::from("check-asdf"), PathBuf::from("data")];
    for b in b2nd_fixtures() {
        let out = dir.join(format!("{}.asdf", stem(&b)));
        convert::convert(&b, &out, &ConvertOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", b.display()));
        let bytes = std::fs::read(&b).unwrap();
        let f = AsdfFile::open(&out).unwrap();
        assert_eq!(f.array("data").unwrap().read_dyn().unwrap().shape, b2nd_parse(&bytes).shape, "{}", b.display());
        args.push(out);
        args.push(b.with_extension("npy"));
    }
    let refs: Vec<&Path> = args.iter().map(PathBuf::as_path).collect();
    if let Some(out) = common::run_python("make_b2nd_fixtures.py", &refs) {
        all_ok(&out, (args.len() - 2) / 2);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn asdf_files_of_the_reference_convert_to_b2nd_that_blosc2_reads_with_every_codec() {
    let dir = common::temp_dir("convert-to-b2nd");
    let Some(names) = common::run_python("make_b2nd_fixtures.py", &[Path::new("make-asdf"), &dir]) else {
        return;
    };
    let mut args = vec![PathBuf::from("check-b2nd")];
    for name in names.lines() {
        let input = dir.join(format!("{name}.asdf"));
        let mut decoded = Vec::new();
        for codec in ["zstd", "lz4", "zlib", "none"] {
            let out = dir.join(format!("{name}_{codec}.b2nd"));
            let blosc_codec = convert::b2nd::BloscCodec::from_name(codec).unwrap();
            let options = ConvertOptions::default().blosc_codec(blosc_codec);
            convert::convert(&input, &out, &options).unwrap_or_else(|e| panic!("{name} ({codec}): {e}"));
            let bytes = std::fs::read(&out).unwrap();
            let f = b2nd_parse(&bytes);
            decoded.push((f.shape.clone(), f.dtype.clone(), f.decode().unwrap()));
            args.push(out);
            args.push(dir.join(format!("{name}.npy")));
        }
        assert!(decoded.windows(2).all(|w| w[0] == w[1]), "{name}: the codecs disagree");
    }
    assert!(args.len() > 40, "{args:?}");
    let refs: Vec<&Path> = args.iter().map(PathBuf::as_path).collect();
    all_ok(&common::run_python("make_b2nd_fixtures.py", &refs).unwrap(), (args.len() - 1) / 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn b2nd_files_round_trip_through_asdf_to_the_same_items() {
    let dir = common::temp_dir("convert-b2nd-round");
    for b in b2nd_fixtures() {
        let bytes = std::fs::read(&b).unwrap();
        let original = b2nd_parse(&bytes);
        let asdf = dir.join("x.asdf");
        let back = dir.join("x.b2nd");
        for compression in ["none", "lz4"] {
            let options =
                ConvertOptions::default().compression(rasdf::block::Compression::from_name(compression).unwrap());
            convert::convert(&b, &asdf, &options).unwrap();
            convert::convert(&asdf, &back, &ConvertOptions::default()).unwrap();
            let again = std::fs::read(&back).unwrap();
            let f = b2nd_parse(&again);
            assert_eq!(f.shape, original.shape, "{}", b.display());
            assert_eq!(f.datatype().unwrap(), original.datatype().unwrap(), "{}", b.display());
            assert!(f.decode().unwrap() == original.decode().unwrap(), "{} ({compression})", b.display());
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn b2nd_vlmeta_crosses_to_the_asdf_tree_and_back() {
    let dir = common::temp_dir("convert-b2nd-vlmeta");
    let mut args = vec![PathBuf::from("check-vlmeta")];
    for name in ["vlmeta", "vlmeta_types"] {
        let input = common::root().join(format!("testdata/b2nd/{name}.b2nd"));
        let via = dir.join(format!("{name}.asdf"));
        let back = dir.join(format!("{name}.b2nd"));
        convert::convert(&input, &via, &ConvertOptions::default()).unwrap();
        convert::convert(&via, &back, &ConvertOptions::default()).unwrap();
        let (a, b) = (std::fs::read(&input).unwrap(), std::fs::read(&back).unwrap());
        let (a, b) = (b2nd_parse(&a), b2nd_parse(&b));
        assert!(a.vlmeta.len() >= 2 && a.vlmeta.len() == b.vlmeta.len(), "{name}: {:?}", b.vlmeta);
        args.extend([input, via, back]);
    }
    let refs: Vec<&Path> = args.iter().map(PathBuf::as_path).collect();
    if let Some(out) = common::run_python("make_b2nd_fixtures.py", &refs) {
        all_ok(&out, 2);
    }
    // A vlmeta the format cannot hold names its place.
    let asdf = dir.join("long.asdf");
    let mut doc = rasdf::write::Document::new();
    let data = ndarray::arr1(&[1u8, 2]);
    doc.set_array("data", data.view(), rasdf::block::Compression::None).unwrap();
    doc.set(&format!("b2nd/vlmeta/{}", "n".repeat(40)), 1i64).unwrap();
    doc.write_to_path(&asdf, &Default::default()).unwrap();
    let e = convert::convert(&asdf, &dir.join("long.b2nd"), &ConvertOptions::default()).unwrap_err().to_string();
    assert!(e.contains("names are under 32 bytes"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn damaged_b2nd_files_give_errors_not_panics() {
    let touch = |b: &[u8]| {
        if let Ok(f) = rasdf_convert::b2nd::B2ndFile::parse(b, &Limits::default()) {
            let _ = f.datatype();
            let _ = f.decode();
        }
    };
    for name in [
        "default_many_chunks",
        "blosclz_c9_split",
        "lz4hc_c1_nosplit",
        "zlib_c9_split",
        "bitshuffle_lz4",
        "delta_shuffle_blosclz",
        "dict_zstd",
        "special_value",
        "special_zeros",
        "dtype_nested_record",
        "zero_d",
        "empty",
        "vlmeta",
    ] {
        let bytes = std::fs::read(common::root().join(format!("testdata/b2nd/{name}.b2nd"))).unwrap();
        for n in 0..bytes.len() {
            touch(&bytes[..n]);
        }
        // Every byte of the frame's header and end flipped, and every fifth of the chunks,
        // in one of three patterns by its place (a stream size of i32::MIN, found this
        // way, overflowed a negation).
        for i in (0..bytes.len()).filter(|&i| i < 300 || i + 200 > bytes.len() || i % 5 == 0) {
            let mut b = bytes.clone();
            b[i] ^= [0x01, 0xa5, 0x80][i % 3];
            touch(&b);
        }
    }
    // Errors say what and where.
    let bytes = std::fs::read(common::root().join("testdata/b2nd/default_f4.b2nd")).unwrap();
    let e = rasdf_convert::b2nd::B2ndFile::parse(&bytes[..60], &Limits::default()).unwrap_err().to_string();
    assert!(e.contains("fewer than a frame header's 87"), "{e}");
    let e = rasdf_convert::b2nd::B2ndFile::parse(&bytes[..bytes.len() - 1], &Limits::default()).unwrap_err();
    assert!(e.to_string().contains("frame length"), "{e}");
    let mut b = bytes.clone();
    let chunk = b2nd_parse(&bytes).chunks[0];
    let rasdf_convert::b2nd::ChunkAt::Data(at) = chunk else { panic!("{chunk:?}") };
    let bstart = u32::from_le_bytes(b[at + 32..at + 36].try_into().unwrap()) as usize;
    b[at + bstart + 4 + 10] ^= 0xff; // inside the first block's zstd stream
    let e = b2nd_parse(&b).decode().unwrap_err().to_string();
    assert!(e.contains(&format!("chunk 0 at byte {at}: block 0")), "{e}");
    // Converted (its chunk decoded while the ASDF file is written), the same error, and
    // no output left.
    let dir = common::temp_dir("convert-b2nd-damaged");
    let (input, output) = (dir.join("bad.b2nd"), dir.join("bad.asdf"));
    std::fs::write(&input, &b).unwrap();
    assert!(b2nd_parse(&b).chunks_are_slabs());
    let e = convert::convert(&input, &output, &ConvertOptions::default()).unwrap_err().to_string();
    assert!(e.contains(&format!("chunk 0 at byte {at}: block 0")), "{e}");
    assert!(!output.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn b2nd_frames_claiming_huge_arrays_stop_at_the_limits() {
    // 100 x 50 float32 whose shape is patched to 2^31 x 2^31: every chunk would be a
    // special one, so nothing in the file bounds the array but the limits.
    let bytes = std::fs::read(common::root().join("testdata/b2nd/default_f4.b2nd")).unwrap();
    let shape_at = bytes.windows(9).position(|w| w == [0xd3, 0, 0, 0, 0, 0, 0, 0, 100]).unwrap();
    let mut b = bytes.clone();
    for d in 0..2 {
        b[shape_at + 9 * d + 1..shape_at + 9 * d + 9].copy_from_slice(&(1i64 << 31).to_be_bytes());
    }
    let e = rasdf_convert::b2nd::B2ndFile::parse(&b, &Limits::default()).unwrap_err().to_string();
    assert!(e.contains("array elements"), "{e}");
    let tight = Limits::default().max_block_bytes(1000);
    let e = rasdf_convert::b2nd::B2ndFile::parse(&bytes, &tight).unwrap_err().to_string();
    assert!(e.contains("decoded array bytes"), "{e}");
}

#[test]
fn b2nd_command_line_exit_codes() {
    let dir = common::temp_dir("convert-b2nd-cli");
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let b = common::root().join("testdata/b2nd/dtype_record.b2nd");
    let asdf = dir.join("r.asdf");
    assert_eq!(cli(&["convert", &s(&b), &s(&asdf), "--array", "cat/rows"]), 0);
    assert_eq!(AsdfFile::open(&asdf).unwrap().array("cat/rows").unwrap().read_dyn().unwrap().shape, vec![7]);
    for codec in ["zstd", "lz4", "zlib", "none"] {
        assert_eq!(cli(&["convert", &s(&asdf), &s(&dir.join(format!("r_{codec}.b2nd"))), "-c", codec]), 0);
    }
    // A codec of the other format is a usage error, and writes nothing.
    assert_eq!(cli(&["convert", &s(&asdf), &s(&dir.join("bz.b2nd")), "-c", "bzp2"]), 2);
    assert!(!dir.join("bz.b2nd").exists());
    assert_eq!(cli(&["convert", &s(&asdf), &s(&dir.join("bl.b2nd")), "-c", "blsc"]), 2);
    assert!(!dir.join("bl.b2nd").exists());
    // b2nd to RawArray is not a conversion rasdf makes.
    assert_eq!(cli(&["convert", &s(&b), &s(&dir.join("x.ra"))]), 2);
    // A damaged file is an error, and leaves no output.
    let mut bytes = std::fs::read(&b).unwrap();
    bytes.truncate(bytes.len() - 5);
    let bad = dir.join("bad.b2nd");
    std::fs::write(&bad, &bytes).unwrap();
    assert_eq!(cli(&["convert", &s(&bad), &s(&dir.join("bad.asdf"))]), 1);
    assert!(!dir.join("bad.asdf").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// GSD names hold `/` (`particles/position`): as ASDF keys they are named in paths with
/// JSON Pointer's escape (`particles~1position`), in the list `convert` prints and in
/// `--array`; the library's paths read and write them the same way.
/// (Before, such a key could be neither chosen nor found.)
#[test]
fn keys_holding_slashes_are_named_by_escaped_paths() {
    let dir = common::temp_dir("convert-slash");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let mut doc = rasdf::write::Document::new();
    let a = ndarray::Array2::<f32>::from_shape_fn((4, 3), |(i, j)| (i * 3 + j) as f32);
    doc.set_array("frames~1x/particles~1position", a.view(), rasdf::block::Compression::Zlib).unwrap();
    doc.set_array("frames~1x/log~0n", a.view(), rasdf::block::Compression::None).unwrap();
    let asdf = dir.join("slash.asdf");
    doc.write_to_path(&asdf, &rasdf::write::WriteOptions::default()).unwrap();
    let f = AsdfFile::open(&asdf).unwrap();
    let keys: Vec<String> = f.get("frames~1x").unwrap().pairs().unwrap().map(|(k, _)| k.key_text()).collect();
    assert_eq!(keys, ["particles/position", "log~n"]);
    assert_eq!(common::array_paths(&f), ["/frames~1x/particles~1position", "/frames~1x/log~0n"]);
    let ra = dir.join("p.ra");
    assert_eq!(cli(&["convert", &s(&asdf), &s(&ra), "--array", "/frames~1x/particles~1position"]), 0);
    let bytes = std::fs::read(&ra).unwrap();
    let back = RaFile::parse(&bytes, &Limits::default()).unwrap();
    assert_eq!(back.shape, vec![4, 3]);
    assert_eq!(back.ndarray().to_array::<f32>().unwrap(), a.clone().into_dyn());
    assert_eq!(cli(&["convert", &s(&asdf), &s(&dir.join("q.ra")), "--array", "frames~1x/log~0n"]), 0);
    // Unescaped, the path leads nowhere: an error (1), as any path to no node.
    assert_eq!(cli(&["convert", &s(&asdf), &s(&dir.join("r.ra")), "--array", "frames/x/particles/position"]), 1);
    assert!(!dir.join("r.ra").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A large compressed array streams to b2nd (decoded piece by piece on a thread of its
/// own, compressed as it comes) to the items it holds; a block that fails to decode
/// part-way is an error naming it, exit 1, and leaves no output.
#[test]
fn a_large_compressed_array_streams_to_b2nd_and_a_damaged_one_leaves_nothing() {
    let dir = common::temp_dir("b2nd-stream");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    // 17 MiB of float32 in lz4: past the size decoded piece by piece.
    let n = 17 << 18;
    let data: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let mut doc = rasdf::write::Document::new();
    doc.set_array("data", ndarray::ArrayView1::from(&data[..]), rasdf::block::Compression::Lz4).unwrap();
    let asdf = dir.join("big.asdf");
    doc.write_to_path(&asdf, &rasdf::write::WriteOptions::default()).unwrap();
    let out = dir.join("big.b2nd");
    assert_eq!(cli(&["convert", &s(&asdf), &s(&out)]), 0);
    let bytes = std::fs::read(&out).unwrap();
    let b = rasdf_convert::b2nd::B2ndFile::parse(&bytes, &Limits::default()).unwrap();
    let items: Vec<f32> =
        b.decode().unwrap().chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    assert!(items == data);
    // The second lz4 record's stated length made wrong: the file opens, the block
    // fails half-way through.
    let mut damaged = std::fs::read(&asdf).unwrap();
    let h = AsdfFile::open(&asdf).unwrap().blocks()[0].clone();
    let data_at = usize::try_from(h.offset + 6 + u64::from(h.header_size)).unwrap();
    let first = u32::from_be_bytes(damaged[data_at..data_at + 4].try_into().unwrap()) as usize;
    damaged[data_at + 4 + first + 4] ^= 0x40;
    let bad = dir.join("bad.asdf");
    std::fs::write(&bad, &damaged).unwrap();
    let bad_out = dir.join("bad.b2nd");
    assert_eq!(cli(&["convert", &s(&bad), &s(&bad_out)]), 1);
    assert!(!bad_out.exists());
    assert!(std::fs::read_dir(&dir).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().contains("tmp")));
    std::fs::remove_dir_all(&dir).unwrap();
}
