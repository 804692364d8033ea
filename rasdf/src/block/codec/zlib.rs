//! zlib: one RFC 1950 stream, inflated by libdeflate into the whole block at once (on
//! several threads when rasdf wrote it, [`super::zlib_parallel`]), or piece by piece by a
//! job on the rayon pool when the block is large; written on several threads by
//! [`super::zlib_parallel`].

use super::{Compression, PIECE, decode, drive, drive_into};
use crate::block::BlockError;

/// zlib blocks at least this large are inflated piece by piece by
/// [`decode_pieces`](super::decode_pieces); smaller ones whole, where a thread would cost
/// more than it saves.
pub(super) const PIECES_ZLIB: u64 = 16 << 20;

/// The deflate stream inside a zlib stream whose two-byte header (RFC 1950) is the plain
/// one: deflate, a window of at most 32 KiB, no preset dictionary, and the check bits.
/// Other streams (the reference never writes them) take the plain path and its errors.
fn plain_zlib_body(input: &[u8]) -> Option<&[u8]> {
    match input {
        [cmf, flg, body @ ..]
            if cmf & 0x0f == 8
                && cmf >> 4 <= 7
                && flg & 0x20 == 0
                && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0 =>
        {
            Some(body)
        }
        _ => None,
    }
}

/// [`decode_pieces`](super::decode_pieces) of a zlib stream: inflated by a job on the
/// rayon pool into [`PIECE`]-byte buffers that go round, its Adler-32 and `sink` on this
/// thread, so that the two overlap. Should no worker take the job by the time the first
/// piece is wanted (the pool busy, or this thread its only worker), this thread inflates
/// and sinks in turn itself, and the job, when it runs, finds nothing to do: the
/// calling thread never waits for a job that has not started.
pub(super) fn inflate_pieces<E: From<BlockError>, F: FnMut(&[u8]) -> Result<(), E> + ?Sized>(
    input: &[u8],
    data_size: u64,
    sink: &mut F,
) -> Result<(), E> {
    use std::sync::atomic::{AtomicBool, Ordering};
    /// Buffers going round: the decoder can run this far ahead of the sink.
    const SLOTS: usize = 4;
    /// How long the first piece is waited for before this thread takes the decoding.
    const START_WAIT: std::time::Duration = std::time::Duration::from_millis(2);
    let codec = Compression::Zlib;
    let Some(deflate) = plain_zlib_body(input) else {
        return sink(&decode(codec, input, data_size)?);
    };
    let corrupt = |message: &str| BlockError::Corrupt { codec, message: message.into() };
    // Whoever sets it first decodes: the job, or this thread.
    let claimed = AtomicBool::new(false);
    let outcome = std::sync::Mutex::new(None::<Result<usize, BlockError>>);
    let mut adler = 1u32;
    let mut result: Result<(), E> = Ok(());
    // What this thread decoded itself, if it took the decoding.
    let mut here = None;
    rayon::in_place_scope(|scope| {
        let (full, filled) = std::sync::mpsc::sync_channel::<(Vec<u8>, usize)>(SLOTS);
        let (free, freed) = std::sync::mpsc::channel::<Vec<u8>>();
        let (claimed, outcome) = (&claimed, &outcome);
        scope.spawn(move |_| {
            if claimed.swap(true, Ordering::AcqRel) {
                return;
            }
            let mut d = flate2::Decompress::new(false);
            let mut fresh = SLOTS;
            let window = || match freed.try_recv() {
                Ok(buf) => Ok(buf),
                Err(_) if fresh > 0 => {
                    fresh -= 1;
                    Ok(vec![0u8; PIECE])
                }
                // The sink stopped (and dropped its sender): so does the decoder.
                Err(_) => freed.recv().map_err(|_| corrupt("decoding stopped")),
            };
            let finished = |buf, n| full.send((buf, n)).map_err(|_| corrupt("decoding stopped"));
            let consumed = drive(codec, deflate, data_size, |i, o| inflate_step(&mut d, i, o), window, finished);
            *outcome.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(consumed);
        });
        let mut first = match filled.recv_timeout(START_WAIT) {
            Ok(piece) => Some(piece),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) if !claimed.swap(true, Ordering::AcqRel) => {
                // Now, while the job waits in the queue (it then finds nothing to do).
                here = Some(inflate_pieces_here(deflate, data_size, &mut adler, sink));
                return;
            }
            // The job has started (or ended): its pieces come through the channel.
            Err(_) => None,
        };
        let mut free = Some(free);
        // Ends when the decoder is done (its sender dropped), whatever the sink did.
        while let Some((buf, n)) = first.take().or_else(|| filled.recv().ok()) {
            if result.is_ok() {
                adler = zlib_rs::adler32::adler32(adler, &buf[..n]);
                result = sink(&buf[..n]);
                if result.is_err() {
                    free = None;
                }
            }
            if let Some(f) = &free {
                let _ = f.send(buf);
            }
        }
    });
    let consumed = if let Some(decoded) = here {
        decoded?
    } else {
        let decoded = outcome.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
        result?;
        decoded.ok_or_else(|| corrupt("the decoding job failed"))??
    };
    let trailer =
        deflate.get(consumed..consumed + 4).ok_or_else(|| corrupt("incomplete stream: no Adler-32 at its end"))?;
    if trailer != adler.to_be_bytes() {
        return Err(corrupt("incorrect data check (Adler-32)").into());
    }
    Ok(())
}

/// [`inflate_pieces`] on this thread alone: a piece inflated, then sunk, in turn, one
/// buffer going round. Returns the deflate bytes consumed.
fn inflate_pieces_here<E: From<BlockError>, F: FnMut(&[u8]) -> Result<(), E> + ?Sized>(
    deflate: &[u8],
    data_size: u64,
    adler: &mut u32,
    sink: &mut F,
) -> Result<usize, E> {
    let codec = Compression::Zlib;
    let mut d = flate2::Decompress::new(false);
    let spare = std::cell::Cell::new(Some(vec![0u8; PIECE]));
    let window = || spare.take().ok_or_else(|| BlockError::Corrupt { codec, message: "no room to decode into".into() });
    // The sink's error stays here; the decoder is told only to stop.
    let mut stopped = None;
    let finished = |buf: Vec<u8>, n: usize| {
        *adler = zlib_rs::adler32::adler32(*adler, &buf[..n]);
        if let Err(e) = sink(&buf[..n]) {
            stopped = Some(e);
            return Err(BlockError::Corrupt { codec, message: "decoding stopped".into() });
        }
        spare.set(Some(buf));
        Ok(())
    };
    let decoded = drive(codec, deflate, data_size, |i, o| inflate_step(&mut d, i, o), window, finished);
    match stopped {
        Some(e) => Err(e),
        None => decoded.map_err(E::from),
    }
}

/// One step of a zlib (or raw deflate) decoder, as [`drive`] takes it.
fn inflate_step(d: &mut flate2::Decompress, input: &[u8], out: &mut [u8]) -> Result<(usize, usize, bool), String> {
    let (ti, to) = (d.total_in(), d.total_out());
    let status = d.decompress(input, out, flate2::FlushDecompress::None).map_err(|e| e.to_string())?;
    let consumed = usize::try_from(d.total_in() - ti).unwrap_or(usize::MAX);
    let produced = usize::try_from(d.total_out() - to).unwrap_or(usize::MAX);
    Ok((consumed, produced, status == flate2::Status::StreamEnd))
}

/// Inflates a zlib stream into `out`, which it must fill exactly (bytes after the stream
/// are ignored, as the reference does). Plain streams go to libdeflate, which decodes
/// into the whole output at once and checks the Adler-32 there: about twice as fast as
/// a streaming inflater. Others (a preset dictionary) get zlib-rs's verdict.
pub(super) fn inflate(input: &[u8], out: &mut [u8]) -> Result<(), BlockError> {
    if inflate_parallel(input, out) {
        return Ok(());
    }
    inflate_serial(input, out)
}

/// Whether `input` was inflated into `out` on several threads: a plain stream made of
/// pieces that decode on their own, as rasdf writes them
/// ([`super::zlib_parallel::inflate`]). `false` leaves the verdict to [`inflate_serial`].
pub(super) fn inflate_parallel(input: &[u8], out: &mut [u8]) -> bool {
    match plain_zlib_body(input) {
        Some(body) if body.len() >= 4 => {
            let (deflate, trailer) = body.split_at(body.len() - 4);
            let adler = u32::from_be_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
            super::zlib_parallel::inflate(deflate, adler, out)
        }
        _ => false,
    }
}

/// [`inflate`] on this thread alone.
pub(super) fn inflate_serial(input: &[u8], out: &mut [u8]) -> Result<(), BlockError> {
    let codec = Compression::Zlib;
    let expected = out.len() as u64;
    if plain_zlib_body(input).is_none() {
        let mut d = flate2::Decompress::new(true);
        return drive_into(codec, input, out, |i, o| inflate_step(&mut d, i, o)).map(drop);
    }
    match libdeflater::Decompressor::new().zlib_decompress(input, out) {
        Ok(n) if n as u64 == expected => Ok(()),
        Ok(n) => Err(BlockError::DecodedTooShort { codec, expected, got: n as u64 }),
        Err(libdeflater::DecompressionError::InsufficientSpace) => Err(BlockError::DecodedTooLong { codec, expected }),
        Err(libdeflater::DecompressionError::BadData) => {
            Err(BlockError::Corrupt { codec, message: "invalid or truncated deflate data, or a wrong Adler-32".into() })
        }
    }
}

/// [`super::encode`] of zlib: level 6, as the reference writes it, deflated on several
/// threads into one stream ([`super::zlib_parallel`]).
pub(super) fn encode(data: &[u8]) -> Result<Vec<u8>, BlockError> {
    let codec = Compression::Zlib;
    super::zlib_parallel::compress(data, 6).map_err(|message| BlockError::Corrupt { codec, message })
}

#[cfg(test)]
mod tests {
    use super::super::{decode, encode};
    use super::*;

    /// Large streams from another encoder (flate2: one stream without sync points) read
    /// back, and damaged ones fail, each with its own error.
    #[test]
    fn large_zlib_blocks_from_another_encoder() {
        use std::io::Write as _;
        let data: Vec<u8> = (0..u32::try_from(3 * 1_000_003).unwrap())
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 27).to_le_bytes()[0])
            .collect();
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(1));
        e.write_all(&data).unwrap();
        let enc = e.finish().unwrap();
        let n = data.len() as u64;
        let z = Compression::Zlib;
        assert!(decode(z, &enc, n).unwrap() == data);
        assert!(matches!(decode(z, &enc, n - 1), Err(BlockError::DecodedTooLong { .. })));
        assert!(matches!(decode(z, &enc, n + 1), Err(BlockError::DecodedTooShort { .. })));
        assert!(decode(z, &enc[..enc.len() / 2], n).is_err(), "truncated");
        assert!(decode(z, &enc[..enc.len() - 2], n).is_err(), "Adler-32 cut short");
        let mut bad = enc.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert!(matches!(decode(z, &bad, n), Err(BlockError::Corrupt { .. })), "wrong Adler-32");
        // Trailing bytes after the stream are ignored, as before.
        let mut longer = enc.clone();
        longer.extend_from_slice(b"tail");
        assert!(decode(z, &longer, n).unwrap() == data);
        // A preset-dictionary flag or a bad header check: the plain path's error.
        let mut dict = enc.clone();
        dict[1] |= 0x20;
        assert!(decode(z, &dict, n).is_err());
        // Our own parallel deflate (sync points, combined Adler-32) reads back too.
        assert!(decode(z, &encode(z, &data).unwrap(), n).unwrap() == data);
    }

    #[test]
    fn zlib_bomb_stops_at_data_size() {
        let zeros = vec![0u8; 50 << 20];
        let enc = encode(Compression::Zlib, &zeros).unwrap();
        assert!(enc.len() < 100_000);
        assert!(matches!(decode(Compression::Zlib, &enc, 1024), Err(BlockError::DecodedTooLong { .. })));
    }
}
