//! The LZ4 block encoder of the lz4 codec, written for speed on array data.
//!
//! An LZ4 block (lz4 Block_format.md) is a run of sequences, each a token, literals
//! copied as they are, and a match: an offset back into what came before (1 to 65535)
//! and a length (at least 4). Any parse that keeps the format's end rules is a valid
//! block: the last match starts at least 12 bytes before the end and the last 5 bytes
//! are literals. This encoder makes the usual greedy parse (a hash table of the last
//! position seen for each 5-byte prefix; a match extended forward 8 bytes at a time and
//! back over the pending literals; the skip between probes growing with each miss), in
//! safe Rust, the one position the reference encoder adds to the table after each match
//! left out.
//!
//! What makes it fast is the interleaving. On array data (numbers whose bytes repeat in
//! short runs) a match is found every few bytes, and each one waits on a chain of loads:
//! the bytes at the position, the table entry of their hash, the bytes at the candidate,
//! their comparison, and only then the next position. An encoder working on one input
//! spends most of its time in that chain. [`compress_pair`] works on two inputs (two
//! records of the lz4 framing), a probe of one and a probe of the other in turn, so the
//! processor runs the two chains side by side. On the benchmark's 256 MiB of float32
//! that is 0.30 s on one core, against 0.40 s for lz4_flex 0.14 (which this crate still
//! uses to decode) in the same run, its output 0.3 % larger; on `arange` float64 0.061
//! against 0.068 s; random bytes within noise. On text, where literal runs make the
//! branches hard to predict and interleaving helps little, it is slower: 0.095 against
//! 0.076 s for 45 MB of source code. Three inputs at a time were no faster than two. On
//! one input alone this encoder is 10-15 % slower than lz4_flex's, so the codec uses it
//! for pairs of records only.

#![allow(
    clippy::cast_possible_truncation,
    reason = "every narrowing cast here is of a value its context bounds: positions under \
              MAX_INPUT as u32, token nibbles of at most 15 and length bytes under 255 as u8, \
              offsets of at most MAX_OFFSET as u16, hashes shifted to HASH_LOG bits"
)]

/// Hash table entries (a power of two): 16 KiB of positions an input, which with two
/// inputs stays in the first-level cache. 8192 and 16384 entries found 0.05-0.1 %
/// smaller output, 5-10 % slower.
const HASH_LOG: u32 = 12;
const TABLE_LEN: usize = 1 << HASH_LOG;

/// The format's end rules: the last match starts at least `MF_LIMIT` bytes before the
/// end of the block, and the last `LAST_LITERALS` bytes are literals.
const MF_LIMIT: usize = 12;
const LAST_LITERALS: usize = 5;
/// The shortest match the format can say.
const MIN_MATCH: usize = 4;
/// The farthest a match may reach back.
const MAX_OFFSET: usize = 65_535;

/// A probe reads 8 bytes at its position and a sequence's literals are copied 16 bytes
/// at a time, so probes stop this far before the end (past `MF_LIMIT`), keeping every
/// read inside the input.
const PROBE_END: usize = MF_LIMIT + 7;
/// Inputs shorter than this are stored as literals only.
const MIN_INPUT: usize = 32;

/// Misses before the step between probes grows by one byte (and again after as many).
const SKIP_LOG: u32 = 5;

/// The largest input an LZ4 block holds (positions are kept as `u32`; the reference
/// implementation's `LZ4_MAX_INPUT_SIZE`).
pub(crate) const MAX_INPUT: usize = 0x7E00_0000;

/// Room the output of `n` input bytes needs: the format's worst case (`n + n/255 + 16`)
/// and the 16-byte literal copies' overshoot.
pub(crate) const fn max_compressed_len(n: usize) -> usize {
    n + n / 255 + 16 + 32
}

type Table = [u32; TABLE_LEN];

/// Compresses `input` into `out` as one LZ4 block; returns its length. `None` when the
/// input is longer than [`MAX_INPUT`] or `out` shorter than [`max_compressed_len`].
pub(crate) fn compress(input: &[u8], out: &mut [u8]) -> Option<usize> {
    let mut table = [0u32; TABLE_LEN];
    Some(Encoder::new(input, out, &mut table)?.finish())
}

/// Compresses `a` into `out_a` and `b` into `out_b`, as two LZ4 blocks, their probes
/// interleaved (see the module's text); returns their lengths. `None` as for
/// [`compress`].
pub(crate) fn compress_pair(a: &[u8], out_a: &mut [u8], b: &[u8], out_b: &mut [u8]) -> Option<(usize, usize)> {
    let mut table_a = [0u32; TABLE_LEN];
    let mut table_b = [0u32; TABLE_LEN];
    let mut ea = Encoder::new(a, out_a, &mut table_a)?;
    let mut eb = Encoder::new(b, out_b, &mut table_b)?;
    while ea.probing() && eb.probing() {
        ea.probe();
        eb.probe();
    }
    Some((ea.finish(), eb.finish()))
}

/// One input's encoding in progress.
struct Encoder<'a> {
    src: &'a [u8],
    dst: &'a mut [u8],
    table: &'a mut Table,
    /// The next position to probe.
    cur: usize,
    /// The first byte not yet written (the start of the pending literals).
    anchor: usize,
    /// Output written so far.
    op: usize,
    /// `(misses since the last match + 1) << SKIP_LOG`: the step is this `>> SKIP_LOG`.
    misses: usize,
    /// The last position probed; 0 for an input stored as literals only.
    probe_end: usize,
    /// Matches end here at the latest.
    match_end: usize,
}

impl<'a> Encoder<'a> {
    fn new(src: &'a [u8], dst: &'a mut [u8], table: &'a mut Table) -> Option<Encoder<'a>> {
        let n = src.len();
        if n > MAX_INPUT || dst.len() < max_compressed_len(n) {
            return None;
        }
        // Position 0 is in the table already (it starts zeroed), so probing starts at 1.
        let (probe_end, match_end) = if n < MIN_INPUT { (0, 0) } else { (n - PROBE_END, n - LAST_LITERALS) };
        Some(Encoder { src, dst, table, cur: 1, anchor: 0, op: 0, misses: 1 << SKIP_LOG, probe_end, match_end })
    }

    fn probing(&self) -> bool {
        self.cur <= self.probe_end
    }

    /// Probes the position `cur` (which must be at most `probe_end`): on a miss moves on
    /// by the step, on a match writes the sequence it ends and moves past the match.
    #[inline(always)]
    fn probe(&mut self) {
        let src = self.src;
        let cur = self.cur;
        let v = read_u64(src, cur);
        let h = hash5(v);
        // Every position in the table is behind `cur`: it was put there by an earlier
        // probe, or is the initial 0.
        let candidate = self.table[h] as usize;
        self.table[h] = cur as u32;
        if read_u32(src, candidate) != v as u32 || cur - candidate > MAX_OFFSET {
            self.cur = cur + (self.misses >> SKIP_LOG);
            self.misses += 1;
            return;
        }
        self.misses = 1 << SKIP_LOG;
        let (mut at, mut from) = (cur, candidate);
        let mut len = MIN_MATCH;
        loop {
            if at + len + 8 <= self.match_end {
                let diff = read_u64(src, at + len) ^ read_u64(src, from + len);
                if diff != 0 {
                    len += (diff.trailing_zeros() / 8) as usize;
                    break;
                }
                len += 8;
            } else {
                while at + len < self.match_end && src[at + len] == src[from + len] {
                    len += 1;
                }
                break;
            }
        }
        while at > self.anchor && from > 0 && src[at - 1] == src[from - 1] {
            at -= 1;
            from -= 1;
            len += 1;
        }
        self.sequence(at, at - from, len);
        self.anchor = at + len;
        self.cur = self.anchor;
        // (The reference encoder also puts the position two bytes before the match's end
        // in the table. Left out: 0.3 % larger output on the benchmark's data, 10-13 %
        // less time.)
    }

    /// Writes the literals from `anchor` to `at`, then a match of `len` bytes `offset`
    /// back. `at` is at most `probe_end`, so the 16-byte copies stay inside the input.
    #[inline(always)]
    fn sequence(&mut self, at: usize, offset: usize, len: usize) {
        let (src, dst) = (self.src, &mut *self.dst);
        let mut op = self.op;
        let literals = at - self.anchor;
        let extra = len - MIN_MATCH;
        dst[op] = ((literals.min(15) as u8) << 4) | extra.min(15) as u8;
        op += 1;
        if literals >= 15 {
            op = put_length(dst, op, literals - 15);
        }
        // Most sequences of array data have no literals (86 % on the benchmark's): no
        // copy for them, 5-8 % less time.
        let mut i = 0;
        while i < literals {
            dst[op + i..op + i + 16].copy_from_slice(&src[self.anchor + i..self.anchor + i + 16]);
            i += 16;
        }
        op += literals;
        dst[op..op + 2].copy_from_slice(&(offset as u16).to_le_bytes());
        op += 2;
        if extra >= 15 {
            op = put_length(dst, op, extra - 15);
        }
        self.op = op;
    }

    /// Probes to the end, then writes the last literals; returns the block's length.
    fn finish(mut self) -> usize {
        while self.probing() {
            self.probe();
        }
        let literals = self.src.len() - self.anchor;
        let mut op = self.op;
        self.dst[op] = (literals.min(15) as u8) << 4;
        op += 1;
        if literals >= 15 {
            op = put_length(self.dst, op, literals - 15);
        }
        self.dst[op..op + literals].copy_from_slice(&self.src[self.anchor..]);
        op + literals
    }
}

/// Writes the rest of a length that did not fit its token's 15: bytes of 255, then the
/// remainder. Returns the new output position.
#[inline(always)]
fn put_length(dst: &mut [u8], mut op: usize, mut rest: usize) -> usize {
    while rest >= 255 {
        dst[op] = 255;
        op += 1;
        rest -= 255;
    }
    dst[op] = rest as u8;
    op + 1
}

#[inline(always)]
fn read_u64(s: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&s[at..at + 8]);
    u64::from_le_bytes(b)
}

#[inline(always)]
fn read_u32(s: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&s[at..at + 4]);
    u32::from_le_bytes(b)
}

/// Multiplicative hash of the low 5 bytes of `v`, to `HASH_LOG` bits.
#[inline(always)]
fn hash5(v: u64) -> usize {
    ((v << 24).wrapping_mul(889_523_592_379) >> (64 - HASH_LOG)) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(block: &[u8], n: usize) -> Vec<u8> {
        lz4_flex::block::decompress(block, n).expect("a valid LZ4 block")
    }

    fn round_trip(input: &[u8]) -> usize {
        let mut out = vec![0u8; max_compressed_len(input.len())];
        let n = compress(input, &mut out).expect("room enough");
        assert_eq!(decode(&out[..n], input.len()), input, "input of {} bytes", input.len());
        n
    }

    /// A small deterministic generator, so the tests need no crate for it.
    fn noise(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect()
    }

    fn float_like(n: usize, seed: u64) -> Vec<u8> {
        noise(n / 4, seed)
            .iter()
            .enumerate()
            .flat_map(|(i, r)| (((i / 1000) as f32) + f32::from(r % 16) / 8.0).to_le_bytes())
            .collect()
    }

    #[test]
    fn every_short_length_round_trips() {
        for n in 0..300 {
            round_trip(&noise(n, n as u64));
            round_trip(&vec![7u8; n]);
            round_trip(&float_like(n, n as u64));
        }
    }

    #[test]
    fn kinds_of_data_round_trip_and_compress_as_they_should() {
        let zeros = vec![0u8; 1 << 20];
        assert!(round_trip(&zeros) < 5000, "a long run is a few long matches");
        let random = noise(1 << 20, 3);
        assert!(round_trip(&random) <= max_compressed_len(random.len()));
        let floats = float_like(1 << 20, 5);
        assert!(round_trip(&floats) < floats.len() * 3 / 4);
        let text: Vec<u8> = include_str!("lz4.rs").bytes().cycle().take(1 << 20).collect();
        assert!(round_trip(&text) < text.len() / 4);
    }

    #[test]
    fn lengths_that_need_extra_bytes_and_the_farthest_offsets() {
        // Literal runs and matches longer than 15 + 255 (two extra length bytes each).
        let mut v = noise(600, 9);
        v.extend(vec![1u8; 700]);
        v.extend(noise(600, 10));
        round_trip(&v);
        // A repeat exactly 65535 bytes back (the farthest offset), and one 65536 back
        // (too far: it must not be used).
        for gap in [65_535usize, 65_536, 65_537] {
            let head = noise(gap, 11);
            let mut v = head.clone();
            v.extend_from_slice(&head[..4096]);
            v.extend(noise(64, 12));
            round_trip(&v);
        }
    }

    #[test]
    fn pairs_are_the_same_blocks_as_singles() {
        for (la, lb) in [(0, 0), (31, 32), (4 << 20, 1000), (1000, 3 << 20), (1 << 20, 1 << 20)] {
            let a = float_like(la, 1);
            let b = noise(lb, 2).iter().map(|x| x % 4).collect::<Vec<u8>>();
            let (mut oa, mut ob) = (vec![0u8; max_compressed_len(la)], vec![0u8; max_compressed_len(lb)]);
            let (na, nb) = compress_pair(&a, &mut oa, &b, &mut ob).expect("room enough");
            assert_eq!(decode(&oa[..na], la), a);
            assert_eq!(decode(&ob[..nb], lb), b);
            let mut single = vec![0u8; max_compressed_len(la)];
            let n = compress(&a, &mut single).expect("room enough");
            assert_eq!(&single[..n], &oa[..na], "the interleaving changes nothing in the output");
        }
    }

    #[test]
    fn too_little_room_is_refused() {
        let input = noise(1000, 4);
        let mut out = vec![0u8; max_compressed_len(1000) - 1];
        assert_eq!(compress(&input, &mut out), None);
    }
}
