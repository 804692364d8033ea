//! Reading an array once, holding as little of it as possible: statistics reduced piece
//! by piece from a large compressed block, or from a block decoded for that read alone
//! and dropped; the piece-by-piece decoding those paths share.

use std::borrow::Cow;

use super::{ArrayRef, AsdfFile};
use crate::block::Compression;
use crate::error::{Error, ErrorKind, Location, Result};
use crate::ndarray::stats::{self, Stats, StatsStream};
use crate::ndarray::{ArrayError, ArrayMeta, Datatype, Layout, NdArray, Source, Storage};
use crate::tree::NodeRef;

/// Compressed blocks of at least this many decoded bytes are reduced piece by piece by
/// [`ArrayRef::stats`], not decoded whole (zlib blocks only above
/// [`STREAM_STATS_ZLIB_BYTES`]).
pub const STREAM_STATS_BYTES: u64 = 16 << 20;

/// zlib blocks up to this many decoded bytes are decoded whole by
/// [`ArrayRef::stats`] (and dropped once reduced): libdeflate, which needs the
/// whole output, inflates about twice as fast as the streaming inflater the piece path
/// uses. Larger ones are reduced piece by piece, in a few megabytes.
pub const STREAM_STATS_ZLIB_BYTES: u64 = 512 << 20;

/// An ndarray to be read once (see [`ArrayRef::read_once`]).
pub enum ReadOnce<'f, T> {
    /// The array with its data at hand: over the mapped file or the cache, or owned
    /// when its block was decoded for this read alone.
    Whole(NdArray<'f>),
    /// Elements in C order in a large compressed block not decoded yet: `layout.len()`
    /// items from byte `layout.offset` of the block's data, which the caller decodes
    /// piece by piece with [`ArrayRef::decode_pieces`] into `sink`.
    Pieces {
        /// The array's datatype, byte order and shape.
        meta: ArrayMeta,
        /// Where its elements lie in the block's data.
        layout: Layout,
        /// The block's number.
        block: usize,
        /// The caller's sink, handed back.
        sink: T,
    },
}

/// What [`ArrayRef::stats`] tells of an ndarray.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayStats {
    /// The element type.
    pub datatype: Datatype,
    /// The shape.
    pub shape: Vec<usize>,
    /// Where the data is.
    pub storage: Storage,
    /// The statistics; `None` for complex, string and record arrays. Of the unmasked
    /// elements only, when the array has a mask (see [`ArrayRef::mask`]).
    pub stats: Option<Stats>,
    /// How many elements the mask masks (0 without one).
    pub masked: u64,
}

impl<'f> ArrayRef<'f> {
    /// The statistics of the array (min, max, mean, NaN count; see
    /// [`stats::stats`]), with its type, shape and storage; the numbers are those of
    /// [`stats::stats`] over [`ArrayRef::read_dyn`], to the last digit, however they
    /// are reached:
    /// - A large compressed block (of [`STREAM_STATS_BYTES`] or more; zlib above
    ///   [`STREAM_STATS_ZLIB_BYTES`]) is not held decoded: it is decoded piece by piece
    ///   ([`BlockHeader::decode_pieces`](crate::block::BlockHeader::decode_pieces)) and each piece reduced as it comes
    ///   ([`StatsStream`]), so memory stays at a few megabytes however large the array.
    ///   A layout that is not C-contiguous, and verified checksums (which need the block
    ///   whole), take the whole path instead.
    /// - A compressed block that no other ndarray of the tree uses is decoded whole, then
    ///   dropped, not cached: reducing every array of a file holds one decoded block at a
    ///   time per thread, not all of them.
    /// - Anything else (a block decoded already, or shared) goes through
    ///   [`ArrayRef::read_dyn`] and its cache.
    ///
    /// # Errors
    /// As [`ArrayRef::read_dyn`].
    pub fn stats(&self) -> Result<ArrayStats> {
        let stats = self.file.stats_of(self.node).map_err(|e| self.located(e));
        self.file.unchanged(stats)
    }

    /// The array, to be read once, holding as little of its data as it can:
    /// - [`ReadOnce::Pieces`] for an array in a large compressed block (of
    ///   [`STREAM_STATS_BYTES`] or more; zlib above [`STREAM_STATS_ZLIB_BYTES`]) that is
    ///   not decoded already, when its elements lie in C order and `pieces` gives a sink
    ///   for them: the caller decodes the block piece by piece into it
    ///   ([`ArrayRef::decode_pieces`]).
    ///   With checksums verified (which needs the block whole), never.
    /// - [`ReadOnce::Whole`] over a compressed block that no other ndarray of the tree
    ///   uses, decoded for this read alone and not cached: reading every array of a file
    ///   this way holds one decoded block at a time per thread, not all of them.
    /// - [`ArrayRef::read_dyn`] (and its cache) for anything else.
    ///
    /// # Errors
    /// As [`ArrayRef::read_dyn`].
    pub fn read_once<T>(&self, pieces: impl FnOnce(&ArrayMeta, &Layout) -> Option<T>) -> Result<ReadOnce<'f, T>> {
        self.file.read_once_of(self.node, pieces).map_err(|e| self.located(e))
    }

    /// Decodes the array's block piece by piece (see [`BlockHeader::decode_pieces`](crate::block::BlockHeader::decode_pieces))
    /// into `sink`, caching nothing: the whole block, for a [`ReadOnce::Pieces`] of
    /// [`ArrayRef::read_once`] (whose `layout` tells where the elements lie in it).
    ///
    /// # Errors
    /// An array not in a block of this file, a damaged block (with its number), and
    /// those of `sink`.
    pub fn decode_pieces<E: From<Error>>(
        &self,
        sink: impl FnMut(&[u8]) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let Some(n) = self.block()? else {
            let why = ErrorKind::NotFound("the array's data is not in a block of this file".into());
            return Err(E::from(self.located(Error::new(why, Location::default()))));
        };
        let decoded = self.file.decode_pieces_unchecked(n, sink);
        self.file.check_unchanged()?;
        decoded
    }
}

impl AsdfFile {
    /// [`ArrayRef::stats`] of the ndarray `node`, the file not checked for changes.
    fn stats_of(&self, node: NodeRef<'_>) -> Result<ArrayStats> {
        let stream = |meta: &ArrayMeta, layout: &Layout| match meta.datatype {
            Datatype::Scalar(scalar) => StatsStream::new(scalar, meta.byteorder, layout.offset, layout.len()),
            _ => None,
        };
        // A masked array is read whole, its mask applied.
        let masked = node.key("mask").is_some_and(|m| !m.is_null());
        let stream = |meta: &ArrayMeta, layout: &Layout| if masked { None } else { stream(meta, layout) };
        match self.read_once_of(node, stream)? {
            ReadOnce::Whole(a) => {
                let mask = self.mask_unchecked(node, &a);
                // (A change of the file is found by the caller, `ArrayRef::stats`.)
                let (stats, masked) = match mask? {
                    Some(mask) => (stats::stats_unmasked(&a, &mask), mask.iter().map(|&m| u64::from(m)).sum()),
                    None => (stats::stats(&a), 0),
                };
                Ok(ArrayStats { datatype: a.datatype, shape: a.shape, storage: a.storage, stats, masked })
            }
            ReadOnce::Pieces { meta, layout, block, sink: mut acc } => {
                let decoded = self.decode_pieces_unchecked(block, |piece| {
                    acc.feed(piece);
                    Ok::<(), Error>(())
                });
                decoded?;
                Ok(ArrayStats {
                    datatype: meta.datatype,
                    shape: layout.shape,
                    storage: Storage::Block(block),
                    stats: Some(acc.finish()),
                    masked: 0,
                })
            }
        }
    }

    /// [`ArrayRef::read_once`] of the ndarray `node`.
    fn read_once_of<T>(
        &self,
        node: NodeRef<'_>,
        pieces: impl FnOnce(&ArrayMeta, &Layout) -> Option<T>,
    ) -> Result<ReadOnce<'_, T>> {
        let arr = |e: ArrayError| self.array_error(node, e);
        let meta = self.array_meta(node)?;
        let Source::Block(i) = meta.source else { return self.ndarray_of(node, &meta).map(ReadOnce::Whole) };
        let n = self.resolve_block(i).map_err(arr)?;
        let h = self.block_header(n)?;
        let streams = self.in_pieces(n) && !self.options.verify_checksums && self.decoded[n].get().is_none();
        if let Some(size) = streams.then_some(usize::try_from(h.data_size).ok()).flatten() {
            let layout = meta.layout(size, &self.options.limits).map_err(arr)?;
            if let Some(sink) = layout.is_c_contiguous(meta.datatype.size()).then(|| pieces(&meta, &layout)).flatten() {
                return Ok(ReadOnce::Pieces { meta, layout, block: n, sink });
            }
        }
        if self.used_once_undecoded(n) {
            let data = self.decode_block(n)?;
            return NdArray::new(&meta, Cow::Owned(data), Storage::Block(n), None, &self.options.limits)
                .map(ReadOnce::Whole)
                .map_err(arr);
        }
        self.ndarray_of(node, &meta).map(ReadOnce::Whole)
    }

    pub(super) fn decode_pieces_unchecked<E: From<Error>>(
        &self,
        n: usize,
        mut sink: impl FnMut(&[u8]) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        // The block's errors are told apart from the sink's, which keep their own place.
        enum Failure<E> {
            Block(Error),
            Sink(E),
        }
        impl<E> From<Error> for Failure<E> {
            fn from(e: Error) -> Self {
                Failure::Block(e)
            }
        }
        // An uncompressed block read by ranges: its data in parts, as they are read.
        if let Some(source) = &self.source
            && let Some(h) = self.blocks.get(n).filter(|h| h.compression == Compression::None)
            && self.fetched.get(n).is_some_and(|f| f.get().is_none())
        {
            let at = h.data_offset();
            let mut failed = None;
            let read = source.read_in_order(at..at.saturating_add(h.used_size), &mut |part| {
                sink(&part).map_err(|e| {
                    failed = Some(e);
                    std::io::Error::other("stopped by the sink")
                })
            });
            return match (read, failed) {
                (_, Some(e)) => Err(e),
                (Err(e), None) => Err(E::from(Error::from(e).with_block(n))),
                (Ok(()), None) => Ok(()),
            };
        }
        let (h, file, shift) = self.block_source_once(n)?;
        h.decode_pieces(&file, &self.options.limits, |piece| sink(piece).map_err(Failure::Sink)).map_err(|f| match f {
            Failure::Block(e) => E::from(super::relocated(e, shift).with_block(n)),
            Failure::Sink(e) => e,
        })
    }

    /// Whether a block is one to decode piece by piece when only reduced or verified: a
    /// compressed block of [`STREAM_STATS_BYTES`] or more (zlib: over
    /// [`STREAM_STATS_ZLIB_BYTES`], or as the options say).
    pub(super) fn in_pieces(&self, n: usize) -> bool {
        let Some(h) = self.blocks.get(n) else { return false };
        let least = match h.compression {
            Compression::Zlib => self.options.stream_zlib_stats_from.unwrap_or(STREAM_STATS_ZLIB_BYTES + 1),
            _ => STREAM_STATS_BYTES,
        };
        // An uncompressed block of a file read by ranges is read in parts (not read and
        // kept whole) unless it was read already.
        let ranged = self.source.is_some() && self.fetched.get(n).is_some_and(|f| f.get().is_none());
        h.data_size >= least && (h.compression != Compression::None || ranged)
    }

    /// Whether block `n` is compressed, not decoded yet, and holds the data of one
    /// ndarray reached once in the tree.
    fn used_once_undecoded(&self, n: usize) -> bool {
        if self.blocks.get(n).is_none_or(|h| h.compression == Compression::None) || self.decoded[n].get().is_some() {
            return false;
        }
        let users = self.block_users.get_or_init(|| {
            let mut users = vec![0u32; self.blocks.len()];
            for array in self.arrays() {
                let node = array.node();
                let Ok(meta) = ArrayMeta::parse(node) else { continue };
                if let Source::Block(i) = meta.source
                    && let Some(u) = self.resolve_block(i).ok().and_then(|m| users.get_mut(m))
                {
                    *u = u.saturating_add(1);
                }
            }
            users
        });
        users.get(n) == Some(&1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::OpenOptions;
    use crate::write::{Document, WriteOptions};

    /// Statistics of an array whose compressed block no other array uses leave that block
    /// out of the cache; a block views share is decoded once, into the cache. The numbers
    /// are those of the whole arrays either way.
    #[test]
    fn statistics_cache_only_shared_blocks() {
        let views = AsdfFile::open(concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/pyasdf/arrays/shared_views.asdf"))
            .unwrap();
        let mut doc = Document::from_file(&views).unwrap();
        let lone = ::ndarray::Array1::<f64>::linspace(-1.0, 2.0, 1000);
        doc.set_array("lone", lone.view(), Compression::Zlib).unwrap();
        let mut out = std::io::Cursor::new(Vec::new());
        let options = WriteOptions { compression: Some(Compression::Zlib), ..WriteOptions::default() };
        doc.write(&mut out, None, &options).unwrap();
        let f = OpenOptions::new().from_bytes(out.into_inner()).unwrap();
        // Read off the tree: asking for the array would decode its block.
        let block = |name: &str| match ArrayMeta::parse(f.get(name).unwrap()).unwrap().source {
            Source::Block(i) => f.resolve_block(i).unwrap(),
            other => panic!("{name} is not in a block: {other:?}"),
        };
        let check = |name: &str| {
            let got = f.array(name).unwrap().stats().unwrap().stats.unwrap();
            let want = stats::stats(&f.array(name).unwrap().read_dyn().unwrap()).unwrap();
            assert_eq!(
                [got.min, got.max, got.sum].map(f64::to_bits),
                [want.min, want.max, want.sum].map(f64::to_bits),
                "{name}"
            );
        };
        let fresh = || f.decoded.iter().all(|d| d.get().is_none());
        let (lone_block, shared) = (block("lone"), block("slice"));
        assert_eq!(f.blocks()[lone_block].compression, Compression::Zlib);
        assert_eq!(f.blocks()[shared].compression, Compression::Zlib);
        assert_eq!(block("reversed"), shared, "the views share their base's block");
        assert!(f.array("lone").unwrap().stats().is_ok());
        assert!(fresh(), "the lone array's block was cached");
        assert!(f.array("slice").unwrap().stats().is_ok());
        assert!(f.decoded[shared].get().is_some(), "the shared block was not cached");
        assert!(f.decoded[lone_block].get().is_none());
        for name in ["lone", "base", "slice", "reversed", "stepped", "column", "transposed"] {
            check(name);
        }
    }
}
