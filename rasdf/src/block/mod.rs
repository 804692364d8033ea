//! Binary blocks: headers, walking, codecs and checksums.
//!
//! ASDF Standard, file_layout "Blocks": every block starts with a magic and a header,
//! all integers big-endian:
//!
//! ```text
//! offset  size  field
//!      0     4  magic            d3 42 4c 4b  ("\xd3BLK")
//!      4     2  header_size      u16, >= 48; bytes 6..6+header_size are the header
//!      6     4  flags            u32; bit 0 = STREAMED (last block, data runs to EOF)
//!     10     4  compression      "\0\0\0\0", "zlib", "bzp2", "lz4\0"; other writers' too
//!                                 ("zstd", "lz4f", "blsc", "bls2", "bsc2", "xz\0\0")
//!     14     8  allocated_size   u64, space reserved for the data
//!     22     8  used_size        u64, bytes stored (compressed size)
//!     30     8  data_size        u64, bytes once decoded
//!     38    16  checksum         MD5, or all zeros for none
//!     54     …  extra header bytes (header_size - 48), skipped
//!  6+hs     …  data (used_size bytes), then unused space up to allocated_size
//! ```
//!
//! ```
//! use rasdf::block::{BlockHeader, Compression};
//! let mut bytes = vec![0xd3, b'B', b'L', b'K', // magic
//!     0x00, 0x30,                                // header_size = 48
//!     0, 0, 0, 0,                                // flags
//!     0, 0, 0, 0];                               // compression: none
//! bytes.extend_from_slice(&3u64.to_be_bytes());  // allocated_size
//! bytes.extend_from_slice(&3u64.to_be_bytes());  // used_size
//! bytes.extend_from_slice(&3u64.to_be_bytes());  // data_size
//! bytes.extend_from_slice(&[0; 16]);             // no checksum
//! bytes.extend_from_slice(b"abc");               // data
//! let header = BlockHeader::parse(&bytes, 0).unwrap();
//! assert_eq!(header.compression, Compression::None);
//! assert_eq!(header.stored_bytes(&bytes).unwrap(), b"abc");
//! ```

// MD5: rasdf's own (feature `fast-md5`) or the `md-5` crate's, one interface.
#[cfg(feature = "fast-md5")]
mod checksum;
#[cfg(not(feature = "fast-md5"))]
#[path = "checksum_plain.rs"]
mod checksum;
pub mod codec;

use std::borrow::Cow;
use std::fmt;

use crate::Limits;
use crate::error::{Error, Location};

pub(crate) use checksum::Md5;
pub use codec::Compression;

// The encoders, under the names the writer and the fuzzing hooks use.
#[cfg(feature = "parallel-bzip2")]
pub(crate) use codec::bzp2_parallel_encode as pbzip;
#[cfg(not(feature = "parallel-bzip2"))]
pub(crate) use codec::bzp2_serial_encode as pbzip;
pub(crate) use codec::{lz4_encode as lz4, zlib_parallel as pdeflate};

/// The four bytes that open every block.
pub const BLOCK_MAGIC: [u8; 4] = [0xd3, b'B', b'L', b'K'];
/// Flag bit 0: the block is streamed (the last one; its data runs to the end of the file).
pub const FLAG_STREAMED: u32 = 1;
/// The smallest `header_size` the standard allows (the fields after it).
pub const MIN_HEADER_SIZE: u16 = 48;
/// Magic, `header_size`, and the 48 bytes of fields.
pub const HEADER_LEN: usize = 4 + 2 + 48;

/// What can be wrong with one block. The caller adds the block number and offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BlockError {
    /// The file ends inside the block.
    #[error("truncated {what}: needs {needed} bytes, the file has {available} left")]
    Truncated {
        /// Which part is cut off ("block header", "block data").
        what: &'static str,
        /// Bytes needed from the part's start.
        needed: u64,
        /// Bytes the file has from the part's start.
        available: u64,
    },
    /// The four bytes where a block should start are not the magic.
    #[error("bad block magic {found:02x?}, expected d3 42 4c 4b")]
    BadMagic {
        /// What is there instead.
        found: Vec<u8>,
    },
    /// `header_size` is under 48.
    #[error("header_size is {0}, under the minimum of 48")]
    HeaderTooSmall(u16),
    /// `used_size` is larger than `allocated_size`.
    #[error("used_size {used} is larger than allocated_size {allocated}")]
    UsedExceedsAllocated {
        /// `used_size`.
        used: u64,
        /// `allocated_size`.
        allocated: u64,
    },
    /// An uncompressed block whose `used_size` differs from its `data_size`.
    #[error("uncompressed block with used_size {used} but data_size {data}")]
    SizeMismatch {
        /// `used_size`.
        used: u64,
        /// `data_size`.
        data: u64,
    },
    /// A streamed block that says it is compressed.
    #[error("streamed block may not be compressed (compression {0})")]
    StreamedCompressed(Compression),
    /// The compression label is not one rasdf decodes (or one this build leaves out:
    /// the feature `extra-codecs`).
    #[error("{}", codec::unknown_message(*.0))]
    UnknownCompression(Compression),
    /// A codec rasdf reads but does not write (`lz4f`, `bls2`, `bsc2`, `xz`).
    #[error("rasdf reads {0} blocks but does not write them; it writes zlib, bzp2, lz4, zstd and blsc")]
    NotWritten(Compression),
    /// The block is sound as far as rasdf can tell, but uses what rasdf does not decode
    /// (a Blosc plugin codec or filter).
    #[error("{codec} data uses what rasdf does not decode: {message}")]
    Unsupported {
        /// The block's codec.
        codec: Compression,
        /// What it uses.
        message: String,
    },
    /// The codec rejected the stored bytes.
    #[error("{codec} data is corrupt: {message}")]
    Corrupt {
        /// The block's codec.
        codec: Compression,
        /// What the decoder said.
        message: String,
    },
    /// No memory for the decoded bytes: the block may be sound, the machine (or a limit
    /// such as `ulimit -v`) has too little.
    #[error("no memory for {bytes} bytes of the {codec} block")]
    NoMemory {
        /// The block's codec.
        codec: Compression,
        /// The bytes asked for (its decoded or its stored size).
        bytes: u64,
    },
    /// The compressed stream decodes to more bytes than `data_size`.
    #[error("{codec} data decodes to more than data_size {expected} bytes")]
    DecodedTooLong {
        /// The block's codec.
        codec: Compression,
        /// `data_size`.
        expected: u64,
    },
    /// The compressed stream ends before `data_size` bytes.
    #[error("{codec} data decodes to {got} bytes, data_size says {expected}")]
    DecodedTooShort {
        /// The block's codec.
        codec: Compression,
        /// `data_size`.
        expected: u64,
        /// Bytes decoded.
        got: u64,
    },
    /// The checksum in the header matches neither convention.
    #[error(
        "checksum mismatch: header says {}, stored bytes hash to {}{}",
        hex(expected),
        hex(stored),
        decoded.map(|d| format!(", decoded data to {}", hex(&d))).unwrap_or_default()
    )]
    ChecksumMismatch {
        /// The checksum in the header.
        expected: [u8; 16],
        /// MD5 of the stored (possibly compressed) bytes.
        stored: [u8; 16],
        /// MD5 of the decoded bytes, for compressed blocks.
        decoded: Option<[u8; 16]>,
    },
}

/// Lower-case hex of some bytes.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use fmt::Write;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// One block header, as read from the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockHeader {
    /// Byte offset of the block's magic in the file.
    pub offset: u64,
    /// `header_size` (>= 48).
    pub header_size: u16,
    /// The flags word; bit 0 is STREAMED.
    pub flags: u32,
    /// The compression label.
    pub compression: Compression,
    /// Space reserved for the data. For a streamed block, as written (usually 0).
    pub allocated_size: u64,
    /// Bytes stored. For a streamed block, the bytes up to the end of the file.
    pub used_size: u64,
    /// Bytes once decoded. For a streamed block, the same as `used_size`.
    pub data_size: u64,
    /// MD5, or zeros for none.
    pub checksum: [u8; 16],
}

fn be_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}

impl BlockHeader {
    /// Parses the block header whose magic is at `offset` in `file` and checks that its
    /// data lies inside the file.
    ///
    /// # Errors
    /// [`BlockError::BadMagic`], [`BlockError::Truncated`], [`BlockError::HeaderTooSmall`],
    /// [`BlockError::UsedExceedsAllocated`], [`BlockError::SizeMismatch`],
    /// [`BlockError::StreamedCompressed`].
    pub fn parse(file: &[u8], offset: u64) -> Result<BlockHeader, BlockError> {
        let len = file.len() as u64;
        let available = len.saturating_sub(offset);
        let start = usize::try_from(offset).ok().filter(|&s| s <= file.len());
        let rest = start.map_or(&[][..], |s| &file[s..]);
        let truncated = |needed: u64| BlockError::Truncated { what: "block header", needed, available };
        if rest.len() < 6 {
            if rest.len() >= 4 && rest[..4] != BLOCK_MAGIC {
                return Err(BlockError::BadMagic { found: rest[..4].to_vec() });
            }
            return Err(truncated(6));
        }
        if rest[..4] != BLOCK_MAGIC {
            return Err(BlockError::BadMagic { found: rest[..4].to_vec() });
        }
        let header_size = u16::from_be_bytes([rest[4], rest[5]]);
        if header_size < MIN_HEADER_SIZE {
            return Err(BlockError::HeaderTooSmall(header_size));
        }
        let header_end = 6 + usize::from(header_size);
        if rest.len() < header_end {
            return Err(truncated(header_end as u64));
        }
        let flags = u32::from_be_bytes([rest[6], rest[7], rest[8], rest[9]]);
        let compression = Compression::from_label([rest[10], rest[11], rest[12], rest[13]]);
        let mut checksum = [0u8; 16];
        checksum.copy_from_slice(&rest[38..54]);
        let mut header = BlockHeader {
            offset,
            header_size,
            flags,
            compression,
            allocated_size: be_u64(rest, 14),
            used_size: be_u64(rest, 22),
            data_size: be_u64(rest, 30),
            checksum,
        };
        let data_available = (rest.len() - header_end) as u64;
        if header.is_streamed() {
            if header.compression != Compression::None {
                return Err(BlockError::StreamedCompressed(header.compression));
            }
            header.used_size = data_available;
            header.data_size = data_available;
            return Ok(header);
        }
        if header.used_size > header.allocated_size {
            return Err(BlockError::UsedExceedsAllocated { used: header.used_size, allocated: header.allocated_size });
        }
        if header.compression == Compression::None && header.used_size != header.data_size {
            return Err(BlockError::SizeMismatch { used: header.used_size, data: header.data_size });
        }
        if header.used_size > data_available {
            return Err(BlockError::Truncated {
                what: "block data",
                needed: header.used_size,
                available: data_available,
            });
        }
        Ok(header)
    }

    /// Whether the STREAMED flag is set.
    pub fn is_streamed(&self) -> bool {
        self.flags & FLAG_STREAMED != 0
    }

    /// Byte offset of the block's data.
    pub fn data_offset(&self) -> u64 {
        self.offset + 6 + u64::from(self.header_size)
    }

    /// Byte offset where the next block may start (after the allocated space).
    pub fn end(&self) -> u64 {
        let space = if self.is_streamed() { self.used_size } else { self.allocated_size };
        self.data_offset().saturating_add(space)
    }

    /// Whether the header carries a checksum (not all zeros).
    pub fn has_checksum(&self) -> bool {
        self.checksum != [0; 16]
    }

    /// The stored (possibly compressed) bytes of the block, borrowed from `file`.
    ///
    /// # Errors
    /// [`BlockError::Truncated`] when `file` is shorter than the header says.
    pub fn stored_bytes<'f>(&self, file: &'f [u8]) -> Result<&'f [u8], BlockError> {
        let start = self.data_offset();
        let end = start.saturating_add(self.used_size);
        let available = (file.len() as u64).saturating_sub(start);
        let truncated = BlockError::Truncated { what: "block data", needed: self.used_size, available };
        let (s, e) = (usize::try_from(start), usize::try_from(end));
        match (s, e) {
            (Ok(s), Ok(e)) if e <= file.len() => Ok(&file[s..e]),
            _ => Err(truncated),
        }
    }

    /// The decoded bytes: borrowed when the block is uncompressed, decoded otherwise.
    ///
    /// # Errors
    /// Any decoding error of [`codec::decode`]; a [`crate::LimitError`] (as an
    /// [`Error`]) when `data_size` is over `limits.max_block_bytes`.
    pub fn decode<'f>(&self, file: &'f [u8], limits: &Limits) -> Result<Cow<'f, [u8]>, Error> {
        self.decode_releasing(file, limits, None)
    }

    /// [`BlockHeader::decode`], telling `release` (when given) which byte ranges of
    /// `file` need not stay in memory (see [`codec::decode_releasing`]); nothing for an
    /// uncompressed block, whose bytes are the data.
    ///
    /// # Errors
    /// As [`BlockHeader::decode`].
    pub fn decode_releasing<'f>(
        &self,
        file: &'f [u8],
        limits: &Limits,
        release: Option<&(dyn Fn(std::ops::Range<usize>) + Sync)>,
    ) -> Result<Cow<'f, [u8]>, Error> {
        let loc = || Location::at(self.offset);
        let stored = self.stored_bytes(file).map_err(|e| Error::new(e, loc()))?;
        if self.compression == Compression::None {
            return Ok(Cow::Borrowed(stored));
        }
        Limits::check("max_block_bytes", self.data_size, limits.max_block_bytes).map_err(|e| Error::new(e, loc()))?;
        // `stored` lies in `file` (`stored_bytes`): its ranges in `file`'s terms.
        let at = stored.as_ptr() as usize - file.as_ptr() as usize;
        let in_file = |r: std::ops::Range<usize>| {
            if let Some(release) = release {
                release(at + r.start..at + r.end);
            }
        };
        let in_file: Option<&(dyn Fn(std::ops::Range<usize>) + Sync)> = release.map(|_| &in_file as _);
        let out = codec::decode_releasing(self.compression, stored, self.data_size, in_file)
            .map_err(|e| Error::new(e, loc()))?;
        Ok(Cow::Owned(out))
    }

    /// The decoded bytes handed to `sink` piece by piece, as [`codec::decode_pieces`]
    /// does: the whole stored bytes at once when the block is uncompressed.
    ///
    /// # Errors
    /// As [`BlockHeader::decode`] (its errors as [`Error`]s), and the first error of
    /// `sink`.
    pub fn decode_pieces<E: From<Error>>(
        &self,
        file: &[u8],
        limits: &Limits,
        mut sink: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let loc = || Location::at(self.offset);
        let stored = self.stored_bytes(file).map_err(|e| Error::new(e, loc()))?;
        if self.compression == Compression::None {
            return sink(stored);
        }
        Limits::check("max_block_bytes", self.data_size, limits.max_block_bytes).map_err(|e| Error::new(e, loc()))?;
        // The decoder's errors are told apart from the sink's on the way out.
        enum Failure<E> {
            Decoding(BlockError),
            Sink(E),
        }
        impl<E> From<BlockError> for Failure<E> {
            fn from(e: BlockError) -> Self {
                Failure::Decoding(e)
            }
        }
        codec::decode_pieces(self.compression, stored, self.data_size, |piece| sink(piece).map_err(Failure::Sink))
            .map_err(|f| match f {
                Failure::Decoding(e) => Error::new(e, loc()).into(),
                Failure::Sink(e) => e,
            })
    }

    /// The 54 header bytes (magic included) with `header_size` 48.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..4].copy_from_slice(&BLOCK_MAGIC);
        b[4..6].copy_from_slice(&MIN_HEADER_SIZE.to_be_bytes());
        b[6..10].copy_from_slice(&self.flags.to_be_bytes());
        b[10..14].copy_from_slice(&self.compression.label());
        b[14..22].copy_from_slice(&self.allocated_size.to_be_bytes());
        b[22..30].copy_from_slice(&self.used_size.to_be_bytes());
        b[30..38].copy_from_slice(&self.data_size.to_be_bytes());
        b[38..54].copy_from_slice(&self.checksum);
        b
    }
}

/// The MD5 of `bytes`.
pub fn md5(bytes: &[u8]) -> [u8; 16] {
    checksum::digest(bytes)
}

/// How a block's checksum compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChecksumStatus {
    /// The header carries no checksum (all zeros).
    None,
    /// MD5 of the stored bytes (asdf >= 5.3, and any uncompressed block).
    MatchesStored,
    /// MD5 of the decoded data (compressed blocks by asdf <= 5.2 and the standard's
    /// reference files).
    MatchesDecoded,
}

/// Checks `header`'s checksum against `stored` bytes, and against the decoded data when
/// the stored bytes do not match and the block is compressed (`decoded` is called then).
///
/// # Errors
/// [`BlockError::ChecksumMismatch`] when neither convention matches; any error of
/// `decoded`.
pub fn verify_checksum<'a>(
    header: &BlockHeader,
    stored: &[u8],
    decoded: impl FnOnce() -> Result<Cow<'a, [u8]>, Error>,
) -> Result<ChecksumStatus, Error> {
    if !header.has_checksum() {
        return Ok(ChecksumStatus::None);
    }
    let stored_md5 = md5(stored);
    let decoded_md5 = if stored_md5 != header.checksum && header.compression != Compression::None {
        Some(md5(&decoded()?))
    } else {
        None
    };
    checksum_status(header, stored_md5, decoded_md5)
}

/// [`verify_checksum`]'s verdict from the MD5s: of the stored bytes, and of the decoded
/// data (asked for only when the stored bytes do not match and the block is compressed).
pub(crate) fn checksum_status(
    header: &BlockHeader,
    stored_md5: [u8; 16],
    decoded_md5: Option<[u8; 16]>,
) -> Result<ChecksumStatus, Error> {
    if !header.has_checksum() {
        Ok(ChecksumStatus::None)
    } else if stored_md5 == header.checksum {
        Ok(ChecksumStatus::MatchesStored)
    } else if decoded_md5 == Some(header.checksum) {
        Ok(ChecksumStatus::MatchesDecoded)
    } else {
        Err(Error::new(
            BlockError::ChecksumMismatch { expected: header.checksum, stored: stored_md5, decoded: decoded_md5 },
            Location::at(header.offset),
        ))
    }
}

/// Offset of the first block magic at or after `from`, if any.
pub fn find_first_block(file: &[u8], from: u64) -> Option<u64> {
    let from = usize::try_from(from).ok()?;
    let hay = file.get(from..)?;
    memchr::memmem::find(hay, &BLOCK_MAGIC).map(|i| (from + i) as u64)
}

/// What follows the last block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trailer {
    /// The end of the file, or only NUL bytes.
    Clean,
    /// A block index (`#ASD...`) at this offset.
    Index(u64),
    /// Other bytes at this offset (a warning: the file may be damaged).
    Junk(u64),
}

/// The blocks found by reading headers one after another.
#[derive(Debug)]
pub struct Walk {
    /// Every block read, in file order.
    pub blocks: Vec<BlockHeader>,
    /// What follows the last block.
    pub trailer: Trailer,
    /// The error that stopped the walk early, if any; `blocks` holds those before it.
    pub error: Option<Error>,
}

/// Reads block headers one after another from the magic at `first`: each next block
/// starts right after the previous one's allocated space. Stops at a streamed block, at
/// the end of the file, or at anything that is not a magic.
pub fn walk(file: &[u8], first: u64, limits: &Limits) -> Walk {
    let len = file.len() as u64;
    let mut blocks = Vec::new();
    let mut pos = first;
    loop {
        if blocks.len() >= limits.max_blocks {
            let e = crate::limits::LimitError {
                what: "max_blocks",
                value: blocks.len() as u64 + 1,
                limit: limits.max_blocks as u64,
            };
            let error = Some(Error::new(e, Location::block(blocks.len(), pos)));
            return Walk { blocks, trailer: Trailer::Clean, error };
        }
        match BlockHeader::parse(file, pos) {
            Ok(h) => {
                let streamed = h.is_streamed();
                // `end` is strictly after `pos` (a header is at least 54 bytes), so the
                // walk always advances.
                pos = h.end();
                blocks.push(h);
                if streamed {
                    return Walk { blocks, trailer: Trailer::Clean, error: None };
                }
            }
            Err(e) => {
                let error = Some(Error::new(e, Location::block(blocks.len(), pos)));
                return Walk { blocks, trailer: Trailer::Clean, error };
            }
        }
        if pos >= len {
            return Walk { blocks, trailer: Trailer::Clean, error: None };
        }
        let Some(rest) = usize::try_from(pos).ok().and_then(|p| file.get(p..)) else {
            return Walk { blocks, trailer: Trailer::Clean, error: None };
        };
        if rest.starts_with(&BLOCK_MAGIC) {
            continue;
        }
        if let Some(e) = cut_magic(rest) {
            let error = Some(Error::new(e, Location::block(blocks.len(), pos)));
            return Walk { blocks, trailer: Trailer::Clean, error };
        }
        let trailer = classify_trailer(rest, pos);
        return Walk { blocks, trailer, error: None };
    }
}

/// A file that ends with the first one to three bytes of a block magic was cut inside a
/// block header.
pub fn cut_magic(rest: &[u8]) -> Option<BlockError> {
    (!rest.is_empty() && rest.len() < 4 && BLOCK_MAGIC.starts_with(rest)).then_some(BlockError::Truncated {
        what: "block header",
        needed: 6,
        available: rest.len() as u64,
    })
}

/// Classifies the bytes after the last block (reference notes 1.10): NULs or nothing
/// are clean, `#ASD` starts an index, anything else is junk.
pub fn classify_trailer(rest: &[u8], pos: u64) -> Trailer {
    if rest.starts_with(b"#ASD") {
        Trailer::Index(pos)
    } else if rest.iter().all(|&b| b == 0) {
        Trailer::Clean
    } else {
        Trailer::Junk(pos)
    }
}
