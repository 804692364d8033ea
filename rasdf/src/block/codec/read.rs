//! A block decoded from a reader of its stored bytes, holding a few megabytes of them at
//! a time, not the whole block: lz4 a window of records at a time (decoded in parallel),
//! zlib through a streaming inflater. Other codecs read the stored bytes whole first.
//! `rasdf.asdf_hook` decodes asdf's blocks this way, into the arrays asdf hands out.

use std::io;

use super::{Compression, decode_into};
use crate::block::BlockError;

/// Stored bytes read at a time (lz4 grows it to hold a longer record): lz4 holds two
/// windows, one decoding while the next is read; each holds two or three of the
/// reference's lz4 records (4 MiB of data each) at the usual ratios, enough to keep two
/// cores decoding, and both less than the reference's own reader holds beside the array.
const WINDOW: usize = 4 << 20;

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
            let mut stored = super::zeroed(used).ok_or(BlockError::NoMemory { codec, bytes: used as u64 })?;
            fill(&mut stored)?;
            decode_into(codec, &stored, out)
        }
    }
}

/// lz4 records a window at a time: the whole records of each window decoded in
/// parallel into their part of `out` on the pool's threads while this thread reads the
/// next window into a second buffer; a record cut by a window's end starts the next.
fn lz4_windows(
    used: usize,
    fill: &mut dyn FnMut(&mut [u8]) -> Result<(), BlockError>,
    out: &mut [u8],
) -> Result<(), BlockError> {
    let codec = Compression::Lz4;
    let corrupt = |message: String| BlockError::Corrupt { codec, message };
    let expected = out.len() as u64;
    // The window being decoded and the one being read; `have` bytes of `cur` are read.
    let (mut cur, mut next): (Vec<u8>, Vec<u8>) = (Vec::new(), Vec::new());
    let mut have = 0usize;
    let mut read = 0usize; // stored bytes read so far
    let mut done = 0usize; // decoded bytes written to `out`
    let mut first = true;
    while read < used || have > 0 {
        // Read on until `cur` holds a whole record (a window, or a record longer than one).
        let mut want = WINDOW.max(have).min(have + (used - read));
        let (end, raw) = loop {
            if cur.len() < want {
                cur.resize(want, 0);
            }
            fill(&mut cur[have..want])?;
            read += want - have;
            have = want;
            if first && have >= 4 && cur.starts_with(&[0x04, 0x22, 0x4d, 0x18]) {
                return Err(corrupt("an LZ4 frame, not the reference's records".into()));
            }
            first = false;
            match whole_records(&cur[..have])? {
                (0, _, need) => {
                    // Not one whole record: a longer window, unless the stored bytes end here.
                    let need = need.unwrap_or(8);
                    if read == used || need <= have {
                        return Err(corrupt("a record cut off at the end of the stored bytes".into()));
                    }
                    want = need.min(have + (used - read));
                }
                (end, raw, _) => break (end, raw),
            }
        };
        let target =
            out.get_mut(done..done.saturating_add(raw)).ok_or(BlockError::DecodedTooLong { codec, expected })?;
        // What follows the whole records starts the next window, read meanwhile.
        let left = have - end;
        let next_want = WINDOW.max(left).min(left + (used - read));
        if next.len() < next_want {
            next.resize(next_want, 0);
        }
        next[..left].copy_from_slice(&cur[end..have]);
        let mut decoded = Ok(());
        let mut filled = Ok(());
        rayon::in_place_scope(|scope| {
            let (records, decoded) = (&cur[..end], &mut decoded);
            scope.spawn(move |_| *decoded = decode_into(codec, records, target));
            filled = fill(&mut next[left..next_want]);
        });
        decoded?;
        filled?;
        read += next_want - left;
        done += raw;
        std::mem::swap(&mut cur, &mut next);
        have = next_want;
        if read == used && have > 0 && have < 8 {
            return Err(corrupt("a record header cut off at the end of the stored bytes".into()));
        }
    }
    if done != out.len() {
        return Err(BlockError::DecodedTooShort { codec, expected, got: done as u64 });
    }
    Ok(())
}

/// The whole records at the start of `buf`: their length in bytes, their decoded
/// length, and the length of the record cut off after them (when its header is whole).
fn whole_records(buf: &[u8]) -> Result<(usize, usize, Option<usize>), BlockError> {
    let (mut end, mut raw) = (0usize, 0usize);
    while let Some(head) = buf.get(end..end + 8) {
        let chunk = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let raw_len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
        if chunk < 4 {
            return Err(BlockError::Corrupt { codec: Compression::Lz4, message: format!("record length {chunk}") });
        }
        if end + 4 + chunk > buf.len() {
            return Ok((end, raw, Some(4 + chunk)));
        }
        end += 4 + chunk;
        raw = raw.saturating_add(raw_len);
    }
    Ok((end, raw, None))
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

    /// lz4 over many windows: records longer than a window (noise), records cut by the
    /// windows' ends (half noise), many records a window; every read size.
    #[test]
    fn lz4_windows_of_every_shape() {
        let mut x = 99u64;
        let mut noise = move || {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (x >> 56).to_le_bytes()[0]
        };
        let n: usize = (18 << 20) + 333;
        let datasets: Vec<Vec<u8>> = vec![
            (0..n).map(|_| noise()).collect(),
            (0..n).map(|i| if i % 2 == 0 { noise() } else { (i / 1000).to_le_bytes()[0] }).collect(),
            (0..n).map(|i| (i / 3000).to_le_bytes()[0]).collect(),
        ];
        for data in &datasets {
            let stored = encode(Compression::Lz4, data).unwrap();
            for step in [1 << 30, 3 << 20, 65_537] {
                let mut out = vec![0u8; data.len()];
                decode_read_into(Compression::Lz4, &mut reader(&stored, step), stored.len() as u64, &mut out).unwrap();
                assert!(out == *data, "{} stored bytes, reads of {step}", stored.len());
                let cut = &stored[..stored.len() - 5];
                assert!(
                    decode_read_into(Compression::Lz4, &mut reader(cut, step), cut.len() as u64, &mut out).is_err()
                );
                let mut short = vec![0u8; data.len() - 1];
                let mut r = reader(&stored, step);
                assert!(decode_read_into(Compression::Lz4, &mut r, stored.len() as u64, &mut short).is_err());
            }
        }
    }
}
