//! A Blosc2 contiguous frame (C-Blosc2's README_CFRAME_FORMAT): a msgpack header of
//! fixed layout (its sizes) followed by metalayers, the chunks, a chunk of `i64` chunk
//! offsets, and a msgpack trailer. [`Frame`] reads the fixed header and the offsets,
//! and decodes the chunks one after another; the metalayers and the trailer are the
//! caller's (rasdf-convert reads b2nd's).

use super::BloscError;
use super::chunk::{self, ChunkHeader, bad};

/// The first ten bytes of a frame: a msgpack array of 14 and the string `b2frame\0`.
pub const FRAME_MAGIC: &[u8; 10] = b"\x9e\xa8b2frame\0";
/// The fixed part of the frame header, before the metalayers.
const HEADER_MIN: usize = 87;

/// Where a chunk's bytes are, or the value all its items hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkAt {
    /// A chunk starting at this byte of the frame.
    Data(usize),
    /// Every item zero (also for uninitialized chunks).
    Zeros,
    /// Every item NaN.
    Nan,
}

/// A contiguous frame's fixed header and, once read ([`Frame::read_offsets`]), where
/// each chunk is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The header's length (the chunks start here).
    pub header_len: usize,
    /// The frame's length, trailer included.
    pub frame_len: usize,
    /// The bytes the chunks decode to.
    pub nbytes: usize,
    /// The bytes of the chunks as stored.
    pub cbytes: usize,
    /// Bytes per item.
    pub typesize: usize,
    /// Bytes each chunk decodes to (the last may be shorter); 0 when they vary, or when
    /// there are none (-1 in the header).
    pub chunksize: usize,
    /// Each chunk, in order (empty until [`Frame::read_offsets`]).
    pub chunks: Vec<ChunkAt>,
}

impl Frame {
    /// Reads the fixed header of the frame at the start of `bytes` (which may go on past
    /// the frame) and checks it against their length.
    ///
    /// # Errors
    /// [`BloscError::Malformed`] without the magic or for sizes that do not hold (with
    /// the byte offset); [`BloscError::Unsupported`] for sparse frames.
    pub fn parse_header(bytes: &[u8]) -> Result<Frame, BloscError> {
        if bytes.get(..FRAME_MAGIC.len()) != Some(&FRAME_MAGIC[..]) {
            return Err(bad("no b2frame magic at byte 0"));
        }
        if bytes.len() < HEADER_MIN {
            return Err(bad(format!("{} bytes, fewer than a frame header's {HEADER_MIN}", bytes.len())));
        }
        // Big-endian fields of the fixed header, which the length check above covers.
        let be4 = |at: usize| i32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
        let be8 = |at: usize| {
            let mut b = [0; 8];
            b.copy_from_slice(&bytes[at..at + 8]);
            i64::from_be_bytes(b)
        };
        let markers = [(10, 0xd2), (15, 0xcf), (24, 0xa4), (29, 0xd3), (38, 0xd3), (47, 0xd2), (52, 0xd2), (57, 0xd2)];
        if let Some((at, m)) = markers.into_iter().find(|&(at, m)| bytes[at] != m) {
            return Err(bad(format!("byte {at} of the frame header is {:#04x}, not {m:#04x}", bytes[at])));
        }
        let header_len = usize::try_from(be4(11)).unwrap_or(0);
        let frame_len = usize::try_from(be8(16)).unwrap_or(usize::MAX);
        if header_len < HEADER_MIN || frame_len > bytes.len() || header_len > frame_len {
            return Err(bad(format!(
                "header length {header_len} and frame length {frame_len} do not fit the {} bytes there",
                bytes.len()
            )));
        }
        let (general, frame_type) = (bytes[25], bytes[26]);
        if frame_type != 0 {
            return Err(BloscError::Unsupported(format!(
                "frame type {frame_type} at byte 26: only contiguous frames (0) are read"
            )));
        }
        if (general >> 4) & 0x03 != 1 {
            return Err(bad(format!("general flags {general:#04x} at byte 25: offsets must be 64-bit")));
        }
        let signed = |at: usize, n: usize, what: &str| -> Result<usize, BloscError> {
            let v = if n == 4 { i64::from(be4(at)) } else { be8(at) };
            usize::try_from(v).map_err(|_| bad(format!("{what} {v} at byte {at} is negative")))
        };
        let nbytes = signed(30, 8, "nbytes")?;
        let cbytes = signed(39, 8, "cbytes")?;
        let typesize = signed(48, 4, "typesize")?;
        // -1: no chunk appended yet (an empty super-chunk), so none whose size to know.
        let chunksize = if be4(58) == -1 { 0 } else { signed(58, 4, "chunksize")? };
        if typesize == 0 {
            return Err(bad("typesize 0 at byte 48"));
        }
        if header_len.checked_add(cbytes).is_none_or(|end| end > frame_len) {
            return Err(bad(format!("cbytes {cbytes} at byte 39 runs past the frame's {frame_len} bytes")));
        }
        Ok(Frame { header_len, frame_len, nbytes, cbytes, typesize, chunksize, chunks: Vec::new() })
    }

    /// Reads and checks the header and the chunk offsets of the frame at the start of
    /// `bytes`, whose chunks hold at most `max_chunks` (the offsets are decoded, eight
    /// bytes each, before any chunk).
    ///
    /// # Errors
    /// As [`Frame::parse_header`] and [`Frame::read_offsets`].
    pub fn parse(bytes: &[u8], max_chunks: usize) -> Result<Frame, BloscError> {
        let mut frame = Frame::parse_header(bytes)?;
        let bytes = &bytes[..frame.frame_len];
        let data_end = frame.header_len + frame.cbytes;
        let nchunks = if frame.nbytes == 0 || data_end == frame.frame_len {
            0
        } else {
            let h = ChunkHeader::parse(&bytes[data_end..])
                .map_err(|e| bad(format!("the chunk of offsets at byte {data_end}: {e}")))?;
            if h.nbytes % 8 != 0 || h.nbytes / 8 > max_chunks {
                return Err(bad(format!(
                    "the chunk of offsets at byte {data_end} holds {} bytes: not the 8 of each of at most {max_chunks} chunks",
                    h.nbytes
                )));
            }
            h.nbytes / 8
        };
        frame.read_offsets(bytes, nchunks)?;
        Ok(frame)
    }

    /// Decodes the chunk of offsets of the frame in `bytes` (after the chunks), which must
    /// hold `nchunks`, into [`Frame::chunks`]; returns where the trailer starts.
    ///
    /// # Errors
    /// [`BloscError::Malformed`] for an offsets chunk that does not decode to `nchunks`
    /// offsets, or an offset outside the chunks.
    pub fn read_offsets(&mut self, bytes: &[u8], nchunks: usize) -> Result<usize, BloscError> {
        let data_end = self.header_len + self.cbytes;
        let bytes = bytes.get(..self.frame_len).ok_or_else(|| bad("the frame is cut short"))?;
        self.chunks.clear();
        if nchunks == 0 {
            return Ok(data_end);
        }
        let offsets = &bytes[data_end..];
        let in_offsets = |e: BloscError| match e {
            BloscError::Malformed(m) => bad(format!("the chunk of offsets at byte {data_end}: {m}")),
            BloscError::Unsupported(m) => BloscError::Unsupported(format!("the chunk of offsets: {m}")),
        };
        let h = ChunkHeader::parse(offsets).map_err(in_offsets)?;
        if Some(h.nbytes) != nchunks.checked_mul(8) {
            return Err(bad(format!(
                "the chunk of offsets at byte {data_end} holds {} bytes, not 8 for each of {nchunks} chunks",
                h.nbytes
            )));
        }
        let mut raw = vec![0u8; h.nbytes];
        chunk::decode(offsets, &mut raw).map_err(in_offsets)?;
        self.chunks.reserve_exact(nchunks);
        for (i, o) in raw.chunks_exact(8).enumerate() {
            let v = i64::from_le_bytes([o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7]]);
            let at = if v < 0 {
                match o[7] & 0x7f {
                    1 | 4 => ChunkAt::Zeros,
                    2 => ChunkAt::Nan,
                    s => return Err(bad(format!("chunk {i} has special value {s} in its offset"))),
                }
            } else {
                match usize::try_from(v).ok().filter(|&v| v < self.cbytes) {
                    Some(v) => ChunkAt::Data(self.header_len + v),
                    None => {
                        return Err(bad(format!(
                            "chunk {i} is at offset {v}, outside the {} bytes of chunks",
                            self.cbytes
                        )));
                    }
                }
            };
            self.chunks.push(at);
        }
        Ok(data_end + h.cbytes)
    }

    /// Decodes the chunks of the frame in `bytes`, one after another, into `out`, which
    /// they must fill exactly (a frame read by [`Frame::parse`]): each chunk as long as
    /// its header says, an all-zeros or all-NaN one [`Frame::chunksize`] long (the last
    /// as far as `out` goes). Chunks are decoded in parallel.
    ///
    /// # Errors
    /// [`BloscError::Malformed`] for a damaged chunk, or chunks that decode to more or
    /// fewer bytes than `out` holds (the message says which, with the chunk's number and
    /// byte offset); [`BloscError::Unsupported`] for a plugin codec or filter.
    pub fn decode_into(&self, bytes: &[u8], out: &mut [u8]) -> Result<(), BloscError> {
        use rayon::prelude::*;
        let bytes = bytes.get(..self.frame_len).ok_or_else(|| bad("the frame is cut short"))?;
        // Where each chunk goes: its header says how long it is.
        let mut parts = Vec::with_capacity(self.chunks.len());
        let mut rest = out;
        let mut done = 0usize;
        for (i, &at) in self.chunks.iter().enumerate() {
            let len = match at {
                ChunkAt::Data(p) => {
                    ChunkHeader::parse(&bytes[p..]).map_err(|e| bad(format!("chunk {i} at byte {p}: {e}")))?.nbytes
                }
                _ if self.chunksize == 0 => {
                    return Err(bad(format!("chunk {i} is special, but the chunks' size varies (chunksize 0)")));
                }
                _ => self.chunksize.min(rest.len()),
            };
            if len > rest.len() {
                return Err(bad(format!("chunk {i} decodes past byte {}, the end of the data", done + rest.len())));
            }
            let (this, after) = std::mem::take(&mut rest).split_at_mut(len);
            rest = after;
            done += len;
            parts.push((i, at, this));
        }
        if !rest.is_empty() {
            return Err(bad(format!("the chunks decode to {done} bytes, {} fewer than expected", rest.len())));
        }
        parts.into_par_iter().try_for_each(|(i, at, dst)| {
            let value: &[u8] = match at {
                ChunkAt::Data(p) => {
                    return chunk::decode(&bytes[p..], dst).map(drop).map_err(|e| match e {
                        BloscError::Malformed(m) => bad(format!("chunk {i} at byte {p}: {m}")),
                        BloscError::Unsupported(m) => BloscError::Unsupported(format!("chunk {i}: {m}")),
                    });
                }
                ChunkAt::Zeros => &[0],
                ChunkAt::Nan => chunk::nan_bytes(self.typesize)
                    .ok_or_else(|| bad(format!("chunk {i} is all NaN but items have {} bytes", self.typesize)))?,
            };
            let n = dst.len();
            chunk::fill_wanted(dst, std::slice::from_ref(&(0..n)), value);
            Ok(())
        })
    }
}
