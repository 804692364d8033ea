//! xz: an xz stream (the XZ Utils container of LZMA2), as ASDF.jl (CodecXz, liblzma)
//! writes it under the label `xz\0\0`; decoded by lzma-rust2's sans-I/O decoder into the
//! block's buffer, whose dictionary window grows with the output (never to the size a
//! stream declares). Concatenated streams are read, as liblzma reads them for ASDF.jl.
//! Read only.

use super::{Compression, drive_into};
use crate::block::BlockError;

/// Decodes `input` into `out`, which it must fill exactly; the integrity check the
/// stream names (CRC32, CRC64, SHA-256) is verified; bytes after the last stream that
/// are not stream padding are an error.
pub(super) fn decode(input: &[u8], out: &mut [u8]) -> Result<(), BlockError> {
    let codec = Compression::Xz;
    let mut d = lzma_rust2::XzStream::new(true);
    let step = |i: &[u8], o: &mut [u8]| -> Result<(usize, usize, bool), String> {
        let r = d.process(i, o, lzma_rust2::Action::Finish).map_err(|e| e.to_string())?;
        Ok((r.bytes_consumed, r.bytes_produced, r.status == lzma_rust2::Status::StreamEnd))
    };
    let consumed = drive_into(codec, input, out, step)?;
    if consumed != input.len() {
        return Err(BlockError::Corrupt {
            codec,
            message: format!("{} bytes after the stream's end at stored byte {consumed}", input.len() - consumed),
        });
    }
    Ok(())
}
