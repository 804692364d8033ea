//! A Rust struct in and out of an ASDF tree with serde: written as a subtree (and as a
//! whole tree, at the root), its array field as a real `core/ndarray` with a block of
//! its own, then read back into the struct.
//!
//! ```text
//! cargo run -p rasdf --example serde_subtree -- [OUTPUT.asdf]
//! ```

use ndarray::Array2;
use rasdf::AsdfFile;
use rasdf::block::Compression;
use rasdf::write::{Document, Ndarray, WriteOptions};
use serde::{Deserialize, Serialize};

/// The metadata of an observation: plain values, nested structs, enums, lists and maps
/// all map to YAML (structs keep their field order).
#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Observation {
    target: String,
    ra: f64,
    dec: f64,
    /// Beyond i64: written as core/integer, read back exactly.
    sequence: u64,
    filters: Vec<Filter>,
    mode: Mode,
    tags: std::collections::BTreeMap<String, i32>,
    comment: Option<String>,
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Filter {
    name: String,
    wavelength_um: f32,
}

/// serde's default enum form: a unit variant by name, others as `{Variant: value}`.
#[derive(Serialize, Deserialize, Debug, PartialEq)]
enum Mode {
    Imaging,
    Spectroscopy { resolution: u32 },
}

/// What is written: the metadata's fields and an image beside them. `Ndarray` makes
/// the image an ndarray node with a block (not a list of 65536 numbers).
#[derive(Serialize)]
struct WithImage<'a> {
    #[serde(flatten)]
    observation: &'a Observation,
    image: Ndarray<Array2<f32>>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = match std::env::args().nth(1) {
        Some(p) => std::path::PathBuf::from(p),
        None => std::env::temp_dir().join("rasdf-example-serde.asdf"),
    };
    let observation = Observation {
        target: "NGC 1300".into(),
        ra: 49.92,
        dec: -19.41,
        sequence: u64::MAX - 1,
        filters: vec![
            Filter { name: "F200W".into(), wavelength_um: 1.99 },
            Filter { name: "F444W".into(), wavelength_um: 4.42 },
        ],
        mode: Mode::Spectroscopy { resolution: 2700 },
        tags: [("priority".to_string(), 1), ("visit".to_string(), 42)].into_iter().collect(),
        comment: None,
    };
    let image = Array2::from_shape_fn((256, 256), |(y, x)| (x as f32 - 128.0).hypot(y as f32 - 128.0));

    // A subtree at a path of a document...
    let mut doc = Document::new();
    doc.set("program", 1345)?;
    let written = WithImage { observation: &observation, image: Ndarray::compressed(image.clone(), Compression::Zlib) };
    doc.set_serialize("observations/first", &written)?;
    // ...and a struct as the whole tree: its fields are the root mapping's entries.
    let whole = Document::from_serialize(&observation)?;

    doc.write_to_path(&path, &WriteOptions::default())?;
    let root_path = path.with_extension("root.asdf");
    whole.write_to_path(&root_path, &WriteOptions::default())?;
    println!("wrote {} and {}", path.display(), root_path.display());

    // Read back: the subtree into the struct (serde ignores the `image` key it does not
    // know), the array with `AsdfFile::array` and `ArrayRef::read`.
    let file = AsdfFile::open(&path)?;
    let node = file.node_at("observations/first")?;
    let back: Observation = node.deserialize()?;
    assert_eq!(back, observation);
    println!("read back: {back:#?}");
    let image_node = file.node_at("observations/first/image")?;
    println!("image: tag {:?}, {} blocks in the file", image_node.tag(), file.blocks().len());
    let read_image = file.array("observations/first/image")?.read::<f32>()?;
    assert_eq!(read_image, image.into_dyn());
    println!("image {:?} read back equal", read_image.shape());

    // The whole tree, into the struct again.
    let root_file = AsdfFile::open(&root_path)?;
    let back: Observation = root_file.tree().root().ok_or("no tree")?.deserialize()?;
    assert_eq!(back, observation);
    println!("the root of {} is the struct again", root_path.display());
    Ok(())
}
