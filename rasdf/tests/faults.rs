//! Faults of the environment seen through the library: a file cut short or rewritten by
//! another writer while it is open gives an error when read, never zeros, a mix of two
//! versions or a `SIGBUS`; what was read before keeps its values.

use rasdf_testkit as common;
use rasdf_testkit::lz4_file;

use std::path::{Path, PathBuf};

use rasdf::AsdfFile;
use rasdf::block::Compression;
use rasdf::write::{Document, WriteOptions};

/// A file of 8 MiB: `data`, one million float64s uncompressed, then `z`, the same
/// compressed with zlib (so that it is read by ranges, not whole: it is over 256 KiB).
fn big_file(tag: &str) -> PathBuf {
    let dir = common::temp_dir(tag);
    let path = dir.join("big.asdf");
    let data = ::ndarray::Array1::from_iter((0..1_000_000).map(f64::from));
    let mut doc = Document::new();
    doc.set_array("data", data.view(), Compression::None).unwrap();
    doc.set_array("z", data.view(), Compression::Zlib).unwrap();
    doc.write_to_path(&path, &WriteOptions::default()).unwrap();
    path
}

/// Cuts `path` to `len` bytes, as another process's `truncate` or `cp` would.
fn cut(path: &Path, len: u64) {
    std::fs::OpenOptions::new().write(true).open(path).unwrap().set_len(len).unwrap();
}

fn changed(e: &rasdf::Error) -> bool {
    let text = e.to_string();
    e.is_changed() && (text.contains("cut short since it was opened") || text.contains("changed since it was opened"))
}

#[test]
fn an_array_read_after_a_cut_is_an_error_and_one_read_before_keeps_its_values() {
    let path = big_file("fault-view");
    let f = AsdfFile::open(&path).unwrap();
    assert!(f.check_unchanged().is_ok());
    let z = f.array("z").unwrap().read::<f64>().unwrap().to_owned();
    let first = f.blocks()[0].offset;
    cut(&path, first + 4096);
    let e = f.array("data").and_then(|a| a.read::<f64>()).unwrap_err();
    assert!(changed(&e), "{e}");
    assert!(e.to_string().contains("big.asdf"), "{e}");
    let e = f.check_unchanged().unwrap_err();
    assert!(changed(&e), "{e}");
    assert_eq!(z.sum(), 499_999_500_000.0, "read before the cut");
    // Every later read says so too.
    assert!(changed(&f.array("data").and_then(|a| a.read::<f64>()).unwrap_err()));
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

/// A file rewritten in place, the same length, is never read as a mix of versions.
#[test]
fn a_file_rewritten_in_place_is_an_error_when_read() {
    let path = big_file("fault-rewritten");
    let f = AsdfFile::open(&path).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let at = usize::try_from(f.blocks()[0].data_offset()).unwrap();
    bytes[at..at + 8].copy_from_slice(&7.0f64.to_le_bytes());
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&path, &bytes).unwrap();
    let e = f.array("data").and_then(|a| a.read::<f64>()).unwrap_err();
    assert!(changed(&e), "{e}");
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

/// A mapped file ([`rasdf::OpenOptions::memmap`]) cut short: `check_unchanged` says so,
/// before any page it lost is touched (touching one is the caller's hazard).
#[test]
fn a_mapped_file_cut_short_is_reported() {
    let path = big_file("fault-mapped");
    let f = rasdf::OpenOptions::new().memmap(true).open(&path).unwrap();
    let sum: f64 = f.array("data").unwrap().read::<f64>().unwrap().iter().sum();
    assert_eq!(sum, 499_999_500_000.0);
    cut(&path, f.blocks()[0].offset + 4096);
    let e = f.check_unchanged().unwrap_err();
    assert!(e.to_string().contains("cut short while mapped"), "{e}");
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn blocks_and_statistics_after_a_cut_are_errors() {
    let path = big_file("fault-blocks");
    let f = AsdfFile::open(&path).unwrap();
    let z = f.get("z").unwrap();
    cut(&path, f.blocks()[0].offset + 100);
    let results = f.verify_blocks();
    assert!(results.iter().all(|r| r.as_ref().is_err_and(changed)), "{results:?}");
    assert!(changed(&f.array_at(z).stats().unwrap_err()));
    assert!(changed(&f.block_data(1).unwrap_err()));
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn an_unchanged_file_reads_whole() {
    let path = big_file("fault-none");
    let f = AsdfFile::open(&path).unwrap();
    let sum: f64 = f.array("data").unwrap().read::<f64>().unwrap().iter().sum();
    assert_eq!(sum, 499_999_500_000.0);
    assert!(f.verify_blocks().iter().all(Result::is_ok));
    assert!(f.check_unchanged().is_ok());
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

/// A rewrite whose input is cut short while it is written fails, and leaves its target
/// as it was.
#[test]
fn a_rewrite_of_a_file_cut_short_is_not_put_in_place() {
    let path = big_file("fault-rewrite");
    let target = path.with_file_name("target.asdf");
    std::fs::write(&target, b"old").unwrap();
    let f = AsdfFile::open(&path).unwrap();
    let doc = Document::from_file(&f).unwrap();
    cut(&path, f.blocks()[0].offset + 4096);
    let e = doc.write_to_path(&target, &WriteOptions::default()).unwrap_err();
    assert!(changed(&e), "{e}");
    assert_eq!(std::fs::read(&target).unwrap(), b"old");
    let names: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn lz4_rows_after_a_cut_are_errors() {
    let dir = common::temp_dir("fault-lz4-rows");
    let path = dir.join("lz4.asdf");
    // Bytes lz4 shrinks somewhat.
    let fill = |k: usize, out: &mut [u8]| {
        out.iter_mut().enumerate().for_each(|(i, b)| *b = ((i * 7 + k) ^ (i >> 9)).to_le_bytes()[0])
    };
    lz4_file::lz4_records_file(&path, 8, 256 << 10, &fill);
    let f = AsdfFile::open(&path).unwrap();
    let node = f.get("data").unwrap();
    assert!(f.array_at(node).rows(0..16).unwrap().is_some());
    let first = f.blocks()[0].data_offset();
    cut(&path, first + (600 << 10));
    // Rows before the cut and after it: both see the file changed; no signal, no rows of
    // zeros.
    for rows in [70_000..70_016, 400_000..400_016] {
        let e = f.array_at(node).rows(rows.clone()).unwrap_err();
        assert!(changed(&e), "{rows:?}: {e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
