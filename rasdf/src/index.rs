//! The block index: `#ASDF BLOCK INDEX` and a YAML list of block offsets at the end of
//! the file. It is an optimisation only: rasdf uses it once it has checked it against the
//! blocks, and otherwise walks the block headers.
//!
//! ASDF Standard, file_layout "Block index": "the offsets ... must be in increasing order";
//! readers should check that the first offset is the first block, that each entry points
//! at a block magic, and that the index immediately follows the last block.

use crate::Limits;
use crate::block::{BlockError, BlockHeader};

/// The line that opens a block index.
pub const INDEX_HEADER: &[u8] = b"#ASDF BLOCK INDEX";

/// Why an index was not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// The text after the header is not a YAML list of integers.
    #[error("block index is not a YAML list of offsets: {0}")]
    Syntax(String),
    /// The list is empty.
    #[error("block index is empty")]
    Empty,
    /// Offsets do not increase.
    #[error("block index offsets do not increase at entry {0}")]
    NotIncreasing(usize),
    /// The first offset is not the first block.
    #[error("block index starts at {found}, but the first block is at {expected}")]
    FirstMismatch {
        /// Offset of the first block magic.
        expected: u64,
        /// The index's first entry.
        found: u64,
    },
    /// An entry does not point at a valid block header.
    #[error("block index entry {entry} (byte {offset}) is not a valid block: {reason}")]
    BadEntry {
        /// Entry number.
        entry: usize,
        /// Its offset.
        offset: u64,
        /// What is wrong there.
        reason: BlockError,
    },
    /// An entry points at a streamed block, which an index may not list.
    #[error("block index entry {entry} (byte {offset}) is a streamed block")]
    Streamed {
        /// Entry number.
        entry: usize,
        /// Its offset.
        offset: u64,
    },
    /// An entry overlaps the previous block's space.
    #[error("block index entry {entry} (byte {offset}) lies inside block {}", entry - 1)]
    Overlap {
        /// Entry number.
        entry: usize,
        /// Its offset.
        offset: u64,
    },
    /// The last block does not end where the index starts.
    #[error("the last block ends at byte {block_end}, but the index starts at {index_at}")]
    NotAfterLastBlock {
        /// End of the last block's allocated space.
        block_end: u64,
        /// Offset of `#ASDF BLOCK INDEX`.
        index_at: u64,
    },
}

/// Offset of the last `#ASDF BLOCK INDEX` at or after `min_offset`, searching backwards
/// from the end of the file over at most `limits.max_index_bytes`.
pub fn find(file: &[u8], min_offset: u64, limits: &Limits) -> Option<u64> {
    let len = file.len() as u64;
    let lo = min_offset.max(len.saturating_sub(limits.max_index_bytes));
    let lo = usize::try_from(lo).ok()?;
    let hay = file.get(lo..)?;
    memchr::memmem::rfind(hay, INDEX_HEADER).map(|i| (lo + i) as u64)
}

/// Parses the index at `at` (which starts with [`INDEX_HEADER`]): a flow or block YAML
/// list, with or without `%YAML`, NUL bytes and white space allowed after it.
///
/// # Errors
/// [`IndexError::Syntax`] when it is not a list of non-negative integers.
pub fn parse(file: &[u8], at: u64) -> Result<Vec<u64>, IndexError> {
    let text = index_text(file, at)?;
    match plain_list(text) {
        Some(offsets) => Ok(offsets),
        None => parse_yaml(text),
    }
}

/// The text of the index at `at`: what follows [`INDEX_HEADER`] (the header line's
/// break included), without the NUL bytes that may end it.
fn index_text(file: &[u8], at: u64) -> Result<&str, IndexError> {
    let start = usize::try_from(at).map_err(|_| IndexError::Syntax("offset too large".into()))?;
    let body = file
        .get(start..)
        .and_then(|b| b.strip_prefix(INDEX_HEADER))
        .ok_or_else(|| IndexError::Syntax("no index header".into()))?;
    let end = body.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    std::str::from_utf8(&body[..end]).map_err(|e| IndexError::Syntax(e.to_string()))
}

/// The index text through the YAML parser.
pub(crate) fn parse_yaml(text: &str) -> Result<Vec<u64>, IndexError> {
    let (offsets, seen_seq) = crate::tree::guard_parser(|| parse_list(text)).map_err(IndexError::Syntax)??;
    if !seen_seq {
        return Err(IndexError::Syntax("no list".into()));
    }
    Ok(offsets)
}

/// The index as writers lay it out (the header line's break, `%YAML 1.1`, `---`, a line
/// `- N` per block, `...`), read without a YAML parser; `None` for any other text, which
/// the parser then reads.
pub(crate) fn plain_list(text: &str) -> Option<Vec<u64>> {
    let text = text.strip_prefix('\n').unwrap_or(text);
    let body = text.strip_prefix("%YAML 1.1\n---\n")?;
    let body = body.strip_suffix("...\n").or_else(|| body.strip_suffix("..."))?;
    let lines = body.strip_suffix('\n')?;
    lines
        .split('\n')
        .map(|line| {
            let digits = line.strip_prefix("- ")?;
            let plain = !digits.is_empty() && digits.len() <= 20 && digits.bytes().all(|b| b.is_ascii_digit());
            plain.then(|| digits.parse::<u64>().ok()).flatten()
        })
        .collect()
}

/// The offsets of a YAML list of integers, and whether a list was found.
fn parse_list(text: &str) -> Result<(Vec<u64>, bool), IndexError> {
    let mut offsets = Vec::new();
    let mut depth = 0usize;
    let mut seen_seq = false;
    let mut parser = libyaml_safer::Parser::new();
    let mut input = text.as_bytes();
    parser.set_input_string(&mut input);
    loop {
        use libyaml_safer::EventData;
        let ev = parser.parse().map_err(|e| IndexError::Syntax(e.to_string()))?;
        match ev.data {
            EventData::SequenceStart { .. } if depth == 0 && !seen_seq => {
                depth = 1;
                seen_seq = true;
            }
            EventData::SequenceEnd if depth == 1 => depth = 0,
            EventData::Scalar { value, .. } if depth == 1 => {
                let n = value.parse::<u64>().map_err(|_| IndexError::Syntax(format!("'{value}' is not an offset")))?;
                offsets.push(n);
            }
            EventData::StreamEnd => break,
            EventData::StreamStart { .. } | EventData::DocumentStart { .. } | EventData::DocumentEnd { .. } => {}
            other => return Err(IndexError::Syntax(format!("unexpected {other:?}"))),
        }
    }
    Ok((offsets, seen_seq))
}

/// Reads the blocks the index lists and checks each against the file: the first is the
/// first block, offsets increase, each holds a valid header, none overlaps the one
/// before, and the last block ends where the index starts.
///
/// # Errors
/// The first [`IndexError`] found.
pub fn verify(file: &[u8], offsets: &[u64], first_block: u64, index_at: u64) -> Result<Vec<BlockHeader>, IndexError> {
    let Some(&first) = offsets.first() else {
        return Err(IndexError::Empty);
    };
    if first != first_block {
        return Err(IndexError::FirstMismatch { expected: first_block, found: first });
    }
    let mut headers: Vec<BlockHeader> = Vec::with_capacity(offsets.len().min(1 << 20));
    for (entry, &offset) in offsets.iter().enumerate() {
        if let Some(prev) = headers.last() {
            if offset <= prev.offset {
                return Err(IndexError::NotIncreasing(entry));
            }
            if offset < prev.end() {
                return Err(IndexError::Overlap { entry, offset });
            }
        }
        let h = BlockHeader::parse(file, offset).map_err(|reason| IndexError::BadEntry { entry, offset, reason })?;
        if h.is_streamed() {
            return Err(IndexError::Streamed { entry, offset });
        }
        headers.push(h);
    }
    let block_end = headers.last().map_or(0, BlockHeader::end);
    if block_end != index_at {
        return Err(IndexError::NotAfterLastBlock { block_end, index_at });
    }
    Ok(headers)
}

/// How the index compared with the blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexStatus {
    /// The file has no index.
    Missing,
    /// The index was checked and lists exactly the blocks.
    Valid,
    /// The index is present but was not used.
    Invalid(IndexError),
}

/// Formats an index for `offsets` as the reference library writes it.
pub fn write(offsets: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(32 + offsets.len() * 12);
    out.extend_from_slice(INDEX_HEADER);
    out.extend_from_slice(b"\n%YAML 1.1\n---\n");
    for o in offsets {
        out.extend_from_slice(format!("- {o}\n").as_bytes());
    }
    out.extend_from_slice(b"...\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lists_read_as_the_yaml_parser_reads_them() {
        for text in [
            "%YAML 1.1\n---\n- 10\n- 20\n...\n",
            "%YAML 1.1\n---\n- 0\n...",
            "%YAML 1.1\n---\n- 18446744073709551615\n...\n",
            "%YAML 1.1\n---\n- 017\n...\n",
        ] {
            let fast = plain_list(text).unwrap_or_else(|| panic!("not read plainly: {text:?}"));
            let (general, _) = parse_list(text).unwrap();
            assert_eq!(fast, general, "{text:?}");
        }
        for other in [
            "%YAML 1.1\n---\n- 10\n- 20 # c\n...\n",
            "%YAML 1.1\n--- [1, 2]\n...\n",
            "%YAML 1.1\n---\n- +5\n...\n",
            "%YAML 1.1\n---\n-  5\n...\n",
            "%YAML 1.1\n---\n- 18446744073709551616\n...\n",
            "%YAML 1.1\n---\n...\n",
            "%YAML 1.1\n---\n- 1\n",
        ] {
            assert_eq!(plain_list(other), None, "{other:?}");
        }
    }

    #[test]
    fn parses_flow_and_block_styles_and_trailing_nuls() {
        let f = b"#ASDF BLOCK INDEX\n%YAML 1.1\n---\n- 10\n- 20\n...\n\0\0\0";
        assert_eq!(parse(f, 0).unwrap(), vec![10, 20]);
        assert_eq!(parse(b"#ASDF BLOCK INDEX\n--- [2043, 16340]\n...\n", 0).unwrap(), vec![2043, 16340]);
        assert_eq!(parse(b"#ASDF BLOCK INDEX\n--- []\n...\n", 0).unwrap(), Vec::<u64>::new());
        assert!(parse(b"#ASDF BLOCK INDEX\n][\n", 0).is_err());
        assert!(parse(b"#ASDF BLOCK INDEX\n- a\n- b\n", 0).is_err());
    }

    #[test]
    fn write_then_parse() {
        assert_eq!(parse(&write(&[1, 2, 3]), 0).unwrap(), vec![1, 2, 3]);
    }

    #[test]
    fn the_index_writers_lay_out_is_read_plainly() {
        // rasdf's own index, and the reference's (its bytes are rasdf's: see
        // `write_then_parse` and the cross-tests), with the NUL padding some writers add.
        let mut file = write(&[347_965, 348_147, 438_783]);
        file.extend_from_slice(b"\0\0");
        let text = index_text(&file, 0).unwrap();
        assert!(text.starts_with("\n%YAML 1.1\n"), "{text:?}");
        assert_eq!(plain_list(text), Some(vec![347_965, 348_147, 438_783]));
        assert_eq!(parse_yaml(text), Ok(vec![347_965, 348_147, 438_783]));
        // A second blank line is left to the parser (which reads the same).
        assert_eq!(plain_list(&format!("\n{text}")), None);
    }
}
