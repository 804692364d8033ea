#![allow(clippy::cast_possible_truncation)] // test code on 64-bit hosts
//! Everything rasdf writes reads back (in rasdf and in the reference library) to the
//! values written: rewrites of every fixture with each codec and storage, views only,
//! the builder API, and writes killed part-way.

use rasdf_testkit as common;
mod support;
use support::cli;

use std::path::{Path, PathBuf};
use std::process::Command;

use rasdf::AsdfFile;
use rasdf::block::Compression;
use rasdf::write::{ArrayStorage, Document, WriteOptions};
use rasdf_cli::rewrite::rewrite;
use serde_json::Value;

fn inputs() -> Vec<PathBuf> {
    let mut files = common::reference_files();
    files.retain(|p| !p.file_name().unwrap().to_string_lossy().starts_with("exploded0"));
    for sub in ["pyasdf", "pyasdf/arrays", "astro", "oldasdf", "strings", "yaml"] {
        for e in std::fs::read_dir(common::testdata(sub)).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            // (The YAML the reference refuses, `bad_*`, is not rewritten.)
            if name.ends_with(".asdf") && !name.starts_with("exploded0") && !name.starts_with("bad_") {
                files.push(p);
            }
        }
    }
    files
}

fn dump(path: &Path) -> Value {
    let f = AsdfFile::open(path).unwrap_or_else(|e| panic!("{e}"));
    common::dump::without_library(common::dump::dump_file(&f))
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rasdf-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn rewrites_read_back_the_same_in_rasdf_and_the_reference() {
    let dir = temp_dir("rewrite");
    let modes: [(&str, ArrayStorage, Option<Compression>, bool); 7] = [
        ("plain", ArrayStorage::Internal, Some(Compression::None), false),
        ("zlib", ArrayStorage::Internal, Some(Compression::Zlib), false),
        ("bzp2", ArrayStorage::Internal, Some(Compression::Bzp2), false),
        ("lz4", ArrayStorage::Internal, Some(Compression::Lz4), false),
        ("keep", ArrayStorage::Internal, None, false),
        ("exploded", ArrayStorage::External, None, false),
        ("views", ArrayStorage::Internal, None, true),
    ];
    let mut outputs = Vec::new();
    for (n, input) in inputs().iter().enumerate() {
        let before = dump(input);
        for (mode, storage, comp, views_only) in modes {
            let sub = dir.join(format!("{n}_{mode}"));
            std::fs::create_dir_all(&sub).unwrap();
            let out = sub.join(input.file_name().unwrap());
            rewrite(input, &out, storage, comp, views_only)
                .unwrap_or_else(|e| panic!("{}: {mode}: {e}", input.display()));
            let f = AsdfFile::open(&out).unwrap();
            let mut report = Vec::new();
            let outcome = rasdf_cli::check::report(&f, "out", &mut report).unwrap();
            // A few fixtures break the standard's schemas on purpose (to test the
            // defaults the reference fills in): their rewrites may too, and nothing else.
            let report = String::from_utf8_lossy(&report);
            let input_valid = {
                let i = AsdfFile::open(input).unwrap();
                rasdf::schema::validate(i.tree(), Some(i.header().standard())).is_empty()
            };
            let other_errors = report.lines().any(|l| l.starts_with("error:") && !l.starts_with("error: schema:"));
            assert!(
                outcome == rasdf_cli::Outcome::Ok || (!input_valid && !other_errors),
                "{}: {mode}: {report}",
                input.display()
            );
            if let Some(c) = comp {
                assert!(f.blocks().iter().all(|b| b.compression == c), "{mode}");
            }
            if storage == ArrayStorage::External {
                assert!(f.blocks().is_empty(), "exploded: no blocks in the main file");
            }
            let after = dump(&out);
            assert_eq!(before, after, "{}: {mode}", input.display());
            outputs.push((out, before.clone()));
        }
    }
    let args: Vec<&Path> = outputs.iter().map(|(p, _)| p.as_path()).collect();
    if let Some(json) = common::run_python("dump_tree.py", &args) {
        let reference: std::collections::BTreeMap<String, Value> = serde_json::from_str(&json).unwrap();
        for (out, before) in &outputs {
            let got = common::dump::without_library(reference[&out.to_string_lossy().to_string()].clone());
            assert_eq!(&got, before, "the reference reads {} differently", out.display());
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Inline `null`s cannot be written into a block: an array that had them goes there with
/// a bool8 `mask` array of its own (in the block after its own), as the reference writes
/// a masked array; a scalar `mask` beside them is folded in.
#[test]
fn inline_nulls_written_to_blocks_keep_their_mask() {
    let dir = temp_dir("inline-nulls");
    let input = dir.join("nulls.asdf");
    std::fs::write(
        &input,
        "#ASDF 1.0.0\n#ASDF_STANDARD 1.6.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n\
         a: !core/ndarray-1.1.0 {data: [[1, null], [3, 4]], datatype: int16}\n\
         b: !core/ndarray-1.1.0 {data: [1, null, 3], datatype: float32, mask: 3}\n\
         c: !core/ndarray-1.1.0 {data: [x, null], datatype: [ucs4, 1]}\n...\n",
    )
    .unwrap();
    let before = dump(&input);
    let mut outputs = Vec::new();
    for (mode, storage) in [("blocks", ArrayStorage::Internal), ("exploded", ArrayStorage::External)] {
        let sub = dir.join(mode);
        std::fs::create_dir_all(&sub).unwrap();
        let out = sub.join("nulls.asdf");
        rewrite(&input, &out, storage, Some(Compression::Zlib), false).unwrap();
        let f = AsdfFile::open(&out).unwrap();
        assert!(f.get("a/data").is_none(), "{mode}: not inline");
        assert_eq!(f.get("a/mask/datatype").and_then(|n| n.as_str()), Some("bool8"), "{mode}");
        let mask = f.array_at(f.get("b").unwrap()).mask(&f.array("b").unwrap().read_dyn().unwrap()).unwrap();
        assert_eq!(mask, Some(vec![false, true, true]), "{mode}");
        assert_eq!(dump(&out), before, "{mode}");
        outputs.push(out);
    }
    // The block numbers: each array's, then its mask's.
    let f = AsdfFile::open(&outputs[0]).unwrap();
    let source = |p: &str| f.get(p).and_then(|n| n.as_i64());
    assert_eq!([source("a/source"), source("a/mask/source"), source("b/source")], [Some(0), Some(1), Some(2)]);
    let args: Vec<&Path> = outputs.iter().map(PathBuf::as_path).collect();
    if let Some(json) = common::run_python("dump_tree.py", &args) {
        let reference: std::collections::BTreeMap<String, Value> = serde_json::from_str(&json).unwrap();
        for out in &outputs {
            let got = common::dump::without_library(reference[&out.to_string_lossy().to_string()].clone());
            assert_eq!(got, before, "the reference reads {} differently", out.display());
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn views_only_writes_less() {
    let dir = temp_dir("views");
    let input = common::testdata("pyasdf/arrays/shared_views.asdf");
    let (whole, part) = (dir.join("whole.asdf"), dir.join("part.asdf"));
    rewrite(&input, &whole, ArrayStorage::Internal, None, false).unwrap();
    rewrite(&input, &part, ArrayStorage::Internal, None, true).unwrap();
    let (w, p) = (AsdfFile::open(&whole).unwrap(), AsdfFile::open(&part).unwrap());
    assert_eq!(w.blocks().len(), 2, "views share their base's block");
    assert!(p.blocks().len() > w.blocks().len(), "each view got its own block");
    let slice = p.array("slice").unwrap().read_dyn().unwrap();
    assert_eq!(slice.data().len(), slice.len() * 2, "a view's block holds only the view");
    assert_eq!(dump(&whole), dump(&part));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A document made from a file shares the file's tree until it is changed (a rewrite
/// holds one tree, not two); changed, it writes the change, and the file's tree stays as
/// it was.
#[test]
fn documents_share_the_files_tree_until_changed() {
    let dir = temp_dir("shared-tree");
    let input = common::testdata("pyasdf/arrays/views_masks.asdf");
    let f = AsdfFile::open(&input).unwrap();
    let mut doc = Document::from_file(&f).unwrap();
    assert!(std::ptr::eq(doc.tree(), f.tree()), "from_file copied the tree");
    let unchanged = dir.join("unchanged.asdf");
    doc.write_to_path(&unchanged, &WriteOptions::default()).unwrap();
    assert_eq!(dump(&unchanged), dump(&input));
    let before = f.tree().clone();
    doc.set("added/value", 5).unwrap();
    assert!(!std::ptr::eq(doc.tree(), f.tree()), "a change went into the file's tree");
    assert_eq!(f.tree(), &before);
    let changed = dir.join("changed.asdf");
    doc.write_to_path(&changed, &WriteOptions::default()).unwrap();
    let mut got = dump(&changed);
    let pairs = got["$map"].as_array_mut().unwrap();
    let added = serde_json::json!(["added", {"$map": [["value", {"$int": "5"}]]}]);
    assert_eq!(pairs.iter().filter(|p| **p == added).count(), 1, "{pairs:?}");
    pairs.retain(|p| *p != added);
    assert_eq!(got, dump(&input));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[derive(serde::Serialize)]
struct Meta {
    telescope: String,
    exposure: f64,
    filters: Vec<String>,
    tricky: Vec<String>,
    nothing: Option<i32>,
    /// Floats JSON has no room for, and integer keys: YAML's own types.
    not_a_number: f64,
    limits: [f32; 2],
    by_id: std::collections::BTreeMap<u32, String>,
}

#[test]
fn builder_api_writes_what_the_reference_reads() {
    use ndarray::{Array2, Array3, s};
    let dir = temp_dir("builder");
    let path = dir.join("built.asdf");
    let mut doc = Document::new();
    doc.set("meta/name", "built by rasdf").unwrap();
    doc.set("meta/count", 3i64).unwrap();
    doc.set("meta/big", i64::MAX).unwrap();
    doc.set_serialize(
        "meta/struct",
        &Meta {
            telescope: "JWST".into(),
            exposure: 1e20,
            filters: vec!["F150W".into(), "yes".into()],
            tricky: vec!["1:30".into(), "null".into(), "0x1F".into(), "multi\nline".into(), "é".into(), "".into()],
            nothing: None,
            not_a_number: f64::NAN,
            limits: [f32::NEG_INFINITY, f32::INFINITY],
            by_id: [(7, "seven".to_string()), (2, "two".to_string())].into_iter().collect(),
        },
    )
    .unwrap();
    let image = Array2::from_shape_fn((5, 7), |(i, j)| (i * 7 + j) as f32 * 0.5);
    let cube = Array3::from_shape_fn((2, 3, 4), |(i, j, k)| (i * 100 + j * 10 + k) as i64);
    let transposed = image.t();
    let cut = image.slice(s![1..4, ..;2]);
    doc.set_array("sci/image", image.view(), Compression::Zlib).unwrap();
    doc.set_array("sci/cube", cube.view(), Compression::Lz4).unwrap();
    doc.set_array("sci/transposed", transposed, Compression::None).unwrap();
    doc.set_array("sci/cut", cut, Compression::Bzp2).unwrap();
    doc.write_to_path(&path, &WriteOptions::default()).unwrap();

    let f = AsdfFile::open(&path).unwrap();
    assert_eq!(f.array("sci/image").unwrap().read::<f32>().unwrap(), image.clone().into_dyn());
    assert_eq!(f.array("sci/cube").unwrap().read::<i64>().unwrap(), cube.into_dyn());
    assert_eq!(f.array("sci/transposed").unwrap().read::<f32>().unwrap(), transposed.into_dyn());
    assert_eq!(f.array("sci/cut").unwrap().read::<f32>().unwrap(), cut.into_dyn());
    assert_eq!(f.get("meta/struct/tricky/0").unwrap().as_str(), Some("1:30"));
    assert!(f.get("meta/struct/not_a_number").unwrap().as_f64().is_some_and(f64::is_nan));
    assert_eq!(f.get("meta/struct/limits/1").unwrap().as_f64(), Some(f64::INFINITY));
    let ids: Vec<Option<i64>> = f.get("meta/struct/by_id").unwrap().pairs().unwrap().map(|(k, _)| k.as_i64()).collect();
    assert_eq!(ids, [Some(2), Some(7)]);
    assert_eq!(f.get("asdf_library/name").unwrap().as_str(), Some("rasdf"));
    let ours = common::dump::dump_file(&f);
    if let Some(json) = common::run_python("dump_tree.py", &[path.as_path()]) {
        let reference: std::collections::BTreeMap<String, Value> = serde_json::from_str(&json).unwrap();
        assert_eq!(reference[&path.to_string_lossy().to_string()], ours);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The names in `dir`, hidden ones too.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// `rasdf ARGS` killed (SIGKILL, by strace's fault injection) at the `n`-th call of one of
/// `syscalls` in any of its threads; returns whether it ran to the end instead.
fn run_killed_at(strace: &Path, syscalls: &str, n: usize, args: &[&str]) -> bool {
    let status = Command::new(strace)
        .args(["-f", "-qq", "-o", "/dev/null", "-e", &format!("inject={syscalls}:signal=KILL:when={n}")])
        .arg(env!("CARGO_BIN_EXE_rasdf"))
        .args(args)
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    status.success()
}

/// Whether `name` is a staged file's temporary name, `.rasdf-<16 hex>.tmp`.
fn is_temp_name(name: &str) -> bool {
    name.len() == 27 && name.starts_with(".rasdf-") && name.ends_with(".tmp")
}

/// A write killed at each of its writes, links, renames, syncs and closes leaves the
/// target whole, old or new, and nothing beside it but, killed in the microseconds
/// between naming the finished file and renaming it over the target, its temporary
/// name, which the next write in the folder removes; so does an in-place rewrite.
#[test]
fn killed_writes_never_leave_a_half_written_file_or_a_leftover() {
    let Some(strace) = common::strace() else { return };
    let dir = temp_dir("kill");
    let input = dir.join("input.asdf");
    std::fs::copy(common::testdata("pyasdf/arrays/views_masks.asdf"), &input).unwrap();
    let target = dir.join("target.asdf");
    let old = std::fs::read(common::testdata("example.asdf")).unwrap();
    std::fs::write(&target, &old).unwrap();
    let before = names_in(&dir);
    let (i, t) = (input.to_str().unwrap(), target.to_str().unwrap());
    let mut swept = 0;
    for args in [vec!["defragment", i, "-o", t, "-c", "zlib"], vec!["defragment", t, "--in-place", "-c", "lz4"]] {
        // What the write makes when it is not killed.
        assert!(Command::new(env!("CARGO_BIN_EXE_rasdf")).args(&args).status().unwrap().success());
        let new = std::fs::read(&target).unwrap();
        assert!(new != old);
        std::fs::write(&target, &old).unwrap();
        for syscalls in ["write,pwrite64,writev", "linkat", "rename,renameat,renameat2", "fsync,fdatasync,close"] {
            let mut killed = 0;
            for n in 1.. {
                assert!(n < 400, "{syscalls}: still killed at call {n}");
                let finished = run_killed_at(&strace, syscalls, n, &args);
                let now = std::fs::read(&target).unwrap();
                assert!(
                    now == old || now == new,
                    "{args:?} killed at {syscalls} #{n}: the target is neither old nor new"
                );
                assert!(finished || now == old || syscalls != "write,pwrite64,writev", "killed at a write, yet new");
                let names = names_in(&dir);
                let (temps, rest): (Vec<String>, Vec<String>) = names.into_iter().partition(|n| is_temp_name(n));
                assert_eq!(rest, before, "{args:?} killed at {syscalls} #{n}: files left behind");
                assert!(temps.is_empty() || syscalls.starts_with("rename"), "{syscalls} #{n}: left {temps:?}");
                swept += temps.len();
                assert!(AsdfFile::open(&target).unwrap().verify_blocks().iter().all(Result::is_ok));
                std::fs::write(&target, &old).unwrap();
                if finished {
                    break;
                }
                killed += 1;
            }
            assert!(killed > 0, "{args:?}: never killed at {syscalls}");
            // The writes after the kill removed any temporary name it left.
            assert_eq!(names_in(&dir), before, "{args:?} {syscalls}: a temporary name stayed");
        }
    }
    assert!(swept > 0, "no kill fell between naming and renaming: the window was not tested");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn streamed_rows_read_back_in_rasdf_and_the_reference() {
    use ndarray::Array2;
    let dir = temp_dir("stream");
    let path = dir.join("stream.asdf");
    let mut doc = Document::new();
    doc.set("meta/what", "a stream").unwrap();
    doc.set_array("fixed", ndarray::arr1(&[1i32, 2, 3]).view(), Compression::Zlib).unwrap();
    doc.set_stream("rows", rasdf::ndarray::ScalarType::Float64, &[3]).unwrap();
    // Dropped without finish: nothing is written.
    drop(doc.write_streamed(&path, &WriteOptions::default()).unwrap());
    assert!(!path.exists());
    let mut w = doc.write_streamed(&path, &WriteOptions::default()).unwrap();
    let rows = Array2::from_shape_fn((5, 3), |(i, j)| (i * 3 + j) as f64 / 4.0);
    w.append_array(rows.slice(ndarray::s![..2, ..])).unwrap();
    w.append_array(rows.slice(ndarray::s![2.., ..])).unwrap();
    assert!(w.append(&[0u8; 7]).is_err(), "a partial row is refused");
    assert_eq!(w.rows(), 5);
    w.finish().unwrap();
    let f = AsdfFile::open(&path).unwrap();
    assert!(f.blocks().last().unwrap().is_streamed());
    assert_eq!(f.array("rows").unwrap().read::<f64>().unwrap(), rows.into_dyn());
    assert_eq!(f.array("fixed").unwrap().read::<i32>().unwrap().as_slice().unwrap(), &[1, 2, 3]);
    let ours = common::dump::dump_file(&f);
    if let Some(json) = common::run_python("dump_tree.py", &[path.as_path()]) {
        let reference: std::collections::BTreeMap<String, Value> = serde_json::from_str(&json).unwrap();
        assert_eq!(reference[&path.to_string_lossy().to_string()], ours);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A small deterministic generator (xorshift) for random trees.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn random_string(r: &mut Rng) -> String {
    const WORDS: &[&str] = &[
        "yes",
        "No",
        "on",
        "null",
        "~",
        "1:30",
        "0x1F",
        "017",
        "1e5",
        "2020-01-01",
        "=",
        "<<",
        "-",
        "...",
        "---",
        "a: b",
        "# c",
        "'",
        "\"",
        "\\",
        "\n",
        "\t",
        " ",
        "é",
        "中",
        "😀",
        "x",
        "1.5",
        ".inf",
        "true",
        "[",
        "]",
        "{",
        ",",
        "&a",
        "*a",
        "!t",
        "%",
        "@",
        "`",
        "|",
        ">",
        "?",
        "\u{7f}",
        "\u{85}",
        "\u{2028}",
        "0",
        "-1",
        "+2",
    ];
    (0..r.below(4)).map(|_| WORDS[r.below(WORDS.len() as u64) as usize]).collect()
}

fn random_value(r: &mut Rng, depth: u32) -> serde_json::Value {
    use serde_json::json;
    let kind = if depth > 3 { r.below(6) } else { r.below(8) };
    match kind {
        0 => serde_json::Value::Null,
        1 => json!(r.below(2) == 0),
        2 => json!((r.next() as i64) >> r.below(63)),
        3 => {
            let specials = [0.1, -0.0, 1e20, 1e-7, 3.0, 1.7976931348623157e308, 5e-324, 123456.789];
            json!(if r.below(2) == 0 { specials[r.below(8) as usize] } else { (r.next() as f64) / 7.0 })
        }
        4 | 5 => json!(random_string(r)),
        6 => serde_json::Value::Array((0..r.below(6)).map(|_| random_value(r, depth + 1)).collect()),
        _ => {
            let mut m = serde_json::Map::new();
            for _ in 0..r.below(7) {
                m.insert(random_string(r), random_value(r, depth + 1));
            }
            serde_json::Value::Object(m)
        }
    }
}

/// Random trees written by rasdf read back the same in rasdf and in the reference.
#[test]
fn random_trees_round_trip_through_the_reference() {
    let dir = temp_dir("random");
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut outputs = Vec::new();
    for n in 0..120 {
        let mut doc = Document::new();
        for k in 0..12 {
            let v = random_value(&mut r, 0);
            doc.set_serialize(&format!("value{k}"), &v).unwrap();
        }
        let path = dir.join(format!("random{n}.asdf"));
        doc.write_to_path(&path, &WriteOptions::default()).unwrap();
        let f = AsdfFile::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        outputs.push((path.clone(), common::dump::dump_file(&f)));
    }
    let args: Vec<&Path> = outputs.iter().map(|(p, _)| p.as_path()).collect();
    if let Some(json) = common::run_python("dump_tree.py", &args) {
        let reference: std::collections::BTreeMap<String, Value> = serde_json::from_str(&json).unwrap();
        for (path, ours) in &outputs {
            assert_eq!(&reference[&path.to_string_lossy().to_string()], ours, "{}", path.display());
        }
    }
    let total: u64 = outputs.iter().map(|(p, _)| std::fs::metadata(p).unwrap().len()).sum();
    assert!(total > 120 * 600, "the random trees are not trivial ({total} bytes)");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Arrays written from a chunk iterator (never whole in memory) read back, for each codec.
#[test]
fn chunked_arrays_read_back() {
    let dir = temp_dir("chunks");
    // 9.6 MB of f64: more than one lz4 record, and (on two cores) more than one batch of
    // the parallel compressors of chunked writes.
    let n = 1_200_000usize;
    for comp in [Compression::None, Compression::Zlib, Compression::Bzp2, Compression::Lz4] {
        let path = dir.join(format!("chunks_{comp}.asdf"));
        let mut doc = Document::new();
        let chunks =
            (0..10).map(move |c| (c * n / 10..(c + 1) * n / 10).flat_map(|i| (i as f64).to_ne_bytes()).collect());
        doc.set_array_chunks("big", rasdf::ndarray::ScalarType::Float64, &[n / 1000, 1000], comp, chunks).unwrap();
        doc.set_array("small", ndarray::arr1(&[1u8, 2]).view(), comp).unwrap();
        doc.write_to_path(&path, &WriteOptions::default()).unwrap();
        let f = AsdfFile::open(&path).unwrap();
        let mut report = Vec::new();
        assert_eq!(rasdf_cli::check::report(&f, "x", &mut report).unwrap(), rasdf_cli::Outcome::Ok, "{comp}");
        let big = f.array("big").unwrap().read::<f64>().unwrap();
        assert_eq!(big.shape(), &[n / 1000, 1000]);
        assert!(big.iter().enumerate().all(|(i, &x)| x == i as f64), "{comp}");
        // Written once: the chunks are used up.
        assert!(doc.write_to_path(dir.join("again.asdf"), &WriteOptions::default()).is_err());
        // Compressed chunks go in parallel batches into the very bytes a whole-array
        // write makes.
        if comp != Compression::None {
            let whole = dir.join(format!("whole_{comp}.asdf"));
            let mut d = Document::new();
            let values = ndarray::Array1::from_iter((0..n).map(|i| i as f64)).into_shape_with_order((n / 1000, 1000));
            d.set_array("big", values.unwrap().view(), comp).unwrap();
            d.write_to_path(&whole, &WriteOptions::default()).unwrap();
            let stored = |p: &std::path::Path| {
                let bytes = std::fs::read(p).unwrap();
                let f = AsdfFile::open(p).unwrap();
                let h = f.blocks()[0].clone();
                (h.checksum, h.stored_bytes(&bytes).unwrap().to_vec())
            };
            assert!(stored(&path) == stored(&whole), "{comp}: the chunked block differs from the whole one");
        }
    }
    let mut doc = Document::new();
    doc.set_array_chunks(
        "short",
        rasdf::ndarray::ScalarType::UInt8,
        &[10],
        Compression::None,
        std::iter::once(vec![0u8; 9]),
    )
    .unwrap();
    assert!(doc.write_to_path(dir.join("short.asdf"), &WriteOptions::default()).is_err());
    assert!(!dir.join("short.asdf").exists(), "a failed write leaves no file");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Files written by astropy, gwcs and roman_datamodels, rewritten by rasdf (each codec,
/// exploded), still validate against those packages' schemas and build their objects in
/// the reference library with the extensions installed.
#[test]
fn astronomy_files_rewritten_validate_with_their_extensions() {
    let Some(py) = common::python_astro() else {
        eprintln!("skipped: RASDF_PYTHON_ASTRO is not set (scripts/test.sh makes .venv-astro)");
        return;
    };
    let dir = temp_dir("astro");
    let mut outs = Vec::new();
    for e in std::fs::read_dir(common::testdata("astro")).unwrap() {
        let input = e.unwrap().path();
        if input.extension().is_none_or(|x| x != "asdf") {
            continue;
        }
        for (mode, storage, comp) in [
            ("zlib", ArrayStorage::Internal, Some(Compression::Zlib)),
            ("lz4", ArrayStorage::Internal, Some(Compression::Lz4)),
            ("plain", ArrayStorage::Internal, Some(Compression::None)),
            ("exploded", ArrayStorage::External, None),
        ] {
            let sub = dir.join(mode);
            std::fs::create_dir_all(&sub).unwrap();
            let out = sub.join(input.file_name().unwrap());
            rewrite(&input, &out, storage, comp, false).unwrap();
            outs.push(out);
        }
    }
    assert!(outs.len() >= 12);
    let status = Command::new(py)
        .arg(common::root().join("tests/python/validate_with_extensions.py"))
        .args(&outs)
        .env("PYTHONWARNINGS", "ignore")
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stdout));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Blocks large enough for the parallel codecs (zlib in several pieces, bzp2 in several
/// blocks) go both ways between rasdf and the reference, checksums validated; rasdf's
/// bzp2 block is byte for byte the reference's.
#[test]
fn large_compressed_blocks_cross_the_reference() {
    let dir = temp_dir("bigblocks");
    let names = ["zlib", "bzp2", "lz4", "none"];
    let digests = |f: &AsdfFile| -> std::collections::BTreeMap<String, String> {
        names
            .iter()
            .map(|&n| {
                let a = f.array(n).and_then(|a| a.read::<f32>()).unwrap_or_else(|e| panic!("{n}: {e}"));
                let bytes: Vec<u8> = a.iter().flat_map(|x| x.to_le_bytes()).collect();
                (n.to_string(), common::md5_hex(&bytes))
            })
            .collect()
    };
    // The reference writes, rasdf reads (and verifies every checksum).
    let theirs = dir.join("theirs.asdf");
    if common::run_python("big_blocks.py", &[Path::new("write"), &theirs]).is_none() {
        return;
    }
    let f = AsdfFile::options().verify_checksums(true).open(&theirs).unwrap();
    let expected: std::collections::BTreeMap<String, String> =
        serde_json::from_str(&common::run_python("big_blocks.py", &[Path::new("digest"), &theirs]).unwrap()).unwrap();
    assert_eq!(digests(&f), expected);
    // rasdf writes each codec, the reference reads with checksums validated.
    let ours = dir.join("ours.asdf");
    let mut doc = Document::from_file(&f).unwrap();
    for n in names {
        let a = f.array(n).unwrap().read::<f32>().unwrap();
        doc.set_array(n, a.view(), Compression::from_name(n).unwrap()).unwrap();
    }
    doc.write_to_path(&ours, &WriteOptions::default()).unwrap();
    let back: std::collections::BTreeMap<String, String> =
        serde_json::from_str(&common::run_python("big_blocks.py", &[Path::new("digest"), &ours]).unwrap()).unwrap();
    assert_eq!(back, expected);
    let ours_file = AsdfFile::options().verify_checksums(true).open(&ours).unwrap();
    assert_eq!(digests(&ours_file), expected);
    // rasdf's bzip2, though compressed block by block on several threads, is the very
    // stream the reference wrote: the same length, the same MD5 of the stored bytes.
    let stored = |f: &AsdfFile| {
        let rasdf::ndarray::Storage::Block(n) = f.array("bzp2").unwrap().read_dyn().unwrap().storage else {
            panic!("bzp2 not in a block")
        };
        let b = &f.blocks()[n];
        (b.compression, b.used_size, b.checksum)
    };
    assert_eq!(stored(&ours_file), stored(&f));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Large lz4 blocks are compressed record by record on worker threads while earlier ones are
/// written; documents of 64 MiB and more go past the page cache. Either way the bytes
/// are those of compressing the block at once, and every checksum holds; with padding
/// and a second block after the first, the offsets stay right.
#[test]
fn pipelined_lz4_and_direct_writes_match_one_shot_encoding() {
    let dir = temp_dir("pipelined");
    // 22 MiB of lz4 (6 records, the last short) and 48 MiB uncompressed: 70 MiB in all.
    let lz4: Vec<f32> = (0..(22 << 18) + 1234).map(|i| ((i as f32) * 0.001).sin().round()).collect();
    let plain: Vec<f32> = (0..12 << 20).map(|i| i as f32).collect();
    for pad in [false, true] {
        let mut doc = Document::new();
        doc.set_array("lz4", ndarray::ArrayView1::from(&lz4[..]), Compression::Lz4).unwrap();
        doc.set_array("plain", ndarray::ArrayView1::from(&plain[..]), Compression::None).unwrap();
        let path = dir.join(format!("big{pad}.asdf"));
        let options = WriteOptions::default().pad_blocks(pad);
        doc.write_to_path(&path, &options).unwrap();
        let f = AsdfFile::options().verify_checksums(true).open(&path).unwrap();
        assert!(f.verify_blocks().iter().all(Result::is_ok), "pad {pad}: a checksum fails");
        let raw: Vec<u8> = lz4.iter().flat_map(|x| x.to_le_bytes()).collect();
        let n = f.blocks().iter().position(|b| b.compression == Compression::Lz4).unwrap();
        assert!(
            f.block_stored(n).unwrap() == rasdf::block::codec::encode(Compression::Lz4, &raw).unwrap(),
            "pad {pad}: the lz4 block differs from compressing it at once"
        );
        assert_eq!(f.array("lz4").unwrap().read::<f32>().unwrap().as_slice().unwrap(), &lz4[..]);
        assert_eq!(f.array("plain").unwrap().read::<f32>().unwrap().as_slice().unwrap(), &plain[..]);
        assert!(matches!(f.index_status(), rasdf::index::IndexStatus::Valid), "pad {pad}: {:?}", f.index_status());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Exploded files whose names need escaping in a URI (a space, `%`, `+`, non-ASCII): the
/// sources are written `%XX`-escaped as the reference writes them, so that the reference
/// reads them (an unescaped `%00` would be a NUL to it), and implode reads them back.
/// (The reference itself fails on a main file whose name holds `%` and two hex digits:
/// it unescapes the main file's own path too.)
#[test]
fn exploded_names_that_need_escaping_cross_the_reference() {
    let dir = temp_dir("explode-names");
    let input = common::testdata("example.asdf");
    let exploded = dir.join("out é% +~.asdf");
    rewrite(&input, &exploded, ArrayStorage::External, None, false).unwrap();
    let text = std::fs::read_to_string(&exploded).unwrap();
    assert!(text.contains("source: \"out%20%C3%A9%25%20%2B~0000.asdf\""), "{text}");
    assert!(dir.join("out é% +~0000.asdf").exists());
    let imploded = dir.join("back.asdf");
    rewrite(&exploded, &imploded, ArrayStorage::Internal, None, false).unwrap();
    let before = dump(&input);
    assert_eq!(dump(&exploded), before);
    assert_eq!(dump(&imploded), before);
    if let Some(json) = common::run_python("dump_tree.py", &[exploded.as_path()]) {
        let reference: std::collections::BTreeMap<String, Value> = serde_json::from_str(&json).unwrap();
        let got = common::dump::without_library(reference[&exploded.to_string_lossy().to_string()].clone());
        assert_eq!(got, before, "the reference reads the exploded file differently");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `ArrayRef::stats` reduces large compressed blocks piece by piece, never holding them
/// decoded (zlib ones too when told to stream them from this size), or decodes them whole
/// (zlib by default), and its numbers are those of the whole array to the last bit either
/// way; a damaged block is an error that names it.
#[test]
fn streamed_statistics_equal_the_whole_arrays() {
    use rasdf::ndarray::stats;
    let dir = temp_dir("streamed-stats");
    let path = dir.join("big.asdf");
    let n = (rasdf::file::STREAM_STATS_BYTES / 4) as usize + 12_345;
    let f32s = ndarray::Array2::from_shape_fn((n / 5, 5), |(i, j)| {
        if i % 997 == 3 { f32::NAN } else { ((i * 5 + j) as f32 * 0.37).sin() * 1e3 }
    });
    let i64s = ndarray::Array1::from_shape_fn(n / 2, |i| (i as i64 * 7919) % 100_003 - 50_000);
    let mut doc = Document::new();
    doc.set_array("zlib", f32s.view(), Compression::Zlib).unwrap();
    doc.set_array("lz4", i64s.view(), Compression::Lz4).unwrap();
    doc.set_array("bzp2", f32s.slice(ndarray::s![..1000, ..]), Compression::Bzp2).unwrap();
    doc.write_to_path(&path, &WriteOptions::default()).unwrap();
    let streaming = AsdfFile::options().stream_zlib_stats_from(rasdf::file::STREAM_STATS_BYTES);
    for f in [AsdfFile::open(&path).unwrap(), streaming.open(&path).unwrap()] {
        for name in ["zlib", "lz4", "bzp2"] {
            let node = f.get(name).unwrap();
            let streamed = f.array_at(node).stats().unwrap();
            let a = f.array_at(node).read_dyn().unwrap();
            let whole = stats::stats(&a).unwrap();
            let got = streamed.stats.unwrap();
            assert_eq!((got.count, got.nan), (whole.count, whole.nan), "{name}");
            for (x, y) in [(got.min, whole.min), (got.max, whole.max), (got.sum, whole.sum)] {
                assert_eq!(x.to_bits(), y.to_bits(), "{name}: {got:?} vs {whole:?}");
            }
            assert_eq!((&streamed.datatype, &streamed.shape, &streamed.storage), (&a.datatype, &a.shape, &a.storage));
        }
    }
    // A byte changed inside the zlib block's data: the error says which block.
    let mut bytes = std::fs::read(&path).unwrap();
    let f = AsdfFile::open(&path).unwrap();
    let h = &f.blocks()[0];
    let at = (h.offset + 6 + 48 + h.used_size / 2) as usize;
    bytes[at] ^= 0x55;
    let bad = dir.join("bad.asdf");
    std::fs::write(&bad, &bytes).unwrap();
    for f in [AsdfFile::open(&bad).unwrap(), streaming.open(&bad).unwrap()] {
        let e = f.array_at(f.get("zlib").unwrap()).stats().unwrap_err().to_string();
        assert!(e.contains("block 0"), "{e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Exploded blocks are written as internal ones are, whatever their size: a block of
/// 8 MiB or more (its MD5 computed beside the write) and an lz4 block of several records
/// (compressed record by record) carry their checksums in their own files too, which the
/// reference verifies. (Before, such external blocks were written with no checksum.)
#[test]
fn large_exploded_blocks_carry_their_checksums() {
    let dir = temp_dir("explode-large");
    let n = 3 << 20;
    let data: Vec<f32> = (0..n).map(|i| ((i % 1000) as f32 * 0.37).sin()).collect();
    let mut doc = Document::new();
    doc.set_array("plain", ndarray::ArrayView1::from(&data[..]), Compression::None).unwrap();
    doc.set_array("lz4", ndarray::ArrayView1::from(&data[..]), Compression::Lz4).unwrap();
    let main = dir.join("big.asdf");
    let options = WriteOptions::default().storage(Some(ArrayStorage::External));
    doc.write_to_path(&main, &options).unwrap();
    for (k, name) in ["plain", "lz4"].iter().enumerate() {
        let part = AsdfFile::options().verify_checksums(true).open(dir.join(format!("big{k:04}.asdf"))).unwrap();
        let h = &part.blocks()[0];
        // 12 MiB: past the size whose MD5 is computed beside the write, and three lz4
        // records.
        assert!(h.data_size >= 12 << 20 && (h.used_size >= 8 << 20 || *name == "lz4"), "{name}: {h:?}");
        assert_ne!(h.checksum, [0; 16], "{name}: no checksum");
        assert!(matches!(part.verify_blocks()[..], [Ok(rasdf::block::ChecksumStatus::MatchesStored)]), "{name}");
    }
    let f = AsdfFile::open(&main).unwrap();
    assert_eq!(f.array("lz4").unwrap().read::<f32>().unwrap().as_slice().unwrap(), &data[..]);
    assert_eq!(f.array("plain").unwrap().read::<f32>().unwrap().as_slice().unwrap(), &data[..]);
    if let Some(out) = common::run_python_code(&format!(
        "import asdf, numpy as np\nwith asdf.open({:?}, validate_checksums=True) as af:\n    print(float(np.asarray(af['lz4']).sum()), float(np.asarray(af['plain']).sum()))",
        main.to_string_lossy()
    )) {
        let sum: f64 = data.iter().map(|&x| f64::from(x)).sum();
        let got: Vec<f64> = out.split_whitespace().map(|x| x.parse().unwrap()).collect();
        assert!(got.iter().all(|g| (g - sum).abs() < 1e-3 * sum.abs().max(1.0)), "{out}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An exploded array is read where its own file holds it: mapped when stored
/// uncompressed, decoded once in that file's cache when compressed; not copied per read.
#[test]
fn exploded_arrays_are_read_without_a_copy() {
    let dir = temp_dir("explode-view");
    let data: Vec<f64> = (0..1000).map(f64::from).collect();
    let mut doc = Document::new();
    doc.set_array("plain", ndarray::ArrayView1::from(&data[..]), Compression::None).unwrap();
    doc.set_array("zlib", ndarray::ArrayView1::from(&data[..]), Compression::Zlib).unwrap();
    let main = dir.join("x.asdf");
    doc.write_to_path(&main, &WriteOptions::default().storage(Some(ArrayStorage::External))).unwrap();
    let f = AsdfFile::open(&main).unwrap();
    for name in ["plain", "zlib"] {
        // Two reads lend the same bytes: neither is a copy.
        let (a, b) = (f.array(name).unwrap().read_dyn().unwrap(), f.array(name).unwrap().read_dyn().unwrap());
        assert!(std::ptr::eq(a.data(), b.data()), "{name}: the exploded array is copied per read");
        assert_eq!(f.array(name).unwrap().read::<f64>().unwrap().iter().copied().collect::<Vec<_>>(), data);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Each block keeps its codec through `explode` and `implode`, and through a rewrite
/// that keeps the arrays exploded, as an internal block keeps it through a rewrite.
/// (Before, `implode` and a rewrite of an exploded file stored every block uncompressed.)
#[test]
fn exploded_blocks_keep_their_codecs_both_ways() {
    let dir = temp_dir("explode-codecs");
    let data: Vec<f64> = (0..5000).map(|i| f64::from(i % 97)).collect();
    let mut doc = Document::new();
    let codecs = [
        ("plain", Compression::None),
        ("zlib", Compression::Zlib),
        ("bzp2", Compression::Bzp2),
        ("lz4", Compression::Lz4),
    ];
    for (name, codec) in codecs {
        doc.set_array(name, ndarray::ArrayView1::from(&data[..]), codec).unwrap();
    }
    let whole = dir.join("whole.asdf");
    doc.write_to_path(&whole, &WriteOptions::default()).unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let parts = dir.join("parts");
    std::fs::create_dir(&parts).unwrap();
    assert_eq!(cli(&["explode", &s(&whole), "-o", &s(&parts.join("x.asdf"))]), 0);
    assert_eq!(cli(&["implode", &s(&parts.join("x.asdf")), "-o", &s(&dir.join("back.asdf"))]), 0);
    let codec_of = |f: &AsdfFile, name: &str| match f.array(name).unwrap().read_dyn().unwrap().storage {
        rasdf::ndarray::Storage::Block(n) => f.blocks()[n].compression,
        rasdf::ndarray::Storage::External(uri) => {
            AsdfFile::open(f.path().unwrap().parent().unwrap().join(uri)).unwrap().blocks()[0].compression
        }
        other => panic!("{name}: {other:?}"),
    };
    let exploded = AsdfFile::open(parts.join("x.asdf")).unwrap();
    let back = AsdfFile::open(dir.join("back.asdf")).unwrap();
    // A rewrite that keeps them exploded.
    let again = dir.join("again.asdf");
    Document::from_file(&exploded)
        .unwrap()
        .write_to_path(&again, &WriteOptions::default().storage(Some(ArrayStorage::External)))
        .unwrap();
    let again = AsdfFile::open(&again).unwrap();
    for (name, codec) in codecs {
        for (what, f) in [("exploded", &exploded), ("imploded", &back), ("exploded again", &again)] {
            assert_eq!(codec_of(f, name), codec, "{name} {what}");
            assert_eq!(f.array(name).unwrap().read::<f64>().unwrap().iter().copied().collect::<Vec<_>>(), data);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An exploded write through a symbolic link to another folder puts the main file and
/// its block files beside each other, in the folder the link leads to: the file reads
/// back there, and through the link.
#[cfg(unix)]
#[test]
fn an_exploded_write_through_a_link_keeps_its_parts_beside_it() {
    let dir = temp_dir("explode-link");
    std::fs::create_dir(dir.join("real")).unwrap();
    std::os::unix::fs::symlink("real/x.asdf", dir.join("link.asdf")).unwrap();
    let data: Vec<f64> = (0..100).map(f64::from).collect();
    let mut doc = Document::new();
    doc.set_array("a", ndarray::ArrayView1::from(&data[..]), Compression::None).unwrap();
    doc.write_to_path(dir.join("link.asdf"), &WriteOptions::default().storage(Some(ArrayStorage::External))).unwrap();
    assert!(std::fs::symlink_metadata(dir.join("link.asdf")).unwrap().file_type().is_symlink());
    let mut names: Vec<String> =
        std::fs::read_dir(dir.join("real")).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["x.asdf", "x0000.asdf"]);
    for p in [dir.join("real/x.asdf"), dir.join("link.asdf")] {
        let f = AsdfFile::open(&p).unwrap();
        assert_eq!(f.array("a").unwrap().read::<f64>().unwrap().iter().copied().collect::<Vec<_>>(), data);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An exploded write replaces the main file and its block files together or not at all:
/// the block files are staged with the main file and put in place only once every one is
/// written, so a write that fails (here: a folder where its third block file goes) leaves
/// the old set whole, and no temporary file behind.
#[test]
fn a_failed_exploded_write_replaces_none_of_the_old_files() {
    let dir = temp_dir("explode-all-or-none");
    let main = dir.join("y.asdf");
    let exploded = WriteOptions::default().storage(Some(ArrayStorage::External));
    let write = |arrays: usize, scale: f64| {
        let mut doc = Document::new();
        for n in 0..arrays {
            let data: Vec<f64> = (0..100).map(|i| f64::from(i) * scale).collect();
            doc.set_array(&format!("a{n}"), ndarray::ArrayView1::from(&data[..]), Compression::None).unwrap();
        }
        doc.write_to_path(&main, &exploded)
    };
    write(2, 1.0).unwrap();
    let files = |dir: &Path| {
        let mut names: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
            .collect();
        names.sort();
        names
    };
    let before = files(&dir);
    assert_eq!(before.len(), 3, "y.asdf, y0000.asdf, y0001.asdf");
    // The new set takes the other names (y-0000.asdf...), leaving the old set alone until
    // the new main file is in place.
    std::fs::create_dir(dir.join("y-0002.asdf")).unwrap();
    let e = write(3, 2.0).expect_err("a folder stands where y-0002.asdf goes");
    assert!(e.to_string().contains("y-0002.asdf"), "{e}");
    assert!(files(&dir) == before, "the old files were changed or temporary files left");
    // With the folder gone, the same write replaces all three, and the old set's block
    // files go.
    std::fs::remove_dir(dir.join("y-0002.asdf")).unwrap();
    write(3, 2.0).unwrap();
    let f = AsdfFile::open(&main).unwrap();
    assert_eq!(f.array("a0").unwrap().read::<f64>().unwrap()[1], 2.0);
    let names: Vec<String> = files(&dir).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["y-0000.asdf", "y-0001.asdf", "y-0002.asdf", "y.asdf"]);
    // The next rewrite goes back to the reference's names.
    write(1, 3.0).unwrap();
    let names: Vec<String> = files(&dir).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["y.asdf", "y0000.asdf"]);
    std::fs::remove_dir_all(&dir).unwrap();
}
