//! One Blosc chunk (C-Blosc2's README_CHUNK_FORMAT; a c-blosc1 buffer is a chunk of
//! format version 1 or 2): its header, decoding and encoding.
//!
//! A chunk is a 16-byte header (32 when flag bits 0 and 2 are both set, the "extended"
//! Blosc2 header), then, unless the chunk is memcpyed or special, one `i32` start
//! offset per block, an optional dictionary, and the blocks. A block is one stream, or
//! `typesize` streams (one per byte) when it is split, each an `i32` size and its bytes.
//! The filters run in slot order on compression and are undone backwards on reading.

use super::BloscError;
use super::blosclz;
use super::filters;

/// Codec codes of the chunk format (flag bits 5 to 7).
const FORMAT_BLOSCLZ: u8 = 0;
const FORMAT_LZ4: u8 = 1;
/// c-blosc1 only (C-Blosc2 dropped it).
const FORMAT_SNAPPY: u8 = 2;
const FORMAT_ZLIB: u8 = 3;
const FORMAT_ZSTD: u8 = 4;
const FORMAT_USER: u8 = 6;

/// Filter codes of the pipeline slots.
const FILTER_SHUFFLE: u8 = 1;
const FILTER_BITSHUFFLE: u8 = 2;
const FILTER_DELTA: u8 = 3;
const FILTER_TRUNC_PREC: u8 = 4;
const FILTER_BYTEDELTA: u8 = 35;
/// Lossy, nothing to undo.
const FILTER_INT_TRUNC: u8 = 36;

const MIN_HEADER: usize = 16;
/// The length of a Blosc2 extended chunk header.
pub const EXTENDED_HEADER: usize = 32;
/// The newest chunk format version read (6 adds variable-length blocks, refused below).
const MAX_VERSION: u8 = 6;

pub(super) fn bad(what: impl Into<String>) -> BloscError {
    BloscError::Malformed(what.into())
}

pub(super) fn le_i32(b: &[u8], at: usize) -> Result<i32, BloscError> {
    b.get(at..at + 4)
        .map(|s| i32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| bad(format!("ends at byte {} inside a 4-byte size at byte {at}", b.len())))
}

/// What a chunk's header says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkHeader {
    /// Format version (2 Blosc 1, 5 stable Blosc2).
    pub version: u8,
    /// The flag byte.
    pub flags: u8,
    /// Bytes per item (filters and splitting work in it).
    pub typesize: usize,
    /// Decoded size.
    pub nbytes: usize,
    /// Bytes per block (the last may be shorter).
    pub blocksize: usize,
    /// The chunk's stored size, header included.
    pub cbytes: usize,
    /// The header's length: 16 or 32.
    pub header_len: usize,
    /// The filter of each pipeline slot.
    pub filters: [u8; 6],
    /// Each filter's parameter.
    pub filters_meta: [u8; 6],
    /// The codec's code when the format says user-defined.
    pub udcodec: u8,
    /// The Blosc2 flag byte (dictionary, special values).
    pub blosc2_flags: u8,
    /// The extended header's second flag byte (variable-length blocks).
    pub blosc2_flags2: u8,
}

impl ChunkHeader {
    /// Reads the header at the start of `chunk` and checks it against the chunk's length.
    ///
    /// # Errors
    /// A header shorter than it says, sizes that contradict each other, or a version
    /// newer than rasdf reads.
    pub fn parse(chunk: &[u8]) -> Result<ChunkHeader, BloscError> {
        if chunk.len() < MIN_HEADER {
            return Err(bad(format!("has {} bytes, fewer than the 16 of a header", chunk.len())));
        }
        let version = chunk[0];
        if version == 0 || version > MAX_VERSION {
            return Err(BloscError::Unsupported(format!(
                "chunk format version {version} is not one rasdf reads (1 to 6)"
            )));
        }
        let flags = chunk[2];
        let typesize = usize::from(chunk[3]);
        let size = |at: usize, what: &str| -> Result<usize, BloscError> {
            let v = le_i32(chunk, at)?;
            usize::try_from(v).map_err(|_| bad(format!("{what} {v} at byte {at} is negative")))
        };
        let nbytes = size(4, "nbytes")?;
        let blocksize = size(8, "blocksize")?;
        let cbytes = size(12, "cbytes")?;
        if typesize == 0 {
            return Err(bad("typesize 0 at byte 3"));
        }
        if blocksize == 0 || (nbytes > 0 && blocksize > nbytes) {
            return Err(bad(format!("blocksize {blocksize} is 0 or larger than nbytes {nbytes}")));
        }
        let extended = flags & 0x05 == 0x05;
        let header_len = if extended { EXTENDED_HEADER } else { MIN_HEADER };
        if cbytes < header_len || cbytes > chunk.len() {
            return Err(bad(format!(
                "cbytes {cbytes} is smaller than its {header_len}-byte header or larger than the {} bytes there",
                chunk.len()
            )));
        }
        let mut h = ChunkHeader {
            version,
            flags,
            typesize,
            nbytes,
            blocksize,
            cbytes,
            header_len,
            filters: [0; 6],
            filters_meta: [0; 6],
            udcodec: 0,
            blosc2_flags: 0,
            blosc2_flags2: 0,
        };
        if extended {
            h.filters.copy_from_slice(&chunk[0x10..0x16]);
            h.udcodec = chunk[0x16];
            h.filters_meta.copy_from_slice(&chunk[0x18..0x1e]);
            h.blosc2_flags2 = chunk[0x1e];
            h.blosc2_flags = chunk[0x1f];
            // The alpha format (3) left the last slot uninitialized.
            if version == 3 {
                h.filters[5] = 0;
                h.filters_meta[5] = 0;
            }
        } else {
            if flags & 0x01 != 0 {
                h.filters[5] = FILTER_SHUFFLE;
            }
            if flags & 0x04 != 0 {
                h.filters[5] = FILTER_BITSHUFFLE;
            }
            if flags & 0x08 != 0 {
                h.filters[4] = FILTER_DELTA;
            }
        }
        Ok(h)
    }

    fn memcpyed(&self) -> bool {
        self.flags & 0x02 != 0
    }

    /// The special value every item holds (1 zeros, 2 NaN, 3 a value after the header,
    /// 4 uninitialized), or 0.
    fn special(&self) -> u8 {
        if self.header_len == EXTENDED_HEADER { (self.blosc2_flags >> 4) & 0x07 } else { 0 }
    }
}

/// Decodes `chunk` into `out`, which must be `nbytes` long (see [`ChunkHeader::parse`]).
///
/// # Errors
/// A damaged chunk (offsets, sizes or codec streams that do not hold), or a codec or
/// filter rasdf does not decode.
pub fn decode(chunk: &[u8], out: &mut [u8]) -> Result<ChunkHeader, BloscError> {
    let n = out.len();
    decode_part(chunk, n, out, std::slice::from_ref(&(0..n)))
}

/// Decodes the parts of `chunk`, which must decode to `nbytes`, that the byte ranges
/// `want` (in order, apart, inside `out`) reach into: whole blocks (and the first,
/// which the delta filter refers to), as far as `out` goes; `out` may be shorter than
/// `nbytes`. Bytes of `out` outside them are left as they are: a chunk padded far past
/// its array's end costs what the array holds, not what the chunk would.
///
/// # Errors
/// As [`decode`]; an `out` longer than `nbytes` is an error.
pub fn decode_part(
    chunk: &[u8],
    nbytes: usize,
    out: &mut [u8],
    want: &[std::ops::Range<usize>],
) -> Result<ChunkHeader, BloscError> {
    let h = ChunkHeader::parse(chunk)?;
    if nbytes != h.nbytes || out.len() > nbytes {
        return Err(bad(format!("decodes to {} bytes, not the {nbytes} expected", h.nbytes)));
    }
    let chunk = &chunk[..h.cbytes];
    let ts = h.typesize;
    let len = out.len();
    let wanted = || want.iter().map(|r| r.start.min(len)..r.end.min(len)).filter(|r| !r.is_empty());
    match h.special() {
        0 => {}
        s => {
            if h.nbytes % ts != 0 {
                return Err(bad(format!("nbytes {} of a special chunk is not a multiple of typesize {ts}", h.nbytes)));
            }
            let value: &[u8] = match s {
                // Uninitialized items are read as zeros.
                1 | 4 => &[0],
                2 => nan_bytes(ts).ok_or_else(|| bad(format!("a chunk of NaNs with typesize {ts}")))?,
                3 => chunk
                    .get(EXTENDED_HEADER..EXTENDED_HEADER + ts)
                    .ok_or_else(|| bad("a chunk of one repeated value ends before the value"))?,
                _ => return Err(bad(format!("unknown special value {s} in the Blosc2 flags at byte 31"))),
            };
            fill_wanted(out, want, value);
            return Ok(h);
        }
    }
    if h.memcpyed() {
        if h.cbytes != h.nbytes + h.header_len {
            return Err(bad(format!("a memcpyed chunk of {} bytes holds {} bytes of data", h.cbytes, h.nbytes)));
        }
        for r in wanted() {
            out[r.clone()].copy_from_slice(&chunk[h.header_len + r.start..h.header_len + r.end]);
        }
        return Ok(h);
    }
    if wanted().next().is_none() {
        return Ok(h);
    }
    let dict = blocks_dict(&h, chunk)?;
    let mut codec = Codec::for_format(h.flags >> 5, h.udcodec, dict)?;
    let uses_filters = uses_filters(&h);
    let mut block = if uses_filters { vec![0u8; h.blocksize] } else { Vec::new() };
    let mut spare = if uses_filters { vec![0u8; h.blocksize] } else { Vec::new() };
    // The first block, then each other block a wanted range reaches into, in order;
    // one that `out` ends inside is decoded into a buffer of its own (behind a copy of
    // the first block, which the delta filter refers to).
    let bs = h.blocksize;
    let blocks = wanted().flat_map(|r| r.start / bs..r.end.div_ceil(bs));
    let mut last = None;
    for j in std::iter::once(0).chain(blocks) {
        if last.is_some_and(|l| j <= l) {
            continue;
        }
        last = Some(j);
        let offset = j * bs;
        let bsize = bs.min(h.nbytes - offset);
        if offset + bsize > len {
            let first = if j == 0 { 0 } else { bs };
            let mut whole = Vec::with_capacity(first + bsize);
            whole.extend_from_slice(&out[..first]);
            whole.resize(first + bsize, 0);
            decode_block(&h, chunk, j, first, &mut codec, &mut block, &mut spare, &mut whole)?;
            out[offset..].copy_from_slice(&whole[first..first + len - offset]);
            break;
        }
        decode_block(&h, chunk, j, offset, &mut codec, &mut block, &mut spare, out)?;
    }
    Ok(h)
}

/// Checks that the block offsets of a chunk of blocks (not memcpyed, not special) fit,
/// and returns its dictionary, if it has one.
fn blocks_dict<'a>(h: &ChunkHeader, chunk: &'a [u8]) -> Result<Option<&'a [u8]>, BloscError> {
    if h.blosc2_flags2 & 0x01 != 0 {
        return Err(BloscError::Unsupported("chunks of variable-length blocks are not read".into()));
    }
    let nblocks = h.nbytes.div_ceil(h.blocksize);
    let bstarts_end = h.header_len + 4 * nblocks;
    if bstarts_end > h.cbytes {
        return Err(bad(format!("{nblocks} block offsets do not fit in the chunk's {} bytes", h.cbytes)));
    }
    if h.blosc2_flags & 0x01 == 0 {
        return Ok(None);
    }
    let size = le_i32(chunk, bstarts_end)?;
    let size = usize::try_from(size).ok().filter(|&s| s > 0 && bstarts_end + 4 + s <= h.cbytes);
    let size = size.ok_or_else(|| bad(format!("the dictionary size at byte {bstarts_end} does not fit")))?;
    Ok(Some(&chunk[bstarts_end + 4..bstarts_end + 4 + size]))
}

/// Whether the chunk's blocks have filters to undo (truncated precision and int-trunc
/// leave nothing to undo).
fn uses_filters(h: &ChunkHeader) -> bool {
    h.filters.iter().any(|&f| !matches!(f, 0 | FILTER_TRUNC_PREC | FILTER_INT_TRUNC))
}

/// Chunks of at least this many blocks are decoded a block per thread by
/// [`decode_parallel`].
const PARALLEL_BLOCKS: usize = 8;

/// [`decode`], the blocks of a large chunk decoded in parallel (each with its own
/// codec context and scratch buffers), when no filter ties them together (the delta
/// filter refers to the first block): the same bytes and verdicts.
///
/// # Errors
/// As [`decode`].
pub fn decode_parallel(chunk: &[u8], out: &mut [u8]) -> Result<ChunkHeader, BloscError> {
    use rayon::prelude::*;
    let h = ChunkHeader::parse(chunk)?;
    let plain = h.special() == 0 && !h.memcpyed() && !h.filters.contains(&FILTER_DELTA);
    if !plain || out.len() != h.nbytes || h.nbytes / h.blocksize < PARALLEL_BLOCKS {
        return decode(chunk, out);
    }
    let chunk = &chunk[..h.cbytes];
    let dict = blocks_dict(&h, chunk)?;
    // A codec that cannot be made fails here, not on each thread.
    Codec::for_format(h.flags >> 5, h.udcodec, dict)?;
    let scratch = if uses_filters(&h) { h.blocksize } else { 0 };
    out.par_chunks_mut(h.blocksize).enumerate().try_for_each_init(
        || (Codec::for_format(h.flags >> 5, h.udcodec, dict), vec![0u8; scratch], vec![0u8; scratch]),
        |(codec, block, spare), (j, dst)| {
            let codec = codec.as_mut().map_err(|e| e.clone())?;
            decode_block(&h, chunk, j, 0, codec, block, spare, dst)
        },
    )?;
    Ok(h)
}

/// The bytes of a NaN item of `ts` bytes (float32 or float64), as special chunks hold.
pub fn nan_bytes(ts: usize) -> Option<&'static [u8]> {
    const F32: [u8; 4] = f32::NAN.to_le_bytes();
    const F64: [u8; 8] = f64::NAN.to_le_bytes();
    match ts {
        4 => Some(&F32),
        8 => Some(&F64),
        _ => None,
    }
}

/// Fills the byte ranges `want` of `out` (as far as `out` goes) with copies of the
/// item `value` (a single zero byte for zeros): a special chunk's items.
pub fn fill_wanted(out: &mut [u8], want: &[std::ops::Range<usize>], value: &[u8]) {
    let n = out.len();
    for r in want {
        let part = &mut out[r.start.min(n)..r.end.min(n)];
        if value.iter().all(|&b| b == 0) {
            part.fill(0);
        } else {
            part.chunks_exact_mut(value.len()).for_each(|e| e.copy_from_slice(value));
        }
    }
}

/// Decodes block `j` of `chunk` into `out` at `offset`, through `block` and `spare`
/// (each a block long) when the chunk has filters to undo, straight otherwise (both
/// empty).
#[allow(clippy::too_many_arguments)]
fn decode_block(
    h: &ChunkHeader,
    chunk: &[u8],
    j: usize,
    offset: usize,
    codec: &mut Codec<'_>,
    block: &mut [u8],
    spare: &mut [u8],
    out: &mut [u8],
) -> Result<(), BloscError> {
    let ts = h.typesize;
    let dont_split = h.flags & 0x10 != 0;
    let uses_filters = !block.is_empty();
    let bsize = h.blocksize.min(h.nbytes - j * h.blocksize);
    let leftover = bsize < h.blocksize;
    let start = le_i32(chunk, h.header_len + 4 * j)?;
    let start = usize::try_from(start)
        .ok()
        .filter(|&s| s > 0 && s < h.cbytes)
        .ok_or_else(|| bad(format!("block {j} starts at {start}, outside the chunk's {} bytes", h.cbytes)))?;
    // C-Blosc2 3.x splits blocks compressed with a dictionary too (2.x did not while
    // training one; files show split streams).
    let nstreams = if !dont_split && !leftover { ts } else { 1 };
    if !bsize.is_multiple_of(nstreams) {
        return Err(bad(format!("block {j} of {bsize} bytes does not split into {nstreams} streams")));
    }
    let dst: &mut [u8] = if uses_filters { &mut block[..bsize] } else { &mut out[offset..offset + bsize] };
    decode_streams(chunk, start, nstreams, codec, dst).map_err(|e| match e {
        BloscError::Malformed(m) => bad(format!("block {j}: {m}")),
        other => other,
    })?;
    if uses_filters {
        undo_filters(h, &mut block[..bsize], &mut spare[..bsize], out, offset)?;
    }
    Ok(())
}

/// Decodes the `nstreams` streams of one block, starting at `at` in `chunk`, into `dst`.
fn decode_streams(
    chunk: &[u8],
    mut at: usize,
    nstreams: usize,
    codec: &mut Codec<'_>,
    dst: &mut [u8],
) -> Result<(), BloscError> {
    let neblock = dst.len() / nstreams;
    for stream in dst.chunks_exact_mut(neblock.max(1)).take(nstreams) {
        let csize = le_i32(chunk, at)?;
        at += 4;
        match csize {
            0 => stream.fill(0),
            c if c < 0 => {
                let token = *chunk.get(at).ok_or_else(|| bad(format!("ends before the run token at byte {at}")))?;
                at += 1;
                let value = u8::try_from(c.unsigned_abs()).ok().filter(|_| token & 0x01 != 0);
                let value = value
                    .ok_or_else(|| bad(format!("unknown stream token {token:#x} for size {c} at byte {}", at - 1)))?;
                stream.fill(value);
            }
            c => {
                let c = c as usize;
                let src = chunk
                    .get(at..at + c)
                    .ok_or_else(|| bad(format!("a stream of {c} bytes at byte {at} passes the chunk's end")))?;
                if c == neblock {
                    stream.copy_from_slice(src);
                } else {
                    codec.decompress(src, stream).map_err(|why| bad(format!("stream at byte {at}: {why}")))?;
                }
                at += c;
            }
        }
    }
    Ok(())
}

/// Where a block's bytes are between two filters.
#[derive(Clone, Copy, PartialEq, Eq)]
enum At {
    Block,
    Spare,
    Out,
}

/// Undoes the chunk's filters on one decoded block (`block`, with `spare` as scratch),
/// leaving the result in `out[offset..]`: each filter reads one buffer and writes the
/// other, the last straight into `out`. The delta filter works in `out`, against the
/// chunk's first block as already written there, as C-Blosc2 does.
fn undo_filters(
    h: &ChunkHeader,
    block: &mut [u8],
    spare: &mut [u8],
    out: &mut [u8],
    offset: usize,
) -> Result<(), BloscError> {
    let ts = h.typesize;
    let bsize = block.len();
    let slots: Vec<usize> =
        (0..6).rev().filter(|&s| !matches!(h.filters[s], 0 | FILTER_TRUNC_PREC | FILTER_INT_TRUNC)).collect();
    let mut at = At::Block;
    for (k, &slot) in slots.iter().enumerate() {
        let last = k + 1 == slots.len();
        match h.filters[slot] {
            f @ (FILTER_SHUFFLE | FILTER_BITSHUFFLE) => {
                if at == At::Out {
                    block.copy_from_slice(&out[offset..offset + bsize]);
                    at = At::Block;
                }
                let (src, dst, next): (&[u8], &mut [u8], At) = match (at, last) {
                    (At::Block, true) => (block, &mut out[offset..offset + bsize], At::Out),
                    (_, true) => (spare, &mut out[offset..offset + bsize], At::Out),
                    (At::Block, false) => (block, spare, At::Spare),
                    (_, false) => (spare, block, At::Block),
                };
                if f == FILTER_SHUFFLE {
                    // Since C-Blosc2 2.16 a non-zero parameter is the element size to
                    // shuffle by (python-blosc2 shuffles UCS-4 text by 4 bytes).
                    let size = match h.filters_meta[slot] {
                        0 => ts,
                        m => usize::from(m),
                    };
                    filters::unshuffle(size, src, dst);
                } else {
                    filters::bitunshuffle(ts, h.version, src, dst);
                }
                at = next;
            }
            FILTER_DELTA => {
                let (head, tail) = out.split_at_mut(offset);
                let region = &mut tail[..bsize];
                match at {
                    At::Block => region.copy_from_slice(block),
                    At::Spare => region.copy_from_slice(spare),
                    At::Out => {}
                }
                let first = (offset > 0).then(|| &head[..h.blocksize.min(head.len())]);
                filters::undelta(ts, first, region);
                at = At::Out;
            }
            FILTER_BYTEDELTA => {
                let streams = match h.filters_meta[slot] {
                    0 => ts,
                    m => usize::from(m),
                };
                match at {
                    At::Block => filters::unbytedelta(streams, block),
                    At::Spare => filters::unbytedelta(streams, spare),
                    At::Out => filters::unbytedelta(streams, &mut out[offset..offset + bsize]),
                }
            }
            f => {
                let name = match f {
                    32 => " (NDCELL)",
                    33 => " (NDMEAN)",
                    _ => "",
                };
                return Err(BloscError::Unsupported(format!(
                    "filter {f}{name} in slot {slot} is not one rasdf undoes"
                )));
            }
        }
    }
    match at {
        At::Block => out[offset..offset + bsize].copy_from_slice(block),
        At::Spare => out[offset..offset + bsize].copy_from_slice(spare),
        At::Out => {}
    }
    Ok(())
}

/// A stream codec with what it needs to decode.
enum Codec<'a> {
    BloscLz,
    Lz4(Option<&'a [u8]>),
    Zlib,
    /// One context for all the chunk's streams (making one costs about as much as
    /// decoding a 32 KiB stream).
    Zstd(zstd::bulk::Decompressor<'a>),
}

impl<'a> Codec<'a> {
    fn for_format(format: u8, udcodec: u8, dict: Option<&'a [u8]>) -> Result<Codec<'a>, BloscError> {
        let codec = match format {
            FORMAT_BLOSCLZ => Codec::BloscLz,
            FORMAT_LZ4 => Codec::Lz4(dict),
            FORMAT_ZLIB => Codec::Zlib,
            FORMAT_ZSTD => Codec::Zstd(
                match dict {
                    None => zstd::bulk::Decompressor::new(),
                    Some(d) => zstd::bulk::Decompressor::with_dictionary(d),
                }
                .map_err(|e| bad(format!("zstd: {e}")))?,
            ),
            FORMAT_USER => {
                let name = match udcodec {
                    32 => " (NDLZ)",
                    33..=35 => " (ZFP)",
                    36 => " (OpenHTJ2K)",
                    37 => " (Grok)",
                    38 => " (OpenZL)",
                    _ => "",
                };
                return Err(BloscError::Unsupported(format!(
                    "user-defined codec {udcodec}{name} is not one rasdf decodes"
                )));
            }
            FORMAT_SNAPPY => {
                return Err(BloscError::Unsupported(
                    "codec format 2 (Snappy, c-blosc1 only) is not one rasdf decodes".into(),
                ));
            }
            f => return Err(BloscError::Unsupported(format!("codec format {f} is not one Blosc writes"))),
        };
        if dict.is_some() && !matches!(codec, Codec::Lz4(_) | Codec::Zstd(_)) {
            return Err(bad("a dictionary with a codec other than lz4 or zstd"));
        }
        Ok(codec)
    }

    /// Decodes `src` into `dst`, which it must fill exactly.
    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        let n = match self {
            Codec::BloscLz => blosclz::decompress(src, dst).map_err(|e| format!("BloscLZ: {e:?}"))?,
            Codec::Lz4(None) => lz4_flex::block::decompress_into(src, dst).map_err(|e| format!("lz4: {e}"))?,
            Codec::Lz4(Some(d)) => {
                lz4_flex::block::decompress_into_with_dict(src, dst, d).map_err(|e| format!("lz4: {e}"))?
            }
            Codec::Zlib => {
                libdeflater::Decompressor::new().zlib_decompress(src, dst).map_err(|e| format!("zlib: {e}"))?
            }
            Codec::Zstd(z) => z.decompress_to_buffer(src, dst).map_err(|e| format!("zstd: {e}"))?,
        };
        if n != dst.len() {
            return Err(format!("decodes to {n} bytes, not {}", dst.len()));
        }
        Ok(())
    }
}

/// How a written chunk's blocks are compressed (see [`encode`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BloscCodec {
    /// No compression: every chunk is stored memcpyed.
    None,
    /// LZ4 (raw blocks).
    Lz4,
    /// zlib (RFC 1950).
    Zlib,
    /// Zstandard, python-blosc2's default.
    Zstd,
}

impl BloscCodec {
    /// The codec's number in the frame header and the extended chunk header (C-Blosc2's
    /// `compcode`: BLOSCLZ 0, LZ4 1, ZLIB 4, ZSTD 5).
    pub fn compcode(self) -> u8 {
        match self {
            BloscCodec::None | BloscCodec::Lz4 => 1,
            BloscCodec::Zlib => 4,
            BloscCodec::Zstd => 5,
        }
    }

    fn format(self) -> u8 {
        match self {
            BloscCodec::None | BloscCodec::Lz4 => FORMAT_LZ4,
            BloscCodec::Zlib => FORMAT_ZLIB,
            BloscCodec::Zstd => FORMAT_ZSTD,
        }
    }

    /// Its name, as `rasdf convert -c` takes it.
    pub fn from_name(name: &str) -> Option<BloscCodec> {
        match name {
            "none" => Some(BloscCodec::None),
            "lz4" => Some(BloscCodec::Lz4),
            "zlib" => Some(BloscCodec::Zlib),
            "zstd" => Some(BloscCodec::Zstd),
            _ => None,
        }
    }
}

/// `n` as a chunk's `i32`: [`encode`]'s callers keep chunks under 2^31 bytes.
fn i32_of(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// Writes an extended header for `data` into `out` (which it clears first).
fn put_header(
    out: &mut Vec<u8>,
    flags: u8,
    typesize: u8,
    nbytes: usize,
    blocksize: usize,
    filters: [u8; 6],
    codec: BloscCodec,
) {
    out.clear();
    out.extend_from_slice(&[5, 1, flags, typesize]);
    for v in [nbytes, blocksize, 0] {
        out.extend_from_slice(&i32_of(v).to_le_bytes());
    }
    out.extend_from_slice(&filters);
    out.extend_from_slice(&[codec.compcode(), 0]);
    out.extend_from_slice(&[0; 8]);
}

fn set_cbytes(out: &mut [u8]) {
    let n = i32_of(out.len());
    out[12..16].copy_from_slice(&n.to_le_bytes());
}

/// Encodes `data` (at most `i32::MAX - 64` bytes) as one chunk of blocks of `blocksize`
/// bytes, items of `typesize` bytes, each block one stream (never split), shuffled
/// first when `shuffle`. A chunk that does not shrink is stored memcpyed, as C-Blosc2
/// does.
pub fn encode(data: &[u8], typesize: usize, blocksize: usize, codec: BloscCodec, shuffle: bool) -> Vec<u8> {
    // Items over 255 bytes are shuffled as bytes, as C-Blosc2 does.
    let ts = u8::try_from(typesize).unwrap_or(1);
    let blocksize = blocksize.clamp(1, data.len().max(1));
    let mut out = Vec::with_capacity(EXTENDED_HEADER + data.len() / 2);
    let memcpyed = |out: &mut Vec<u8>| {
        put_header(out, 0x07 | 0x10, ts, data.len(), blocksize, [0; 6], codec);
        out.extend_from_slice(data);
        set_cbytes(out);
    };
    if codec == BloscCodec::None || data.is_empty() {
        memcpyed(&mut out);
        return out;
    }
    let shuffle = shuffle && ts > 1;
    let filters = [0, 0, 0, 0, 0, if shuffle { FILTER_SHUFFLE } else { 0 }];
    put_header(&mut out, 0x05 | 0x10 | (codec.format() << 5), ts, data.len(), blocksize, filters, codec);
    let nblocks = data.len().div_ceil(blocksize);
    out.resize(EXTENDED_HEADER + 4 * nblocks, 0);
    let mut shuffled = vec![0u8; if shuffle { blocksize } else { 0 }];
    let mut zstd = match codec {
        BloscCodec::Zstd => zstd::bulk::Compressor::new(3).ok(),
        _ => None,
    };
    let mut deflate = match codec {
        BloscCodec::Zlib => Some(libdeflater::Compressor::new(libdeflater::CompressionLvl::default())),
        _ => None,
    };
    let limit = EXTENDED_HEADER + data.len();
    for (j, raw) in data.chunks(blocksize).enumerate() {
        let start = i32_of(out.len());
        out[EXTENDED_HEADER + 4 * j..EXTENDED_HEADER + 4 * j + 4].copy_from_slice(&start.to_le_bytes());
        let block: &[u8] = if shuffle {
            filters::shuffle(usize::from(ts), raw, &mut shuffled[..raw.len()]);
            &shuffled[..raw.len()]
        } else {
            raw
        };
        if block.iter().all(|&b| b == block[0]) {
            match block[0] {
                0 => out.extend_from_slice(&0i32.to_le_bytes()),
                v => {
                    out.extend_from_slice(&(-i32::from(v)).to_le_bytes());
                    out.push(0x01);
                }
            }
            continue;
        }
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        let bound = block.len();
        // lz4_flex writes only into room for its worst case; the others stop short.
        let room = match codec {
            BloscCodec::Lz4 => lz4_flex::block::get_maximum_output_size(bound),
            _ => bound,
        };
        out.resize(at + 4 + room, 0);
        let written = match codec {
            BloscCodec::Lz4 => lz4_flex::block::compress_into(block, &mut out[at + 4..]).ok(),
            BloscCodec::Zstd => zstd.as_mut().and_then(|z| z.compress_to_buffer(block, &mut out[at + 4..]).ok()),
            BloscCodec::Zlib => deflate.as_mut().and_then(|d| d.zlib_compress(block, &mut out[at + 4..]).ok()),
            BloscCodec::None => None,
        };
        let n = match written {
            Some(n) if n < bound => n,
            // Did not shrink (or did not fit): stored as it is, which a size equal to
            // the stream's length says.
            _ => {
                out[at + 4..at + 4 + bound].copy_from_slice(block);
                bound
            }
        };
        out.truncate(at + 4 + n);
        out[at..at + 4].copy_from_slice(&i32_of(n).to_le_bytes());
        if out.len() > limit {
            memcpyed(&mut out);
            return out;
        }
    }
    set_cbytes(&mut out);
    out
}

/// The most bytes one c-blosc1 buffer holds (c-blosc's `BLOSC_MAX_BUFFERSIZE`: an `i32`
/// less the 16-byte header).
pub const BLOSC1_MAX_BYTES: usize = i32::MAX as usize - MIN_HEADER;

/// The bytes of each block of a buffer [`encode_blosc1`] writes (before rounding down to
/// whole items).
pub const BLOSC1_BLOCK: usize = 256 << 10;

/// Encodes `data` as one c-blosc1 buffer (format version 2, a 16-byte header), which
/// python-blosc's `blosc.decompress` (c-blosc 1.x) and python-blosc2 read: blocks of
/// [`BLOSC1_BLOCK`] bytes (whole items of `typesize` bytes; one block when `data` is
/// smaller), each byte-shuffled by `typesize` (items over 255 bytes as bytes, as c-blosc
/// does) and compressed with Zstandard at `zstd_level` as one stream (the header's
/// "do not split" flag), the blocks in parallel. A block that does not shrink is stored
/// as it is; a buffer that does not, whole after its header ("memcpyed"), as c-blosc
/// does. No runs: c-blosc 1.x does not read Blosc2's.
///
/// # Errors
/// `data` longer than [`BLOSC1_MAX_BYTES`].
pub fn encode_blosc1(data: &[u8], typesize: usize, zstd_level: i32) -> Result<Vec<u8>, BloscError> {
    use rayon::prelude::*;
    if data.len() > BLOSC1_MAX_BYTES {
        return Err(BloscError::Unsupported(format!(
            "a c-blosc1 buffer holds at most {BLOSC1_MAX_BYTES} bytes, not {}",
            data.len()
        )));
    }
    let ts = u8::try_from(typesize).ok().filter(|&t| t > 0).unwrap_or(1);
    let size = usize::from(ts);
    let blocksize = (BLOSC1_BLOCK.min(data.len()) / size * size).max(size.min(data.len())).max(1);
    // Shuffle, do not split, Zstandard.
    let flags = 0x01 | 0x10 | (FORMAT_ZSTD << 5);
    let header = |flags: u8, cbytes: usize| {
        let mut h = vec![2, 1, flags, ts];
        for v in [data.len(), blocksize, cbytes] {
            h.extend_from_slice(&i32_of(v).to_le_bytes());
        }
        h
    };
    let memcpyed = || {
        let mut out = header(flags | 0x02, MIN_HEADER + data.len());
        out.extend_from_slice(data);
        out
    };
    if data.is_empty() {
        return Ok(memcpyed());
    }
    let blocks: Vec<Vec<u8>> = data
        .par_chunks(blocksize)
        .map_init(
            || (zstd::bulk::Compressor::new(zstd_level).ok(), Vec::new()),
            |(zstd, shuffled), raw| {
                shuffled.resize(raw.len(), 0);
                filters::shuffle(size, raw, shuffled);
                let mut out = vec![0u8; 4 + raw.len()];
                let n = zstd
                    .as_mut()
                    .and_then(|z| z.compress_to_buffer(shuffled.as_slice(), &mut out[4..]).ok())
                    .filter(|&n| n < raw.len());
                let n = n.unwrap_or_else(|| {
                    // Stored as it is, which a size equal to the block's says.
                    out[4..].copy_from_slice(shuffled);
                    raw.len()
                });
                out.truncate(4 + n);
                out[..4].copy_from_slice(&i32_of(n).to_le_bytes());
                out
            },
        )
        .collect();
    let starts_end = MIN_HEADER + 4 * blocks.len();
    let cbytes = starts_end + blocks.iter().map(Vec::len).sum::<usize>();
    if cbytes >= MIN_HEADER + data.len() {
        return Ok(memcpyed());
    }
    let mut out = header(flags, cbytes);
    out.reserve(cbytes - out.len());
    let mut at = starts_end;
    for b in &blocks {
        out.extend_from_slice(&i32_of(at).to_le_bytes());
        at += b.len();
    }
    for b in &blocks {
        out.extend_from_slice(b);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(chunk: &[u8]) -> Vec<u8> {
        let h = ChunkHeader::parse(chunk).unwrap();
        let mut out = vec![0xAA; h.nbytes];
        decode(chunk, &mut out).unwrap();
        out
    }

    #[test]
    fn every_codec_round_trips_with_runs_and_a_short_last_block() {
        let mut data: Vec<u8> = (0..10_000u32).flat_map(|i| (i / 7).to_le_bytes()).collect();
        data.extend(std::iter::repeat_n(0u8, 4000));
        data.extend(std::iter::repeat_n(9u8, 4000));
        data.extend(crate::samples::noise(3001, 5));
        for codec in [BloscCodec::None, BloscCodec::Lz4, BloscCodec::Zlib, BloscCodec::Zstd] {
            for shuffle in [false, true] {
                let chunk = encode(&data, 4, 4000, codec, shuffle);
                assert_eq!(decoded(&chunk), data, "{codec:?} shuffle {shuffle}");
                if codec != BloscCodec::None {
                    assert!(chunk.len() < data.len() / 2, "{codec:?} compresses: {} bytes", chunk.len());
                }
            }
        }
    }

    #[test]
    fn large_chunks_decode_the_same_in_parallel() {
        let data: Vec<u8> = (0..400_003u32).flat_map(|i| (i / 3).to_le_bytes()).collect();
        for codec in [BloscCodec::Lz4, BloscCodec::Zstd, BloscCodec::Zlib] {
            for shuffle in [false, true] {
                let chunk = encode(&data, 4, 16 << 10, codec, shuffle);
                let mut out = vec![0u8; data.len()];
                decode_parallel(&chunk, &mut out).unwrap();
                assert!(out == data, "{codec:?} shuffle {shuffle}");
                // Damage: the same verdict (an error) either way.
                for at in [100, chunk.len() / 2, chunk.len() - 3] {
                    let mut c = chunk.clone();
                    c[at] ^= 0x55;
                    let mut a = vec![0u8; data.len()];
                    let mut b = vec![0u8; data.len()];
                    let (x, y) = (decode(&c, &mut a).is_ok(), decode_parallel(&c, &mut b).is_ok());
                    assert_eq!(x, y, "{codec:?} at {at}");
                    // (What a failed decode left in its output is not looked at.)
                    assert!(!x || a == b, "{codec:?} at {at}");
                }
            }
        }
        let b1 = encode_blosc1(&data, 4, 3).unwrap();
        let mut out = vec![0u8; data.len()];
        decode_parallel(&b1, &mut out).unwrap();
        assert!(out == data);
    }

    #[test]
    fn incompressible_data_is_stored_memcpyed() {
        let data = crate::samples::noise(5000, 11);
        let chunk = encode(&data, 8, 1000, BloscCodec::Zstd, true);
        assert_eq!(chunk[2] & 0x02, 0x02);
        assert_eq!(chunk.len(), EXTENDED_HEADER + data.len());
        assert_eq!(decoded(&chunk), data);
    }

    #[test]
    fn damaged_chunks_are_errors_not_panics() {
        let data: Vec<u8> = (0..4000u32).flat_map(|i| (i % 13).to_le_bytes()).collect();
        let chunk = encode(&data, 4, 1024, BloscCodec::Lz4, true);
        let mut out = vec![0; data.len()];
        for cut in 0..chunk.len() {
            let _ = decode(&chunk[..cut], &mut out);
        }
        for at in 0..chunk.len() {
            for bit in [0x01, 0x80] {
                let mut c = chunk.clone();
                c[at] ^= bit;
                if let Ok(h) = ChunkHeader::parse(&c) {
                    let mut out = vec![0; h.nbytes.min(1 << 20)];
                    let _ = decode(&c, &mut out);
                }
            }
        }
        assert!(matches!(decode(&chunk[..20], &mut out), Err(BloscError::Malformed(_))));
    }
}
