//! A write that needs more memory than there is fails with an error saying how much was
//! asked and what for, instead of aborting the process; the target is left as it was.

use std::borrow::Cow;

use rasdf::block::Compression;
use rasdf::ndarray::{ByteOrder, Datatype, ScalarType};
use rasdf::write::{ArrayBytes, ArrayStorage, Document, WriteOptions};

/// `n` float64s over 8 bytes, by a stride of 0: an array that is read, but that the
/// writer copies into a block of its own (the schema forbids a stride of 0).
fn zero_stride(n: usize) -> ArrayBytes<'static> {
    ArrayBytes {
        datatype: Datatype::Scalar(ScalarType::Float64),
        byteorder: ByteOrder::Little,
        shape: vec![n],
        strides: vec![0],
        data: Cow::Owned(1.5f64.to_le_bytes().to_vec()),
    }
}

/// Whether the kernel refuses an allocation larger than the machine's memory (its
/// heuristic or strict overcommit), rather than granting any size.
fn large_allocations_fail() -> bool {
    std::fs::read_to_string("/proc/sys/vm/overcommit_memory").is_ok_and(|m| m.trim() != "1")
}

#[test]
fn a_copy_larger_than_memory_is_an_error_not_an_abort() {
    let dir = std::env::temp_dir().join(format!("rasdf-write-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("out.asdf");
    std::fs::write(&path, b"the old content").unwrap();
    // 2^60 elements: 8 EiB, more than the address space; 2^42: 32 TiB, more than any
    // machine this runs on.
    let mut cases = vec![(1usize << 60, "9223372036854775808 bytes")];
    if large_allocations_fail() {
        cases.push((1 << 42, "35184372088832 bytes (32768.0 GiB)"));
    }
    for (n, asked) in cases {
        for compression in [Compression::None, Compression::Zlib] {
            let mut doc = Document::new();
            doc.set_array_bytes("big", zero_stride(n), compression).unwrap();
            let e = doc.write_to_path(&path, &WriteOptions::default()).unwrap_err();
            let text = e.to_string();
            assert!(text.contains(&format!("cannot allocate {asked}")), "{text}");
            assert!(text.contains("for the copy of an array view"), "{text}");
            assert!(text.contains(&path.display().to_string()), "the error names the file: {text}");
            assert!(
                matches!(e.kind(), rasdf::ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::OutOfMemory),
                "{text}"
            );
            assert_eq!(std::fs::read(&path).unwrap(), b"the old content", "the target is left as it was");
        }
    }
    // A few elements by a stride of 0 are copied and written.
    let mut doc = Document::new();
    doc.set_array_bytes("small", zero_stride(1000), Compression::Zlib).unwrap();
    doc.write_to_path(&path, &WriteOptions::default()).unwrap();
    let file = rasdf::AsdfFile::open(&path).unwrap();
    let a = file.array("small").unwrap().read::<f64>().unwrap();
    assert!(a.len() == 1000 && a.iter().all(|&x| x == 1.5));
    drop(a);
    drop(file);
    // Written inline, the view needs no copy: its elements are written from the 8 bytes.
    let options = WriteOptions::default().storage(Some(ArrayStorage::Inline));
    doc.write_to_path(&path, &options).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(&format!("data: [{}]", vec!["1.5"; 1000].join(", "))), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}
