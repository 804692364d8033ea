//! Times MD5 over 256 MiB.
fn main() {
    let data = vec![7u8; 256 << 20];
    let t = std::time::Instant::now();
    let d = rasdf::block::md5(&data);
    let e = t.elapsed();
    println!("md5 {:02x?}: {:.0} MB/s", &d[..2], data.len() as f64 / e.as_secs_f64() / 1e6);
}
