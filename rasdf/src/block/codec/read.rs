//! A block decoded from a reader of its stored bytes, holding a few megabytes of them at
//! a time, not the whole block: lz4 a window of records at a time (decoded in parallel),
//! zlib through a streaming inflater. Other codecs read the stored bytes whole first.
//! `rasdf.asdf_hook` decodes asdf's blocks this way, into the arrays asdf hands out.

use std::io;

use super::{Compression, decode_into};
use crate::block::BlockError;

/// Stored bytes read at a time (lz4 grows it to hold a longer record): a few of the
/// reference's lz4 records (4 MiB of data each), enough to keep two cores decoding, and
/// less than the reference's own reader holds beside the array.
const WINDOW: usize = 8 << 20;

/// Decodes the `used_size` stored bytes that `read` hands out, in order (as
/// `io::Read::read` does; 0 is the end), into `out`, which must be filled exactly.
///
/// lz4 is the reference's framing only (an LZ4 frame, which [`decode_into`] also takes
/// for ASDF.jl's files, is refused here). zlib: bytes after the stream's end are ignored,
/// as the reference ignores them.
///
/// # Errors
/// `read`'s errors, or stored bytes that end before `used_size`
/// ([`BlockError::Corrupt`]); as [`decode_into`] otherwise.
pub fn decode_read_into(
    codec: Compression,
    read: &mut dyn FnMut(&mut [u8]) -> io::Result<usize>,
    used_size: u64,
    out: &mut [u8],
) -> Result<(), BlockError> {
    let corrupt = |message: String| BlockError::Corrupt { codec, message };
    let used = usize::try_from(used_size).map_err(|_| corrupt(format!("used_size {used_size} does not fit")))?;
    let mut fill = |buf: &mut [u8]| -> Result<(), BlockError> {
        let mut at = 0;
        while at < buf.len() {
            match read(&mut buf[at..]) {
                Ok(0) => return Err(corrupt(format!("the stored bytes end {} bytes early", buf.len() - at))),
                Ok(n) => at += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(corrupt(format!("reading the stored bytes: {e}"))),
            }
        }
        Ok(())
    };
    match codec {
        Compression::Lz4 => lz4_windows(used, &mut fill, out),
        Compression::Zlib => zlib_stream(used, &mut fill, out),
        _ => {
            let mut stored = super::zeroed(used).ok_or_else(|| corrupt(format!("cannot allocate {used} bytes")))?;
            fill(&mut stored)?;
            decode_into(codec, &stored, out)
        }
    }
}

/// lz4 records a window at a time: the whole records of each window decoded in
/// parallel into their part of `out`, a record cut by the window's end kept for the
/// next.
fn lz4_windows(
    used: usize,
    fill: &mut dyn FnMut(&mut [u8]) -> Result<(), BlockError>,
    out: &mut [u8],
) -> Result<(), BlockError> {
    let codec = Compression::Lz4;
    let corrupt = |message: String| BlockError::Corrupt { codec, message };
    let mut buf: Vec<u8> = Vec::new();
    let mut have = 0usize; // bytes in `buf`
    let mut read = 0usize; // stored bytes read so far
    let mut done = 0usize; // decoded bytes written to `out`
    while read < used || have > 0 {
        // Fill the window.
        let want = WINDOW.max(have).min(have + (used - read));
        if buf.len() < want {
            buf.resize(want, 0);
        }
        fill(&mut buf[have..want])?;
        read += want - have;
        have = want;
        if have >= 4 && buf.starts_with(&[0x04, 0x22, 0x4d, 0x18]) {
            return Err(corrupt("an LZ4 frame, not the reference's records".into()));
        }
        // The whole records in it, and their decoded length.
        let (mut end, mut raw) = (0usize, 0usize);
        let mut next_len = None;
        while let Some(head) = buf.get(end..end + 8).filter(|_| end + 8 <= have) {
            let chunk = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
            let raw_len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
            if chunk < 4 {
                return Err(corrupt(format!("record length {chunk}")));
            }
            if end + 4 + chunk > have {
                next_len = Some(4 + chunk);
                break;
            }
            end += 4 + chunk;
            raw = raw.saturating_add(raw_len);
        }
        if end == 0 {
            // Not one whole record: a longer window, unless the stored bytes end here.
            let need = next_len.unwrap_or(8);
            if read == used || need <= have {
                return Err(corrupt("a record cut off at the end of the stored bytes".into()));
            }
            let want = need.min(have + (used - read));
            buf.resize(want, 0);
            fill(&mut buf[have..want])?;
            read += want - have;
            have = want;
            continue;
        }
        let expected = out.len() as u64;
        let target =
            out.get_mut(done..done.saturating_add(raw)).ok_or(BlockError::DecodedTooLong { codec, expected })?;
        decode_into(codec, &buf[..end], target)?;
        done += raw;
        buf.copy_within(end..have, 0);
        have -= end;
        if read == used && have > 0 && have < 8 {
            return Err(corrupt("a record header cut off at the end of the stored bytes".into()));
        }
    }
    if done != out.len() {
        return Err(BlockError::DecodedTooShort { codec, expected: out.len() as u64, got: done as u64 });
    }
    Ok(())
}

/// A zlib stream inflated as it is read, straight into `out`.
fn zlib_stream(
    used: usize,
    fill: &mut dyn FnMut(&mut [u8]) -> Result<(), BlockError>,
    out: &mut [u8],
) -> Result<(), BlockError> {
    let codec = Compression::Zlib;
    let corrupt = |message: String| BlockError::Corrupt { codec, message };
    let mut d = flate2::Decompress::new(true);
    let piece = WINDOW.min(used.max(1)) / 4 + 1;
    let mut buf = vec![0u8; piece.min(used.max(1))];
    let mut read = 0;
    let mut ended = false;
    while read < used && !ended {
        let n = buf.len().min(used - read);
        fill(&mut buf[..n])?;
        read += n;
        let mut input = &buf[..n];
        while !input.is_empty() {
            let (ti, to) = (d.total_in(), d.total_out());
            let at = usize::try_from(to).unwrap_or(usize::MAX).min(out.len());
            let status = d
                .decompress(input, &mut out[at..], flate2::FlushDecompress::None)
                .map_err(|e| corrupt(e.to_string()))?;
            let consumed = usize::try_from(d.total_in() - ti).unwrap_or(usize::MAX);
            let produced = d.total_out() - to;
            input = &input[consumed.min(input.len())..];
            if status == flate2::Status::StreamEnd {
                ended = true;
                break;
            }
            if consumed == 0 && produced == 0 {
                // The output is full and the stream goes on.
                return Err(BlockError::DecodedTooLong { codec, expected: out.len() as u64 });
            }
        }
    }
    let got = d.total_out();
    if !ended {
        return Err(corrupt(format!("the stream does not end ({got} bytes decoded)")));
    }
    if got != out.len() as u64 {
        return Err(BlockError::DecodedTooShort { codec, expected: out.len() as u64, got });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::encode;
    use super::*;

    fn reader(stored: &[u8], step: usize) -> impl FnMut(&mut [u8]) -> io::Result<usize> + '_ {
        let mut at = 0;
        move |buf: &mut [u8]| {
            let n = buf.len().min(step).min(stored.len() - at);
            buf[..n].copy_from_slice(&stored[at..at + n]);
            at += n;
            Ok(n)
        }
    }

    #[test]
    fn decoded_as_decode_into_whatever_the_reads() {
        let data: Vec<u8> = (0..(9 << 20) + 77).map(|i: usize| ((i / 5) as f32).to_le_bytes()[i % 4]).collect();
        for codec in [Compression::Lz4, Compression::Zlib, Compression::Bzp2, Compression::None] {
            let stored = encode(codec, &data).unwrap();
            for step in [1 << 30, 1 << 20, 4099] {
                let mut out = vec![0u8; data.len()];
                decode_read_into(codec, &mut reader(&stored, step), stored.len() as u64, &mut out).unwrap();
                assert!(out == data, "{codec} {step}");
                // One byte short of the data, one byte more, stored bytes cut short.
                let mut short = vec![0u8; data.len() - 1];
                assert!(decode_read_into(codec, &mut reader(&stored, step), stored.len() as u64, &mut short).is_err());
                let mut long = vec![0u8; data.len() + 1];
                assert!(decode_read_into(codec, &mut reader(&stored, step), stored.len() as u64, &mut long).is_err());
                let cut = &stored[..stored.len() - 3];
                assert!(decode_read_into(codec, &mut reader(cut, step), stored.len() as u64, &mut out).is_err());
                assert!(decode_read_into(codec, &mut reader(cut, step), cut.len() as u64, &mut out).is_err());
            }
        }
        // zlib: bytes after the stream are ignored; lz4: an LZ4 frame is refused.
        let mut stored = encode(Compression::Zlib, &data).unwrap();
        stored.extend_from_slice(b"tail");
        let mut out = vec![0u8; data.len()];
        decode_read_into(Compression::Zlib, &mut reader(&stored, 1 << 20), stored.len() as u64, &mut out).unwrap();
        assert!(out == data);
        let frame = [0x04, 0x22, 0x4d, 0x18, 0, 0, 0, 0, 0, 0];
        assert!(decode_read_into(Compression::Lz4, &mut reader(&frame, 10), 10, &mut out).is_err());
    }
}
