#![allow(clippy::cast_possible_truncation)] // test code on 64-bit hosts
//! The fast YAML scanner gives exactly libyaml's tree wherever it does not give up, and
//! does not give up on the YAML writers emit.

use rasdf_testkit as common;

use rasdf::Limits;
use rasdf::tree::Tree;
use rasdf::tree::emit::Emitter;

fn tree_texts() -> Vec<(String, String)> {
    let mut files = common::reference_files();
    for sub in ["pyasdf", "pyasdf/arrays", "astro", "oldasdf", "strings", "scalars", "bad"] {
        for e in std::fs::read_dir(common::testdata(sub)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "asdf") {
                files.push(p);
            }
        }
    }
    let mut out = Vec::new();
    for p in files {
        let bytes = std::fs::read(&p).unwrap();
        let Ok(h) = rasdf::header::parse(&bytes) else { continue };
        let Some(r) = h.tree else { continue };
        let text = String::from_utf8(bytes[r.start as usize..r.end as usize].to_vec()).unwrap();
        out.push((p.display().to_string(), text));
    }
    out
}

fn check_same(name: &str, text: &str) -> bool {
    let limits = Limits::default();
    let slow = Tree::parse_libyaml(text, &limits);
    match Tree::parse_fast(text, &limits) {
        None => false,
        Some(Ok(fast)) => {
            let slow = slow.unwrap_or_else(|e| panic!("{name}: fast accepted what libyaml refuses: {e:?}"));
            assert_eq!(Emitter::new(&fast).document(), Emitter::new(&slow).document(), "{name}");
            true
        }
        Some(Err(e)) => {
            assert!(slow.is_err(), "{name}: fast failed ({e:?}) where libyaml did not");
            true
        }
    }
}

#[test]
fn fast_scanner_matches_libyaml_on_every_fixture() {
    let texts = tree_texts();
    let mut accepted = 0;
    for (name, text) in &texts {
        if check_same(name, text) {
            accepted += 1;
        }
        // And on what rasdf's emitter writes for it.
        if let Ok(t) = Tree::parse(text, &Limits::default()) {
            let out = Emitter::new(&t).document();
            assert!(
                check_same(&format!("{name} (re-emitted)"), &out),
                "{name}: the fast scanner gives up on rasdf's own YAML:\n{out}"
            );
        }
    }
    assert!(accepted * 10 >= texts.len() * 9, "the fast scanner took {accepted} of {} trees", texts.len());
    // What the reference writes, old and new, wrapped and folded strings included, it
    // takes whole.
    for (name, text) in &texts {
        if name.contains("oldasdf") || name.contains("strings") {
            assert!(Tree::parse_fast(text, &Limits::default()).is_some(), "{name}: the fast scanner gave up");
        }
    }
}

/// The YAML feature fixtures (testdata/yaml: anchors, tags, block scalars, values on the
/// line after their key, and YAML the reference refuses): where the fast scanner does not
/// give up, it gives libyaml's tree or fails where libyaml fails.
#[test]
fn fast_scanner_matches_libyaml_on_the_yaml_fixtures() {
    let mut checked = 0;
    for e in std::fs::read_dir(common::testdata("yaml")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "asdf") {
            let bytes = std::fs::read(&p).unwrap();
            let h = rasdf::header::parse(&bytes).unwrap();
            let r = h.tree.unwrap();
            let text = String::from_utf8(bytes[r.start as usize..r.end as usize].to_vec()).unwrap();
            check_same(&p.display().to_string(), &text);
            checked += 1;
        }
    }
    assert!(checked >= 25, "{checked} fixtures");
}

#[test]
fn fast_scanner_edge_cases() {
    let cases = [
        "%YAML 1.1\n---\na: 1\nb:\n- x\n- y\nc: {d: [1, 2], e: 'it''s'}\n...\n",
        "%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\na: !core/ndarray-1.0.0\n  source: 0\n  shape: [2, 3]\n...\n",
        "%YAML 1.1\n---\n- a: 1\n  b: 2\n- - 1\n  - 2\n-\n  c: 3\n- &x [1]\n- *x\n...\n",
        "%YAML 1.1\n---\nk: {author: The ASDF Developers, homepage: 'http://x',\n  name: asdf}\nl: [a long, plain\n    scalar, x]\n",
        "%YAML 1.1\n---\na: \"esc\\n\\t\\u00e9\\\\\"\nb: x # comment\n",
        "%YAML 1.1\n---\na: |\n  block\nb: 1\n",
        "%YAML 1.1\n---\na: 'multi\n  line'\n",
        "%YAML 1.1\n---\na: plain\n  continued\n",
        "%YAML 1.1\n---\n? complex\n: key\n",
        "%YAML 1.1\n---\na: [!foo, 1]\n",
        "%YAML 1.1\n---\na: 1:30\nb: [1:30]\n",
        "%YAML 1.1\n---\r\na: 1\r\nb:\r\n  c: 2\r\n...\r\n",
        "%YAML 1.1\n--- {a: 1}\n...\n",
        "%YAML 1.1\n---\na:\nb: !!str\nc: &a\nd: *a\n",
        "%YAML 1.1\n---\n# comment\na: 1\n\n  # indented comment\nb: 2\n",
        // `?` starts a complex key in a flow collection even before a non-blank.
        "%YAML 1.1\n---\na: [?x, 1]\nb: {?y: 2}\nc: [x?, y]\n",
        // Tag handles: `!`, `!!` and `!word!` only; libyaml stops a handle at its
        // second `!` (so `!!o!` and `!a!b!` are errors there).
        "%YAML 1.1\n%TAG !a-b_9! tag:x.org:\n---\na: !a-b_9!t 1\n",
        "%YAML 1.1\n%TAG !! tag:x.org:\n---\na: !!t 1\n",
        "%YAML 1.1\n%TAG !!o! tag:x.org:\n---\na: 1\n",
        "%YAML 1.1\n%TAG !a!b! tag:x.org:\n---\na: 1\n",
        "%YAML 1.1\n%TAG !!! tag:x.org:\n---\na: 1\n",
        "%YAML 1.1\n%TAG !a tag:x.org:\n---\na: 1\n",
    ];
    for (n, c) in cases.iter().enumerate() {
        check_same(&format!("case {n}"), c);
    }
    assert!(Tree::parse_fast(cases[0], &Limits::default()).is_some());
    assert!(Tree::parse_fast(cases[17], &Limits::default()).is_some(), "a named tag handle");
}

/// Quoted scalars over several lines (as the reference writes a string holding line
/// breaks), plain ones (as it wraps a long string) and block scalars (as it writes
/// `!!binary`) are read by the fast scanner to
/// libyaml's values, folded and chomped alike; it gives up where libyaml fails or where
/// a multi-line scalar would be a key. (Before, any of them sent the whole tree to
/// libyaml, 2.5 times slower.)
#[test]
fn multi_line_and_block_scalars_read_as_libyaml_reads_them() {
    let taken = [
        "a: 'multi\n  line'\n",
        "a: 'x\n\n  y'\n",
        "a: 'x  \n  \n\n  y  '\nb: 1\n",
        "a: \"x\\\n  y\"\n",
        "a: \"x\\\n\n  y\"\n",
        "s: 'line1\n\n  line2\n\n  '\nt: 'a\n\n  b'\n",
        "- 'a\n  b'\n- c\n",
        "a: \"tab\\t \n  next\"\n",
        "a: [x, 'y\n  z']\n",
        "a: 'x\r\n  y'\r\nb: 2\r\n",
        "a: 'x\n\t y'\n",
        "a: \"\n  x\"\n",
        "a: |\n  block\nb: 1\n",
        "a: |-\n  x\n\n\nb: 1\n",
        "a: |+\n  x\n\n\nb: 1\n",
        "a: |2\n    x\n   y\n",
        "a: >\n  folded\n  text\n\n  para\n   more\n  end\n",
        "a: >-\n  x\n",
        "- |\n  x\n- >\n  y\n  z\n",
        "a:\n  b: |\n    deep\n    text\n  c: 1\n",
        "a: !!binary |\n  AAFieXRlcw==\nb: 2\n",
        "a: |\n\n  leading empty\n",
        "a: | # comment\n  x\n",
        "a: |\n  x\n# comment\nb: 1\n",
        "a: |\n",
        "a: >\n  a\n   b\n  c\n",
        "a: &anc |\n  x\nb: *anc\n",
        "a: |1-\n  x\n",
        "a: >+\n\n  x\n\n",
        "top:\n- a: |\n    in seq map\n  b: 2\n",
        "a: |\n  x\n  \tt\n",
        "k:\n- |\n  x\n- y\n",
        // Plain scalars over several lines, as the reference wraps long strings.
        "s: word word word\n  word word\n  word\nb: 1\n",
        "s: a\n\n  b\n\n\nc: 2\n",
        "- a b\n  c\n- d\n",
        "k:\n  - a b\n    c   d  \n  - e\n",
        "a: x\n - y\n",
        "a: x\n  'q' [r] {s} *t &u !v |w >x %y @z\n",
        "a: foo\n  bar\n# c\nb: 1\n",
        "a: !t foo\n  bar\n",
        "d: {k: 'lorem ipsum lorem\n    ipsum '}\nl: ['x x x\n    x ']\n",
        // Nested block sequences, as PyYAML writes a list of lists holding mappings.
        "- - a\n  - {x: b}\n- c\n",
        "k:\n- - - a\n    - b\n  - c\n- d\n",
        "- - x: 1\n    y: 2\n  - z\n",
        // A quoted item holding an escaped quote and a colon is not a key.
        "- \"a \\\":b\"\n- 'c '':d'\n- \"k\": v\n",
    ];
    let refused = [
        "'a\n  b': 1\n",
        "a: 'x\n---\n  y'\n",
        "a: 'x\n",
        "a: 'x\n  y': z\n",
        "a: |0\n  x\n",
        "a: |\n\tx\n",
        "a: |\n   \n  x\n",
        "a:\n  b: |\n      x\n    c: 1\n",
        "a: |++\n  x\n",
        "a: |x\n  y\n",
        "{'a\n  b': 1}\n",
        // libyaml-safer fails on a block scalar's last line with no line break.
        "a: |\n  x",
        "a: foo\n  # comment\n  bar\n",
        "a: foo\n  b: c\n",
        "a: foo\n  b #c\n",
        "a: foo\n\tbar\n",
        "a: foo\n  bar:\n",
    ];
    let doc = |body: &str| format!("%YAML 1.1\n---\n{body}");
    for (n, body) in taken.iter().enumerate() {
        let text = doc(body);
        assert!(check_same(&format!("taken {n}: {body:?}"), &text), "taken {n}: the fast scanner gave up on {body:?}");
        assert!(Tree::parse_libyaml(&text, &Limits::default()).is_ok(), "taken {n}");
    }
    for (n, body) in refused.iter().enumerate() {
        let text = doc(body);
        // Where libyaml fails, the fast scanner gives up (or fails as well).
        check_same(&format!("refused {n}: {body:?}"), &text);
        if let Some(Ok(_)) = Tree::parse_fast(&text, &Limits::default()) {
            assert!(Tree::parse_libyaml(&text, &Limits::default()).is_ok(), "refused {n}");
        }
    }
    // The values, as the reference reads them (PyYAML over libyaml).
    let value = |body: &str, path: &str| {
        let t = Tree::parse_fast(&doc(body), &Limits::default()).unwrap().unwrap();
        t.get(path).and_then(|n| n.as_str().map(str::to_string))
    };
    for (n, path, expected) in [
        (2, "a", "x\n\ny  "),
        (3, "a", "xy"),
        (5, "s", "line1\nline2\n"),
        (7, "a", "tab\t next"),
        (13, "a", "x"),
        (14, "a", "x\n\n\n"),
        (16, "a", "folded text\npara\n more\nend\n"),
        (25, "a", "a\n b\nc\n"),
        (32, "s", "word word word word word word"),
        (33, "s", "a\nb"),
        (35, "k/0", "a b c   d"),
        (36, "a", "x - y"),
    ] {
        assert_eq!(value(taken[n], path).as_deref(), Some(expected), "taken {n}");
    }
}

/// Texts of 128 KB and more are parsed with the node arena's pages made present by a
/// helper thread: the same tree, whether the arena is reserved too large (sparse text:
/// long strings) or too small (dense flow lists that outgrow it, so the helper must stop
/// before the arena moves).
#[test]
fn large_texts_parse_the_same_with_the_arena_prefaulted() {
    let mut dense = String::from("%YAML 1.1\n---\n");
    for g in 0..3000 {
        dense += &format!("g{g}: {{a: 1, b: 2.5, c: x y, d: [1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6]}}\n");
    }
    dense += "...\n";
    let mut sparse = String::from("%YAML 1.1\n---\n");
    for g in 0..700 {
        sparse += &format!("s{g}: {}\n", vec!["lorem ipsum"; 16].join(" "));
    }
    sparse += "...\n";
    // A list of one-character items: more nodes than one per four bytes of text.
    let mut tight = String::from("%YAML 1.1\n---\nk: [");
    for _ in 0..1500 {
        tight += &"1, ".repeat(40);
        tight += "\n  ";
    }
    tight += "1]\n...\n";
    for (name, text) in [("dense", &dense), ("sparse", &sparse), ("tight", &tight)] {
        assert!(text.len() >= 128 << 10, "{name}: {} bytes", text.len());
        assert!(check_same(name, text), "{name}: the fast scanner gave up");
    }
}

/// Texts of 1 MB and more whose root is a block mapping are parsed in parts on several
/// threads (where the machine has them) and joined: the tree of libyaml all the same,
/// positions included (checked through an error in the last part).
#[test]
fn large_texts_parse_the_same_in_parts() {
    let mut text = String::from("%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n");
    for g in 0..12000 {
        text += &format!(
            "g{g}: !core/ndarray-1.1.0\n  source: {g}\n  shape: [{g}, 2]\n  meta: {{a: 1.5, b: x y, g: {g}}}\n"
        );
    }
    assert!(text.len() >= 1 << 20, "{} bytes", text.len());
    assert!(check_same("in parts", &text), "the fast scanner gave up");
    let t = Tree::parse(&text, &Limits::default()).unwrap();
    assert_eq!(t.get("g11999/meta/g").and_then(|n| n.as_i64()), Some(11999));
    let bad = format!("{text}late: !!int x\n");
    let (_, pos) = Tree::parse(&bad, &Limits::default()).unwrap_err();
    assert_eq!(pos.map(|p| p.0), Some(bad.lines().count()));
}
