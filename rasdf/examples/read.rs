//! Reading an ASDF file: open it, list its arrays, print one.
//!
//! ```text
//! cargo run -p rasdf --example read -- testdata/example.asdf [ARRAY_PATH]
//! ```
//!
//! With no array path, the first array is printed. Files are opened lazily and
//! memory-mapped: nothing of an array is read (or decompressed) until it is asked for.

use rasdf::AsdfFile;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: read FILE.asdf [ARRAY_PATH]")?;
    let file = AsdfFile::open(&path)?;

    // The header and a few well-known keys of the tree.
    println!("{path}: ASDF Standard {}", file.header().standard());
    if let Some(name) = file.get("asdf_library/name").and_then(|n| n.as_str()) {
        let version = file.get("asdf_library/version").and_then(|n| n.as_str()).unwrap_or("?");
        println!("written by {name} {version}");
    }
    println!("{} nodes in the tree, {} blocks", file.tree().len(), file.blocks().len());

    // Every array: its path, element type, shape and where its data is. This reads
    // the tree and the block headers only.
    let arrays: Vec<_> = file.arrays().collect();
    println!("\n{} arrays:", arrays.len());
    for array in &arrays {
        let info = array.info()?;
        println!("  {:<30} {:<10} {} ({})", info.path, info.datatype.to_string(), info.shape, info.storage);
    }

    // One array, printed: as float64 when it holds numbers (ndarray elides the middle
    // of large ones), else its first elements as values. By default the first array of
    // numbers.
    let numeric =
        arrays.iter().find(|a| a.meta().is_ok_and(|(d, _, _)| matches!(d, rasdf::ndarray::Datatype::Scalar(_))));
    let path = |a: &rasdf::ArrayRef<'_>| a.path().unwrap_or_default().to_string();
    let Some(which) = args.next().or_else(|| numeric.or(arrays.first()).map(path)) else {
        return Ok(());
    };
    let array = file.array(&which)?.read_dyn()?;
    println!("\n{which}: {} {:?}", array.datatype, array.shape);
    match array.to_array_f64() {
        Ok(values) => {
            println!("{values:.4}");
            if let Some(stats) = rasdf::ndarray::stats::stats(&array) {
                println!("min {} max {} mean {}", stats.min, stats.max, stats.mean());
            }
        }
        Err(_) => {
            for (n, e) in array.elements().take(10).enumerate() {
                println!("  [{n}] {e:?}");
            }
        }
    }

    // Typed access: a view with no copy when the block allows it.
    if array.datatype == rasdf::ndarray::Datatype::Scalar(rasdf::ndarray::ScalarType::Float32) {
        let typed = file.array(&which)?.read::<f32>()?;
        println!("as f32: {} elements, sum {}", typed.len(), typed.sum());
    }
    Ok(())
}
