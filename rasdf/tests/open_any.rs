//! `OpenOptions::open_any`: a path or a URL, with the feature `remote` or without it.

use std::io::ErrorKind as IoKind;
use std::path::Path;

use rasdf::OpenOptions;

fn io_error(input: &str) -> (IoKind, String) {
    match OpenOptions::new().open_any(input) {
        Err(e) => match e.kind() {
            rasdf::ErrorKind::Io(io) => (io.kind(), e.to_string()),
            other => panic!("{input}: expected an I/O error, got {other:?}: {e}"),
        },
        Ok(_) => panic!("{input}: opened"),
    }
}

#[test]
fn paths_are_opened_as_paths() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/example.asdf");
    let file = OpenOptions::new().open_any(&path).unwrap();
    assert!(!file.is_remote());
    assert_eq!(file.array("sci/data").unwrap().read::<f32>().unwrap().shape(), &[64, 64]);
    // Not URLs: a Windows drive, a scheme of one character or starting with a digit.
    for path in ["C://no/such.asdf", "1a://no/such.asdf", "no/such.asdf"] {
        assert_eq!(io_error(path).0, IoKind::NotFound, "{path}");
    }
}

#[test]
fn urls_are_never_looked_for_on_disk() {
    for url in ["ftp://user:secret@host/x.asdf", "https://user:secret@127.0.0.1:1/x.asdf?token=secret"] {
        let (kind, message) = io_error(url);
        assert!(!message.contains("secret"), "{message}");
        if cfg!(feature = "remote") {
            assert_ne!(kind, IoKind::NotFound, "{url}: {message}");
        } else {
            assert_eq!(kind, IoKind::Unsupported, "{url}: {message}");
            assert!(message.contains("feature `remote`"), "{message}");
        }
    }
    if cfg!(feature = "remote") {
        assert_eq!(io_error("ftp://host/x.asdf").0, IoKind::InvalidInput);
    }
}
