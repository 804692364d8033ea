//! `rasdf search`: the paths `AsdfFile.search` of the reference library finds, for keys,
//! types and values, on the reference files and the fixtures; JSON; exit codes.

use rasdf_testkit as common;
mod support;

use support::rasdf;

use std::path::PathBuf;

fn files() -> Vec<PathBuf> {
    common::asdf_files_in(&["pyasdf/arrays", "reference_files/1.6.0", "astro"])
}

#[test]
fn paths_are_the_references() {
    let files = files();
    let args: Vec<&std::path::Path> = files.iter().map(PathBuf::as_path).collect();
    let Some(json) = common::run_python("search_cases.py", &args) else { return };
    let expected: serde_json::Value = serde_json::from_str(&json).unwrap();
    let mut failures = Vec::new();
    let mut compared = 0;
    for f in &files {
        let name = f.to_str().unwrap();
        // The reference also searches a value pattern in NumPy's printout of each array's
        // elements; rasdf does not (by design): arrays are left out of those verdicts.
        let (_, arrays) = rasdf(&["search", name, "--type", "ndarray", "--json"]);
        let arrays: serde_json::Value = serde_json::from_str(&arrays).unwrap();
        let arrays: Vec<&str> =
            arrays["matches"].as_array().unwrap().iter().map(|m| m["path"].as_str().unwrap()).collect();
        for case in expected[name].as_array().unwrap() {
            let mut argv = vec!["search", name, "--json"];
            let query: Vec<&str> = case["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
            argv.extend(&query);
            let (code, out) = rasdf(&argv);
            let pattern = query.iter().position(|a| *a == "--value").is_some_and(|i| {
                serde_json::from_str::<serde_json::Value>(query[i + 1]).map_or(true, |v| v.is_string())
            });
            let theirs: Vec<&str> = case["paths"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_str().unwrap())
                .filter(|p| !(pattern && arrays.contains(p)))
                .collect();
            let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{name} {query:?}: {e}"));
            let ours: Vec<&str> =
                v["matches"].as_array().unwrap().iter().map(|m| m["path"].as_str().unwrap()).collect();
            assert_eq!(code, if ours.is_empty() { 1 } else { 0 }, "{name} {query:?}");
            if ours != theirs {
                let rasdf_only: Vec<&str> = ours.iter().filter(|p| !theirs.contains(p)).take(5).copied().collect();
                let asdf_only: Vec<&str> = theirs.iter().filter(|p| !ours.contains(p)).take(5).copied().collect();
                failures.push(format!("{name} {query:?}: only rasdf {rasdf_only:?}, only asdf {asdf_only:?}"));
            }
            compared += 1;
        }
    }
    assert!(compared > 500, "{compared}");
    assert!(failures.is_empty(), "{} of {compared} differ:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn text_lines_and_exit_codes() {
    let f = common::testdata("example.asdf");
    let f = f.to_str().unwrap();
    let (code, out) = rasdf(&["search", f, "tele"]);
    assert_eq!((code, out.as_str()), (0, "/meta/telescope (str): example\n"));
    let (code, out) = rasdf(&["search", f, "--type", "ndarray"]);
    assert_eq!(code, 0);
    assert_eq!(
        out.lines().next(),
        Some("/catalog (NDArrayType): shape=(2,), dtype=[id: int32, mag: float64, kind: [ascii, 8]], block 3 (none)")
    );
    // A tag as the type.
    let (_, by_tag) = rasdf(&["search", f, "--type", "core/ndarray"]);
    assert_eq!(by_tag, out);
    assert_eq!(rasdf(&["search", f, "no such key"]), (1, String::new()));
    // A bad pattern is a usage error; so is an unopenable file.
    assert_eq!(rasdf(&["search", f, "("]).0, 2);
    assert_eq!(rasdf(&["search", f, "--value", "[1, 2]"]).0, 2);
    assert_eq!(rasdf(&["search", "/no/such/file.asdf", "a"]).0, 2);
}
