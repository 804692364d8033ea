//! Writing an ASDF file from scratch: metadata, arrays of several types and
//! compressions, then reading it back.
//!
//! ```text
//! cargo run -p rasdf --example write -- [OUTPUT.asdf]
//! ```
//!
//! The output goes to the system's temporary folder unless a path is given. The file is
//! written to a temporary file beside it and renamed into place: the path holds either
//! its old content or all of the new.

use ndarray::{Array1, Array2, Array3, s};
use rasdf::AsdfFile;
use rasdf::block::Compression;
use rasdf::write::{ArrayBytes, Document, WriteOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = match std::env::args().nth(1) {
        Some(p) => std::path::PathBuf::from(p),
        None => std::env::temp_dir().join("rasdf-example-write.asdf"),
    };

    let mut doc = Document::new();

    // Scalars at paths: the mappings on the way are made.
    doc.set("meta/telescope", "JWST")?;
    doc.set("meta/instrument/name", "NIRCAM")?;
    doc.set("meta/exposure/seconds", 1288.4)?;
    doc.set("meta/exposure/groups", 10u32)?;
    doc.set("meta/exposure/start_sample", u64::MAX)?; // read back exactly (core/integer)
    doc.set("meta/calibrated", false)?;
    doc.set("meta/notes", ())?; // null

    // Lists and nested values: any serde value.
    doc.set_serialize("meta/filters", &["F200W", "F444W"])?;
    doc.set_serialize("meta/pointing", &serde_json::json!({"ra": 53.16, "dec": -27.79, "pa": 12.5}))?;

    // Arrays: owned ones are moved in (no copy), views and references are copied in C
    // order. The compression is per array (WriteOptions can override it for all).
    let image = Array2::from_shape_fn((512, 512), |(y, x)| ((x as f32) * 0.01).sin() * ((y as f32) * 0.02).cos());
    let dq = Array2::<u16>::zeros((512, 512));
    let cube = Array3::from_shape_fn((4, 64, 64), |(t, y, x)| i32::try_from(t * 4096 + y * 64 + x).unwrap_or(i32::MAX));
    doc.set_array("sci/data", image.view(), Compression::Zlib)?; // copied: `image` is used below
    doc.set_array("sci/dq", dq, Compression::Lz4)?; // moved
    doc.set_array("sci/cube", &cube, Compression::Bzp2)?;
    // A view is written as what it shows: here a cut-out, every other pixel.
    doc.set_array("sci/thumbnail", image.slice(s![..;8, ..;8]), Compression::None)?;
    doc.set_array("wavelengths", Array1::linspace(0.6, 5.0, 1000), Compression::None)?;

    // Raw bytes with a datatype and a layout of your choosing: big-endian int16,
    // column-major (Fortran) order, kept as they are with their strides.
    let values: Vec<i16> = (0..6).collect();
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
    doc.set_array_bytes(
        "raw/fortran",
        ArrayBytes {
            datatype: rasdf::ndarray::Datatype::Scalar(rasdf::ndarray::ScalarType::Int16),
            byteorder: rasdf::ndarray::ByteOrder::Big,
            shape: vec![2, 3],
            strides: vec![2, 4],
            data: bytes.into(),
        },
        Compression::None,
    )?;

    // zlib and bzp2 at their best ratio (1-9).
    let options = WriteOptions::default().compression_level(Some(9));
    doc.write_to_path(&path, &options)?;
    println!("wrote {} ({} bytes)", path.display(), std::fs::metadata(&path)?.len());

    // Read it back.
    let file = AsdfFile::open(&path)?;
    for (n, block) in file.blocks().iter().enumerate() {
        println!("  block {n}: {} -> {} bytes, {}", block.data_size, block.used_size, block.compression);
    }
    let data = file.array("sci/data")?.read::<f32>()?;
    assert_eq!(data, image.into_dyn());
    assert_eq!(file.array("sci/cube")?.read::<i32>()?, cube.into_dyn());
    let start: u64 = file.node_at("meta/exposure/start_sample")?.deserialize()?;
    assert_eq!(start, u64::MAX);
    let fortran = file.array("raw/fortran")?.read::<i16>()?;
    println!("raw/fortran, column-major on disk, read in order:\n{fortran}");
    println!("telescope: {:?}", file.get("meta/telescope").and_then(|n| n.as_str()));
    Ok(())
}
