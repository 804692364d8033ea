//! Blosc2 b2nd: an N-dimensional array in a Blosc2 contiguous frame (`.b2nd`), as
//! python-blosc2 (`blosc2.asarray(a, urlpath=...)`) and C-Blosc2's `b2nd_*` write it.
//!
//! A frame is a msgpack header (its sizes, codec and the `b2nd` metalayer: shape,
//! chunk shape, block shape and the NumPy dtype string), the compressed chunks, one
//! more chunk of `i64` chunk offsets, and a msgpack trailer (the variable-length
//! metalayers). Each chunk holds the chunk shape rounded up to whole blocks, the
//! blocks one after another in C order and the items of each block in C order; edge
//! chunks are padded. [`B2ndFile::parse`] reads and checks a frame over its bytes;
//! [`B2ndFile::decode`] gives the array's bytes in C order ([`B2ndFile::decode_rows`]
//! chunk by chunk); [`Encoder`] writes one to any seekable writer, chunks compressed as
//! they are written, and [`encode`] in memory. Variable-length metalayers
//! (python-blosc2's `vlmeta`) are read and written as their bytes; [`msgpack`] reads and
//! writes the values python-blosc2 keeps in them.
//!
//! Read: every codec C-Blosc2 builds in (BloscLZ, LZ4, LZ4HC, zlib, Zstandard, with or
//! without a dictionary), the shuffle, bit-shuffle, delta and truncate-precision
//! filters and the bytedelta and int-trunc plugins, split and unsplit blocks, runs,
//! memcpyed and special chunks (zeros, NaN, a repeated value, uninitialized, read as
//! zeros). Refused with an error: plugin codecs (ZFP, NDLZ...), the NDCELL and NDMEAN
//! filters, sparse frames (directories), and variable-length chunks or blocks.
//! Written: chunks of at most 4 MiB in blocks of at most 256 KiB, shuffled, compressed
//! with Zstandard (python-blosc2's default), LZ4 or zlib, or stored as they are.
//!
//! ```
//! use rasdf_convert::b2nd::{self, B2ndFile, EncodeOptions};
//!
//! // A 3 x 4 float32 array, C order, little-endian, with one vlmeta entry (msgpack "hi").
//! let data: Vec<u8> = (0..12u16).flat_map(|v| f32::from(v).to_le_bytes()).collect();
//! let vlmeta = [("note".to_string(), vec![0xa2, b'h', b'i'])];
//! let frame = b2nd::encode(&data, &[3, 4], 4, "<f4", &vlmeta, &EncodeOptions::default())?;
//!
//! let f = B2ndFile::parse(&frame, &rasdf::Limits::default())?;
//! assert_eq!((f.shape.as_slice(), f.dtype.as_deref()), (&[3, 4][..], Some("<f4")));
//! assert_eq!(f.decode()?, data);
//! assert_eq!(b2nd::msgpack::decode(&f.vlmeta[0].1)?, b2nd::msgpack::Value::from("hi"));
//! # Ok::<(), rasdf_convert::ConvertError>(())
//! ```

pub mod msgpack;

use std::ops::Range;

use rayon::prelude::*;

use super::ConvertError;
use msgpack::Msgpack;
use rasdf::Limits;
use rasdf::ndarray::{ByteOrder, Datatype, Field, ScalarType};

use rasdf::blosc::{self as chunk, BloscError, Frame};
pub use rasdf::blosc::{BloscCodec, ChunkAt};

/// The frame's first ten bytes: a msgpack array of 14 and the string `b2frame\0`.
pub const MAGIC: &[u8; 10] = rasdf::blosc::FRAME_MAGIC;
/// The fixed part of the frame header, before the metalayers.
const HEADER_MIN: usize = 87;
/// The most dimensions b2nd allows.
pub const MAX_DIM: usize = 16;
/// The most variable-length metalayers a frame holds (C-Blosc2's limit).
pub const MAX_VLMETALAYERS: usize = 8 * 1024;

fn malformed(what: impl Into<String>) -> ConvertError {
    ConvertError::Malformed { format: "b2nd", what: what.into() }
}

fn unsupported(what: impl Into<String>) -> ConvertError {
    ConvertError::Unsupported(what.into())
}

fn from_blosc(e: BloscError) -> ConvertError {
    match e {
        BloscError::Malformed(m) => malformed(m),
        BloscError::Unsupported(m) => unsupported(m),
    }
}

/// Reads a metalayer section (header or trailer): `[index size, {name: offset}, [bytes]]`,
/// offsets from the start of `section` (whose first byte is byte `base` of the file).
fn metalayers(section: &[u8], start: usize, base: usize) -> Result<Vec<(String, &[u8])>, ConvertError> {
    let mut m = Msgpack { b: section, at: start, base };
    if m.array("the metalayers")? != 3 {
        return Err(malformed(format!("the metalayers at byte {} are not a list of 3", base + start)));
    }
    m.int("the metalayer index size")?;
    let n = m.map("the metalayer index")?;
    if n > MAX_VLMETALAYERS {
        return Err(malformed(format!("{n} metalayers at byte {} (Blosc2 allows {MAX_VLMETALAYERS})", base + start)));
    }
    let mut out = Vec::with_capacity(n.min(section.len()));
    for _ in 0..n {
        let name = m.str("a metalayer name")?.to_string();
        let offset = m.int("a metalayer offset")?;
        let at = usize::try_from(offset)
            .ok()
            .filter(|&o| o < section.len())
            .ok_or_else(|| malformed(format!("metalayer {name:?} is at offset {offset}, outside its section")))?;
        let mut content = Msgpack { b: section, at, base };
        let bytes = content.bin(&format!("metalayer {name:?}"))?;
        out.push((name, bytes));
    }
    Ok(out)
}

/// A b2nd array in a Blosc2 contiguous frame, over the file's bytes.
#[derive(Debug)]
pub struct B2ndFile<'a> {
    bytes: &'a [u8],
    /// The array's shape.
    pub shape: Vec<usize>,
    /// The shape of each chunk.
    pub chunkshape: Vec<usize>,
    /// The shape of each block inside a chunk.
    pub blockshape: Vec<usize>,
    /// The NumPy dtype string as stored (`<f4`, `[('a', '<i4'), ('b', 'S2')]`), or
    /// `None` for the older layout without one.
    pub dtype: Option<String>,
    /// Bytes per item.
    pub typesize: usize,
    /// Each chunk, in C order over the chunk grid.
    pub chunks: Vec<ChunkAt>,
    /// Bytes of each decoded chunk (the chunk shape rounded up to blocks, padded).
    pub chunk_bytes: usize,
    /// The variable-length metalayers of the trailer (python-blosc2's `vlmeta`): each
    /// name and its content, stored as a Blosc2 chunk and here decoded (python-blosc2's
    /// are one msgpack value each, see [`msgpack`]).
    pub vlmeta: Vec<(String, Vec<u8>)>,
}

impl<'a> B2ndFile<'a> {
    /// Reads and checks the frame in `bytes`: its header, the `b2nd` metalayer, the
    /// chunk offsets (decoded) and the trailer. Chunks are decoded by [`Self::decode`].
    ///
    /// # Errors
    /// [`ConvertError::NotFormat`] without the magic; [`ConvertError::Malformed`] for
    /// sizes, offsets or msgpack that do not hold (with the byte offset);
    /// [`ConvertError::Unsupported`] for sparse frames, variable-length chunks, or an
    /// array larger than `limits` allow.
    pub fn parse(bytes: &'a [u8], limits: &Limits) -> Result<Self, ConvertError> {
        if bytes.get(..MAGIC.len()) != Some(&MAGIC[..]) {
            return Err(ConvertError::NotFormat { format: "b2nd", why: "no b2frame magic at byte 0".into() });
        }
        let frame = Frame::parse_header(bytes).map_err(from_blosc)?;
        let Frame { header_len, nbytes, typesize, chunksize, .. } = frame;
        let bytes = &bytes[..frame.frame_len];
        let layers = metalayers(&bytes[..header_len], HEADER_MIN, 0)?;
        // Frames of caterva, b2nd's forerunner, name the same metalayer (without a dtype)
        // so.
        let meta = ["b2nd", "caterva"]
            .iter()
            .find_map(|want| layers.iter().find(|(name, _)| name == want))
            .ok_or_else(|| unsupported("the frame has no b2nd metalayer: a plain Blosc2 frame, not an array"))?
            .1;
        let meta_at = meta.as_ptr() as usize - bytes.as_ptr() as usize;
        let (shape, chunkshape, blockshape, dtype) = read_meta(meta, meta_at)?;
        let ndim = shape.len();
        let items: u64 = shape.iter().try_fold(1u64, |p, &d| p.checked_mul(d as u64)).unwrap_or(u64::MAX);
        Limits::check("array elements", items, limits.max_array_elements).map_err(|e| unsupported(e.to_string()))?;
        let total = items.saturating_mul(typesize as u64);
        Limits::check("decoded array bytes", total, limits.max_block_bytes).map_err(|e| unsupported(e.to_string()))?;
        // The chunk grid, and each chunk's items rounded up to whole blocks.
        let mut nchunks = 1u64;
        let mut chunk_items = 1u64;
        for d in 0..ndim {
            let (s, c, b) = (shape[d], chunkshape[d], blockshape[d]);
            if items > 0 && (c == 0 || b == 0 || b > c) {
                return Err(malformed(format!("dimension {d}: chunk {c} and block {b} do not tile a shape of {s}")));
            }
            if items > 0 {
                nchunks = nchunks.saturating_mul(s.div_ceil(c) as u64);
                chunk_items = chunk_items.saturating_mul(c.div_ceil(b) as u64 * b as u64);
            }
        }
        if items == 0 {
            nchunks = 0;
        }
        Limits::check("chunks", nchunks, limits.max_blocks as u64).map_err(|e| unsupported(e.to_string()))?;
        let chunk_bytes = chunk_items.saturating_mul(typesize as u64);
        if nchunks > 0 {
            if chunksize == 0 {
                return Err(unsupported("variable-length chunks (chunksize 0) are not read"));
            }
            if chunk_bytes != chunksize as u64 {
                return Err(malformed(format!(
                    "chunksize {chunksize} at byte 58 is not the {chunk_bytes} bytes of a {chunkshape:?} chunk in {blockshape:?} blocks"
                )));
            }
            if nbytes as u64 != nchunks.saturating_mul(chunk_bytes) {
                return Err(malformed(format!("nbytes {nbytes} at byte 30 is not {nchunks} chunks of {chunk_bytes}")));
            }
        }
        // Both are bounded by the limits checked above.
        let too_large = |_| unsupported("the array is larger than this machine can address");
        let chunk_bytes = usize::try_from(chunk_bytes).map_err(too_large)?;
        let nchunks = usize::try_from(nchunks).map_err(too_large)?;
        // The chunks, then the chunk of offsets, then the trailer.
        let mut frame = frame;
        let trailer_start = frame.read_offsets(bytes, nchunks).map_err(from_blosc)?;
        let chunks = frame.chunks;
        let mut vlmeta = Vec::new();
        for (name, stored) in read_trailer(bytes, trailer_start)? {
            let what = |m: String| malformed(format!("metalayer {name:?} in the trailer at byte {trailer_start}: {m}"));
            let h = chunk::ChunkHeader::parse(stored).map_err(|e| what(e.to_string()))?;
            Limits::check("metalayer bytes", h.nbytes as u64, limits.max_tree_bytes)
                .map_err(|e| unsupported(e.to_string()))?;
            let mut content = vec![0u8; h.nbytes];
            chunk::decode(stored, &mut content).map_err(|e| what(e.to_string()))?;
            vlmeta.push((name, content));
        }
        Ok(B2ndFile { bytes, shape, chunkshape, blockshape, dtype, typesize, chunks, chunk_bytes, vlmeta })
    }

    /// The ASDF datatype and byte order of the items, and the axes a `V` (void) dtype
    /// adds (its bytes as `uint8`).
    ///
    /// # Errors
    /// [`ConvertError::Unsupported`] for a dtype ASDF has no datatype for (datetimes,
    /// objects, `float128`), or one whose size is not the frame's typesize.
    pub fn datatype(&self) -> Result<(Datatype, ByteOrder, Option<usize>), ConvertError> {
        let (datatype, order, extra) = match self.dtype.as_deref() {
            // python-blosc2 reads a frame without a dtype as bytes of the typesize.
            None => (Datatype::Ascii(self.typesize), ByteOrder::Little, None),
            Some(s) => parse_dtype(s)?,
        };
        let size = extra.unwrap_or_else(|| datatype.size());
        if size != self.typesize {
            return Err(malformed(format!(
                "dtype {:?} has {size} bytes, but the frame's typesize is {}",
                self.dtype.as_deref().unwrap_or(""),
                self.typesize
            )));
        }
        Ok((datatype, order, extra))
    }

    /// Decodes every chunk (in parallel) and returns the array's bytes in C order, items
    /// as stored.
    ///
    /// # Errors
    /// [`ConvertError::Malformed`] for a damaged chunk (with its number and byte offset);
    /// [`ConvertError::Unsupported`] for a plugin codec or filter.
    pub fn decode(&self) -> Result<Vec<u8>, ConvertError> {
        let items: usize = self.shape.iter().product();
        let total = items * self.typesize;
        let mut out = rasdf::block::codec::zeroed(total)
            .ok_or_else(|| unsupported(format!("cannot allocate the {total} bytes of the array")))?;
        if items == 0 {
            return Ok(out);
        }
        if self.chunks_are_slabs() {
            // Each chunk decodes straight into its rows (the last, when padded, as far as
            // the array goes).
            return out
                .par_chunks_mut(self.chunk_bytes)
                .enumerate()
                .try_for_each(|(i, dst)| self.decode_chunk(i, dst))
                .map(|()| out);
        }
        let grid: Vec<usize> = self.shape.iter().zip(&self.chunkshape).map(|(s, c)| s.div_ceil(*c)).collect();
        // A few chunks per thread at a time, decoded into buffers kept for the next few.
        let batch = (4 * rayon::current_num_threads().max(1)).min(self.chunks.len());
        // Only the blocks that reach into the array are decoded; the buffers' other pages
        // are never touched.
        let dims = [&self.shape[..], &self.chunkshape, &self.blockshape];
        let mut bufs = Vec::with_capacity(batch);
        for _ in 0..batch {
            bufs.push(
                rasdf::block::codec::zeroed(self.chunk_bytes)
                    .ok_or_else(|| unsupported(format!("cannot allocate a chunk of {} bytes", self.chunk_bytes)))?,
            );
        }
        for start in (0..self.chunks.len()).step_by(batch) {
            let end = (start + batch).min(self.chunks.len());
            bufs[..end - start].par_iter_mut().zip(start..end).try_for_each(|(buf, i)| {
                let want = chunk_ranges(dims, self.typesize, &unravel(i, &grid));
                self.decode_chunk_part(i, buf, &want)
            })?;
            for (i, buf) in (start..end).zip(&bufs) {
                let coords = unravel(i, &grid);
                scatter(dims, self.typesize, &coords, buf, &mut out);
            }
        }
        Ok(out)
    }

    /// Decodes the chunks in order, a few at a time in parallel, and hands each to `emit`
    /// as the array's next bytes (the last without its padding), when they are runs of
    /// whole rows ([`Self::decode`] otherwise); stops early when `emit` returns `false`.
    /// Returns whether the chunks were such.
    ///
    /// # Errors
    /// As [`Self::decode`].
    pub fn decode_rows(&self, mut emit: impl FnMut(Vec<u8>) -> bool) -> Result<bool, ConvertError> {
        if !self.chunks_are_slabs() {
            return Ok(false);
        }
        let total = self.shape.iter().product::<usize>() * self.typesize;
        let batch = (2 * rayon::current_num_threads().max(1)).min(self.chunks.len().max(1));
        for start in (0..self.chunks.len()).step_by(batch) {
            let end = (start + batch).min(self.chunks.len());
            let decoded: Vec<Vec<u8>> = (start..end)
                .into_par_iter()
                .map(|i| {
                    let len = self.chunk_bytes.min(total - i * self.chunk_bytes);
                    let mut buf = rasdf::block::codec::zeroed(len)
                        .ok_or_else(|| unsupported(format!("cannot allocate a chunk of {len} bytes")))?;
                    self.decode_chunk(i, &mut buf)?;
                    Ok(buf)
                })
                .collect::<Result<_, ConvertError>>()?;
            for buf in decoded {
                if !emit(buf) {
                    return Ok(true);
                }
            }
        }
        Ok(true)
    }

    /// Whether each chunk is a run of whole rows of the array, in order: every axis but
    /// the first whole in chunks and blocks, and the blocks tiling a chunk's rows. The
    /// decoded chunks then lie one after another in the C-order array (python-blosc2's
    /// and rasdf's partitions of most arrays are such).
    pub fn chunks_are_slabs(&self) -> bool {
        match self.shape.len() {
            0 => true,
            _ => {
                self.chunkshape[1..] == self.shape[1..]
                    && self.blockshape[1..] == self.shape[1..]
                    && self.chunkshape[0].is_multiple_of(self.blockshape[0])
            }
        }
    }

    /// Decodes chunk `i`, or as much of it as `buf` holds (at most `chunk_bytes`), into
    /// `buf`.
    fn decode_chunk(&self, i: usize, buf: &mut [u8]) -> Result<(), ConvertError> {
        let n = buf.len();
        self.decode_chunk_part(i, buf, std::slice::from_ref(&(0..n)))
    }

    /// Decodes the parts of chunk `i` that the byte ranges `want` reach into (see
    /// [`chunk::decode_part`]).
    fn decode_chunk_part(&self, i: usize, buf: &mut [u8], want: &[Range<usize>]) -> Result<(), ConvertError> {
        let value: &[u8] = match self.chunks[i] {
            ChunkAt::Zeros => &[0],
            ChunkAt::Nan => chunk::nan_bytes(self.typesize)
                .ok_or_else(|| malformed(format!("chunk {i} is all NaN but items have {} bytes", self.typesize)))?,
            ChunkAt::Data(at) => {
                return chunk::decode_part(&self.bytes[at..], self.chunk_bytes, buf, want).map(drop).map_err(
                    |e| match e {
                        BloscError::Malformed(m) => malformed(format!("chunk {i} at byte {at}: {m}")),
                        BloscError::Unsupported(m) => unsupported(format!("chunk {i} at byte {at}: {m}")),
                    },
                );
            }
        };
        chunk::fill_wanted(buf, want, value);
        Ok(())
    }
}

/// Reads the `b2nd` metalayer: `[version, ndim, shape, chunkshape, blockshape,
/// dtype_format, dtype]` (the last two may be missing).
#[allow(clippy::type_complexity)]
fn read_meta(meta: &[u8], base: usize) -> Result<(Vec<usize>, Vec<usize>, Vec<usize>, Option<String>), ConvertError> {
    let mut m = Msgpack::new(meta, base);
    let fields = m.array("the b2nd metalayer")?;
    if !(5..=7).contains(&fields) {
        return Err(malformed(format!("the b2nd metalayer at byte {base} has {fields} fields, not 7")));
    }
    let version = m.int("the b2nd version")?;
    if version != 0 {
        return Err(unsupported(format!("b2nd metalayer version {version} (rasdf reads 0)")));
    }
    let ndim = m.int("ndim")?;
    let ndim = usize::try_from(ndim)
        .ok()
        .filter(|&n| n <= MAX_DIM)
        .ok_or_else(|| malformed(format!("ndim {ndim} at byte {base} is not 0 to {MAX_DIM}")))?;
    let mut list = |what: &str| -> Result<Vec<usize>, ConvertError> {
        let at = m.pos();
        let n = m.array(what)?;
        if n != ndim {
            return Err(malformed(format!("{what} at byte {at} has {n} dimensions, not {ndim}")));
        }
        (0..n)
            .map(|_| {
                let v = m.int(what)?;
                usize::try_from(v).map_err(|_| malformed(format!("{what} at byte {at} has the negative size {v}")))
            })
            .collect()
    };
    let shape = list("shape")?;
    let chunkshape = list("chunkshape")?;
    let blockshape = list("blockshape")?;
    let dtype = match fields {
        7 => {
            let format = m.int("the dtype format")?;
            if format != 0 {
                return Err(unsupported(format!("dtype format {format}: only NumPy dtypes (0) are read")));
            }
            Some(m.str("the dtype")?.to_string())
        }
        _ => None,
    };
    Ok((shape, chunkshape, blockshape, dtype))
}

/// Reads the trailer at `start`: `[version, metalayers, length, fingerprint]`, the
/// length also found 22 bytes before the frame's end.
fn read_trailer(frame: &[u8], start: usize) -> Result<Vec<(String, &[u8])>, ConvertError> {
    let len = frame.len();
    if len < start + 23 || frame[len - 23] != 0xce {
        return Err(malformed(format!("no trailer between byte {start} and the frame's end at {len}")));
    }
    let trailer_len = u32::from_be_bytes(frame[len - 22..len - 18].try_into().unwrap_or([0; 4])) as usize;
    if trailer_len != len - start {
        return Err(malformed(format!(
            "the trailer length {trailer_len} at byte {} is not the {} bytes from {start} to the end",
            len - 22,
            len - start
        )));
    }
    let trailer = &frame[start..];
    let mut m = Msgpack::new(trailer, start);
    if m.array("the trailer")? != 4 {
        return Err(malformed(format!("the trailer at byte {start} is not a list of 4")));
    }
    m.int("the trailer version")?;
    metalayers(trailer, m.at, start)
}

/// The index tuple of item `i` of a C-order grid.
fn unravel(mut i: usize, grid: &[usize]) -> Vec<usize> {
    let mut c = vec![0; grid.len()];
    for d in (0..grid.len()).rev() {
        c[d] = i % grid[d];
        i /= grid[d];
    }
    c
}

/// Visits each block of the chunk at `coords`: its offset in the decoded chunk, the
/// global index of its first item, and how many of its items along each axis lie inside
/// both the chunk and the array (blocks wholly in the padding are skipped).
///
/// Only those blocks are walked (so a chunk padded far past the array costs what the
/// array holds), in C order.
fn for_each_block(
    shape: &[usize],
    chunkshape: &[usize],
    blockshape: &[usize],
    coords: &[usize],
    mut f: impl FnMut(usize, &[usize], &[usize]),
) {
    let ndim = shape.len();
    let bgrid: Vec<usize> = chunkshape.iter().zip(blockshape).map(|(c, b)| c.div_ceil(*b)).collect();
    let block_items: usize = blockshape.iter().product();
    // Along each axis, the blocks that reach into the array.
    let mut reach = vec![0; ndim];
    for d in 0..ndim {
        let left = shape[d].saturating_sub(coords[d] * chunkshape[d]);
        reach[d] = bgrid[d].min(left.div_ceil(blockshape[d]));
        if reach[d] == 0 {
            return;
        }
    }
    let mut b = vec![0; ndim];
    let mut start = vec![0; ndim];
    let mut count = vec![0; ndim];
    loop {
        let mut nb = 0;
        for d in 0..ndim {
            nb = nb * bgrid[d] + b[d];
            let local = b[d] * blockshape[d];
            start[d] = coords[d] * chunkshape[d] + local;
            count[d] = blockshape[d].min(chunkshape[d] - local).min(shape[d] - start[d]);
        }
        f(nb * block_items, &start, &count);
        if !step_index(&mut b, &reach) {
            return;
        }
    }
}

/// Steps the index `idx` to the next below `ends` in C order; `false` after the last.
fn step_index(idx: &mut [usize], ends: &[usize]) -> bool {
    for d in (0..idx.len()).rev() {
        idx[d] += 1;
        if idx[d] < ends[d] {
            return true;
        }
        idx[d] = 0;
    }
    false
}

/// The byte ranges of the decoded chunk at `coords` that hold items of the array: its
/// blocks that reach into it, whole, neighbours joined.
fn chunk_ranges([shape, chunkshape, blockshape]: [&[usize]; 3], ts: usize, coords: &[usize]) -> Vec<Range<usize>> {
    let block_bytes = blockshape.iter().product::<usize>() * ts;
    let mut ranges: Vec<Range<usize>> = Vec::new();
    for_each_block(shape, chunkshape, blockshape, coords, |at, _, _| {
        let r = at * ts..at * ts + block_bytes;
        match ranges.last_mut() {
            Some(last) if last.end == r.start => last.end = r.end,
            _ => ranges.push(r),
        }
    });
    ranges
}

/// Calls `f(row offset in the block, row offset in the array)` in items for each row
/// (the last axis) of `count` items of a block of `blockshape` at `start` of `shape`.
fn for_each_row(
    shape: &[usize],
    blockshape: &[usize],
    start: &[usize],
    count: &[usize],
    mut f: impl FnMut(usize, usize),
) {
    let ndim = shape.len();
    if ndim == 0 {
        f(0, 0);
        return;
    }
    let mut idx = vec![0; ndim - 1];
    loop {
        let (mut src, mut dst) = (0, 0);
        for d in 0..ndim {
            let i = if d + 1 < ndim { idx[d] } else { 0 };
            src = src * blockshape[d] + i;
            dst = dst * shape[d] + start[d] + i;
        }
        f(src, dst);
        if !step_index(&mut idx, &count[..ndim - 1]) {
            return;
        }
    }
}

/// Calls `f(bytes in the decoded chunk, bytes in the C-order array)` for each run of
/// items along the last axis of the chunk at `coords` that lies inside the array.
fn chunk_rows(
    [shape, chunkshape, blockshape]: [&[usize]; 3],
    ts: usize,
    coords: &[usize],
    mut f: impl FnMut(std::ops::Range<usize>, std::ops::Range<usize>),
) {
    for_each_block(shape, chunkshape, blockshape, coords, |block_at, start, count| {
        let row = count.last().copied().unwrap_or(1) * ts;
        for_each_row(shape, blockshape, start, count, |src, dst| {
            let (s, d) = ((block_at + src) * ts, dst * ts);
            f(s..s + row, d..d + row);
        });
    });
}

/// Copies the items of one decoded chunk to their places in the C-order array `out`.
fn scatter(dims: [&[usize]; 3], ts: usize, coords: &[usize], chunk: &[u8], out: &mut [u8]) {
    chunk_rows(dims, ts, coords, |c, a| out[a].copy_from_slice(&chunk[c]));
}

/// Copies the items of the chunk at `coords` from the C-order array `data` into a chunk
/// buffer (padding stays zero): the inverse of [`scatter`].
fn gather(dims: [&[usize]; 3], ts: usize, coords: &[usize], data: &[u8], chunk: &mut [u8]) {
    chunk_rows(dims, ts, coords, |c, a| chunk[c].copy_from_slice(&data[a]));
}

/// A Python literal of a NumPy dtype description: text, an integer, or a list or tuple.
#[derive(Debug, Clone, PartialEq)]
enum Literal {
    Str(String),
    Int(i64),
    List(Vec<Literal>),
}

/// Parses the Python literals `str(dtype)` writes: quoted text, integers, lists and
/// tuples (nesting at most 32 deep).
fn parse_literal(s: &str) -> Option<Literal> {
    fn value(b: &[u8], at: &mut usize, depth: usize) -> Option<Literal> {
        while b.get(*at).is_some_and(u8::is_ascii_whitespace) {
            *at += 1;
        }
        match *b.get(*at)? {
            q @ (b'\'' | b'"') => {
                *at += 1;
                let mut text = Vec::new();
                loop {
                    match *b.get(*at)? {
                        c if c == q => break,
                        b'\\' => {
                            *at += 1;
                            text.push(*b.get(*at)?);
                        }
                        c => text.push(c),
                    }
                    *at += 1;
                }
                *at += 1;
                Some(Literal::Str(String::from_utf8(text).ok()?))
            }
            open @ (b'[' | b'(') => {
                if depth > 32 {
                    return None;
                }
                let close = if open == b'[' { b']' } else { b')' };
                *at += 1;
                let mut items = Vec::new();
                loop {
                    while b.get(*at).is_some_and(u8::is_ascii_whitespace) {
                        *at += 1;
                    }
                    if *b.get(*at)? == close {
                        *at += 1;
                        return Some(Literal::List(items));
                    }
                    items.push(value(b, at, depth + 1)?);
                    while b.get(*at).is_some_and(u8::is_ascii_whitespace) {
                        *at += 1;
                    }
                    match *b.get(*at)? {
                        b',' => *at += 1,
                        c if c == close => {}
                        _ => return None,
                    }
                }
            }
            _ => {
                let begin = *at;
                while b.get(*at).is_some_and(|c| c.is_ascii_digit() || *c == b'-') {
                    *at += 1;
                }
                std::str::from_utf8(&b[begin..*at]).ok()?.parse().ok().map(Literal::Int)
            }
        }
    }
    let b = s.as_bytes();
    let mut at = 0;
    let v = value(b, &mut at, 0)?;
    b[at..].iter().all(u8::is_ascii_whitespace).then_some(v)
}

/// A simple NumPy dtype string (`<f4`, `|b1`, `S5`, `>U3`, `?`) as an ASDF datatype, or
/// `(uint8, n)` for `V{n}`.
fn simple_dtype(s: &str) -> Result<(Datatype, ByteOrder, Option<usize>), ConvertError> {
    let no = || unsupported(format!("the dtype {s:?} has no ASDF datatype"));
    let (order, rest) = match s.as_bytes().first() {
        Some(b'<' | b'|' | b'=') => (ByteOrder::Little, &s[1..]),
        Some(b'>') => (ByteOrder::Big, &s[1..]),
        _ => (ByteOrder::Little, s),
    };
    if rest == "?" {
        return Ok((Datatype::Scalar(ScalarType::Bool8), order, None));
    }
    let kind = rest.chars().next().ok_or_else(no)?;
    let size: usize = rest[kind.len_utf8()..].parse().map_err(|_| no())?;
    use ScalarType as T;
    let t = match (kind, size) {
        ('b', 1) => T::Bool8,
        ('i', 1) => T::Int8,
        ('i', 2) => T::Int16,
        ('i', 4) => T::Int32,
        ('i', 8) => T::Int64,
        ('u', 1) => T::UInt8,
        ('u', 2) => T::UInt16,
        ('u', 4) => T::UInt32,
        ('u', 8) => T::UInt64,
        ('f', 2) => T::Float16,
        ('f', 4) => T::Float32,
        ('f', 8) => T::Float64,
        ('c', 8) => T::Complex64,
        ('c', 16) => T::Complex128,
        ('S' | 'a', n) => return Ok((Datatype::Ascii(n), order, None)),
        ('U', n) => return Ok((Datatype::Ucs4(n), order, None)),
        ('V', n) => return Ok((Datatype::Scalar(T::UInt8), order, Some(n))),
        _ => return Err(no()),
    };
    Ok((Datatype::Scalar(t), order, None))
}

/// A field list (`[(name, format[, shape]), ...]`) as an ASDF record.
fn record_dtype(items: &[Literal], depth: usize) -> Result<Datatype, ConvertError> {
    let bad = |why: &str| unsupported(format!("a structured dtype rasdf cannot read: {why}"));
    if depth > 32 {
        return Err(bad("nested too deep"));
    }
    let mut fields = Vec::with_capacity(items.len());
    for item in items {
        let Literal::List(parts) = item else { return Err(bad("a field that is not a tuple")) };
        let (name, format, shape) = match parts.as_slice() {
            [Literal::Str(n), f] => (n, f, Vec::new()),
            [Literal::Str(n), f, Literal::Int(k)] => {
                (n, f, vec![usize::try_from(*k).map_err(|_| bad("a negative shape"))?])
            }
            [Literal::Str(n), f, Literal::List(dims)] => {
                let dims = dims
                    .iter()
                    .map(|d| match d {
                        Literal::Int(k) => usize::try_from(*k).map_err(|_| bad("a negative shape")),
                        _ => Err(bad("a shape that is not integers")),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                (n, f, dims)
            }
            _ => return Err(bad("a field that is not (name, format[, shape])")),
        };
        let (datatype, byteorder) = match format {
            Literal::Str(f) => match simple_dtype(f)? {
                (_, _, Some(_)) => return Err(bad("a void field")),
                (dt, order, None) => (dt, order),
            },
            Literal::List(sub) => (record_dtype(sub, depth + 1)?, ByteOrder::Little),
            Literal::Int(_) => return Err(bad("a field format that is a number")),
        };
        fields.push(Field { name: Some(name.clone()), datatype, byteorder, shape });
    }
    Ok(Datatype::Record(fields))
}

/// A NumPy dtype string as stored in the metalayer: a simple one, or the `str()` of a
/// structured one.
fn parse_dtype(s: &str) -> Result<(Datatype, ByteOrder, Option<usize>), ConvertError> {
    let t = s.trim();
    if t.starts_with('[') {
        let Some(Literal::List(items)) = parse_literal(t) else {
            return Err(unsupported(format!("the dtype {s:?} is not a list of fields rasdf reads")));
        };
        return Ok((record_dtype(&items, 0)?, ByteOrder::Little, None));
    }
    simple_dtype(t)
}

/// Python's `repr` of a string (single quotes unless the text holds one and no `"`).
fn py_repr(s: &str) -> String {
    let q = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(q);
    for c in s.chars() {
        if c == q || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push(q);
    out
}

/// The NumPy dtype string of an ASDF datatype in `order` (as `dtype.str`, or the `str()`
/// of a structured dtype, which python-blosc2 reads with `ast.literal_eval`).
pub fn dtype_string(datatype: &Datatype, order: ByteOrder) -> String {
    let o = |size: usize| match (size, order) {
        (1, _) => '|',
        (_, ByteOrder::Little) => '<',
        (_, ByteOrder::Big) => '>',
    };
    match datatype {
        Datatype::Scalar(t) => {
            let kind = match t {
                ScalarType::Bool8 => 'b',
                ScalarType::Int8 | ScalarType::Int16 | ScalarType::Int32 | ScalarType::Int64 => 'i',
                ScalarType::UInt8 | ScalarType::UInt16 | ScalarType::UInt32 | ScalarType::UInt64 => 'u',
                ScalarType::Float16 | ScalarType::Float32 | ScalarType::Float64 => 'f',
                ScalarType::Complex64 | ScalarType::Complex128 => 'c',
            };
            format!("{}{kind}{}", o(t.size()), t.size())
        }
        Datatype::Ascii(n) => format!("|S{n}"),
        Datatype::Ucs4(n) => format!("{}U{n}", o(4)),
        Datatype::Record(fields) => {
            let parts: Vec<String> = fields
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let name = py_repr(&f.numpy_name(i));
                    let format = match &f.datatype {
                        Datatype::Record(_) => dtype_string(&f.datatype, f.byteorder),
                        other => py_repr(&dtype_string(other, f.byteorder)),
                    };
                    match f.shape.as_slice() {
                        [] => format!("({name}, {format})"),
                        [n] => format!("({name}, {format}, ({n},))"),
                        dims => {
                            let d: Vec<String> = dims.iter().map(usize::to_string).collect();
                            format!("({name}, {format}, ({}))", d.join(", "))
                        }
                    }
                })
                .collect();
            format!("[{}]", parts.join(", "))
        }
    }
}

/// How [`encode`] lays out and compresses the array: [`EncodeOptions::default`], then a
/// setter for each field to change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct EncodeOptions {
    /// The codec of the chunks.
    pub codec: BloscCodec,
    /// Largest decoded chunk, in bytes (chunks are whole rows of the inner axes where
    /// they fit).
    pub max_chunk_bytes: usize,
    /// Largest block, in bytes.
    pub max_block_bytes: usize,
}

impl Default for EncodeOptions {
    fn default() -> Self {
        EncodeOptions { codec: BloscCodec::Zstd, max_chunk_bytes: 4 << 20, max_block_bytes: 256 << 10 }
    }
}

impl EncodeOptions {
    /// These options with `codec` set (see the field).
    #[must_use]
    pub fn codec(mut self, codec: BloscCodec) -> Self {
        self.codec = codec;
        self
    }

    /// These options with `max_chunk_bytes` set (see the field).
    #[must_use]
    pub fn max_chunk_bytes(mut self, max_chunk_bytes: usize) -> Self {
        self.max_chunk_bytes = max_chunk_bytes;
        self
    }

    /// These options with `max_block_bytes` set (see the field).
    #[must_use]
    pub fn max_block_bytes(mut self, max_block_bytes: usize) -> Self {
        self.max_block_bytes = max_block_bytes;
        self
    }
}

/// `outer` halved on its outermost axes until its items of `ts` bytes take at most
/// `max` bytes (an axis goes down to 1 before the next one is cut).
fn partition(outer: &[usize], ts: usize, max: usize) -> Vec<usize> {
    let mut p = outer.to_vec();
    let bytes = |p: &[usize]| p.iter().product::<usize>().saturating_mul(ts);
    for d in 0..p.len() {
        while bytes(&p) > max && p[d] > 1 {
            p[d] = p[d].div_ceil(2);
        }
    }
    p
}

/// Appends a msgpack list of `values`, each an `i64` when `wide`, else an `i32` (chunk
/// and block sizes, which [`encode`] keeps under 2^31 bytes; lists have at most
/// [`MAX_DIM`] items).
#[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
fn msgpack_ints(out: &mut Vec<u8>, values: &[usize], wide: bool) {
    match values.len() {
        n @ 0..=15 => out.push(0x90 | n as u8),
        n => {
            out.push(0xdc);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
    }
    for &v in values {
        if wide {
            out.push(0xd3);
            out.extend_from_slice(&(v as i64).to_be_bytes());
        } else {
            out.push(0xd2);
            out.extend_from_slice(&(v as i32).to_be_bytes());
        }
    }
}

/// The `b2nd` metalayer's bytes (at most [`MAX_DIM`] axes, a dtype under 4 GiB: both
/// checked by [`encode`]).
#[allow(clippy::cast_possible_truncation)]
fn meta_bytes(shape: &[usize], chunkshape: &[usize], blockshape: &[usize], dtype: &str) -> Vec<u8> {
    let mut m = vec![0x97, 0x00, shape.len() as u8];
    msgpack_ints(&mut m, shape, true);
    msgpack_ints(&mut m, chunkshape, false);
    msgpack_ints(&mut m, blockshape, false);
    m.push(0x00);
    m.push(0xdb);
    m.extend_from_slice(&(dtype.len() as u32).to_be_bytes());
    m.extend_from_slice(dtype.as_bytes());
    m
}

/// A b2nd frame to write: the C-order items `data` (`typesize` bytes each) of `shape`,
/// with the NumPy `dtype` string and the variable-length metalayers `vlmeta` (name and
/// content, python-blosc2's `vlmeta` when the content is one msgpack value), laid out in
/// chunks and blocks as [`EncodeOptions`] bound them.
#[derive(Debug)]
pub struct Encoder<'d> {
    /// The items, or `None` when they come with [`Encoder::write_from`].
    data: Option<&'d [u8]>,
    shape: Vec<usize>,
    typesize: usize,
    chunkshape: Vec<usize>,
    blockshape: Vec<usize>,
    grid: Vec<usize>,
    nchunks: usize,
    chunk_bytes: usize,
    block_bytes: usize,
    meta: Vec<u8>,
    vlmeta: &'d [(String, Vec<u8>)],
    codec: BloscCodec,
}

impl<'d> Encoder<'d> {
    /// Checks what is to be written and lays it out. Its items come with
    /// [`Encoder::with_items`] (then [`Encoder::write_to`]) or, as they are read, with
    /// [`Encoder::write_from`].
    ///
    /// # Errors
    /// [`ConvertError::Unsupported`] for more than [`MAX_DIM`] dimensions, items over
    /// 2^30 bytes, a metalayer name of 32 bytes or more, or more than
    /// [`MAX_VLMETALAYERS`] of them.
    pub fn new(
        shape: &[usize],
        typesize: usize,
        dtype: &str,
        vlmeta: &'d [(String, Vec<u8>)],
        options: &EncodeOptions,
    ) -> Result<Self, ConvertError> {
        let data = None;
        let half = i32::MAX as usize / 2;
        if let Some((name, _)) = vlmeta.iter().find(|(n, c)| n.len() >= 32 || c.len() > half) {
            return Err(unsupported(format!("the metalayer {name:?}: names are under 32 bytes, contents under 1 GiB")));
        }
        if vlmeta.len() > MAX_VLMETALAYERS {
            return Err(unsupported(format!("{} metalayers (Blosc2 holds {MAX_VLMETALAYERS})", vlmeta.len())));
        }
        if shape.len() > MAX_DIM {
            return Err(unsupported(format!("b2nd holds at most {MAX_DIM} dimensions, not {}", shape.len())));
        }
        if typesize == 0 || typesize > half || dtype.len() > half {
            return Err(unsupported(format!("items of {typesize} bytes")));
        }
        let items: usize = shape.iter().product();
        let max_chunk = options.max_chunk_bytes.clamp(typesize, half);
        let (chunkshape, blockshape) = if items == 0 {
            // Chunk and block sizes are 32-bit in Blosc2: an empty array's may be any.
            let c: Vec<usize> = shape.iter().map(|&s| s.min(i32::MAX as usize)).collect();
            (c.clone(), c)
        } else {
            let mut c = partition(shape, typesize, max_chunk);
            let b = partition(&c, typesize, options.max_block_bytes.clamp(typesize, max_chunk));
            // The chunk holds whole blocks along the axis the blocks cut (the axes before
            // it are 1 in blocks, those after whole), so no chunk is padded inside and,
            // when the blocks cut the first axis, chunks are runs of whole rows.
            if let Some(d) = (0..c.len()).find(|&d| b[d] < c[d]) {
                c[d] -= c[d] % b[d];
            }
            (c, b)
        };
        let grid: Vec<usize> =
            shape.iter().zip(&chunkshape).map(|(s, c)| if *c == 0 { 0 } else { s.div_ceil(*c) }).collect();
        let nchunks = if items == 0 { 0 } else { grid.iter().product() };
        let (chunk_items, block_items): (usize, usize) = match items {
            0 => (0, 0),
            _ => (
                chunkshape.iter().zip(&blockshape).map(|(c, b)| c.div_ceil(*b) * b).product(),
                blockshape.iter().product(),
            ),
        };
        let meta = meta_bytes(shape, &chunkshape, &blockshape, dtype);
        Ok(Encoder {
            data,
            shape: shape.to_vec(),
            typesize,
            chunkshape,
            blockshape,
            grid,
            nchunks,
            chunk_bytes: chunk_items * typesize,
            block_bytes: block_items * typesize,
            meta,
            vlmeta,
            codec: options.codec,
        })
    }

    /// The encoder with its items: `data`, C order.
    ///
    /// # Errors
    /// [`ConvertError::Unsupported`] when `data` is not the shape's size.
    pub fn with_items(self, data: &'d [u8]) -> Result<Self, ConvertError> {
        let items: usize = self.shape.iter().product();
        if Some(data.len()) != items.checked_mul(self.typesize) {
            return Err(unsupported(format!("{} bytes for {items} items of {}", data.len(), self.typesize)));
        }
        Ok(Encoder { data: Some(data), ..self })
    }

    /// The frame's header, with its frame length and compressed size left 0 (patched at
    /// bytes 16 and 39 once the chunks are written).
    #[allow(clippy::cast_possible_truncation)]
    fn header(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_MIN + 32 + self.meta.len());
        out.extend_from_slice(MAGIC);
        out.push(0xd2);
        out.extend_from_slice(&[0; 4]);
        out.push(0xcf);
        out.extend_from_slice(&[0; 8]);
        out.push(0xa4);
        let (general, chunksize) = match self.nchunks {
            // As python-blosc2 writes an empty array: variable-length chunks, format 3.
            0 => (0x53, 0),
            _ => (0x12, self.chunk_bytes),
        };
        // Never split: splitmode NEVER (2), stored minus one.
        let clevel = if self.codec == BloscCodec::None { 0 } else { 5 };
        out.extend_from_slice(&[general, 0, self.codec.compcode() | (clevel << 4), 1]);
        for (marker, v) in [(0xd3, self.nchunks * self.chunk_bytes), (0xd3, 0)] {
            out.push(marker);
            out.extend_from_slice(&(v as i64).to_be_bytes());
        }
        for v in [self.typesize, self.block_bytes, chunksize] {
            out.push(0xd2);
            out.extend_from_slice(&(v as i32).to_be_bytes());
        }
        out.extend_from_slice(&[0xd1, 0, 1, 0xd1, 0, 1, if self.vlmeta.is_empty() { 0xc2 } else { 0xc3 }]);
        let shuffle = if self.typesize > 1 { 1 } else { 0 };
        out.extend_from_slice(&[0xd8, 6, 0, 0, 0, 0, 0, shuffle, self.codec.compcode(), 0]);
        out.extend_from_slice(&[0; 8]);
        debug_assert_eq!(out.len(), HEADER_MIN);
        // The metalayers: one, b2nd.
        out.extend_from_slice(&[0x93, 0xcd, 0, 17, 0xde, 0, 1, 0xa4]);
        out.extend_from_slice(b"b2nd");
        out.push(0xd2);
        let offset_at = out.len();
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&[0xdc, 0, 1]);
        let meta_at = out.len() as i32;
        out[offset_at..offset_at + 4].copy_from_slice(&meta_at.to_be_bytes());
        out.push(0xc6);
        out.extend_from_slice(&(self.meta.len() as u32).to_be_bytes());
        out.extend_from_slice(&self.meta);
        let header_len = out.len() as i32;
        out[11..15].copy_from_slice(&header_len.to_be_bytes());
        out
    }

    /// The trailer: version 1, the variable-length metalayers (an index of name to
    /// offset from the trailer's start, whose size counts from its own marker, then the
    /// contents, each a chunk of bytes as C-Blosc2 stores them), its length, no
    /// fingerprint.
    #[allow(clippy::cast_possible_truncation)]
    fn trailer(&self) -> Vec<u8> {
        let mut out = vec![0x94, 0x01, 0x93, 0xcd, 0, 0, 0xde];
        out.extend_from_slice(&(self.vlmeta.len() as u16).to_be_bytes());
        let mut slots = Vec::with_capacity(self.vlmeta.len());
        for (name, _) in self.vlmeta {
            out.push(0xa0 | name.len() as u8);
            out.extend_from_slice(name.as_bytes());
            out.push(0xd2);
            slots.push(out.len());
            out.extend_from_slice(&[0; 4]);
        }
        let index_size = (out.len() - 3) as u16;
        out[4..6].copy_from_slice(&index_size.to_be_bytes());
        out.push(0xdc);
        out.extend_from_slice(&(self.vlmeta.len() as u16).to_be_bytes());
        for ((_, content), slot) in self.vlmeta.iter().zip(slots) {
            let rel = out.len() as i32;
            out[slot..slot + 4].copy_from_slice(&rel.to_be_bytes());
            let stored = chunk::encode(content, 1, content.len(), BloscCodec::Lz4, false);
            out.push(0xc6);
            out.extend_from_slice(&(stored.len() as u32).to_be_bytes());
            out.extend_from_slice(&stored);
        }
        out.push(0xce);
        let trailer_len = (out.len() + 4 + 18) as u32;
        out.extend_from_slice(&trailer_len.to_be_bytes());
        out.extend_from_slice(&[0xd8, 0]);
        out.extend_from_slice(&[0; 16]);
        out
    }

    /// Writes the frame to `w` (from its current position, which must be 0 of the
    /// frame): the chunks compressed a few at a time in parallel and written in order as
    /// they are done, so no more than a few are held; then the header's sizes patched.
    ///
    /// # Errors
    /// Those of `w`.
    pub fn write_to<W: std::io::Write + std::io::Seek>(&self, w: &mut W) -> std::io::Result<()> {
        let Some(data) = self.data else {
            return Err(std::io::Error::other("a b2nd encoder with no items writes with write_from"));
        };
        let batch = 4 * rayon::current_num_threads().max(1);
        self.write_frame(w, |emit| {
            for first in (0..self.nchunks).step_by(batch) {
                let last = (first + batch).min(self.nchunks);
                for c in self.compress_chunks(first..last, data, None) {
                    emit(&c)?;
                }
            }
            Ok(())
        })
    }

    /// [`Encoder::write_to`] with the array's items read from `data` in C order as they
    /// are needed (items given with [`Encoder::with_items`] are not used): only
    /// the rows of a few chunks along the first axis are held at a time, so an array
    /// larger than memory streams through.
    ///
    /// # Errors
    /// Those of `data` (one that ends early is an [`std::io::ErrorKind::UnexpectedEof`])
    /// and of `w`.
    pub fn write_from<R: std::io::Read, W: std::io::Write + std::io::Seek>(
        &self,
        mut data: R,
        w: &mut W,
    ) -> std::io::Result<()> {
        let batch = 4 * rayon::current_num_threads().max(1);
        let (Some(&rows), Some(&chunk_rows), Some(&slabs)) =
            (self.shape.first(), self.chunkshape.first(), self.grid.first())
        else {
            // A 0-d array: one item.
            let mut item = vec![0u8; self.typesize];
            data.read_exact(&mut item)?;
            return self.write_frame(w, |emit| {
                for c in self.compress_chunks(0..self.nchunks, &item, None) {
                    emit(&c)?;
                }
                Ok(())
            });
        };
        let row_bytes = self.shape[1..].iter().product::<usize>() * self.typesize;
        let per_slab = self.nchunks.checked_div(slabs).unwrap_or(0);
        let slabs_per_batch = (batch / per_slab.max(1)).max(1);
        self.write_frame(w, |emit| {
            let mut buf = Vec::new();
            for first in (0..slabs).step_by(slabs_per_batch) {
                let last = (first + slabs_per_batch).min(slabs);
                let held = (last * chunk_rows).min(rows) - first * chunk_rows;
                buf.resize(held * row_bytes, 0);
                data.read_exact(&mut buf)?;
                for c in self.compress_chunks(first * per_slab..last * per_slab, &buf, Some((first, held))) {
                    emit(&c)?;
                }
            }
            Ok(())
        })
    }

    /// The chunks numbered `range`, compressed in parallel, from `data`: the whole array,
    /// or with `slab` `(first, rows)` the `rows` rows from chunk row `first` on.
    fn compress_chunks(&self, range: Range<usize>, data: &[u8], slab: Option<(usize, usize)>) -> Vec<Vec<u8>> {
        let mut shape = self.shape.clone();
        if let (Some((_, rows)), Some(s)) = (slab, shape.first_mut()) {
            *s = rows;
        }
        range
            .into_par_iter()
            .map(|i| {
                let mut coords = unravel(i, &self.grid);
                if let (Some((first, _)), Some(c)) = (slab, coords.first_mut()) {
                    *c -= first;
                }
                let mut buf = vec![0u8; self.chunk_bytes];
                gather([&shape, &self.chunkshape, &self.blockshape], self.typesize, &coords, data, &mut buf);
                chunk::encode(&buf, self.typesize, self.block_bytes, self.codec, true)
            })
            .collect()
    }

    /// The frame: header, the chunks `chunks` hands to its writer in order, their
    /// offsets, the trailer; then the header's sizes patched.
    #[allow(clippy::cast_possible_wrap)]
    fn write_frame<W: std::io::Write + std::io::Seek>(
        &self,
        w: &mut W,
        chunks: impl FnOnce(&mut dyn FnMut(&[u8]) -> std::io::Result<()>) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        use std::io::SeekFrom;
        let start = w.stream_position()?;
        let header = self.header();
        w.write_all(&header)?;
        let mut offsets = Vec::with_capacity(8 * self.nchunks);
        let mut cbytes = 0u64;
        chunks(&mut |c: &[u8]| {
            offsets.extend_from_slice(&(cbytes as i64).to_le_bytes());
            cbytes += c.len() as u64;
            w.write_all(c)
        })?;
        if self.nchunks > 0 {
            w.write_all(&chunk::encode(&offsets, 8, offsets.len(), BloscCodec::None, false))?;
        }
        w.write_all(&self.trailer())?;
        let end = w.stream_position()?;
        w.seek(SeekFrom::Start(start + 16))?;
        w.write_all(&(end - start).to_be_bytes())?;
        w.seek(SeekFrom::Start(start + 39))?;
        w.write_all(&(cbytes as i64).to_be_bytes())?;
        w.seek(SeekFrom::Start(end))?;
        Ok(())
    }
}

/// The bytes of a b2nd frame (see [`Encoder`]), made in memory.
///
/// # Errors
/// As [`Encoder::new`] and [`Encoder::with_items`].
pub fn encode(
    data: &[u8],
    shape: &[usize],
    typesize: usize,
    dtype: &str,
    vlmeta: &[(String, Vec<u8>)],
    options: &EncodeOptions,
) -> Result<Vec<u8>, ConvertError> {
    let encoder = Encoder::new(shape, typesize, dtype, vlmeta, options)?.with_items(data)?;
    let mut out = std::io::Cursor::new(Vec::new());
    encoder.write_to(&mut out).map_err(|e| unsupported(format!("writing in memory: {e}")))?;
    Ok(out.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(shape: &[usize], ts: usize, options: &EncodeOptions) {
        let items: usize = shape.iter().product();
        let data: Vec<u8> = (0..items * ts).map(|i| u8::try_from(i * 7 % 251).unwrap()).collect();
        let vlmeta = [("a".to_string(), vec![0xc0]), ("name".to_string(), vec![0xa2, b'h', b'i'])];
        let frame = encode(&data, shape, ts, &format!("|V{ts}"), &vlmeta, options).unwrap();
        let f = B2ndFile::parse(&frame, &Limits::default()).unwrap();
        assert_eq!(f.shape, shape);
        assert_eq!(f.vlmeta, vlmeta);
        assert_eq!(f.decode().unwrap(), data, "shape {shape:?} chunks {:?} blocks {:?}", f.chunkshape, f.blockshape);
    }

    /// A reader that hands out at most 7 bytes a call.
    struct Trickle<'a>(&'a [u8]);

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(7).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn frames_written_from_a_reader_are_the_frames_written_from_memory() {
        let small = EncodeOptions { codec: BloscCodec::Lz4, max_chunk_bytes: 600, max_block_bytes: 96 };
        let tiny = EncodeOptions { codec: BloscCodec::Zstd, max_chunk_bytes: 64, max_block_bytes: 16 };
        let shapes = [&[37, 23, 5][..], &[1000], &[3, 1, 4, 1, 5], &[], &[0, 3], &[7, 0], &[2, 300], &[301]];
        for shape in shapes {
            for ts in [1, 3, 8] {
                for options in [&small, &tiny, &EncodeOptions::default()] {
                    let items: usize = shape.iter().product();
                    let data: Vec<u8> = (0..items * ts).map(|i| u8::try_from(i * 7 % 251).unwrap()).collect();
                    let vlmeta = [("a".to_string(), vec![0xc0])];
                    let dtype = format!("|V{ts}");
                    let whole = encode(&data, shape, ts, &dtype, &vlmeta, options).unwrap();
                    let e = Encoder::new(shape, ts, &dtype, &vlmeta, options).unwrap();
                    let mut out = std::io::Cursor::new(Vec::new());
                    e.write_from(Trickle(&data), &mut out).unwrap();
                    assert!(out.into_inner() == whole, "shape {shape:?}, {ts} bytes, {options:?}");
                    // Items that end early are an error, not a frame.
                    if !data.is_empty() {
                        let mut out = std::io::Cursor::new(Vec::new());
                        let short = e.write_from(&data[..data.len() - 1], &mut out).unwrap_err();
                        assert_eq!(short.kind(), std::io::ErrorKind::UnexpectedEof);
                    }
                    // An encoder given no items has none to write from.
                    assert!(e.write_to(&mut std::io::Cursor::new(Vec::new())).is_err());
                }
            }
        }
    }

    #[test]
    fn ragged_chunks_and_blocks_round_trip() {
        let small = EncodeOptions { codec: BloscCodec::Lz4, max_chunk_bytes: 600, max_block_bytes: 96 };
        for shape in [&[37, 23, 5][..], &[1000], &[3, 1, 4, 1, 5], &[], &[0, 3], &[7, 0]] {
            for ts in [1, 3, 8] {
                roundtrip(shape, ts, &small);
                roundtrip(shape, ts, &EncodeOptions::default());
            }
        }
    }

    #[test]
    fn chunks_of_whole_rows_decode_in_place_with_a_padded_last_one() {
        // 9 rows of 8: chunks of at most 128 bytes would be 3 rows, blocks of 64 bytes 2
        // rows, so chunks are cut to 2 rows, the fifth holding one.
        let options = EncodeOptions { codec: BloscCodec::Zstd, max_chunk_bytes: 128, max_block_bytes: 64 };
        let data: Vec<u8> = (0..9 * 8 * 4).map(|i| u8::try_from(i % 253).unwrap()).collect();
        let frame = encode(&data, &[9, 8], 4, "<u4", &[], &options).unwrap();
        let f = B2ndFile::parse(&frame, &Limits::default()).unwrap();
        assert_eq!((f.chunkshape.as_slice(), f.blockshape.as_slice(), f.chunks.len()), (&[2, 8][..], &[2, 8][..], 5));
        assert!(f.chunks_are_slabs());
        assert_eq!(f.decode().unwrap(), data);
    }

    #[test]
    fn dtype_strings_read_back() {
        for s in [
            "<f4",
            "|u1",
            ">i8",
            "|b1",
            "<c16",
            "|S5",
            "<U3",
            "[('a', '<i4'), ('b', '<f8'), ('c', 'S2')]",
            "[('x', '<f4', (2, 3)), ('y', [('p', '>u2'), ('q', '|b1')]), ('z', '<i2', (4,))]",
        ] {
            let (dt, order, extra) = parse_dtype(s).unwrap();
            assert_eq!(extra, None);
            let again = dtype_string(&dt, order);
            assert_eq!(parse_dtype(&again).unwrap().0, dt, "{s} -> {again}");
        }
        assert_eq!(parse_dtype("|V7").unwrap().2, Some(7));
        assert!(matches!(parse_dtype("<M8[ns]"), Err(ConvertError::Unsupported(_))));
        assert!(matches!(parse_dtype("[('a', '<i4')"), Err(ConvertError::Unsupported(_))));
        assert!(parse_literal(&"[".repeat(100)).is_none());
    }

    #[test]
    fn caterva_frames_read_as_bytes_of_the_typesize() {
        let data: Vec<u8> = (0..24).collect();
        let mut frame = encode(&data, &[2, 3], 4, "<u4", &[], &EncodeOptions::default()).unwrap();
        // Rename the metalayer and drop its dtype: [0, 2, shape, chunks, blocks].
        let at = frame.windows(5).position(|w| w == b"\xa4b2nd").unwrap();
        frame[at + 1..at + 5].copy_from_slice(b"cate");
        assert!(B2ndFile::parse(&frame, &Limits::default()).is_err());
        let mut frame = encode(&data, &[2, 3], 4, "<u4", &[], &EncodeOptions::default()).unwrap();
        let meta = frame.windows(3).position(|w| w == [0x97, 0x00, 0x02]).unwrap();
        frame[meta] = 0x95;
        let name = frame.windows(5).position(|w| w == b"\xa4b2nd").unwrap();
        let mut renamed = frame[..name].to_vec();
        renamed.extend_from_slice(b"\xa7caterva");
        renamed.extend_from_slice(&frame[name + 5..]);
        // Three bytes more before the metalayer's content and in the header's lengths.
        let content_at = name + 8 + 1 + 4 + 3;
        let off = i32::from_be_bytes(renamed[name + 9..name + 13].try_into().unwrap()) + 3;
        renamed[name + 9..name + 13].copy_from_slice(&off.to_be_bytes());
        let index = u16::from_be_bytes([renamed[89], renamed[90]]) + 3;
        renamed[89..91].copy_from_slice(&index.to_be_bytes());
        let header = i32::from_be_bytes(renamed[11..15].try_into().unwrap()) + 3;
        renamed[11..15].copy_from_slice(&header.to_be_bytes());
        let len = u64::from_be_bytes(renamed[16..24].try_into().unwrap()) + 3;
        renamed[16..24].copy_from_slice(&len.to_be_bytes());
        assert_eq!(renamed[content_at - 3], 0xdc);
        let f = B2ndFile::parse(&renamed, &Limits::default()).unwrap();
        assert_eq!((f.shape.as_slice(), f.dtype.as_deref()), (&[2, 3][..], None));
        assert_eq!(f.datatype().unwrap().0, Datatype::Ascii(4));
        assert_eq!(f.decode().unwrap(), data);
    }

    #[test]
    fn partition_cuts_outer_axes_first() {
        assert_eq!(partition(&[2000, 3000], 8, 4 << 20), vec![125, 3000]);
        assert_eq!(partition(&[2, 4096], 8, 1024), vec![1, 128]);
        assert_eq!(partition(&[], 8, 1), Vec::<usize>::new());
    }
}
