//! Times each codec on 64 MiB of smooth float32 data.
fn main() {
    use rasdf::block::{Compression, codec};
    let data: Vec<u8> =
        (0..16 << 20).flat_map(|i: u32| (((i as f32) * 0.001).sin() * 1000.0).round().to_le_bytes()).collect();
    for c in [Compression::Zlib, Compression::Lz4, Compression::Bzp2] {
        let t = std::time::Instant::now();
        let enc = codec::encode(c, &data).unwrap();
        let te = t.elapsed();
        let t = std::time::Instant::now();
        let dec = codec::decode(c, &enc, data.len() as u64).unwrap();
        let td = t.elapsed();
        assert_eq!(dec, data);
        let mb = data.len() as f64 / 1e6;
        println!(
            "{c}: ratio {:.2}, encode {:.0} MB/s, decode {:.0} MB/s",
            data.len() as f64 / enc.len() as f64,
            mb / te.as_secs_f64(),
            mb / td.as_secs_f64()
        );
    }
}
