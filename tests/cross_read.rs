#![allow(clippy::cast_possible_truncation)] // test code on 64-bit hosts
//! rasdf reads files the reference library wrote to the same tree and values: compared
//! in the canonical JSON form of tests/python/dump_tree.py, against dumps committed with
//! the fixtures and, through the venv, against the reference library run live.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rasdf::AsdfFile;
use serde_json::Value;

/// The first place two dumps differ, as a path and both values.
fn diff(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                return Some(format!("{path}: {} items != {}", x.len(), y.len()));
            }
            x.iter().zip(y).enumerate().find_map(|(i, (p, q))| diff(p, q, &format!("{path}/{i}")))
        }
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => diff(p, q, &format!("{path}.{k}")),
                _ => Some(format!("{path}: key {k} only on one side")),
            })
        }
        _ if a == b => None,
        _ => Some(format!("{path}: rasdf {a} != reference {b}")),
    }
}

fn rasdf_dump(path: &Path) -> Value {
    let f = AsdfFile::open(path).unwrap_or_else(|e| panic!("{e}"));
    common::dump::dump_file(&f)
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
    for sub in ["pyasdf", "pyasdf/arrays", "astro"] {
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
