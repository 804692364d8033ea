//! A hand-made lz4 file whose records have the size a test chooses (the writers make
//! records of 4 MiB).

use std::path::Path;

/// An ASDF file of one float32 array in an lz4 block of the reference's framing, its
/// records of `raw` bytes each (the last shorter), of the data `fill` makes for record
/// `k` (so records of steady or varying stored length).
pub fn lz4_records_file(path: &Path, records: usize, raw: usize, fill: &dyn Fn(usize, &mut [u8])) -> Vec<u32> {
    let mut data = vec![0u8; records * raw - 12];
    let mut stored = Vec::new();
    for (k, chunk) in data.chunks_mut(raw).enumerate() {
        fill(k, chunk);
        let c = lz4_flex::block::compress(chunk);
        stored.extend_from_slice(&u32::try_from(4 + c.len()).unwrap().to_be_bytes());
        stored.extend_from_slice(&u32::try_from(chunk.len()).unwrap().to_le_bytes());
        stored.extend_from_slice(&c);
    }
    let text = format!(
        "#ASDF 1.0.0\n#ASDF_STANDARD 1.5.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n\
         data: !core/ndarray-1.0.0 {{source: 0, datatype: float32, byteorder: little, shape: [{}]}}\n...\n",
        data.len() / 4
    );
    let mut file = text.into_bytes();
    file.extend_from_slice(b"\xd3BLK\x000\0\0\0\0lz4\0");
    file.extend_from_slice(&(stored.len() as u64).to_be_bytes());
    file.extend_from_slice(&(stored.len() as u64).to_be_bytes());
    file.extend_from_slice(&(data.len() as u64).to_be_bytes());
    file.extend_from_slice(&[0; 16]);
    file.extend_from_slice(&stored);
    std::fs::write(path, file).unwrap();
    data.chunks(4).map(|b| u32::from_le_bytes(b.try_into().unwrap())).collect()
}
