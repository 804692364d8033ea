//! Extension schemas (`rasdf validate FILE --schemas DIR`, `rasdf::schema::Schemas` and
//! `validate_with`): the astro fixtures (Roman, gwcs, astropy) and copies of them that
//! break a Roman, gwcs or transform schema (a wrong type, a missing property, a wrong tag
//! version, a wrong datatype or number of dimensions; made by
//! `tests/python/extension_schemas.py`) get the verdict the reference gives with those
//! packages installed, the failing tree path among rasdf's; and hand-made schema folders
//! (no Python needed) for `$ref`s, manifests, errors and hostile schemas.

use rasdf_testkit as common;
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rasdf::AsdfFile;
use rasdf::schema::{Schemas, tags_without_schema, tags_without_schema_with, validate_with};
use support::rasdf;

/// Runs `tests/python/extension_schemas.py` with `args` in the astro venv; its stdout.
fn helper(py: &Path, args: &[&str]) -> String {
    let out = Command::new(py)
        .arg(common::root().join("tests/python/extension_schemas.py"))
        .args(args)
        .output()
        .expect("run python");
    assert!(out.status.success(), "extension_schemas.py {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn astro_fixtures() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(common::testdata("astro"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "asdf"))
        .collect();
    files.sort();
    files
}

#[test]
fn verdicts_are_the_references_with_the_packages_installed() {
    let Some(py) = common::python_astro() else {
        eprintln!("skipped: RASDF_PYTHON_ASTRO is not set (run through .ci/run to cross-test with the reference)");
        return;
    };
    let dirs: Vec<String> = serde_json::from_str(&helper(&py, &["dirs"])).unwrap();
    for package in ["rad", "asdf_transform_schemas", "asdf_wcs_schemas", "asdf_astropy", "asdf_standard"] {
        assert!(dirs.iter().any(|d| d.contains(&format!("/{package}/"))), "{package} not installed: {dirs:?}");
    }
    let schemas = Schemas::from_dirs(&dirs).unwrap();
    assert!(schemas.documents() > 1000 && schemas.extensions() > 40, "{schemas:?}");
    let tmp = common::temp_dir("extension-schemas");
    let mutated: Vec<(String, String, Option<String>)> =
        serde_json::from_str(&helper(&py, &["mutate", tmp.to_str().unwrap()])).unwrap();
    let mut files: Vec<PathBuf> = astro_fixtures();
    files.extend(mutated.iter().map(|(_, p, _)| PathBuf::from(p)));
    let mut args = vec!["verdicts"];
    args.extend(files.iter().map(|p| p.to_str().unwrap()));
    let theirs: BTreeMap<String, (String, Option<String>, Option<String>)> =
        serde_json::from_str(&helper(&py, &args)).unwrap();
    let expected: BTreeMap<&str, &Option<String>> = mutated.iter().map(|(_, p, e)| (p.as_str(), e)).collect();
    let mut differences = Vec::new();
    let mut invalid = 0;
    for path in &files {
        let key = path.to_str().unwrap();
        let (verdict, their_path, message) = &theirs[key];
        assert_ne!(verdict, "error", "{key}: the reference cannot open it: {message:?}");
        let f = AsdfFile::open(path).unwrap_or_else(|e| panic!("{key}: {e}"));
        let standard = Some(f.header().standard());
        let errors = validate_with(f.tree(), standard, &schemas);
        let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
        invalid += usize::from(verdict == "invalid");
        if errors.is_empty() != (verdict == "valid") {
            differences.push(format!("{key}: the reference says {verdict} ({message:?}), rasdf {shown:?}"));
            continue;
        }
        // The reference names the failing node relative to the tagged node whose schema
        // it was checking: one of rasdf's errors is at a path that ends so.
        if let Some(p) = their_path.as_deref().filter(|p| !p.is_empty())
            && !errors.iter().any(|e| e.path.ends_with(p))
        {
            differences.push(format!("{key}: the reference fails at ...{p}, rasdf at {shown:?}"));
        }
        if let Some(Some(want)) = expected.get(key)
            && !errors.iter().any(|e| &e.path == want)
        {
            differences.push(format!("{key}: expected an error at {want}, rasdf gives {shown:?}"));
        }
        // What the packages define is validated: nothing left unchecked in the fixtures.
        if !key.contains("extension-schemas") {
            assert_eq!(tags_without_schema_with(f.tree(), standard, &schemas), [], "{key}");
        }
    }
    println!("{} files, {invalid} invalid to the reference", files.len());
    assert!(invalid >= 15, "the mutations must break schemas: {invalid} invalid");
    assert!(differences.is_empty(), "{}", differences.join("\n"));

    // The command line: `validate --schemas DIR...`; its exit code and lines.
    let mut args: Vec<&str> = vec!["validate", "--quiet"];
    for d in &dirs {
        args.extend(["--schemas", d.as_str()]);
    }
    let roman = common::testdata("astro/roman_level2.asdf");
    let (code, text) = rasdf(&[&args[..], &[roman.to_str().unwrap()]].concat());
    assert_eq!(code, 0, "{text}");
    assert!(!text.contains("not validated"), "{text}");
    let (_, plain) = rasdf(&["validate", roman.to_str().unwrap()]);
    assert!(plain.contains("not validated: "), "{plain}");
    // Files of older standards that leave defaults out: validated with the defaults of
    // the extensions' schemas filled in, as the reference fills them before validating
    // (a rotation's `direction`, without which the rotation is invalid).
    for name in ["oldastro/astro_v1.3.0.asdf", "oldastro/astro_v1.5.0.asdf"] {
        let old = common::testdata(name);
        let (code, text) = rasdf(&[&args[..], &[old.to_str().unwrap()]].concat());
        assert_eq!(code, 0, "{name}: {text}");
    }
    let bad = tmp.join("flat_missing_dq.asdf");
    let (code, text) = rasdf(&[&args[..], &[bad.to_str().unwrap(), "--json"]].concat());
    assert_eq!(code, 1, "{text}");
    let j: serde_json::Value = serde_json::from_str(&text).unwrap();
    let errors = j["errors"].as_array().unwrap();
    assert!(
        errors.iter().any(|e| e.as_str().unwrap().contains("tree path /roman: 'dq' is a required property")),
        "{j}"
    );
    std::fs::remove_dir_all(&tmp).unwrap();
}

const MANIFEST: &str = r"%YAML 1.1
---
id: asdf://example.org/things/manifests/things-1.0.0
extension_uri: asdf://example.org/things/extensions/things-1.0.0
asdf_standard_requirement: {gte: 1.6.0}
tags:
- tag_uri: asdf://example.org/things/tags/thing-1.0.0
  schema_uri: asdf://example.org/things/schemas/thing-1.0.0
- tag_uri: asdf://example.org/things/tags/bare-1.0.0
- tag_uri: asdf://example.org/things/tags/lost-1.0.0
  schema_uri: asdf://example.org/things/schemas/nowhere-1.0.0
...
";

const THING: &str = r"%YAML 1.1
---
$schema: http://stsci.edu/schemas/yaml-schema/draft-01
id: asdf://example.org/things/schemas/thing-1.0.0
description: |
  A thing.
  id: not this one
type: object
properties:
  size: {$ref: 'sub/../common-1.0.0#/definitions/size'}
  image: {tag: 'tag:stsci.edu:asdf/core/ndarray-1.*', datatype: float64, ndim: 1}
  exact: {tag: 'tag:stsci.edu:asdf/core/ndarray-1.*', datatype: int16, exact_datatype: true, max_ndim: 1}
  software: {$ref: 'http://stsci.edu/schemas/asdf/core/software-1.0.0'}
  kind: {tag: 'asdf://example.org/things/tags/*'}
required: [size]
flowStyle: block
...
";

const COMMON: &str = r"%YAML 1.1
---
id: asdf://example.org/things/schemas/common-1.0.0
definitions:
  size: {type: integer, minimum: 0}
...
";

fn things(dir: &Path) -> PathBuf {
    let d = dir.join("resources");
    std::fs::create_dir_all(d.join("manifests")).unwrap();
    std::fs::create_dir_all(d.join("schemas/sub")).unwrap();
    std::fs::write(d.join("manifests/things-1.0.0.yaml"), MANIFEST).unwrap();
    std::fs::write(d.join("schemas/thing-1.0.0.yaml"), THING).unwrap();
    std::fs::write(d.join("schemas/sub/common-1.0.0.yaml"), COMMON.replace("common-1.0.0", "sub/common-1.0.0"))
        .unwrap();
    std::fs::write(d.join("schemas/common-1.0.0.yaml"), COMMON).unwrap();
    // Not a schema: no id (asdf-standard's version maps), and not YAML at all.
    std::fs::write(d.join("schemas/version_map.yaml"), "core: [1]\n").unwrap();
    std::fs::write(d.join("schemas/README.txt"), "not read").unwrap();
    d
}

fn tree(standard: &str, thing: &str) -> (rasdf::tree::Tree, String) {
    let text = format!(
        "%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n---\na: !<asdf://example.org/things/tags/thing-1.0.0> {thing}\n"
    );
    (rasdf::tree::Tree::parse(&text, &rasdf::Limits::default()).unwrap(), standard.to_string())
}

fn errors(schemas: &Schemas, standard: &str, thing: &str) -> Vec<String> {
    let (t, s) = tree(standard, thing);
    validate_with(&t, Some(&s), schemas).iter().map(ToString::to_string).collect()
}

#[test]
fn a_folder_of_manifests_and_schemas_validates_its_tags() {
    let tmp = common::temp_dir("things");
    let schemas = Schemas::from_dirs([things(&tmp)]).unwrap();
    assert_eq!((schemas.documents(), schemas.extensions()), (4, 1));
    let ok = "{size: 3, image: !core/ndarray-1.1.0 {data: [1, 2], datatype: float32, shape: [2]}, \
              exact: !core/ndarray-1.1.0 {source: 0, datatype: int16, byteorder: big, shape: [4]}, \
              kind: !<asdf://example.org/things/tags/bare-1.0.0> {}}";
    assert_eq!(errors(&schemas, "1.6.0", ok), Vec::<String>::new());
    // Inline data is int64 to numpy: it casts to float64 safely.
    assert_eq!(errors(&schemas, "1.6.0", "{size: 1, image: !core/ndarray-1.1.0 [1, 2]}"), Vec::<String>::new());
    let cases = [
        (
            "{size: -1}",
            "/a/size: -1 is less than the minimum of 0 (schema asdf://example.org/things/schemas/common-1.0.0)",
        ),
        ("{}", "/a: 'size' is a required property"),
        ("{size: 1, image: !core/ndarray-1.1.0 {data: [1], datatype: complex64, shape: [1]}}", "Can not safely cast"),
        ("{size: 1, image: !core/ndarray-1.1.0 {data: [[1]], datatype: int8, shape: [1, 1]}}", "Expected 1, got 2"),
        ("{size: 1, image: !core/ndarray-1.1.0 [[1], [2, 3]]}", "inhomogeneous"),
        ("{size: 1, exact: !core/ndarray-1.1.0 {source: 0, datatype: int8, shape: [2]}}", "Expected datatype 'int16'"),
        ("{size: 1, exact: !core/ndarray-1.1.0 {source: 0, datatype: int16, shape: [2, 2]}}", "max of 1, got 2"),
        ("{size: 1, image: !core/ndarray-2.0.0 {datatype: float64, shape: [1]}}", "mismatched tags"),
        (
            "{size: 1, software: {name: 5, version: x}}",
            "/a/software/name: 5 is not of type 'string' (schema core/software-1.0.0)",
        ),
        ("{size: 1, kind: !<asdf://example.org/things/tags/x/y-1.0.0> {}}", "mismatched tags"),
    ];
    for (thing, want) in cases {
        let e = errors(&schemas, "1.6.0", thing);
        assert!(e.iter().any(|e| e.contains(want)), "{thing}: {e:?}");
    }
    // The manifest is for 1.6.0 on: a 1.5.0 file's things are not validated.
    assert_eq!(errors(&schemas, "1.5.0", "{size: -1}"), Vec::<String>::new());
    // Tags without a schema: the one defined without, the one whose schema is missing.
    let (t, _) = tree(
        "1.6.0",
        "{size: 1, b: !<asdf://example.org/things/tags/bare-1.0.0> 1, l: !<asdf://example.org/things/tags/lost-1.0.0> 1}",
    );
    let listed: Vec<String> =
        tags_without_schema_with(&t, Some("1.6.0"), &schemas).into_iter().map(|(t, _)| t).collect();
    assert_eq!(listed, ["asdf://example.org/things/tags/bare-1.0.0", "asdf://example.org/things/tags/lost-1.0.0"]);
    assert_eq!(tags_without_schema(&t, Some("1.6.0")).len(), 3);
    // Given as documents and an extension, as Python passes the reference's.
    let mut given = Schemas::new();
    given.add_document("asdf://example.org/things/schemas/thing-1.0.0", THING).unwrap();
    given.add_document("asdf://example.org/things/schemas/common-1.0.0", COMMON).unwrap();
    given
        .add_extension(
            Some(">=1.6.0"),
            vec![(
                "asdf://example.org/things/tags/thing-1.0.0".into(),
                vec!["asdf://example.org/things/schemas/thing-1.0.0".into()],
            )],
        )
        .unwrap();
    assert!(errors(&given, "1.6.0", "{size: -1}")[0].contains("minimum"));
    assert!(given.add_extension(Some("about 1.6"), Vec::new()).is_err());
    std::fs::remove_dir_all(&tmp).unwrap();
}

#[test]
fn schema_folders_that_do_not_read_are_errors_naming_the_file() {
    let tmp = common::temp_dir("things-bad");
    let d = things(&tmp);
    // A schema that does not parse: known by its `id` line, parsed when first needed,
    // then an error naming its file (and at once with `parse_all`).
    std::fs::write(d.join("schemas/thing-1.0.0.yaml"), THING.replace("type: object", "type: [object")).unwrap();
    let schemas = Schemas::from_dirs([&d]).unwrap();
    let e = schemas.parse_all().unwrap_err().to_string();
    assert!(e.contains("thing-1.0.0.yaml") && e.contains("line"), "{e}");
    let e = errors(&schemas, "1.6.0", "{size: 1}");
    assert!(e.len() == 1 && e[0].contains("does not parse") && e[0].contains("thing-1.0.0.yaml"), "{e:?}");
    let file = common::testdata("example.asdf");
    let (code, text) = rasdf(&["validate", file.to_str().unwrap(), "--schemas", d.to_str().unwrap()]);
    assert_eq!(code, 0, "the file has no thing: {text}");
    // A manifest that does not parse, a file that is not UTF-8, a folder that is not
    // there: errors as the folder is read, naming the file.
    std::fs::write(d.join("manifests/broken.yaml"), "id: m\nextension_uri: x\ntags: [\n").unwrap();
    let e = Schemas::from_dirs([&d]).unwrap_err().to_string();
    assert!(e.contains("broken.yaml") && e.contains("line"), "{e}");
    let mut out = Vec::new();
    let argv = ["rasdf", "validate", file.to_str().unwrap(), "--schemas", d.to_str().unwrap()];
    assert_eq!(rasdf_cli::args::main(argv.iter().map(Into::into).collect(), &mut out), 2);
    std::fs::write(d.join("manifests/broken.yaml"), b"id: \xff\n").unwrap();
    let e = Schemas::from_dirs([&d]).unwrap_err().to_string();
    assert!(e.contains("broken.yaml") && e.contains("UTF-8"), "{e}");
    let e = Schemas::from_dirs([tmp.join("nowhere")]).unwrap_err().to_string();
    assert!(e.contains("nowhere"), "{e}");
    let mut s = Schemas::new();
    assert!(s.add_document("asdf://x/y", "{a: [").unwrap_err().to_string().contains("asdf://x/y"));
    std::fs::remove_dir_all(&tmp).unwrap();
}

#[test]
fn hostile_schemas_cost_bounded_work() {
    let tmp = common::temp_dir("things-hostile");
    let d = tmp.join("r");
    std::fs::create_dir_all(&d).unwrap();
    let manifest = "id: asdf://h/m\nextension_uri: asdf://h/e\ntags:\n\
                    - {tag_uri: 'asdf://h/tags/cycle', schema_uri: 'asdf://h/cycle'}\n\
                    - {tag_uri: 'asdf://h/tags/deep', schema_uri: 'asdf://h/deep'}\n\
                    - {tag_uri: 'asdf://h/tags/blowup', schema_uri: 'asdf://h/blowup'}\n";
    std::fs::write(d.join("m.yaml"), manifest).unwrap();
    // A `$ref` cycle with no step into the instance, and one through two documents.
    std::fs::write(d.join("cycle.yaml"), "id: asdf://h/cycle\nallOf: [{$ref: '#'}, {$ref: 'other'}]\n").unwrap();
    std::fs::write(d.join("other.yaml"), "id: asdf://h/other\n$ref: cycle\n").unwrap();
    // A schema nested 200 deep, applied to a list nested 300 deep.
    let mut deep = String::from("id: asdf://h/deep\n");
    for i in 0..200 {
        deep.push_str(&format!("{}items:\n", " ".repeat(i)));
    }
    deep.push_str(&format!("{}type: array\n", " ".repeat(200)));
    std::fs::write(d.join("deep.yaml"), deep).unwrap();
    // Alternatives in alternatives, 40 levels: 2^40 branches without a bound.
    let mut blowup = String::from("id: asdf://h/blowup\ndefinitions:\n  l0: {type: integer}\n");
    for i in 1..=40 {
        blowup.push_str(&format!(
            "  l{i}: {{anyOf: [{{$ref: '#/definitions/l{p}'}}, {{$ref: '#/definitions/l{p}'}}, {{not: {{}}}}]}}\n",
            p = i - 1
        ));
    }
    blowup.push_str("$ref: '#/definitions/l40'\n");
    std::fs::write(d.join("blowup.yaml"), blowup).unwrap();
    let schemas = Schemas::from_dirs([&d]).unwrap();
    let nested = format!("{}1{}", "[".repeat(300), "]".repeat(300));
    let text = format!(
        "c: !<asdf://h/tags/cycle> {{a: 1}}\nd: !<asdf://h/tags/deep> {nested}\nb: !<asdf://h/tags/blowup> 'text'\n"
    );
    let t = rasdf::tree::Tree::parse(&text, &rasdf::Limits::default()).unwrap();
    let start = Instant::now();
    let e = validate_with(&t, Some("1.6.0"), &schemas);
    let took = start.elapsed();
    assert!(took < Duration::from_secs(60), "{took:?}");
    // The alternatives ran out of budget, or found the text fails: either way an error.
    assert!(!e.is_empty(), "{e:?}");
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// `f` on a thread of its own, given up on after 30 s: a regression that waits on a
/// FIFO or reads a device without end fails the test instead of hanging it.
fn within_30s<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|_| panic!("{what}: still running after 30 s"))
}

/// `rasdf ARGS` as a process with 4 GiB of address space, killed after 30 s: its exit
/// code and standard error. (A regression reading `/dev/zero` without end fails, and
/// does not take the machine's memory.)
fn rasdf_process(args: &[&str]) -> (Option<i32>, String) {
    let (code, _, stderr) = rasdf_bounded(args, 4 << 30);
    (code, stderr)
}

/// `rasdf ARGS` as a process with `bytes` of address space, killed after 30 s: its exit
/// code, standard output and standard error.
fn rasdf_bounded(args: &[&str], bytes: u64) -> (Option<i32>, String, String) {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new(env!("CARGO_BIN_EXE_rasdf"));
    command.args(args).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe, and touches nothing of the parent's.
    unsafe {
        command.pre_exec(move || {
            let limit = libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
        });
    }
    let mut child = command.spawn().unwrap();
    // Read as it comes, so that a long report does not fill the pipe and stop the child.
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut bytes);
            }
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("rasdf {args:?}: still running after 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status.code(), stdout.join().unwrap(), stderr.join().unwrap())
}

/// A folder of schemas is read only as far as it is a folder of schema files: its
/// regular files, inside it, of bounded size. A FIFO, a device, a link out of the folder
/// (to a file, to `/dev/zero`, to `/`), a file or a folder too large, folders nested too
/// deep: each an error naming the path (exit code 2 on the command line), at once. Links
/// inside the folder are followed, a folder met again through one read once.
#[test]
fn schema_folders_read_only_their_own_regular_files() {
    let tmp = common::temp_dir("things-files");
    let example = common::testdata("example.asdf");
    let outside = tmp.join("outside.yaml");
    std::fs::write(&outside, COMMON.replace("common-1.0.0", "outside-1.0.0")).unwrap();
    let fifo = |p: &Path| {
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
    };
    let sparse = |p: &Path, len: u64| std::fs::File::create(p).unwrap().set_len(len).unwrap();
    let link = |target: &Path, p: &Path| std::os::unix::fs::symlink(target, p).unwrap();
    type Make = Box<dyn Fn(&Path)>;
    // Each case: a folder of schemas with one thing more; the path the error must name,
    // and why.
    let cases: Vec<(&str, Make, &str, &str)> = vec![
        ("fifo", Box::new(move |d| fifo(&d.join("schemas/x.yaml"))), "x.yaml", "not a regular file but a FIFO"),
        (
            "zero",
            Box::new(move |d| link(Path::new("/dev/zero"), &d.join("schemas/zero.yaml"))),
            "zero.yaml",
            "a symbolic link to /dev/zero, outside the folder",
        ),
        (
            "root",
            Box::new(move |d| link(Path::new("/"), &d.join("schemas/all"))),
            "all",
            "a symbolic link to /, outside",
        ),
        (
            "outside",
            Box::new({
                let outside = outside.clone();
                move |d| link(&outside, &d.join("schemas/out.yaml"))
            }),
            "out.yaml",
            "outside the folder",
        ),
        (
            "outside_folder",
            Box::new({
                let tmp = tmp.clone();
                move |d| link(&tmp, &d.join("schemas/up"))
            }),
            "up",
            "outside the folder",
        ),
        (
            "dangling",
            Box::new(move |d| link(&d.join("nowhere.yaml"), &d.join("schemas/lost.yaml"))),
            "lost.yaml",
            "No such file",
        ),
        (
            "large",
            Box::new(move |d| sparse(&d.join("schemas/big.yaml"), (16 << 20) + 1)),
            "big.yaml",
            "over the 16 MiB a schema document may have",
        ),
        (
            "large_folder",
            Box::new(move |d| {
                for i in 0..17 {
                    sparse(&d.join(format!("schemas/part{i:02}.yaml")), 16 << 20);
                }
            }),
            "resources",
            "more than the 256 MiB a folder's may have together",
        ),
        (
            "deep",
            Box::new(move |d| {
                let deep: PathBuf = (0..70).map(|i| format!("d{i}")).collect();
                std::fs::create_dir_all(d.join("schemas").join(deep)).unwrap();
            }),
            "d63",
            "nested more than 64 deep",
        ),
    ];
    for (name, make, path, why) in cases {
        let d = things(&tmp.join(name));
        make(&d);
        let dir = d.clone();
        // `/dev/zero` in a process of its own only (`rasdf_process`): a regression is bounded there.
        if name != "zero" {
            let e = within_30s(name, move || Schemas::from_dirs([&dir]).map(|_| ()).map_err(|e| e.to_string()))
                .expect_err(name);
            assert!(e.contains(path) && e.contains(why), "{name}: {e}");
        }
        let (code, stderr) = rasdf_process(&["validate", example.to_str().unwrap(), "--schemas", d.to_str().unwrap()]);
        assert_eq!(code, Some(2), "{name}: {stderr}");
        assert!(stderr.contains(path) && stderr.contains(why), "{name}: {stderr}");
    }
    // The folder given itself a FIFO: refused, not waited on.
    let pipe = tmp.join("pipe.yaml");
    fifo(&pipe);
    let e = within_30s("pipe", move || Schemas::from_dirs([&pipe]).map(|_| ()).map_err(|e| e.to_string()));
    assert!(e.unwrap_err().contains("not a regular file but a FIFO"));
    // Links that stay inside are followed: to a file, to a folder above (a cycle, read
    // once); a link out of the folder to a file not named as a schema is not read.
    let d = things(&tmp.join("inside"));
    link(&d.join("schemas/common-1.0.0.yaml"), &d.join("manifests/same.yaml"));
    link(&d, &d.join("schemas/sub/loop"));
    link(&outside, &d.join("schemas/notes.txt"));
    link(Path::new("/dev/zero"), &d.join("schemas/zero.bin"));
    let schemas = Schemas::from_dirs([&d]).unwrap();
    assert_eq!((schemas.documents(), schemas.extensions()), (4, 1));
    assert!(errors(&schemas, "1.6.0", "{size: -1}")[0].contains("minimum"));
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// A folder whose manifest defines tag `asdf://p/tags/t` (for every standard) with the
/// schema `asdf://p/s` whose keywords are `body`; the file `file.asdf` beside it has the
/// tagged node `t: !<asdf://p/tags/t> value`.
fn pattern_folder(dir: &Path, body: &str, value: &str) -> (PathBuf, PathBuf) {
    let d = dir.join("resources");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("manifest.yaml"),
        "id: asdf://p/m\nextension_uri: asdf://p/e\ntags:\n- {tag_uri: 'asdf://p/tags/t', schema_uri: 'asdf://p/s'}\n",
    )
    .unwrap();
    std::fs::write(d.join("s.yaml"), format!("id: asdf://p/s\n{body}")).unwrap();
    let file = dir.join("file.asdf");
    std::fs::write(
        &file,
        format!("#ASDF 1.0.0\n#ASDF_STANDARD 1.6.0\n%YAML 1.1\n---\nt: !<asdf://p/tags/t> {value}\n...\n"),
    )
    .unwrap();
    (d, file)
}

/// A pattern rasdf cannot search as Python's `re` does (look-ahead, look-behind, a
/// backreference; Python compiles them) makes the check "cannot check", naming the
/// pattern and the schema: never a pass, nor a silent one. Under `anyOf`, `oneOf` and
/// `not` it is unknown only where the verdict hangs on it. On the command line the file
/// is not sound: an `unchecked:` line, the verdict `cannot check`, exit code 1.
#[test]
fn patterns_that_cannot_be_searched_cannot_check_the_node() {
    use rasdf::schema::SchemaErrorKind::{CannotCheck, Invalid};
    let tmp = common::temp_dir("patterns-unchecked");
    let body = "type: object\nproperties:\n  ahead: {pattern: '^(?=a)ab$'}\n  plain: {pattern: '^[a-z]+$'}\n  \
                either: {anyOf: [{pattern: '(?<=x)y'}, {type: integer}]}\n  \
                one: {oneOf: [{pattern: '(?<=x)y'}, {type: integer}, {type: string, maxLength: 1}]}\n  \
                none: {not: {pattern: '(a)\\1'}}\n  keys: {patternProperties: {'^x(?!y)': {type: integer}}}\n";
    let (d, _) = pattern_folder(&tmp, body, "{}");
    let schemas = Schemas::from_dirs([&d]).unwrap();
    let check = |value: &str| -> Vec<(rasdf::schema::SchemaErrorKind, String)> {
        let text = format!("t: !<asdf://p/tags/t> {value}\n");
        let t = rasdf::tree::Tree::parse(&text, &rasdf::Limits::default()).unwrap();
        validate_with(&t, Some("1.6.0"), &schemas).iter().map(|e| (e.kind, e.to_string())).collect()
    };
    // Where no pattern that cannot be searched is met, the verdict is known.
    assert_eq!(check("{plain: abc, either: 5, keys: {}}"), []);
    let e = check("{ahead: ab}");
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].0, CannotCheck);
    assert!(e[0].1.starts_with("tree path /t/ahead: cannot check: the pattern '^(?=a)ab$': look-ahead"), "{e:?}");
    assert!(e[0].1.ends_with("(schema asdf://p/s)"), "{e:?}");
    // A failure elsewhere is still one.
    let e = check("{ahead: ab, plain: ABC}");
    assert_eq!(e.iter().map(|e| e.0).collect::<Vec<_>>(), [CannotCheck, Invalid], "{e:?}");
    // Another branch met settles `anyOf`; none met leaves it unknown.
    assert_eq!(check("{either: 5}"), []);
    let e = check("{either: 'y'}");
    assert!(e.len() == 1 && e[0].0 == CannotCheck && e[0].1.contains("(?<=x)y"), "{e:?}");
    // `oneOf`: two branches met fail whatever the others (`pattern` passes what is no
    // text); one met might be two.
    let e = check("{one: 5}");
    assert!(e.len() == 1 && e[0].0 == Invalid, "{e:?}");
    let e = check("{one: 'y'}");
    assert!(e.len() == 1 && e[0].0 == CannotCheck, "{e:?}");
    let e = check("{none: aa}");
    assert!(e.len() == 1 && e[0].0 == CannotCheck && e[0].1.contains(r"(a)\1"), "{e:?}");
    // Whether a key matches `patternProperties` cannot be told: nor what applies to it.
    let e = check("{keys: {xz: 1}}");
    assert!(
        e.len() == 1 && e[0].0 == CannotCheck && e[0].1.contains("/t/keys/xz") && e[0].1.contains("^x(?!y)"),
        "{e:?}"
    );
    // The command line.
    let (d, file) = pattern_folder(&tmp.join("cli"), body, "{ahead: ab}");
    let (code, text) = rasdf(&["validate", file.to_str().unwrap(), "--schemas", d.to_str().unwrap()]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("unchecked: schema: tree path /t/ahead: cannot check: the pattern '^(?=a)ab$'"), "{text}");
    assert!(text.contains(": cannot check (0 errors, 0 warnings, 1 check not made)"), "{text}");
    let (code, text) = rasdf(&["validate", file.to_str().unwrap(), "--schemas", d.to_str().unwrap(), "--json"]);
    assert_eq!(code, 1, "{text}");
    let j: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!((j["sound"].as_bool(), j["errors"].as_array().map(Vec::len)), (Some(false), Some(0)), "{j}");
    assert!(j["unchecked"][0].as_str().unwrap().contains("^(?=a)ab$"), "{j}");
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// 300 patterns such as `^\w{200}N$` (Unicode's `\w` two hundred times, some 3.5 MB
/// compiled each: over 3 GB together before) share one compile budget: the first are
/// compiled and checked, the rest cannot be checked, each named; in bounded time, and in
/// a process of 1 GiB of address space.
#[test]
fn costly_patterns_share_a_compile_budget() {
    let tmp = common::temp_dir("patterns-costly");
    let n = 300;
    let mut body = String::from("type: object\nproperties:\n");
    let mut value = String::from("{");
    for i in 0..n {
        body.push_str(&format!("  k{i}: {{pattern: '^\\w{{200}}N{i}$'}}\n"));
        value.push_str(&format!("k{i}: {}N{i}, ", "a".repeat(200)));
    }
    value.push('}');
    let (d, file) = pattern_folder(&tmp, &body, &value);
    let schemas = Schemas::from_dirs([&d]).unwrap();
    let f = AsdfFile::open(&file).unwrap();
    let start = Instant::now();
    let e = validate_with(f.tree(), Some("1.6.0"), &schemas);
    let took = start.elapsed();
    assert!(took < Duration::from_secs(60), "{took:?}");
    // The ones compiled match; the others are named, the budget said.
    assert!(e.iter().all(|e| e.kind == rasdf::schema::SchemaErrorKind::CannotCheck), "{e:?}");
    assert!(e.len() > n - 20 && e.len() < n, "{} of {n} not checked", e.len());
    assert!(e[0].message.contains(r"'^\w{200}N") && e[0].message.contains("32 MiB"), "{e:?}");
    let (code, out, err) =
        rasdf_bounded(&["validate", file.to_str().unwrap(), "--schemas", d.to_str().unwrap()], 1 << 30);
    assert_eq!(code, Some(1), "{err}");
    assert!(out.contains(": cannot check (0 errors, 0 warnings, "), "{out}");
    assert_eq!(out.matches("unchecked: schema: ").count(), e.len(), "{out}");
    std::fs::remove_dir_all(&tmp).unwrap();
}
