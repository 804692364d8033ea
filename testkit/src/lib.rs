//! What the workspace's tests share, a dev-dependency of each crate whose tests use it
//! (never published): the repository's fixtures ([`testdata`], [`reference_files`],
//! [`asdf_files_in`]), the pinned Python venvs ([`python`], [`run_python`]), strace for
//! fault injection, the canonical JSON dump of a file ([`dump`]), a hand-made lz4 file
//! ([`lz4_file`]) and an HTTP range server ([`range_server`]).
//!
//! ```ignore
//! use rasdf_testkit as common; // or rasdf_testkit::{testdata, dump}
//! let file = rasdf::AsdfFile::open(common::testdata("example.asdf"))?;
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;

pub mod dump;
pub mod lz4_file;
pub mod range_server;

/// The repository's root (the workspace).
pub fn root() -> PathBuf {
    // Each package of the workspace (this one too) is one folder below the root.
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// `testdata/<rel>`.
pub fn testdata(rel: &str) -> PathBuf {
    root().join("testdata").join(rel)
}

/// Every `.asdf` of the ASDF Standard's reference files (vendored under
/// `testdata/reference_files`, with their BSD licence), sorted.
pub fn reference_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let base = testdata("reference_files");
    for v in std::fs::read_dir(&base).unwrap() {
        let v = v.unwrap().path();
        if v.is_dir() {
            for f in std::fs::read_dir(&v).unwrap() {
                let f = f.unwrap().path();
                if f.extension().is_some_and(|e| e == "asdf") {
                    out.push(f);
                }
            }
        }
    }
    out.sort();
    assert!(out.len() >= 100, "the vendored reference files are missing: {} found", out.len());
    out
}

/// The Python of the venv with the pinned reference library (`RASDF_PYTHON`), if set.
/// Tests that need it print why they skip when it is not.
pub fn python() -> Option<PathBuf> {
    let found = std::env::var_os("RASDF_PYTHON").map(PathBuf::from).filter(|p| p.exists());
    if found.is_none() && std::env::var_os("RASDF_REQUIRE_PYTHON").is_some() {
        panic!("RASDF_REQUIRE_PYTHON is set but RASDF_PYTHON does not name a Python");
    }
    found
}

/// The Python of the venv with astropy, gwcs and roman_datamodels (`RASDF_PYTHON_ASTRO`).
pub fn python_astro() -> Option<PathBuf> {
    let found = std::env::var_os("RASDF_PYTHON_ASTRO").map(PathBuf::from).filter(|p| p.exists());
    if found.is_none() && std::env::var_os("RASDF_REQUIRE_PYTHON").is_some() {
        panic!("RASDF_REQUIRE_PYTHON is set but RASDF_PYTHON_ASTRO does not name a Python");
    }
    found
}

/// Runs `tests/python/<script>` with `args` under the venv's Python; returns stdout.
pub fn run_python(script: &str, args: &[&Path]) -> Option<String> {
    let Some(py) = python() else {
        eprintln!("skipped: RASDF_PYTHON is not set (run through .ci/run to cross-test with the reference library)");
        return None;
    };
    let out = Command::new(py).arg(root().join("tests/python").join(script)).args(args).output().expect("run python");
    assert!(out.status.success(), "{script} failed: {}", String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8(out.stdout).unwrap())
}

/// Runs `code` (`python -c`) under the venv's Python; returns stdout.
pub fn run_python_code(code: &str) -> Option<String> {
    let Some(py) = python() else {
        eprintln!("skipped: RASDF_PYTHON is not set (run through .ci/run to cross-test with the reference library)");
        return None;
    };
    let out = Command::new(py).arg("-c").arg(code).output().expect("run python");
    assert!(out.status.success(), "python failed: {}", String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8(out.stdout).unwrap())
}

/// strace, for the tests that kill a process at a chosen system call (its fault
/// injection). Under CI (`CI` set) a missing strace fails the test instead of skipping it.
pub fn strace() -> Option<PathBuf> {
    let found = ["/usr/bin/strace", "/bin/strace"].into_iter().map(PathBuf::from).find(|p| p.exists());
    if found.is_none() {
        assert!(std::env::var_os("CI").is_none(), "strace is missing (.ci/run installs it: apt-get install strace)");
        eprintln!("skipped: strace is not installed (apt-get install strace)");
    }
    found
}

/// Every array's listing ([`rasdf::ArrayRef::info`]), in tree order; the first error.
pub fn listing(file: &rasdf::AsdfFile) -> rasdf::Result<Vec<rasdf::file::ArrayInfo>> {
    file.arrays().map(|a| a.info()).collect()
}

/// Every array's path, in tree order (`/sci/data`).
pub fn array_paths(file: &rasdf::AsdfFile) -> Vec<String> {
    file.arrays().filter_map(|a| a.path().map(str::to_string)).collect()
}

/// MD5 hex.
pub fn md5_hex(data: &[u8]) -> String {
    rasdf::block::md5(data).iter().map(|b| format!("{b:02x}")).collect()
}

/// `testdata/example.asdf`, then the `.asdf` files directly in each of `dirs` (under
/// `testdata/`), each folder's sorted.
pub fn asdf_files_in(dirs: &[&str]) -> Vec<PathBuf> {
    let mut out = vec![testdata("example.asdf")];
    for dir in dirs {
        let mut found: Vec<PathBuf> = std::fs::read_dir(testdata(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "asdf"))
            .collect();
        found.sort();
        out.extend(found);
    }
    out
}

/// A fresh, empty folder for one test: `<tmp>/rasdf-<tag>-<pid>`.
pub fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rasdf-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
