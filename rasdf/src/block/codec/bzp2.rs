//! bzp2: one bzip2 stream, decoded a block per thread where
//! [`super::bzp2_parallel_decode`] takes it, else serially, which gives the verdict;
//! written a block per thread by [`super::bzp2_parallel_encode`], bit for bit the serial
//! stream.

use std::io::Write;

use super::{Compression, PIECE, drive, drive_into};
use crate::block::BlockError;

/// [`decode_pieces`](super::decode_pieces) of bzp2: the stream's blocks decoded on the
/// pool's threads and handed on in order ([`super::bzp2_parallel_decode::pieces`]). A
/// stream that path declines, or that fails it part way, is decoded on this thread in
/// pieces of [`PIECE`] bytes, which gives the verdict; bytes the sink already has are not
/// handed to it again.
pub(super) fn bunzip_pieces<E: From<BlockError>, F: FnMut(&[u8]) -> Result<(), E> + ?Sized>(
    input: &[u8],
    data_size: u64,
    sink: &mut F,
) -> Result<(), E> {
    let codec = Compression::Bzp2;
    #[cfg(feature = "parallel-bzip2")]
    let mut skip = match super::bzp2_parallel_decode::pieces(input, data_size, &mut |piece: &[u8]| sink(piece))? {
        super::bzp2_parallel_decode::Streamed::Done => return Ok(()),
        super::bzp2_parallel_decode::Streamed::Declined => 0,
        super::bzp2_parallel_decode::Streamed::FailedAfter(handed) => handed,
    };
    #[cfg(not(feature = "parallel-bzip2"))]
    let mut skip = 0u64;
    let mut d = bzip2::Decompress::new(false);
    let step = |i: &[u8], o: &mut [u8]| bunzip_step(&mut d, i, o);
    // One buffer goes round: taken by the decoder, given back once its bytes are sunk.
    let piece = usize::try_from(data_size).map_or(PIECE, |n| n.clamp(1, PIECE));
    let spare = std::cell::Cell::new(Some(vec![0u8; piece]));
    let window = || spare.take().ok_or_else(|| BlockError::Corrupt { codec, message: "no room to decode into".into() });
    // The sink's error stays here; the decoder is told only to stop.
    let mut stopped = None;
    let finished = |buf: Vec<u8>, n: usize| {
        // The first `skip` bytes went to the sink from the parallel path already.
        let had = usize::try_from(skip).map_or(n, |s| s.min(n));
        skip -= had as u64;
        if had < n
            && let Err(e) = sink(&buf[had..n])
        {
            stopped = Some(e);
            return Err(BlockError::Corrupt { codec, message: "decoding stopped".into() });
        }
        spare.set(Some(buf));
        Ok(())
    };
    let decoded = drive(codec, input, data_size, step, window, finished);
    match stopped {
        Some(e) => Err(e),
        None => decoded.map(drop).map_err(E::from),
    }
}

/// One step of a bzip2 decoder, as [`drive`] takes it.
fn bunzip_step(d: &mut bzip2::Decompress, input: &[u8], out: &mut [u8]) -> Result<(usize, usize, bool), String> {
    let (ti, to) = (d.total_in(), d.total_out());
    let status = d.decompress(input, out).map_err(|e| e.to_string())?;
    let consumed = usize::try_from(d.total_in() - ti).unwrap_or(usize::MAX);
    let produced = usize::try_from(d.total_out() - to).unwrap_or(usize::MAX);
    Ok((consumed, produced, status == bzip2::Status::StreamEnd))
}

/// Decodes a bzip2 stream into `out`, which it must fill exactly: a block per thread
/// where [`super::bzp2_parallel_decode`] takes the stream, else (or should it fail)
/// serially, which gives the verdict.
pub(super) fn bunzip(input: &[u8], out: &mut [u8]) -> Result<(), BlockError> {
    #[cfg(feature = "parallel-bzip2")]
    {
        let mut at = 0;
        let parallel = super::bzp2_parallel_decode::pieces(input, out.len() as u64, &mut |piece: &[u8]| {
            // The parallel path never hands on more than `out` holds.
            let to = out.get_mut(at..at + piece.len()).ok_or(())?;
            to.copy_from_slice(piece);
            at += piece.len();
            Ok::<(), ()>(())
        });
        if parallel == Ok(super::bzp2_parallel_decode::Streamed::Done) {
            return Ok(());
        }
    }
    let mut d = bzip2::Decompress::new(false);
    let step = |i: &[u8], o: &mut [u8]| bunzip_step(&mut d, i, o);
    drive_into(Compression::Bzp2, input, out, step).map(drop)
}

/// [`super::encode`] of bzp2: level 9, as the reference writes it, a block per thread
/// ([`super::bzp2_parallel_encode`]) where that path takes the data, else serially.
pub(super) fn encode(data: &[u8]) -> Result<Vec<u8>, BlockError> {
    let codec = Compression::Bzp2;
    if let Some(stream) = crate::block::pbzip::compress(data, 9) {
        return Ok(stream);
    }
    let mut e = bzip2::write::BzEncoder::new(Vec::with_capacity(data.len() / 2), bzip2::Compression::new(9));
    e.write_all(data).and_then(|_| e.finish()).map_err(|err| io_corrupt(codec, err))
}

fn io_corrupt(codec: Compression, e: std::io::Error) -> BlockError {
    BlockError::Corrupt { codec, message: e.to_string() }
}

#[cfg(all(test, feature = "parallel-bzip2"))]
mod tests {
    use super::super::tests::joined;
    use super::super::{decode, decode_pieces};
    use super::*;

    /// bzp2 in pieces: a stream of several blocks is handed on block by block, a stream
    /// of one in pieces of `PIECE` bytes, with `decode`'s verdicts on wrong sizes; a
    /// block that fails part way is decoded again serially for the verdict, and the sink
    /// never gets a byte twice.
    #[test]
    fn bzp2_pieces_are_its_blocks_in_order() {
        let data = crate::testutil::noise(5 * PIECE, 3);
        let n = data.len() as u64;
        let counted = |stored: &[u8], size: u64| {
            let mut calls = 0;
            let all = joined(|sink| {
                decode_pieces(Compression::Bzp2, stored, size, |p: &[u8]| {
                    calls += 1;
                    sink(p)
                })
            });
            (all, calls)
        };
        // Level 1: blocks of 100 kB, so 13 of them.
        let many = crate::testutil::bzip(&data, 1).unwrap();
        let (all, calls) = counted(&many, n);
        assert!(all.unwrap() == data);
        assert!(calls >= 13, "one piece a block, {calls} pieces");
        // One block (level 9 holds 900 kB of this): decoded here, in pieces.
        let one = crate::testutil::bzip(&data[..800_000], 9).unwrap();
        let (all, calls) = counted(&one, 800_000);
        assert!(all.unwrap() == data[..800_000]);
        assert_eq!(calls, 800_000_usize.div_ceil(PIECE));
        for stored in [&many, &one] {
            let size = if stored == &one { 800_000 } else { n };
            for wrong in [size - 1, size + 1] {
                let whole = decode(Compression::Bzp2, stored, wrong).map(drop);
                assert!(whole.is_err());
                assert_eq!(counted(stored, wrong).0.map(drop), whole, "data_size {wrong} of {size}");
            }
        }
        // The fourth block damaged in its middle: the first three are handed on from the
        // parallel path, the rest decoded serially, which fails at the damage.
        let starts = super::super::bzp2_parallel_decode::block_starts(&many);
        let mut bad = many.clone();
        let mid = usize::try_from((starts[3] + starts[4]) / 16).unwrap();
        bad[mid] ^= 0x40;
        let mut handed = Vec::new();
        let streamed = super::super::bzp2_parallel_decode::pieces(&bad, n, &mut |p: &[u8]| {
            handed.extend_from_slice(p);
            Ok::<(), ()>(())
        });
        assert_eq!(streamed, Ok(super::super::bzp2_parallel_decode::Streamed::FailedAfter(handed.len() as u64)));
        assert!(handed.len() >= 3 * 99_000 && handed == data[..handed.len()]);
        let mut sunk = Vec::new();
        let r = decode_pieces(Compression::Bzp2, &bad, n, |p: &[u8]| {
            sunk.extend_from_slice(p);
            Ok::<(), BlockError>(())
        });
        assert!(matches!(r, Err(BlockError::Corrupt { .. })), "{r:?}");
        assert!(sunk[..handed.len()] == handed[..], "the parallel blocks first");
        assert!(sunk.len() < handed.len() + 101_000, "no block twice: {} after {}", sunk.len(), handed.len());
    }
}
