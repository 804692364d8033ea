//! lz4f: one LZ4 frame (the LZ4 project's frame format: magic, descriptor, blocks,
//! optional checksums), as the asdf-compression plugin (`lz4.frame.compress`) and
//! asdf-cxx write it; decoded by lz4_flex's frame decoder, a block at a time, into the
//! block's buffer. Read only.

use std::io::Read;

use super::Compression;
use crate::block::BlockError;

/// Decodes `input` into `out`, which it must fill exactly: the frame (and any frames
/// after it) must hold exactly that many bytes; bytes that are not a frame after it are
/// an error, as are wrong checksums and a content size that does not hold.
pub(super) fn decode(input: &[u8], out: &mut [u8]) -> Result<(), BlockError> {
    let codec = Compression::Lz4Frame;
    let expected = out.len() as u64;
    let corrupt = |e: std::io::Error| BlockError::Corrupt { codec, message: e.to_string() };
    if input.is_empty() {
        // Nothing stored: right only for nothing decoded.
        return if out.is_empty() { Ok(()) } else { Err(BlockError::DecodedTooShort { codec, expected, got: 0 }) };
    }
    complete(input).map_err(|message| BlockError::Corrupt { codec, message })?;
    let mut frames = lz4_flex::frame::FrameDecoder::new(input);
    let mut filled = 0;
    while filled < out.len() {
        match frames.read(&mut out[filled..]) {
            Ok(0) => return Err(BlockError::DecodedTooShort { codec, expected, got: filled as u64 }),
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(corrupt(e)),
        }
    }
    // All `expected` bytes came: the frames must end here, without one byte more.
    let mut probe = [0u8; 1];
    loop {
        match frames.read(&mut probe) {
            Ok(0) => return Ok(()),
            Ok(_) => return Err(BlockError::DecodedTooLong { codec, expected }),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(corrupt(e)),
        }
    }
}

/// Checks that `input` is whole frames, each to its end mark and content checksum
/// (lz4_flex's decoder takes a frame cut at a block boundary for a whole one): walks
/// their headers and block sizes, decoding nothing.
fn complete(input: &[u8]) -> Result<(), String> {
    let le32 = |at: usize| {
        input
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| format!("the frame is cut short at stored byte {}", input.len()))
    };
    let mut at = 0usize;
    while at < input.len() {
        let magic = le32(at)?;
        if magic & 0xffff_fff0 == 0x184d_2a50 {
            // A skippable frame: its length, then that many bytes.
            let len = le32(at + 4)? as usize;
            at = at.saturating_add(8).saturating_add(len);
            continue;
        }
        if magic != 0x184d_2204 {
            return Err(format!("no LZ4 frame magic at stored byte {at}"));
        }
        let flg = *input.get(at + 4).ok_or_else(|| format!("the frame header is cut short at stored byte {at}"))?;
        // Magic, FLG, BD, content size, dictionary id, header checksum.
        let mut p = at + 7 + if flg & 0x08 != 0 { 8 } else { 0 } + if flg & 0x01 != 0 { 4 } else { 0 };
        let block_checksum = if flg & 0x10 != 0 { 4 } else { 0 };
        loop {
            let size = le32(p)?;
            p += 4;
            if size == 0 {
                break;
            }
            p = p.saturating_add((size & 0x7fff_ffff) as usize).saturating_add(block_checksum);
        }
        if flg & 0x04 != 0 {
            p += 4;
        }
        if p > input.len() {
            return Err(format!("the frame at stored byte {at} is cut short at stored byte {}", input.len()));
        }
        at = p;
    }
    if at > input.len() {
        return Err(format!("a skippable frame is cut short at stored byte {}", input.len()));
    }
    Ok(())
}
