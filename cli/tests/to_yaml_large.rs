#![allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)] // test data on 64-bit hosts
//! `rasdf to-yaml` of large arrays: the text, now written element by element from the
//! arrays' bytes into the output as it is made, is the text rasdf wrote before (when it
//! made a node an element and the whole text in memory); and an output larger than the
//! reader's limit on trees opens with `--max-tree-bytes`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use rasdf::block::Compression;
use rasdf::ndarray::Element;
use rasdf::write::{Document, WriteOptions};

fn rasdf(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rasdf")).args(args).stdin(Stdio::null()).output().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rasdf-to-yaml-large-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Floats of every kind (the sequence the library's own inline-text test uses).
fn float(i: u32) -> f64 {
    rasdf::samples::float(i)
}

/// A file of 2.2 million elements (over `shrink`): float64 rows (uncompressed), float32
/// in lz4, and int64 and uint64 (some beyond int64) in zlib.
fn input(dir: &Path, shrink: usize) -> PathBuf {
    let mut doc = Document::new();
    doc.set("meta/name", "large").unwrap();
    let f = ndarray::Array2::from_shape_fn((1000 / shrink, 1000), |(r, c)| float((r * 1000 + c) as u32));
    doc.set_array("f", f, Compression::None).unwrap();
    let g = ndarray::Array1::from_shape_fn(1_000_000 / shrink, |i| float(i as u32 * 3 + 1) as f32);
    doc.set_array("g", g, Compression::Lz4).unwrap();
    let i = ndarray::Array3::from_shape_fn((10 / shrink.min(10), 100, 100), |(a, b, c)| {
        (a as i64 - 5) * 1_000_003 * (b * 100 + c) as i64
    });
    doc.set_array("i", i, Compression::Zlib).unwrap();
    let u = ndarray::Array1::from_shape_fn(100_000 / shrink, |k| u64::MAX - (k as u64) * 77_777_777_777);
    doc.set_array("u", u, Compression::Zlib).unwrap();
    let path = dir.join("large.asdf");
    doc.write_to_path(&path, &WriteOptions::default()).unwrap();
    path
}

/// The text from the line of the first array on (what comes before names the library
/// and its version), and its MD5.
fn body_md5(text: &[u8]) -> String {
    let text = std::str::from_utf8(text).unwrap();
    let at = text.find("\nf: ").expect("the first array's line");
    rasdf::block::md5(&text.as_bytes()[at..]).iter().map(|b| format!("{b:02x}")).collect()
}

/// The MD5 of the body of `to-yaml`'s output for [`input`], as rasdf 0.1.0 wrote it by
/// making a node per element and the whole text in memory (35.9 MB of text, the same
/// bytes whole: only the library's version is left out of the check).
const BEFORE_MD5: &str = "3ecdd9d195fa79b3269088c94ef39352";

#[test]
fn a_million_elements_are_written_as_before() {
    let dir = scratch("same");
    let input = input(&dir, 1);
    let out = dir.join("large.yaml");
    let r = rasdf(&["to-yaml", s(&input), "-o", s(&out)]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let text = std::fs::read(&out).unwrap();
    assert_eq!(body_md5(&text), BEFORE_MD5, "{} bytes", text.len());
    // The library's text in memory is the same.
    let file = rasdf::AsdfFile::open(&input).unwrap();
    assert!(rasdf_cli::to_yaml::to_yaml(&file).unwrap().as_bytes() == &text[..]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A to-yaml output over the reader's limit on the tree's size fails to open, with the
/// hint of the option that raises the limit; with the option, it opens and shows its
/// arrays.
#[test]
fn large_outputs_open_with_max_tree_bytes() {
    let dir = scratch("limit");
    let input = input(&dir, 10);
    let out = dir.join("large.yaml");
    let r = rasdf(&["to-yaml", s(&input), "-o", s(&out)]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let len = std::fs::metadata(&out).unwrap().len();
    assert!(len > 3_000_000, "{len} bytes");
    let below = (len / 2).to_string();
    let r = rasdf(&["info", "--max-tree-bytes", &below, s(&out)]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(err.contains("max_tree_bytes") && err.contains("--max-tree-bytes"), "{err}");
    let above = len.to_string();
    let r = rasdf(&["info", "--max-tree-bytes", &above, s(&out)]);
    let shown = String::from_utf8_lossy(&r.stdout);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    for line in ["(100, 1000)", "(100000,)", "(1, 100, 100)", "(10000,)"] {
        assert!(shown.contains(line), "{line} not in:\n{shown}");
    }
    // What it shows is what the input holds.
    let back = rasdf::OpenOptions::new().limits(rasdf::Limits::default().max_tree_bytes(len)).open(&out).unwrap();
    let file = rasdf::AsdfFile::open(&input).unwrap();
    assert!(back.blocks().is_empty());
    for name in ["f", "g", "i", "u"] {
        let (a, b) = (file.array(name).unwrap().read_dyn().unwrap(), back.array(name).unwrap().read_dyn().unwrap());
        assert_eq!(a.shape, b.shape, "{name}");
        let same = a.elements().zip(b.elements()).all(|(x, y)| match (&x, &y) {
            (Element::Float(x), Element::Float(y)) => x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
            _ => x == y,
        });
        assert!(same, "{name}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
