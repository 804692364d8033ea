//! Deterministic test data shared by the workspace's tests (not part of the API).

/// `n` pseudo-random bytes (xorshift64), the same for the same `seed` (not zero).
pub fn noise(n: usize, seed: u64) -> Vec<u8> {
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

/// Float number `i` of a sequence holding every kind: fractions, large and small
/// exponents, NaN and infinities, -0.0, random bits (subnormals among them), float32
/// values widened.
#[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
pub fn float(i: u32) -> f64 {
    match i % 7 {
        0 => f64::from(i) * 0.1,
        1 => f64::from(i).sqrt() * 1e20,
        2 => -f64::from(i) / 3e7,
        3 => f64::from_bits(u64::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        4 => f64::from(i),
        5 => f64::from(i as f32 * 1.5e-3),
        _ => [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 1e16, 1e-5][(i % 6) as usize],
    }
}
