//! Rows of an array read alone, where that costs less than the whole array: an lz4
//! block's records that hold them (local or remote), a remote uncompressed block's byte
//! range. The records decoded last are kept, so that rows read one after another from
//! the same records decode them once.

use std::ops::Range;
use std::sync::Arc;

use crate::block::Compression;
use crate::error::Result;
use crate::ndarray::{ArrayError, Source};
use crate::tree::NodeRef;

use super::{ArrayRef, AsdfFile};

/// The lz4 records of block `block` decoded last: the decoded offset of the first one,
/// and their bytes.
pub(super) struct Recent {
    block: usize,
    start: u64,
    bytes: Arc<Vec<u8>>,
}

impl ArrayRef<'_> {
    /// Rows `rows` (along the first axis) of the array, read alone:
    /// `(bytes, shape)`, the bytes in the file's byte order. An lz4 block's rows are
    /// decoded from the records that hold them alone (the reference's lz4 framing is a
    /// run of records of 4 MiB, each decoded alone; a remote file's records' headers are
    /// walked once); a remote uncompressed block's rows are one range request.
    ///
    /// `None` when the whole array is to be read instead: a local uncompressed block
    /// (mapped: the whole array costs nothing more), a zlib or bzp2 block (decoded
    /// whole), a block decoded or fetched already, a block past
    /// [`Limits::max_block_bytes`](crate::Limits::max_block_bytes), checksums to verify
    /// ([`OpenOptions::verify_checksums`](super::OpenOptions::verify_checksums)),
    /// inline or external data, an array not C-contiguous or 0-d, and an lz4 block
    /// whose records do not add up (reading it whole then says what is wrong).
    ///
    /// # Errors
    /// A malformed node; rows outside the array; a remote server's errors.
    pub fn rows(&self, rows: Range<usize>) -> Result<Option<(Vec<u8>, Vec<usize>)>> {
        self.file.rows_of(self.node, rows).map_err(|e| self.located(e))
    }
}

impl AsdfFile {
    /// [`ArrayRef::rows`] of the ndarray `node`.
    fn rows_of(&self, node: NodeRef<'_>, rows: Range<usize>) -> Result<Option<(Vec<u8>, Vec<usize>)>> {
        let meta = self.array_meta(node)?;
        let Source::Block(i) = meta.source else { return Ok(None) };
        let n = self.resolve_block(i).map_err(|e| self.array_error(node, e))?;
        let h = self.block_header(n)?;
        let lz4 = h.compression == Compression::Lz4;
        let ranged = self.source.is_some();
        let limit = self.options.limits.max_block_bytes;
        if !(lz4 || ranged && h.compression == Compression::None)
            || h.data_size > limit
            || h.used_size > limit
            || self.options.verify_checksums
            || self.decoded[n].get().is_some()
            || self.block_fetched(n)
        {
            return Ok(None);
        }
        let size = usize::try_from(h.data_size).unwrap_or(usize::MAX);
        let layout = meta.layout(size, &self.options.limits).map_err(|e| self.array_error(node, e))?;
        let itemsize = meta.datatype.size();
        if layout.shape.is_empty() || !layout.is_c_contiguous(itemsize) {
            return Ok(None);
        }
        if rows.start > rows.end || rows.end > layout.shape[0] {
            let message = format!("rows {}..{} of an array of {} rows", rows.start, rows.end, layout.shape[0]);
            return Err(self.array_error(node, ArrayError::Invalid(message)));
        }
        let row_bytes = layout.shape[1..].iter().product::<usize>() * itemsize;
        let mut shape = layout.shape.clone();
        shape[0] = rows.len();
        let start = (layout.offset + rows.start * row_bytes) as u64;
        let want = start..start + (rows.len() * row_bytes) as u64;
        if want.is_empty() {
            return Ok(Some((Vec::new(), shape)));
        }
        let bytes = if lz4 { self.lz4_bytes(n, want)? } else { self.ranged_bytes(n, want)? };
        Ok(bytes.map(|b| (b, shape)))
    }

    /// Decoded bytes `want` (not empty) of lz4 block `n`, from the records decoded last
    /// when they hold them, else from the records that do, decoded (and kept) alone.
    fn lz4_bytes(&self, n: usize, want: Range<u64>) -> Result<Option<Vec<u8>>> {
        let slice = |start: u64, bytes: &[u8]| {
            let from = usize::try_from(want.start.checked_sub(start)?).ok()?;
            let to = usize::try_from(want.end - start).ok()?;
            bytes.get(from..to).map(<[u8]>::to_vec)
        };
        let recent = self.recent_records.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(r) = recent.as_ref().filter(|r| r.block == n)
            && let Some(out) = slice(r.start, &r.bytes)
        {
            return Ok(Some(out));
        }
        drop(recent);
        let Some((start, bytes)) = self.lz4_records(n, want.clone())? else { return Ok(None) };
        let out = slice(start, &bytes);
        if out.is_some() {
            let bytes = Arc::new(bytes);
            *self.recent_records.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
                Some(Recent { block: n, start, bytes });
        }
        Ok(out)
    }

    /// The records of lz4 block `n` that hold decoded bytes `want`, decoded: a remote
    /// file's fetched alone, a local file's from its (mapped) stored bytes. `None` when
    /// the block's records do not add up.
    fn lz4_records(&self, n: usize, want: Range<u64>) -> Result<Option<(u64, Vec<u8>)>> {
        if let Some(source) = &self.source {
            return self.ranged_lz4_records(source.as_ref(), n, want);
        }
        let h = self.block_header(n)?;
        let stored = self.block_stored(n)?;
        let got = crate::block::codec::lz4_records_covering(stored, h.data_size, want).ok();
        // Bytes read from a map of a file cut short under it are zeros, not the file's.
        self.unchanged(Ok(got))
    }

    /// Bytes `want` of uncompressed block `n` of a file read by ranges (`None` for one
    /// at hand whole).
    fn ranged_bytes(&self, n: usize, want: Range<u64>) -> Result<Option<Vec<u8>>> {
        match &self.source {
            Some(source) => self.source_range(source.as_ref(), n, want).map(Some),
            None => Ok(None),
        }
    }

    /// Whether block `n` of a file read by ranges was read whole.
    fn block_fetched(&self, n: usize) -> bool {
        self.fetched.get(n).is_some_and(|f| f.get().is_some())
    }
}
