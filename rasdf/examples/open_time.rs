//! Times opening a file (header, tree, block headers) and walking its arrays.
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: open_time FILE");
    let t = Instant::now();
    let f = rasdf::AsdfFile::open(&path).unwrap();
    let opened = t.elapsed();
    let n = f.tree().len();
    let paths: Vec<_> = f.arrays().collect();
    let walked = t.elapsed();
    let bytes = f.tree_bytes().map_or(0, <[u8]>::len);
    println!(
        "open {opened:?} ({} nodes, {:.1} MB/s of tree), {} arrays listed at {walked:?}",
        n,
        bytes as f64 / opened.as_secs_f64() / 1e6,
        paths.len()
    );
}
