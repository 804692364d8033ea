//! Parallel bzip2 decoding of one stream.
//!
//! A bzip2 stream is `BZh<level>`, then blocks that each start with the 48-bit magic
//! `0x314159265359` at any bit offset, carry their own CRC and decode on their own, then
//! the end-of-stream magic `0x177245385090` and the CRC combined from the blocks'. Each
//! block is copied into a stream of its own (header, the block's bits, end magic, its CRC
//! as the combined one), and those small streams are decoded on the pool's threads while
//! the calling thread takes the decoded blocks in order (see [`crate::pipeline`]).
//!
//! This is only an accelerator: the caller decodes serially whenever it declines, which
//! is when the stream has fewer than two blocks or very small ones, a magic is found where
//! no block starts (a chance bit pattern inside compressed data), the CRCs do not combine
//! to the stored one, a piece fails to decode or to match its CRC, or the sizes disagree.
//! The serial decoder then gives the authoritative result or error.

use super::bzp2_bits::{BitWriter, read_bits};

pub(super) const BLOCK_MAGIC: u64 = 0x3141_5926_5359;
pub(super) const END_MAGIC: u64 = 0x1772_4538_5090;

/// Least mean compressed size of a block for the parallel path.
const MIN_BLOCK_BYTES: usize = 8 << 10;

/// What [`pieces`] did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Streamed {
    /// The whole stream, exactly the expected size, went to the sink.
    Done,
    /// Nothing went to the sink: the stream is one for the serial decoder.
    Declined,
    /// A block failed to decode or the sizes disagreed after this many bytes had gone to
    /// the sink (all of them the stream's first bytes, each block's CRC checked).
    FailedAfter(u64),
}

/// Decodes the bzip2 stream `stored`, of `expected` decoded bytes, block by block on the
/// pool's threads, handing the blocks to `sink` in order on this one. At most a few
/// blocks per thread are held at a time. The sink's error is returned as it is.
pub(crate) fn pieces<E>(
    stored: &[u8],
    expected: u64,
    sink: &mut dyn FnMut(&[u8]) -> Result<(), E>,
) -> Result<Streamed, E> {
    let threads = rayon::current_num_threads();
    let Some((level, spans)) = split(stored).filter(|_| threads > 1) else {
        return Ok(Streamed::Declined);
    };
    // No block may decode to more than the whole stream should.
    let limit = usize::try_from(expected).unwrap_or(usize::MAX);
    let mut handed = 0u64;
    let mut stopped = None;
    /// Why the pipeline stopped: a block that failed, or the sink.
    struct Stop;
    let run = crate::pipeline::in_order(
        spans.len(),
        threads,
        2 * threads,
        |n, buf| {
            let (a, b) = spans[n];
            decode_piece(stored, level, a, b, limit, buf).ok_or(Stop)
        },
        |piece| {
            if handed + piece.len() as u64 > expected {
                return Err(Stop);
            }
            sink(piece).map_err(|e| {
                stopped = Some(e);
                Stop
            })?;
            handed += piece.len() as u64;
            Ok(())
        },
    );
    if let Some(e) = stopped {
        return Err(e);
    }
    Ok(match run {
        Ok(()) if handed == expected => Streamed::Done,
        _ if handed == 0 => Streamed::Declined,
        _ => Streamed::FailedAfter(handed),
    })
}

/// The stream's level and the bit span of each of its blocks, or `None` when the
/// parallel path declines it: too short or too few blocks, blocks too small on average,
/// a misplaced magic, or block CRCs that do not combine to the stream's.
fn split(stored: &[u8]) -> Option<(u8, Vec<(u64, u64)>)> {
    // Too short for two blocks of the least mean size: no scan at all (the common
    // one-block stream costs nothing here).
    if stored.len() < 2 * MIN_BLOCK_BYTES {
        return None;
    }
    let level = match stored {
        [b'B', b'Z', b'h', l @ b'1'..=b'9', ..] => *l,
        _ => return None,
    };
    let ends = find_magic(stored, END_MAGIC);
    let blocks = find_magic(stored, BLOCK_MAGIC);
    // The first block follows the 4-byte header; the stream ends at the first end magic
    // after it.
    if blocks.first() != Some(&32) {
        return None;
    }
    let end = *ends.iter().find(|&&e| e >= 32 + 80)?;
    let blocks: Vec<u64> = blocks.into_iter().take_while(|&b| b < end).collect();
    // Each piece costs a decoder's setup (tens of microseconds): streams of many tiny
    // blocks (crafted, or runs of one byte) decode faster serially.
    if blocks.len() < 2 || stored.len() / blocks.len() < MIN_BLOCK_BYTES {
        return None;
    }
    let mut combined = 0u32;
    for &b in &blocks {
        combined = combined.rotate_left(1) ^ u32::try_from(read_bits(stored, b + 48, 32)?).ok()?;
    }
    if u32::try_from(read_bits(stored, end + 48, 32)?).ok()? != combined {
        return None;
    }
    let spans: Vec<(u64, u64)> =
        blocks.iter().zip(blocks.iter().skip(1).chain(std::iter::once(&end))).map(|(&a, &b)| (a, b)).collect();
    if spans.iter().any(|&(a, b)| b < a + 80) {
        return None;
    }
    Some((level, spans))
}

/// Decodes the block at bits `a..b` of `stored` as a stream of its own into `out`
/// (cleared first, its room reused), producing at most `limit` bytes; returns how many.
fn decode_piece(stored: &[u8], level: u8, a: u64, b: u64, limit: usize, out: &mut Vec<u8>) -> Option<usize> {
    let crc = read_bits(stored, a + 48, 32)?;
    let mut stream = BitWriter::with_capacity(usize::try_from((b - a) / 8).ok()? + 20);
    stream.bytes(&[b'B', b'Z', b'h', level]);
    stream.copy_bits(stored, a, b)?;
    stream.bits(END_MAGIC, 48);
    stream.bits(crc, 32);
    let stream = stream.finish();
    let mut d = bzip2::Decompress::new(false);
    out.clear();
    out.reserve(stream.len().saturating_mul(4).min(limit));
    loop {
        if out.len() == out.capacity() {
            if out.len() >= limit {
                return None;
            }
            out.reserve(out.len().max(1 << 16).min(limit - out.len()));
        }
        let consumed = usize::try_from(d.total_in()).ok()?;
        let before = out.len();
        match d.decompress_vec(&stream[consumed..], out).ok()? {
            bzip2::Status::StreamEnd => return Some(out.len()),
            _ if out.len() == before && usize::try_from(d.total_in()).ok()? == consumed => return None,
            _ => {}
        }
    }
}

/// Where the blocks of a stream the parallel path takes start, in bits, and where its
/// end magic is.
#[cfg(test)]
pub(crate) fn block_starts(stored: &[u8]) -> Vec<u64> {
    let (_, spans) = split(stored).unwrap_or_default();
    spans.iter().map(|s| s.0).chain(spans.last().map(|s| s.1)).collect()
}

/// Bit positions (most significant bit first) where the 48-bit `magic` occurs.
fn find_magic(data: &[u8], magic: u64) -> Vec<u64> {
    let mut found = Vec::new();
    for shift in 0..8u64 {
        // At bit 8k + shift, bytes k+1..=k+5 hold magic bits 8-shift .. 48-shift exactly.
        let pattern: Vec<u8> = (0..5u64).map(|j| ((magic >> (32 + shift - 8 * j)) & 0xff) as u8).collect();
        for m in memchr::memmem::find_iter(data, &pattern) {
            if m == 0 {
                continue;
            }
            let p = 8 * (m as u64 - 1) + shift;
            if read_bits(data, p, 48) == Some(magic) {
                found.push(p);
            }
        }
    }
    found.sort_unstable();
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::bzip;

    /// The stream decoded whole in parallel, or `None` where [`pieces`] leaves it to the
    /// serial decoder.
    fn decode(stored: &[u8], expected: usize) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        let done = pieces(stored, expected as u64, &mut |p: &[u8]| {
            out.extend_from_slice(p);
            Ok::<(), ()>(())
        });
        (done == Ok(Streamed::Done)).then_some(out)
    }

    fn sample(n: usize) -> Vec<u8> {
        let mut x = 99u32;
        (0..n)
            .map(|i| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (i / 512).to_le_bytes()[0] ^ (x >> 28).to_le_bytes()[0]
            })
            .collect()
    }

    #[test]
    fn finds_magics_at_every_bit_offset() {
        for shift in 0..8u32 {
            let mut b = BitWriter::with_capacity(16);
            b.bytes(&[0x55]);
            b.bits(0, shift);
            b.bits(BLOCK_MAGIC, 48);
            b.bits(0x3, 7);
            assert_eq!(find_magic(&b.finish(), BLOCK_MAGIC), vec![8 + u64::from(shift)], "shift {shift}");
        }
    }

    #[test]
    fn decodes_many_blocks_as_the_serial_decoder() {
        // Level 1: 100 kB blocks, so a few hundred kB spans several.
        for (n, level) in [(350_000, 1), (1_000_000, 2), (2_500_000, 9)] {
            let data = sample(n);
            let z = bzip(&data, level).unwrap();
            assert!(decode(&z, data.len()) == Some(data), "n={n}");
        }
    }

    /// Damaged streams: whenever the parallel path accepts one, the serial decoder
    /// accepts it too, with the same bytes.
    #[test]
    fn never_accepts_what_the_serial_decoder_refuses() {
        let data = sample(300_000);
        let z = bzip(&data, 1).unwrap();
        // The serial decoder as `codec::decode` drives it: one stream, what follows its
        // end ignored.
        let serial = |z: &[u8]| -> Option<Vec<u8>> {
            let mut d = bzip2::Decompress::new(false);
            let mut out = Vec::with_capacity(data.len() + 1);
            loop {
                let before = (d.total_in(), d.total_out());
                let consumed = usize::try_from(d.total_in()).ok()?;
                if d.decompress_vec(&z[consumed..], &mut out).ok()? == bzip2::Status::StreamEnd {
                    return Some(out);
                }
                if (d.total_in(), d.total_out()) == before || out.len() > data.len() {
                    return None;
                }
            }
        };
        let mut x = 7u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut accepted = 0;
        for round in 0..300 {
            let mut bad = z.clone();
            match round % 3 {
                0 => {
                    let k = usize::try_from(next() % bad.len() as u64).unwrap();
                    bad[k] ^= 1 << (next() % 8);
                }
                1 => bad.truncate(usize::try_from(next() % bad.len() as u64).unwrap()),
                _ => {
                    let k = usize::try_from(next() % bad.len() as u64).unwrap();
                    bad.insert(k, next().to_le_bytes()[0]);
                }
            }
            if let Some(out) = decode(&bad, data.len()) {
                accepted += 1;
                assert_eq!(serial(&bad).as_deref(), Some(&out[..]), "round {round}");
            }
        }
        // Bit flips in the padding after the end magic, say, leave the stream valid.
        assert!(accepted < 300);
    }

    #[test]
    fn declines_one_block_wrong_sizes_and_damage() {
        let small = sample(1000);
        assert_eq!(decode(&bzip(&small, 9).unwrap(), small.len()), None, "one block");
        let data = sample(350_000);
        let z = bzip(&data, 1).unwrap();
        assert_eq!(decode(&z, data.len() - 1), None, "too long");
        assert_eq!(decode(&z, data.len() + 1), None, "too short");
        let mut bad = z.clone();
        let mid = bad.len() / 2;
        bad[mid] ^= 0x10;
        assert_eq!(decode(&bad, data.len()), None, "damaged");
    }
}
