//! Arrays larger than memory, two ways:
//!
//! - a streamed array (`set_stream`, `write_streamed`): rows appended one by one after
//!   the tree is written, as many as come, in the file's last block (uncompressed);
//! - a chunked array (`set_array_chunks`): a fixed shape whose data an iterator yields
//!   while the file is written, compressed in parallel batches as it comes.
//!
//! Neither holds the whole array in memory.
//!
//! ```text
//! cargo run --release -p rasdf --example stream -- [ROWS] [OUTPUT_FOLDER]
//! ```

use std::time::Instant;

use ndarray::Array1;
use rasdf::AsdfFile;
use rasdf::block::Compression;
use rasdf::ndarray::ScalarType;
use rasdf::write::{Document, WriteOptions};

/// Elements of a row.
const WIDTH: usize = 1024;

/// Row `i` of the data: a staircase drifting from row to row (digitized counts, which
/// compress well).
fn row(i: usize) -> Array1<f32> {
    Array1::from_shape_fn(WIDTH, |x| ((i / 8 + x / 16) % 4096) as f32)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let rows: usize = args.next().map(|r| r.parse()).transpose()?.unwrap_or(4096);
    let dir = args.next().map_or_else(std::env::temp_dir, std::path::PathBuf::from);
    let mib = (rows * WIDTH * 4) as f64 / f64::from(1 << 20);

    // 1. Streamed: declare the array (its element type and row shape), write the
    // file, then append rows; `finish` puts the file in place.
    let streamed = dir.join("rasdf-example-stream.asdf");
    let t = Instant::now();
    let mut doc = Document::new();
    doc.set("meta/source", "a detector read out row by row")?;
    doc.set_stream("frames", ScalarType::Float32, &[WIDTH])?;
    let mut writer = doc.write_streamed(&streamed, &WriteOptions::default())?;
    for i in 0..rows {
        // An owned row is taken as it is; a view, `&array` or raw bytes (`append`) too.
        writer.append_array(row(i))?;
    }
    println!("streamed {} rows ({mib:.1} MiB) in {:.2?}", writer.rows(), t.elapsed());
    writer.finish()?;

    // 2. Chunked: the shape is known up front; the bytes (machine byte order, C order)
    // come from an iterator while the file is written, here a row at a time.
    let chunked = dir.join("rasdf-example-chunks.asdf");
    let t = Instant::now();
    let mut doc = Document::new();
    let chunks = (0..rows).map(|i| row(i).iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>());
    doc.set_array_chunks("frames", ScalarType::Float32, &[rows, WIDTH], Compression::Zlib, chunks)?;
    doc.write_to_path(&chunked, &WriteOptions::default().compression_level(Some(1)))?;
    println!("wrote {rows} rows in chunks, zlib level 1, in {:.2?}", t.elapsed());

    // Read both back: the same rows.
    for path in [&streamed, &chunked] {
        let file = AsdfFile::open(path)?;
        let frames = file.array("frames")?.read::<f32>()?.into_dimensionality::<ndarray::Ix2>()?;
        assert_eq!(frames.shape(), [rows, WIDTH]);
        for i in [0, rows / 2, rows - 1] {
            assert_eq!(frames.row(i), row(i), "row {i} of {}", path.display());
        }
        // (A streamed block's header gives no sizes: its data runs to the end of the file.)
        let size = std::fs::metadata(path)?.len() as f64 / f64::from(1 << 20);
        let compression = file.blocks()[0].compression;
        println!("{}: {:?}, a file of {size:.1} MiB ({compression})", path.display(), frames.shape());
    }
    Ok(())
}
