//! Hand-made YAML-only files that exercise YAML 1.1 (merge keys, `!!binary`, `!!omap`,
//! explicit core tags, block and quoted scalars, flow collections, anchors and cycles,
//! odd keys, comments, deep nesting, number forms, tag handles, CRLF) read to the tree
//! the reference library reads: `testdata/yaml/dumps.json`, made with the pinned
//! reference by tests/python/make_yaml_fixtures.py, and live through the venv.

use rasdf_testkit as common;

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

/// Seeded random YAML-only files (tests/python/make_random_yaml.py: PyYAML's scalar forms,
/// plain, quoted and as blocks, under no tag, `!`, `!!str` and other core tags; and
/// random nested collections with tags, anchors, aliases and merge keys) read to the
/// reference's tree, and the ones it refuses rasdf refuses too. More with
/// `RASDF_RANDOM_YAML_SEED` and `RASDF_RANDOM_YAML_FILES`.
#[test]
fn random_yaml_reads_as_the_reference_reads_it() {
    let Some(py) = common::python() else {
        eprintln!("skipped: RASDF_PYTHON is not set (the files are compared with the reference library)");
        return;
    };
    let env = |k: &str, d: u64| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    let (seed, count) = (env("RASDF_RANDOM_YAML_SEED", 20_261_124), env("RASDF_RANDOM_YAML_FILES", 1200));
    let dir = common::temp_dir("random-yaml");
    let made = std::process::Command::new(py)
        .arg(common::root().join("tests/python/make_random_yaml.py"))
        .args([dir.to_str().unwrap(), &seed.to_string(), &count.to_string()])
        .status()
        .unwrap();
    assert!(made.success());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert_eq!(files.len() as u64, count);
    let mut args: Vec<&std::path::Path> = vec![std::path::Path::new("--errors")];
    args.extend(files.iter().map(PathBuf::as_path));
    let theirs: BTreeMap<String, Value> =
        serde_json::from_str(&common::run_python("dump_tree.py", &args).unwrap()).unwrap();
    let (mut read, mut bad) = (0, Vec::new());
    for path in &files {
        let key = path.to_string_lossy().to_string();
        let refused = theirs[&key].get("$error").is_some();
        match (AsdfFile::open(path), refused) {
            (Ok(f), false) => {
                read += 1;
                bad.extend(common::dump::diff(&common::dump::dump_file(&f), &theirs[&key], &key));
            }
            (Err(_), true) => {}
            (Ok(_), true) => bad.push(format!("{key}: rasdf reads it, the reference refuses it")),
            (Err(e), false) => bad.push(format!("{key}: rasdf refuses it ({e}), the reference reads it")),
        }
    }
    assert!(read as u64 > count / 3, "only {read} of {count} read");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    std::fs::remove_dir_all(&dir).unwrap();
}
