#![allow(clippy::cast_possible_truncation)] // test code on 64-bit hosts
//! Every malformed file in testdata/bad/ fails with the error kind and location that
//! testdata/bad/expected.json records (both made by tests/python/make_bad.py). A file
//! there without an expectation fails the test.

use rasdf_testkit as common;

use std::collections::BTreeMap;

use rasdf::{AsdfFile, Error, Location, OpenOptions};
use rasdf_cli::{Outcome, check};
use serde_json::Value;

/// `Block(BadMagic` from `Block(BadMagic { found: .. })`.
fn kind_name(e: &Error) -> String {
    let debug = format!("{:?}", e.kind());
    debug.split([' ', ')', '(']).take(2).collect::<Vec<_>>().join("(")
}

/// The first error reading the whole file gives (at open, walking blocks, or decoding
/// and verifying them), as its kind's name, location and message.
fn first_error(path: &std::path::Path) -> Option<(String, Location, String)> {
    let parts = |e: &Error| (kind_name(e), e.location().clone(), e.to_string());
    let file = match AsdfFile::open(path) {
        Ok(f) => f,
        Err(e) => return Some(parts(&e)),
    };
    if let Some(e) = file.blocks_error() {
        return Some(parts(e));
    }
    file.verify_blocks().into_iter().find_map(Result::err).map(|e| parts(&e))
}

#[test]
fn every_bad_file_fails_as_expected() {
    let dir = common::testdata("bad");
    let expected: BTreeMap<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name == "expected.json" {
            continue;
        }
        let e = expected
            .get(&name)
            .unwrap_or_else(|| panic!("found new file {name} in testdata/bad: add it to expected.json"));
        let (kind, location, message) = first_error(&path).unwrap_or_else(|| panic!("{name}: no error"));
        assert_eq!(kind, e["kind"].as_str().unwrap(), "{name}: {message}");
        assert_eq!(location.offset, e["offset"].as_u64(), "{name}: offset: {message}");
        assert_eq!(location.block, e["block"].as_u64().map(|b| b as usize), "{name}: block: {message}");
        let mut out = Vec::new();
        assert_eq!(check::run(&path, &OpenOptions::new(), &mut out).unwrap(), Outcome::Failed, "{name}");
        seen += 1;
    }
    assert_eq!(seen, expected.len(), "expected.json lists files that are missing");
}

/// Cuts a good file at every structural boundary and inside every structure: each cut
/// inside a block is an error naming that block and its offset; a cut inside the header
/// or the tree is a header error; a cut inside the index only loses the index.
#[test]
fn truncated_at_every_boundary() {
    let good = std::fs::read(common::testdata("pyasdf/uncompressed.asdf")).unwrap();
    let file = AsdfFile::open(common::testdata("pyasdf/uncompressed.asdf")).unwrap();
    let tree = file.header().tree.clone().unwrap();
    let blocks = file.blocks().to_vec();
    let dir = std::env::temp_dir().join(format!("rasdf-trunc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cut = |at: u64| -> Option<(String, Location, String)> {
        let p = dir.join(format!("cut{at}.asdf"));
        std::fs::write(&p, &good[..at as usize]).unwrap();
        first_error(&p)
    };
    for at in [0u64, 3, 5] {
        let (kind, loc, msg) = cut(at).unwrap();
        assert_eq!((kind.as_str(), loc.offset), ("Header(NotAsdf", Some(0)), "cut at {at}: {msg}");
    }
    let (kind, _, msg) = cut(9).unwrap();
    assert_eq!(kind, "Header(UnsupportedVersion", "{msg}");
    // A cut inside "%YAML" leaves a line that is not a comment, as the reference sees it.
    let (kind, loc, msg) = cut(tree.start + 3).unwrap();
    assert_eq!((kind.as_str(), loc.offset), ("Header(InvalidComment", Some(tree.start)), "{msg}");
    for at in [tree.start + 5, tree.start + 10, (tree.start + tree.end) / 2, tree.end - 2] {
        let (kind, loc, msg) = cut(at).unwrap();
        assert_eq!((kind.as_str(), loc.offset), ("Header(NoTreeEnd", Some(tree.start)), "cut at {at}: {msg}");
    }
    for (n, b) in blocks.iter().enumerate() {
        let data_end = b.data_offset() + b.used_size;
        for at in [
            b.offset + 2,
            b.offset + 4,
            b.offset + 5,
            b.offset + 6,
            b.offset + 20,
            b.offset + 53,
            b.offset + 54,
            data_end - 1,
        ] {
            let (kind, loc, msg) = cut(at).unwrap_or_else(|| panic!("cut at {at} in block {n}: no error"));
            assert_eq!(kind, "Block(Truncated", "cut at {at}: {msg}");
            assert_eq!((loc.block, loc.offset), (Some(n), Some(b.offset)), "cut at {at}: {msg}");
        }
    }
    // Exactly between blocks: the block layer is whole, but the tree's arrays are not.
    for b in &blocks {
        let p = dir.join(format!("between{}.asdf", b.offset));
        std::fs::write(&p, &good[..b.offset as usize]).unwrap();
        let mut out = Vec::new();
        assert_eq!(check::run(&p, &OpenOptions::new(), &mut out).unwrap(), Outcome::Failed, "cut at {}", b.offset);
        assert!(String::from_utf8(out).unwrap().contains("tree path"), "the error names the array");
    }
    // Inside the index: the blocks are all there; the index is not used.
    let index_at = blocks.last().unwrap().end();
    for at in [index_at + 3, index_at + 20, good.len() as u64 - 2] {
        assert!(cut(at).is_none(), "cut at {at} inside the index");
        let p = dir.join(format!("cut{at}.asdf"));
        let f = AsdfFile::open(&p).unwrap();
        assert_eq!(f.blocks().len(), blocks.len());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
