//! Blosc in blocks, read as each writer lays it out and decoded by [`crate::blosc`]:
//!
//! - `blsc`: one c-blosc1 buffer (the asdf-compression plugin: python-blosc's defaults;
//!   asdf-cxx: BloscLZ and bit-shuffle; ASDF.jl: Zstandard and bit-shuffle), or
//!   AbacusSummit's pieces, each a big-endian `u32` length and a buffer (4 MiB of data
//!   each, Zstandard). One buffer when its header's `cbytes` is the whole block (its
//!   first byte, the format version, is never 0, where a piece's length starts with 0
//!   below 16 MiB), pieces otherwise; the pieces are decoded in parallel.
//! - `bls2` (asdf-cxx) and `bsc2` (AbacusSummit): a Blosc2 contiguous frame, whose chunks
//!   follow one another, or one Blosc2 chunk (`blosc2.compress`, as the
//!   asdf-compression plugin's later `bls2` writes it), told apart by the frame's magic.
//!
//! Each buffer, chunk or frame must say it holds exactly the bytes it is stored in, and
//! they must decode to exactly `data_size` bytes: what they say is checked before
//! anything is decoded.
//!
//! `blsc` is written as one c-blosc1 buffer that python-blosc reads
//! ([`crate::blosc::encode_blosc1`]).

use rayon::prelude::*;

use super::Compression;
use crate::block::BlockError;
use crate::blosc::{self, BloscError, ChunkHeader, Frame};

/// A Blosc error as a block error of `codec`, `what` (where in the block) before it.
fn error(codec: Compression, what: &str, e: BloscError) -> BlockError {
    match e {
        BloscError::Malformed(m) => BlockError::Corrupt { codec, message: format!("{what}{m}") },
        BloscError::Unsupported(m) => BlockError::Unsupported { codec, message: format!("{what}{m}") },
    }
}

/// Whether `input` is one c-blosc1 buffer: its header's `cbytes` (a little-endian
/// `i32` at byte 12) is its length, and its first byte (the format version) is not 0.
fn one_buffer(input: &[u8]) -> bool {
    match input {
        [version, _, _, _, _, _, _, _, _, _, _, _, c0, c1, c2, c3, ..] => {
            *version != 0 && u32::from_le_bytes([*c0, *c1, *c2, *c3]) as usize == input.len()
        }
        _ => false,
    }
}

/// Decodes one buffer or chunk `input` (at stored byte `at`) into `out`, which it must
/// say it fills and which it must fill, and whose length it must be.
fn decode_one(codec: Compression, input: &[u8], at: usize, out: &mut [u8]) -> Result<(), BlockError> {
    let what = if at == 0 { String::new() } else { format!("the buffer at stored byte {at}: ") };
    let h = ChunkHeader::parse(input).map_err(|e| error(codec, &what, e))?;
    let expected = out.len() as u64;
    if h.nbytes > out.len() {
        return Err(BlockError::DecodedTooLong { codec, expected });
    }
    if h.nbytes < out.len() {
        return Err(BlockError::DecodedTooShort { codec, expected, got: h.nbytes as u64 });
    }
    if h.cbytes != input.len() {
        return Err(BlockError::Corrupt {
            codec,
            message: format!("{what}the header says {} stored bytes, there are {}", h.cbytes, input.len()),
        });
    }
    blosc::decode_parallel(input, out).map(drop).map_err(|e| error(codec, &what, e))
}

/// Decodes a `blsc` block: one buffer, or AbacusSummit's length-prefixed pieces.
pub(super) fn decode_blsc(input: &[u8], out: &mut [u8]) -> Result<(), BlockError> {
    let codec = Compression::Blosc;
    if one_buffer(input) {
        return decode_one(codec, input, 0, out);
    }
    let corrupt = |message: String| BlockError::Corrupt { codec, message };
    let expected = out.len() as u64;
    // Every piece, checked, before any is decoded.
    let mut pieces = Vec::new();
    let (mut pos, mut total) = (0usize, 0usize);
    while pos < input.len() {
        let head = input
            .get(pos..pos + 4)
            .ok_or_else(|| corrupt(format!("the length of a piece is cut off at stored byte {pos}")))?;
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let start = pos + 4;
        let end = start.checked_add(len).filter(|&e| e <= input.len()).ok_or_else(|| {
            corrupt(format!("the piece at stored byte {pos} ({len} bytes) runs past the block's end"))
        })?;
        let piece = &input[start..end];
        let what = format!("the piece at stored byte {pos}: ");
        let h = ChunkHeader::parse(piece).map_err(|e| error(codec, &what, e))?;
        if h.cbytes != len {
            return Err(corrupt(format!("{what}its header says {} stored bytes, its length {len}", h.cbytes)));
        }
        total = total.saturating_add(h.nbytes);
        if total > out.len() {
            return Err(BlockError::DecodedTooLong { codec, expected });
        }
        pieces.push((pos, piece, h.nbytes));
        pos = end;
    }
    if total < out.len() {
        return Err(BlockError::DecodedTooShort { codec, expected, got: total as u64 });
    }
    let mut rest = out;
    let mut parts = Vec::with_capacity(pieces.len());
    for (pos, piece, n) in pieces {
        let (this, after) = std::mem::take(&mut rest).split_at_mut(n);
        rest = after;
        parts.push((pos, piece, this));
    }
    parts.into_par_iter().try_for_each(|(pos, piece, dst)| {
        blosc::decode(piece, dst).map(drop).map_err(|e| error(codec, &format!("the piece at stored byte {pos}: "), e))
    })
}

/// Decodes a `bls2` or `bsc2` block: a Blosc2 contiguous frame, or one Blosc2 chunk.
pub(super) fn decode_blosc2(codec: Compression, input: &[u8], out: &mut [u8]) -> Result<(), BlockError> {
    if !input.starts_with(blosc::FRAME_MAGIC) {
        return decode_one(codec, input, 0, out);
    }
    let expected = out.len() as u64;
    // The chunk offsets (eight bytes a chunk) take at most the block's size, or 64 KiB.
    let max_chunks = out.len().max(1 << 16) / 8;
    let frame = Frame::parse(input, max_chunks).map_err(|e| error(codec, "", e))?;
    if frame.frame_len != input.len() {
        return Err(BlockError::Corrupt {
            codec,
            message: format!(
                "{} bytes after the frame's end at stored byte {}",
                input.len() - frame.frame_len,
                frame.frame_len
            ),
        });
    }
    if frame.nbytes > out.len() {
        return Err(BlockError::DecodedTooLong { codec, expected });
    }
    if frame.nbytes < out.len() {
        return Err(BlockError::DecodedTooShort { codec, expected, got: frame.nbytes as u64 });
    }
    frame.decode_into(input, out).map_err(|e| error(codec, "", e))
}

/// `data` as one c-blosc1 buffer of items of `typesize` bytes, blocks compressed with
/// Zstandard at `level`.
pub(super) fn encode_blsc(data: &[u8], typesize: usize, level: i32) -> Result<Vec<u8>, BlockError> {
    blosc::encode_blosc1(data, typesize, level).map_err(|e| error(Compression::Blosc, "cannot write blsc: ", e))
}
