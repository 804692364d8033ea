//! The read-only commands on remote files: `info`, `check`, `to-yaml` and `convert` of an
//! http:// or s3:// URL give what they give for the local file; exit codes; `--timeout`;
//! a password in a URL never printed; a file that changes while it is read.

use rasdf_testkit as common;
use rasdf_testkit::range_server;
mod support;

use support::rasdf;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use range_server::{Fault, RangeServer, ServerOptions, Swap};

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata")
}

fn tempdir(tag: &str) -> PathBuf {
    common::temp_dir(&format!("cli-remote-{tag}"))
}

#[test]
fn info_check_to_yaml_and_convert_of_a_url_are_the_local_files() {
    let root = testdata();
    let server = RangeServer::start(&root, ServerOptions::default());
    let out = tempdir("same");
    for rel in [
        "example.asdf",
        "pyasdf/arrays/compressed.asdf",
        "pyasdf/arrays/exploded.asdf",
        "reference_files/1.6.0/complex.asdf",
        "astro/roman_level2.asdf",
        "bad/truncated_block.asdf",
    ] {
        let local = root.join(rel);
        if !local.exists() {
            continue;
        }
        let local = local.to_str().unwrap();
        let url = server.url(rel);
        for args in [vec!["info", "--stats"], vec!["info", "--show-blocks"], vec!["check"]] {
            let (a, ta) = rasdf(&[args.as_slice(), &[local]].concat());
            let (b, tb) = rasdf(&[args.as_slice(), &[url.as_str()]].concat());
            assert_eq!(a, b, "{args:?} {rel}: exit codes");
            assert_eq!(ta.replace(local, "FILE"), tb.replace(&url, "FILE"), "{args:?} {rel}");
        }
        let (ya, yb) = (out.join("a.yaml"), out.join("b.yaml"));
        let (a, _) = rasdf(&["to-yaml", local, "-o", ya.to_str().unwrap()]);
        let (b, _) = rasdf(&["to-yaml", &url, "-o", yb.to_str().unwrap()]);
        assert_eq!(a, b, "to-yaml {rel}");
        if a == 0 {
            assert_eq!(std::fs::read(&ya).unwrap(), std::fs::read(&yb).unwrap(), "to-yaml {rel}");
        }
    }
    // convert: the first array as .ra, from the URL and from the file.
    let (ra, rb) = (out.join("a.ra"), out.join("b.ra"));
    let local = root.join("example.asdf");
    let (a, _) = rasdf(&["convert", local.to_str().unwrap(), ra.to_str().unwrap(), "--array", "sci/data"]);
    let (b, _) = rasdf(&["convert", &server.url("example.asdf"), rb.to_str().unwrap(), "--array", "sci/data"]);
    assert_eq!((a, b), (0, 0));
    assert_eq!(std::fs::read(&ra).unwrap(), std::fs::read(&rb).unwrap());
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_url_that_cannot_be_opened_exits_2() {
    let server = RangeServer::start(testdata(), ServerOptions::default());
    for cmd in ["info", "check", "to-yaml"] {
        let (code, _) = rasdf(&[cmd, &server.url("missing.asdf")]);
        assert_eq!(code, 2, "{cmd}");
    }
}

#[test]
fn diff_search_extract_and_preview_take_urls() {
    let root = testdata();
    let server = RangeServer::start(&root, ServerOptions::default());
    let local = root.join("example.asdf");
    let (local, url) = (local.to_str().unwrap(), server.url("example.asdf"));
    assert_eq!(rasdf(&["diff", &url, local]), (0, String::new()));
    assert_eq!(rasdf(&["search", &url, "tele"]), rasdf(&["search", local, "tele"]));
    let out = tempdir("urls");
    for (cmd, ext) in [("extract", "npy"), ("preview", "png")] {
        let (a, b) = (out.join(format!("url.{ext}")), out.join(format!("local.{ext}")));
        assert_eq!(rasdf(&[cmd, &url, "/sci/data", "-o", a.to_str().unwrap()]).0, 0, "{cmd}");
        assert_eq!(rasdf(&[cmd, local, "/sci/data", "-o", b.to_str().unwrap()]).0, 0, "{cmd}");
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap(), "{cmd}");
    }
    assert_eq!(rasdf(&["diff", &server.url("no/such.asdf"), local]).0, 2);
}

/// `rasdf ARGS` as a process: the exit code, standard output and standard error.
fn run(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_rasdf")).args(args).stdin(Stdio::null()).output().unwrap();
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    (o.status.code().unwrap_or(-1), text(o.stdout), text(o.stderr))
}

#[test]
fn a_stalled_server_fails_within_timeout() {
    let server = RangeServer::start(testdata(), ServerOptions { fault: Fault::Hang, ..Default::default() });
    let url = server.url("example.asdf");
    for cmd in ["info", "check"] {
        let t = Instant::now();
        let (code, out, err) = run(&[cmd, &url, "--timeout", "1"]);
        let took = t.elapsed();
        assert_eq!(code, 1, "{cmd}: {out}{err}");
        assert!(took >= Duration::from_secs(1) && took < Duration::from_secs(4), "{cmd}: {took:?}");
        assert!(format!("{out}{err}").contains("timed out"), "{cmd}: {out}{err}");
    }
    // A timeout is a positive number of seconds.
    for bad in ["0", "-1", "soon", "nan"] {
        let (code, _, err) = run(&["info", &url, "--timeout", bad]);
        assert_eq!(code, 2, "--timeout {bad}: {err}");
    }
    // Fractions, and the option before the command.
    let server = RangeServer::start(testdata(), ServerOptions::default());
    assert_eq!(rasdf(&["--timeout", "2.5", "info", &server.url("example.asdf")]).0, 0);
}

#[test]
fn a_password_in_a_url_is_never_printed() {
    let dir = tempdir("secret");
    std::fs::copy(testdata().join("example.asdf"), dir.join("example.asdf")).unwrap();
    std::fs::write(dir.join("bad_tree.asdf"), "#ASDF 1.0.0\n%YAML 1.1\n--- !core/asdf-1.1.0\na: [1, 2\n...\n").unwrap();
    let server = RangeServer::start(&dir, ServerOptions::default());
    let port = server.base().rsplit(':').next().unwrap().to_string();
    let url = |name: &str| format!("http://user:secret@127.0.0.1:{port}/{name}");
    let signed = format!("{}?X-Amz-Signature=secret1&X-Amz-Credential=secret2", url("example.asdf"));
    let refused = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://user:secret@{}/x.asdf", l.local_addr().unwrap())
    };
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let yaml = out.join("x.yaml");
    let cases: Vec<(Vec<String>, i32)> = vec![
        (vec!["info".into(), url("example.asdf")], 0),
        (vec!["info".into(), "--stats".into(), signed.clone()], 0),
        (vec!["check".into(), url("example.asdf")], 0),
        (vec!["check".into(), "--json".into(), signed.clone()], 0),
        (vec!["to-yaml".into(), url("example.asdf"), "-o".into(), yaml.to_str().unwrap().into()], 0),
        (vec!["info".into(), url("missing.asdf")], 2),
        (vec!["check".into(), url("missing.asdf")], 2),
        (vec!["check".into(), url("bad_tree.asdf")], 1),
        (vec!["info".into(), url("bad_tree.asdf")], 1),
        (vec!["info".into(), refused.clone()], 2),
        (vec!["diff".into(), url("example.asdf"), url("missing.asdf")], 2),
        (vec!["defragment".into(), url("example.asdf"), "-o".into(), out.join("d.asdf").to_str().unwrap().into()], 2),
        (vec!["extract".into(), url("example.asdf"), "/nothing".into(), "-o".into(), "-".into()], 1),
        // Not a URL rasdf reads, and not a path either.
        (vec!["info".into(), "ftp://user:secret@host/x.asdf".into()], 2),
        (vec!["check".into(), "ftp://user:secret@host/x.asdf".into()], 2),
    ];
    for (args, expected) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stdout, stderr) = run(&args);
        assert_eq!(code, expected, "{args:?}: {stdout}{stderr}");
        assert!(!stdout.contains("secret") && !stderr.contains("secret"), "{args:?}:\n{stdout}\n{stderr}");
        if args[0] == "check" || code != 0 {
            assert!(format!("{stdout}{stderr}").contains("***"), "{args:?}: {stdout}{stderr}");
        }
    }
    // to-yaml's default output, named after the URL's path, not its query.
    let cwd = dir.join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_rasdf")).args(["to-yaml", &signed]).current_dir(&cwd).output().unwrap();
    assert!(o.status.success(), "{o:?}");
    let names: Vec<String> =
        std::fs::read_dir(&cwd).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["example.yaml"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two versions of one file with the same layout and other values (`v` everywhere:
/// 1.0 in A, 2.0 in B); returns their paths.
fn two_versions(dir: &Path) -> (PathBuf, PathBuf) {
    let mut paths = Vec::new();
    for (name, v) in [("a.asdf", 1.0), ("b.asdf", 2.0)] {
        let mut doc = rasdf::write::Document::new();
        let data = ndarray::Array1::from_elem(1000, v);
        doc.set_array("data", data.view(), rasdf::block::Compression::None).unwrap();
        let path = dir.join(name);
        doc.write_to_path(&path, &rasdf::write::WriteOptions::default()).unwrap();
        paths.push(path);
    }
    (paths[0].clone(), paths[1].clone())
}

#[test]
fn a_file_that_changes_while_it_is_read_fails() {
    let dir = tempdir("changes");
    let (a, b) = two_versions(&dir);
    std::fs::copy(&a, dir.join("f.asdf")).unwrap();
    // Version B from the third request on: after the open (two requests: the file is
    // within its first fetches), before the data.
    let swapped = || {
        let swap = Swap { name: "f.asdf".into(), replacement: b.clone(), after: 2 };
        RangeServer::start(&dir, ServerOptions { swap: Some(swap), ..Default::default() })
    };
    let server = RangeServer::start(&dir, ServerOptions::default());
    let (code, out) = rasdf(&["info", "--stats", &server.url("f.asdf")]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("min=1") && !out.contains("min=2"), "{out}");
    let server = swapped();
    let (code, out, err) = run(&["info", "--stats", &server.url("f.asdf")]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(!out.contains("min=2") && !out.contains("mean=2"), "B's data under A's tree:\n{out}");
    assert!(format!("{out}{err}").contains("the remote file changed while it was read"), "{out}{err}");
    assert_eq!(server.requests(), 3, "not retried");
    let npy = dir.join("data.npy");
    for args in [vec!["check"], vec!["check", "--json"], vec!["extract", "/data", "-o", npy.to_str().unwrap()]] {
        let server = swapped();
        let url = server.url("f.asdf");
        let args: Vec<&str> =
            args.iter().take(1).copied().chain([url.as_str()]).chain(args[1..].iter().copied()).collect();
        let (code, out, err) = run(&args);
        assert_eq!(code, 1, "{args:?}: {out}{err}");
        assert!(format!("{out}{err}").contains("changed while it was read"), "{args:?}: {out}{err}");
    }
    assert!(!npy.exists(), "nothing extracted");
    // Seen during the open: exit 1 too (a failed read, not an input that cannot be
    // opened).
    let swap = Swap { name: "f.asdf".into(), replacement: b.clone(), after: 1 };
    let server = RangeServer::start(&dir, ServerOptions { swap: Some(swap), ..Default::default() });
    let (code, out, err) = run(&["info", &server.url("f.asdf")]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("changed while it was read"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
