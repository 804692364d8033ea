//! Profiling: the fast scanner alone (`scan_time FILE [REPEATS]`).
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let reps: usize = std::env::args().nth(2).map_or(1, |s| s.parse().unwrap());
    let f = rasdf::AsdfFile::open(&path).unwrap();
    let text = std::str::from_utf8(f.tree_bytes().unwrap()).unwrap();
    for _ in 0..reps {
        let t = std::time::Instant::now();
        let n = rasdf::tree::fast_scan_count(text);
        println!("{n:?} events in {:?}", t.elapsed());
    }
}
