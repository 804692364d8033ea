//! Parallel bzip2 compression that yields, bit for bit, the stream a serial compressor
//! writes.
//!
//! A bzip2 stream's blocks are compressed independently; what ties them together is
//! where one ends and the next begins, and the CRC combined from theirs at the end. The
//! serial compressor (libbzip2, and its Rust port behind the `bzip2` crate) fills a block
//! with the input after its first stage, a run-length coding (RLE1: a run of 4 to 255 equal
//! bytes takes 5 bytes, shorter runs their own length), and closes it when it holds
//! `100 000 * level - 19` bytes or more, checked before each input byte; the run still
//! open then starts the next block. [`next_cut`] replays that rule over the input, so each
//! piece between two cuts is exactly one block of the serial stream. The pieces are
//! compressed as streams of their own on separate threads, and their blocks' bits are
//! joined behind one header, with the end magic and the combined CRC after them.
//!
//! Because the cuts are the serial compressor's own, the result is the serial stream
//! itself: the same bytes the reference library (Python's `bz2`, libbzip2) writes. Should
//! a piece come back as anything but one block, [`compress`] declines and the caller
//! compresses serially.

use std::io::Write;

use rayon::prelude::*;

use super::bits::{BitWriter, read_bits};
use super::pbunzip::{BLOCK_MAGIC, END_MAGIC};

/// Compresses `data` at `level` (1-9) in parallel; `None` when it fits one block (the
/// serial compressor is as fast) or a piece did not compress to exactly one block.
pub(crate) fn compress(data: &[u8], level: u32) -> Option<Vec<u8>> {
    let level_digit = u8::try_from(level).ok().filter(|l| (1..=9).contains(l))?;
    let capacity = block_capacity(level);
    next_cut(data, 0, capacity)?;
    // The cuts are found on the workers as they take the next block (a few milliseconds
    // of scanning a block, against a tenth of a second compressing it).
    let mut pieces: Vec<(usize, Option<Piece>)> = spans(data, capacity)
        .enumerate()
        .par_bridge()
        .map(|(n, (a, b))| {
            let piece = || {
                let mut e =
                    bzip2::write::BzEncoder::new(Vec::with_capacity((b - a) / 2), bzip2::Compression::new(level));
                e.write_all(&data[a..b]).ok()?;
                let stream = e.finish().ok()?;
                let (end, crc) = one_block(&stream)?;
                Some(Piece { stream, end, crc })
            };
            (n, piece())
        })
        .collect();
    pieces.sort_unstable_by_key(|&(n, _)| n);
    let pieces: Vec<Piece> = pieces.into_iter().map(|(_, p)| p).collect::<Option<_>>()?;
    let total: usize = pieces.iter().map(|p| p.stream.len()).sum();
    let mut out = BitWriter::with_capacity(total);
    out.bytes(&[b'B', b'Z', b'h', b'0' + level_digit]);
    let mut combined = 0u32;
    for Piece { stream, end, crc } in pieces {
        // The block's bits: from just after the 4-byte header to the end magic.
        out.copy_bits(&stream, 32, end)?;
        combined = combined.rotate_left(1) ^ crc;
    }
    out.bits(END_MAGIC, 48);
    out.bits(u64::from(combined), 32);
    Some(out.finish())
}

/// One block, compressed as a stream of its own.
struct Piece {
    stream: Vec<u8>,
    /// Bit offset of the stream's end magic.
    end: u64,
    /// The block's CRC.
    crc: u32,
}

/// What a level's block holds after the run-length stage (libbzip2's `nblockMAX`).
fn block_capacity(level: u32) -> usize {
    100_000 * level as usize - 19
}

/// Where the serial compressor closes the block that begins at `start`: the input
/// offset at which the next block begins, `None` when this one runs to the end.
fn next_cut(data: &[u8], start: usize, capacity: usize) -> Option<usize> {
    // Bytes in the block so far: the closed runs' RLE1 sizes.
    let mut held = 0usize;
    let mut i = start;
    while i < data.len() {
        // Eight bytes none equal to the next are eight runs of one byte each (the byte
        // at i starts a run, so it differs from the one before): taken at once while the
        // block cannot fill among them.
        if held + 8 < capacity
            && let Some(pair) = data.get(i..i + 9)
        {
            let word = |b: &[u8]| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
            let x = word(&pair[..8]) ^ word(&pair[1..]);
            // No zero byte in x: no byte equals the next.
            if x.wrapping_sub(0x0101_0101_0101_0101) & !x & 0x8080_8080_8080_8080 == 0 {
                held += 8;
                i += 8;
                continue;
            }
        }
        // The run that starts at i, at most 255 bytes (a longer one is split there).
        let byte = data[i];
        let end = data.len().min(i + 255);
        let run = data[i..end].iter().position(|&b| b != byte).unwrap_or(end - i);
        // The run closes when the byte after it arrives (or at the end); if the block is
        // then full, the compressor closes it before reading further, and the run open
        // at that moment, the next one, starts the next block. At the end of the input
        // there is none: the last run closes into this block at the finish.
        held += if run >= 4 { 5 } else { run };
        i += run;
        if held >= capacity {
            return (i < data.len()).then_some(i);
        }
    }
    None
}

/// The input spans of the serial compressor's blocks, found as they are asked for.
fn spans(data: &[u8], capacity: usize) -> impl Iterator<Item = (usize, usize)> + Send + '_ {
    let mut start = Some(0);
    std::iter::from_fn(move || {
        let a = start?;
        start = next_cut(data, a, capacity);
        Some((a, start.unwrap_or(data.len())))
    })
}

/// For a stream that holds exactly one block: the bit offset of its end magic and the
/// block's CRC (which, for one block, is also the combined CRC after the end magic).
fn one_block(stream: &[u8]) -> Option<(u64, u32)> {
    if read_bits(stream, 32, 48)? != BLOCK_MAGIC {
        return None;
    }
    let crc = u32::try_from(read_bits(stream, 80, 32)?).ok()?;
    let bits = 8 * stream.len() as u64;
    // The stream ends with the end magic, the combined CRC and zero bits to a byte.
    (0..8u32).find_map(|pad| {
        let end = bits.checked_sub(80 + u64::from(pad))?;
        let tail_zero = read_bits(stream, end + 80, pad) == Some(0);
        (end > 80
            && tail_zero
            && read_bits(stream, end, 48)? == END_MAGIC
            && read_bits(stream, end + 48, 32)? == u64::from(crc))
        .then_some((end, crc))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{bzip, noise};

    fn serial(data: &[u8], level: u32) -> Vec<u8> {
        bzip(data, level).unwrap()
    }

    #[test]
    fn writes_the_serial_stream_bit_for_bit() {
        // Level 1 has blocks of 99 981 bytes after RLE1, so a few hundred kB span several;
        // level 9 (the reference's) needs 900 kB for two.
        let mut cases: Vec<(&str, Vec<u8>, u32)> =
            vec![("noise", noise(350_000, 1), 1), ("noise", noise(1_000_000, 2), 9)];
        // Runs of every length around RLE1's 4 and 255, so blocks fill unevenly.
        let mut runs = Vec::new();
        let mut x = 5u64;
        while runs.len() < 800_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = if x % 16 == 0 { [254, 255, 256, 600][(x % 64 / 16) as usize] } else { 1 + (x % 5) as usize };
            runs.extend(std::iter::repeat_n(x.to_le_bytes()[3], len));
        }
        cases.push(("runs", runs, 1));
        // Text-like input that compresses well.
        let text = (0..400_000u32).map(|i| b"abcab cab\n"[(i % 10) as usize] ^ (i / 4096).to_le_bytes()[0]).collect();
        cases.push(("text", text, 1));
        for (what, data, level) in &cases {
            assert!(next_cut(data, 0, block_capacity(*level)).is_some(), "{what}: one block");
            let got = compress(data, *level).unwrap_or_else(|| panic!("{what}: declined"));
            assert!(got == serial(data, *level), "{what}, level {level}: differs from the serial stream");
        }
    }

    #[test]
    fn the_cut_rule_at_every_ending() {
        // Inputs ending at every place around a block's end: a full block closed by the
        // last run, a run left open after a full block, a run cut at 255.
        let capacity = block_capacity(1);
        for tail in 0..12usize {
            for run in [1usize, 3, 4, 255, 256] {
                let mut data = noise(capacity - 6, 9);
                data.extend(std::iter::repeat_n(0xaa, run));
                data.extend(noise(tail, 10));
                let want = serial(&data, 1);
                let parallel = compress(&data, 1);
                if next_cut(&data, 0, capacity).is_none() {
                    assert!(parallel.is_none(), "tail {tail}, run {run}: one block");
                } else {
                    assert!(parallel == Some(want), "tail {tail}, run {run}");
                }
            }
        }
    }

    #[test]
    fn single_blocks_are_left_to_the_serial_compressor() {
        assert!(compress(&noise(10_000, 3), 9).is_none());
        assert!(compress(&[], 9).is_none());
        assert!(compress(&noise(10_000, 3), 0).is_none());
    }
}
