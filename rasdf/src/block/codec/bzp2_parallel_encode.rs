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
//! compresses serially; [`Stream`], which compresses input as it arrives in batches, has
//! handed the earlier blocks on by then and fails instead.

use std::io::Write;

use rayon::prelude::*;

use super::bzp2_bits::{BitWriter, read_bits};
use super::bzp2_parallel_decode::{BLOCK_MAGIC, END_MAGIC};

/// Compresses `data` at `level` (1-9) in parallel; `None` when it fits one block (the
/// serial compressor is as fast) or a piece did not compress to exactly one block.
pub(crate) fn compress(data: &[u8], level: u32) -> Option<Vec<u8>> {
    let level_digit = level_digit(level)?;
    let capacity = block_capacity(level);
    next_cut(data, 0, capacity)?;
    // The cuts are found on the workers as they take the next block (a few milliseconds
    // of scanning a block, against a tenth of a second compressing it).
    let mut pieces: Vec<(usize, Option<Piece>)> = spans(data, capacity)
        .enumerate()
        .par_bridge()
        .map(|(n, (a, b))| (n, Piece::compress(&data[a..b], level)))
        .collect();
    pieces.sort_unstable_by_key(|&(n, _)| n);
    let pieces: Vec<Piece> = pieces.into_iter().map(|(_, p)| p).collect::<Option<_>>()?;
    let total: usize = pieces.iter().map(|p| p.stream.len()).sum();
    let mut out = BitWriter::with_capacity(total);
    out.bytes(&header(level_digit));
    let mut combined = 0u32;
    for piece in &pieces {
        piece.join(&mut out, &mut combined)?;
    }
    end(&mut out, combined);
    Some(out.finish())
}

/// A bzip2 stream compressed in parallel as its input arrives in batches: the bytes
/// [`compress`] (and the serial compressor) make of the whole input. Each batch's
/// complete blocks are compressed at once; the input after the last cut waits for the
/// next batch, which decides where its block ends.
pub(crate) struct Stream {
    /// The level, 1-9.
    level: u8,
    /// The input after the last cut.
    carry: Vec<u8>,
    /// Where the scan for the carried block's end goes on: a run start in `carry`, and
    /// what the block held before it.
    scanned: (usize, usize),
    /// The stream so far, but for the bytes already handed out.
    out: BitWriter,
    /// The combined CRC of the blocks so far.
    combined: u32,
    started: bool,
}

impl Stream {
    pub(crate) fn new(level: u32) -> Result<Self, String> {
        let level = level_digit(level).ok_or_else(|| format!("bzip2 has no level {level}"))?;
        Ok(Stream {
            level,
            carry: Vec::new(),
            scanned: (0, 0),
            out: BitWriter::with_capacity(0),
            combined: 0,
            started: false,
        })
    }

    /// Input a batch should hold for each worker to get two blocks of it.
    pub(crate) fn batch_len(&self) -> usize {
        block_capacity(self.level.into()) * 2 * rayon::current_num_threads()
    }

    /// Takes the next `batch` of input (the `last` one ends the stream; it may be empty);
    /// returns the bytes this adds to the stream (the header first, the end magic and
    /// combined CRC with the last).
    pub(crate) fn feed(&mut self, batch: &[u8], last: bool) -> Result<Vec<u8>, String> {
        self.carry.extend_from_slice(batch);
        let level = u32::from(self.level);
        let capacity = block_capacity(level);
        let data = &self.carry[..];
        // A cut is final once found: it is made by a byte that has arrived, and nothing
        // after it changes it. The carried block's scan goes on where it stopped.
        let mut cuts = Vec::new();
        let mut at = 0;
        let (mut from, mut held) = self.scanned;
        loop {
            match scan(data, from, held, capacity) {
                Scan::Cut(cut) => {
                    cuts.push((at, cut));
                    (at, from, held) = (cut, cut, 0);
                }
                Scan::Open { at: run, held: h } => {
                    self.scanned = (run - at, h);
                    break;
                }
            }
        }
        if last && at < data.len() {
            cuts.push((at, data.len()));
            at = data.len();
        }
        let pieces: Vec<Piece> = cuts
            .par_iter()
            .map(|&(a, b)| Piece::compress(&data[a..b], level))
            .collect::<Option<_>>()
            .ok_or("a piece of the parallel bzip2 stream did not compress to one block")?;
        if !self.started {
            self.out.bytes(&header(self.level));
            self.started = true;
        }
        for piece in &pieces {
            piece.join(&mut self.out, &mut self.combined).ok_or("a bzip2 block's bits are out of range")?;
        }
        self.carry.drain(..at);
        if last {
            end(&mut self.out, self.combined);
            return Ok(std::mem::replace(&mut self.out, BitWriter::with_capacity(0)).finish());
        }
        Ok(self.out.take_bytes())
    }
}

/// One block, compressed as a stream of its own.
struct Piece {
    stream: Vec<u8>,
    /// Bit offset of the stream's end magic.
    end: u64,
    /// The block's CRC.
    crc: u32,
}

impl Piece {
    /// `input` compressed as a stream; `None` unless it holds exactly one block.
    fn compress(input: &[u8], level: u32) -> Option<Piece> {
        let mut e = bzip2::write::BzEncoder::new(Vec::with_capacity(input.len() / 2), bzip2::Compression::new(level));
        e.write_all(input).ok()?;
        let stream = e.finish().ok()?;
        let (end, crc) = one_block(&stream)?;
        Some(Piece { stream, end, crc })
    }

    /// Appends the block's bits (from just after the stream's 4-byte header to its end
    /// magic) to `out`, and its CRC to `combined`.
    fn join(&self, out: &mut BitWriter, combined: &mut u32) -> Option<()> {
        out.copy_bits(&self.stream, 32, self.end)?;
        *combined = combined.rotate_left(1) ^ self.crc;
        Some(())
    }
}

fn level_digit(level: u32) -> Option<u8> {
    u8::try_from(level).ok().filter(|l| (1..=9).contains(l))
}

/// A stream's header: `BZh` and the level.
fn header(level_digit: u8) -> [u8; 4] {
    [b'B', b'Z', b'h', b'0' + level_digit]
}

/// A stream's end: the end magic and the combined CRC (then zero bits to a byte).
fn end(out: &mut BitWriter, combined: u32) {
    out.bits(END_MAGIC, 48);
    out.bits(u64::from(combined), 32);
}

/// What a level's block holds after the run-length stage (libbzip2's `nblockMAX`).
fn block_capacity(level: u32) -> usize {
    100_000 * level as usize - 19
}

/// Where the serial compressor closes the block that begins at `start`: the input
/// offset at which the next block begins, `None` when this one runs to the end.
fn next_cut(data: &[u8], start: usize, capacity: usize) -> Option<usize> {
    match scan(data, start, 0, capacity) {
        Scan::Cut(cut) => Some(cut),
        // At the end of the input the open run closes into this block at the finish.
        Scan::Open { .. } => None,
    }
}

/// How far [`scan`] got through a block.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Scan {
    /// The block ends here: the next one begins at this input offset.
    Cut(usize),
    /// The input ran out first: the run that begins `at` may go on in more input, and
    /// the block held `held` bytes before it (where to scan on from).
    Open { at: usize, held: usize },
}

/// Replays the serial compressor's block-filling rule from the run that begins at
/// `start` of a block that already holds `held` bytes after the run-length stage.
fn scan(data: &[u8], start: usize, mut held: usize, capacity: usize) -> Scan {
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
        // The run closes when the byte after it arrives; until then it may go on.
        if i + run == data.len() {
            return Scan::Open { at: i, held };
        }
        // If the block is then full, the compressor closes it before reading further,
        // and the run open at that moment, the next one, starts the next block.
        held += if run >= 4 { 5 } else { run };
        i += run;
        if held >= capacity {
            return Scan::Cut(i);
        }
    }
    Scan::Open { at: i, held }
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
            let len =
                if x.is_multiple_of(16) { [254, 255, 256, 600][(x % 64 / 16) as usize] } else { 1 + (x % 5) as usize };
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

    /// Fed in batches of any size, the stream is still the serial one, bit for bit: cuts
    /// that fall in a later batch, batches inside one block, empty batches, no input.
    #[test]
    fn a_stream_fed_in_batches_is_the_serial_stream() {
        let mut runs = noise(250_000, 4);
        runs.extend(std::iter::repeat_n(7u8, 1000));
        runs.extend(noise(60_000, 5));
        // A run that closes the first block, split by batches of every size below.
        let mut at_cut = noise(block_capacity(1) - 6, 8);
        at_cut.extend(std::iter::repeat_n(0xaa, 300));
        at_cut.extend(noise(150_000, 9));
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("noise", noise(420_000, 6)),
            ("runs", runs),
            ("small", noise(5000, 7)),
            ("empty", vec![]),
            ("run at the cut", at_cut),
        ];
        for (what, data) in &cases {
            let want = serial(data, 1);
            for batch in [1usize, 999, 65_536, 99_981, 99_984, 100_000, 1 << 20] {
                let mut stream = Stream::new(1).unwrap();
                let mut got = Vec::new();
                let mut pieces = data.chunks(batch).peekable();
                while let Some(p) = pieces.next() {
                    let last = pieces.peek().is_none();
                    // The last batch ends the stream itself, or an empty one after it does.
                    got.extend(stream.feed(p, last && batch % 2 == 1).unwrap());
                    if batch == 999 {
                        // An empty batch between two is nothing.
                        got.extend(stream.feed(&[], false).unwrap());
                    }
                    if last && batch % 2 == 0 {
                        got.extend(stream.feed(&[], true).unwrap());
                    }
                }
                if data.is_empty() {
                    got.extend(stream.feed(&[], true).unwrap());
                }
                assert!(got == want, "{what} in batches of {batch}: differs from the serial stream");
            }
        }
        assert!(Stream::new(0).is_err());
    }

    #[test]
    fn single_blocks_are_left_to_the_serial_compressor() {
        assert!(compress(&noise(10_000, 3), 9).is_none());
        assert!(compress(&[], 9).is_none());
        assert!(compress(&noise(10_000, 3), 0).is_none());
    }
}
