//! `rasdf edit`: an edit that fits is written in place (blocks untouched), one that
//! does not rewrites the file (blocks byte for byte, the index moved); every failure
//! leaves the file as it was and no file behind; the reference reads what was written.

use rasdf_testkit as common;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `rasdf edit FILE` with `editor` as `$EDITOR` and a temporary folder of its own;
/// returns the exit code and standard error, after checking that nothing was left in
/// that folder.
fn edit(file: &Path, editor: &str) -> (i32, String) {
    let tmp = file.with_extension("tmpdir");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_rasdf"))
        .args(["edit", file.to_str().unwrap()])
        .env_remove("VISUAL")
        .env("EDITOR", editor)
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    let left: Vec<PathBuf> = std::fs::read_dir(&tmp).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    let folder: Vec<String> = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".rasdf-"))
        .collect();
    assert!(folder.is_empty(), "left behind: {folder:?}");
    (o.status.code().unwrap(), String::from_utf8(o.stderr).unwrap())
}

fn copy(dir: &Path, rel: &str) -> PathBuf {
    let to = dir.join(Path::new(rel).file_name().unwrap());
    std::fs::copy(common::testdata(rel), &to).unwrap();
    to
}

fn value(file: &Path, path: &str) -> String {
    let f = rasdf::AsdfFile::open(file).unwrap();
    f.get(path).and_then(|n| n.as_str().map(str::to_owned)).unwrap_or_default()
}

#[test]
fn a_small_edit_is_written_in_place() {
    let dir = common::temp_dir("edit-in-place");
    let f = copy(&dir, "example.asdf");
    let before = std::fs::read(&f).unwrap();
    let first = usize::try_from(rasdf::AsdfFile::open(&f).unwrap().blocks()[0].offset).unwrap();
    let inode = std::fs::metadata(&f).unwrap().ino();
    let (code, err) = edit(&f, "sed -i -e 's/telescope: example/telescope: JWST/'");
    assert_eq!(code, 0, "{err}");
    let after = std::fs::read(&f).unwrap();
    assert_eq!(std::fs::metadata(&f).unwrap().ino(), inode, "rewritten, not in place");
    assert_eq!(after.len(), before.len());
    assert_eq!(after[first..], before[first..], "the blocks changed");
    assert_eq!(value(&f, "/meta/telescope"), "JWST");
    let (code, report) = {
        let mut out = Vec::new();
        let c = rasdf_cli::check::run(&f, &rasdf::OpenOptions::new(), &mut out).unwrap();
        (c, String::from_utf8(out).unwrap())
    };
    assert_eq!(code, rasdf_cli::Outcome::Ok, "{report}");
    reference_reads(&f, "telescope", "JWST");
}

#[test]
fn a_large_edit_rewrites_with_the_blocks_byte_for_byte() {
    let dir = common::temp_dir("edit-rewrite");
    for rel in [
        "example.asdf",
        "pyasdf/arrays/dtypes_zlib.asdf",
        "pyasdf/no_index.asdf",
        "pyasdf/streamed.asdf",
        "pyasdf/stale_index.asdf",
        "pyasdf/padded.asdf",
        "pyasdf/tree_only.asdf",
        "pyasdf/lz4.asdf",
    ] {
        let f = copy(&dir, rel);
        let old = rasdf::AsdfFile::open(&f).unwrap();
        let stored: Vec<Vec<u8>> = (0..old.blocks().len()).map(|n| old.block_stored(n).unwrap().to_vec()).collect();
        let index = old.index_status().clone();
        drop(old);
        let note = "x".repeat(5000);
        // A new top-level key after the root's tag line.
        let editor = format!("sed -i -e '0,/^--- /s/^\\(--- .*\\)$/\\1\\nnote: {note}/'");
        let (code, err) = edit(&f, &editor);
        assert_eq!(code, 0, "{rel}: {err}");
        let new = rasdf::AsdfFile::open(&f).unwrap();
        assert_eq!(new.get("/note").and_then(|n| n.as_str().map(str::len)), Some(5000), "{rel}");
        assert_eq!(new.blocks().len(), stored.len(), "{rel}");
        for (n, s) in stored.iter().enumerate() {
            assert_eq!(new.block_stored(n).unwrap(), &s[..], "{rel}: block {n}");
        }
        // A stale index is written anew, with the blocks' offsets.
        let index = match index {
            rasdf::index::IndexStatus::Invalid(_) => rasdf::index::IndexStatus::Valid,
            other => other,
        };
        assert_eq!(new.index_status(), &index, "{rel}: the index");
        assert!(new.warnings().is_empty(), "{rel}: {:?}", new.warnings());
        let mut out = Vec::new();
        assert_eq!(
            rasdf_cli::check::run(&f, &rasdf::OpenOptions::new(), &mut out).unwrap(),
            rasdf_cli::Outcome::Ok,
            "{rel}: {}",
            String::from_utf8_lossy(&out)
        );
        reference_reads(&f, "note", &note);
    }
}

#[test]
fn failed_edits_change_nothing() {
    let dir = common::temp_dir("edit-failed");
    let f = copy(&dir, "example.asdf");
    let before = std::fs::read(&f).unwrap();
    for (editor, says) in [
        ("false", "the editor"),
        ("sed -i -e 's/^meta:/meta: [/'", "the edited tree"),
        ("sed -i -e 's/shape: \\[64, 64\\]/shape: [64, x]/'", "the edited tree"),
        ("sed -i -e 's/#ASDF_STANDARD 1.6.0/#ASDF_STANDARD 1.5.0/'", "#ASDF_STANDARD"),
        ("sed -i -e 's/source: 1/source: 9/'", "source 9"),
        ("sed -i -e 's/^\\.\\.\\.$/.../; $a junk'", "after the tree"),
        ("sed -i -e 's/%YAML 1.1/%YAML 1.2/'", "YAML 1.1"),
        ("rm", "No such file"),
    ] {
        let (code, err) = edit(&f, editor);
        assert_eq!(code, 1, "{editor}: {err}");
        assert!(err.contains(says) && err.contains("unchanged"), "{editor}: {err}");
        assert_eq!(std::fs::read(&f).unwrap(), before, "{editor}");
    }
    // No change: nothing written.
    let (code, err) = edit(&f, "true");
    assert_eq!(code, 0);
    assert!(err.contains("no changes"), "{err}");
    assert_eq!(std::fs::read(&f).unwrap(), before);
    // Not a file.
    assert_eq!(edit(&dir.join("missing.asdf"), "true").0, 2);
}

/// The reference library reads `key` at the root as `value`.
fn reference_reads(file: &Path, key: &str, value: &str) {
    let code = format!(
        "import asdf, warnings\nwarnings.simplefilter('ignore')\nwith asdf.open({:?}) as af:\n    \
         t = af.tree\n    print(t[{key:?}] if {key:?} in t else t['meta'][{key:?}])\n    \
         [__import__('numpy').asarray(a).sum() for a in asdf.search.AsdfSearchResult(['root'], t).search(type_=__import__('numpy').ndarray).nodes]",
        file.to_str().unwrap()
    );
    if let Some(out) = common::run_python_code(&code) {
        assert_eq!(out.trim_end(), value);
    }
}

/// The editor's copy is private (a folder of mode 0700, the file 0600) and gone when the
/// process is ended by SIGTERM, SIGHUP or SIGINT while the editor runs; the file is
/// unchanged.
#[test]
fn the_scratch_copy_is_private_and_removed_when_killed() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::ExitStatusExt;
    let dir = common::temp_dir("edit-signals");
    let f = copy(&dir, "example.asdf");
    let before = std::fs::read(&f).unwrap();
    // The editor says where its copy is, then waits to be stopped.
    let editor = dir.join("editor.sh");
    std::fs::write(&editor, format!("#!/bin/sh\necho \"$1\" > {}/seen\nexec sleep 60\n", dir.display())).unwrap();
    std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).unwrap();
    for signal in [libc::SIGTERM, libc::SIGHUP, libc::SIGINT] {
        let tmp = dir.join(format!("tmp{signal}"));
        std::fs::create_dir_all(&tmp).unwrap();
        let _ = std::fs::remove_file(dir.join("seen"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_rasdf"))
            .args(["edit", f.to_str().unwrap()])
            .env_remove("VISUAL")
            .env("EDITOR", &editor)
            .env("TMPDIR", &tmp)
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let seen = dir.join("seen");
        let start = std::time::Instant::now();
        while !seen.exists() || std::fs::read_to_string(&seen).unwrap().is_empty() {
            assert!(start.elapsed().as_secs() < 30, "the editor never started");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let copy = PathBuf::from(std::fs::read_to_string(&seen).unwrap().trim());
        let folder = copy.parent().unwrap();
        assert_eq!(folder.parent().unwrap(), tmp, "in a folder of its own in TMPDIR");
        assert_eq!(std::fs::metadata(folder).unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777, 0o600);
        // SAFETY: a signal to the child this test started.
        unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(signal), "rasdf dies of the signal");
        let left: Vec<PathBuf> = std::fs::read_dir(&tmp).unwrap().map(|e| e.unwrap().path()).collect();
        assert!(left.is_empty(), "signal {signal}: left behind: {left:?}");
        assert_eq!(std::fs::read(&f).unwrap(), before);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
