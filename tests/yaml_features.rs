//! Hand-made YAML-only files that exercise YAML 1.1 (merge keys, `!!binary`, `!!omap`,
//! explicit core tags, block and quoted scalars, flow collections, anchors and cycles,
//! odd keys, comments, deep nesting, number forms, tag handles, CRLF) read to the tree
//! the reference library reads: `testdata/yaml/dumps.json`, made with the pinned
//! reference by tests/python/make_yaml_fixtures.py, and live through the venv.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use rasdf::AsdfFile;
use serde_json::Value;

fn files() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(common::testdata("yaml"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "asdf"))
        .collect();
    out.sort();
    out
}

fn ours(path: &std::path::Path) -> Value {
    match AsdfFile::open(path) {
        Ok(f) => common::dump::dump_file(&f),
        Err(_) => serde_json::json!({"$error": true}),
    }
}

#[test]
fn yaml_features_read_as_the_reference_reads_them() {
    let committed: BTreeMap<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(common::testdata("yaml/dumps.json")).unwrap()).unwrap();
    let files = files();
    assert_eq!(files.len(), committed.len(), "a file without a dump, or a dump without a file");
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        assert_eq!(ours(path), committed[&name], "{name}");
    }
    // The files the reference refuses (`bad_*`): rasdf refuses them too, saying where.
    let (bad, good): (Vec<&PathBuf>, Vec<&PathBuf>) =
        files.iter().partition(|p| p.file_name().unwrap().to_string_lossy().starts_with("bad_"));
    assert!(bad.len() >= 5);
    for path in bad {
        let e = AsdfFile::open(path).err().unwrap_or_else(|| panic!("{} opened", path.display()));
        assert!(e.to_string().contains("line "), "{}: {e}", path.display());
    }
    let args: Vec<&std::path::Path> = good.iter().map(|p| p.as_path()).collect();
    if let Some(json) = common::run_python("dump_tree.py", &args) {
        let live: BTreeMap<String, Value> = serde_json::from_str(&json).unwrap();
        for path in good {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            assert_eq!(live[&path.to_string_lossy().to_string()], committed[&name], "{name}: regenerate dumps.json");
        }
    }
}
