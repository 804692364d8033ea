//! `--json` of `info` and `check` (the same findings as their text), asdftool's
//! spellings, shell completions, `--help` examples and the one error prefix.

use rasdf_testkit as common;
mod support;

use support::rasdf;

use std::path::PathBuf;
use std::process::Command;

fn fixtures() -> Vec<PathBuf> {
    let out = common::asdf_files_in(&["pyasdf/arrays", "pyasdf", "bad", "reference_files/1.6.0", "astro"]);
    assert!(out.len() > 60, "{} fixtures", out.len());
    out
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn check_json_says_what_the_text_says() {
    for f in fixtures() {
        let name = f.to_str().unwrap();
        let (code, text) = rasdf(&["check", name]);
        let (jcode, j) = rasdf(&["check", name, "--json"]);
        assert_eq!(code, jcode, "{name}");
        let j = json(&j);
        assert_eq!(j["sound"], code == 0, "{name}");
        assert_eq!(j["opened"], code != 2, "{name}");
        assert_eq!(j["file"], name);
        let count = |prefix: &str| text.lines().filter(|l| l.starts_with(prefix)).count();
        assert_eq!(j["errors"].as_array().unwrap().len(), count("error: "), "{name}");
        assert_eq!(j["warnings"].as_array().unwrap().len(), count("warning: "), "{name}");
        assert_eq!(j["blocks"].as_array().unwrap().len(), count("block ") - count("block index"), "{name}");
        for (b, line) in j["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .zip(text.lines().filter(|l| l.starts_with("block ") && !l.starts_with("block index")))
        {
            assert!(
                line.starts_with(&format!(
                    "block {} at byte {}: {}",
                    b["index"],
                    b["offset"],
                    b["compression"].as_str().unwrap()
                )),
                "{line}"
            );
            let sum = b["checksum"].as_str().unwrap().replace('_', " ");
            let sum = if sum == "ok decoded" { "ok (of decoded data".to_string() } else { sum };
            assert!(line.contains(&format!("checksum {sum}")), "{line} / {b}");
        }
        if let Some(index) = j["block_index"].as_str() {
            match index {
                "ok" => assert!(text.contains("block index: ok")),
                "none" => assert!(text.contains("block index: none")),
                "missing" => assert!(text.contains("warning: no block index")),
                "invalid" => assert!(text.contains("block index not used") || text.contains("index"), "{text}"),
                other => panic!("{other}"),
            }
        }
    }
}

#[test]
fn info_json_lists_the_tree_arrays_blocks_and_stats() {
    let f = common::testdata("example.asdf");
    let f = f.to_str().unwrap();
    let (code, j) = rasdf(&["info", f, "--json", "--stats"]);
    assert_eq!(code, 0);
    let j = json(&j);
    assert_eq!(j["asdf_version"], "1.0.0");
    assert_eq!(j["standard"], "1.6.0");
    let nodes = j["nodes"].as_array().unwrap();
    let node = |p: &str| nodes.iter().find(|n| n["path"] == p).unwrap_or_else(|| panic!("{p} missing"));
    assert_eq!(node("/meta/telescope")["value"], "example");
    assert_eq!(node("/meta/telescope")["type"], "str");
    assert_eq!(node("/meta/calibrated")["value"], true);
    assert_eq!(node("/meta")["type"], "dict");
    assert_eq!(node("")["tag"], "tag:stsci.edu:asdf/core/asdf-1.1.0");
    let data = &node("/sci/data")["array"];
    assert_eq!(data["shape"], serde_json::json!([64, 64]));
    assert_eq!(data["datatype"], "float32");
    assert_eq!(data["storage"], "block");
    assert_eq!(data["compression"], "zlib");
    // An array's own keys are not nodes.
    assert!(nodes.iter().all(|n| !n["path"].as_str().unwrap().starts_with("/sci/data/")));
    assert_eq!(j["blocks"].as_array().unwrap().len(), 4);
    // The same statistics as the text.
    let (_, text) = rasdf(&["info", f, "--stats"]);
    let stats = j["stats"].as_array().unwrap();
    assert_eq!(stats.len(), 4);
    assert_eq!(stats.iter().filter(|s| s.get("min").is_some()).count(), 3, "{stats:?}");
    for s in stats.iter().filter(|s| s.get("min").is_some()) {
        let line = text.lines().find(|l| l.starts_with(&format!("  {}:", s["path"].as_str().unwrap()))).unwrap();
        let min = line.split(" min=").nth(1).unwrap().split(' ').next().unwrap().parse::<f64>().unwrap();
        assert_eq!(s["min"].as_f64().unwrap(), min, "{line}");
    }
    // Every array of every fixture is listed, as `search --type ndarray` finds them.
    for f in fixtures() {
        let name = f.to_str().unwrap();
        let (code, j) = rasdf(&["info", name, "--json", "--no-show-values"]);
        if code != 0 && j.is_empty() {
            // Not opened: the error is on standard error, as for the text.
            continue;
        }
        let j = json(&j);
        let arrays: Vec<&str> = j["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n.get("array").is_some())
            .map(|n| n["path"].as_str().unwrap())
            .collect();
        let (_, s) = rasdf(&["search", name, "--type", "ndarray", "--json"]);
        let mut found: Vec<&str> = Vec::new();
        let s = json(&s);
        found.extend(s["matches"].as_array().unwrap().iter().map(|m| m["path"].as_str().unwrap()));
        let (mut a, mut b) = (arrays.clone(), found.clone());
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b, "{name}");
        assert!(j["nodes"].as_array().unwrap().iter().all(|n| n.get("value").is_none()), "{name}");
    }
}

#[test]
fn aliases_examples_completions_and_one_error_prefix() {
    let bin = env!("CARGO_BIN_EXE_rasdf");
    let example = common::testdata("example.asdf");
    // asdftool's spelling of to-yaml.
    let dir = common::temp_dir("cli-aliases");
    let out = dir.join("x.yaml");
    assert_eq!(rasdf(&["to_yaml", example.to_str().unwrap(), "-o", out.to_str().unwrap()]).0, 0);
    assert!(std::fs::read_to_string(&out).unwrap().contains("sci:"));
    // Every subcommand's help has an example.
    let help = Command::new(bin).arg("--help").output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let commands: Vec<&str> = help
        .split("Commands:")
        .nth(1)
        .unwrap()
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.strip_prefix("  ")?.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 12, "{commands:?}");
    for c in &commands {
        let o = Command::new(bin).args([c, "--help"]).output().unwrap();
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(text.contains("Example"), "rasdf {c} --help has no example:\n{text}");
    }
    for tool in ["asdf-explode", "asdf-implode"] {
        let o = Command::new(bin.replace("rasdf", tool)).arg("--help").output().unwrap();
        assert!(String::from_utf8(o.stdout).unwrap().contains("Example"), "{tool}");
    }
    // Completions for each shell name every subcommand.
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let (code, script) = rasdf(&["completions", shell]);
        assert_eq!(code, 0);
        for c in &commands {
            assert!(script.contains(c), "{shell} completions lack {c}");
        }
    }
    // One error prefix: usage errors from the parser, and errors of the commands.
    for args in [vec!["diff", "a"], vec!["info"], vec!["nosuchcommand"], vec!["info", "/no/such/file.asdf"]] {
        let o = Command::new(bin).args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(o.stderr).unwrap();
        assert!(err.starts_with("rasdf: "), "{args:?}: {err}");
    }
    let o = Command::new(bin.replace("rasdf", "asdf-explode")).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8(o.stderr).unwrap().starts_with("rasdf: "));
}

#[test]
fn check_names_the_tags_it_could_not_validate() {
    // A Roman file: its datamodel, transform and astropy tags have no schema here.
    let roman = common::testdata("astro/roman_level2.asdf");
    let (code, text) = rasdf(&["check", roman.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    let line = text.lines().find(|l| l.starts_with("not validated: ")).expect(&text);
    assert!(line.contains("asdf://stsci.edu/datamodels/roman/tags/wfi_image-"), "{line}");
    let (_, j) = rasdf(&["check", roman.to_str().unwrap(), "--json"]);
    let j = json(&j);
    let tags = j["unvalidated_tags"].as_array().unwrap();
    assert!(tags.iter().any(|t| t["tag"].as_str().unwrap().contains("roman/tags/wfi_image")), "{tags:?}");
    assert!(tags.iter().all(|t| t["nodes"].as_u64().unwrap() >= 1));
    // Every node with a tag is either validated or listed: the counts add up.
    let f = rasdf::AsdfFile::open(&roman).unwrap();
    let listed: u64 = tags.iter().map(|t| t["nodes"].as_u64().unwrap()).sum();
    let mut tagged = 0u64;
    let mut standard_tags = 0u64;
    f.tree().walk(|_, n| {
        if let Some(t) = n.tag().filter(|t| !t.starts_with("tag:yaml.org,2002:")) {
            tagged += 1;
            if t.starts_with("tag:stsci.edu:asdf/core/") && n.in_standard(f.header().standard()) == Some(true) {
                standard_tags += 1;
            }
        }
    });
    assert!(listed + standard_tags <= tagged && listed > 0, "{listed} + {standard_tags} of {tagged}");
    // A file of core tags alone: nothing listed.
    let (_, text) = rasdf(&["check", common::testdata("example.asdf").to_str().unwrap()]);
    assert!(!text.contains("not validated"), "{text}");
    let (_, j) = rasdf(&["check", common::testdata("example.asdf").to_str().unwrap(), "--json"]);
    assert_eq!(json(&j)["unvalidated_tags"], serde_json::json!([]));
}
