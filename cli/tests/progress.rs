//! Progress bars: drawn on standard error when it is a terminal (a pseudo-terminal made
//! by `script`), never when it is not, never with `--quiet`; the library's progress
//! reaches its total.

use rasdf_testkit as common;
mod support;

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

/// `script`, which runs a command on a pseudo-terminal. Under CI (`CI` set) a missing
/// one fails the test instead of skipping it.
fn script() -> Option<&'static str> {
    let found = ["/usr/bin/script", "/bin/script"].into_iter().find(|p| Path::new(p).exists());
    if found.is_none() {
        assert!(std::env::var_os("CI").is_none(), "`script` (util-linux) is missing");
        eprintln!("skipped: `script` (util-linux) is not installed, so no terminal can be made");
    }
    found
}

/// The bytes a command wrote to its terminal (standard output and error together).
fn on_terminal(script: &str, args: &[&str]) -> String {
    let line = std::iter::once(env!("CARGO_BIN_EXE_rasdf"))
        .chain(args.iter().copied())
        .map(|a| format!("'{a}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let o = Command::new(script).args(["-qec", &line, "/dev/null"]).output().unwrap();
    assert!(o.status.success(), "{line}: {}", String::from_utf8_lossy(&o.stdout));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn bars_on_a_terminal_only_and_not_when_quiet() {
    let dir = common::temp_dir("progress");
    let input = common::testdata("example.asdf");
    let input = input.to_str().unwrap();
    let out = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let commands: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["defragment".into(), input.into(), "-o".into(), out("d.asdf"), "-c".into(), "zlib".into()],
            "defragment [",
        ),
        (vec!["explode".into(), input.into(), "-o".into(), out("e.asdf")], "explode ["),
        (vec!["implode".into(), out("e.asdf"), "-o".into(), out("i.asdf")], "implode ["),
        (vec!["check".into(), input.into()], "blocks"),
        (vec!["convert".into(), input.into(), out("c.b2nd"), "--array".into(), "/sci/data".into()], "convert to"),
        (vec!["to-yaml".into(), input.into(), "-o".into(), out("t.yaml")], "to-yaml"),
    ];
    let script = script();
    for (args, bar) in &commands {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        // Not a terminal: nothing on standard error.
        let o = Command::new(env!("CARGO_BIN_EXE_rasdf")).args(&args).output().unwrap();
        assert!(o.status.success(), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&o.stderr), "", "{args:?}");
        let Some(script) = script else { continue };
        let shown = on_terminal(script, &args);
        // Spinners draw on a timer: a fast command may end before the first tick.
        if !bar.starts_with("convert") && !bar.starts_with("to-yaml") {
            assert!(shown.contains(bar), "{args:?}: no bar in {shown:?}");
            // Cleared at the end: the last thing drawn erases the line.
            assert!(shown.contains("\x1b[2K"), "{args:?}: {shown:?}");
        }
        let mut quiet = vec!["--quiet"];
        quiet.extend(&args);
        let shown = on_terminal(script, &quiet);
        assert!(!shown.contains(bar) || args[0] == "check", "{quiet:?}: {shown:?}");
        assert!(!shown.contains('\x1b'), "{quiet:?}: {shown:?}");
    }
    // asdf-explode has --quiet too.
    let explode = env!("CARGO_BIN_EXE_rasdf").replace("rasdf", "asdf-explode");
    let o = Command::new(&explode).args([input, "-q", "-o", &out("q.asdf")]).output().unwrap();
    assert!(o.status.success());
}

#[test]
fn the_library_counts_to_the_total() {
    let calls: Arc<Mutex<Vec<(u64, u64)>>> = Arc::default();
    let seen = calls.clone();
    let progress = rasdf::Progress::new(move |done, total| seen.lock().unwrap().push((done, total)));
    let file = rasdf::AsdfFile::open(common::testdata("example.asdf")).unwrap();
    let doc = rasdf::write::Document::from_file(&file).unwrap();
    let dir = common::temp_dir("progress-lib");
    let options = rasdf::write::WriteOptions::default().progress(Some(progress.clone()));
    doc.write_to_path(dir.join("w.asdf"), &options).unwrap();
    let data: u64 = file.blocks().iter().map(|b| b.data_size).sum();
    let got = calls.lock().unwrap().clone();
    assert_eq!(got.first(), Some(&(0, data)));
    assert_eq!(got.last(), Some(&(data, data)));
    assert_eq!(got.len(), 1 + file.blocks().len());
    calls.lock().unwrap().clear();
    let statuses = file.verify_blocks_with(Some(&progress));
    assert!(statuses.iter().all(Result::is_ok));
    let got = calls.lock().unwrap().clone();
    let n = file.blocks().len() as u64;
    assert_eq!(got.first(), Some(&(0, n)));
    assert_eq!(got.iter().map(|c| c.0).max(), Some(n));
    assert_eq!(got.len() as u64, n + 1);
}

/// Text from a file shown on a terminal has its control characters escaped (a key or a
/// value holding `ESC [2J` would clear the screen, an OSC sequence retitle the window, a
/// bidirectional override reorder the line); piped, the report is the file's text as
/// the reference prints it. Error messages are escaped wherever they go.
#[test]
fn control_characters_from_a_file_are_escaped_on_a_terminal() {
    let Some(script) = script() else { return };
    let dir = common::temp_dir("terminal");
    let file = dir.join("esc.asdf");
    std::fs::write(
        &file,
        "#ASDF 1.0.0\n#ASDF_STANDARD 1.6.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n\
         \"k\\e[2J\": \"v\\e]0;title\\a\\u202e\\x9b\"\nn: !core/ndarray-1.1.0 {source: 7, datatype: \"x\\e[1m\", shape: [1], byteorder: little}\n...\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let raw = |s: &str| s.contains('\x1b') || s.contains('\u{202e}') || s.contains('\u{9b}') || s.contains('\x07');
    for args in [vec!["info", f], vec!["search", f], vec!["search", f, "--json"], vec!["info", f, "--json"]] {
        let shown = on_terminal(script, &args);
        assert!(!raw(&shown), "{args:?}: {shown:?}");
        assert!(shown.contains("k\\x1b[2J") || shown.contains("k\\u001b[2J"), "{args:?}: {shown:?}");
        assert!(shown.contains("\\u202e") || shown.contains("\\u202E"), "{args:?}: {shown:?}");
    }
    // JSON on a terminal is still JSON.
    let json = on_terminal(script, &["search", f, "--json"]);
    let v: serde_json::Value = serde_json::from_str(json.trim()).expect("valid JSON");
    assert_eq!(v["matches"][0]["value"], "v\u{1b}]0;title\u{7}\u{202e}\u{9b}");
    // Piped: the text as it is.
    let (_, piped) = support::rasdf(&["info", f]);
    assert!(piped.contains("k\x1b[2J"), "{piped:?}");
    // An error quoting the file (the datatype of `n`), on standard error, piped or not.
    let o = Command::new(env!("CARGO_BIN_EXE_rasdf")).args(["extract", f, "n", "-o", "-"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("x\\x1b[1m") && !raw(&err), "{err:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
