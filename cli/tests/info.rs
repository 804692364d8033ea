//! `rasdf info` draws the tree as `asdftool info` does: the same lines for the same
//! options (`--max-rows`, `--max-cols`, `--no-show-values`, `--show-blocks`), checked
//! against the reference library on files it shows without arrays or tags of unknown
//! classes (rasdf shows an array as one line with its storage, and a tag it has no class
//! for by the tag itself).

use rasdf_testkit as common;

use std::path::{Path, PathBuf};

/// Trees for the edges of the drawing: aliases (a container met again is shown where it
/// is shallowest, then as a `(recursive reference)` with Python's repr), keys of every
/// scalar type, values as Python's `str()` shows them, empty and multi-line strings,
/// empty containers, core tags the reference makes objects of, deep and wide lists for
/// `--max-rows`.
const TREES: [(&str, &str); 4] = [
    (
        "values",
        "empty_str: ''\nmulti: \"a\\nb\"\ntrail: \"a\\n\"\nsep: \"a\\u2028b\"\ned: {}\nel: []\n\
         shared: &s {x: 1, y: [1, 2]}\nagain: *s\nsl: &l [1, 2]\nsl2: *l\n\
         big: !core/integer-1.1.0 {words: [1, 2], sign: +}\n\
         big_array: !core/integer-1.1.0 {sign: '-', words: !core/ndarray-1.1.0 {data: [0, 0, 64], datatype: uint32, shape: [3]}}\ncx: !core/complex-1.0.0 1+2j\n\
         ts: 2001-12-14t21:59:43.10-05:00\nd: 2002-12-14\nbin: !!binary aGVsbG8=\n\
         f: [1.0, .inf, -.inf, .nan, 1.0e+16, 0.1, -0.0, 1.5e-7]\nn: ~\nb: yes\noct: 017\n\
         i: 123456789012345678901234567890\nh: !core/history_entry-1.0.0 {description: x}\n\
         ext: !core/externalarray-1.0.0 {fileuri: a.fits, target: 1, datatype: int16, shape: [2]}\n\
         o: !!omap [a: 1, b: 2]\neo: !!omap []\nq: \"it's\"\n",
    ),
    (
        "keys",
        "1: a\ntrue: b\n~: c\n1.5: d\n.inf: e\n0x10: f\n2001-01-01: g\n2001-01-01 10:00:00Z: h\n\
         rec: &r {me: *r, l: &q [*q, *r, 'it''s', \"\\t\\u00e9\\x00\", 2001-01-01, 2001-01-01T01:02:03.5+01:30]}\n",
    ),
    (
        "wide",
        "a: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]\nb: {c: {d: {e: {f: [x, y, {g: h}]}}}}\n\
         long_key_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n\
         l: [[1, [2, [3, [4]]]], [5], {m: [6, 7]}]\nz: last\n",
    ),
    ("empty", "{}\n"),
];

fn write_trees(dir: &Path) -> Vec<PathBuf> {
    TREES
        .iter()
        .map(|(name, yaml)| {
            let p = dir.join(format!("{name}.asdf"));
            let text = format!(
                "#ASDF 1.0.0\n#ASDF_STANDARD 1.6.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n{yaml}...\n"
            );
            std::fs::write(&p, text).unwrap();
            p
        })
        .collect()
}

/// The YAML fixtures the reference shows without tags of unknown classes.
fn yaml_fixtures() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(common::testdata("yaml"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            // Unknown tags (`TaggedDict` there; a `<<` or `=` value is a `TaggedString`),
            // `!!pairs` (tuples there, lists here), and arrays (one line each here). The
            // schema defaults' files hold all three, and the reference shares one `{}`
            // default among all the mappings it fills, so that it draws the second
            // `meta: {}` as a `(recursive reference)`; rasdf fills each its own.
            let differs = [
                "tag_escapes",
                "tag_handles",
                "omap_pairs",
                "omap_tagged",
                "bang_tag",
                "inline_mixed",
                "schema_defaults",
            ]
            .iter()
            .any(|d| name.starts_with(d));
            name.ends_with(".asdf") && !name.starts_with("bad_") && !differs
        })
        .collect();
    files.sort();
    files
}

fn rasdf_info(path: &Path, options: &[&str]) -> String {
    let mut argv: Vec<std::ffi::OsString> = vec!["rasdf".into(), "info".into()];
    argv.extend(options.iter().map(Into::into));
    argv.push(path.into());
    let mut out = Vec::new();
    let code = rasdf_cli::args::main(argv, &mut out);
    assert_eq!(code, 0, "{} {options:?}", path.display());
    String::from_utf8(out).unwrap()
}

#[test]
fn info_draws_the_tree_as_asdftool_does() {
    let dir = common::temp_dir("info");
    let mut files = write_trees(&dir);
    files.extend(yaml_fixtures());
    let mut option_sets: Vec<Vec<String>> = vec![vec![], vec!["--no-show-values".into()]];
    for rows in [0, 1, 2, 3, 4, 5, 7, 9, 12, 17, 30] {
        option_sets.push(vec!["--max-rows".into(), rows.to_string()]);
    }
    for cols in [0, 5, 11, 12, 13, 30] {
        option_sets.push(vec!["--max-cols".into(), cols.to_string()]);
    }
    option_sets.push(vec!["--max-rows".into(), "6".into(), "--max-cols".into(), "20".into()]);
    let mut cases: Vec<(PathBuf, Vec<String>)> = Vec::new();
    for f in &files {
        for o in &option_sets {
            cases.push((f.clone(), o.clone()));
        }
    }
    // Block tables: the tree hidden (as the reference's own tests do), the blocks shown.
    for f in ["example.asdf", "pyasdf/streamed.asdf"] {
        cases.push((common::testdata(f), vec!["--max-rows".into(), "0".into(), "--show-blocks".into()]));
    }
    let ours: Vec<String> =
        cases.iter().map(|(p, o)| rasdf_info(p, &o.iter().map(String::as_str).collect::<Vec<_>>())).collect();
    // The drawing holds what it should, whatever the reference says.
    let values = &ours[0];
    for want in [
        "├─again (dict): {'x': 1, 'y': [1, 2]} (recursive reference)",
        "├─empty_str (str)\n",
        "├─cx (complex): (1+2j)",
        "├─ts (datetime): 2001-12-14 21:59:43.100000-05:00",
        "├─big (IntegerType): IntegerType(8589934593)",
        // Words in an ndarray, as the reference writes them.
        "├─big_array (IntegerType): IntegerType(-1180591620717411303424)",
    ] {
        assert!(values.contains(want), "{want:?} not in\n{values}");
    }
    let json: Vec<(String, Vec<String>)> =
        cases.iter().map(|(p, o)| (p.to_string_lossy().into_owned(), o.clone())).collect();
    let arg = serde_json::to_string(&json).unwrap();
    let Some(out) = common::run_python("info_render.py", &[Path::new(&arg)]) else { return };
    let reference: std::collections::BTreeMap<String, String> = serde_json::from_str(&out).unwrap();
    let mut bad = Vec::new();
    for (n, ((path, options), got)) in cases.iter().zip(&ours).enumerate() {
        let want = &reference[&n.to_string()];
        if got != want {
            bad.push(format!("{} {options:?}:\n--- asdftool\n{want}--- rasdf\n{got}", path.display()));
        }
    }
    let names: std::collections::BTreeSet<&str> = bad.iter().filter_map(|b| b.split(' ').next()).collect();
    assert!(bad.is_empty(), "{} of {} differ ({names:?}); first:\n{}", bad.len(), cases.len(), bad[0]);
}
