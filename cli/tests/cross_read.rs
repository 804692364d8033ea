#![allow(clippy::cast_possible_truncation)] // test code on 64-bit hosts
//! rasdf reads files the reference library wrote to the same tree and values: compared
//! in the canonical JSON form of tests/python/dump_tree.py, against dumps committed with
//! the fixtures and, through the venv, against the reference library run live.

use rasdf_testkit as common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::dump::diff;
use rasdf::AsdfFile;
use serde_json::Value;

/// The header and directives of the hand-made files below (ASDF Standard 1.6.0).
macro_rules! head {
    () => {
        "#ASDF 1.0.0\n#ASDF_STANDARD 1.6.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n"
    };
}
const HEAD: &str = head!();

/// [`HEAD`] and the start of a core/asdf root.
const ROOT: &str = concat!(head!(), "--- !core/asdf-1.1.0\n");

fn rasdf_dump(path: &Path) -> Value {
    let f = AsdfFile::open(path).unwrap_or_else(|e| panic!("{e}"));
    common::dump::dump_file(&f)
}

/// Panics where rasdf's dump of `path` differs from the reference's, run live (when the
/// venv is there).
fn assert_reads_as_the_reference(path: &Path) {
    if let Some(json) = common::run_python("dump_tree.py", &[path]) {
        let expected: BTreeMap<String, Value> = serde_json::from_str(&json).unwrap();
        let key = path.to_string_lossy().to_string();
        if let Some(d) = diff(&rasdf_dump(path), &expected[&key], &key) {
            panic!("{d}");
        }
    }
}

#[test]
fn arrays_fixtures_match_committed_dumps() {
    let dir = common::testdata("pyasdf/arrays");
    let dumps: BTreeMap<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("dumps.json")).unwrap()).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        if name.ends_with(".asdf") && !name.starts_with("exploded0") {
            assert!(dumps.contains_key(&name), "{name} has no dump: regenerate dumps.json");
        }
    }
    for (name, expected) in &dumps {
        let got = rasdf_dump(&dir.join(name));
        if let Some(d) = diff(&got, expected, name) {
            panic!("{d}");
        }
    }
}

#[test]
fn every_fixture_and_reference_file_reads_as_the_reference_library_live() {
    let mut files: Vec<PathBuf> = common::reference_files();
    for sub in ["pyasdf", "pyasdf/arrays", "astro", "oldasdf", "strings"] {
        for e in std::fs::read_dir(common::testdata(sub)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "asdf") {
                files.push(p);
            }
        }
    }
    files.push(common::testdata("example.asdf"));
    let args: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let Some(json) = common::run_python("dump_tree.py", &args) else { return };
    let expected: BTreeMap<String, Value> = serde_json::from_str(&json).unwrap();
    for path in &files {
        let key = path.to_string_lossy().to_string();
        let got = rasdf_dump(path);
        if let Some(d) = diff(&got, &expected[&key], &key) {
            panic!("{d}");
        }
    }
}

/// `data: N` and `data: true` name a block, as `source` does, and `data: "name"` an
/// external file: the reference reads them so, in the machine's byte order whatever
/// `byteorder` says. Only a list under `data` is inline data.
#[test]
fn data_holding_a_block_number_reads_as_the_reference_reads_it() {
    let dir = common::temp_dir("data-source");
    let text = std::fs::read(common::testdata("example.asdf")).unwrap();
    // Same lengths, so the block index stays right.
    let edited = String::from_utf8_lossy(&text[..1229])
        .replacen("source: 2", "data:   2", 1)
        .replacen("source: 1", "data: true", 1)
        .into_bytes();
    assert_eq!(edited.len(), 1229 + 1, "one byte longer: the index is then stale and rebuilt");
    let path = dir.join("data_source.asdf");
    std::fs::write(&path, [&edited[..], &text[1229..]].concat()).unwrap();
    let f = AsdfFile::open(&path).unwrap();
    // sci/err: big-endian 0.25s read as little-endian.
    let err = f.array("sci/err").unwrap().read::<f64>().unwrap();
    assert!(err.iter().all(|&x| x.to_bits() == 0.25f64.to_bits().swap_bytes()), "{:?}", &err.as_slice().unwrap()[..2]);
    assert_eq!(f.array("sci/dq").unwrap().read_dyn().unwrap().storage, rasdf::ndarray::Storage::Block(1));
    assert_reads_as_the_reference(&path);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Inline forms the reference writes that are easy to misread: a 0-d record written as
/// the record itself (one field holding a subarray looks like a one-item list), and
/// nulls in a string array, which the reference fills with the text "0". Also a 0-d
/// record wrapped in a list, as rasdf's to-yaml wrote it before (the reference cannot
/// read that form; rasdf reads both).
#[test]
fn inline_zero_d_records_and_masked_strings_read_as_the_reference_reads_them() {
    let dir = common::temp_dir("inline-forms");
    let head = ROOT;
    let record = "datatype: [{datatype: int16, name: f0, shape: [2]}]\n  shape: []\n";
    let path = dir.join("inline_forms.asdf");
    std::fs::write(
        &path,
        format!(
            "{head}rec: !core/ndarray-1.1.0\n  data: [[7, 8]]\n  {record}\
             s: !core/ndarray-1.1.0\n  data: [ab, null, c]\n  datatype: [ascii, 2]\n  shape: [3]\n\
             u: !core/ndarray-1.1.0\n  data: [[null, xy]]\n  datatype: [ucs4, 2]\n  shape: [1, 2]\n...\n"
        ),
    )
    .unwrap();
    let wrapped = dir.join("wrapped.asdf");
    std::fs::write(&wrapped, format!("{head}rec: !core/ndarray-1.1.0\n  data: [[[7, 8]]]\n  {record}...\n")).unwrap();
    for p in [&path, &wrapped] {
        let f = AsdfFile::open(p).unwrap();
        let a = f.array("rec").unwrap().read_dyn().unwrap();
        assert!(a.shape.is_empty(), "{}", p.display());
        assert_eq!(a.data(), [7i16, 8].map(i16::to_ne_bytes).concat(), "{}", p.display());
    }
    let f = AsdfFile::open(&path).unwrap();
    assert_eq!(f.array("s").unwrap().read_dyn().unwrap().data(), b"ab0\0c\0");
    assert_reads_as_the_reference(&path);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `core/integer` words given as a plain list (not an ndarray) read as the reference
/// reads them.
#[test]
fn integer_words_as_a_plain_list() {
    let dir = common::temp_dir("integer-words");
    let path = dir.join("words.asdf");
    std::fs::write(
        &path,
        format!(
            "{ROOT}neg: !core/integer-1.1.0 {{sign: '-', words: [1, 2], string: '-8589934593'}}\n\
         big: !core/integer-1.1.0 {{sign: '+', words: [0, 0, 1]}}\n...\n"
        ),
    )
    .unwrap();
    let got = rasdf_dump(&path);
    assert_eq!(got["$map"][0][1]["$int"], "-8589934593");
    assert_eq!(got["$map"][1][1]["$int"], "18446744073709551616");
    assert_reads_as_the_reference(&path);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Strides that overlap read as numpy reads them for the reference: a stride of 0
/// repeats a row (a broadcast), a stride smaller than the item slides a window.
#[test]
fn overlapping_strides_read_as_the_reference_reads_them() {
    let dir = common::temp_dir("overlap");
    let data: Vec<u8> = (0..24u8).collect();
    let h = rasdf::block::BlockHeader {
        offset: 0,
        header_size: 48,
        flags: 0,
        compression: rasdf::block::Compression::None,
        allocated_size: 24,
        used_size: 24,
        data_size: 24,
        checksum: [0; 16],
    };
    let path = dir.join("overlap.asdf");
    let tree = format!(
        "{ROOT}rows: !core/ndarray-1.1.0 {{source: 0, datatype: int32, byteorder: little, shape: [4, 3], strides: [0, 4]}}\n\
        cols: !core/ndarray-1.1.0 {{source: 0, datatype: uint16, byteorder: big, shape: [3, 5], strides: [4, 0], offset: 2}}\n\
        window: !core/ndarray-1.1.0 {{source: 0, datatype: uint32, byteorder: little, shape: [5, 2], strides: [1, 4]}}\n\
        all: !core/ndarray-1.1.0 {{source: 0, datatype: uint8, byteorder: little, shape: [2, 2, 2], strides: [0, 0, 0], offset: 23}}\n...\n"
    );
    std::fs::write(&path, [tree.as_bytes(), &h.to_bytes(), &data].concat()).unwrap();
    let f = AsdfFile::open(&path).unwrap();
    let rows = f.array("rows").unwrap().read::<i32>().unwrap();
    let first: Vec<i32> = (0..3).map(|i| i32::from_le_bytes([4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3])).collect();
    for row in rows.rows() {
        assert_eq!(row.to_vec(), first);
    }
    let window = f.array("window").unwrap().read::<u32>().unwrap();
    assert_eq!(window[[3, 1]], u32::from_le_bytes([7, 8, 9, 10]));
    assert!(f.array("all").unwrap().read::<u8>().unwrap().iter().all(|&x| x == 23));
    assert_reads_as_the_reference(&path);
    // `check` warns of the strides of 0 the schema forbids; a rewrite materialises those
    // views (as the reference's writer does) and keeps overlapping ones.
    let mut report = Vec::new();
    rasdf_cli::check::report(&f, "overlap", &mut report).unwrap();
    let report = String::from_utf8(report).unwrap();
    assert_eq!(report.matches("a stride of 0").count(), 3, "{report}");
    let out = dir.join("rewritten.asdf");
    rasdf_cli::rewrite::rewrite(&path, &out, rasdf::write::ArrayStorage::Internal, None, false).unwrap();
    let g = AsdfFile::open(&out).unwrap();
    for p in ["rows", "cols", "all"] {
        assert!(g.get(&format!("{p}/strides")).is_none(), "{p}");
    }
    let values = |f: &AsdfFile| common::dump::without_library(common::dump::dump_file(f));
    assert_eq!(values(&g), values(&f));
    assert!(g.get("window/strides").is_some());
    assert_reads_as_the_reference(&out);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An empty document is the reference's empty `AsdfObject`, and so is a core/asdf node
/// that is an empty scalar or an empty list; a list of pairs is their mapping (its
/// converter calls Python's `dict` on the node).
#[test]
fn empty_documents_read_as_the_reference_reads_them() {
    let dir = common::temp_dir("empty-documents");
    let head = HEAD;
    let cases = [
        ("bare", "---\n...\n", "{}"),
        ("tilde", "--- ~\n...\n", "{}"),
        ("null", "--- !!null null\n...\n", "{}"),
        ("tagged", "--- !core/asdf-1.1.0\n...\n", "{}"),
        ("tagged_quoted", "--- !core/asdf-1.1.0 ''\n...\n", "{}"),
        ("tagged_list", "--- !core/asdf-1.1.0 []\n...\n", "{}"),
        ("pairs", "--- !core/asdf-1.1.0 [[a, 1], [b, 2], [a, 3]]\n...\n", "{a: 3, b: 2}"),
        ("nested", "--- !core/asdf-1.1.0\nx: !core/asdf-1.1.0\ny: 1\n...\n", "{x: {}, y: 1}"),
    ];
    for (name, doc, shown) in cases {
        let path = dir.join(format!("{name}.asdf"));
        std::fs::write(&path, format!("{head}{doc}")).unwrap();
        let f = AsdfFile::open(&path).unwrap();
        let expected = rasdf::OpenOptions::new().from_bytes(format!("{head}--- {shown}\n...\n").into_bytes()).unwrap();
        assert_eq!(rasdf_dump(&path), common::dump::dump_file(&expected), "{name}");
        assert!(f.tree().root().is_none_or(|r| r.pairs().is_some()), "{name}");
        assert_reads_as_the_reference(&path);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Inline values convert as numpy converts them for the reference (`np.asarray(data,
/// dtype)`): text read as Python's `int()` and `float()` read it, floats cut toward zero,
/// text cut to the string type's length, any non-empty text true; Python ints typed
/// int64, else uint64, the two meeting in float64. Scalar masks of any kind (a boolean,
/// a complex) mask the elements equal to them.
#[test]
fn inline_values_and_scalar_masks_read_as_the_reference_reads_them() {
    let dir = common::temp_dir("inline-values");
    let head = ROOT;
    let body = "\
        ints_from_text: !core/ndarray-1.1.0 {data: ['12', ' -3 ', '+1_000'], datatype: int16}\n\
        cut: !core/ndarray-1.1.0 {data: [2.7, -2.7, true], datatype: int8}\n\
        floats_from_text: !core/ndarray-1.1.0 {data: ['1.5', ' 2 ', 1e5, '-Infinity', '1_0.5'], datatype: float32}\n\
        truth: !core/ndarray-1.1.0 {data: [abc, '', 'False', 0, 2, 0.0], datatype: bool8}\n\
        u64: !core/ndarray-1.1.0 {data: [18446744073709551615, 0], datatype: uint64}\n\
        u64_inferred: !core/ndarray-1.1.0 [9223372036854775808, true]\n\
        mixed_inferred: !core/ndarray-1.1.0 [1, 9223372036854775808]\n\
        text_room: !core/ndarray-1.1.0 [1, 9223372036854775808, abc]\n\
        ascii_cut: !core/ndarray-1.1.0 {data: [abcdef, 123456, 1.5], datatype: [ascii, 3]}\n\
        ucs4_cut: !core/ndarray-1.1.0 {data: [abcdef, true], datatype: [ucs4, 3]}\n\
        mask_true: !core/ndarray-1.1.0 {data: [0, 1, 2], datatype: int32, mask: true}\n\
        mask_complex: !core/ndarray-1.1.0 {data: [!core/complex-1.0.0 1+2j, !core/complex-1.0.0 3j], datatype: complex64, mask: !core/complex-1.0.0 1+2j}\n\
        mask_inf: !core/ndarray-1.1.0 {data: [.inf, 1.0, -.inf], datatype: float64, mask: .inf}\n\
        mask_one: !core/ndarray-1.1.0 {data: [[1, 2], [3, 4]], datatype: int8, mask: !core/ndarray-1.1.0 {data: [true], datatype: bool8}}\n\
        mask_exact: !core/ndarray-1.1.0 {data: [18446744073709551615, 18446744073709551614], datatype: uint64, mask: 18446744073709551615}\n...\n";
    let path = dir.join("values.asdf");
    std::fs::write(&path, format!("{head}{body}")).unwrap();
    let f = AsdfFile::open(&path).unwrap();
    assert_eq!(f.array("ints_from_text").unwrap().read::<i16>().unwrap().as_slice().unwrap(), [12, -3, 1000]);
    assert_eq!(f.array("cut").unwrap().read::<i8>().unwrap().as_slice().unwrap(), [2, -2, 1]);
    assert_eq!(f.array("truth").unwrap().read_dyn().unwrap().data(), [1, 0, 1, 0, 1, 0]);
    assert_eq!(f.array("u64_inferred").unwrap().read::<u64>().unwrap().as_slice().unwrap(), [1 << 63, 1]);
    assert_eq!(f.array("mixed_inferred").unwrap().read::<f64>().unwrap().as_slice().unwrap(), [1.0, 2f64.powi(63)]);
    assert_eq!(f.array("text_room").unwrap().read_dyn().unwrap().datatype.to_string(), "[ucs4, 32]");
    assert_eq!(f.array("ascii_cut").unwrap().read_dyn().unwrap().data(), b"abc1231.5");
    let mask = |p: &str| f.array_at(f.get(p).unwrap()).mask(&f.array(p).unwrap().read_dyn().unwrap()).unwrap();
    assert_eq!(mask("mask_true"), Some(vec![false, true, false]));
    assert_eq!(mask("mask_complex"), Some(vec![true, false]));
    assert_eq!(mask("mask_inf"), Some(vec![true, false, false]));
    assert_eq!(mask("mask_one"), Some(vec![true; 4]));
    assert_eq!(mask("mask_exact"), Some(vec![true, false]));
    assert_reads_as_the_reference(&path);

    // Values numpy refuses (the reference leaves the node unconverted, with an
    // `AsdfConversionWarning`): an error, never a wrapped-around value.
    for (case, message) in [
        ("{data: [300], datatype: int8}", "300 out of bounds for int8"),
        ("{data: [-2.7], datatype: uint8}", "-2 out of bounds for uint8"),
        ("{data: [9223372036854775808], datatype: int64}", "out of bounds for int64"),
        ("{data: [.nan], datatype: int32}", "NaN"),
        ("{data: [.inf], datatype: int32}", "infinity"),
        ("{data: ['1.5'], datatype: int32}", "invalid literal for int()"),
        ("{data: [abc], datatype: float64}", "could not convert string to float"),
        ("[18446744073709551616]", "object array"),
        ("[-1, 18446744073709551616]", "object array"),
        ("{data: [é], datatype: [ascii, 3]}", "not ASCII"),
        ("{data: !core/ndarray-1.1.0 {data: [1, 2]}}", "data must be a list"),
        ("{data: {x: 1}}", "data must be a list"),
    ] {
        let f = rasdf::OpenOptions::new()
            .from_bytes(format!("{head}a: !core/ndarray-1.1.0 {case}\n...\n").into_bytes())
            .unwrap();
        let e = f.array("a").and_then(|a| a.read_dyn()).expect_err(case).to_string();
        assert!(e.contains(message), "{case}: {e}");
    }
    // Masks the reference fails on; inline nulls stay masked under a scalar mask.
    for (case, expected) in [
        ("{data: [1, 2], datatype: int8, mask: abc}", Err("neither an ndarray nor a number")),
        ("{data: [a, b], datatype: [ucs4, 1], mask: 3}", Err("cannot be compared")),
        ("{data: [1, 2, 3], datatype: int8, mask: !core/ndarray-1.1.0 [true, false]}", Err("mask has 2 elements")),
        ("{data: [1, null, 3], datatype: int8, mask: 3}", Ok(Some(vec![false, true, true]))),
        ("{data: [1, 2], datatype: int8, mask: [true, false]}", Ok(None)),
        ("{data: [1, 2], datatype: int8, mask: null}", Ok(None)),
    ] {
        let f = rasdf::OpenOptions::new()
            .from_bytes(format!("{head}a: !core/ndarray-1.1.0 {case}\n...\n").into_bytes())
            .unwrap();
        let got =
            f.array_at(f.get("a").unwrap()).mask(&f.array("a").unwrap().read_dyn().unwrap()).map_err(|e| e.to_string());
        match (got, expected) {
            (Ok(m), Ok(want)) => assert_eq!(m, want, "{case}"),
            (Err(e), Err(message)) => assert!(e.contains(message), "{case}: {e}"),
            (got, _) => panic!("{case}: {got:?}"),
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every `.asdf` file in the folder `RASDF_CROSS_DIR` reads as the reference reads it
/// (run live), and a file the reference cannot read fails in rasdf too (at least in one
/// array: rasdf opens lazily). For files from
/// elsewhere: `RASDF_CROSS_DIR=DIR cargo test --test cross_read -- --ignored`. (The
/// reference reads every file in one process, and some files with damaged block headers
/// make it hang: leave those out. rasdf opens lazily, so a damaged block fails only its
/// arrays, which are then compared as raw nodes, where the reference's open fails.)
#[test]
#[ignore = "needs RASDF_CROSS_DIR, a folder of files to compare with the reference library"]
fn files_of_rasdf_cross_dir_read_as_the_reference_reads_them() {
    let dir = PathBuf::from(std::env::var_os("RASDF_CROSS_DIR").expect("RASDF_CROSS_DIR names a folder"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "asdf"))
        .collect();
    files.sort();
    let mut args: Vec<&Path> = vec![Path::new("--errors")];
    args.extend(files.iter().map(PathBuf::as_path));
    let json = common::run_python("dump_tree.py", &args).expect("RASDF_PYTHON names the venv's Python");
    let expected: BTreeMap<String, Value> = serde_json::from_str(&json).unwrap();
    let mut differences = Vec::new();
    for path in &files {
        let key = path.to_string_lossy().to_string();
        let reference_error = expected[&key].get("$error").and_then(Value::as_str);
        // A node rasdf cannot convert is dumped raw, as the reference leaves one (with a
        // warning); a panic is rasdf failing.
        let ours = std::panic::catch_unwind(|| {
            AsdfFile::open(path).map(|f| common::dump::dump_file_lenient(&f)).map_err(|e| e.to_string())
        })
        .unwrap_or_else(|_| Err("the dump panicked".into()));
        match (ours, reference_error) {
            (Ok(got), None) => differences.extend(diff(&got, &expected[&key], &key)),
            (Err(e), None) => differences.push(format!("{key}: rasdf fails ({e}), the reference reads it")),
            (Ok(_), Some(r)) => {
                // The reference refuses the file when one array fails (an unknown
                // codec, say); rasdf opens lazily and fails that array alone. The
                // strict dump, which reads every array, must fail then.
                let strict = std::panic::catch_unwind(|| AsdfFile::open(path).map(|f| common::dump::dump_file(&f)));
                if matches!(strict, Ok(Ok(_))) {
                    differences.push(format!("{key}: rasdf reads it, the reference fails ({r})"));
                }
            }
            (Err(_), Some(_)) => {}
        }
    }
    println!("{} files compared", files.len());
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

/// The reference converts a core tag only where the file's ASDF Standard lists it
/// (`core/ndarray-1.0.0` up to 1.5.0, 1.1.0 in 1.6.0; the root `core/asdf-1.0.0` in
/// 1.0.0 and 1.1.0...), leaving others raw; `NodeRef::in_standard` says which, and the
/// dump (which follows it) matches the reference run live on every standard, with and
/// without `#ASDF_STANDARD`. rasdf reads each array whatever its version, and `check`
/// warns of the ones the reference would not.
#[test]
fn core_tags_convert_where_the_standard_lists_them() {
    let dir = common::temp_dir("standards");
    let w = |std: &str| if std == "1.6.0" { "ndarray-1.1.0" } else { "ndarray-1.0.0" };
    let mut files = Vec::new();
    for std in ["none", "1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "1.5.0", "1.6.0"] {
        for root in ["asdf-1.0.0", "asdf-1.1.0"] {
            for (tag, body) in [
                ("ndarray-1.0.0", "{data: [1, 2], datatype: int64, shape: [2]}".to_string()),
                ("ndarray-1.1.0", "{data: [1, 2], datatype: int64, shape: [2]}".to_string()),
                ("ndarray-1.2.0", "{data: [1, 2], datatype: int64, shape: [2]}".to_string()),
                ("complex-1.0.0", "1+2j".to_string()),
                (
                    "integer-1.0.0",
                    format!(
                        "{{sign: +, string: '5', words: !core/{} {{data: [5], datatype: uint32, shape: [1]}}}}",
                        w(std)
                    ),
                ),
                (
                    "integer-1.1.0",
                    format!(
                        "{{sign: '-', string: '5', words: !core/{} {{data: [5], datatype: uint32, shape: [1]}}}}",
                        w(std)
                    ),
                ),
                (
                    "integer-1.1.0",
                    "{sign: '-', string: '5', words: !core/ndarray-1.0.0 {data: [5], datatype: uint32, shape: [1]}}"
                        .to_string(),
                ),
                ("externalarray-1.0.0", "{fileuri: a.fits, target: 1, datatype: int8, shape: [2]}".to_string()),
                ("constant-1.0.0", "x".to_string()),
                ("software-1.0.0", "{name: n, version: '1'}".to_string()),
                ("history_entry-1.0.0", "{description: d}".to_string()),
                ("extension_metadata-1.0.0", "{extension_class: c}".to_string()),
                ("subclass_metadata-1.0.0", "{name: s}".to_string()),
            ] {
                let header = if std == "none" { String::new() } else { format!("#ASDF_STANDARD {std}\n") };
                let path = dir.join(format!("{std}_{root}_{tag}_{}.asdf", files.len()));
                let text = format!(
                    "#ASDF 1.0.0\n{header}%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/{root}\nx: !core/{tag} {body}\n...\n"
                );
                std::fs::write(&path, text).unwrap();
                files.push(path);
            }
        }
    }
    // rasdf reads every array, and `check` names the tags the standard leaves out.
    let mut warned = 0;
    for path in &files {
        let f = AsdfFile::open(path).unwrap();
        let x = f.tree().root().unwrap().key("x").unwrap();
        if x.is_asdf_tag("core/ndarray") {
            assert_eq!(f.array("x").unwrap().read::<i64>().unwrap().iter().copied().collect::<Vec<_>>(), [1, 2]);
        }
        let mut report = Vec::new();
        rasdf_cli::check::report(&f, "x", &mut report).unwrap();
        let report = String::from_utf8(report).unwrap();
        let mut off = 0;
        f.tree().walk(|_, n| off += usize::from(n.in_standard(f.header().standard()) == Some(false)));
        assert_eq!(report.matches("is not in ASDF Standard").count(), off, "{report}");
        warned += off;
    }
    assert!(warned > 50, "{warned}");
    // Rewritten, each root, ndarray and integer tag takes the version the output's
    // standard lists (a file without `#ASDF_STANDARD` is written as 1.6.0), so the
    // reference converts what rasdf converts.
    let mut rewritten = Vec::new();
    for path in &files {
        let f = AsdfFile::open(path).unwrap();
        let out = dir.join(format!("out_{}", path.file_name().unwrap().to_string_lossy()));
        let mut doc = rasdf::write::Document::from_file(&f).unwrap();
        // A new array too, tagged for the file's standard.
        let new = ::ndarray::arr1(&[1.5f64, -2.0]);
        doc.set_array("new", new.view(), rasdf::block::Compression::None).unwrap();
        doc.write_to_path(&out, &rasdf::write::WriteOptions::default()).unwrap();
        let g = AsdfFile::open(&out).unwrap();
        let std = g.header().standard().to_string();
        assert_eq!(g.array("new").unwrap().read::<f64>().unwrap().iter().copied().collect::<Vec<_>>(), [1.5, -2.0]);
        g.tree().walk(|p, n| {
            let listed = |t: &str| rasdf::tree::core_tag_version(t, &std).is_some();
            if ["asdf", "ndarray", "integer"].iter().any(|t| n.is_asdf_tag(&format!("core/{t}")) && listed(t)) {
                assert_eq!(n.in_standard(&std), Some(true), "{}: {p} {:?}", out.display(), n.tag());
            }
        });
        rewritten.push(out);
    }
    files.extend(rewritten);
    let args: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    if let Some(json) = common::run_python("dump_tree.py", &args) {
        let expected: BTreeMap<String, Value> = serde_json::from_str(&json).unwrap();
        for path in &files {
            let key = path.to_string_lossy().to_string();
            if let Some(d) = diff(&rasdf_dump(path), &expected[&key], &key) {
                panic!("{d}");
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
