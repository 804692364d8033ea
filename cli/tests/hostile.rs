#![allow(clippy::cast_possible_truncation)] // test code on 64-bit hosts
//! Hostile files: each gets a clear error (or bounded work), never a crash, a hang, an
//! unbounded allocation or a read outside the file's folder.

use rasdf_testkit as common;

use std::path::PathBuf;

use rasdf::block::{BlockHeader, Compression};
use rasdf::{AsdfFile, ErrorKind, Limits, OpenOptions};
use rasdf_info::{InfoOptions, report};

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rasdf-hostile-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn asdf_with_tree(tree: &str) -> Vec<u8> {
    format!(
        "#ASDF 1.0.0\n#ASDF_STANDARD 1.6.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n{tree}\n...\n"
    )
    .into_bytes()
}

#[test]
fn billion_laughs_stay_linear() {
    let mut tree = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        let refs = vec![format!("*a{}", i - 1); 10].join(", ");
        tree += &format!("a{i}: &a{i} [{refs}]\n");
    }
    let f = OpenOptions::new().from_bytes(asdf_with_tree(&tree)).unwrap();
    assert!(f.tree().len() < 200, "aliases are shared nodes, not copies");
    // info enters each list once, as the reference does, and shows it again as a
    // recursive reference with its Python repr, which is cut at 1 MiB, and all of
    // them at 64 MiB (the reference would print 10^9 items).
    let mut out = Vec::new();
    report(&f, &InfoOptions::default(), &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(text.lines().count(), 1 + 10 * 11, "the root, each list and its items");
    assert!(text.len() < 65 << 20, "{} bytes", text.len());
    assert!(text.lines().all(|l| l.len() < (1 << 20) + 100));
    for i in 1..10 {
        let line =
            text.lines().find(|l| l.starts_with(&format!("├─a{i} ")) || l.starts_with(&format!("└─a{i} "))).unwrap();
        assert!(
            line.starts_with(&format!("├─a{i} (list)")) || line.starts_with(&format!("└─a{i} (list)")),
            "{line:.80}"
        );
    }
    assert!(text.contains("(recursive reference)"));
    // to-yaml keeps the anchors.
    let yaml = rasdf_cli::to_yaml::to_yaml(&f).unwrap();
    assert!(yaml.len() < 4_000, "{} bytes", yaml.len());
    // serde stops instead of expanding 10^10 nodes.
    let r = f.get("a9").unwrap().deserialize_limited::<serde_json::Value>(100_000);
    assert!(r.is_err());
    assert!(f.get("a2").unwrap().deserialize::<serde_json::Value>().is_ok(), "a small expansion is fine");
}

/// Many `<<` strings beside many mappings: a mapping's end spots merge keys by their tag,
/// not by searching a list of every `<<` read (which made this 400 000-node file take
/// minutes), and merges still happen where `<<` is a key.
#[test]
fn many_merge_strings_stay_linear() {
    let n = 200_000;
    let mut tree = String::with_capacity(n * 16);
    tree += "base: &b {x: 1}
m: {<<: *b, y: 2}
a:
";
    for _ in 0..n {
        tree += "- <<
";
    }
    tree += "b:
";
    for _ in 0..n {
        tree += "- {k: 1}
";
    }
    let f = OpenOptions::new().from_bytes(asdf_with_tree(&tree)).unwrap();
    let m: Vec<_> = f.get("m").unwrap().pairs().unwrap().map(|(k, _)| k.as_str().unwrap().to_string()).collect();
    assert_eq!(m, ["x", "y"]);
    assert_eq!(f.get("a").unwrap().items().unwrap().len(), n);
    assert_eq!(f.get("a/0").unwrap().tag(), Some("tag:yaml.org,2002:merge"));
}

#[test]
fn deep_nesting_is_an_error() {
    for deep in
        ["[".repeat(200_000), "{a: ".repeat(200_000), (0..1500).map(|i| format!("{}- \n", " ".repeat(i * 2))).collect()]
    {
        let e = OpenOptions::new().from_bytes(asdf_with_tree(&format!("x: {deep}"))).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Tree(_)), "{e}");
        assert!(e.location().line.is_some() || e.location().offset.is_some(), "{e}");
    }
}

#[test]
fn many_empty_blocks() {
    let mut file = asdf_with_tree("x: 1");
    let n = 200_000;
    let mut offsets = Vec::with_capacity(n);
    for _ in 0..n {
        offsets.push(file.len() as u64);
        let h = BlockHeader {
            offset: 0,
            header_size: 48,
            flags: 0,
            compression: Compression::None,
            allocated_size: 0,
            used_size: 0,
            data_size: 0,
            checksum: [0; 16],
        };
        file.extend_from_slice(&h.to_bytes());
    }
    file.extend_from_slice(&rasdf::index::write(&offsets));
    let f = OpenOptions::new().from_bytes(file.clone()).unwrap();
    assert_eq!(f.blocks().len(), n);
    assert_eq!(f.index_status(), &rasdf::index::IndexStatus::Valid);
    // Too many for a tight limit: an error, not an allocation.
    let tight = OpenOptions::new().limits(Limits::default().max_blocks(1000)).from_bytes(file).unwrap();
    assert_eq!(tight.blocks().len(), 1000);
    assert!(matches!(tight.blocks_error().unwrap().kind(), ErrorKind::Limit(_)));
}

#[test]
fn decompression_bombs_and_huge_sizes() {
    // 64 MiB of zeros in a zlib block that claims 1 KiB, then one that claims 1 TiB.
    let zeros = vec![0u8; 64 << 20];
    let stored = rasdf::block::codec::encode(Compression::Zlib, &zeros).unwrap();
    for (data_size, limits) in [
        (1024u64, Limits::default()),
        (1 << 40, Limits::default()),
        (64 << 20, Limits::default().max_block_bytes(1 << 20)),
    ] {
        let mut file = asdf_with_tree("x: 1");
        let h = BlockHeader {
            offset: 0,
            header_size: 48,
            flags: 0,
            compression: Compression::Zlib,
            allocated_size: stored.len() as u64,
            used_size: stored.len() as u64,
            data_size,
            checksum: [0; 16],
        };
        let at = file.len() as u64;
        file.extend_from_slice(&h.to_bytes());
        file.extend_from_slice(&stored);
        let f = OpenOptions::new().limits(limits).from_bytes(file).unwrap();
        let e = f.block_data(0).unwrap_err();
        assert_eq!((e.location().block, e.location().offset), (Some(0), Some(at)), "{e}");
        assert!(matches!(e.kind(), ErrorKind::Block(_) | ErrorKind::Limit(_)), "{e}");
    }
}

#[test]
fn layouts_that_overflow_or_escape_the_block() {
    let cases = [
        "{source: 0, datatype: float64, byteorder: little, shape: [1099511627776, 1099511627776]}",
        "{source: 0, datatype: float64, byteorder: little, shape: [4], offset: 9223372036854775807}",
        "{source: 0, datatype: float64, byteorder: little, shape: [4], strides: [-8]}",
        "{source: 0, datatype: float64, byteorder: little, shape: [4, 4], strides: [9223372036854775807, 8]}",
        // Strides of 0 are read (as the reference reads them), but not when they make the
        // 32 bytes stand for a terabyte (`max_overlap_bytes`).
        "{source: 0, datatype: uint8, byteorder: little, shape: [1048576, 1048576], strides: [0, 0]}",
        "{source: 0, datatype: float64, byteorder: little, shape: [4, 1000000000], strides: [8, 0]}",
        "{source: 5, datatype: float64, byteorder: little, shape: [2]}",
        "{source: -9, datatype: float64, byteorder: little, shape: [2]}",
        "{source: 0, datatype: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[float64]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]], byteorder: little, shape: [1]}",
        "{source: 0, datatype: [{name: a, datatype: float64, shape: [4294967296, 4294967296]}], byteorder: little, shape: [1]}",
        "{data: [[1, 2], [3]], datatype: int8}",
        "{data: [1, 2], shape: [3], datatype: int8}",
        "{source: 0, datatype: nonsense, byteorder: little, shape: [2]}",
        "{source: 0, datatype: float64, byteorder: little, shape: [0, 3], offset: 1000}",
    ];
    for case in cases {
        let mut file = asdf_with_tree(&format!("a: !core/ndarray-1.1.0 {case}"));
        let h = BlockHeader {
            offset: 0,
            header_size: 48,
            flags: 0,
            compression: Compression::None,
            allocated_size: 32,
            used_size: 32,
            data_size: 32,
            checksum: [0; 16],
        };
        file.extend_from_slice(&h.to_bytes());
        file.extend_from_slice(&[0u8; 32]);
        let f = OpenOptions::new().from_bytes(file).unwrap();
        let e = f.array("a").and_then(|a| a.read_dyn()).unwrap_err();
        assert!(e.location().path.is_some() || e.location().line.is_some(), "{case}: {e}");
    }
}

#[cfg(unix)]
#[test]
fn external_sources_stay_in_the_folder() {
    let dir = temp_dir("external");
    let inner = dir.join("inner");
    std::fs::create_dir_all(&inner).unwrap();
    // A real ASDF file outside the folder, and a link to it inside.
    std::fs::copy(common::testdata("pyasdf/arrays/exploded0000.asdf"), dir.join("outside.asdf")).unwrap();
    std::os::unix::fs::symlink(dir.join("outside.asdf"), inner.join("link.asdf")).unwrap();
    std::fs::copy(common::testdata("pyasdf/arrays/exploded0000.asdf"), inner.join("ok.asdf")).unwrap();
    let sources = [
        ("ok.asdf", true),
        ("./ok.asdf", true),
        ("../outside.asdf", false),
        ("link.asdf", false),
        ("/etc/passwd", false),
        ("file:///etc/passwd", false),
        ("http://example.org/x.asdf", false),
        (&*format!("{}", dir.join("outside.asdf").display()), false),
        ("missing.asdf", false),
    ];
    for (source, ok) in sources {
        let main = inner.join("main.asdf");
        std::fs::write(
            &main,
            asdf_with_tree(&format!(
                "a: !core/ndarray-1.1.0 {{source: '{source}', datatype: int32, byteorder: little, shape: [10]}}"
            )),
        )
        .unwrap();
        let f = AsdfFile::open(&main).unwrap();
        let r = f.array("a").and_then(|a| a.read_dyn());
        assert_eq!(r.is_ok(), ok, "{source}: {:?}", r.err());
        if let Err(e) = r {
            assert!(matches!(e.kind(), ErrorKind::External(_)), "{source}: {e}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A FIFO would block the open (and every read) until a writer came: as a `source`, as
/// the file itself or as a conversion's input, it is refused at once, as are a folder and
/// a device, each with an error that says what the path is.
#[test]
fn fifos_folders_and_devices_are_refused_not_waited_on() {
    let dir = temp_dir("fifo");
    let fifo = dir.join("pipe.asdf");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
    std::fs::create_dir(dir.join("folder.asdf")).unwrap();
    let main = dir.join("main.asdf");
    let array = |name: &str| {
        format!("{name}: !core/ndarray-1.1.0 {{source: {name}.asdf, datatype: uint8, byteorder: little, shape: [3]}}")
    };
    std::fs::write(&main, asdf_with_tree(&format!("{}\n{}", array("pipe"), array("folder")))).unwrap();
    // The test runs on a thread of its own, so a regression shows as a failure, not a
    // test run that never ends.
    let (tx, rx) = std::sync::mpsc::channel();
    let (m, d) = (main.clone(), dir.clone());
    std::thread::spawn(move || {
        let f = AsdfFile::open(&m).unwrap();
        let sources =
            ["pipe", "folder"].map(|a| f.array(a).and_then(|a| a.read_dyn()).map(|_| ()).map_err(|e| e.to_string()));
        let itself = AsdfFile::open(d.join("pipe.asdf")).map(|_| ()).map_err(|e| e.to_string());
        let device = AsdfFile::open("/dev/zero").map(|_| ()).map_err(|e| e.to_string());
        let convert = rasdf_convert::convert(&d.join("pipe.asdf"), &d.join("out.ra"), &Default::default())
            .map_err(|e| e.to_string());
        tx.send((sources, itself, device, convert)).unwrap();
    });
    let ([pipe, folder], itself, device, convert) =
        rx.recv_timeout(std::time::Duration::from_secs(30)).expect("a FIFO was waited on");
    for (r, what) in
        [(pipe, "a FIFO"), (folder, "a folder"), (itself, "a FIFO"), (device, "a device"), (convert, "a FIFO")]
    {
        let e = r.expect_err(what);
        assert!(e.contains(&format!("not a regular file but {what}")), "{e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn cli_errors_are_one_line_with_exit_codes() {
    let exe = env!("CARGO_BIN_EXE_rasdf");
    let bad = common::testdata("bad/zlib_too_long.asdf");
    let out = std::process::Command::new(exe).args(["info", "--stats", bad.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    // An input that cannot be opened is the caller's mistake: a usage error.
    let missing = std::process::Command::new(exe).args(["info", "/nonexistent/x.asdf"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!stderr.contains("panicked"));
    let usage = std::process::Command::new(exe).args(["info"]).output().unwrap();
    assert_eq!(usage.status.code(), Some(2));
    let garbage = std::process::Command::new(exe)
        .args(["check", common::testdata("bad/not_asdf.asdf").to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(garbage.status.code(), Some(1));
    // `validate` (asdftool's name) is `check`: a tree that breaks a schema fails it.
    let dir = temp_dir("validate-alias");
    let invalid = dir.join("invalid.asdf");
    std::fs::write(&invalid, asdf_with_tree("asdf_library: 5")).unwrap();
    let out = std::process::Command::new(exe).args(["validate", invalid.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("error: schema: tree path /asdf_library: 5 is not of type 'object'"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `asdf-explode` and `asdf-implode` are command lines of their own: their usage names
/// them (not `rasdf explode`), a missing argument is a usage error (2), and they do their
/// one job, a round trip back to the same tree.
#[test]
fn asdf_explode_and_implode_are_their_own_command_lines() {
    let dir = common::temp_dir("standalone-tools");
    for (tool, exe) in
        [("asdf-explode", env!("CARGO_BIN_EXE_asdf-explode")), ("asdf-implode", env!("CARGO_BIN_EXE_asdf-implode"))]
    {
        let out = std::process::Command::new(exe).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{tool} without arguments");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&format!("Usage: {tool} ")), "{tool}: {stderr}");
        assert!(!stderr.contains(" explode ") && !stderr.contains(" implode "), "{tool}: {stderr}");
        let version = std::process::Command::new(exe).arg("--version").output().unwrap();
        assert_eq!(version.status.code(), Some(0), "{tool} --version");
        assert!(String::from_utf8_lossy(&version.stdout).starts_with(tool), "{tool} --version");
        let bogus = std::process::Command::new(exe).args(["--bogus", "x.asdf"]).output().unwrap();
        assert_eq!(bogus.status.code(), Some(2), "{tool} --bogus");
    }
    let input = dir.join("in.asdf");
    std::fs::copy(common::testdata("pyasdf/arrays/views_masks.asdf"), &input).unwrap();
    let (exploded, joined) = (dir.join("x.asdf"), dir.join("joined.asdf"));
    let run = |argv: &[&std::path::Path]| {
        let argv: Vec<std::ffi::OsString> = argv.iter().map(|a| a.as_os_str().to_owned()).collect();
        rasdf_cli::args::main(argv, &mut Vec::new())
    };
    let (explode, implode) = (std::path::Path::new("/usr/bin/asdf-explode"), std::path::Path::new("asdf-implode"));
    let flag = std::path::Path::new("-o");
    assert_eq!(run(&[explode, &input, flag, &exploded]), 0);
    assert!(dir.join("x0000.asdf").exists(), "no block file beside the exploded one");
    assert_eq!(run(&[implode, &exploded, flag, &joined]), 0);
    let (a, b) = (AsdfFile::open(&input).unwrap(), AsdfFile::open(&joined).unwrap());
    let dump = |f: &AsdfFile| common::dump::without_library(common::dump::dump_file(f));
    assert_eq!(dump(&a), dump(&b));
    assert_eq!(run(&[explode, &dir.join("missing.asdf")]), 2);
    // Exploding `a0000.asdf` to `a.asdf` would write the first block file over the input:
    // a usage error, and the input stays as it was.
    let a0 = dir.join("a0000.asdf");
    std::fs::copy(&input, &a0).unwrap();
    let before = std::fs::read(&a0).unwrap();
    assert_eq!(run(&[explode, &a0, flag, &dir.join("a.asdf")]), 2);
    assert!(std::fs::read(&a0).unwrap() == before, "the input was replaced");
    assert!(!dir.join("a.asdf").exists() && !dir.join("a0001.asdf").exists());
    // Written over itself, an exploded file is refused, as every output that is an input.
    assert_eq!(run(&[explode, &exploded, flag, &exploded]), 2);
    assert_eq!(dump(&a), dump(&AsdfFile::open(&exploded).unwrap()));

    std::fs::remove_dir_all(&dir).unwrap();
}

/// `rasdf ARGS` as its own process whose address space is capped at `mb` MiB: the exit
/// status (`None` when it died of a signal) and its standard error.
fn rasdf_capped(args: &[&std::ffi::OsStr], mb: u64) -> (Option<i32>, String) {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_rasdf"));
    cmd.args(args);
    // SAFETY: setrlimit is async-signal-safe, as a pre-exec hook must be.
    unsafe {
        cmd.pre_exec(move || {
            let cap = libc::rlimit { rlim_cur: mb << 20, rlim_max: mb << 20 };
            if libc::setrlimit(libc::RLIMIT_AS, &cap) == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
        });
    }
    let o = cmd.output().unwrap();
    (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned() + &String::from_utf8_lossy(&o.stdout))
}

/// A few bytes of tree may declare elements of gigabytes: a string or record datatype
/// larger than numpy's item size (2^31 - 1 bytes, which the reference cannot read
/// either) is refused when the array is read, and inline data is counted, elements times
/// item size, against `max_inline_bytes` before anything is allocated (a 189-byte file
/// made `check` grow to 22 GB, `[ascii, 2^62]` aborted it).
#[test]
fn item_sizes_and_inline_bytes_are_bounded() {
    let dir = temp_dir("items");
    let inline = |datatype: &str| {
        asdf_with_tree(&format!(
            "a: !core/ndarray-1.1.0\n  data: [a, b, c, d, e, f]\n  datatype: {datatype}\n  shape: [6]"
        ))
    };
    let cases = [
        ("ucs4_1g", inline("[ucs4, 1073741824]"), "numpy's limit"),
        ("ascii_2_62", inline("[ascii, 4611686018427387904]"), "numpy's limit"),
        ("ucs4_huge", inline("[ucs4, 4611686018427387904]"), "numpy's limit"),
        ("ucs4_512m", inline("[ucs4, 536870911]"), "max_inline_bytes"),
        (
            "subarray",
            asdf_with_tree(
                "a: !core/ndarray-1.1.0\n  data: [[1], [2]]\n  datatype: [{name: x, datatype: float64, shape: [65536, 65536]}]\n  shape: [2]",
            ),
            "numpy's limit",
        ),
        (
            "nested_records",
            asdf_with_tree(
                "a: !core/ndarray-1.1.0\n  data: [[[1]]]\n  datatype: [{datatype: [{datatype: [ucs4, 536870911], shape: [4]}], shape: [4]}]\n  shape: [1]",
            ),
            "numpy's limit",
        ),
    ];
    for (name, bytes, why) in &cases {
        let f = OpenOptions::new().from_bytes(bytes.clone()).unwrap();
        let e = f.array("a").and_then(|a| a.read_dyn()).unwrap_err();
        assert!(e.to_string().contains(why), "{name}: {e}");
        if *why == "max_inline_bytes" {
            assert_eq!(e.limit().map(|l| l.what), Some("max_inline_bytes"), "{name}: a typed limit");
        }
        // Every command that reads the array, as a process of at most 512 MiB.
        let path = dir.join(format!("{name}.asdf"));
        std::fs::write(&path, bytes).unwrap();
        let p = path.as_os_str();
        let yaml = dir.join(format!("{name}.yaml"));
        let npy = dir.join(format!("{name}.npy"));
        let s = std::ffi::OsStr::new;
        for (args, want) in [
            (vec![s("check"), p], 1),
            (vec![s("info"), s("--stats"), p], 1),
            (vec![s("to-yaml"), p, s("-o"), yaml.as_os_str()], 1),
            (vec![s("extract"), p, s("a"), s("-o"), npy.as_os_str()], 1),
            (vec![s("defragment"), p, s("-o"), dir.join("d.asdf").as_os_str()], 1),
        ] {
            let (code, text) = rasdf_capped(&args, 512);
            assert_eq!(code, Some(want), "{name} {args:?}: {text}");
            assert!(text.contains(why), "{name} {args:?}: {text}");
        }
        assert!(!yaml.exists() && !npy.exists());
    }
    // A limit raised lets a file one trusts through; the default lets real inline data.
    let small = inline("[ucs4, 4]");
    let tight = Limits::default().max_inline_bytes(95);
    let e = OpenOptions::new()
        .limits(tight)
        .from_bytes(small.clone())
        .unwrap()
        .array("a")
        .and_then(|a| a.read_dyn())
        .unwrap_err();
    assert_eq!(e.limit().map(|l| (l.what, l.value, l.limit)), Some(("max_inline_bytes", 96, 95)));
    let loose = Limits::default().max_inline_bytes(96);
    assert!(OpenOptions::new().limits(loose).from_bytes(small).unwrap().array("a").and_then(|a| a.read_dyn()).is_ok());
    // The command line names the option that raises it.
    let path = dir.join("ucs4_512m.asdf");
    let (code, text) = rasdf_capped(&[std::ffi::OsStr::new("to-yaml"), path.as_os_str()], 512);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("--max-inline-bytes"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every command that writes refuses, with exit code 2, an output that is a file it
/// reads (by another path, a symbolic link or a hard link), and leaves it as it was:
/// `preview F P -o F` replaced the input with a PNG. An exploded file's block files are
/// inputs too. `defragment --in-place` is how a file is rewritten over itself.
#[test]
fn outputs_that_are_inputs_are_refused() {
    let dir = temp_dir("outputs");
    let input = dir.join("in.asdf");
    std::fs::copy(common::testdata("example.asdf"), &input).unwrap();
    let original = std::fs::read(&input).unwrap();
    std::os::unix::fs::symlink(&input, dir.join("link.asdf")).unwrap();
    std::fs::hard_link(&input, dir.join("hard.asdf")).unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    let i = input.to_str().unwrap();
    let run = |args: &[&str]| {
        let argv = std::iter::once("rasdf").chain(args.iter().copied()).map(Into::into).collect();
        rasdf_cli::args::main(argv, &mut Vec::new())
    };
    for same in [
        i.to_string(),
        format!("{}/sub/../in.asdf", dir.display()),
        format!("{}/link.asdf", dir.display()),
        format!("{}/hard.asdf", dir.display()),
    ] {
        let o = same.as_str();
        for args in [
            vec!["preview", i, "sci/data", "-o", o],
            vec!["extract", i, "sci/data", "-o", o],
            vec!["extract", i, "sci/dq", "-o", "-", "--mask", o],
            vec!["to-yaml", i, "-o", o],
            vec!["convert", i, o, "--array", "sci/data"],
            vec!["defragment", i, "-o", o],
            vec!["explode", i, "-o", o],
            vec!["implode", i, "-o", o],
        ] {
            assert_eq!(run(&args), 2, "{args:?}");
            assert!(std::fs::read(&input).unwrap() == original, "{args:?} changed the input");
        }
    }
    // An exploded file: its block files are inputs of implode and of every other command.
    let exploded = dir.join("x.asdf");
    assert_eq!(run(&["explode", i, "-o", exploded.to_str().unwrap()]), 0);
    let block = dir.join("x0000.asdf");
    let block_bytes = std::fs::read(&block).unwrap();
    for args in [
        vec!["implode", exploded.to_str().unwrap(), "-o", block.to_str().unwrap()],
        vec!["to-yaml", exploded.to_str().unwrap(), "-o", block.to_str().unwrap()],
    ] {
        assert_eq!(run(&args), 2, "{args:?}");
        assert!(std::fs::read(&block).unwrap() == block_bytes, "{args:?} replaced a block file");
    }
    // An output that is no input is written; --in-place rewrites the file itself.
    assert_eq!(run(&["to-yaml", i, "-o", dir.join("in.yaml").to_str().unwrap()]), 0);
    assert_eq!(run(&["defragment", i, "--in-place", "-c", "zlib"]), 0);
    let f = AsdfFile::open(&input).unwrap();
    assert!(f.blocks().iter().all(|b| b.compression == Compression::Zlib));
    assert_eq!(run(&["defragment", i, "--in-place", "-o", "x.asdf"]), 2, "-o and --in-place");
    assert_eq!(run(&["defragment", i]), 2, "neither -o nor --in-place");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A block of one byte whose strides overlap (a stride of 0) stands for as many elements
/// as `max_overlap_bytes` allows; its mask, statistics and elements are read one element
/// at a time, never gathered as values (that took 32 bytes an element: 4 GiB here).
#[test]
fn overlapping_masks_are_not_gathered() {
    let dir = temp_dir("overlap");
    let n = 1u64 << 24;
    let tree = format!(
        "a: !core/ndarray-1.1.0\n  source: 0\n  datatype: float64\n  byteorder: little\n  shape: [{n}]\n  strides: [0]\n  \
         mask: !core/ndarray-1.1.0 {{source: 1, datatype: bool8, byteorder: little, shape: [{n}], strides: [0]}}"
    );
    let mut bytes = asdf_with_tree(&tree);
    for data in [&1.5f64.to_le_bytes()[..], &[1u8][..]] {
        let h = BlockHeader {
            offset: 0,
            header_size: 48,
            flags: 0,
            compression: Compression::None,
            allocated_size: data.len() as u64,
            used_size: data.len() as u64,
            data_size: data.len() as u64,
            checksum: [0; 16],
        };
        bytes.extend_from_slice(&h.to_bytes());
        bytes.extend_from_slice(data);
    }
    let path = dir.join("overlap.asdf");
    std::fs::write(&path, &bytes).unwrap();
    let f = AsdfFile::open(&path).unwrap();
    let node = f.get("a").unwrap();
    let a = f.array_at(node).read_dyn().unwrap();
    let mask = f.array_at(node).mask(&a).unwrap().unwrap();
    assert_eq!(mask.len() as u64, n);
    assert!(mask.iter().all(|&m| m));
    let s = std::ffi::OsStr::new;
    let (code, text) = rasdf_capped(&[s("info"), s("--stats"), path.as_os_str()], 384);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains(&format!("masked={n}")), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Trees whose aliases reach a node by many paths, or a node from inside itself, where
/// something walks them: each gets its answer at once (an error or a bounded text).
#[test]
fn nodes_reached_by_many_paths_or_from_themselves_are_bounded() {
    // A list of two aliases of the last one, `depth` times: 2^depth paths to the end.
    let doubling = |end: &str, depth: usize, name: &str| {
        (1..=depth).fold(end.to_string(), |inner, i| format!("[&{name}{i} {inner}, *{name}{i}]"))
    };
    let shape = vec!["2"; 34].join(", ");
    let cases = [
        // An external array reference inside its own shape: info shows it once.
        (
            "external_in_itself",
            "x: &e !core/externalarray-1.0.0 {fileuri: a.fits, target: 0, datatype: int8, shape: [*e]}".to_string(),
        ),
        // A record datatype of 2^26 fields in a few hundred bytes.
        (
            "datatype_doubling",
            format!("x: !core/ndarray-1.0.0 {{data: [0], datatype: {}}}", doubling("[ascii, 0]", 26, "d")),
        ),
        // Inline data of 2^34 elements.
        ("inline_doubling", format!("x: !core/ndarray-1.0.0 {}", doubling("0", 34, "b"))),
        (
            "inline_itself",
            format!("x: !core/ndarray-1.0.0 {{data: &c [*c, *c], shape: [{shape}], datatype: [ascii, 0]}}"),
        ),
        (
            "inline_doubling_ascii0",
            format!("x: !core/ndarray-1.0.0 {{data: {}, datatype: [ascii, 0]}}", doubling("[0]", 34, "e")),
        ),
        // A list holding itself under a schema it fails: the error shows it once.
        ("list_in_itself_invalid", "asdf_library: &l [1, *l, *l]".to_string()),
    ];
    let dir = temp_dir("many-paths");
    for (name, tree) in cases {
        let path = dir.join(format!("{name}.asdf"));
        std::fs::write(&path, asdf_with_tree(&tree)).unwrap();
        let started = std::time::Instant::now();
        for args in [&["info"][..], &["info", "--json"], &["check"], &["search", "--value", "x"], &["to-yaml"]] {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_rasdf")).args(args).arg(&path).output().unwrap();
            let code = out.status.code();
            assert!(matches!(code, Some(0..=1)), "{name} {args:?}: {code:?} {}", String::from_utf8_lossy(&out.stderr));
        }
        assert!(started.elapsed().as_secs() < 20, "{name}: {:?}", started.elapsed());
        let f = AsdfFile::open(&path).unwrap();
        let mut out = Vec::new();
        report(&f, &InfoOptions::default(), &mut out).unwrap();
        if name == "external_in_itself" {
            let text = String::from_utf8(out).unwrap();
            assert!(text.contains("shape: (...,)"), "{text}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Anchors make a path far deeper than the text nests: lists 900 deep, each ending in an
/// alias of the one before, keys ordered so that the deepest is walked first. The tree is
/// refused as too deep (every walk that recurses would overflow the stack on it).
#[test]
fn depth_through_aliases_counts_as_depth() {
    let n = 60;
    let mut tree: Vec<String> = (1..=n).rev().map(|i| format!("k{i}: 0")).collect();
    for i in 1..=n {
        let inner = if i == 1 { "0".to_string() } else { format!("*a{}", i - 1) };
        tree.push(format!("k{i}: &a{i} {}{inner}{}", "[".repeat(900), "]".repeat(900)));
    }
    let bytes = asdf_with_tree(&tree.join("\n"));
    let err = OpenOptions::new().from_bytes(bytes.clone()).unwrap_err();
    assert!(err.to_string().contains("nests deeper than 1000 levels"), "{err}");
    // One chain link alone (900 deep) is fine, and so are aliases of it side by side.
    let ok = "a: &a [[[[0]]]]\nb: [*a, *a, [*a, [*a]]]";
    assert!(OpenOptions::new().from_bytes(asdf_with_tree(ok)).is_ok());
    let dir = temp_dir("alias-depth");
    let path = dir.join("chain.asdf");
    std::fs::write(&path, &bytes).unwrap();
    for args in [&["info"][..], &["to-yaml"], &["check"]] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_rasdf")).args(args).arg(&path).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
