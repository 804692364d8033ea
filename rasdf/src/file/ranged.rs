//! Opening a file by byte ranges, local ([`super::source::LocalFile`]) or remote: the
//! parts an open reads (header, tree, block headers, block index) read with few reads,
//! block data read when first used.
//!
//! The open works on a [`SparseBytes`]: the file's whole length, holding the parts read
//! and zeros elsewhere, so that the header, tree and block code read it as they read a
//! file in memory. Block data never comes from it: [`AsdfFile`] reads each block it uses
//! (see `AsdfFile::block_source`).
//!
//! Reads (requests, for a remote file): the first and the last 64 KiB at once (one round
//! trip: the header, a small tree, the block index); more of the start when the tree is
//! larger (its end known from the index's first offset, so one more round trip); the
//! block headers the index names, side by side (one more). A file without a valid index
//! has its block headers read one after the other.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::block::{self, BLOCK_MAGIC};
use crate::error::{Error, Location, Result};
use crate::header;
use crate::index::{self, IndexStatus};

use super::bytes::{FileBytes, SparseBytes};
use super::source::RangeSource;
use super::{AsdfFile, OpenOptions};

/// Bytes read first from each end of a file.
pub(super) const END_BYTES: u64 = 64 * 1024;
/// Bytes read at each block header (the 6 of magic and size and a 48-byte header, and
/// some room for a longer one).
const HEADER_FETCH: u64 = 64;

/// The first bytes of a file read by ranges and its last ones (offset, bytes), read
/// together when it is opened.
#[derive(Debug)]
pub struct Ends {
    /// From byte 0.
    pub head: Vec<u8>,
    /// The last bytes, and where they start.
    pub tail: (u64, Vec<u8>),
}

impl OpenOptions {
    /// Opens the file `source` reads (named `name` in errors), whose `ends` were read.
    pub(super) fn open_ranged(&self, source: Arc<dyn RangeSource>, ends: Ends, name: PathBuf) -> Result<AsdfFile> {
        if crate::fits::is_fits(&ends.head) && crate::fits::Fits::parse(&ends.head).is_ok() {
            return self.ranged_fits(source, ends, name);
        }
        let len = source.len();
        let mut pieces: Vec<(u64, Vec<u8>)> = vec![(0, ends.head), (ends.tail.0, ends.tail.1)];
        let sparse = |pieces: &[(u64, Vec<u8>)]| SparseBytes::new(len, pieces).map_err(Error::from);
        let prefix = |pieces: &[(u64, Vec<u8>)]| pieces[0].1.len() as u64;

        // The index in the tail, if any: its offsets say where the tree ends (before the
        // first block) and where every block header is.
        let offsets = {
            let s = sparse(&pieces)?;
            let bytes = s.as_slice();
            index::find(bytes, 0, &self.limits)
                .filter(|&at| s.has(at..len))
                .and_then(|at| index::parse(bytes, at).ok())
                .filter(|o| o.windows(2).all(|w| w[0] < w[1]) && o.last().is_none_or(|&l| l < len))
                .filter(|o| o.len() <= self.limits.max_blocks)
        };

        // The start, up to the first block's header.
        loop {
            let have = prefix(&pieces);
            if have >= len {
                break;
            }
            let s = sparse(&pieces)?;
            let want = match header::parse(s.as_slice()) {
                Ok(h) => {
                    let tree_end = h.tree.as_ref().map_or(0, |t| t.end);
                    let first = match &offsets {
                        Some(o) => o.first().copied(),
                        None => block::find_first_block(s.as_slice(), h.blocks_from).filter(|&f| f < have),
                    };
                    match first {
                        Some(f) => f.saturating_add(HEADER_FETCH).max(tree_end),
                        // No block yet in what was read (or none at all): the tree and
                        // the padding after it may go on.
                        None if tree_end < have && offsets.is_some() => tree_end,
                        None => have.saturating_mul(4),
                    }
                }
                // The tree does not end in what was read: more (to the first block when
                // the index says where it is).
                Err(_) => offsets
                    .as_ref()
                    .and_then(|o| o.first().copied())
                    .map_or(have.saturating_mul(4), |f| f + HEADER_FETCH),
            }
            .min(len);
            if want <= have {
                break;
            }
            let more = source.read_range(have..want)?;
            pieces[0].1.extend_from_slice(&more);
        }

        // The block headers the index names.
        if let Some(o) = &offsets {
            let s = sparse(&pieces)?;
            let ranges: Vec<Range<u64>> = o
                .iter()
                .map(|&at| at..at.saturating_add(HEADER_FETCH).min(len))
                .filter(|r| !s.has(r.clone()))
                .collect();
            let got = source.read_ranges(&ranges)?;
            pieces.extend(ranges.iter().map(|r| r.start).zip(got));
        }

        let file = self.ranged_file(&source, &name, &pieces)?;
        if matches!(file.index_status(), IndexStatus::Valid) && file.blocks_complete() {
            return Ok(file);
        }
        // No valid index: the block headers one after the other.
        let s = sparse(&pieces)?;
        let Some(first) =
            header::parse(s.as_slice()).ok().and_then(|h| block::find_first_block(s.as_slice(), h.blocks_from))
        else {
            return Ok(file);
        };
        drop(s);
        let mut at = first;
        let mut count = 0usize;
        while at < len && count <= self.limits.max_blocks {
            let r = at..at.saturating_add(HEADER_FETCH).min(len);
            let head = source.read_range(r)?;
            let next = next_block(&head, at, len);
            pieces.push((at, head));
            match next {
                Some(n) if n > at => at = n,
                _ => {
                    // Not a block: what follows (an index, junk) as the walk will judge it.
                    let rest = at..len.min(at.saturating_add(END_BYTES));
                    let got = source.read_range(rest.clone())?;
                    pieces.push((rest.start, got));
                    break;
                }
            }
            count += 1;
        }
        let file = self.ranged_file(&source, &name, &pieces)?;
        if !file.blocks_complete() {
            return Err(Error::new(
                crate::ErrorKind::Io(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "the block headers could not all be read".to_string(),
                )),
                Location::default(),
            ));
        }
        Ok(file)
    }

    /// Opens the ASDF file inside a FITS file read by ranges (ASDF-in-FITS): the HDUs'
    /// headers are read one after the other (their data skipped: a read for each HDU
    /// whose header is not in what was read already), then the ASDF extension's data,
    /// which is the ASDF file, whole. A `fits:` array's HDU data is read when first used.
    fn ranged_fits(&self, source: Arc<dyn RangeSource>, ends: Ends, name: PathBuf) -> Result<AsdfFile> {
        use crate::fits::{Fits, RECORD};
        const WINDOW: u64 = 10 * RECORD as u64;
        // Rounds of requests at most (each parses the HDUs read so far again): a file of
        // many small HDUs is read in windows that double every round.
        const MAX_ROUNDS: usize = 64;
        let len = source.len();
        let fits_error = |e: crate::fits::FitsError| Error::new(e, Location::default());
        let mut pieces: Vec<(u64, Vec<u8>)> = vec![(0, ends.head), (ends.tail.0, ends.tail.1)];
        let mut rounds = 0usize;
        let (sparse, fits) = loop {
            let s = SparseBytes::new(len, &pieces)?;
            let fits = Fits::parse(s.as_slice()).map_err(fits_error)?;
            // Where the HDU after the last one read starts: its header unread (taken for
            // the zeros that may end a file) or cut short by what was fetched, or not an
            // HDU (the parse's verdict then stands).
            let next = fits.hdus().last().map_or(0, |h| h.data_end().saturating_add(RECORD as u64 - 1)) / RECORD as u64
                * RECORD as u64;
            if next >= len || rounds >= MAX_ROUNDS {
                break (s, fits);
            }
            let here = s.present_run(next);
            let at = usize::try_from(next).unwrap_or(usize::MAX);
            let bytes = s.as_slice().get(at..at.saturating_add(usize::try_from(here).unwrap_or(0))).unwrap_or_default();
            if (bytes.len() >= 8 && !bytes.starts_with(b"XTENSION")) || header_ends(bytes) || next + here >= len {
                break (s, fits);
            }
            // More of it: as much again as is here, at least 10 records, twice as many
            // each round after the first 4 (up to 14.7 MB).
            let from = next + here;
            let window = WINDOW << rounds.saturating_sub(4).min(9);
            let to = len.min(from.saturating_add(here.max(window)));
            let got = source.read_range(from..to)?;
            pieces.push((from, got));
            rounds += 1;
        };
        let (_, range) = fits.asdf_extension().map_err(fits_error)?;
        let sparse = if sparse.has(range.clone()) {
            sparse
        } else {
            crate::Limits::check("max_block_bytes", range.end - range.start, self.limits.max_block_bytes)
                .map_err(|e| Error::new(e, Location::default()))?;
            let got = source.read_range(range.clone())?;
            pieces.push((range.start, got));
            SparseBytes::new(len, &pieces)?
        };
        let mut file = AsdfFile::from_fits(FileBytes::Sparse(sparse), fits, Some(name), self.clone())?;
        file.set_ranged_fits(source);
        Ok(file)
    }

    fn ranged_file(&self, source: &Arc<dyn RangeSource>, name: &Path, pieces: &[(u64, Vec<u8>)]) -> Result<AsdfFile> {
        let bytes = FileBytes::Sparse(SparseBytes::new(source.len(), pieces)?);
        // Errors name the file (the URL of a remote one).
        let mut file = AsdfFile::from_parts(bytes, Some(name.to_path_buf()), self.clone())?;
        file.source = Some(Arc::clone(source));
        file.fetched = (0..file.blocks.len()).map(|_| std::sync::OnceLock::new()).collect();
        file.lz4_walk = (0..file.blocks.len()).map(|_| std::sync::Mutex::new(Vec::new())).collect();
        Ok(file)
    }
}

/// One record of an lz4 block, as walked: where it is in the block's stored bytes, its
/// length (the 4-byte length word included), and which decoded bytes it holds.
#[derive(Debug, Clone, Copy)]
pub(super) struct Lz4Step {
    pos: u64,
    len: u64,
    raw: u64,
    raw_len: u64,
}

/// Stored bytes of guessed windows fetched in one round of
/// [`AsdfFile::ranged_lz4_records`]'s walk.
const LZ4_GUESS_BYTES: u64 = 4 << 20;

/// Windows of an lz4 block's stored bytes (offsets in it, inside `..used`) where the
/// headers after the one at `pos` (decoded offset `raw`) should be, up to the one that
/// decodes past `want_end`, going by the mean lengths of the records in `walk`: the
/// `i`th after `pos` looked for `i` mean lengths on, give or take 4 KiB and 1/128 of
/// that. None while `walk` is empty or its records fit in a `window` of their own.
fn lz4_guesses(walk: &[Lz4Step], pos: u64, raw: u64, want_end: u64, used: u64, window: u64) -> Vec<Range<u64>> {
    let walked = walk.len() as u64;
    if walked == 0 {
        return Vec::new();
    }
    let mean_len = walk.iter().map(|r| r.len).sum::<u64>() / walked;
    let mean_raw = (walk.iter().map(|r| r.raw_len).sum::<u64>() / walked).max(1);
    if mean_len <= window {
        return Vec::new();
    }
    let ahead = want_end.saturating_sub(raw).div_ceil(mean_raw);
    let mut guesses = Vec::new();
    let mut spent = 0u64;
    for i in 1..ahead {
        let centre = pos.saturating_add(i.saturating_mul(mean_len));
        let half = 4096u64.saturating_add(i.saturating_mul(mean_len) / 128);
        let w = centre.saturating_sub(half).max(pos)..centre.saturating_add(half + 8).min(used);
        if w.start >= w.end || w.end - w.start < 8 {
            break;
        }
        spent += w.end - w.start;
        if spent > LZ4_GUESS_BYTES {
            break;
        }
        guesses.push(w);
    }
    guesses
}

/// Whether FITS header `bytes` (from its first card) hold its `END` card.
fn header_ends(bytes: &[u8]) -> bool {
    bytes.chunks_exact(80).any(|card| card.starts_with(b"END") && card[3..8].iter().all(|&b| b == b' '))
}

/// Where the block after the one whose header starts `head` (at `at`) starts; `None`
/// when `head` is not a block header.
fn next_block(head: &[u8], at: u64, len: u64) -> Option<u64> {
    if head.len() < 30 || head[..4] != BLOCK_MAGIC {
        return None;
    }
    let header_size = u64::from(u16::from_be_bytes([head[4], head[5]]));
    let flags = u32::from_be_bytes([head[6], head[7], head[8], head[9]]);
    if flags & 1 != 0 {
        return Some(len); // streamed: the data goes to the end
    }
    let allocated = u64::from_be_bytes(head[14..22].try_into().ok()?);
    at.checked_add(6)?.checked_add(header_size)?.checked_add(allocated)
}

impl AsdfFile {
    /// Whether every block header found was read (a file's headers read from
    /// zeros would be a wrong reading: the open fails instead).
    fn blocks_complete(&self) -> bool {
        match &self.bytes {
            FileBytes::Sparse(s) => self.blocks.iter().all(|b| s.has(b.offset..b.data_offset().min(s.len as u64))),
            _ => true,
        }
    }

    /// Bytes `want` of uncompressed block `n` of a file read by ranges, in one read (for
    /// [`ArrayRef::rows`](super::ArrayRef::rows)).
    pub(super) fn source_range(&self, source: &dyn RangeSource, n: usize, want: Range<u64>) -> Result<Vec<u8>> {
        let at = self.block_header(n)?.data_offset();
        source.read_range(at + want.start..at + want.end).map_err(|e| Error::from(e).with_block(n))
    }

    /// The records of lz4 block `n` of a file read by ranges that hold decoded bytes
    /// `want`, read and decoded alone (the reference's framing is a run of records, each
    /// decoded alone): the decoded offset of the first and their bytes. The
    /// records' headers are walked from the block's start and remembered. Each round of
    /// requests fetches a window of 64 KiB at the next header (several headers when the
    /// records are small) and, once records were walked, windows where the headers after
    /// it should be going by the records' mean length, each wider the further it guesses
    /// (within [`LZ4_GUESS_BYTES`] a round): the walk follows the headers through every
    /// window fetched, so a round walks as many records as were guessed right, at least
    /// one. `None` when the headers do not add up: the whole block is then read, and
    /// says what is wrong.
    pub(super) fn ranged_lz4_records(
        &self,
        source: &dyn RangeSource,
        n: usize,
        want: Range<u64>,
    ) -> Result<Option<(u64, Vec<u8>)>> {
        const WINDOW: u64 = 64 * 1024;
        let h = self.block_header(n)?;
        let (at, used) = (h.data_offset(), h.used_size);
        let fail = |e: std::io::Error| Error::from(e).with_block(n);
        let mut walk = self.lz4_walk[n].lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            let (mut pos, mut raw) = walk.last().map_or((0, 0), |r| (r.pos + r.len, r.raw + r.raw_len));
            if raw >= want.end || pos >= used {
                break;
            }
            let windows: Vec<Range<u64>> = std::iter::once(pos..used.min(pos + WINDOW))
                .chain(lz4_guesses(&walk, pos, raw, want.end, used, WINDOW))
                .collect();
            let ranges: Vec<Range<u64>> = windows.iter().map(|w| at + w.start..at + w.end).collect();
            let fetched = source.read_ranges(&ranges).map_err(fail)?;
            // The 8 header bytes at `p`, when a window holds them.
            let header_at = |p: u64| {
                windows.iter().zip(&fetched).find_map(|(w, bytes)| {
                    let from = usize::try_from(p.checked_sub(w.start)?).ok()?;
                    bytes.get(from..from.checked_add(8)?)
                })
            };
            let before = walk.len();
            while let Some(head) = header_at(pos) {
                let len = 4 + u64::from(u32::from_be_bytes([head[0], head[1], head[2], head[3]]));
                let raw_len = u64::from(u32::from_le_bytes([head[4], head[5], head[6], head[7]]));
                if len < 8 || pos + len > used || raw_len == 0 || raw + raw_len > h.data_size {
                    return Ok(None);
                }
                walk.push(Lz4Step { pos, len, raw, raw_len });
                (pos, raw) = (pos + len, raw + raw_len);
                if raw >= want.end || pos >= used {
                    break;
                }
            }
            if walk.len() == before {
                return Ok(None); // not even one header in the window: the block is cut
            }
        }
        let needed: Vec<Lz4Step> =
            walk.iter().filter(|r| r.raw < want.end && r.raw + r.raw_len > want.start).copied().collect();
        drop(walk);
        let (Some(first), Some(last)) = (needed.first(), needed.last()) else { return Ok(None) };
        if first.raw > want.start || last.raw + last.raw_len < want.end {
            return Ok(None);
        }
        let ranges: Vec<Range<u64>> = needed.iter().map(|r| at + r.pos..at + r.pos + r.len).collect();
        let records = source.read_ranges(&ranges).map_err(fail)?;
        let mut out = Vec::new();
        for (r, bytes) in needed.iter().zip(records) {
            let max = usize::try_from(r.raw_len).unwrap_or(usize::MAX);
            // A record that does not decode to its length: the whole block is read, and
            // its decoding says what is wrong.
            let Ok(decoded) = crate::block::codec::lz4_one_record(&bytes, max) else { return Ok(None) };
            if decoded.len() as u64 != r.raw_len {
                return Ok(None);
            }
            out.extend_from_slice(&decoded);
        }
        Ok(Some((first.raw, out)))
    }

    /// lz4 block `n` of a file read by ranges, decoded as its parts come, the decoding of
    /// each part overlapping the reading of the next ones; its stored bytes are not kept.
    /// `None` where this does not apply (not such an lz4 block, checksums to verify,
    /// read already, a limit passed) and for a block the stream finds damaged: the whole
    /// block is then read, and its decoding says what is wrong.
    pub(super) fn lz4_streamed(&self, n: usize) -> Result<Option<Vec<u8>>> {
        let Some(source) = &self.source else { return Ok(None) };
        let h = self.block_header(n)?;
        let limit = self.options.limits.max_block_bytes;
        if h.compression != crate::block::Compression::Lz4
            || self.options.verify_checksums
            || h.is_streamed()
            || self.fetched[n].get().is_some()
            || h.data_size > limit
            || h.used_size > limit
        {
            return Ok(None);
        }
        enum Stop {
            Io(std::io::Error),
            Damaged,
        }
        impl From<std::io::Error> for Stop {
            fn from(e: std::io::Error) -> Stop {
                Stop::Io(e)
            }
        }
        impl From<crate::block::BlockError> for Stop {
            fn from(_: crate::block::BlockError) -> Stop {
                Stop::Damaged
            }
        }
        let start = h.data_offset();
        let end = start.saturating_add(h.used_size).min(source.len());
        let decoded = crate::block::codec::lz4_streamed(h.data_size, |feed| {
            let mut failed = None;
            let read = source.read_in_order(start..end, &mut |part| {
                feed(part).map_err(|stop| {
                    let e = std::io::Error::other("the block's stream stopped");
                    failed = Some(stop);
                    e
                })
            });
            match (read, failed) {
                (_, Some(stop)) => Err(stop),
                (r, None) => r.map_err(Stop::Io),
            }
        });
        match decoded {
            Ok(decoded) => Ok(Some(decoded)),
            Err(Stop::Damaged) => Ok(None),
            Err(Stop::Io(e)) => Err(Error::from(e).with_block(n)),
        }
    }

    /// Block `n` of a file read by ranges, header and stored data, read once and kept.
    pub(super) fn fetched_block(&self, n: usize, source: &dyn RangeSource) -> Result<&[u8]> {
        if let Some(b) = self.fetched[n].get() {
            return Ok(b);
        }
        let got = self.read_block(n, source)?;
        Ok(self.fetched[n].get_or_init(|| got))
    }

    /// Block `n` of a file read by ranges, header and stored data, read now.
    pub(super) fn read_block(&self, n: usize, source: &dyn RangeSource) -> Result<Vec<u8>> {
        let h = self.block_header(n)?;
        crate::Limits::check("max_block_bytes", h.used_size, self.options.limits.max_block_bytes)
            .map_err(|e| Error::new(e, Location::block(n, h.offset)))?;
        let end = h.data_offset().saturating_add(h.used_size).min(source.len());
        source.read_range(h.offset..end).map_err(|e| Error::from(e).with_block(n))
    }
}

#[cfg(test)]
mod tests {
    use super::{LZ4_GUESS_BYTES, Lz4Step, lz4_guesses};

    fn walk(lens: &[u64], raw_len: u64) -> Vec<Lz4Step> {
        let (mut pos, mut raw) = (0, 0);
        lens.iter()
            .map(|&len| {
                let step = Lz4Step { pos, len, raw, raw_len };
                (pos, raw) = (pos + len, raw + raw_len);
                step
            })
            .collect()
    }

    #[test]
    fn guessed_windows_hold_the_headers_of_records_of_steady_length() {
        // Records of 1 900 000 stored bytes for 4 MiB, give or take 0.3 %.
        let lens: Vec<u64> = (0..40).map(|i| 1_900_000 + (i * 7919 % 11_400) - 5_700).collect();
        let done = walk(&lens[..3], 4 << 20);
        let (pos, raw) = (lens[..3].iter().sum::<u64>(), 3 * (4 << 20));
        let used: u64 = lens.iter().sum();
        let guesses = lz4_guesses(&done, pos, raw, 30 * (4 << 20) + 1, used, 64 * 1024);
        assert!(!guesses.is_empty());
        let spent: u64 = guesses.iter().map(|w| w.end - w.start).sum();
        assert!(spent <= LZ4_GUESS_BYTES, "{spent}");
        // Each header after `pos` up to the guesses' reach lies in a window, whole.
        let mut at = pos;
        let mut found = 0;
        for &len in &lens[3..] {
            at += len;
            if guesses.iter().any(|w| w.start <= at && at + 8 <= w.end) {
                found += 1;
            } else {
                break;
            }
        }
        assert!(found >= 10, "{found} headers in the {} windows", guesses.len());
        // Within the block, past `pos`, in order.
        assert!(guesses.iter().all(|w| w.start >= pos && w.end <= used && w.start < w.end));
        assert!(guesses.windows(2).all(|p| p[0].start < p[1].start));
    }

    #[test]
    fn no_guesses_without_a_record_walked_small_records_or_nothing_left_to_find() {
        assert!(lz4_guesses(&[], 0, 0, 1 << 30, 1 << 30, 64 * 1024).is_empty());
        // Records of 10 KiB: the 64 KiB window at the next header holds several.
        let small = walk(&[10_240; 4], 32_768);
        assert!(lz4_guesses(&small, 40_960, 4 * 32_768, 1 << 30, 1 << 30, 64 * 1024).is_empty());
        // The next record holds the end of what is wanted: no header past it is needed.
        let big = walk(&[2 << 20; 2], 4 << 20);
        assert!(lz4_guesses(&big, 4 << 20, 8 << 20, (8 << 20) + 5, 1 << 30, 64 * 1024).is_empty());
        // A hostile mean (records of 4 GiB) stays inside the block.
        let huge = walk(&[u64::from(u32::MAX); 2], 1);
        let g = lz4_guesses(&huge, 2 * u64::from(u32::MAX), 2, u64::MAX, u64::MAX, 64 * 1024);
        assert!(g.iter().all(|w| w.start < w.end));
    }
}
