//! Block codecs: zlib, bzp2 and lz4 in the reference library's own framing, and (with
//! the feature `extra-codecs`) the codecs of other writers: `zstd`, `lz4f`, `blsc`,
//! `bls2`/`bsc2` and `xz\0\0`.
//!
//! Every decoder writes into a buffer of exactly `data_size` bytes and fails when the
//! stream holds more or fewer (reference notes 2.2-2.3): a decompression bomb stops at
//! `data_size`, never later.
//!
//! Here are the [`Compression`] label, the dispatch on it ([`decode`], [`decode_into`],
//! [`decode_pieces`], [`encode`]) and what the codecs share: the driver of streaming
//! decoders and [`zeroed`] buffers. Each codec has a file of its own, and each of its
//! accelerators one more beside it:
//!
//! - `zlib`: one RFC 1950 stream, inflated whole or piece by piece on a thread of its
//!   own; `zlib_parallel`, deflate on several threads into one stream;
//! - `bzp2`: one bzip2 stream; `bzp2_parallel_decode` and `bzp2_parallel_encode`, a
//!   block per thread, over the bit strings of `bzp2_bits`;
//! - `lz4`: the reference's framing of LZ4 blocks in records, a record per thread;
//!   `lz4_encode`, the LZ4 block encoder that compresses two records at a time;
//! - `zstd`: one Zstandard frame (libzstd), both ways;
//! - `lz4f`: one LZ4 frame (lz4_flex's frame decoder), read only;
//! - `blosc`: `blsc` (one c-blosc1 buffer, or AbacusSummit's pieces) both ways, `bls2`
//!   and `bsc2` (a Blosc2 frame or chunk) read only, over `rasdf::blosc`;
//! - `xz`: an xz stream (lzma-rust2), read only.

#[cfg(feature = "extra-codecs")]
mod blosc;
mod bzp2;
// bzp2 a bzip2 block per thread (feature `parallel-bzip2`), or serially.
#[cfg(feature = "parallel-bzip2")]
mod bzp2_bits;
#[cfg(feature = "parallel-bzip2")]
mod bzp2_parallel_decode;
#[cfg(feature = "parallel-bzip2")]
pub(crate) mod bzp2_parallel_encode;
#[cfg(not(feature = "parallel-bzip2"))]
pub(crate) mod bzp2_serial_encode;
mod hashed;
mod lz4;
pub(crate) mod lz4_encode;
#[cfg(feature = "extra-codecs")]
mod lz4f;
mod read;
#[cfg(feature = "extra-codecs")]
mod xz;
mod zlib;
pub(crate) mod zlib_parallel;
#[cfg(feature = "extra-codecs")]
mod zstd;

use std::fmt;

use super::BlockError;

pub use hashed::{HashOf, encode_hashed, encode_hashed_to};
pub use lz4::LZ4_CHUNK;
pub(crate) use lz4::lz4_one_record;
pub(crate) use lz4::lz4_records_covering;
pub(crate) use lz4::lz4_records_into;
pub(crate) use lz4::lz4_streamed;
pub use read::decode_read_into;

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
    /// `zstd`: one Zstandard frame (the asdf-compression plugin, ASDF.jl).
    Zstd,
    /// `lz4f`: one LZ4 frame (the asdf-compression plugin, asdf-cxx). Read only.
    Lz4Frame,
    /// `blsc`: one c-blosc1 buffer (the asdf-compression plugin, asdf-cxx, ASDF.jl), or
    /// AbacusSummit's pieces of `[u32 BE length][c-blosc1 buffer]`.
    Blosc,
    /// `bls2`: a Blosc2 contiguous frame (asdf-cxx) or one Blosc2 chunk. Read only.
    Blosc2,
    /// `bsc2`: AbacusSummit's label for a Blosc2 contiguous frame (or chunk), read as
    /// `bls2`. Read only.
    Bsc2,
    /// `xz\0\0`: an xz stream (ASDF.jl). Read only.
    Xz,
    /// Any other label, kept as its four bytes.
    Other([u8; 4]),
}

/// Every label rasdf knows, for messages.
const KNOWN: &str = "zlib, bzp2, lz4, zstd, lz4f, blsc, bls2, bsc2, xz";

/// The message of [`BlockError::UnknownCompression`].
pub(crate) fn unknown_message(c: Compression) -> String {
    match c {
        Compression::Other(_) => format!("unknown compression {c}; supported: {KNOWN}"),
        _ if !cfg!(feature = "extra-codecs") => {
            format!("compression {c} is left out of this build of rasdf (its feature extra-codecs)")
        }
        _ => format!("compression {c} cannot be decoded here"),
    }
}

impl Compression {
    /// The compression for a 4-byte label from a block header.
    pub fn from_label(label: [u8; 4]) -> Self {
        match &label {
            b"\0\0\0\0" => Compression::None,
            b"zlib" => Compression::Zlib,
            b"bzp2" => Compression::Bzp2,
            b"lz4\0" => Compression::Lz4,
            b"zstd" => Compression::Zstd,
            b"lz4f" => Compression::Lz4Frame,
            b"blsc" => Compression::Blosc,
            b"bls2" => Compression::Blosc2,
            b"bsc2" => Compression::Bsc2,
            b"xz\0\0" => Compression::Xz,
            _ => Compression::Other(label),
        }
    }

    /// The compression for a name as used on the command line and in the reference
    /// library: those rasdf writes (`zlib`, `bzp2`, `lz4`, `none`; `zstd` and `blsc`,
    /// which the reference reads with the asdf-compression plugin).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "" | "none" => Some(Compression::None),
            "zlib" => Some(Compression::Zlib),
            "bzp2" => Some(Compression::Bzp2),
            "lz4" => Some(Compression::Lz4),
            "zstd" => Some(Compression::Zstd),
            "blsc" => Some(Compression::Blosc),
            _ => None,
        }
    }

    /// The compression a rewrite gives a block of this one (a file read and written
    /// again, each array in its own codec): itself when rasdf writes it, else the
    /// nearest it writes: `lz4f` -> `lz4`, `bls2` and `bsc2` -> `blsc`, `xz` -> `bzp2`.
    /// Unknown labels stay (and fail).
    pub fn rewritten_as(self) -> Compression {
        match self {
            c if c.writable() => c,
            Compression::Lz4Frame => Compression::Lz4,
            Compression::Blosc2 | Compression::Bsc2 if Compression::Blosc.writable() => Compression::Blosc,
            Compression::Xz => Compression::Bzp2,
            c => c,
        }
    }

    /// Whether rasdf writes blocks of this compression (`none`, `zlib`, `bzp2`, `lz4`,
    /// and with the feature `extra-codecs`, `zstd` and `blsc`).
    pub fn writable(self) -> bool {
        matches!(self, Compression::None | Compression::Zlib | Compression::Bzp2 | Compression::Lz4)
            || (cfg!(feature = "extra-codecs") && matches!(self, Compression::Zstd | Compression::Blosc))
    }

    /// The 4-byte label written in block headers.
    pub fn label(self) -> [u8; 4] {
        match self {
            Compression::None => *b"\0\0\0\0",
            Compression::Zlib => *b"zlib",
            Compression::Bzp2 => *b"bzp2",
            Compression::Lz4 => *b"lz4\0",
            Compression::Zstd => *b"zstd",
            Compression::Lz4Frame => *b"lz4f",
            Compression::Blosc => *b"blsc",
            Compression::Blosc2 => *b"bls2",
            Compression::Bsc2 => *b"bsc2",
            Compression::Xz => *b"xz\0\0",
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
            Compression::Zstd => f.write_str("zstd"),
            Compression::Lz4Frame => f.write_str("lz4f"),
            Compression::Blosc => f.write_str("blsc"),
            Compression::Blosc2 => f.write_str("bls2"),
            Compression::Bsc2 => f.write_str("bsc2"),
            Compression::Xz => f.write_str("xz"),
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
    decode_releasing(codec, stored, data_size, None)
}

/// Stored bytes from which [`decode_releasing`] lets go of the input while it decodes;
/// a smaller input is let go of once decoded.
const RELEASE_WHILE_MIN: usize = 8 << 20;

/// [`decode`], telling `release` (when given) which ranges of `stored` need not stay in
/// memory, so that a caller holding them in a map can let their pages go while the
/// block decodes: lz4 records window by window as they are decoded; for the codecs whose
/// decoders read at their own pace (libdeflate, bzip2), the whole input every few
/// milliseconds from another thread, since pages let go of before they are read are
/// faulted in by the read as they would be anyway. `release` must therefore only drop
/// what is resident, never change what the bytes read as.
///
/// # Errors
/// As [`decode`].
pub fn decode_releasing(
    codec: Compression,
    stored: &[u8],
    data_size: u64,
    release: Option<&(dyn Fn(std::ops::Range<usize>) + Sync)>,
) -> Result<Vec<u8>, BlockError> {
    let mut out = zeroed_output(codec, data_size)?;
    let Some(release) = release else {
        decode_whole(codec, stored, &mut out)?;
        return Ok(out);
    };
    if codec == Compression::Lz4 {
        lz4::lz4_decode_releasing(stored, &mut out, release)?;
        return Ok(out);
    }
    if stored.len() < RELEASE_WHILE_MIN {
        decode_whole(codec, stored, &mut out)?;
        release(0..stored.len());
        return Ok(out);
    }
    // The releaser is a thread of its own, not a job on the rayon pool: it sleeps between
    // releases for the whole decode, which may itself need every worker (bzp2 decodes a
    // block per worker) and would wait forever behind it on a pool of one thread. It
    // exists only when asked for: the caller passes `release` for a mapped file
    // (`OpenOptions::memmap`) where pages can be given back (Linux, `linux-tuning`).
    let done = std::sync::atomic::AtomicBool::new(false);
    let decoded = std::thread::scope(|scope| {
        let releaser = scope.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::park_timeout(std::time::Duration::from_millis(10));
                release(0..stored.len());
            }
        });
        let decoded = decode_whole(codec, stored, &mut out);
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        releaser.thread().unpark();
        decoded
    });
    release(0..stored.len());
    decoded?;
    Ok(out)
}

/// [`decode_into`] into a fresh buffer, a zlib stream with a helper making the output's
/// pages present ahead of the inflater.
fn decode_whole(codec: Compression, stored: &[u8], out: &mut [u8]) -> Result<(), BlockError> {
    if codec == Compression::Zlib {
        if zlib::inflate_parallel(stored, out) {
            return Ok(());
        }
        // One thread inflates: the other makes the output's pages present ahead of it
        // (the whole buffer is filled, so it may run as far ahead as it can).
        let helper = crate::hugepages::Prefault::whole(out.as_ptr(), out.len());
        let inflated = zlib::inflate_serial(stored, out);
        drop(helper);
        inflated
    } else {
        decode_into(codec, stored, out)
    }
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

/// The buffer a block of `data_size` decoded bytes is decoded into, as [`zeroed`] makes
/// it (checked against what this machine can address first).
fn zeroed_output(codec: Compression, data_size: u64) -> Result<Vec<u8>, BlockError> {
    let n = memory_size(codec, data_size)?;
    zeroed(n).ok_or(BlockError::NoMemory { codec, bytes: data_size })
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
        Compression::Zlib => zlib::inflate(stored, out),
        Compression::Bzp2 => bzp2::bunzip(stored, out),
        Compression::Lz4 => lz4::lz4_decode(stored, out),
        #[cfg(feature = "extra-codecs")]
        Compression::Zstd => zstd::decode(stored, out),
        #[cfg(feature = "extra-codecs")]
        Compression::Lz4Frame => lz4f::decode(stored, out),
        #[cfg(feature = "extra-codecs")]
        Compression::Blosc => blosc::decode_blsc(stored, out),
        #[cfg(feature = "extra-codecs")]
        Compression::Blosc2 | Compression::Bsc2 => blosc::decode_blosc2(codec, stored, out),
        #[cfg(feature = "extra-codecs")]
        Compression::Xz => xz::decode(stored, out),
        _ => Err(BlockError::UnknownCompression(codec)),
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
        Compression::Zlib if data_size >= zlib::PIECES_ZLIB => zlib::inflate_pieces(stored, data_size, &mut sink),
        Compression::Lz4 => lz4::lz4_pieces(stored, data_size, &mut sink),
        Compression::Bzp2 => bzp2::bunzip_pieces(stored, data_size, &mut sink),
        Compression::None => {
            if stored.len() as u64 != data_size {
                return Err(BlockError::SizeMismatch { used: stored.len() as u64, data: data_size }.into());
            }
            sink(stored)
        }
        _ => sink(&decode(codec, stored, data_size)?),
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

/// Compresses `data` with `codec` as the reference library does (zlib level 6, bzip2
/// level 9, lz4 in 4 MiB records), or its plugin (zstd level 3; blsc: see
/// [`encode_items`]), items taken as bytes.
///
/// # Errors
/// [`BlockError::UnknownCompression`] for unknown labels, and those this build leaves
/// out; [`BlockError::NotWritten`] for those rasdf only reads.
pub fn encode(codec: Compression, data: &[u8]) -> Result<Vec<u8>, BlockError> {
    encode_items(codec, data, 1, None)
}

/// [`encode`] for items of `item_size` bytes (which `blsc` shuffles by: bytes of an item
/// over 255 bytes), at `level` (1 to 9, for zstd and the blocks of blsc; `None`: 3, the
/// asdf-compression plugin's zstd level). `blsc` is one c-blosc1 buffer, as
/// python-blosc's `blosc.compress` lays it out: blocks of 256 KiB, byte-shuffled, each
/// one Zstandard stream (see `rasdf::blosc::encode_blosc1`); it holds at most 2 GiB.
///
/// # Errors
/// As [`encode`]; [`BlockError::Unsupported`] for `blsc` data over 2 GiB.
pub fn encode_items(
    codec: Compression,
    data: &[u8],
    item_size: usize,
    level: Option<u32>,
) -> Result<Vec<u8>, BlockError> {
    #[cfg(feature = "extra-codecs")]
    let zstd_level = level.and_then(|l| i32::try_from(l).ok()).unwrap_or(zstd::LEVEL);
    #[cfg(not(feature = "extra-codecs"))]
    let _ = (item_size, level);
    match codec {
        Compression::None => Ok(data.to_vec()),
        Compression::Zlib => zlib::encode(data),
        Compression::Bzp2 => bzp2::encode(data),
        Compression::Lz4 => lz4::encode(data),
        #[cfg(feature = "extra-codecs")]
        Compression::Zstd => zstd::encode(data, zstd_level),
        #[cfg(feature = "extra-codecs")]
        Compression::Blosc => blosc::encode_blsc(data, item_size, zstd_level),
        _ => Err(not_written(codec)),
    }
}

/// Why blocks of `codec`, which rasdf does not write, cannot be written: an unknown
/// label (or one this build leaves out), or one rasdf only reads.
pub(crate) fn not_written(codec: Compression) -> BlockError {
    match codec {
        Compression::Other(_) => BlockError::UnknownCompression(codec),
        _ if !cfg!(feature = "extra-codecs") => BlockError::UnknownCompression(codec),
        _ => BlockError::NotWritten(codec),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        (0..10_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect()
    }

    #[test]
    fn decoding_that_releases_gives_the_same_bytes_and_releases_the_whole_input() {
        // Large enough that zlib and bzp2 release from a thread while they decode.
        let data: Vec<u8> = crate::samples::noise(24 << 20, 3).iter().map(|b| b & 0x0f).collect();
        for codec in [Compression::Zlib, Compression::Bzp2, Compression::Lz4, Compression::None] {
            let enc = encode(codec, &data).unwrap();
            let released = std::sync::Mutex::new(Vec::new());
            let record = |r: std::ops::Range<usize>| released.lock().unwrap().push(r);
            let out = decode_releasing(codec, &enc, data.len() as u64, Some(&record)).unwrap();
            assert!(out == data, "{codec}");
            let released = released.into_inner().unwrap();
            let covered_to = released.iter().map(|r| r.end).max();
            assert_eq!(covered_to, Some(enc.len()), "{codec}: {released:?}");
            assert!(released.iter().all(|r| r.end <= enc.len()), "{codec}");
        }
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

    /// Every piece `decode_pieces` (or the zlib path under it) hands on, joined.
    pub(super) fn joined(
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
    /// those of `decode`: zlib inflated by a job on the pool (called directly, as blocks
    /// below `PIECES_ZLIB` take the whole path), lz4 of many records.
    #[test]
    fn pieces_are_the_decoded_bytes_in_order() {
        let data: Vec<u8> = (0..u32::try_from(5 * PIECE + 12_345).unwrap())
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 27).to_le_bytes()[0])
            .collect();
        let n = data.len() as u64;
        let z = encode(Compression::Zlib, &data).unwrap();
        // On the default pool (the decoder a job on it), and on a pool of one thread that
        // is the caller itself (no worker takes the job: the caller decodes).
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        for alone in [false, true] {
            let zlib = |stored: &[u8], size: u64| {
                let run = || joined(|sink| zlib::inflate_pieces(stored, size, sink));
                if alone { one.install(run) } else { run() }
            };
            assert!(zlib(&z, n).unwrap() == data, "alone: {alone}");
            for (what, stored, size) in [
                ("too long", z.clone(), n - 1),
                ("too short", z.clone(), n + 1),
                ("truncated", z[..z.len() / 2].to_vec(), n),
                ("Adler-32 cut short", z[..z.len() - 2].to_vec(), n),
                ("wrong Adler-32", [&z[..z.len() - 1], &[z[z.len() - 1] ^ 1]].concat(), n),
            ] {
                let whole = decode(Compression::Zlib, &stored, size).map(drop);
                let pieces = zlib(&stored, size).map(drop);
                assert!(whole.is_err() && pieces.is_err(), "{what}, alone: {alone}");
                if size != n {
                    assert_eq!(pieces, whole, "{what}, alone: {alone}");
                }
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
                Compression::Zlib => zlib::inflate_pieces(stored, n, &mut { stop }),
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
    fn unknown_label_is_kept_and_fails_on_decode() {
        let c = Compression::from_label(*b"zfp\0");
        assert_eq!(c.label(), *b"zfp\0");
        assert_eq!(c.to_string(), "'zfp'");
        assert_eq!(decode(c, b"xx", 2), Err(BlockError::UnknownCompression(c)));
    }
}

#[cfg(all(test, feature = "extra-codecs"))]
mod other_tests;
