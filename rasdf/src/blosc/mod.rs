//! Blosc: c-blosc1 buffers, Blosc2 chunks and Blosc2 contiguous frames, decoded by
//! rasdf's own safe Rust (no C-Blosc): the codecs Blosc builds in (BloscLZ, LZ4,
//! LZ4HC, zlib, Zstandard), its filters (shuffle, bit-shuffle, delta, truncated
//! precision, bytedelta, int-trunc), split and unsplit blocks, runs, memcpyed and
//! special chunks. Plugin codecs and filters (ZFP, NDLZ, NDCELL...) and c-blosc1's
//! Snappy are refused with [`BloscError::Unsupported`].
//!
//! The block codecs `blsc`, `bls2` and `bsc2` ([`crate::block::Compression`]) and the
//! b2nd files of `rasdf-convert` are built on it. Here are a chunk ([`ChunkHeader`],
//! [`decode`], [`decode_part`], [`decode_parallel`]), a frame's chunks ([`Frame`]) and the encoders
//! ([`encode`]: a Blosc2 chunk; [`encode_blosc1`]: a c-blosc1 buffer).
//!
//! Layouts: C-Blosc2's README_CHUNK_FORMAT and README_CFRAME_FORMAT (a c-blosc1 buffer
//! is a chunk of format version 1 or 2 with a 16-byte header), checked against what
//! python-blosc, python-blosc2, c-blosc 1.21 and C-Blosc2 write.
//!
//! Everything here checks sizes and offsets before it allocates or copies, and returns
//! an error, never panics, on damaged input.

mod blosclz;
mod chunk;
mod filters;
mod frame;

pub use chunk::{
    BLOSC1_BLOCK, BLOSC1_MAX_BYTES, BloscCodec, ChunkHeader, EXTENDED_HEADER, decode, decode_parallel, decode_part,
    encode, encode_blosc1, fill_wanted, nan_bytes,
};
pub use frame::{ChunkAt, FRAME_MAGIC, Frame};

/// Why Blosc bytes do not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BloscError {
    /// The bytes are damaged: what is wrong, with the offset when known.
    #[error("{0}")]
    Malformed(String),
    /// The bytes are sound but use what rasdf does not decode (a plugin codec or filter).
    #[error("{0}")]
    Unsupported(String),
}
