//! lz4 in the reference library's framing: records of
//! `[u32 BE length of the rest][u32 LE raw length][raw LZ4 block]`, each of at most
//! [`LZ4_CHUNK`] raw bytes, decoded a record per thread (lz4_flex) and encoded two
//! records at a time ([`super::lz4_encode`]).

use rayon::prelude::*;

use super::{Compression, concat, lz4_encode, memory_size};
use crate::block::BlockError;

/// The LZ4 frame's magic number (0x184D2204, little-endian), first in the stored bytes
/// of a block labelled `lz4\0` by ASDF.jl's `:frame` layout. The reference's framing
/// cannot start so: its first record would be 69 MB long, where a record holds at most
/// 4 MiB compressed to about as much.
const FRAME_MAGIC: [u8; 4] = [0x04, 0x22, 0x4d, 0x18];

/// Whether `stored` is an LZ4 frame (see [`FRAME_MAGIC`]), decoded by [`frame_into`].
fn is_frame(stored: &[u8]) -> bool {
    stored.starts_with(&FRAME_MAGIC)
}

/// An `lz4\0` block that is one LZ4 frame, as an `lz4f` block is decoded.
fn frame_into(stored: &[u8], out: &mut [u8]) -> Result<(), BlockError> {
    #[cfg(feature = "extra-codecs")]
    return super::lz4f::decode(stored, out);
    #[cfg(not(feature = "extra-codecs"))]
    {
        let _ = (stored, out);
        Err(BlockError::Corrupt {
            codec: Compression::Lz4,
            message: "an LZ4 frame (ASDF.jl's frame layout), read only with the feature extra-codecs".into(),
        })
    }
}

/// [`decode_pieces`](super::decode_pieces) of lz4: the records decoded on the pool's
/// threads into buffers that go round, handed to `sink` in order on this one.
pub(super) fn lz4_pieces<E: From<BlockError>, F: FnMut(&[u8]) -> Result<(), E> + ?Sized>(
    input: &[u8],
    data_size: u64,
    sink: &mut F,
) -> Result<(), E> {
    let codec = Compression::Lz4;
    let capacity = memory_size(codec, data_size)?;
    if is_frame(input) {
        let mut out = super::zeroed_output(codec, data_size)?;
        frame_into(input, &mut out)?;
        return sink(&out);
    }
    let records = lz4_records(input, capacity)?;
    let workers = rayon::current_num_threads();
    // The sink's error stays on this thread (it need not be `Send`); the pipeline is told
    // only to stop.
    let mut stopped = None;
    let decoded = crate::pipeline::in_order(
        records.len(),
        workers,
        2 * workers,
        |n, buf| {
            let r = &records[n];
            if buf.len() < r.raw_len {
                buf.resize(r.raw_len, 0);
            }
            lz4_record_into(r, &mut buf[..r.raw_len]).map(|()| r.raw_len)
        },
        |piece| {
            sink(piece).map_err(|e| {
                stopped = Some(e);
                BlockError::Corrupt { codec, message: "decoding stopped".into() }
            })
        },
    );
    match stopped {
        Some(e) => Err(e),
        None => decoded.map_err(E::from),
    }
}

/// One record of the reference's lz4 framing: the raw LZ4 block, its decoded length, and
/// the offset in the input past its end.
struct Lz4Record<'a> {
    block: &'a [u8],
    raw_len: usize,
    end: usize,
}

fn lz4_records(input: &[u8], capacity: usize) -> Result<Vec<Lz4Record<'_>>, BlockError> {
    let codec = Compression::Lz4;
    let corrupt = |message: String| BlockError::Corrupt { codec, message };
    let mut records = Vec::new();
    let mut pos = 0usize;
    let mut total = 0usize;
    while pos < input.len() {
        let head =
            input.get(pos..pos + 8).ok_or_else(|| corrupt(format!("record header cut off at stored byte {pos}")))?;
        let chunk_len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let raw_len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
        if chunk_len < 4 {
            return Err(corrupt(format!("record length {chunk_len} at stored byte {pos}")));
        }
        let end = pos
            .checked_add(4 + chunk_len)
            .filter(|&e| e <= input.len())
            .ok_or_else(|| corrupt(format!("record at stored byte {pos} runs past the end")))?;
        total = total.saturating_add(raw_len);
        if total > capacity {
            return Err(BlockError::DecodedTooLong { codec, expected: capacity as u64 });
        }
        records.push(Lz4Record { block: &input[pos + 8..end], raw_len, end });
        pos = end;
    }
    if total < capacity {
        return Err(BlockError::DecodedTooShort { codec, expected: capacity as u64, got: total as u64 });
    }
    Ok(records)
}

/// The records of a block of the reference's lz4 framing (`stored`, of `data_size`
/// decoded bytes) that hold decoded bytes `want`, decoded in parallel: the decoded
/// offset of the first one and their bytes. Every record's header is read, with the
/// verdicts of decoding the whole block on the framing, but only those records are
/// decoded (an error in another one goes unseen).
///
/// # Errors
/// A framing that does not add up to `data_size`, `want` empty or past its end, a
/// record that fails to decode.
pub(crate) fn lz4_records_covering(
    stored: &[u8],
    data_size: u64,
    want: std::ops::Range<u64>,
) -> Result<(u64, Vec<u8>), BlockError> {
    let codec = Compression::Lz4;
    let capacity = memory_size(codec, data_size)?;
    let records = lz4_records(stored, capacity)?;
    // The records that hold `want`: a run of them, from the one `want` starts in.
    let (mut raw, mut first, mut run) = (0u64, None, 0..0);
    for (i, r) in records.iter().enumerate() {
        let end = raw + r.raw_len as u64;
        if end > want.start && raw < want.end {
            if first.is_none() {
                (first, run) = (Some(raw), i..i);
            }
            run.end = i + 1;
        }
        raw = end;
    }
    let Some(first) = first.filter(|_| want.end <= raw) else {
        return Err(BlockError::Corrupt {
            codec,
            message: format!("bytes {}..{} are past the block's end", want.start, want.end),
        });
    };
    let picked = &records[run];
    let total: usize = picked.iter().map(|r| r.raw_len).sum();
    let mut out = super::zeroed_output(codec, total as u64)?;
    decode_records(picked, &mut out)?;
    Ok((first, out))
}

/// Decodes one record of the reference's lz4 framing, `record` being the whole of it
/// (`[u32 BE length][u32 LE raw length][LZ4 block]`, nothing after), of at most
/// `max_raw` decoded bytes: for reading part of a block record by record.
pub(crate) fn lz4_one_record(record: &[u8], max_raw: usize) -> Result<Vec<u8>, BlockError> {
    let codec = Compression::Lz4;
    let corrupt = |message: String| BlockError::Corrupt { codec, message };
    let head = record.get(..8).ok_or_else(|| corrupt("record header cut off".into()))?;
    let chunk_len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let raw_len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
    if chunk_len < 4 || chunk_len.checked_add(4) != Some(record.len()) {
        return Err(corrupt(format!("record length {chunk_len} for {} bytes", record.len())));
    }
    if raw_len > max_raw {
        return Err(BlockError::DecodedTooLong { codec, expected: max_raw as u64 });
    }
    let mut out = vec![0u8; raw_len];
    lz4_record_into(&Lz4Record { block: &record[8..], raw_len, end: record.len() }, &mut out)?;
    Ok(out)
}

/// Decodes a block of the reference's lz4 framing, of `data_size` decoded bytes (the
/// caller has checked it against its limits: this allocates it), from its stored bytes
/// handed over in order, in pieces of any length, by `feed_all` (a remote block decoded
/// while the rest of it is on its way). Each record is given to the thread pool as
/// soon as its last byte is in, so the records of a piece are decoded while the next
/// pieces arrive; a record cut between pieces is joined first, in a copy of its own.
/// The verdicts are those of decoding the whole block, not always with the same
/// message.
///
/// # Errors
/// `feed_all`'s, or the first thing found wrong with the block.
pub(crate) fn lz4_streamed<E: From<BlockError>>(
    data_size: u64,
    feed_all: impl FnOnce(&mut dyn FnMut(Vec<u8>) -> Result<(), E>) -> Result<(), E>,
) -> Result<Vec<u8>, E> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let codec = Compression::Lz4;
    // Zeroed by the system and advised huge pages: the decoding threads fault its pages
    // in 2 MiB at a time, as they first write them.
    let mut out = super::zeroed_output(codec, data_size)?;
    let capacity = out.len();
    let failed = AtomicBool::new(false);
    let first_error = std::sync::Mutex::new(None);
    let fed = rayon::in_place_scope(|scope| {
        let mut stream = Lz4Stream {
            rest: &mut out[..],
            capacity,
            written: 0,
            carry: Vec::new(),
            consumed: 0,
            failed: &failed,
            first_error: &first_error,
        };
        feed_all(&mut |piece| {
            if failed.load(Ordering::Relaxed) {
                return Err(BlockError::Corrupt { codec, message: "a record failed to decode".into() }.into());
            }
            stream.feed(scope, piece).map_err(E::from)
        })?;
        stream.finish().map_err(E::from)
    });
    // Every record's job has ended here.
    fed?;
    if let Some(e) = first_error.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner) {
        return Err(E::from(e));
    }
    Ok(out)
}

/// The state of [`lz4_streamed`] between two pieces.
struct Lz4Stream<'s> {
    /// The output not yet given to a record.
    rest: &'s mut [u8],
    /// The whole output's length.
    capacity: usize,
    /// Bytes of the output given to records.
    written: usize,
    /// The start of a record that a later piece completes.
    carry: Vec<u8>,
    /// Stored bytes before `carry`.
    consumed: usize,
    /// Set by the first record that fails to decode, whose error is kept.
    failed: &'s std::sync::atomic::AtomicBool,
    first_error: &'s std::sync::Mutex<Option<BlockError>>,
}

impl<'s> Lz4Stream<'s> {
    /// Gives the pool what `piece`, after the pieces before it, completes.
    fn feed(&mut self, scope: &rayon::Scope<'s>, piece: Vec<u8>) -> Result<(), BlockError> {
        let mut at = 0;
        // A record begun in an earlier piece is completed first, from as few of this
        // piece's bytes as it needs.
        if !self.carry.is_empty() {
            loop {
                // Its whole length once its header is in (a length below 4 is whole at
                // once: `whole_records` reports it).
                let c = &self.carry;
                let whole = (c.len() >= 8)
                    .then(|| 4usize.saturating_add(u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as usize));
                if whole.is_some_and(|w| c.len() >= w) {
                    break;
                }
                if at == piece.len() {
                    return Ok(());
                }
                let take = (whole.unwrap_or(8) - c.len()).min(piece.len() - at);
                self.carry.extend_from_slice(&piece[at..at + take]);
                at += take;
            }
            let carried = std::sync::Arc::new(std::mem::take(&mut self.carry));
            self.whole_records(scope, &carried, 0)?;
        }
        let piece = std::sync::Arc::new(piece);
        let used = self.whole_records(scope, &piece, at)?;
        self.carry = piece[used..].to_vec();
        Ok(())
    }

    /// Gives the pool each whole record of `input` from `from` on (stored byte
    /// `consumed` of the block), each with its part of the output; returns where the
    /// first record not whole in `input` begins.
    fn whole_records(
        &mut self,
        scope: &rayon::Scope<'s>,
        input: &std::sync::Arc<Vec<u8>>,
        from: usize,
    ) -> Result<usize, BlockError> {
        let codec = Compression::Lz4;
        let mut pos = from;
        while let Some(head) = input.get(pos..pos + 8) {
            let chunk_len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
            let raw_len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
            if chunk_len < 4 {
                let message = format!("record length {chunk_len} at stored byte {}", self.consumed + pos - from);
                return Err(BlockError::Corrupt { codec, message });
            }
            let Some(end) = pos.checked_add(4 + chunk_len).filter(|&e| e <= input.len()) else { break };
            if raw_len > self.rest.len() {
                return Err(BlockError::DecodedTooLong { codec, expected: self.capacity as u64 });
            }
            let (dst, after) = std::mem::take(&mut self.rest).split_at_mut(raw_len);
            self.rest = after;
            self.written += raw_len;
            let (input, failed, first_error) = (std::sync::Arc::clone(input), self.failed, self.first_error);
            scope.spawn(move |_| {
                if failed.load(std::sync::atomic::Ordering::Relaxed) {
                    return;
                }
                let record = Lz4Record { block: &input[pos + 8..end], raw_len, end };
                if let Err(e) = lz4_record_into(&record, dst) {
                    failed.store(true, std::sync::atomic::Ordering::Relaxed);
                    first_error.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get_or_insert(e);
                }
            });
            pos = end;
        }
        self.consumed += pos - from;
        Ok(pos)
    }

    /// Checks, once every stored byte was fed, that they were whole records filling
    /// the output.
    fn finish(self) -> Result<(), BlockError> {
        let codec = Compression::Lz4;
        if !self.carry.is_empty() {
            let at = self.consumed;
            let message = if self.carry.len() < 8 {
                format!("record header cut off at stored byte {at}")
            } else {
                format!("record at stored byte {at} runs past the end")
            };
            return Err(BlockError::Corrupt { codec, message });
        }
        if self.written < self.capacity {
            return Err(BlockError::DecodedTooShort {
                codec,
                expected: self.capacity as u64,
                got: self.written as u64,
            });
        }
        Ok(())
    }
}

/// Decodes record `r` into `dst`, exactly its decoded length.
fn lz4_record_into(r: &Lz4Record<'_>, dst: &mut [u8]) -> Result<(), BlockError> {
    let n = lz4_flex::block::decompress_into(r.block, dst)
        .map_err(|e| BlockError::Corrupt { codec: Compression::Lz4, message: e.to_string() })?;
    if n != r.raw_len {
        return Err(BlockError::Corrupt {
            codec: Compression::Lz4,
            message: format!("record decodes to {n} bytes, its header says {}", r.raw_len),
        });
    }
    Ok(())
}

pub(super) fn lz4_decode(input: &[u8], out: &mut [u8]) -> Result<(), BlockError> {
    lz4_decode_releasing(input, out, &|_| {})
}

/// Input bytes decoded between two calls of `release` in [`lz4_decode_releasing`]: a
/// few records each for the pool's threads, and a bound on how much of a mapped input
/// is resident at once.
const RELEASE_WINDOW: usize = 16 << 20;

/// [`lz4_decode`], window by window of about [`RELEASE_WINDOW`] input bytes (records
/// decoded in parallel inside each), telling `release` each window's input once done.
pub(super) fn lz4_decode_releasing(
    input: &[u8],
    out: &mut [u8],
    release: &(dyn Fn(std::ops::Range<usize>) + Sync),
) -> Result<(), BlockError> {
    if is_frame(input) {
        let decoded = frame_into(input, out);
        release(0..input.len());
        return decoded;
    }
    let records = lz4_records(input, out.len())?;
    let mut out = out;
    let mut done = 0;
    let mut rest = &records[..];
    while !rest.is_empty() {
        let take = rest.iter().position(|r| r.end - done >= RELEASE_WINDOW).map_or(rest.len(), |i| i + 1);
        let (window, later) = rest.split_at(take);
        let raw: usize = window.iter().map(|r| r.raw_len).sum();
        let (head, tail) = std::mem::take(&mut out).split_at_mut(raw);
        decode_records(window, head)?;
        let end = window.last().map_or(done, |r| r.end);
        release(done..end);
        (done, rest, out) = (end, later, tail);
    }
    Ok(())
}

/// Decodes `records` into `out`, which holds exactly their decoded bytes, in parallel.
fn decode_records(records: &[Lz4Record<'_>], out: &mut [u8]) -> Result<(), BlockError> {
    // Split the output into one disjoint slice per record, then decode in parallel.
    let mut slices = Vec::with_capacity(records.len());
    let mut rest = out;
    for r in records {
        let (head, tail) = rest.split_at_mut(r.raw_len);
        slices.push(head);
        rest = tail;
    }
    let one = |(r, dst): (&Lz4Record, &mut [u8])| lz4_record_into(r, dst);
    // A single record (small blocks) is decoded here: no pool to start.
    if records.len() == 1 {
        return records.iter().zip(slices).try_for_each(one);
    }
    records.par_iter().zip(slices.into_par_iter()).try_for_each(one)
}

/// Chunk size of the reference's lz4 writer (`compression_block_size`, 4 MiB).
pub const LZ4_CHUNK: usize = 1 << 22;

/// [`super::encode`] of lz4: records of [`LZ4_CHUNK`] bytes, as the reference writes
/// them.
pub(super) fn encode(data: &[u8]) -> Result<Vec<u8>, BlockError> {
    // Records two at a time (see `lz4_records_into`), the pairs in parallel.
    let parts: Vec<Vec<u8>> = data
        .par_chunks(2 * LZ4_CHUNK)
        .map(|pair| {
            let mut buf = Vec::new();
            let [first, second] = lz4_records_into(pair, &mut buf)?;
            buf.copy_within(second.clone(), first.end);
            buf.truncate(first.end + second.len());
            Ok(buf)
        })
        .collect::<Result<_, BlockError>>()?;
    Ok(concat(&parts))
}

/// The records of the reference's lz4 framing for `bytes` (at most two [`LZ4_CHUNK`]s),
/// `[u32 BE length of the rest][u32 LE raw length][raw LZ4 block]` each, written into
/// `buf` (grown when too short, else reused as it is); returns where each record is in
/// it (the second is empty when `bytes` fits one record). Two records are compressed
/// together by rasdf's encoder, their work interleaved (see [`lz4_encode`]): about 25 %
/// faster on array data than lz4_flex's encoder one after the other; a record alone
/// (a block of 4 MiB or less, the last of an odd count) is lz4_flex's, which is the
/// faster on a single input.
pub(crate) fn lz4_records_into(bytes: &[u8], buf: &mut Vec<u8>) -> Result<[std::ops::Range<usize>; 2], BlockError> {
    let codec = Compression::Lz4;
    if bytes.len() > 2 * LZ4_CHUNK {
        return Err(BlockError::Corrupt { codec, message: "an lz4 record holds at most 4 MiB".into() });
    }
    let (a, b) = bytes.split_at(bytes.len().min(LZ4_CHUNK));
    let room_a = 8 + lz4_encode::max_compressed_len(a.len()).max(lz4_flex::block::get_maximum_output_size(a.len()));
    let room_b = if b.is_empty() { 0 } else { 8 + lz4_encode::max_compressed_len(b.len()) };
    // Compressed straight into the records. A buffer too short is replaced by a fresh
    // one, zeroed by the system as its pages are first written, not all at once as
    // growing it would (in the 256 MiB benchmark write, a piece compressed into a
    // buffer just grown took 15 ms against 11-12 ms in a used one; huge pages for the
    // buffers were no faster).
    if buf.len() < room_a + room_b {
        *buf = vec![0; room_a + room_b];
    }
    let (rec_a, rec_b) = buf.split_at_mut(room_a);
    let lens = if b.is_empty() {
        // A record alone: lz4_flex's encoder, faster than rasdf's on one input.
        lz4_flex::block::compress_into(a, &mut rec_a[8..]).ok().map(|na| (na, 0))
    } else {
        lz4_encode::compress_pair(a, &mut rec_a[8..], b, &mut rec_b[8..room_b])
    };
    let Some((na, nb)) = lens else {
        return Err(BlockError::Corrupt { codec, message: "no room for an lz4 record".into() });
    };
    lz4_frame(&mut rec_a[..8], a.len(), na)?;
    if b.is_empty() {
        return Ok([0..8 + na, room_a..room_a]);
    }
    lz4_frame(&mut rec_b[..8], b.len(), nb)?;
    Ok([0..8 + na, room_a..room_a + 8 + nb])
}

/// The 8 bytes that open a record of `raw` bytes compressed to `compressed`.
fn lz4_frame(head: &mut [u8], raw: usize, compressed: usize) -> Result<(), BlockError> {
    let too_long = || BlockError::Corrupt { codec: Compression::Lz4, message: "lz4 record too long".into() };
    let raw = u32::try_from(raw).map_err(|_| too_long())?;
    let rest = u32::try_from(compressed + 4).map_err(|_| too_long())?;
    head[..4].copy_from_slice(&rest.to_be_bytes());
    head[4..8].copy_from_slice(&raw.to_le_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{Compression, decode, decode_releasing, encode};

    #[test]
    fn lz4_framing_matches_the_reference_bytes() {
        // int32 0..8, as the reference library writes it (reference notes 2.3).
        let data: Vec<u8> = (0..8i32).flat_map(|i| i.to_le_bytes()).collect();
        let enc = encode(Compression::Lz4, &data).unwrap();
        assert_eq!(&enc[..8], &[0, 0, 0, 0x26, 0x20, 0, 0, 0]);
        assert_eq!(decode(Compression::Lz4, &enc, 32).unwrap(), data);
    }

    #[test]
    fn decoding_fed_pieces_gives_the_whole_block_decoders_verdict() {
        use crate::block::BlockError;
        // Three records and a short one, of compressible and noisy data.
        let mut data = crate::samples::noise(6 << 20, 3);
        data.extend((0..(6u32 << 20) + 1000).map(|i| (i / 7).to_le_bytes()[0]));
        let good = encode(Compression::Lz4, &data).unwrap();
        let size = data.len() as u64;
        let mut cases: Vec<(String, Vec<u8>, u64)> = vec![("good".into(), good.clone(), size)];
        cases.push(("cut in a record".into(), good[..good.len() - 100].to_vec(), size));
        cases.push(("only 5 bytes".into(), good[..5].to_vec(), size));
        cases.push(("a byte after".into(), [&good[..], &[0]].concat(), size));
        cases.push(("data_size too small".into(), good.clone(), size - 1));
        cases.push(("data_size too large".into(), good.clone(), size + 1));
        let mut bad_len = good.clone();
        bad_len[..4].copy_from_slice(&3u32.to_be_bytes());
        cases.push(("record length 3".into(), bad_len, size));
        let mut bad_raw = good.clone();
        bad_raw[4..8].copy_from_slice(&((4u32 << 20) - 1).to_le_bytes());
        cases.push(("raw length off by one".into(), bad_raw, size));
        let mut bad_body = good.clone();
        let second = 4 + u32::from_be_bytes(good[..4].try_into().unwrap()) as usize;
        for b in &mut bad_body[second + 8..second + 64] {
            *b = 0xff;
        }
        cases.push(("a garbled record".into(), bad_body, size));
        // Pieces of fixed lengths, and pieces cut inside each record's header (3 and 6
        // bytes in) and in its middle.
        let mut cuts = Vec::new();
        let mut at = 0;
        while at < good.len() {
            let len = 4 + u32::from_be_bytes(good[at..at + 4].try_into().unwrap()) as usize;
            cuts.extend([at + 3, at + 6, at + len / 2]);
            at += len;
        }
        let splits: Vec<(String, Vec<usize>)> = [1000usize, 100_000, 3 << 20, 8 << 20]
            .into_iter()
            .map(|n| (format!("pieces of {n}"), (1..).map(|k| k * n).take_while(|&c| c < good.len() + n).collect()))
            .chain([("cut in headers".to_string(), cuts)])
            .collect();
        for (name, stored, data_size) in &cases {
            let whole = decode(Compression::Lz4, stored, *data_size);
            for (how, cuts) in &splits {
                let streamed = super::lz4_streamed::<BlockError>(*data_size, |feed| {
                    let mut from = 0;
                    for &c in cuts.iter().chain([&stored.len()]) {
                        let to = c.min(stored.len());
                        if to > from {
                            feed(stored[from..to].to_vec())?;
                            from = to;
                        }
                    }
                    Ok(())
                });
                match (&whole, &streamed) {
                    (Ok(a), Ok(b)) => assert!(a == b, "{name}, {how}: different bytes"),
                    (Err(_), Err(_)) => {}
                    _ => panic!("{name}, {how}: whole {:?}, streamed {:?}", whole.is_ok(), streamed.is_ok()),
                }
            }
            assert_eq!(whole.is_ok(), name == "good", "{name}");
        }
    }

    #[cfg(not(feature = "extra-codecs"))]
    #[test]
    fn an_lz4_frame_without_extra_codecs_is_a_clear_error() {
        // The magic number, a descriptor, an end mark: an empty LZ4 frame.
        let frame = [0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82, 0, 0, 0, 0];
        let e = decode(Compression::Lz4, &frame, 0).unwrap_err();
        assert!(e.to_string().contains("LZ4 frame") && e.to_string().contains("extra-codecs"), "{e}");
    }

    #[test]
    fn decoding_releases_the_input_window_by_window_in_order() {
        // 40 MiB of noisy data: 10 records, compressed to about their size, so several
        // windows of RELEASE_WINDOW input bytes.
        let data = crate::samples::noise(40 << 20, 7);
        let enc = encode(Compression::Lz4, &data).unwrap();
        let released = std::sync::Mutex::new(Vec::new());
        let record = |r: std::ops::Range<usize>| released.lock().unwrap().push(r);
        let out = decode_releasing(Compression::Lz4, &enc, data.len() as u64, Some(&record)).unwrap();
        assert!(out == data);
        let released = released.into_inner().unwrap();
        assert!(released.len() >= 2, "{released:?}");
        // Contiguous, in order, the whole input, each window at least RELEASE_WINDOW but
        // the last, and at most one record more.
        assert_eq!(released.first().unwrap().start, 0);
        assert_eq!(released.last().unwrap().end, enc.len());
        for w in released.windows(2) {
            assert_eq!(w[0].end, w[1].start);
        }
        for r in &released[..released.len() - 1] {
            assert!(r.len() >= super::RELEASE_WINDOW && r.len() < super::RELEASE_WINDOW + (5 << 20), "{r:?}");
        }
    }
}
