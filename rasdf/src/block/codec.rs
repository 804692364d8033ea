//! Block codecs: zlib, bzp2 and lz4 in the reference library's own framing.
//!
//! Every decoder writes into a buffer of exactly `data_size` bytes and fails when the
//! stream holds more or fewer (reference notes 2.2-2.3): a decompression bomb stops at
//! `data_size`, never later.

use std::fmt;
use std::io::Write;

use rayon::prelude::*;

use super::BlockError;

/// A block's compression label. Unknown labels stay representable; they fail only when
/// the block is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    /// `\0\0\0\0`: stored as is.
    None,
    /// `zlib`: one RFC 1950 zlib stream.
    Zlib,
    /// `bzp2`: one bzip2 stream.
    Bzp2,
    /// `lz4\0`: records of `[u32 BE length][u32 LE raw length][raw LZ4 block]`.
    Lz4,
    /// Any other label, kept as its four bytes.
    Other([u8; 4]),
}

impl Compression {
    /// The compression for a 4-byte label from a block header.
    pub fn from_label(label: [u8; 4]) -> Self {
        match &label {
            b"\0\0\0\0" => Compression::None,
            b"zlib" => Compression::Zlib,
            b"bzp2" => Compression::Bzp2,
            b"lz4\0" => Compression::Lz4,
            _ => Compression::Other(label),
        }
    }

    /// The compression for a name as used on the command line and in the reference
    /// library (`zlib`, `bzp2`, `lz4`, `none`).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "" | "none" => Some(Compression::None),
            "zlib" => Some(Compression::Zlib),
            "bzp2" => Some(Compression::Bzp2),
            "lz4" => Some(Compression::Lz4),
            _ => None,
        }
    }

    /// The 4-byte label written in block headers.
    pub fn label(self) -> [u8; 4] {
        match self {
            Compression::None => *b"\0\0\0\0",
            Compression::Zlib => *b"zlib",
            Compression::Bzp2 => *b"bzp2",
            Compression::Lz4 => *b"lz4\0",
            Compression::Other(l) => l,
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Compression::None => f.write_str("none"),
            Compression::Zlib => f.write_str("zlib"),
            Compression::Bzp2 => f.write_str("bzp2"),
            Compression::Lz4 => f.write_str("lz4"),
            Compression::Other(l) => {
                let trimmed: Vec<u8> = l.iter().copied().take_while(|&b| b != 0).collect();
                match std::str::from_utf8(&trimmed) {
                    Ok(s) if s.chars().all(|c| c.is_ascii_graphic()) && !s.is_empty() => {
                        write!(f, "'{s}'")
                    }
                    _ => write!(f, "{l:02x?}"),
                }
            }
        }
    }
}

/// `data_size` as a length in memory, or why it cannot be one.
fn memory_size(codec: Compression, data_size: u64) -> Result<usize, BlockError> {
    usize::try_from(data_size)
        .map_err(|_| BlockError::Corrupt { codec, message: format!("data_size {data_size} does not fit in memory") })
}

/// Decodes `stored` bytes compressed with `codec` into exactly `data_size` bytes.
///
/// The caller checks `data_size` against its limits first: this allocates it.
///
/// # Errors
/// [`BlockError::UnknownCompression`], [`BlockError::Corrupt`],
/// [`BlockError::DecodedTooLong`], [`BlockError::DecodedTooShort`].
pub fn decode(codec: Compression, stored: &[u8], data_size: u64) -> Result<Vec<u8>, BlockError> {
    let n = memory_size(codec, data_size)?;
    let cannot = || BlockError::Corrupt { codec, message: format!("cannot allocate data_size {data_size} bytes") };
    let mut out = zeroed(n).ok_or_else(cannot)?;
    if codec == Compression::Zlib {
        // One thread inflates: the other makes the output's pages present ahead of it
        // (the whole buffer is filled, so it may run as far ahead as it can).
        let helper = crate::hugepages::Prefault::whole(out.as_ptr(), n);
        let inflated = inflate(stored, &mut out);
        drop(helper);
        inflated?;
    } else {
        decode_into(codec, stored, &mut out)?;
    }
    Ok(out)
}

/// `n` zero bytes, asked of the allocator as zeroed memory: a large buffer then comes
/// fresh from the system, already zero, and no page of it is touched (so none faults in)
/// until the decoder writes it, on whichever thread does; filling it with zeros first
/// would fault in every page on this thread, then write it twice. `None` when the
/// allocation fails.
pub fn zeroed(n: usize) -> Option<Vec<u8>> {
    if n == 0 {
        return Some(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u8>(n).ok()?;
    // SAFETY: the layout's size is not zero.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    if ptr.is_null() {
        return None;
    }
    crate::hugepages::advise(ptr, n);
    // SAFETY: `ptr` comes from the global allocator with the layout of `n` bytes of
    // alignment 1, and all `n` bytes are initialized (zero).
    Some(unsafe { Vec::from_raw_parts(ptr, n, n) })
}

/// Decodes `stored` into `out`, which must be filled exactly.
///
/// # Errors
/// As [`decode`].
pub fn decode_into(codec: Compression, stored: &[u8], out: &mut [u8]) -> Result<(), BlockError> {
    match codec {
        Compression::None => {
            if stored.len() != out.len() {
                return Err(BlockError::SizeMismatch { used: stored.len() as u64, data: out.len() as u64 });
            }
            out.copy_from_slice(stored);
            Ok(())
        }
        Compression::Zlib => inflate(stored, out),
        Compression::Bzp2 => bunzip(stored, out),
        Compression::Lz4 => lz4_decode(stored, out),
        Compression::Other(_) => Err(BlockError::UnknownCompression(codec)),
    }
}

/// The size of the pieces [`decode_pieces`] hands on from a zlib stream: small enough to
/// stay in cache from the decoder's writing to the sink's reading.
pub const PIECE: usize = 256 << 10;

/// Decodes `stored` as [`decode`] does, with the same checks, but hands the decoded bytes
/// to `sink` piece by piece, in order, and never holds them all: memory stays at a few
/// pieces however large the block. A large zlib stream is inflated on another thread
/// while its Adler-32 and `sink` run on this one, in pieces of [`PIECE`] bytes; lz4
/// records and bzip2 blocks are decoded in parallel and handed on one at a time (a bzip2
/// stream the parallel path declines is decoded on this thread, in pieces of [`PIECE`]
/// bytes). Small zlib blocks are decoded whole first and handed on in one piece.
///
/// # Errors
/// As [`decode`]; the first error of `sink`, which stops the decoding.
pub fn decode_pieces<E: From<BlockError>>(
    codec: Compression,
    stored: &[u8],
    data_size: u64,
    mut sink: impl FnMut(&[u8]) -> Result<(), E>,
) -> Result<(), E> {
    match codec {
        Compression::Zlib if data_size >= PIECES_ZLIB => inflate_pieces(stored, data_size, &mut sink),
        Compression::Lz4 => lz4_pieces(stored, data_size, &mut sink),
        Compression::Bzp2 => bunzip_pieces(stored, data_size, &mut sink),
        Compression::None => {
            if stored.len() as u64 != data_size {
                return Err(BlockError::SizeMismatch { used: stored.len() as u64, data: data_size }.into());
            }
            sink(stored)
        }
        _ => sink(&decode(codec, stored, data_size)?),
    }
}

/// zlib blocks at least this large are inflated piece by piece by [`decode_pieces`];
/// smaller ones whole, where a thread would cost more than it saves.
const PIECES_ZLIB: u64 = 16 << 20;

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

/// [`decode_pieces`] of a zlib stream: inflated on a thread of its own into [`PIECE`]-byte
/// buffers that go round, its Adler-32 and `sink` on this one.
fn inflate_pieces<E: From<BlockError>, F: FnMut(&[u8]) -> Result<(), E> + ?Sized>(
    input: &[u8],
    data_size: u64,
    sink: &mut F,
) -> Result<(), E> {
    /// Buffers going round: the decoder can run this far ahead of the sink.
    const SLOTS: usize = 4;
    let codec = Compression::Zlib;
    let Some(deflate) = plain_zlib_body(input) else {
        return sink(&decode(codec, input, data_size)?);
    };
    let corrupt = |message: &str| BlockError::Corrupt { codec, message: message.into() };
    std::thread::scope(|scope| {
        let (full, filled) = std::sync::mpsc::sync_channel::<(Vec<u8>, usize)>(SLOTS);
        let (free, freed) = std::sync::mpsc::channel::<Vec<u8>>();
        let decoder = scope.spawn(move || {
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
            drive(codec, deflate, data_size, |i, o| inflate_step(&mut d, i, o), window, finished)
        });
        let mut free = Some(free);
        let mut adler = 1u32;
        let mut result = Ok(());
        // Ends when the decoder is done (its sender dropped), whatever the sink did.
        for (buf, n) in filled {
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
        drop(free);
        let consumed = decoder.join().map_err(|_| corrupt("the decoding thread failed"))?;
        result?;
        let consumed = consumed?;
        let trailer =
            deflate.get(consumed..consumed + 4).ok_or_else(|| corrupt("incomplete stream: no Adler-32 at its end"))?;
        if trailer != adler.to_be_bytes() {
            return Err(corrupt("incorrect data check (Adler-32)").into());
        }
        Ok(())
    })
}

/// [`decode_pieces`] of bzp2: the stream's blocks decoded on the pool's threads and
/// handed on in order ([`super::pbunzip::pieces`]). A stream that path declines, or that
/// fails it part way, is decoded on this thread in pieces of [`PIECE`] bytes, which gives
/// the verdict; bytes the sink already has are not handed to it again.
fn bunzip_pieces<E: From<BlockError>, F: FnMut(&[u8]) -> Result<(), E> + ?Sized>(
    input: &[u8],
    data_size: u64,
    sink: &mut F,
) -> Result<(), E> {
    let codec = Compression::Bzp2;
    let mut skip = match super::pbunzip::pieces(input, data_size, &mut |piece: &[u8]| sink(piece))? {
        super::pbunzip::Streamed::Done => return Ok(()),
        super::pbunzip::Streamed::Declined => 0,
        super::pbunzip::Streamed::FailedAfter(handed) => handed,
    };
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

/// [`decode_pieces`] of lz4: the records decoded on the pool's threads into buffers that go
/// round, handed to `sink` in order on this one.
fn lz4_pieces<E: From<BlockError>, F: FnMut(&[u8]) -> Result<(), E> + ?Sized>(
    input: &[u8],
    data_size: u64,
    sink: &mut F,
) -> Result<(), E> {
    let codec = Compression::Lz4;
    let capacity = memory_size(codec, data_size)?;
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

/// Runs a streaming decoder `step(input, output) -> (consumed, produced, ended)` until the
/// stream ends and `expected` bytes came out, into the windows `window()` hands out
/// (each filled, or up to the end, then handed to `finished` with how much of it is
/// filled), and then into a scratch byte that, if written, proves the stream longer
/// than `expected`. Returns the input bytes consumed.
fn drive<W: AsMut<[u8]>>(
    codec: Compression,
    input: &[u8],
    expected: u64,
    mut step: impl FnMut(&[u8], &mut [u8]) -> Result<(usize, usize, bool), String>,
    mut window: impl FnMut() -> Result<W, BlockError>,
    mut finished: impl FnMut(W, usize) -> Result<(), BlockError>,
) -> Result<usize, BlockError> {
    let (mut ip, mut op) = (0usize, 0u64);
    let mut step =
        |input: &[u8], target: &mut [u8]| step(input, target).map_err(|message| BlockError::Corrupt { codec, message });
    let mut ended = false;
    while op < expected && !ended {
        let mut w = window()?;
        let buf = w.as_mut();
        // A window longer than what is left is filled only that far.
        let room = usize::try_from(expected - op).map_or(buf.len(), |left| left.min(buf.len()));
        if room == 0 {
            return Err(BlockError::Corrupt { codec, message: "no room to decode into".into() });
        }
        let mut filled = 0;
        while filled < room {
            let (consumed, produced, end) = step(&input[ip..], &mut buf[filled..room])?;
            ip += consumed;
            filled += produced;
            if end {
                ended = true;
                break;
            }
            if consumed == 0 && produced == 0 {
                // No progress: the input ran out before the stream's end.
                return Err(BlockError::DecodedTooShort { codec, expected, got: op + filled as u64 });
            }
        }
        op += filled as u64;
        finished(w, filled)?;
    }
    let mut probe = [0u8; 1];
    while !ended {
        // All `expected` bytes came: the stream must end here, without one byte more.
        let (consumed, produced, end) = step(&input[ip..], &mut probe)?;
        if produced > 0 {
            return Err(BlockError::DecodedTooLong { codec, expected });
        }
        ip += consumed;
        ended = end;
        if !end && consumed == 0 {
            return Err(BlockError::DecodedTooShort { codec, expected, got: op });
        }
    }
    if op < expected {
        return Err(BlockError::DecodedTooShort { codec, expected, got: op });
    }
    Ok(ip)
}

/// [`drive`] into `out`, which it must fill exactly.
fn drive_into(
    codec: Compression,
    input: &[u8],
    out: &mut [u8],
    step: impl FnMut(&[u8], &mut [u8]) -> Result<(usize, usize, bool), String>,
) -> Result<usize, BlockError> {
    let mut whole = Some(out);
    let expected = whole.as_ref().map_or(0, |o| o.len() as u64);
    let window = || whole.take().ok_or_else(|| BlockError::Corrupt { codec, message: "no room to decode into".into() });
    drive(codec, input, expected, step, window, |_, _| Ok(()))
}

/// One step of a zlib (or raw deflate) decoder, as [`drive`] takes it.
fn inflate_step(d: &mut flate2::Decompress, input: &[u8], out: &mut [u8]) -> Result<(usize, usize, bool), String> {
    let (ti, to) = (d.total_in(), d.total_out());
    let status = d.decompress(input, out, flate2::FlushDecompress::None).map_err(|e| e.to_string())?;
    let consumed = usize::try_from(d.total_in() - ti).unwrap_or(usize::MAX);
    let produced = usize::try_from(d.total_out() - to).unwrap_or(usize::MAX);
    Ok((consumed, produced, status == flate2::Status::StreamEnd))
}

/// One step of a bzip2 decoder, as [`drive`] takes it.
fn bunzip_step(d: &mut bzip2::Decompress, input: &[u8], out: &mut [u8]) -> Result<(usize, usize, bool), String> {
    let (ti, to) = (d.total_in(), d.total_out());
    let status = d.decompress(input, out).map_err(|e| e.to_string())?;
    let consumed = usize::try_from(d.total_in() - ti).unwrap_or(usize::MAX);
    let produced = usize::try_from(d.total_out() - to).unwrap_or(usize::MAX);
    Ok((consumed, produced, status == bzip2::Status::StreamEnd))
}

/// Inflates a zlib stream into `out`, which it must fill exactly (bytes after the stream
/// are ignored, as the reference does). Plain streams go to libdeflate, which decodes
/// into the whole output at once and checks the Adler-32 there: about twice as fast as
/// a streaming inflater. Others (a preset dictionary) get zlib-rs's verdict.
fn inflate(input: &[u8], out: &mut [u8]) -> Result<(), BlockError> {
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

/// Decodes a bzip2 stream into `out`, which it must fill exactly: a block per thread
/// where [`super::pbunzip`] takes the stream, else (or should it fail) serially, which
/// gives the verdict.
fn bunzip(input: &[u8], out: &mut [u8]) -> Result<(), BlockError> {
    let mut at = 0;
    let parallel = super::pbunzip::pieces(input, out.len() as u64, &mut |piece: &[u8]| {
        // The parallel path never hands on more than `out` holds.
        let to = out.get_mut(at..at + piece.len()).ok_or(())?;
        to.copy_from_slice(piece);
        at += piece.len();
        Ok::<(), ()>(())
    });
    if parallel == Ok(super::pbunzip::Streamed::Done) {
        return Ok(());
    }
    let mut d = bzip2::Decompress::new(false);
    let step = |i: &[u8], o: &mut [u8]| bunzip_step(&mut d, i, o);
    drive_into(Compression::Bzp2, input, out, step).map(drop)
}

/// One record of the reference's lz4 framing: the raw LZ4 block and its decoded length.
struct Lz4Record<'a> {
    block: &'a [u8],
    raw_len: usize,
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
        records.push(Lz4Record { block: &input[pos + 8..end], raw_len });
        pos = end;
    }
    if total < capacity {
        return Err(BlockError::DecodedTooShort { codec, expected: capacity as u64, got: total as u64 });
    }
    Ok(records)
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

fn lz4_decode(input: &[u8], out: &mut [u8]) -> Result<(), BlockError> {
    let records = lz4_records(input, out.len())?;
    // Split the output into one disjoint slice per record, then decode in parallel.
    let mut slices = Vec::with_capacity(records.len());
    let mut rest = out;
    for r in &records {
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

/// Compresses `data` with `codec` as the reference library does (zlib level 6, bzip2
/// level 9, lz4 in 4 MiB records).
///
/// # Errors
/// [`BlockError::UnknownCompression`] for labels rasdf cannot write.
pub fn encode(codec: Compression, data: &[u8]) -> Result<Vec<u8>, BlockError> {
    match codec {
        Compression::None => Ok(data.to_vec()),
        Compression::Zlib => {
            super::pdeflate::compress(data, 6).map_err(|message| BlockError::Corrupt { codec, message })
        }
        Compression::Bzp2 => {
            if let Some(stream) = super::pbzip::compress(data, 9) {
                return Ok(stream);
            }
            let mut e = bzip2::write::BzEncoder::new(Vec::with_capacity(data.len() / 2), bzip2::Compression::new(9));
            e.write_all(data).and_then(|_| e.finish()).map_err(|err| io_corrupt(codec, err))
        }
        Compression::Lz4 => {
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
        Compression::Other(_) => Err(BlockError::UnknownCompression(codec)),
    }
}

/// The records of the reference's lz4 framing for `bytes` (at most two [`LZ4_CHUNK`]s),
/// `[u32 BE length of the rest][u32 LE raw length][raw LZ4 block]` each, written into
/// `buf` (grown when too short, else reused as it is); returns where each record is in
/// it (the second is empty when `bytes` fits one record). Two records are compressed
/// together by rasdf's encoder, their work interleaved (see [`super::lz4`]): about 25 %
/// faster on array data than lz4_flex's encoder one after the other; a record alone
/// (a block of 4 MiB or less, the last of an odd count) is lz4_flex's, which is the
/// faster on a single input.
pub(crate) fn lz4_records_into(bytes: &[u8], buf: &mut Vec<u8>) -> Result<[std::ops::Range<usize>; 2], BlockError> {
    let codec = Compression::Lz4;
    if bytes.len() > 2 * LZ4_CHUNK {
        return Err(BlockError::Corrupt { codec, message: "an lz4 record holds at most 4 MiB".into() });
    }
    let (a, b) = bytes.split_at(bytes.len().min(LZ4_CHUNK));
    let room_a = 8 + super::lz4::max_compressed_len(a.len()).max(lz4_flex::block::get_maximum_output_size(a.len()));
    let room_b = if b.is_empty() { 0 } else { 8 + super::lz4::max_compressed_len(b.len()) };
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
        super::lz4::compress_pair(a, &mut rec_a[8..], b, &mut rec_b[8..room_b])
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

/// The pieces of a compressed block, one after the other, in one buffer.
pub(crate) fn concat(parts: &[Vec<u8>]) -> Vec<u8> {
    let total = parts.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(total);
    crate::hugepages::advise(out.as_ptr(), total);
    for p in parts {
        out.extend_from_slice(p);
    }
    out
}

fn io_corrupt(codec: Compression, e: std::io::Error) -> BlockError {
    BlockError::Corrupt { codec, message: e.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        (0..10_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect()
    }

    #[test]
    fn every_codec_round_trips() {
        let data = sample();
        for codec in [Compression::None, Compression::Zlib, Compression::Bzp2, Compression::Lz4] {
            let enc = encode(codec, &data).unwrap();
            assert_eq!(decode(codec, &enc, data.len() as u64).unwrap(), data, "{codec}");
        }
    }

    #[test]
    fn zeroed_buffers_are_zero_at_every_size() {
        for n in [0, 1, 4095, 4096, 5 << 20] {
            let v = zeroed(n).unwrap();
            assert_eq!(v.len(), n);
            assert!(v.iter().all(|&b| b == 0), "{n} bytes");
        }
        assert!(zeroed(usize::MAX).is_none(), "an impossible size is refused, not aborted on");
    }

    #[test]
    fn empty_data_round_trips() {
        for codec in [Compression::Zlib, Compression::Bzp2, Compression::Lz4] {
            let enc = encode(codec, &[]).unwrap();
            assert_eq!(decode(codec, &enc, 0).unwrap(), Vec::<u8>::new(), "{codec}");
        }
        // The reference writes an empty zlib block as these 8 bytes, and lz4 as nothing.
        assert_eq!(encode(Compression::Zlib, &[]).unwrap(), b"\x78\x9c\x03\x00\x00\x00\x00\x01");
        assert!(encode(Compression::Lz4, &[]).unwrap().is_empty());
    }

    #[test]
    fn lz4_framing_matches_the_reference_bytes() {
        // int32 0..8, as the reference library writes it (reference notes 2.3).
        let data: Vec<u8> = (0..8i32).flat_map(|i| i.to_le_bytes()).collect();
        let enc = encode(Compression::Lz4, &data).unwrap();
        assert_eq!(&enc[..8], &[0, 0, 0, 0x26, 0x20, 0, 0, 0]);
        assert_eq!(decode(Compression::Lz4, &enc, 32).unwrap(), data);
    }

    #[test]
    fn longer_and_shorter_streams_fail() {
        let data = sample();
        for codec in [Compression::Zlib, Compression::Bzp2, Compression::Lz4] {
            let enc = encode(codec, &data).unwrap();
            let n = data.len() as u64;
            assert!(matches!(decode(codec, &enc, n - 1), Err(BlockError::DecodedTooLong { .. })), "{codec}: too long");
            assert!(
                matches!(decode(codec, &enc, n + 1), Err(BlockError::DecodedTooShort { .. })),
                "{codec}: too short"
            );
            let cut = &enc[..enc.len() / 2];
            assert!(decode(codec, cut, n).is_err(), "{codec}: truncated stream");
        }
    }

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

    /// Every piece `decode_pieces` (or the zlib path under it) hands on, joined.
    fn joined(
        run: impl FnOnce(&mut dyn FnMut(&[u8]) -> Result<(), BlockError>) -> Result<(), BlockError>,
    ) -> Result<Vec<u8>, BlockError> {
        let mut all = Vec::new();
        run(&mut |p| {
            all.extend_from_slice(p);
            Ok(())
        })?;
        Ok(all)
    }

    /// The pieces, joined, are the decoded block, and the verdicts on damaged streams are
    /// those of `decode`: zlib inflated on its own thread (called directly, as blocks
    /// below `PIECES_ZLIB` take the whole path), lz4 of many records.
    #[test]
    fn pieces_are_the_decoded_bytes_in_order() {
        let data: Vec<u8> = (0..u32::try_from(5 * PIECE + 12_345).unwrap())
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 27).to_le_bytes()[0])
            .collect();
        let n = data.len() as u64;
        let z = encode(Compression::Zlib, &data).unwrap();
        let zlib = |stored: &[u8], size: u64| joined(|sink| inflate_pieces(stored, size, sink));
        assert!(zlib(&z, n).unwrap() == data);
        for (what, stored, size) in [
            ("too long", z.clone(), n - 1),
            ("too short", z.clone(), n + 1),
            ("truncated", z[..z.len() / 2].to_vec(), n),
            ("Adler-32 cut short", z[..z.len() - 2].to_vec(), n),
            ("wrong Adler-32", [&z[..z.len() - 1], &[z[z.len() - 1] ^ 1]].concat(), n),
        ] {
            let whole = decode(Compression::Zlib, &stored, size).map(drop);
            let pieces = zlib(&stored, size).map(drop);
            assert!(whole.is_err() && pieces.is_err(), "{what}");
            if size != n {
                assert_eq!(pieces, whole, "{what}");
            }
        }
        // lz4 records of any size, as another writer may cut them.
        let mut l = Vec::new();
        for chunk in data[..40_000].chunks(1000).chain(data[40_000..].chunks(3001)) {
            let mut rec = Vec::new();
            let [one, none] = lz4_records_into(chunk, &mut rec).unwrap();
            assert!(none.is_empty());
            l.extend_from_slice(&rec[one]);
        }
        let lz4 = |stored: &[u8], size: u64| joined(|sink| decode_pieces(Compression::Lz4, stored, size, sink));
        assert!(lz4(&l, n).unwrap() == data);
        assert!(matches!(lz4(&l, n - 1), Err(BlockError::DecodedTooLong { .. })));
        assert!(matches!(lz4(&l, n + 1), Err(BlockError::DecodedTooShort { .. })));
        assert!(lz4(&l[..l.len() - 3], n).is_err(), "truncated");
        // The other codecs (zlib below PIECES_ZLIB: one piece, the decoded block).
        for codec in [Compression::None, Compression::Bzp2, Compression::Zlib] {
            let enc = encode(codec, &data).unwrap();
            assert!(joined(|sink| decode_pieces(codec, &enc, n, sink)).unwrap() == data, "{codec}");
        }
        assert!(joined(|sink| decode_pieces(Compression::None, &data, n + 1, sink)).is_err());
    }

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
        let starts = super::super::pbunzip::block_starts(&many);
        let mut bad = many.clone();
        let mid = usize::try_from((starts[3] + starts[4]) / 16).unwrap();
        bad[mid] ^= 0x40;
        let mut handed = Vec::new();
        let streamed = super::super::pbunzip::pieces(&bad, n, &mut |p: &[u8]| {
            handed.extend_from_slice(p);
            Ok::<(), ()>(())
        });
        assert_eq!(streamed, Ok(super::super::pbunzip::Streamed::FailedAfter(handed.len() as u64)));
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

    /// A failing sink stops the decoding soon, and its error is the one returned.
    #[test]
    fn a_failing_sink_stops_the_pieces() {
        let data = crate::testutil::noise(40 * PIECE, 7);
        let n = data.len() as u64;
        let z = encode(Compression::Zlib, &data).unwrap();
        let l = encode(Compression::Lz4, &data).unwrap();
        let b = encode(Compression::Bzp2, &data).unwrap();
        let b1 = crate::testutil::bzip(&data[..5 * PIECE], 9).unwrap();
        for (codec, stored, n) in [
            (Compression::Zlib, &z, n),
            (Compression::Lz4, &l, n),
            (Compression::Bzp2, &b, n),
            (Compression::Bzp2, &b1, 5 * PIECE as u64),
        ] {
            let mut calls = 0;
            let stop = |_: &[u8]| {
                calls += 1;
                if calls == 2 { Err("enough") } else { Ok(()) }
            };
            let r = match codec {
                Compression::Zlib => inflate_pieces(stored, n, &mut { stop }),
                _ => decode_pieces(codec, stored, n, stop),
            };
            assert_eq!(r, Err("enough"), "{codec}");
            assert_eq!(calls, 2, "{codec}: no piece after the error");
        }
    }

    impl From<BlockError> for &'static str {
        fn from(_: BlockError) -> Self {
            "decoding failed"
        }
    }

    #[test]
    fn zlib_bomb_stops_at_data_size() {
        let zeros = vec![0u8; 50 << 20];
        let enc = encode(Compression::Zlib, &zeros).unwrap();
        assert!(enc.len() < 100_000);
        assert!(matches!(decode(Compression::Zlib, &enc, 1024), Err(BlockError::DecodedTooLong { .. })));
    }

    #[test]
    fn unknown_label_is_kept_and_fails_on_decode() {
        let c = Compression::from_label(*b"zstd");
        assert_eq!(c.label(), *b"zstd");
        assert_eq!(c.to_string(), "'zstd'");
        assert_eq!(decode(c, b"xx", 2), Err(BlockError::UnknownCompression(c)));
    }
}
