//! Schema validation (`rasdf::schema::validate`, part of `rasdf check`) gives the
//! verdict `asdftool validate` gives: hand-made trees that break the standard's schemas
//! in one way each (and some that only look wrong), and every fixture of the repository,
//! checked against the reference library run live.

use rasdf_testkit as common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rasdf::AsdfFile;

/// Trees (after a `#ASDF_STANDARD` line's version) and whether they are valid.
const CASES: &[(&str, &str, &str, bool)] = &[
    ("ok", "1.6.0", "a: !core/ndarray-1.1.0 {data: [1], datatype: int8, shape: [1]}", true),
    ("lib_int", "1.6.0", "asdf_library: 5", false),
    ("lib_no_name", "1.6.0", "asdf_library: !core/software-1.0.0 {version: '1'}", false),
    ("lib_version_int", "1.6.0", "asdf_library: {name: x, version: 1}", false),
    ("history_int", "1.6.0", "history: 5", false),
    ("history_list", "1.6.0", "history: [{description: d}]", true),
    (
        "history_time",
        "1.6.0",
        "history: {entries: [!core/history_entry-1.0.0 {description: d, time: 2020-01-01T00:00:00}]}",
        true,
    ),
    (
        "extension_class_int",
        "1.6.0",
        "history: {extensions: [!core/extension_metadata-1.0.0 {extension_class: 5}]}",
        false,
    ),
    ("byteorder", "1.6.0", "a: !core/ndarray-1.1.0 {data: [1], datatype: int8, shape: [1], byteorder: middle}", false),
    ("datatype", "1.6.0", "a: !core/ndarray-1.1.0 {data: [1], datatype: int128, shape: [1]}", false),
    ("shape_negative", "1.6.0", "a: !core/ndarray-1.1.0 {data: [1], datatype: int8, shape: [-1]}", false),
    ("offset_negative", "1.6.0", "a: !core/ndarray-1.1.0 {data: [1], datatype: int8, shape: [1], offset: -1}", false),
    ("source_without_byteorder", "1.6.0", "a: !core/ndarray-1.1.0 {source: 0, datatype: int8, shape: [1]}", false),
    ("float16_in_1_5", "1.5.0", "a: !core/ndarray-1.0.0 {data: [1], datatype: float16, shape: [1]}", false),
    ("float16_in_1_6", "1.6.0", "a: !core/ndarray-1.1.0 {data: [1], datatype: float16, shape: [1]}", true),
    (
        "records",
        "1.6.0",
        "a: !core/ndarray-1.1.0 {data: [[1, x]], datatype: [int8, {name: s, datatype: [ascii, 2]}], shape: [1]}",
        true,
    ),
    (
        "record_bad_field",
        "1.6.0",
        "a: !core/ndarray-1.1.0 {data: [[1]], datatype: [{name: 5, datatype: int8}], shape: [1]}",
        false,
    ),
    ("complex", "1.6.0", "a: !core/complex-1.0.0 1+2j", true),
    ("complex_text", "1.6.0", "a: !core/complex-1.0.0 hello", false),
    ("integer_sign", "1.6.0", "a: !core/integer-1.1.0 {sign: '*', words: [1]}", false),
    ("integer", "1.6.0", "a: !core/integer-1.1.0 {sign: '-', words: [1, 2]}", true),
    ("software_name_int", "1.6.0", "a: !core/software-1.0.0 {name: 5, version: x}", false),
    ("other_version_not_checked", "1.6.0", "a: !core/software-9.9.9 {name: 5}", true),
    ("unknown_tag", "1.6.0", "a: !core/bogus-1.0.0 {x: 1}", true),
    ("column_in_1_5", "1.5.0", "c: !core/column-1.0.0 {name: x, data: [1], bogus: 1}", false),
    (
        "table_in_1_5",
        "1.5.0",
        "t: !core/table-1.0.0 {columns: [!core/column-1.0.0 {name: x, data: !core/ndarray-1.0.0 [1]}]}",
        true,
    ),
    ("unit_in_1_5", "1.5.0", "u: !unit/unit-1.0.0 [m]", false),
    ("unit_tagged_number_is_text", "1.5.0", "u: !unit/unit-1.0.0 5", true),
    ("quantity_in_1_5", "1.5.0", "q: !unit/quantity-1.1.0 {value: 1.5, unit: !unit/unit-1.0.0 m}", true),
    ("json_reference", "1.6.0", "a: {$ref: 'other.asdf#/x'}", true),
    ("alias_checked_once", "1.6.0", "a: &s !core/software-1.0.0 {name: 5, version: x}\nb: *s", false),
    ("recursive_alias", "1.6.0", "a: &l [1, *l]\nb: !core/ndarray-1.1.0 {data: [1], datatype: int8, shape: [1]}", true),
    // The error shows the node: a list holding itself is shown a few levels deep.
    ("recursive_alias_invalid", "1.6.0", "asdf_library: &l [1, *l, *l]", false),
    (
        "no_standard_1_0_0",
        "",
        "a: !core/ndarray-1.0.0 {data: [1], datatype: int8, shape: [1], byteorder: middle}",
        false,
    ),
];

fn write_cases(dir: &Path) -> Vec<(PathBuf, bool)> {
    CASES
        .iter()
        .map(|&(name, standard, tree, valid)| {
            let path = dir.join(format!("{name}.asdf"));
            let standard = if standard.is_empty() { String::new() } else { format!("#ASDF_STANDARD {standard}\n") };
            let root = if standard.contains("1.0.0") || standard.is_empty() { "asdf-1.0.0" } else { "asdf-1.1.0" };
            let text = format!(
                "#ASDF 1.0.0\n{standard}%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/{root}\n{tree}\n...\n"
            );
            std::fs::write(&path, text).unwrap();
            (path, valid)
        })
        .collect()
}

/// The verdict of rasdf's validation: "valid" or "invalid", with the errors.
fn ours(path: &Path) -> (bool, String) {
    let f = AsdfFile::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let errors = rasdf::schema::validate(f.tree(), Some(f.header().standard()));
    (errors.is_empty(), errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))
}

#[test]
fn hand_made_trees_are_judged_as_stated() {
    let dir = common::temp_dir("schema-cases");
    for (path, valid) in write_cases(&dir) {
        let (ok, errors) = ours(&path);
        assert_eq!(ok, valid, "{}: {errors}", path.display());
        if !ok {
            assert!(errors.contains("tree path /"), "{errors}");
        }
    }
    // An error names the path and the schema.
    let (_, errors) = ours(&dir.join("software_name_int.asdf"));
    assert_eq!(errors, "tree path /a/name: 5 is not of type 'string' (schema core/software-1.0.0)");
    let (_, errors) = ours(&dir.join("alias_checked_once.asdf"));
    assert_eq!(errors.matches("not of type").count(), 1, "an aliased node is checked once: {errors}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn verdicts_are_the_reference_validators() {
    let dir = common::temp_dir("schema-reference");
    let mut files: Vec<PathBuf> = write_cases(&dir).into_iter().map(|(p, _)| p).collect();
    files.extend(common::reference_files());
    for sub in ["pyasdf", "pyasdf/arrays", "astro", "oldasdf", "strings", "yaml", "scalars"] {
        for e in std::fs::read_dir(common::testdata(sub)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "asdf") {
                files.push(p);
            }
        }
    }
    let args: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let Some(json) = common::run_python("validate_plain.py", &args) else { return };
    let theirs: BTreeMap<String, String> = serde_json::from_str(&json).unwrap();
    let mut differences = Vec::new();
    let mut invalid = 0;
    for path in &files {
        let verdict = &theirs[&path.to_string_lossy().to_string()];
        // A file the reference cannot open at all has no verdict to compare.
        if verdict == "error" {
            continue;
        }
        let Ok(f) = AsdfFile::open(path) else { continue };
        let errors = rasdf::schema::validate(f.tree(), Some(f.header().standard()));
        invalid += usize::from(verdict == "invalid");
        if errors.is_empty() != (verdict == "valid") {
            differences.push(format!("{}: the reference says {verdict}, rasdf {errors:?}", path.display()));
        }
    }
    println!("{} files, {invalid} invalid to the reference", files.len());
    assert!(invalid >= 20, "the cases must include invalid trees");
    assert!(differences.is_empty(), "{}", differences.join("\n"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// xorshift64*: a small, fixed generator, so a seed names the same cases everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[usize::try_from(self.next() % from.len() as u64).unwrap_or(0)]
    }
}

/// Every `pattern` and `patternProperties` key of the bundled schemas.
fn bundled_patterns() -> Vec<String> {
    fn collect(node: rasdf::tree::NodeRef<'_>, out: &mut Vec<String>) {
        if let Some(pairs) = node.pairs() {
            for (k, v) in pairs {
                match (k.as_str(), v.as_str()) {
                    (Some("pattern"), Some(p)) => out.push(p.to_string()),
                    (Some("patternProperties"), None) => {
                        out.extend(v.pairs().into_iter().flatten().filter_map(|(p, _)| p.as_str().map(str::to_string)));
                    }
                    _ => {}
                }
                collect(v, out);
            }
        } else if let Some(items) = node.items() {
            for item in items {
                collect(item, out);
            }
        }
    }
    let mut out = Vec::new();
    let mut dirs = vec![common::root().join("rasdf/schemas")];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "yaml") {
                let text = std::fs::read_to_string(&p).unwrap();
                let Ok(tree) = rasdf::tree::Tree::parse(&text, &rasdf::Limits::default()) else { continue };
                if let Some(root) = tree.root() {
                    collect(root, &mut out);
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// `pattern` and `patternProperties` search as the reference's validator searches them,
/// with Python's `re`: the patterns of the bundled schemas and 3 000 seeded random ones
/// (anchors, flags, classes, escapes and repetitions as Python reads them, and much that
/// Python refuses), each on texts with newlines, digits of other scripts, separators.
/// Where Python compiles a pattern, rasdf finds what Python finds or says it cannot check
/// it (look-around, backreferences...); where Python refuses one, rasdf cannot check it.
#[test]
fn patterns_search_as_pythons_re() {
    let bundled = bundled_patterns();
    assert!(bundled.len() >= 10, "{bundled:?}");
    const PIECES: &[&str] = &[
        "a",
        "b",
        "A",
        "é",
        ".",
        "^",
        "$",
        r"\Z",
        r"\A",
        r"\b",
        r"\B",
        r"\d",
        r"\D",
        r"\w",
        r"\W",
        r"\s",
        r"\S",
        "*",
        "+",
        "?",
        "*?",
        "+?",
        "{2}",
        "{1,}",
        "{,2}",
        "{",
        "}",
        "{1,2",
        "{,}",
        "(",
        ")",
        "(?:",
        "(?i)",
        "(?m)",
        "(?s)",
        "(?x)",
        "(?a)",
        "(?i:",
        "(?-i:",
        "(?s:",
        "|",
        "[ab]",
        "[^a]",
        "[a-c]",
        "[]a]",
        "[&&]",
        "[--a]",
        r"[\d]",
        r"[\s]",
        r"[\w-]",
        "[",
        "]",
        r"\n",
        r"\x41",
        r"\u00e9",
        r"\101",
        r"\0",
        r"\1",
        r"\<",
        r"\-",
        " ",
        "#",
        "\n",
        "(?=a)",
        "(?#c)",
        r"\\",
        "-",
        ",",
        "(?P<n>",
        "٣",
        "[[:digit:]]",
        r"[\b]",
        r"\t",
        "a{0}",
    ];
    const TEXT: &[&str] =
        &["a", "b", "A", "é", "\n", " ", "-", "{", "}", "1", "_", "٣", "\u{1c}", ",", "[", "]", "&", "<", "#"];
    // `RASDF_PATTERN_SEED` and `RASDF_PATTERN_CASES` for other and more cases.
    let seed: u64 = std::env::var("RASDF_PATTERN_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    let count: usize = std::env::var("RASDF_PATTERN_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(3_000);
    let mut rng = Rng(0x5eed_2024_0000_0001 ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut texts = || -> Vec<String> {
        let mut out = vec![String::new()];
        for _ in 0..5 {
            let n = 1 + rng.next() % 6;
            out.push((0..n).map(|_| rng.pick(TEXT)).collect());
        }
        out
    };
    let mut cases: Vec<(String, Vec<String>)> = bundled.iter().map(|p| (p.clone(), texts())).collect();
    let mut shapes = Rng(0x5eed_2024_0000_0002 ^ seed.wrapping_mul(0xC2B2_AE3D_27D4_EB4F));
    for _ in 0..count {
        let n = 1 + shapes.next() % 7;
        let pattern: String = (0..n).map(|_| shapes.pick(PIECES)).collect();
        cases.push((pattern, texts()));
    }
    let ours: Vec<Result<Vec<bool>, String>> = cases
        .iter()
        .map(|(p, t)| rasdf::schema::search_as_python(p, &t.iter().map(String::as_str).collect::<Vec<_>>()))
        .collect();
    // The standard's own patterns are all checked.
    for ((p, _), r) in cases.iter().zip(&ours).take(bundled.len()) {
        assert!(r.is_ok(), "{p:?}: {r:?}");
    }
    let dir = common::temp_dir("patterns");
    let file = dir.join("cases.json");
    std::fs::write(&file, serde_json::to_string(&cases).unwrap()).unwrap();
    let Some(json) = common::run_python("re_search.py", &[&file]) else { return };
    let theirs: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
    let mut differences = Vec::new();
    let (mut compared, mut refused, mut unsupported) = (0, 0, 0);
    for (((pattern, texts), ours), theirs) in cases.iter().zip(&ours).zip(&theirs) {
        match (ours, theirs.get("error")) {
            (Err(_), Some(_)) => refused += 1,
            (Ok(_), Some(e)) => differences.push(format!("{pattern:?}: Python refuses it ({e}), rasdf searches")),
            (Err(why), None) if why.contains("Python refuses") => {
                differences.push(format!("{pattern:?}: Python compiles it, rasdf says {why}"));
            }
            (Err(_), None) => unsupported += 1,
            (Ok(found), None) => {
                compared += 1;
                let want: Vec<bool> = serde_json::from_value(theirs.clone()).unwrap();
                if *found != want {
                    differences.push(format!("{pattern:?} on {texts:?}: Python {want:?}, rasdf {found:?}"));
                }
            }
        }
    }
    println!("{compared} patterns compared, {refused} refused by both, {unsupported} Python's only");
    assert!(compared > 500 && refused > 200, "{compared} {refused}");
    assert!(differences.is_empty(), "{} differences:\n{}", differences.len(), differences.join("\n"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Schemas with one extension: tag `asdf://u/t` checked against `{uniqueItems: true}`.
fn unique_items_schemas() -> rasdf::schema::Schemas {
    let mut s = rasdf::schema::Schemas::new();
    s.add_document("asdf://u/s", "id: asdf://u/s\nuniqueItems: true\n").unwrap();
    s.add_extension(None, vec![("asdf://u/t".into(), vec!["asdf://u/s".into()])]).unwrap();
    s
}

/// A `$ref` of a schema the caller gave that names no schema (another document, a
/// fragment) is a check that cannot be made, never a check passed; the standard's own
/// schemas are checked as before.
#[test]
fn a_dangling_ref_in_a_given_schema_is_a_check_not_made() {
    use rasdf::schema::SchemaErrorKind;
    let judge = |schema: &str| {
        let mut s = rasdf::schema::Schemas::new();
        s.add_document("asdf://u/s", &format!("id: asdf://u/s\n{schema}")).unwrap();
        s.add_extension(None, vec![("asdf://u/t".into(), vec!["asdf://u/s".into()])]).unwrap();
        let t = rasdf::tree::Tree::parse("a: !<asdf://u/t> {s: 1}\n", &rasdf::Limits::default()).unwrap();
        rasdf::schema::validate_with(&t, Some("1.6.0"), &s)
    };
    for schema in [
        "$ref: asdf://u/nonexistent-1.0.0\n",
        "allOf: [{$ref: 'asdf://u/nonexistent-1.0.0'}, {$ref: 'file:///etc/passwd'}]\n",
        "$ref: '#/definitions/nope'\n",
        "anyOf: [{$ref: other-1.0.0}]\n",
    ] {
        let errors = judge(schema);
        assert!(!errors.is_empty(), "{schema}: taken as met");
        assert!(errors.iter().all(|e| e.kind == SchemaErrorKind::CannotCheck), "{schema}: {errors:?}");
        assert!(errors[0].message.contains("names no schema"), "{errors:?}");
    }
    // A `$ref` that resolves, and one that fails, as before.
    assert!(judge("definitions: {x: {type: object}}\n$ref: '#/definitions/x'\n").is_empty());
    let invalid = judge("definitions: {x: {type: array}}\n$ref: '#/definitions/x'\n");
    assert!(invalid.len() == 1 && invalid[0].kind == SchemaErrorKind::Invalid, "{invalid:?}");
}

/// rasdf's verdict on `uniqueItems` for the YAML list `list`: whether it is unique.
fn unique_verdict(schemas: &rasdf::schema::Schemas, list: &str) -> bool {
    let t = rasdf::tree::Tree::parse(&format!("a: !<asdf://u/t> {list}\n"), &rasdf::Limits::default()).unwrap();
    let errors = rasdf::schema::validate_with(&t, Some("1.6.0"), schemas);
    assert!(errors.iter().all(|e| e.message.contains("non-unique")), "{list}: {errors:?}");
    errors.is_empty()
}

/// `uniqueItems` gives the reference's verdicts (numbers by value and exactly, `true`
/// not `1`, lists and mappings by their items, a NaN equal to nothing): on hand-made
/// lists, and on 2 000 seeded random ones checked against the reference live.
#[test]
fn unique_items_are_judged_as_the_reference_judges_them() {
    let schemas = unique_items_schemas();
    let cases: &[(&str, bool)] = &[
        ("[1, 2, 3]", true),
        ("[1, 1.0]", false),
        ("[1, true]", true),
        ("[0, false, -0.0]", false),
        ("[[1], [1.0]]", false),
        ("[[1], [true]]", true),
        ("[{a: 1, b: 2}, {b: 2, a: 1.0}]", false),
        ("[{1: a}, {true: a}]", false),
        ("[{a: 1}, {a: 1, b: 2}]", true),
        ("[.nan, .nan]", true),
        ("[9007199254740993, 9007199254740992.0]", true),
        ("[10000000000000000, 1.0e+16]", false),
        ("[100000000000000000000, 1.0e+20]", false),
        ("[100000000000000000001, 1.0e+20]", true),
        ("[!!binary YQ==, !!binary YQ==]", false),
        ("[a, 'a']", false),
        ("['1', 1]", true),
        ("[[], {}]", true),
        ("[null, null]", false),
        ("[&x [1, 2], *x]", false),
        // A list that holds itself is equal to nothing (the reference fails on it).
        ("[&y [1, *y], &z [1, *z]]", true),
    ];
    for &(list, unique) in cases {
        assert_eq!(unique_verdict(&schemas, list), unique, "{list}");
    }
    // Lists nested deeper than equality looks (where the reference's recursion fails)
    // equal nothing; 100 levels less, they are equal.
    for (depth, unique) in [(600, true), (500, false)] {
        let deep = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        assert_eq!(unique_verdict(&schemas, &format!("[{deep}, {deep}]")), unique, "{depth}");
    }
    const VALUES: &[&str] = &[
        "1",
        "1.0",
        "true",
        "false",
        "0",
        "0.0",
        "-0.0",
        "'1'",
        "null",
        "[1]",
        "[1.0]",
        "{a: 1}",
        "{a: 1.0}",
        "{b: 1}",
        "{1: a}",
        "{1.0: a}",
        "{true: a}",
        "9007199254740993",
        "9007199254740992.0",
        "1.0e+16",
        "10000000000000000",
        "[]",
        "{}",
        "a",
        "!!binary YQ==",
        "{a: [1, {b: 2}]}",
        "{a: [1.0, {b: 2.0}]}",
        "[[]]",
        "2",
        "[1, a]",
        "[a, 1]",
        "{a: b, c: d}",
        "{c: d, a: b}",
    ];
    let mut rng = Rng(0x5eed_2024_0000_0003);
    let mut lists: Vec<String> = cases.iter().map(|(l, _)| (*l).to_string()).collect();
    for _ in 0..2_000 {
        let n = 2 + rng.next() % 3;
        lists.push(format!("[{}]", (0..n).map(|_| rng.pick(VALUES)).collect::<Vec<_>>().join(", ")));
    }
    let ours: Vec<bool> = lists.iter().map(|l| unique_verdict(&schemas, l)).collect();
    let dir = common::temp_dir("unique-items");
    let file = dir.join("lists.json");
    std::fs::write(&file, serde_json::to_string(&lists).unwrap()).unwrap();
    let Some(json) = common::run_python("unique_items.py", &[&file]) else { return };
    let theirs: Vec<String> = serde_json::from_str(&json).unwrap();
    let mut differences = Vec::new();
    for ((list, ours), theirs) in lists.iter().zip(&ours).zip(&theirs) {
        let theirs = match theirs.as_str() {
            "valid" => true,
            "invalid" => false,
            _ => continue,
        };
        if *ours != theirs {
            differences.push(format!("{list}: the reference says unique {theirs}, rasdf {ours}"));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `uniqueItems` on 100 000 items takes n log n, not n^2 (5 10^9 comparisons): numbers,
/// texts, lists and mappings, all different, then with one list twice (once with a
/// float for its integer).
#[test]
fn unique_items_of_100_000_are_checked_fast() {
    let schemas = unique_items_schemas();
    let n = 100_000;
    let item = |i: usize| match i % 4 {
        0 => i.to_string(),
        1 => format!("t{i}"),
        2 => format!("[{i}, x]"),
        _ => format!("{{k: {i}, v: [1, 2]}}"),
    };
    let items: Vec<String> = (0..n).map(item).collect();
    let distinct = format!("[{}]", items.join(", "));
    // The list `[50002, x]` again, its number a float.
    let twice = format!("[{}, [{}.0, x]]", items.join(", "), n / 2 + 2);
    for (list, unique) in [(distinct, true), (twice, false)] {
        let start = std::time::Instant::now();
        assert_eq!(unique_verdict(&schemas, &list), unique);
        let took = start.elapsed();
        println!("{n} items, unique {unique}: {took:?}");
        assert!(took < std::time::Duration::from_secs(20), "{took:?}");
    }
}

/// Items that are doubling chains of aliases (each level a list of the one below
/// twice, 60 levels: 2^60 paths) are compared in time linear in their nodes, equal or
/// not, and an item holding itself is equal to nothing: no hang.
#[test]
fn unique_items_that_alias_many_paths_are_compared_once_each() {
    let schemas = unique_items_schemas();
    let chain = |name: &str, leaf: &str| {
        let mut s = format!("&{name}0 [{leaf}]");
        for i in 1..60 {
            s = format!("&{name}{i} [{s}, *{name}{}]", i - 1);
        }
        s
    };
    let start = std::time::Instant::now();
    // Two distinct chains of the same shape: equal.
    assert!(!unique_verdict(&schemas, &format!("[{}, {}]", chain("a", "1"), chain("b", "1.0"))));
    // The same chain twice: equal.
    assert!(!unique_verdict(&schemas, &format!("[{}, *a59]", chain("a", "1"))));
    // Differing at the bottom: unique.
    assert!(unique_verdict(&schemas, &format!("[{}, {}]", chain("a", "1"), chain("b", "2"))));
    // A list holding itself twice, and another of the same shape: equal to nothing.
    assert!(unique_verdict(&schemas, "[&s [*s, *s], &t [*t, *t]]"));
    assert!(unique_verdict(&schemas, "[&s [1, [*s, *s]], &t [1, [*t, *t]]]"));
    assert!(start.elapsed() < std::time::Duration::from_secs(20), "{:?}", start.elapsed());
}

mod strict {
    //! `validate_strict`: "valid" only when every check was made as the reference's
    //! validator makes it, with the annotations it stores on the nodes.

    use std::collections::HashMap;

    use rasdf::Limits;
    use rasdf::schema::{Annotation, Schemas, Strict, validate_strict};
    use rasdf::tree::Tree;

    const NDARRAY: &str = include_str!("../schemas/standard/core/ndarray-1.1.0.yaml");
    const COMPLEX: &str = include_str!("../schemas/standard/core/complex-1.0.0.yaml");
    const S: &str = "http://stsci.edu/schemas/asdf/";

    fn schemas(docs: &[(&str, &str)]) -> Schemas {
        let mut s = Schemas::new();
        for (uri, text) in docs {
            assert!(s.add_document(uri, text).unwrap(), "{uri}");
        }
        s
    }

    fn tags(pairs: &[(&str, &str)]) -> HashMap<String, Vec<String>> {
        pairs.iter().map(|(t, u)| (t.to_string(), vec![u.to_string()])).collect()
    }

    fn judge(yaml: &str, tags: &HashMap<String, Vec<String>>, s: &Schemas) -> (Strict, Tree) {
        let text = format!("%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- {yaml}\n...\n");
        let tree = Tree::parse(&text, &Limits::default()).unwrap();
        (validate_strict(&tree, tags, s), tree)
    }

    fn nd_tags() -> HashMap<String, Vec<String>> {
        tags(&[("tag:stsci.edu:asdf/core/ndarray-1.1.0", &format!("{S}core/ndarray-1.1.0"))])
    }

    #[test]
    fn a_valid_array_is_valid_with_its_property_order() {
        let s = schemas(&[(&format!("{S}core/ndarray-1.1.0"), NDARRAY), (&format!("{S}core/complex-1.0.0"), COMPLEX)]);
        let yaml = "{a: !core/ndarray-1.1.0 {source: 0, datatype: float32, byteorder: little, shape: [2, 3]}, \
                    b: [!core/ndarray-1.1.0 {source: 1, datatype: int8, byteorder: big, shape: [4]}]}";
        let (got, tree) = judge(yaml, &nd_tags(), &s);
        let Strict::Valid(notes) = got else { panic!("{got:?}") };
        assert_eq!(notes.len(), 2, "{notes:?}");
        for n in &notes {
            assert_eq!(tree.node(n.node).tag(), Some("tag:stsci.edu:asdf/core/ndarray-1.1.0"));
            let Annotation::PropertyOrder(order) = &n.annotation else { panic!("{n:?}") };
            assert_eq!(order[..3], ["source", "data", "mask"]);
        }
        // A wrong byte order, a negative dimension, no datatype: invalid.
        for bad in [
            "!core/ndarray-1.1.0 {source: 0, datatype: float32, byteorder: middle, shape: [2]}",
            "!core/ndarray-1.1.0 {source: 0, datatype: float32, byteorder: big, shape: [-2]}",
            "!core/ndarray-1.1.0 {source: 0, byteorder: big, shape: [2]}",
        ] {
            assert_eq!(judge(&format!("{{a: {bad}}}"), &nd_tags(), &s).0, Strict::Invalid, "{bad}");
        }
    }

    #[test]
    fn a_schema_not_there_is_named_not_taken_as_met() {
        // complex-1.0.0, which the mask's `$ref` names, is not among the documents.
        let s = schemas(&[(&format!("{S}core/ndarray-1.1.0"), NDARRAY)]);
        let yaml = "{a: !core/ndarray-1.1.0 {source: 0, datatype: float32, byteorder: little, shape: [2], mask: x}}";
        assert_eq!(judge(yaml, &nd_tags(), &s).0, Strict::Unsure { missing: vec![format!("{S}core/complex-1.0.0")] });
        // The tag's own schema missing.
        let none = schemas(&[]);
        let (got, _) = judge(yaml, &nd_tags(), &none);
        assert_eq!(got, Strict::Unsure { missing: vec![format!("{S}core/ndarray-1.1.0")] });
        // A tag the map does not list is not checked: valid, with nothing stored.
        assert_eq!(judge(yaml, &HashMap::new(), &none).0, Strict::Valid(Vec::new()));
    }

    #[test]
    fn a_list_holding_itself_is_judged_at_once() {
        // `enum` looks for tagged nodes inside the instance: once each, not once a path.
        let t = tags(&[("tag:x/a-1.0.0", "http://x/a-1.0.0")]);
        let doc = "%YAML 1.1\n---\nid: http://x/a-1.0.0\nproperties:\n  k:\n    enum: [[{a: 1}]]\n...\n";
        let s = schemas(&[("http://x/a-1.0.0", doc)]);
        let items = vec!["*a"; 40].join(", ");
        let (got, _) = judge(&format!("!<tag:x/a-1.0.0> {{k: &a [{items}]}}"), &t, &s);
        assert_eq!(got, Strict::Invalid);
        // A tagged node inside: asdf's equality tells it from the untagged `1` of the
        // schema, rasdf's does not.
        let (got, _) = judge("!<tag:x/a-1.0.0> {k: [!<tag:y> {a: 1}]}", &t, &s);
        assert!(matches!(got, Strict::Unsure { .. }), "{got:?}");
        assert!(matches!(judge("!<tag:x/a-1.0.0> {k: [{a: 1}]}", &t, &s).0, Strict::Valid(_)));
    }

    #[test]
    fn annotations_the_reference_may_or_may_not_store_are_unsure() {
        let t = tags(&[("tag:x/a-1.0.0", "http://x/a-1.0.0")]);
        let doc = |body: &str| {
            format!(
                "%YAML 1.1\n---\n$schema: http://stsci.edu/schemas/yaml-schema/draft-01\nid: http://x/a-1.0.0\n{body}\n...\n"
            )
        };
        let cases = [
            // Stored, one value: valid.
            ("type: object\nflowStyle: block", Some(1)),
            // Inside `not` (the reference stops at the first failure there).
            ("not:\n  type: array\n  flowStyle: flow", None),
            ("not:\n  flowStyle: flow\n  type: array", None),
            // Two values of one annotation on the node.
            ("allOf:\n  - flowStyle: flow\n  - flowStyle: block", None),
            // The same twice: once.
            ("allOf:\n  - flowStyle: flow\n  - flowStyle: flow", Some(1)),
            // A `oneOf` branch after the one met.
            ("oneOf:\n  - type: object\n  - type: array\n    flowStyle: flow", None),
            // Before it: stored as the reference stores it.
            ("oneOf:\n  - type: array\n    flowStyle: flow\n  - type: object", Some(1)),
            // An annotation the writer cannot take.
            ("propertyOrder: 5", None),
            // Not for this kind of node: nothing stored.
            ("style: literal", Some(0)),
        ];
        for (body, want) in cases {
            let s = schemas(&[("http://x/a-1.0.0", &doc(body))]);
            let (got, _) = judge("!<tag:x/a-1.0.0> {k: 1}", &t, &s);
            match (want, &got) {
                (Some(n), Strict::Valid(notes)) => assert_eq!(notes.len(), n, "{body}: {notes:?}"),
                (None, Strict::Unsure { .. }) => {}
                _ => panic!("{body}: {got:?}"),
            }
        }
    }
}
