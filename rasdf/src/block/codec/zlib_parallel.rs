//! Parallel zlib: compression that still yields one standard RFC 1950 stream, and the
//! inflation of such a stream on several threads.
//!
//! The input is cut into pieces of [`PIECE`] bytes, compressed on separate threads as
//! raw deflate. Each piece but the last ends with a flush (an empty stored block, so it
//! stops on a byte boundary and is not final), and each starts with an empty history, so
//! that no back-reference reaches into the piece before it. Concatenated behind a zlib
//! header and followed by the Adler-32 of the whole input (combined from the pieces'),
//! they form one stream any inflater reads serially; and since each piece decodes on its
//! own, [`inflate`] decodes them at once, each straight into its place in the output.
//! Starting each piece afresh costs little ratio (about 0.1 % at 1 MiB pieces).

use flate2::{Compress, FlushCompress, Status};
use rayon::prelude::*;

/// Input bytes per piece. Large enough that the flush and the reset dictionary cost
/// little ratio (well under 0.1 %), small enough to keep two cores busy on a few MiB.
pub(crate) const PIECE: usize = 1 << 20;

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
    started: bool,
}

impl Stream {
    pub(crate) fn new(level: u32) -> Self {
        Stream { level, adler: 1, started: false }
    }

    /// Compresses `batch`, whose length is a multiple of [`PIECE`] unless it is the
    /// `last`; returns the bytes it adds to the stream (the zlib header first, the
    /// Adler-32 at the end).
    pub(crate) fn feed(&mut self, batch: &[u8], last: bool) -> Result<Vec<u8>, String> {
        if !last && !batch.len().is_multiple_of(PIECE) {
            return Err(format!("a batch of {} bytes is not whole pieces", batch.len()));
        }
        let pieces: Vec<(Vec<u8>, u32)> = batch
            .par_chunks(PIECE)
            .enumerate()
            .map(|(i, piece)| {
                let last_piece = last && i * PIECE + piece.len() == batch.len();
                let deflated = deflate_piece(piece, last_piece, self.level)?;
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
                out.extend_from_slice(&deflate_piece(&[], true, self.level)?);
            }
            out.extend_from_slice(&self.adler.to_be_bytes());
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
    deflate_piece_into(piece, end == data.len(), level, out)?;
    Ok((piece.len(), zlib_rs::adler32::adler32(1, piece)))
}

/// The Adler-32 of the input so far (`adler`, 1 before any) and a piece of `len` bytes
/// whose own Adler-32 is `piece`.
pub(crate) fn combine_adler(adler: u32, piece: u32, len: usize) -> u32 {
    zlib_rs::adler32::adler32_combine(adler, piece, len as u64)
}

/// Raw deflate of one piece, from an empty history; ends with a final block when
/// `last`, else with a flush.
fn deflate_piece(piece: &[u8], last: bool, level: u32) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    deflate_piece_into(piece, last, level, &mut out)?;
    Ok(out)
}

/// [`deflate_piece`] into `out`, emptied first (its room kept, and grown as needed: the
/// stream does not depend on the room the deflater is given).
fn deflate_piece_into(piece: &[u8], last: bool, level: u32, out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    let want = piece.len() / 2 + 1024;
    out.try_reserve(want).map_err(|_| format!("cannot allocate {want} bytes for a deflated piece"))?;
    let mut c = Compress::new(flate2::Compression::new(level), false);
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

/// The four bytes that end a flush: the length fields of an empty stored block.
const FLUSH_MARK: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// An empty final block (fixed Huffman codes, end of block at once). After a piece that
/// ends on a flush, it makes the piece a whole deflate stream, which libdeflate takes.
const EMPTY_FINAL: [u8; 2] = [0x03, 0x00];

/// Inflates `deflate` (the body of a zlib stream, between its header and its Adler-32
/// `adler`) into `out` on several threads, when it is a stream [`compress`] made: a
/// flush after each [`PIECE`] bytes of output, and pieces that decode on their own. Each
/// piece is decoded straight into its place in `out` and must take exactly its bytes of
/// the stream and fill exactly its place; the Adler-32 of the whole must match.
///
/// Returns `false` when the stream is not one made so (one from another writer, which
/// flushes nowhere or keeps history across flushes; four bytes in the data that look
/// like a flush) or when it is damaged: `out` then holds anything, and the caller
/// inflates the stream serially, which gives the verdict. The flushes are found by their
/// four bytes; one look-alike among them sends the stream to the serial path, which is
/// never wrong, only slower.
pub(crate) fn inflate(deflate: &[u8], adler: u32, out: &mut [u8]) -> bool {
    let pieces = piece_count(out.len());
    if pieces < 2 || rayon::current_num_threads() < 2 {
        return false;
    }
    // Where each piece after the first starts. A stream that ends with an empty final
    // block of its own (a streamed write whose last batch was empty) has one more.
    let mut starts = Vec::with_capacity(pieces);
    for at in memchr::memmem::find_iter(deflate, &FLUSH_MARK) {
        if starts.len() == pieces {
            return false;
        }
        starts.push(at + FLUSH_MARK.len());
    }
    if starts.len() + 1 < pieces {
        return false;
    }
    let tail = (starts.len() == pieces).then(|| &deflate[starts[pieces - 1]..]);
    let end = |k: usize| if k + 1 < pieces { starts[k] } else { tail.map_or(deflate.len(), |_| starts[k]) };
    let begin = |k: usize| if k == 0 { 0 } else { starts[k - 1] };
    let adlers: Option<Vec<u32>> = out
        .par_chunks_mut(PIECE)
        .enumerate()
        .map_init(RawInflater::new, |inflater, (k, place)| {
            let inflater = inflater.as_mut()?;
            let piece = &deflate[begin(k)..end(k)];
            let ends_stream = k + 1 == pieces && tail.is_none();
            if ends_stream {
                inflater.whole(piece, place)?;
            } else {
                let mut closed = Vec::new();
                closed.try_reserve_exact(piece.len() + EMPTY_FINAL.len()).ok()?;
                closed.extend_from_slice(piece);
                closed.extend_from_slice(&EMPTY_FINAL);
                inflater.whole(&closed, place)?;
            }
            Some(zlib_rs::adler32::adler32(1, place))
        })
        .collect();
    let Some(adlers) = adlers else {
        return false;
    };
    if let Some(tail) = tail {
        // Nothing but an empty final block may follow the last piece's flush.
        if RawInflater::new().and_then(|mut i| i.whole(tail, &mut [])).is_none() {
            return false;
        }
    }
    let whole = adlers.iter().zip(out.chunks(PIECE)).fold(1, |a, (&piece, place)| combine_adler(a, piece, place.len()));
    whole == adler
}

/// libdeflate's decompressor, called directly for the one thing its safe wrapper
/// (`libdeflater`) does not tell: how many input bytes a stream took, without which a
/// piece's end cannot be checked.
struct RawInflater(std::ptr::NonNull<libdeflate_sys::libdeflate_decompressor>);

impl RawInflater {
    fn new() -> Option<Self> {
        // SAFETY: allocates a decompressor; a null pointer (out of memory) gives `None`.
        std::ptr::NonNull::new(unsafe { libdeflate_sys::libdeflate_alloc_decompressor() }).map(RawInflater)
    }

    /// Decodes `input`, which must be exactly one deflate stream, into `out`, which it
    /// must fill exactly; `None` otherwise.
    fn whole(&mut self, input: &[u8], out: &mut [u8]) -> Option<()> {
        let (mut taken, mut made) = (0usize, 0usize);
        // SAFETY: the decompressor is ours alone (`&mut self`); libdeflate reads at most
        // `input.len()` bytes of `input`, writes at most `out.len()` bytes of `out`, and
        // writes the two counts through pointers to locals that outlive the call.
        let result = unsafe {
            libdeflate_sys::libdeflate_deflate_decompress_ex(
                self.0.as_ptr(),
                input.as_ptr().cast(),
                input.len(),
                out.as_mut_ptr().cast(),
                out.len(),
                &raw mut taken,
                &raw mut made,
            )
        };
        (result == libdeflate_sys::libdeflate_result_LIBDEFLATE_SUCCESS && taken == input.len() && made == out.len())
            .then_some(())
    }
}

impl Drop for RawInflater {
    fn drop(&mut self) {
        // SAFETY: the decompressor came from `libdeflate_alloc_decompressor` and is freed
        // once, here.
        unsafe { libdeflate_sys::libdeflate_free_decompressor(self.0.as_ptr()) }
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

    /// zlib stream with the pieces' history kept across flushes, as rasdf wrote zlib
    /// before its pieces were made to decode on their own.
    fn primed(data: &[u8]) -> Vec<u8> {
        let mut z = HEADER.to_vec();
        let pieces: Vec<&[u8]> = data.chunks(PIECE).collect();
        for (i, piece) in pieces.iter().enumerate() {
            let mut c = Compress::new(flate2::Compression::new(6), false);
            if i > 0 {
                c.set_dictionary(&data[i * PIECE - (32 << 10)..i * PIECE]).unwrap();
            }
            let last = i + 1 == pieces.len();
            let mut out = Vec::with_capacity(2 * PIECE);
            let flush = if last { FlushCompress::Finish } else { FlushCompress::Sync };
            c.compress_vec(piece, &mut out, flush).unwrap();
            z.extend(out);
        }
        z.extend(zlib_rs::adler32::adler32(1, data).to_be_bytes());
        z
    }

    /// The body and Adler-32 of a zlib stream, as [`super::inflate`] takes them.
    fn parts(z: &[u8]) -> (&[u8], u32) {
        let body = &z[2..z.len() - 4];
        (body, u32::from_be_bytes(z[z.len() - 4..].try_into().unwrap()))
    }

    fn inflated_in_parallel(z: &[u8], n: usize) -> Option<Vec<u8>> {
        let (body, adler) = parts(z);
        let mut out = vec![0xAA; n];
        super::inflate(body, adler, &mut out).then_some(out)
    }

    #[test]
    fn streams_rasdf_writes_inflate_in_parallel() {
        for n in [2 * PIECE - 1, 2 * PIECE, 2 * PIECE + 1, 5 * PIECE + 4321] {
            let data = sample(n);
            let z = compress(&data, 6).unwrap();
            assert_eq!(inflated_in_parallel(&z, n).as_deref(), Some(&data[..]), "n={n}");
            // One output byte more or less than the stream holds: not taken.
            assert!(inflated_in_parallel(&z, n + 1).is_none() && inflated_in_parallel(&z, n - 1).is_none(), "n={n}");
        }
        // A streamed write whose last batch was empty ends with an empty final block of
        // its own after the last piece's flush.
        let data = sample(3 * PIECE);
        let mut s = Stream::new(1);
        let mut z = s.feed(&data, false).unwrap();
        z.extend(s.feed(&[], true).unwrap());
        assert_eq!(inflated_in_parallel(&z, data.len()).as_deref(), Some(&data[..]));
        // One piece: nothing to share out.
        let one = sample(PIECE);
        assert!(inflated_in_parallel(&compress(&one, 6).unwrap(), PIECE).is_none());
    }

    #[test]
    fn other_streams_are_left_to_the_serial_inflater() {
        let data = sample(4 * PIECE + 99);
        // Another writer's stream: no flushes.
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(1));
        std::io::Write::write_all(&mut e, &data).unwrap();
        assert!(inflated_in_parallel(&e.finish().unwrap(), data.len()).is_none());
        // rasdf's older streams: flushes, but history kept across them.
        let old = primed(&data);
        assert_eq!(inflate(&old), data);
        assert!(inflated_in_parallel(&old, data.len()).is_none());
        // Damage anywhere, or a wrong Adler-32: not taken.
        let z = compress(&data, 6).unwrap();
        for at in [3, z.len() / 3, z.len() / 2, z.len() - 9] {
            let mut bad = z.clone();
            bad[at] ^= 0x5a;
            if let Some(out) = inflated_in_parallel(&bad, data.len()) {
                panic!("damage at {at} taken: same bytes {}", out == data);
            }
        }
        let mut bad = z.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert!(inflated_in_parallel(&bad, data.len()).is_none());
        // A look-alike flush (its four bytes in data deflate stores as it is).
        let mut noisy = sample(3 * PIECE);
        let mut x = 7u64;
        for b in &mut noisy {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            *b = (x >> 56) as u8;
        }
        noisy[PIECE / 2..PIECE / 2 + 4].copy_from_slice(&FLUSH_MARK);
        let z = compress(&noisy, 6).unwrap();
        assert!(inflated_in_parallel(&z, noisy.len()).is_none());
        assert_eq!(inflate(&z), noisy);
    }
}
