//! Profiling: the fast scanner alone.
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let f = rasdf::AsdfFile::open(&path).unwrap();
    let text = std::str::from_utf8(f.tree_bytes().unwrap()).unwrap();
    let t = std::time::Instant::now();
    let n = rasdf::tree::fast_scan_count(text);
    println!("{n:?} events in {:?}", t.elapsed());
}
