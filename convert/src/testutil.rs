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
