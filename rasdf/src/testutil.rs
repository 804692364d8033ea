//! Helpers shared by the unit tests.

/// `n` pseudo-random bytes (xorshift64), the same for the same `seed` (not zero).
pub(crate) fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[2]
        })
        .collect()
}

/// `data` compressed serially into one bzip2 stream, as libbzip2 writes it.
pub(crate) fn bzip(data: &[u8], level: u32) -> std::io::Result<Vec<u8>> {
    use std::io::Write;
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(level));
    e.write_all(data)?;
    e.finish()
}
