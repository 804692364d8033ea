//! Listing a file's arrays (`AsdfFile::arrays`): from the tree and the block headers
//! alone, so a file whose blocks are damaged still lists; shapes print as numbers;
//! block, external and inline storage told apart.

use rasdf_testkit as common;

use std::path::PathBuf;

use rasdf::AsdfFile;
use rasdf::block::Compression;
use rasdf::file::{ArrayInfo, StorageInfo};
use rasdf::ndarray::{ArrayMeta, ByteOrder, Datatype, Dim, ScalarType};
use rasdf::write::{ArrayStorage, Document, WriteOptions};

/// A folder of its own for one test, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        Dir(common::temp_dir(&format!("listing-{tag}")))
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn block(index: usize, compression: Compression) -> StorageInfo {
    StorageInfo::Block { index, compression }
}

fn scalar(t: ScalarType) -> Datatype {
    Datatype::Scalar(t)
}

/// (path, shape, datatype, storage) of each array, as text.
fn summary(arrays: &[ArrayInfo]) -> Vec<(String, String, String, String)> {
    arrays
        .iter()
        .map(|a| (a.path.clone(), a.shape.to_string(), a.datatype.to_string(), a.storage.to_string()))
        .collect()
}

/// A small file in memory, from the text of its tree.
fn from_tree(tree: &str) -> AsdfFile {
    let text = format!(
        "#ASDF 1.0.0\n#ASDF_STANDARD 1.5.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n{tree}...\n"
    );
    rasdf::OpenOptions::new().from_bytes(text.into_bytes()).unwrap()
}

#[test]
fn example_lists_four_arrays() {
    let file = AsdfFile::open(common::testdata("example.asdf")).unwrap();
    let arrays = rasdf_testkit::listing(&file).unwrap();
    let paths: Vec<&str> = arrays.iter().map(|a| a.path.as_str()).collect();
    assert_eq!(paths, ["/catalog", "/sci/data", "/sci/dq", "/sci/err"]);
    let handles: Vec<_> = file.arrays().map(|a| a.path().unwrap().to_string()).collect();
    assert_eq!(paths, handles, "in tree order, as the handles' paths");

    let catalog = &arrays[0];
    assert_eq!(catalog.shape, [2]);
    assert!(matches!(&catalog.datatype, Datatype::Record(fields) if fields.len() == 3));
    assert_eq!(catalog.storage, block(3, Compression::None));
    assert_eq!(catalog.byteorder, ByteOrder::Big);

    let data = &arrays[1];
    assert_eq!(data.shape, [64, 64]);
    assert_eq!(data.datatype, scalar(ScalarType::Float32));
    assert_eq!(data.byteorder, ByteOrder::Little);
    assert_eq!(data.storage, block(0, Compression::Zlib));
    assert!(!data.streamed);

    assert_eq!(arrays[2].datatype, scalar(ScalarType::UInt8));
    assert_eq!(arrays[2].storage, block(1, Compression::None));
    assert_eq!(arrays[3].datatype, scalar(ScalarType::Float64));
    assert_eq!((arrays[3].byteorder, &arrays[3].storage), (ByteOrder::Big, &block(2, Compression::Lz4)));

    // As `rasdf info` shows them.
    assert_eq!(
        summary(&arrays)[1..],
        [
            ("/sci/data".into(), "(64, 64)".into(), "float32".into(), "block 0 (zlib)".into()),
            ("/sci/dq".into(), "(64, 64)".into(), "uint8".into(), "block 1 (none)".into()),
            ("/sci/err".into(), "(64, 64)".into(), "float64".into(), "block 2 (lz4)".into()),
        ]
    );
    assert_eq!(summary(&arrays)[0].1, "(2,)");

    // One array by path, with or without the leading `/`; the path as the listing writes it.
    assert_eq!(file.array("sci/err").unwrap().info().unwrap(), arrays[3]);
    assert_eq!(file.array("/sci/err").unwrap().info().unwrap(), arrays[3]);
    let missing = file.array("sci/nothing").and_then(|a| a.info()).unwrap_err();
    assert!(missing.to_string().contains("sci/nothing"), "{missing}");

    // Reading agrees with the listing.
    for a in &arrays {
        let read = file.array(&a.path).unwrap().read_dyn().unwrap();
        assert_eq!((read.shape.as_slice(), &read.datatype), (a.shape.as_slice(), &a.datatype), "{}", a.path);
    }
}

/// Listing reads no block data: the arrays of a file whose zlib block holds garbage (its
/// header intact) list as before, while reading that array fails.
#[test]
fn damaged_blocks_still_list() {
    let good = std::fs::read(common::testdata("example.asdf")).unwrap();
    let file = rasdf::OpenOptions::new().from_bytes(good.clone()).unwrap();
    let want = rasdf_testkit::listing(&file).unwrap();
    let h = &file.blocks()[0];
    assert_eq!(h.compression, Compression::Zlib);
    let at = usize::try_from(h.data_offset()).unwrap();
    let len = usize::try_from(h.used_size).unwrap();
    let mut bad = good;
    for (b, k) in bad[at..at + len].iter_mut().zip((0u8..=255).cycle()) {
        *b = k.wrapping_mul(37) ^ 0x5a;
    }
    // Block 1 (uncompressed) garbage too: its bytes are not looked at either.
    let h1 = &file.blocks()[1];
    let at1 = usize::try_from(h1.data_offset()).unwrap();
    bad[at1..at1 + 16].fill(0xff);

    let damaged = rasdf::OpenOptions::new().from_bytes(bad.clone()).unwrap();
    assert_eq!(rasdf_testkit::listing(&damaged).unwrap(), want);
    assert!(damaged.array("sci/data").and_then(|a| a.read_dyn()).is_err(), "the zlib block is damaged");
    // With checksums verified on access too: listing verifies nothing.
    let verified = rasdf::OpenOptions::new().verify_checksums(true).from_bytes(bad).unwrap();
    assert_eq!(rasdf_testkit::listing(&verified).unwrap(), want);
    assert!(verified.array("sci/dq").and_then(|a| a.read_dyn()).is_err(), "the checksum of block 1 no longer matches");
}

#[test]
fn shapes_display_as_numbers() {
    let file = AsdfFile::open(common::testdata("example.asdf")).unwrap();
    let data = file.array("sci/data").unwrap().info().unwrap();
    assert_eq!(data.shape.to_string(), "(64, 64)");
    assert_eq!(format!("{:?}", data.shape), "[64, 64]");
    let debug = format!("{data:?}");
    assert!(debug.contains("shape: [64, 64]") && !debug.contains("Fixed"), "{debug}");
    assert_eq!(data.shape.iter().product::<usize>(), 4096);
    assert_eq!(data.shape.clone().into_vec(), vec![64, 64]);

    // The declared shape of the tree, `Dim`s, prints as written.
    let meta = ArrayMeta::parse(file.get("sci/data").unwrap()).unwrap();
    assert_eq!(format!("{:?}", meta.shape), "[64, 64]");
    assert_eq!(meta.shape[0].to_string(), "64");
    assert_eq!(format!("{:?}", [Dim::Stream, Dim::Fixed(8192)]), "[*, 8192]");

    // An empty one.
    let f = from_tree("z: !core/ndarray-1.0.0 {data: [], datatype: int8, shape: [0]}\n");
    let z = f.array("z").unwrap().info().unwrap();
    assert_eq!((z.shape.to_string(), z.storage.to_string()), ("(0,)".into(), "inline".into()));
}

/// A streamed array (`'*'` first) lists the rows its block holds, and says it is streamed.
#[test]
fn streamed_arrays_count_their_rows() {
    let file = AsdfFile::open(common::testdata("pyasdf/streamed.asdf")).unwrap();
    let rows = file.array("rows").unwrap().info().unwrap();
    assert!(rows.streamed);
    let h = &file.blocks()[0];
    assert!(h.is_streamed());
    let n = usize::try_from(h.data_size).unwrap() / 24;
    assert!(n > 0);
    assert_eq!(rows.shape, [n, 3]);
    assert_eq!(rows.storage, block(0, Compression::None));
    assert_eq!(file.array("rows").unwrap().read_dyn().unwrap().shape, rows.shape.as_slice());
    for f in common::reference_files().iter().filter(|f| f.ends_with("stream.asdf")) {
        let file = AsdfFile::open(f).unwrap();
        let a = file.array("my_stream").unwrap().info().unwrap();
        assert!(a.streamed, "{}", f.display());
        assert_eq!(a.shape[1..], [8], "{}", f.display());
        assert_eq!(file.array("my_stream").unwrap().read_dyn().unwrap().shape, a.shape.as_slice(), "{}", f.display());
    }
}

/// An exploded file's arrays list their external source, without opening it: they still
/// list once the parts are gone.
#[test]
fn external_arrays_list_their_source() {
    let dir = Dir::new("external");
    let mut doc = Document::new();
    let image = ndarray::Array2::<i16>::from_shape_fn((3, 5), |(i, j)| i16::try_from(i * 5 + j).unwrap());
    doc.set_array("sci/data", image.view(), Compression::None).unwrap();
    doc.set_array("sci/err", ndarray::Array1::<f64>::zeros(7).view(), Compression::Zlib).unwrap();
    let path = dir.0.join("exploded.asdf");
    let options = WriteOptions::default().storage(Some(ArrayStorage::External));
    doc.write_to_path(&path, &options).unwrap();

    let file = AsdfFile::open(&path).unwrap();
    let arrays = rasdf_testkit::listing(&file).unwrap();
    assert_eq!(arrays.len(), 2);
    for (a, shape) in arrays.iter().zip([vec![3, 5], vec![7]]) {
        let StorageInfo::External { source } = &a.storage else { panic!("{a:?} is not external") };
        assert!(dir.0.join(source).is_file(), "{source}");
        assert!(a.storage.to_string().starts_with("external "), "{}", a.storage);
        assert_eq!(a.shape, shape);
        assert!(!a.streamed);
    }
    assert_eq!(arrays[0].datatype, scalar(ScalarType::Int16));
    assert_eq!(arrays[1].datatype, scalar(ScalarType::Float64));
    assert_ne!(arrays[0].storage, arrays[1].storage);
    assert_eq!(file.array("sci/data").unwrap().read::<i16>().unwrap(), image.into_dyn());

    // The parts removed: the listing never opened them.
    drop(file);
    for a in &arrays {
        let StorageInfo::External { source } = &a.storage else { unreachable!() };
        std::fs::remove_file(dir.0.join(source)).unwrap();
    }
    let file = AsdfFile::open(&path).unwrap();
    assert_eq!(rasdf_testkit::listing(&file).unwrap(), arrays);
    assert!(file.array("sci/data").and_then(|a| a.read_dyn()).is_err());
}

#[test]
fn inline_arrays_list_as_inline() {
    let dir = Dir::new("inline");
    let mut doc = Document::new();
    doc.set_array("small", ndarray::array![[1u8, 2, 3], [4, 5, 6]].view(), Compression::None).unwrap();
    let path = dir.0.join("inline.asdf");
    let options = WriteOptions::default().storage(Some(ArrayStorage::Inline));
    doc.write_to_path(&path, &options).unwrap();
    let file = AsdfFile::open(&path).unwrap();
    assert!(file.blocks().is_empty());
    let small = file.array("small").unwrap().info().unwrap();
    assert_eq!((small.shape.to_string(), small.storage.clone()), ("(2, 3)".into(), StorageInfo::Inline));
    assert_eq!(small.datatype, scalar(ScalarType::UInt8));
    assert_eq!(small.storage.to_string(), "inline");

    // Written by hand: a bare list, and `data:` with its datatype inferred.
    let file = from_tree("a: !core/ndarray-1.0.0 [[1, 2], [3, 4]]\nb: !core/ndarray-1.0.0 {data: [1.5, 2.5, 3.5]}\n");
    let arrays = rasdf_testkit::listing(&file).unwrap();
    assert_eq!(
        summary(&arrays),
        [
            ("/a".into(), "(2, 2)".into(), "int64".into(), "inline".into()),
            ("/b".into(), "(3,)".into(), "float64".into(), "inline".into()),
        ]
    );
    assert!(arrays.iter().all(|a| a.byteorder == ByteOrder::NATIVE));
}

/// What cannot be listed fails with the array's path; the other arrays list one by one.
#[test]
fn unlistable_arrays_name_their_path() {
    let file = from_tree(
        "good: !core/ndarray-1.0.0 [1, 2]\n\
         gone: !core/ndarray-1.0.0 {source: 4, datatype: int8, byteorder: big, shape: [2]}\n\
         bad: !core/ndarray-1.0.0 {source: 0, byteorder: big, shape: [2]}\n",
    );
    let err = rasdf_testkit::listing(&file).unwrap_err();
    assert!(err.to_string().contains("gone"), "{err}");
    assert!(err.to_string().contains("does not have"), "{err}");
    let each: Vec<bool> = file.arrays().map(|a| a.info().is_ok()).collect();
    assert_eq!(each, [true, false, false]);
    let bad = file.array("bad").and_then(|a| a.info()).unwrap_err();
    assert!(bad.to_string().contains("datatype"), "{bad}");

    // A layout past its block's data size (from the header) fails without reading it.
    let good = std::fs::read(common::testdata("example.asdf")).unwrap();
    let text = String::from_utf8_lossy(&good).into_owned();
    let (head, _) = text.split_once("shape: [64, 64]").unwrap();
    let at = head.len();
    let mut wide = good;
    wide[at..at + "shape: [64, 64]".len()].copy_from_slice(b"shape: [64, 99]");
    let file = rasdf::OpenOptions::new().from_bytes(wide).unwrap();
    let err = file.array("sci/data").and_then(|a| a.info()).unwrap_err();
    assert!(err.to_string().contains("needs bytes"), "{err}");
    assert!(file.array("sci/dq").and_then(|a| a.info()).is_ok());
}

/// A negative `source` counts from the last block; the listing gives the block's number.
#[test]
fn negative_sources_resolve() {
    let good = std::fs::read(common::testdata("example.asdf")).unwrap();
    let text = String::from_utf8_lossy(&good).into_owned();
    let (head, _) = text.split_once("source: 3\n").unwrap();
    // One byte longer: the index no longer matches, the blocks are found by walking.
    let mut bytes = good[..head.len()].to_vec();
    bytes.extend_from_slice(b"source: -1");
    bytes.extend_from_slice(&good[head.len() + "source: 3".len()..]);
    let file = rasdf::OpenOptions::new().from_bytes(bytes).unwrap();
    assert_eq!(file.blocks().len(), 4);
    assert_eq!(file.array("catalog").unwrap().info().unwrap().storage, block(3, Compression::None));
}
