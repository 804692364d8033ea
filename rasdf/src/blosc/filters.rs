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
    on_elements(size, src, dst, |s, d, n| transpose(s, d, size, n));
}

/// Byte-shuffles `src` (elements of `size` bytes) into `dst`: the inverse of
/// [`unshuffle`].
pub(crate) fn shuffle(size: usize, src: &[u8], dst: &mut [u8]) {
    on_elements(size, src, dst, |s, d, n| transpose(s, d, n, size));
}

/// Calls `f` with the whole elements of `src` and `dst` (elements of `size` bytes) and
/// their count, and copies the bytes after them as they are (everything when elements
/// are of one byte).
fn on_elements(size: usize, src: &[u8], dst: &mut [u8], f: impl FnOnce(&[u8], &mut [u8], usize)) {
    debug_assert_eq!(src.len(), dst.len());
    let n = src.len().checked_div(size).unwrap_or(0);
    if size <= 1 || n == 0 {
        dst.copy_from_slice(src);
        return;
    }
    let body = n * size;
    f(&src[..body], &mut dst[..body], n);
    dst[body..].copy_from_slice(&src[body..]);
}

/// Writes into `dst` the transpose of `src` read as `rows` rows of `cols` bytes. When
/// either side is 2, 4, 8 or 16 bytes, whole groups of that many bytes are read or
/// written at once, which the compiler vectorizes (the general loop stores one byte at a
/// stride).
fn transpose(src: &[u8], dst: &mut [u8], rows: usize, cols: usize) {
    match (rows, cols) {
        (2, _) => gather_rows::<2>(src, dst),
        (4, _) => gather_rows::<4>(src, dst),
        (8, _) => gather_rows::<8>(src, dst),
        (16, _) => gather_rows::<16>(src, dst),
        (_, 2) => scatter_cols::<2>(src, dst),
        (_, 4) => scatter_cols::<4>(src, dst),
        (_, 8) => scatter_cols::<8>(src, dst),
        (_, 16) => scatter_cols::<16>(src, dst),
        _ => {
            for (r, row) in src.chunks_exact(cols).enumerate() {
                for (c, &b) in row.iter().enumerate() {
                    dst[c * rows + r] = b;
                }
            }
        }
    }
}

/// [`transpose`] of `N` rows: each output row of `N` bytes gathered from the rows.
fn gather_rows<const N: usize>(src: &[u8], dst: &mut [u8]) {
    let n = src.len() / N;
    let rows: [&[u8]; N] = std::array::from_fn(|r| &src[r * n..(r + 1) * n]);
    for (c, out) in dst.chunks_exact_mut(N).enumerate() {
        for r in 0..N {
            out[r] = rows[r][c];
        }
    }
}

/// [`transpose`] of `N` columns: each input row of `N` bytes scattered to the outputs.
fn scatter_cols<const N: usize>(src: &[u8], dst: &mut [u8]) {
    let n = src.len() / N;
    let mut outs: Vec<&mut [u8]> = dst.chunks_exact_mut(n).collect();
    for (r, row) in src.chunks_exact(N).enumerate() {
        for c in 0..N {
            outs[c][r] = row[c];
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
    bit_transpose(size, src, dst, false);
}

/// Bit-shuffles `src` (elements of `size` bytes) into `dst`, as chunk format 3 and
/// later do: the inverse of [`bitunshuffle`] for them.
#[cfg(test)]
pub(crate) fn bitshuffle(size: usize, src: &[u8], dst: &mut [u8]) {
    bit_transpose(size, src, dst, true);
}

/// Moves bit `k` of byte `j` of element `i` (of the first `m` elements, `m` the count
/// rounded down to 8) to bit `i % 8` of byte `(j·8 + k)·(m/8) + i/8`, `to_planes`, or
/// back; the bytes after those elements are copied. Each 8 elements' byte `j` and the
/// 8 bit planes' bytes that hold them form an 8×8 bit matrix and its transpose.
fn bit_transpose(size: usize, src: &[u8], dst: &mut [u8], to_planes: bool) {
    let n = src.len().checked_div(size).unwrap_or(0);
    let m = n - n % 8;
    let row = m / 8;
    for j in 0..size {
        for g in 0..row {
            let plane = |k: usize| (j * 8 + k) * row + g;
            let element = |r: usize| (g * 8 + r) * size + j;
            let (from, to): (&dyn Fn(usize) -> usize, &dyn Fn(usize) -> usize) =
                if to_planes { (&element, &plane) } else { (&plane, &element) };
            let x = (0..8).fold(0u64, |x, i| x | (u64::from(src[from(i)]) << (8 * i)));
            for (i, b) in transpose8(x).to_le_bytes().into_iter().enumerate() {
                dst[to(i)] = b;
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
    xor_delta(typesize, first, block, true);
}

/// Applies the delta filter to `block` in place (the inverse of [`undelta`]): `first`
/// is the chunk's first block before filtering, `None` for the first block itself.
#[cfg(test)]
pub(crate) fn delta(typesize: usize, first: Option<&[u8]>, block: &mut [u8]) {
    xor_delta(typesize, first, block, false);
}

/// XORs each element of `block` with the one before it (`first` `None`: from the start
/// when `undo`, each with the decoded one; else from the end, each with the original
/// one) or with the same element of `first`.
fn xor_delta(typesize: usize, first: Option<&[u8]>, block: &mut [u8], undo: bool) {
    let w = delta_width(typesize);
    let n = block.len() / w;
    match first {
        None => {
            let mut xor = |i: usize| {
                for b in 0..w {
                    block[i * w + b] ^= block[(i - 1) * w + b];
                }
            };
            match undo {
                true => (1..n).for_each(&mut xor),
                false => (1..n).rev().for_each(&mut xor),
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
        crate::samples::noise(n, seed)
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
