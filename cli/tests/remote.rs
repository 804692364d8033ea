//! The read-only commands on remote files: `info`, `check`, `to-yaml` and `convert` of an
//! http:// or s3:// URL give what they give for the local file; exit codes.

#[path = "../../rasdf/tests/common/mod.rs"]
mod common;
#[path = "../../rasdf/tests/common/range_server.rs"]
mod range_server;
mod support;

use support::rasdf;

use std::path::{Path, PathBuf};

use range_server::{RangeServer, ServerOptions};

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
