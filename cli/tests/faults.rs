//! Faults of the environment: inputs that cannot be opened, a file cut short or rewritten
//! while read, outputs that are not regular files, a file-size limit, long names.

use rasdf_testkit as common;

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use rasdf::AsdfFile;
use rasdf::block::Compression;
use rasdf::write::{Document, WriteOptions};

fn rasdf(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rasdf")).args(args).stdin(Stdio::null()).output().unwrap()
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// A file of 16 MiB: one million float64s uncompressed (`data`), the same zlib
/// compressed (`z`), and as lz4 (`l`).
fn big_file(dir: &Path) -> PathBuf {
    let path = dir.join("big.asdf");
    let data = ::ndarray::Array1::from_iter((0..1_000_000).map(f64::from));
    let mut doc = Document::new();
    doc.set_array("data", data.view(), Compression::None).unwrap();
    doc.set_array("z", data.view(), Compression::Zlib).unwrap();
    doc.set_array("l", data.view(), Compression::Lz4).unwrap();
    doc.write_to_path(&path, &WriteOptions::default()).unwrap();
    path
}

/// Every command exits 2, saying why, for an input that cannot be opened (missing, a
/// folder): that is not a damaged file.
#[test]
fn inputs_that_cannot_be_opened_are_usage_errors() {
    let dir = common::temp_dir("faults-unopened");
    let out = dir.join("out.asdf");
    let o = out.to_str().unwrap();
    let ra = dir.join("out.ra");
    for input in [dir.join("missing.asdf"), dir.clone()] {
        let i = input.to_str().unwrap();
        let commands: [Vec<&str>; 7] = [
            vec!["info", i],
            vec!["check", i],
            vec!["to-yaml", i, "-o", o],
            vec!["defragment", i, "-o", o],
            vec!["explode", i, "-o", o],
            vec!["implode", i, "-o", o],
            vec!["convert", i, ra.to_str().unwrap()],
        ];
        for args in commands {
            let r = rasdf(&args);
            let said = format!("{}{}", String::from_utf8_lossy(&r.stdout), String::from_utf8_lossy(&r.stderr));
            assert_eq!(r.status.code(), Some(2), "{args:?}: {said}");
            assert!(said.contains(i), "{args:?} does not name the input: {said}");
            assert!(!said.contains("damaged"), "{args:?} calls it damaged: {said}");
        }
    }
    assert!(!out.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An array whose block fails its checksum is not counted readable, and the block's
/// line says "checksum mismatch", not "not verified".
#[test]
fn a_block_that_fails_its_checksum_makes_its_arrays_unreadable() {
    let dir = common::temp_dir("faults-checksum");
    let path = dir.join("flipped.asdf");
    let mut bytes = std::fs::read(common::testdata("example.asdf")).unwrap();
    let f = AsdfFile::open(common::testdata("example.asdf")).unwrap();
    // Block 1 is uncompressed: a flipped byte of its data still decodes.
    let b = &f.blocks()[1];
    assert_eq!(b.compression, Compression::None);
    let at = usize::try_from(b.offset).unwrap() + 6 + usize::from(b.header_size) + 10;
    bytes[at] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let r = rasdf(&["check", path.to_str().unwrap()]);
    let report = String::from_utf8_lossy(&r.stdout);
    assert_eq!(r.status.code(), Some(1), "{report}");
    let line = report.lines().find(|l| l.starts_with("block 1 ")).unwrap();
    assert!(line.ends_with("checksum mismatch"), "{line}");
    assert!(report.contains("arrays: 4 declared, 3 readable"), "{report}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Another process cuts the file short and rewrites it (`cp` truncates first) while
/// rasdf reads it: every run ends with exit 0 or 1, never a signal, and writes leave
/// nothing behind.
#[test]
fn a_file_rewritten_while_read_never_kills_rasdf() {
    let dir = common::temp_dir("faults-rewrite");
    let original = big_file(&dir);
    let target = dir.join("target.asdf");
    std::fs::copy(&original, &target).unwrap();
    let outputs = dir.join("out");
    std::fs::create_dir(&outputs).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let rewriter = {
        let (stop, original, target) = (stop.clone(), original.clone(), target.clone());
        std::thread::spawn(move || {
            let bytes = std::fs::read(&original).unwrap();
            let mut rounds = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && rounds < 100_000 {
                // Truncated, then written back in pieces, as `cp` does.
                let mut f = std::fs::OpenOptions::new().write(true).truncate(true).open(&target).unwrap();
                for piece in bytes.chunks(1 << 20) {
                    std::io::Write::write_all(&mut f, piece).unwrap();
                }
                rounds += 1;
            }
            rounds
        })
    };
    let t = target.to_str().unwrap();
    let out = outputs.join("o.asdf");
    let o = out.to_str().unwrap();
    let ra = outputs.join("o.ra");
    let yaml = outputs.join("o.yaml");
    let mut codes = std::collections::BTreeMap::new();
    for _ in 0..8 {
        let runs: [Vec<&str>; 5] = [
            vec!["check", t],
            vec!["info", "--stats", t],
            vec!["defragment", t, "-o", o, "-c", "lz4"],
            vec!["convert", t, ra.to_str().unwrap(), "--array", "z"],
            vec!["to-yaml", t, "-o", yaml.to_str().unwrap()],
        ];
        for args in runs {
            let r = rasdf(&args);
            let code = r.status.code();
            assert!(
                matches!(code, Some(0..=2)),
                "{args:?} ended with {:?}: {}",
                r.status,
                String::from_utf8_lossy(&r.stderr)
            );
            *codes.entry(code).or_insert(0) += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(rewriter.join().unwrap() > 0);
    // Only the outputs that were written whole: no temporary file.
    for name in names_in(&outputs) {
        assert!(["o.asdf", "o.ra", "o.yaml"].contains(&name.as_str()), "left behind: {name}");
    }
    eprintln!("exit codes while rewritten: {codes:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `-o -` writes to standard output; a FIFO and a character device are written into,
/// never replaced by a regular file.
#[test]
fn outputs_that_are_not_regular_files_are_written_into() {
    let dir = common::temp_dir("faults-special");
    let input = common::testdata("example.asdf");
    let i = input.to_str().unwrap();
    // Standard output.
    let yaml = dir.join("e.yaml");
    assert!(rasdf(&["to-yaml", i, "-o", yaml.to_str().unwrap()]).status.success());
    let r = rasdf(&["to-yaml", i, "-o", "-"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(r.stdout, std::fs::read(&yaml).unwrap());
    let r = rasdf(&["defragment", i, "-o", "-", "-c", "zlib"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let back = rasdf::OpenOptions::new().from_bytes(r.stdout).unwrap();
    assert_eq!(back.array("sci/data").unwrap().read::<f32>().unwrap().shape(), &[64, 64]);
    // A FIFO, read by another process.
    let fifo = dir.join("out.fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let reader = Command::new("cat").arg(&fifo).stdout(Stdio::piped()).spawn().unwrap();
    let r = rasdf(&["defragment", i, "-o", fifo.to_str().unwrap()]);
    let got = reader.wait_with_output().unwrap().stdout;
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO was replaced");
    assert!(rasdf::OpenOptions::new().from_bytes(got).unwrap().array("sci/data").and_then(|a| a.read::<f32>()).is_ok());
    // A character device.
    let r = rasdf(&["defragment", i, "-o", "/dev/null"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(std::fs::symlink_metadata("/dev/null").unwrap().file_type().is_char_device());
    // Every command that writes, into a FIFO, staging in a private folder of TMPDIR that
    // it leaves empty: convert (the FIFO's extension names the format), to-yaml, implode,
    // preview, extract (written into at once).
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    for (name, args) in [
        ("out.ra", vec!["convert", i, "@", "--array", "sci/data"]),
        ("out.yaml", vec!["to-yaml", i, "-o", "@"]),
        ("whole.asdf", vec!["implode", i, "-o", "@"]),
        ("p.png", vec!["preview", i, "sci/data", "-o", "@"]),
        ("a.npy", vec!["extract", i, "sci/data", "-o", "@"]),
    ] {
        let fifo = dir.join(name);
        assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let reader = Command::new("cat").arg(&fifo).stdout(Stdio::piped()).spawn().unwrap();
        let args: Vec<&str> = args.iter().map(|a| if *a == "@" { fifo.to_str().unwrap() } else { a }).collect();
        let r = Command::new(env!("CARGO_BIN_EXE_rasdf")).args(&args).env("TMPDIR", &tmp).output().unwrap();
        let got = reader.wait_with_output().unwrap().stdout;
        assert!(r.status.success(), "{args:?}: {}", String::from_utf8_lossy(&r.stderr));
        assert!(got.len() > 100, "{args:?}: {} bytes", got.len());
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "{args:?} replaced the FIFO");
        assert!(names_in(&tmp).is_empty(), "{args:?} left {:?}", names_in(&tmp));
    }
    // A Unix socket: connected to.
    let sock = dir.join("s.asdf");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let reader = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut conn, &mut buf).unwrap();
        buf
    });
    let r = rasdf(&["defragment", i, "-o", sock.to_str().unwrap()]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(rasdf::OpenOptions::new().from_bytes(reader.join().unwrap()).is_ok());
    assert!(std::fs::symlink_metadata(&sock).unwrap().file_type().is_socket());
    // A reader that stops reading: an error (EPIPE), not a death by SIGPIPE.
    let mut child = Command::new(env!("CARGO_BIN_EXE_rasdf"))
        .args(["to-yaml", i, "-o", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    assert!(status.code().is_some(), "killed by a signal: {status}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Past `ulimit -f`, a write fails with an error (exit 1), not SIGXFSZ, and leaves the
/// target as it was and nothing beside it.
#[test]
fn a_file_size_limit_is_an_error() {
    let dir = common::temp_dir("faults-fsize");
    let input = big_file(&dir);
    let target = dir.join("target.asdf");
    std::fs::write(&target, b"old").unwrap();
    let before = names_in(&dir);
    let script = format!(
        "ulimit -f 1024; exec '{}' defragment '{}' -o '{}'",
        env!("CARGO_BIN_EXE_rasdf"),
        input.display(),
        target.display()
    );
    let r = Command::new("bash").arg("-c").arg(&script).output().unwrap();
    let said = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{:?}: {said}", r.status);
    assert!(said.to_lowercase().contains("too large"), "{said}");
    assert_eq!(std::fs::read(&target).unwrap(), b"old");
    assert_eq!(names_in(&dir), before);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Output names of up to 255 bytes work (the temporary name does not grow with them).
#[test]
fn long_output_names_work() {
    let dir = common::temp_dir("faults-names");
    let input = common::testdata("example.asdf");
    let long = dir.join(format!("{}.asdf", "n".repeat(250)));
    let r = rasdf(&["defragment", input.to_str().unwrap(), "-o", long.to_str().unwrap()]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(AsdfFile::open(&long).unwrap().array("sci/data").and_then(|a| a.read::<f32>()).is_ok());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A limit hit says which and how to raise it, and the option raises it.
#[test]
fn limits_are_options() {
    let input = common::testdata("example.asdf");
    let i = input.to_str().unwrap();
    let r = rasdf(&["info", "--max-tree-bytes", "100", i]);
    let said = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{said}");
    assert!(said.contains("max_tree_bytes") && said.contains("--max-tree-bytes"), "{said}");
    assert!(rasdf(&["info", "--max-tree-bytes", "100000", i]).status.success());
    let r = rasdf(&["check", i, "--max-block-bytes", "100"]);
    assert_eq!(r.status.code(), Some(1), "{}", String::from_utf8_lossy(&r.stdout));
}

/// File names are bytes: stems that are not UTF-8 and differ in one byte give block
/// files of their own, not one U+FFFD name that the second overwrites.
#[test]
fn exploded_names_keep_their_bytes() {
    use std::os::unix::ffi::OsStrExt;
    let dir = common::temp_dir("faults-bytes");
    let mut outputs = Vec::new();
    for b in [0xfeu8, 0xff] {
        let input = dir.join(std::ffi::OsStr::from_bytes(&[b'a', b, b'.', b'a', b's', b'd', b'f']));
        std::fs::copy(common::testdata("example.asdf"), &input).unwrap();
        let r = Command::new(env!("CARGO_BIN_EXE_rasdf")).arg("explode").arg(&input).output().unwrap();
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        let mut exploded = vec![b'a', b];
        exploded.extend_from_slice(b"_exploded.asdf");
        outputs.push(AsdfFile::open(dir.join(std::ffi::OsStr::from_bytes(&exploded))).unwrap());
    }
    for f in &outputs {
        assert_eq!(f.array("sci/data").unwrap().read::<f32>().unwrap().shape(), &[64, 64]);
    }
    // Both sets are there: 2 inputs, 2 main files, 2 x 4 block files.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 12);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A file of three float64 arrays `a`, `b`, `c`, each filled with `v`.
fn three_arrays(path: &Path, v: f64) {
    let mut doc = Document::new();
    for name in ["a", "b", "c"] {
        doc.set_array(name, ::ndarray::Array1::from_elem(1000, v).view(), Compression::None).unwrap();
    }
    doc.write_to_path(path, &WriteOptions::default()).unwrap();
}

/// The value every array of the exploded file at `path` holds, when `check` calls the
/// set sound and all hold the same one.
fn sound_set_value(path: &Path) -> Option<f64> {
    let r = rasdf(&["check", path.to_str().unwrap()]);
    if !r.status.success() {
        return None;
    }
    let f = AsdfFile::open(path).ok()?;
    let values: Vec<f64> = ["a", "b", "c"].iter().map(|n| f.array(n).unwrap().read::<f64>().unwrap()[[0]]).collect();
    values.iter().all(|v| *v == values[0]).then_some(values[0])
}

/// Rewriting an exploded set, killed at each write, link and rename, leaves the old set
/// or the new one, whole and sound, never an old main file over some new block files;
/// and a finished rewrite leaves no block file of the old set behind.
#[test]
fn a_rewrite_of_an_exploded_set_leaves_the_old_set_or_the_new() {
    let Some(strace) = common::strace() else { return };
    let dir = common::temp_dir("faults-exploded");
    let (one, two) = (dir.join("one.asdf"), dir.join("two.asdf"));
    three_arrays(&one, 1.0);
    three_arrays(&two, 2.0);
    let x = dir.join("x.asdf");
    let explode = |from: &Path| rasdf(&["explode", from.to_str().unwrap(), "-o", x.to_str().unwrap()]);
    assert!(explode(&one).status.success());
    assert_eq!(sound_set_value(&x), Some(1.0));
    let first_set = names_in(&dir);
    assert!(first_set.contains(&"x0000.asdf".to_string()), "{first_set:?}");
    let mut seen_new = false;
    for syscalls in ["write,pwrite64,writev", "rename,renameat,renameat2,linkat"] {
        for n in 1.. {
            assert!(n < 400, "{syscalls}: still killed at call {n}");
            let status = Command::new(&strace)
                .args(["-f", "-qq", "-o", "/dev/null", "-e", &format!("inject={syscalls}:signal=KILL:when={n}")])
                .arg(env!("CARGO_BIN_EXE_rasdf"))
                .args(["explode", two.to_str().unwrap(), "-o", x.to_str().unwrap()])
                .stderr(Stdio::null())
                .status()
                .unwrap();
            let value = sound_set_value(&x);
            assert!(value == Some(1.0) || value == Some(2.0), "killed at {syscalls} #{n}: {:?}", names_in(&dir));
            seen_new |= value == Some(2.0);
            if status.success() {
                break;
            }
            // Back to the first set, as it was.
            if value == Some(2.0) {
                assert!(explode(&one).status.success());
            }
        }
        // After a finished rewrite, only the new set's files are there.
        let names = names_in(&dir);
        assert_eq!(names.len(), first_set.len(), "{names:?}");
        assert!(explode(&one).status.success());
    }
    assert!(seen_new);
    std::fs::remove_dir_all(&dir).unwrap();
}
