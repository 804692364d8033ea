//! `rasdf diff`: the verdicts of `asdftool diff` on pairs the reference library wrote
//! (and on asdf's own diff test pairs), where rasdf differs on purpose and why; the
//! report's lines, tolerances, `--ignore`, `--json`, and exit codes.

use rasdf_testkit as common;
mod support;

use support::rasdf;

use std::path::Path;

/// Pairs on which rasdf's verdict is not asdftool's, by design, with rasdf's verdict.
const DELIBERATE: [(&str, bool, &str); 7] = [
    ("ignored_not_all", true, "asdftool ignores by id(): ignoring a: 1 also ignores b: 1 (one small-int object)"),
    ("nan_scalar", false, "NaN equals NaN (asdftool compares with Python's ==)"),
    ("array_nan_same", false, "NaN elements at the same places are equal (asdftool uses array_equal)"),
    ("list_length", true, "lists of different lengths differ (asdftool zips them)"),
    ("asdf_frames_ignore_both", true, "a list one item longer (asdftool zips them)"),
    ("array_byteorder", false, "byte order is storage, not a difference"),
    ("array_inline_vs_block", false, "inline or in a block is storage, not a difference"),
];

#[test]
fn verdicts_are_asdftools() {
    let dir = common::temp_dir("diff-cases");
    let Some(json) = common::run_python("diff_cases.py", &[&dir]) else { return };
    let cases: serde_json::Value = serde_json::from_str(&json).unwrap();
    let cases = cases.as_array().unwrap();
    assert!(cases.len() >= 40, "{} cases", cases.len());
    let mut failures = Vec::new();
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let mut args = vec!["diff", c["a"].as_str().unwrap(), c["b"].as_str().unwrap()];
        for i in c["ignore"].as_array().unwrap() {
            args.extend(["--ignore", i.as_str().unwrap()]);
        }
        let (code, out) = rasdf(&args);
        assert!(code < 2, "{name}: exit {code}");
        let ours = code == 1;
        assert_eq!(ours, !out.is_empty(), "{name}: exit {code} but the report is {out:?}");
        let theirs = c["differs"].as_bool().unwrap();
        let expected = DELIBERATE.iter().find(|d| d.0 == name).map_or(theirs, |d| {
            assert_ne!(d.1, theirs, "{name}: listed as deliberate, but asdftool agrees now ({})", d.2);
            d.1
        });
        if ours != expected {
            failures
                .push(format!("{name}: rasdf {ours}, expected {expected}\nrasdf:\n{out}asdftool:\n{}", c["output"]));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn asdf_file(dir: &Path, name: &str, yaml: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, format!("#ASDF 1.0.0\n#ASDF_STANDARD 1.5.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n{yaml}\n...\n")).unwrap();
    p.to_str().unwrap().to_owned()
}

#[test]
fn lines_tolerances_ignores_json_and_exit_codes() {
    let dir = common::temp_dir("diff-hand");
    let a = asdf_file(
        &dir,
        "a.asdf",
        "x: 1.0\nname: a\nlist: [1, 2]\nmeta: {date: 2020, keep: 1}\n\
         arr: !core/ndarray-1.0.0 {data: [1.0, 2.0, 3.0], datatype: float64, shape: [3]}\n\
         m: !core/ndarray-1.0.0 {data: [1, null, 3], datatype: int16, shape: [3]}",
    );
    let b = asdf_file(
        &dir,
        "b.asdf",
        "x: 1.000001\nname: b\nlist: [1, 2, 3]\nmeta: {date: 2021, keep: 1}\nextra: true\n\
         arr: !core/ndarray-1.0.0 {data: [1.0, 2.0, 3.001], datatype: float64, shape: [3]}\n\
         m: !core/ndarray-1.0.0 {data: [1, 2, null], datatype: int16, shape: [3]}",
    );
    let (code, out) = rasdf(&["diff", &a, &b]);
    assert_eq!(code, 1);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "/x: 1.0 != 1.000001",
            "/name: 'a' != 'b'",
            "/list: length 2 != 3",
            "/list/2: only in B",
            "/meta/date: 2020 != 2021",
            "/arr: 1 of 3 elements differ (first at [2]: 3.0 != 3.001; largest |A - B| 0.0009999999999998899)",
            "/m: mask differs at 2 of 3 elements",
            "/extra: only in B",
        ]
    );
    // Tolerances: NumPy's isclose.
    let (_, out) = rasdf(&["diff", &a, &b, "--rtol", "1e-3"]);
    assert!(!out.contains("/x:") && !out.contains("/arr:"), "{out}");
    let (_, out) = rasdf(&["diff", &a, &b, "--atol", "1e-5"]);
    assert!(!out.contains("/x:") && out.contains("/arr:"), "{out}");
    // Ignores, in both spellings.
    let (_, out) = rasdf(&["diff", &a, &b, "-i", "/meta/date", "-i", "[name,extra]", "-i", "list"]);
    assert!(
        !out.contains("/meta") && !out.contains("/name") && !out.contains("/extra") && !out.contains("/list"),
        "{out}"
    );
    assert!(out.contains("/x:"), "{out}");
    // JSON.
    let (code, out) = rasdf(&["diff", &a, &b, "--json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["equal"], false);
    let d = v["differences"].as_array().unwrap();
    assert_eq!(d.len(), 8);
    assert_eq!(d[0], serde_json::json!({"path": "/x", "kind": "value", "a": "1.0", "b": "1.000001"}));
    assert_eq!(d[5]["kind"], "elements");
    assert_eq!(d[5]["count"], 1);
    assert_eq!(d[5]["first_index"], serde_json::json!([2]));
    assert_eq!(d[6], serde_json::json!({"path": "/m", "kind": "mask", "count": 2, "total": 3}));
    // Equal files: exit 0, nothing printed; JSON says equal.
    assert_eq!(rasdf(&["diff", &a, &a]), (0, String::new()));
    let (code, out) = rasdf(&["diff", &a, &a, "--json"]);
    assert_eq!(code, 0);
    assert_eq!(serde_json::from_str::<serde_json::Value>(&out).unwrap()["equal"], true);
    // Files that cannot be compared: 2.
    assert_eq!(rasdf(&["diff", &a, dir.join("missing.asdf").to_str().unwrap()]).0, 2);
    let bad = dir.join("bad.asdf");
    std::fs::write(&bad, "#ASDF 1.0.0\n%YAML 1.1\n--- {a: [\n").unwrap();
    assert_eq!(rasdf(&["diff", &a, bad.to_str().unwrap()]).0, 2);
    assert_eq!(rasdf(&["diff", &a]).0, 2);
}

#[test]
fn aliases_and_self_containing_trees_end() {
    let dir = common::temp_dir("diff-alias");
    let a = asdf_file(&dir, "a.asdf", "x: &r {y: 1, me: *r}\nz: *r");
    let b = asdf_file(&dir, "b.asdf", "x: &r {y: 2, me: *r}\nz: *r");
    let (code, out) = rasdf(&["diff", &a, &b]);
    assert_eq!(code, 1);
    assert_eq!(out, "/x/y: 1 != 2\n");
}

#[test]
fn storage_is_no_difference() {
    // Files of every datatype, views and masks against their copies written compressed,
    // exploded and as YAML.
    let dir = common::temp_dir("diff-storage");
    let kinds = [vec!["defragment", "-c", "zlib"], vec!["defragment", "-c", "lz4"], vec!["explode"], vec!["to-yaml"]];
    let names = ["dtypes", "strings_records", "views_masks", "shared_views", "scalars_tags"];
    let runs = names
        .iter()
        .flat_map(|name| kinds.iter().map(move |k| (common::testdata(&format!("pyasdf/arrays/{name}.asdf")), k)));
    for (i, (src, args)) in runs.enumerate() {
        let out = dir.join(format!("copy{i}.asdf"));
        let mut argv: Vec<&str> = args.clone();
        argv.extend([src.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert_eq!(rasdf(&argv).0, 0, "{args:?}");
        let (code, report) =
            rasdf(&["diff", src.to_str().unwrap(), out.to_str().unwrap(), "-i", "asdf_library", "-i", "history"]);
        assert_eq!((code, report.as_str()), (0, ""), "{} {args:?}", src.display());
    }
}
