//! zstd: one Zstandard frame, as the asdf-compression plugin and ASDF.jl write it,
//! decoded by libzstd straight into the block's buffer (its size bounds the output);
//! written at level 3, the plugin's, unless asked for another.

use super::Compression;
use crate::block::BlockError;

/// The level the asdf-compression plugin writes at.
pub(crate) const LEVEL: i32 = 3;

/// Decodes `input` into `out`, which it must fill exactly. Frames after the first are
/// decoded too (as libzstd does), and so must fit; any other bytes after it are an
/// error, as are a frame cut short and a wrong content checksum.
pub(super) fn decode(input: &[u8], out: &mut [u8]) -> Result<(), BlockError> {
    use zstd::zstd_safe::{self, zstd_sys};
    let codec = Compression::Zstd;
    let expected = out.len() as u64;
    if input.is_empty() {
        // Nothing stored: right only for nothing decoded.
        return if out.is_empty() { Ok(()) } else { Err(BlockError::DecodedTooShort { codec, expected, got: 0 }) };
    }
    let mut d = zstd_safe::DCtx::try_create()
        .ok_or_else(|| BlockError::Corrupt { codec, message: "cannot make a zstd context".into() })?;
    match d.decompress(out, input) {
        Ok(n) if n as u64 == expected => Ok(()),
        Ok(n) => Err(BlockError::DecodedTooShort { codec, expected, got: n as u64 }),
        // SAFETY: ZSTD_getErrorCode only reads the number it is given.
        Err(code)
            if unsafe { zstd_sys::ZSTD_getErrorCode(code) }
                == zstd_sys::ZSTD_ErrorCode::ZSTD_error_dstSize_tooSmall =>
        {
            Err(BlockError::DecodedTooLong { codec, expected })
        }
        Err(code) => Err(BlockError::Corrupt { codec, message: zstd_safe::get_error_name(code).to_string() }),
    }
}

/// One frame of `data` at `level` (with its content size, as the plugin writes).
pub(super) fn encode(data: &[u8], level: i32) -> Result<Vec<u8>, BlockError> {
    zstd::bulk::compress(data, level)
        .map_err(|e| BlockError::Corrupt { codec: Compression::Zstd, message: format!("compressing: {e}") })
}
