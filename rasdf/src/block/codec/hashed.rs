//! A block compressed whole into memory with its MD5 made on the way: what a writer needs
//! that must put the header (used size, checksum) before the data, as the reference's
//! block writer does (`rasdf.asdf_hook` hands asdf's writer these bytes).
//!
//! lz4 records compressed one a piece (lz4_flex's encoder: a record's bytes may differ
//! from [`encode`](super::encode)'s, which compresses them two at a time, and decode to
//! the same data) and zlib pieces deflated on the pool's threads while the calling
//! thread hands the finished ones on, in order, hashing them in the same pass
//! ([`crate::pipeline`]), with a few records or pieces in flight at most; bzp2 a few
//! bzip2 blocks per thread at a time. zlib and bzp2 are `encode`'s stream byte for byte.

use super::{Compression, LZ4_CHUNK};
use crate::block::{BlockError, Md5, pbzip, pdeflate};

/// Which bytes [`encode_hashed`] hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashOf {
    /// None: no checksum.
    Nothing,
    /// The stored (compressed) bytes, as the reference writes checksums since 5.3.0.
    Stored,
    /// The uncompressed data, as the reference wrote checksums up to 5.2.
    Data,
}

/// `data` compressed with `codec` at its default level (as [`super::encode`]), and the
/// MD5 that `hash` asks for.
///
/// # Errors
/// As [`super::encode`].
pub fn encode_hashed(codec: Compression, data: &[u8], hash: HashOf) -> Result<(Vec<u8>, Option<[u8; 16]>), BlockError> {
    let mut out = Vec::new();
    if codec == Compression::Lz4 {
        // Room for the worst case: pages never written are never made resident.
        out.reserve(data.len() + data.len() / 255 + 64 * data.len().div_ceil(LZ4_CHUNK));
    }
    let md5 = encode_hashed_to(codec, data, hash, &mut |bytes| {
        out.extend_from_slice(bytes);
        Ok(())
    })?;
    Ok((out, md5))
}

/// [`encode_hashed`] handing the stored bytes to `sink` in order, a piece (a few
/// megabytes at most, or the whole stream of a small block) at a time, instead of
/// holding them all: a writer that copies them on (into a file or a buffer of its own)
/// never holds them twice.
///
/// # Errors
/// As [`super::encode`], and `sink`'s. After an error `sink` may have had part of the
/// stream.
pub fn encode_hashed_to(
    codec: Compression,
    data: &[u8],
    hash: HashOf,
    sink: &mut dyn FnMut(&[u8]) -> Result<(), BlockError>,
) -> Result<Option<[u8; 16]>, BlockError> {
    let workers = rayon::current_num_threads();
    let mut md5 = Md5::new();
    let stored = hash == HashOf::Stored;
    let mut put = |bytes: &[u8], md5: &mut Md5| -> Result<(), BlockError> {
        if stored {
            md5.update(bytes);
        }
        sink(bytes)
    };
    match codec {
        Compression::Lz4 if data.len() > LZ4_CHUNK => {
            // One record a piece, and no more pieces made ahead than the workers need:
            // what is in flight stays a few records (a writer's own lz4 holds one).
            let piece = LZ4_CHUNK;
            crate::pipeline::in_order_parts(
                data.len().div_ceil(piece),
                workers,
                workers + 1,
                |n, buf| super::lz4_records_into(&data[n * piece..data.len().min((n + 1) * piece)], buf),
                |buf, records| {
                    for r in records {
                        put(&buf[r], &mut md5)?;
                    }
                    Ok(())
                },
            )?;
        }
        Compression::Zlib if data.len() > pdeflate::PIECE => {
            let corrupt = |message| BlockError::Corrupt { codec, message };
            put(&pdeflate::HEADER, &mut md5)?;
            let mut adler = 1u32;
            crate::pipeline::in_order_parts(
                pdeflate::piece_count(data.len()),
                workers,
                2 * workers,
                |n, buf| pdeflate::deflate_piece_of(data, n, 6, buf).map_err(corrupt),
                |buf, (len, piece_adler)| {
                    adler = pdeflate::combine_adler(adler, piece_adler, len);
                    put(buf, &mut md5)
                },
            )?;
            put(&adler.to_be_bytes(), &mut md5)?;
        }
        Compression::Bzp2 if data.len() > 4 << 20 => {
            let corrupt = |message| BlockError::Corrupt { codec, message };
            let mut stream = pbzip::Stream::new(9).map_err(corrupt)?;
            let batch = stream.batch_len().saturating_mul(4).max(1);
            let count = data.len().div_ceil(batch).max(1);
            for n in 0..count {
                let bytes = &data[(n * batch).min(data.len())..data.len().min((n + 1) * batch)];
                match stream.feed(bytes, n + 1 == count) {
                    Ok(piece) => put(&piece, &mut md5)?,
                    // The parallel compressor declined before anything was handed on:
                    // the serial stream is the same.
                    Err(_) if n == 0 => {
                        put(&super::encode(codec, data)?, &mut md5)?;
                        break;
                    }
                    Err(e) => return Err(corrupt(e)),
                }
            }
        }
        _ => put(&super::encode(codec, data)?, &mut md5)?,
    }
    Ok(match hash {
        HashOf::Nothing => None,
        HashOf::Stored => Some(md5.finalize()),
        HashOf::Data => Some(crate::block::md5(data)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(n: usize) -> Vec<u8> {
        (0..n).map(|i| ((i / 7) as f32).to_le_bytes()[i % 4] ^ u8::try_from(i % 13).unwrap_or(0)).collect()
    }

    /// The same bytes as `encode`, and the checksums of the stored bytes or of the data.
    #[test]
    fn the_stream_of_encode_and_its_md5() {
        for codec in [Compression::Lz4, Compression::Zlib, Compression::Bzp2, Compression::None] {
            for n in [0, 1000, LZ4_CHUNK, LZ4_CHUNK + 5, 2 * LZ4_CHUNK + 3, 5 * LZ4_CHUNK + 1] {
                if codec == Compression::Bzp2 && n > 2 * LZ4_CHUNK {
                    continue;
                }
                let data = sample(n);
                let want = super::super::encode(codec, &data).unwrap();
                let (got, md5) = encode_hashed(codec, &data, HashOf::Stored).unwrap();
                if codec == Compression::Lz4 {
                    // The same records (one per 4 MiB of data), each decoding to its part.
                    let mut back = vec![0u8; n];
                    super::super::decode_into(codec, &got, &mut back).unwrap();
                    assert!(back == data, "{codec} {n}");
                    assert!(got.len().abs_diff(want.len()) < 64 + want.len() / 100, "{codec} {n}");
                } else {
                    assert!(got == want, "{codec} {n}");
                }
                assert_eq!(md5, Some(crate::block::md5(&got)));
                let (_, raw) = encode_hashed(codec, &data, HashOf::Data).unwrap();
                assert_eq!(raw, Some(crate::block::md5(&data)));
                assert_eq!(encode_hashed(codec, &data, HashOf::Nothing).unwrap().1, None);
            }
        }
        assert!(encode_hashed(Compression::Other(*b"abcd"), b"x", HashOf::Stored).is_err());
    }
}
