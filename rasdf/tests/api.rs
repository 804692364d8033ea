//! The writing API as a Rust user meets it: each capability written to a file, read back
//! with `AsdfFile`, and compared with what went in.

use rasdf_testkit as common;

use std::path::{Path, PathBuf};

use ndarray::{Array, Array1, Array2, Array3, ArrayD, IxDyn, arr0, s};
use num_complex::Complex;
use rasdf::AsdfFile;
use rasdf::block::Compression;
use rasdf::ndarray::ScalarType;
use rasdf::write::{ArrayStorage, Document, Ndarray, WriteOptions};

/// A folder of its own for one test, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        Dir(common::temp_dir(&format!("api-{tag}")))
    }

    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn write(doc: &Document<'_>, path: &Path, options: &WriteOptions) -> AsdfFile {
    doc.write_to_path(path, options).unwrap();
    AsdfFile::open(path).unwrap()
}

/// `set_array` takes owned arrays, views and references, of any dimension and element
/// type, and each reads back as it went in (views as what they show).
#[test]
fn set_array_takes_owned_arrays_views_and_references_of_any_dimension() {
    let dir = Dir::new("set-array");
    let image = Array2::from_shape_fn((5, 7), |(y, x)| (y * 7 + x) as f32 * 0.5);
    let cube = Array3::from_shape_fn((2, 3, 4), |(a, b, c)| i16::try_from(100 * a + 10 * b + c).unwrap() - 50);
    let wide = Array1::from_vec(vec![0, 1, u64::MAX, u64::MAX / 3]);
    let dynamic = ArrayD::from_shape_fn(IxDyn(&[2, 1, 2, 3, 1]), |i| {
        ndarray::Dimension::slice(&i).iter().sum::<usize>() % 2 == 0
    });
    let complex = Array1::from_vec(vec![Complex::new(1.0f64, -2.0), Complex::new(f64::INFINITY, 0.5)]);
    let halves = Array1::from_iter((0..6).map(|i| half::f16::from_f32(i as f32 / 4.0)));
    let fortran = Array2::from_shape_fn((3, 4), |(i, j)| i64::try_from(10 * i + j).unwrap()).reversed_axes();
    let mut sliced = Array1::from_iter(0u8..=255);
    sliced.slice_collapse(s![200..210]);

    let mut doc = Document::new();
    // Owned, moved in.
    doc.set_array("owned/image", image.clone(), Compression::Zlib).unwrap();
    doc.set_array("owned/dynamic", dynamic.clone(), Compression::None).unwrap();
    doc.set_array("owned/scalar", arr0(-7i32), Compression::None).unwrap();
    doc.set_array("owned/complex", complex.clone(), Compression::Bzp2).unwrap();
    doc.set_array("owned/halves", halves.clone(), Compression::Lz4).unwrap();
    // Owned, not in C order or a slice of a larger buffer: copied.
    doc.set_array("owned/fortran", fortran.clone(), Compression::None).unwrap();
    doc.set_array("owned/sliced", sliced.clone(), Compression::None).unwrap();
    // References and views (strided, reversed).
    doc.set_array("ref/cube", &cube, Compression::Lz4).unwrap();
    doc.set_array("ref/wide", &wide, Compression::None).unwrap();
    doc.set_array("view/every_other", cube.slice(s![.., ..;2, ..;-1]), Compression::Zlib).unwrap();
    doc.set_array("view/transposed", image.t(), Compression::None).unwrap();
    let mut scratch = image.clone();
    doc.set_array("view/mut", scratch.view_mut(), Compression::None).unwrap();
    let file = write(&doc, &dir.file("arrays.asdf"), &WriteOptions::default());

    assert_eq!(file.array("owned/image").unwrap().read::<f32>().unwrap(), image.clone().into_dyn());
    assert_eq!(file.array("owned/dynamic").unwrap().read::<bool>().unwrap(), dynamic);
    assert_eq!(file.array("owned/scalar").unwrap().read::<i32>().unwrap(), arr0(-7i32).into_dyn());
    assert_eq!(file.array("owned/complex").unwrap().read::<Complex<f64>>().unwrap(), complex.into_dyn());
    assert_eq!(file.array("owned/halves").unwrap().read::<half::f16>().unwrap(), halves.into_dyn());
    assert_eq!(file.array("owned/fortran").unwrap().read::<i64>().unwrap(), fortran.into_dyn());
    assert_eq!(file.array("owned/sliced").unwrap().read::<u8>().unwrap(), Array1::from_iter(200u8..210).into_dyn());
    assert_eq!(file.array("ref/cube").unwrap().read::<i16>().unwrap(), cube.clone().into_dyn());
    assert_eq!(file.array("ref/wide").unwrap().read::<u64>().unwrap(), wide.into_dyn());
    assert_eq!(
        file.array("view/every_other").unwrap().read::<i16>().unwrap(),
        cube.slice(s![.., ..;2, ..;-1]).into_dyn()
    );
    assert_eq!(file.array("view/transposed").unwrap().read::<f32>().unwrap(), image.t().into_dyn());
    assert_eq!(file.array("view/mut").unwrap().read::<f32>().unwrap(), image.clone().into_dyn());
    // Views are written as what they show: a block each, no strides.
    assert_eq!(file.blocks().len(), 12);
    assert!(file.get("view/every_other").unwrap().key("strides").is_none());

    // What a file lends (a `CowArray`) is taken as it is, into a new file.
    let mut again = Document::new();
    again.set_array("image", file.array("owned/image").unwrap().read::<f32>().unwrap(), Compression::None).unwrap();
    again
        .set_array("cube", file.array("ref/cube").unwrap().read::<i16>().unwrap().into_owned(), Compression::None)
        .unwrap();
    let copy = write(&again, &dir.file("again.asdf"), &WriteOptions::default());
    assert_eq!(copy.array("image").unwrap().read::<f32>().unwrap(), image.into_dyn());
    assert_eq!(copy.array("cube").unwrap().read::<i16>().unwrap(), cube.into_dyn());
}

/// `set` takes every integer type; those beyond `i64` read back as the same integer.
#[test]
fn wide_integers_read_back_exactly() {
    let dir = Dir::new("integers");
    let mut doc = Document::new();
    doc.set("u64_max", u64::MAX).unwrap();
    doc.set("u64_small", 5u64).unwrap();
    doc.set("u64_past_i64", i64::MAX as u64 + 1).unwrap();
    doc.set("usize", usize::MAX).unwrap();
    doc.set("isize", isize::MIN).unwrap();
    doc.set("i64_min", i64::MIN).unwrap();
    doc.set("i128_min", i128::MIN).unwrap();
    doc.set("u128_max", u128::MAX).unwrap();
    doc.set("i8", -8i8).unwrap();
    doc.set("u16", 65_535u16).unwrap();
    doc.set("big", num_bigint::BigInt::from(3u8).pow(100)).unwrap();
    doc.set("null", ()).unwrap();
    let file = write(&doc, &dir.file("ints.asdf"), &WriteOptions::default());

    let get = |p: &str| file.node_at(p).unwrap();
    assert_eq!(get("u64_max").deserialize::<u64>().unwrap(), u64::MAX);
    assert_eq!(file.integer_at(get("u64_max")).unwrap(), num_bigint::BigInt::from(u64::MAX));
    assert_eq!(get("u64_past_i64").deserialize::<u64>().unwrap(), 1 << 63);
    assert_eq!(get("usize").deserialize::<u64>().unwrap(), usize::MAX as u64);
    assert_eq!(get("isize").deserialize::<i64>().unwrap(), isize::MIN as i64);
    assert_eq!(get("i64_min").deserialize::<i64>().unwrap(), i64::MIN);
    assert_eq!(get("i128_min").deserialize::<i128>().unwrap(), i128::MIN);
    assert_eq!(get("u128_max").deserialize::<u128>().unwrap(), u128::MAX);
    assert_eq!(file.integer_at(get("big")).unwrap(), num_bigint::BigInt::from(3u8).pow(100));
    // Those an ASDF literal holds stay plain integers.
    assert_eq!(get("u64_small").as_i64(), Some(5));
    assert_eq!(get("i8").as_i64(), Some(-8));
    assert_eq!(get("u16").as_i64(), Some(65_535));
    assert!(get("null").is_null());
    // Beyond: core/integer, as the reference writes a Python int that large.
    assert!(get("u64_max").is_asdf_tag("core/integer"));
}

#[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
struct Meta {
    telescope: String,
    exposure: f64,
    frames: u64,
    filters: Vec<String>,
}

fn meta() -> Meta {
    Meta { telescope: "JWST".into(), exposure: 120.5, frames: u64::MAX, filters: vec!["F200W".into(), "F444W".into()] }
}

/// A struct serialized at the root is the root mapping's entries, and deserializes back.
#[test]
fn a_struct_serialized_at_the_root() {
    let dir = Dir::new("root");
    let doc = Document::from_serialize(&meta()).unwrap();
    let file = write(&doc, &dir.file("root.asdf"), &WriteOptions::default());
    assert_eq!(file.tree().root().unwrap().deserialize::<Meta>().unwrap(), meta());
    assert!(file.tree().root().unwrap().is_asdf_tag("core/asdf"), "the root keeps its tag");
    assert!(file.get("asdf_library").is_some());

    // At "": merged into what the document holds already.
    let mut doc = Document::new();
    doc.set("kept", 1).unwrap();
    doc.set("telescope", "HST").unwrap();
    doc.set_serialize("", &meta()).unwrap();
    let file = write(&doc, &dir.file("merged.asdf"), &WriteOptions::default());
    assert_eq!(file.get("kept").and_then(|n| n.as_i64()), Some(1));
    assert_eq!(file.get("telescope").and_then(|n| n.as_str()), Some("JWST"));
    assert_eq!(file.tree().root().unwrap().deserialize::<Meta>().unwrap(), meta());

    // Only a mapping can be the root.
    assert!(Document::from_serialize(&[1, 2, 3]).is_err());
    assert!(Document::new().set_serialize("", &5).is_err());
}

#[derive(serde::Serialize)]
struct Exposure<'a> {
    name: &'a str,
    image: Ndarray<Array2<f32>>,
    mask: Ndarray<ndarray::ArrayView1<'a, u8>>,
    planes: Vec<Ndarray<Array1<i64>>>,
    meta: Meta,
}

/// An `Ndarray` field is a real ndarray node with a block of its own, not a list.
#[test]
fn ndarray_fields_of_serde_values_become_arrays_with_blocks() {
    let dir = Dir::new("serde-arrays");
    let image = Array2::from_shape_fn((16, 8), |(y, x)| (y as f32).mul_add(8.0, x as f32));
    let bytes: Vec<u8> = (0..=255).collect();
    let planes = [Array1::from_vec(vec![i64::MIN, 0, i64::MAX]), Array1::from_iter(0..1000)];
    let value = Exposure {
        name: "science",
        image: Ndarray::compressed(image.clone(), Compression::Zlib),
        // A view with a step: written as what it shows.
        mask: Ndarray::new(ndarray::ArrayView1::from(&bytes[..]).slice_move(s![..;5])),
        planes: planes.iter().cloned().map(Ndarray::from).collect(),
        meta: meta(),
    };
    let mut doc = Document::new();
    doc.set_serialize("exposure", &value).unwrap();
    let file = write(&doc, &dir.file("fields.asdf"), &WriteOptions::default());

    let node = file.get("exposure/image").unwrap();
    assert!(node.is_asdf_tag("core/ndarray"), "{:?}", node.tag());
    assert!(node.key("source").and_then(|s| s.as_i64()).is_some(), "in a block");
    assert_eq!(file.blocks().len(), 4);
    assert_eq!(file.blocks()[0].compression, Compression::Zlib);
    assert_eq!(file.array("exposure/image").unwrap().read::<f32>().unwrap(), image.into_dyn());
    let every_fifth: Vec<u8> = bytes.iter().copied().step_by(5).collect();
    assert_eq!(file.array("exposure/mask").unwrap().read::<u8>().unwrap(), Array1::from_vec(every_fifth).into_dyn());
    for (n, plane) in planes.iter().enumerate() {
        assert_eq!(
            file.array(&format!("exposure/planes/{n}")).unwrap().read::<i64>().unwrap(),
            plane.clone().into_dyn()
        );
    }
    assert_eq!(file.get("exposure/name").and_then(|n| n.as_str()), Some("science"));
    assert_eq!(file.node_at("exposure/meta").unwrap().deserialize::<Meta>().unwrap(), meta());

    // At the root, and written inline when the options say so.
    #[derive(serde::Serialize)]
    struct Root {
        values: Ndarray<Array1<f64>>,
    }
    let doc = Document::from_serialize(&Root { values: Ndarray::new(Array1::from_vec(vec![0.5, -1.5])) }).unwrap();
    let inline = WriteOptions::default().storage(Some(ArrayStorage::Inline));
    let file = write(&doc, &dir.file("inline.asdf"), &inline);
    assert!(file.blocks().is_empty());
    assert!(file.get("values/data").is_some_and(|d| d.items().is_some()));
    assert_eq!(file.array("values").unwrap().read::<f64>().unwrap(), Array1::from_vec(vec![0.5, -1.5]).into_dyn());
}

/// Compressible bytes: runs of a repeating pattern, with some noise.
fn compressible(n: usize) -> Array1<u8> {
    let mut x = 12345u32;
    Array1::from_iter((0..n).map(|i| {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        if i % 7 == 0 { x.to_be_bytes()[0] } else { u8::try_from(i / 64 % 251).unwrap() }
    }))
}

/// `compression_level` reaches zlib and bzp2 (arrays and chunked arrays alike); every
/// level reads back the same data.
#[test]
fn compression_levels_apply_to_zlib_and_bzp2() {
    let dir = Dir::new("levels");
    let data = compressible(1 << 20);
    let mut stored = Vec::new();
    for (n, (comp, level)) in [
        (Compression::Zlib, 1),
        (Compression::Zlib, 9),
        (Compression::Bzp2, 1),
        (Compression::Bzp2, 9),
        (Compression::Lz4, 1),
    ]
    .into_iter()
    .enumerate()
    {
        let mut doc = Document::new();
        doc.set_array("data", data.view(), comp).unwrap();
        let chunks = data.as_slice().unwrap().chunks(100_000).map(<[u8]>::to_vec).collect::<Vec<_>>();
        doc.set_array_chunks("chunked", ScalarType::UInt8, &[data.len()], comp, chunks.into_iter()).unwrap();
        let options = WriteOptions::default().compression_level(Some(level));
        let file = write(&doc, &dir.file(&format!("level{n}.asdf")), &options);
        assert_eq!(file.array("data").unwrap().read::<u8>().unwrap(), data.clone().into_dyn(), "{comp} {level}");
        assert_eq!(file.array("chunked").unwrap().read::<u8>().unwrap(), data.clone().into_dyn(), "{comp} {level}");
        let (whole, chunked) = (file.block_stored(0).unwrap(), file.block_stored(1).unwrap());
        if comp == Compression::Bzp2 {
            // The level is in the stream's header: `BZh1`, `BZh9`.
            let want = [b'B', b'Z', b'h', b'0' + u8::try_from(level).unwrap()];
            assert_eq!(whole[..4], want);
            assert_eq!(chunked[..4], want);
        }
        stored.push(whole.len());
    }
    assert!(stored[0] > stored[1], "zlib: level 1 {} bytes, level 9 {}", stored[0], stored[1]);
    assert!(stored[2] > stored[3], "bzp2: level 1 {} bytes, level 9 {}", stored[2], stored[3]);

    // No level at all: the reference's (zlib 6), the same bytes as level 6.
    let mut doc = Document::new();
    doc.set_array("data", data.view(), Compression::Zlib).unwrap();
    let default = write(&doc, &dir.file("default.asdf"), &WriteOptions::default());
    let six = WriteOptions::default().compression_level(Some(6));
    let six = write(&doc, &dir.file("six.asdf"), &six);
    assert_eq!(default.block_stored(0).unwrap(), six.block_stored(0).unwrap());

    // Levels outside 1-9 are refused, and no file is made.
    for level in [0, 10] {
        let options = WriteOptions::default().compression_level(Some(level));
        let path = dir.file(&format!("bad{level}.asdf"));
        assert!(doc.write_to_path(&path, &options).is_err(), "level {level}");
        assert!(!path.exists());
    }
}

/// A streamed array takes rows as owned arrays, views or references, and refuses rows of
/// another element type.
#[test]
fn streamed_rows_from_any_array() {
    let dir = Dir::new("stream");
    let mut doc = Document::new();
    doc.set_stream("rows", ScalarType::Int32, &[3]).unwrap();
    let path = dir.file("stream.asdf");
    let mut w = doc.write_streamed(&path, &WriteOptions::default()).unwrap();
    let block = Array2::from_shape_fn((4, 3), |(i, j)| i32::try_from(3 * i + j).unwrap());
    w.append_array(block.slice(s![..2, ..])).unwrap();
    let tail = block.slice(s![2.., ..]).to_owned();
    w.append_array(&tail).unwrap();
    assert_eq!(tail.nrows(), 2, "borrowed, not moved");
    w.append_array(Array::from_elem(3, -1i32)).unwrap();
    assert!(w.append_array(Array1::from_elem(3, 1.0f32)).is_err(), "float32 rows in an int32 stream");
    assert!(w.append_array(Array1::from_elem(2, 1i32)).is_err(), "a partial row");
    assert_eq!(w.rows(), 5);
    w.finish().unwrap();

    let file = AsdfFile::open(&path).unwrap();
    let rows = file.array("rows").unwrap().read::<i32>().unwrap();
    assert_eq!(rows.shape(), [5, 3]);
    assert_eq!(rows.slice(s![..4, ..]), block);
    assert_eq!(rows.slice(s![4, ..]), Array1::from_elem(3, -1i32));
}
