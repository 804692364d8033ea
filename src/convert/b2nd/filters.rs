//! Blosc2's filters on one block: byte shuffle, bit shuffle and delta.
//!
//! Layouts (README_CHUNK_FORMAT and C-Blosc2's behaviour, checked against files that
//! python-blosc2 writes):
//! - **Shuffle** by `size`-byte elements: the block's `n = len / size` elements become
//!   `size` planes of `n` bytes, plane `j` holding byte `j` of every element; the last
//!   `len % size` bytes stay where they are.
//! - **Bit shuffle**: output byte `(j·8 + k)·(m/8) + i/8`, bit `i % 8`, holds bit `k` of
//!   byte `j` of element `i`, over the first `m` elements, `m` the element count rounded
//!   down to a multiple of 8; the bytes after them are copied. Chunks of format version 2
//!   (Blosc 1) bit-shuffle only blocks whose element count is a multiple of 8, and copy
//!   the others whole.
//! - **Delta**: the first block holds each element XOR the one before it; every other
//!   block, each element XOR the same element of the (decoded) first block. Elements are
//!   of 1, 2, 4 or 8 bytes (other sizes: 8 when they divide by 8, else 1).
//! - **Bytedelta** (the filter plugin C-Blosc2 and python-blosc2 ship, code 35): the
//!   block is `k` streams of `len / k` bytes (`k` the filter's parameter, python-blosc2
//!   gives the item size), each byte the difference (mod 256) from the one before it in
//!   its stream; the bytes after the streams stay as they are.

/// Undoes the byte shuffle of `src` (elements of `size` bytes) into `dst`.
pub(crate) fn unshuffle(size: usize, src: &[u8], dst: &mut [u8]) {
    debug_assert_eq!(src.len(), dst.len());
    let n = src.len().checked_div(size).unwrap_or(0);
    if size <= 1 || n == 0 {
        dst.copy_from_slice(src);
        return;
    }
    let body = n * size;
    match size {
        2 => unshuffle_n::<2>(&src[..body], &mut dst[..body]),
        4 => unshuffle_n::<4>(&src[..body], &mut dst[..body]),
        8 => unshuffle_n::<8>(&src[..body], &mut dst[..body]),
        16 => unshuffle_n::<16>(&src[..body], &mut dst[..body]),
        _ => {
            for (j, plane) in src[..body].chunks_exact(n).enumerate() {
                for (i, &b) in plane.iter().enumerate() {
                    dst[i * size + j] = b;
                }
            }
        }
    }
    dst[body..].copy_from_slice(&src[body..]);
}

/// [`unshuffle`] for elements of `N` bytes, `src` and `dst` a whole number of them: each
/// element written in one go from the `N` planes, which the compiler vectorizes (the
/// general loop stores one byte at a stride of `N`).
fn unshuffle_n<const N: usize>(src: &[u8], dst: &mut [u8]) {
    let n = src.len() / N;
    let planes: [&[u8]; N] = std::array::from_fn(|j| &src[j * n..(j + 1) * n]);
    for (i, e) in dst.chunks_exact_mut(N).enumerate() {
        for j in 0..N {
            e[j] = planes[j][i];
        }
    }
}

/// Byte-shuffles `src` (elements of `size` bytes) into `dst`: the inverse of
/// [`unshuffle`].
pub(crate) fn shuffle(size: usize, src: &[u8], dst: &mut [u8]) {
    debug_assert_eq!(src.len(), dst.len());
    let n = src.len().checked_div(size).unwrap_or(0);
    if size <= 1 || n == 0 {
        dst.copy_from_slice(src);
        return;
    }
    let body = n * size;
    match size {
        2 => shuffle_n::<2>(&src[..body], &mut dst[..body]),
        4 => shuffle_n::<4>(&src[..body], &mut dst[..body]),
        8 => shuffle_n::<8>(&src[..body], &mut dst[..body]),
        16 => shuffle_n::<16>(&src[..body], &mut dst[..body]),
        _ => {
            for (i, element) in src[..body].chunks_exact(size).enumerate() {
                for (j, &b) in element.iter().enumerate() {
                    dst[j * n + i] = b;
                }
            }
        }
    }
    dst[body..].copy_from_slice(&src[body..]);
}

/// [`shuffle`] for elements of `N` bytes (see [`unshuffle_n`]).
fn shuffle_n<const N: usize>(src: &[u8], dst: &mut [u8]) {
    let n = src.len() / N;
    let mut planes: Vec<&mut [u8]> = dst.chunks_exact_mut(n).collect();
    for (i, e) in src.chunks_exact(N).enumerate() {
        for j in 0..N {
            planes[j][i] = e[j];
        }
    }
}

/// Transposes the 8×8 bit matrix whose row `r` is byte `r` of `x` (column `c` its bit
/// `c`): bit `c` of byte `r` goes to bit `r` of byte `c`.
fn transpose8(mut x: u64) -> u64 {
    // Three rounds of swapping the off-diagonal 1×1, 2×2 and 4×4 sub-blocks.
    let mut t = (x ^ (x >> 7)) & 0x00AA_00AA_00AA_00AA;
    x ^= t ^ (t << 7);
    t = (x ^ (x >> 14)) & 0x0000_CCCC_0000_CCCC;
    x ^= t ^ (t << 14);
    t = (x ^ (x >> 28)) & 0x0000_0000_F0F0_F0F0;
    x ^ t ^ (t << 28)
}

/// Undoes the bit shuffle of `src` (elements of `size` bytes) into `dst`; `version` is
/// the chunk's format version.
pub(crate) fn bitunshuffle(size: usize, version: u8, src: &[u8], dst: &mut [u8]) {
    debug_assert_eq!(src.len(), dst.len());
    let n = src.len().checked_div(size).unwrap_or(0);
    if version <= 2 && !n.is_multiple_of(8) {
        dst.copy_from_slice(src);
        return;
    }
    let m = n - n % 8;
    let row = m / 8;
    for j in 0..size {
        for g in 0..row {
            // Bit rows j·8..j·8+8 at column g: bit k of byte j of elements 8g..8g+8.
            let mut x = 0u64;
            for k in 0..8 {
                x |= u64::from(src[(j * 8 + k) * row + g]) << (8 * k);
            }
            let y = transpose8(x);
            for r in 0..8 {
                dst[(g * 8 + r) * size + j] = y.to_le_bytes()[r];
            }
        }
    }
    let body = m * size;
    dst[body..].copy_from_slice(&src[body..]);
}

/// Bit-shuffles `src` (elements of `size` bytes) into `dst`, as chunk format 3 and
/// later do: the inverse of [`bitunshuffle`] for them.
#[cfg(test)]
pub(crate) fn bitshuffle(size: usize, src: &[u8], dst: &mut [u8]) {
    let n = src.len().checked_div(size).unwrap_or(0);
    let m = n - n % 8;
    let row = m / 8;
    for j in 0..size {
        for g in 0..row {
            let mut x = 0u64;
            for r in 0..8 {
                x |= u64::from(src[(g * 8 + r) * size + j]) << (8 * r);
            }
            let y = transpose8(x);
            for k in 0..8 {
                dst[(j * 8 + k) * row + g] = y.to_le_bytes()[k];
            }
        }
    }
    let body = m * size;
    dst[body..].copy_from_slice(&src[body..]);
}

/// Undoes bytedelta on `block` in place: each of its `streams` streams summed up.
pub(crate) fn unbytedelta(streams: usize, block: &mut [u8]) {
    let n = block.len().checked_div(streams).unwrap_or(0);
    if n == 0 {
        return;
    }
    for stream in block[..n * streams].chunks_exact_mut(n) {
        let mut sum = 0u8;
        for b in stream {
            sum = sum.wrapping_add(*b);
            *b = sum;
        }
    }
}

/// The element width the delta filter works in for `typesize`.
fn delta_width(typesize: usize) -> usize {
    match typesize {
        1 | 2 | 4 | 8 => typesize,
        t if t % 8 == 0 => 8,
        _ => 1,
    }
}

/// Undoes the delta filter on block `block` (in place). `first` is the chunk's first
/// block as decoded so far: for the first block itself pass `None` (each element is
/// XORed with the decoded one before it).
pub(crate) fn undelta(typesize: usize, first: Option<&[u8]>, block: &mut [u8]) {
    let w = delta_width(typesize);
    let n = block.len() / w;
    match first {
        None => {
            for i in 1..n {
                for b in 0..w {
                    block[i * w + b] ^= block[(i - 1) * w + b];
                }
            }
        }
        Some(reference) => {
            let len = (n * w).min(reference.len());
            for (d, r) in block[..len].iter_mut().zip(&reference[..len]) {
                *d ^= r;
            }
        }
    }
}

/// Applies the delta filter to `block` in place (the inverse of [`undelta`]): `first`
/// is the chunk's first block before filtering, `None` for the first block itself.
#[cfg(test)]
pub(crate) fn delta(typesize: usize, first: Option<&[u8]>, block: &mut [u8]) {
    let w = delta_width(typesize);
    let n = block.len() / w;
    match first {
        None => {
            for i in (1..n).rev() {
                for b in 0..w {
                    block[i * w + b] ^= block[(i - 1) * w + b];
                }
            }
        }
        Some(reference) => {
            let len = (n * w).min(reference.len());
            for (d, r) in block[..len].iter_mut().zip(&reference[..len]) {
                *d ^= r;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: usize, seed: u64) -> Vec<u8> {
        crate::testutil::noise(n, seed)
    }

    #[test]
    fn transpose8_moves_each_bit() {
        for r in 0..8 {
            for c in 0..8 {
                let x = 1u64 << (8 * r + c);
                assert_eq!(transpose8(x), 1u64 << (8 * c + r), "bit {c} of byte {r}");
            }
        }
    }

    #[test]
    fn every_element_size_shuffles_as_the_general_loop_does() {
        for size in [2, 3, 4, 8, 12, 16] {
            let src = bytes(size * 37 + 5, size as u64);
            let mut dst = vec![0; src.len()];
            shuffle(size, &src, &mut dst);
            let n = src.len() / size;
            for i in 0..n {
                for j in 0..size {
                    assert_eq!(dst[j * n + i], src[i * size + j], "size {size} element {i} byte {j}");
                }
            }
            assert_eq!(dst[n * size..], src[n * size..]);
            let mut back = vec![0; src.len()];
            unshuffle(size, &dst, &mut back);
            assert_eq!(back, src, "size {size}");
        }
    }

    #[test]
    fn shuffle_puts_byte_planes_first_and_keeps_the_tail() {
        let src = [1, 2, 3, 4, 5, 6, 7];
        let mut dst = [0; 7];
        shuffle(3, &src, &mut dst);
        assert_eq!(dst, [1, 4, 2, 5, 3, 6, 7]);
        let mut back = [0; 7];
        unshuffle(3, &dst, &mut back);
        assert_eq!(back, src);
    }

    #[test]
    fn bitshuffle_follows_the_documented_layout() {
        for (size, n) in [(1, 8), (4, 16), (3, 24), (8, 8), (2, 19), (12, 33)] {
            let src = bytes(size * n + 1, (size * 100 + n) as u64);
            let mut dst = vec![0; src.len()];
            bitshuffle(size, &src, &mut dst);
            let m = n - n % 8;
            for i in 0..m {
                for j in 0..size {
                    for k in 0..8 {
                        let want = (src[i * size + j] >> k) & 1;
                        let got = (dst[(j * 8 + k) * (m / 8) + i / 8] >> (i % 8)) & 1;
                        assert_eq!(got, want, "size {size} element {i} byte {j} bit {k}");
                    }
                }
            }
            assert_eq!(dst[m * size..], src[m * size..]);
            let mut back = vec![0; src.len()];
            bitunshuffle(size, 5, &dst, &mut back);
            assert_eq!(back, src);
        }
    }

    #[test]
    fn version_2_bitshuffle_copies_blocks_of_odd_counts() {
        let src = bytes(4 * 9, 3);
        let mut dst = vec![0; src.len()];
        bitunshuffle(4, 2, &src, &mut dst);
        assert_eq!(dst, src);
    }

    #[test]
    fn bytedelta_sums_each_stream() {
        let mut b = [1, 1, 1, 10, 255, 2, 7];
        unbytedelta(2, &mut b);
        assert_eq!(b, [1, 2, 3, 10, 9, 11, 7]);
    }

    #[test]
    fn delta_round_trips_for_every_width() {
        for typesize in [1, 2, 3, 4, 8, 16, 12] {
            let first = bytes(64, typesize as u64);
            let other = bytes(64, 99 + typesize as u64);
            let mut a = first.clone();
            delta(typesize, None, &mut a);
            let mut b = other.clone();
            delta(typesize, Some(&first), &mut b);
            undelta(typesize, None, &mut a);
            assert_eq!(a, first);
            undelta(typesize, Some(&a), &mut b);
            assert_eq!(b, other);
        }
    }
}
