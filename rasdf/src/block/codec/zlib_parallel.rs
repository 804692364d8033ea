//! Parallel zlib compression that still yields one standard RFC 1950 stream.
//!
//! The input is cut into pieces compressed on separate threads as raw deflate. Each
//! piece but the last ends with a sync flush (an empty stored block, so it stops on a
//! byte boundary and is not final) and each piece but the first is primed with the 32 KiB
//! that precede it, so back-references may reach into the previous piece as they would
//! in a serial stream. Concatenated behind a zlib header and followed by the Adler-32 of
//! the whole input (combined from the pieces'), they form one stream any inflater reads.

use flate2::{Compress, FlushCompress, Status};
use rayon::prelude::*;

/// Input bytes per piece. Large enough that the flush and the reset dictionary cost
/// little ratio (well under 0.1 %), small enough to keep two cores busy on a few MiB.
pub(crate) const PIECE: usize = 1 << 20;

/// The deflate window: how far back a piece's dictionary reaches.
const WINDOW: usize = 32 << 10;

/// zlib header for deflate with a 32 KiB window at the default level (as `zlib.compress`
/// writes at level 6).
pub(crate) const HEADER: [u8; 2] = [0x78, 0x9c];

/// Compresses `data` at `level` into one zlib stream, in parallel when it spans several
/// pieces.
pub(crate) fn compress(data: &[u8], level: u32) -> Result<Vec<u8>, String> {
    Stream::new(level).feed(data, true)
}

/// One zlib stream made batch by batch, for data that arrives in parts: the stream is
/// byte for byte the one [`compress`] makes of all the data at once.
pub(crate) struct Stream {
    level: u32,
    /// The Adler-32 of the input so far.
    adler: u32,
    /// The last [`WINDOW`] bytes of input so far: the next piece's dictionary.
    window: Vec<u8>,
    started: bool,
}

impl Stream {
    pub(crate) fn new(level: u32) -> Self {
        Stream { level, adler: 1, window: Vec::new(), started: false }
    }

    /// Compresses `batch`, whose length is a multiple of [`PIECE`] unless it is the
    /// `last`; returns the bytes it adds to the stream (the zlib header first, the
    /// Adler-32 at the end).
    pub(crate) fn feed(&mut self, batch: &[u8], last: bool) -> Result<Vec<u8>, String> {
        if !last && !batch.len().is_multiple_of(PIECE) {
            return Err(format!("a batch of {} bytes is not whole pieces", batch.len()));
        }
        let window = &self.window;
        let pieces: Vec<(Vec<u8>, u32)> = batch
            .par_chunks(PIECE)
            .enumerate()
            .map(|(i, piece)| {
                let start = i * PIECE;
                // The 32 KiB before the piece: from this batch, or the last one's end.
                let dict: std::borrow::Cow<'_, [u8]> = if start >= WINDOW || window.is_empty() {
                    std::borrow::Cow::Borrowed(&batch[start.saturating_sub(WINDOW)..start])
                } else {
                    let from_before = &window[window.len().saturating_sub(WINDOW - start)..];
                    std::borrow::Cow::Owned([from_before, &batch[..start]].concat())
                };
                let last_piece = last && start + piece.len() == batch.len();
                let deflated = deflate_piece(piece, &dict, last_piece, self.level)?;
                Ok((deflated, zlib_rs::adler32::adler32(1, piece)))
            })
            .collect::<Result<_, String>>()?;
        let total: usize = pieces.iter().map(|(d, _)| d.len()).sum::<usize>() + HEADER.len() + 4;
        let mut out = Vec::new();
        out.try_reserve_exact(total).map_err(|_| format!("cannot allocate {total} bytes for the zlib stream"))?;
        crate::hugepages::advise(out.as_ptr(), out.capacity());
        if !self.started {
            out.extend_from_slice(&HEADER);
            self.started = true;
        }
        for (i, (deflated, piece_adler)) in pieces.iter().enumerate() {
            out.extend_from_slice(deflated);
            let len = batch.len().min((i + 1) * PIECE) - i * PIECE;
            self.adler = zlib_rs::adler32::adler32_combine(self.adler, *piece_adler, len as u64);
        }
        if last {
            if batch.is_empty() {
                // No piece in this batch: an empty final block.
                out.extend_from_slice(&deflate_piece(&[], &[], true, self.level)?);
            }
            out.extend_from_slice(&self.adler.to_be_bytes());
        } else {
            let keep = WINDOW.saturating_sub(batch.len()).min(self.window.len());
            let mut window = self.window[self.window.len() - keep..].to_vec();
            window.extend_from_slice(&batch[batch.len().saturating_sub(WINDOW)..]);
            self.window = window;
        }
        Ok(out)
    }
}

/// The number of pieces [`deflate_piece_of`] makes of `len` bytes (an empty input is
/// one empty piece, the stream's final block).
pub(crate) fn piece_count(len: usize) -> usize {
    len.div_ceil(PIECE).max(1)
}

/// Piece `n` of the stream [`compress`] makes of `data`, deflated into `out` (emptied
/// first, its room kept): the pieces, in order, behind [`HEADER`] and followed by
/// the big-endian [`combine_adler`] of theirs, are that stream byte for byte. Pieces can
/// be made in any order, on any thread, each in a buffer of its own: a writer holds a
/// few of them, not the whole stream. Returns the piece's input length and Adler-32.
pub(crate) fn deflate_piece_of(data: &[u8], n: usize, level: u32, out: &mut Vec<u8>) -> Result<(usize, u32), String> {
    let start = n * PIECE;
    if start > data.len() || (start == data.len() && n > 0) {
        return Err(format!("no piece {n} in {} bytes", data.len()));
    }
    let end = data.len().min(start + PIECE);
    let piece = &data[start..end];
    deflate_piece_into(piece, &data[start.saturating_sub(WINDOW)..start], end == data.len(), level, out)?;
    Ok((piece.len(), zlib_rs::adler32::adler32(1, piece)))
}

/// The Adler-32 of the input so far (`adler`, 1 before any) and a piece of `len` bytes
/// whose own Adler-32 is `piece`.
pub(crate) fn combine_adler(adler: u32, piece: u32, len: usize) -> u32 {
    zlib_rs::adler32::adler32_combine(adler, piece, len as u64)
}

/// Raw deflate of one piece, primed with `dict`; ends with a final block when `last`,
/// else with a sync flush.
fn deflate_piece(piece: &[u8], dict: &[u8], last: bool, level: u32) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    deflate_piece_into(piece, dict, last, level, &mut out)?;
    Ok(out)
}

/// [`deflate_piece`] into `out`, emptied first (its room kept, and grown as needed: the
/// stream does not depend on the room the deflater is given).
fn deflate_piece_into(piece: &[u8], dict: &[u8], last: bool, level: u32, out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    let want = piece.len() / 2 + 1024;
    out.try_reserve(want).map_err(|_| format!("cannot allocate {want} bytes for a deflated piece"))?;
    let mut c = Compress::new(flate2::Compression::new(level), false);
    if !dict.is_empty() {
        c.set_dictionary(dict).map_err(|e| e.to_string())?;
    }
    let flush = if last { FlushCompress::Finish } else { FlushCompress::Sync };
    loop {
        if out.capacity() - out.len() < 1024 {
            let more = out.capacity().max(4096);
            out.try_reserve(more).map_err(|_| format!("cannot allocate {more} more bytes for a deflated piece"))?;
        }
        let consumed = usize::try_from(c.total_in()).map_err(|e| e.to_string())?;
        let status = c.compress_vec(&piece[consumed..], out, flush).map_err(|e| e.to_string())?;
        let consumed = usize::try_from(c.total_in()).map_err(|e| e.to_string())?;
        let done = if last {
            status == Status::StreamEnd
        } else {
            // A sync flush is complete once all input is in and output space was left over.
            consumed == piece.len() && out.len() < out.capacity()
        };
        if done {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn inflate(z: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::ZlibDecoder::new(z).read_to_end(&mut out).expect("a valid zlib stream");
        out
    }

    fn sample(n: usize) -> Vec<u8> {
        // Compressible but not trivially: a slow ramp with a little noise.
        let mut x = 12345u32;
        (0..n)
            .map(|i| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (i / 64).to_le_bytes()[0].wrapping_add((x >> 29).to_le_bytes()[0])
            })
            .collect()
    }

    #[test]
    fn a_stream_fed_in_batches_is_the_stream_of_the_whole() {
        let data = sample(5 * PIECE + 777);
        let whole = compress(&data, 6).unwrap();
        for pieces_per_batch in [1, 2, 3] {
            let batch = pieces_per_batch * PIECE;
            let mut s = Stream::new(6);
            let mut out = Vec::new();
            let mut rest = &data[..];
            while rest.len() > batch {
                out.extend(s.feed(&rest[..batch], false).unwrap());
                rest = &rest[batch..];
            }
            out.extend(s.feed(rest, true).unwrap());
            assert!(out == whole, "batches of {pieces_per_batch} pieces");
        }
        // An empty last batch ends the stream with an empty final block.
        let mut s = Stream::new(6);
        let mut out = s.feed(&data[..PIECE], false).unwrap();
        out.extend(s.feed(&[], true).unwrap());
        assert_eq!(inflate(&out), &data[..PIECE]);
        // A batch that is not whole pieces, before the last, is refused.
        assert!(Stream::new(6).feed(&data[..PIECE + 1], false).is_err());
    }

    #[test]
    fn pieces_make_one_stream() {
        for n in [0, 1, 1000, PIECE - 1, PIECE, PIECE + 1, 3 * PIECE + 12_345] {
            let data = sample(n);
            let z = compress(&data, 6).unwrap();
            assert_eq!(&z[..2], &HEADER, "n={n}");
            assert_eq!(inflate(&z), data, "n={n}");
            // Exactly one stream: the Adler-32 trailer is the last 4 bytes.
            let adler = zlib_rs::adler32::adler32(1, &data);
            assert_eq!(z[z.len() - 4..], adler.to_be_bytes(), "n={n}");
        }
    }

    #[test]
    fn ratio_stays_close_to_serial() {
        let data = sample(4 * PIECE);
        let parallel = compress(&data, 6).unwrap().len();
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(6));
        std::io::Write::write_all(&mut e, &data).unwrap();
        let serial = e.finish().unwrap().len();
        assert!(parallel as f64 <= serial as f64 * 1.01, "parallel {parallel} vs serial {serial}");
    }
}
