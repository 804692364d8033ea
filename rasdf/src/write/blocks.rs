//! Writing the file: the header and the tree, then the blocks, compressed (in parallel,
//! at the options' level) and hashed, padded as asked, and the block index; through a
//! writer that seeks ([`WriteSeek`]): a buffered one, or past the page cache for large
//! files ([`crate::direct::DirectWriter`], which hashes as it copies).

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::array::BaseData;
use super::document::{Base, Document};
use super::plan::{Naming, old_block_files, software};
use super::stage::{self, StageOptions, Staged, commit_all};
use super::{ArrayStorage, WriteOptions, node, usage};
use crate::block::{self, BlockError, BlockHeader, Compression};
use crate::error::{Error, Location, Result};
use crate::index;
use crate::tree::emit::{Emitter, Verbatim};
use crate::tree::{NodeId, Overlay, Value};

/// Documents with at least this much array data are written past the page cache
/// where the filesystem allows it, unless the options say otherwise
/// ([`super::DirectIo::Auto`]; see `crate::direct`).
const DIRECT_MIN: usize = 64 << 20;

/// Blocks at least this large have their MD5 computed while their data is written.
const OVERLAP_MD5: usize = 8 << 20;

/// Buffers per worker in [`write_lz4_pipelined`] and [`write_zlib_pipelined`]: one
/// being filled, one waiting its turn.
const LZ4_SLOTS_PER_WORKER: usize = 2;

/// zlib and bzp2 blocks larger than this are compressed while they are written, a
/// piece at a time ([`write_zlib_pipelined`], [`write_bzp2_streamed`]); smaller ones
/// whole, several at once.
const WHOLE_MAX: usize = 4 << 20;

/// Batches of [`block::pbzip::Stream::batch_len`] that [`write_bzp2_streamed`]
/// compresses at a time.
const BZP2_BATCHES: usize = 4;

/// The most bytes of blocks compressed whole that are held at once, before they are
/// written (more than one block's worth only when the blocks are small); smaller in
/// the unit tests, whose documents are.
const GROUP: usize = if cfg!(test) { 1 << 20 } else { 32 << 20 };

impl Document<'_> {
    /// [`Document::write`], with the block files of external arrays left staged in
    /// `externals`, for the caller to put in place.
    pub(super) fn write_staging<W: WriteSeek>(
        &self,
        out: &mut W,
        main_path: Option<&Path>,
        options: &WriteOptions,
        externals: &mut Vec<Staged>,
        old_set: Option<&mut Vec<PathBuf>>,
    ) -> Result<()> {
        options.check()?;
        let mut plan = self.plan(options)?;
        // When the main file is replaced too (`old_set` given), the block files of the
        // exploded file there keep their names until the new main file is in place: the
        // new set takes the other naming.
        if let (Some(main), Some(old_set)) = (main_path, old_set)
            && !plan.external.is_empty()
        {
            *old_set = old_block_files(main);
            plan.naming = Naming::next(main, old_set);
        }
        self.check_external_names(&plan, main_path)?;
        let (tree, inline) = self.output_tree(&plan, main_path)?;
        // The header and the tree, written as they are made (a megabyte at a time):
        // inline arrays go element by element from their bytes into the output.
        let header = format!("#ASDF 1.0.0\n#ASDF_STANDARD {}\n", self.standard);
        let verbatim: HashMap<NodeId, &dyn Verbatim> = inline.iter().map(|(id, t)| (*id, t as &dyn Verbatim)).collect();
        let text_len = Emitter::new(&tree)
            .for_standard(&self.standard)
            .with_verbatim(verbatim)
            .write_document(&header, &mut *out)?;
        let text_len = usize::try_from(text_len).unwrap_or(usize::MAX);
        drop(inline);
        drop(tree);
        let pad = |len: usize| if options.pad_blocks { padding(len) } else { 0 };
        let tree_pad = if plan.internal.is_empty() { 0 } else { pad(text_len) };
        out.write_all(&vec![0u8; tree_pad])?;
        // Blocks are written in order. Small ones are compressed and hashed in parallel a
        // group at a time (at most GROUP bytes of them held compressed); a large zlib, lz4
        // or bzp2 block is compressed in pieces while it is written, and chunked data as it
        // arrives, their headers patched afterwards: memory stays at a few pieces per
        // thread, however large the blocks.
        let mut offset = (text_len + tree_pad) as u64;
        let mut offsets = Vec::with_capacity(plan.internal.len());
        let block_len = |base: usize| self.block_bytes(base, &plan).len() as u64;
        if let Some(p) = &options.progress {
            p.start(plan.internal.iter().chain(&plan.external).map(|&(base, _)| block_len(base)).sum());
        }
        let mut rest = &plan.internal[..];
        while !rest.is_empty() {
            let mut held = 0usize;
            let group = rest
                .iter()
                .position(|&(base, comp)| {
                    held = held.saturating_add(self.held_while_prepared(base, comp, &plan));
                    held > GROUP
                })
                .unwrap_or(rest.len())
                .max(1);
            let (now, later) = rest.split_at(group);
            rest = later;
            let blocks: Vec<Prepared<'_>> = now
                .par_iter()
                .map(|&(base, comp)| {
                    if self.bases.get(base).is_some_and(|b| b.chunks.is_some()) {
                        Ok(Prepared::Chunked)
                    } else {
                        prepare(self.block_bytes(base, &plan), comp, plan.item_size(base), options)
                    }
                })
                .collect::<Result<_>>()?;
            for (prepared, &(base, comp)) in blocks.into_iter().zip(now) {
                offsets.push(offset);
                let allocated = match prepared {
                    Prepared::Chunked => self.write_chunked(out, base, comp, plan.item_size(base), options)?,
                    other => write_prepared(out, other, self.block_bytes(base, &plan), options)?,
                };
                offset += block::HEADER_LEN as u64 + allocated;
                if let Some(p) = &options.progress {
                    p.advance(block_len(base));
                }
            }
        }
        if self.stream.is_some() {
            // Reference notes 1.11: flags 1, no compression, sizes and checksum zero.
            let h = BlockHeader {
                offset: 0,
                header_size: block::MIN_HEADER_SIZE,
                flags: block::FLAG_STREAMED,
                compression: Compression::None,
                allocated_size: 0,
                used_size: 0,
                data_size: 0,
                checksum: [0; 16],
            };
            out.write_all(&h.to_bytes())?;
        } else if options.include_index && !offsets.is_empty() {
            out.write_all(&index::write(&offsets))?;
        }
        if !plan.external.is_empty() {
            let main =
                main_path.ok_or_else(|| usage("external arrays need the main file's path to name their files"))?;
            for (n, &(base, comp)) in plan.external.iter().enumerate() {
                let path = plan.naming.path(main, n);
                let mut sub = Document::new();
                sub.standard.clone_from(&self.standard);
                sub.bases.push(Base {
                    data: BaseData::Bytes(Cow::Borrowed(self.block_bytes(base, &plan))),
                    compression: comp,
                    chunks: None,
                });
                // As the reference writes them: no padding.
                let sub_opts = WriteOptions {
                    storage: Some(ArrayStorage::Internal),
                    pad_blocks: false,
                    progress: None,
                    ..options.clone()
                };
                externals.push(sub.stage_raw_block_file(&path, plan.item_size(base), &sub_opts)?);
                if let Some(p) = &options.progress {
                    p.advance(block_len(base));
                }
            }
        }
        Ok(())
    }

    /// The bytes that preparing the block of `base` holds until it is written: the
    /// compressed block when it is compressed whole (about its input, at most), nothing
    /// for blocks written as they are compressed or stored as they are.
    fn held_while_prepared(&self, base: usize, comp: Compression, plan: &super::plan::Plan) -> usize {
        if self.bases.get(base).is_some_and(|b| b.chunks.is_some()) {
            return 0;
        }
        let len = self.block_bytes(base, plan).len();
        match comp {
            Compression::None => 0,
            Compression::Zlib | Compression::Bzp2 | Compression::Lz4 if len > WHOLE_MAX => 0,
            _ => len,
        }
    }

    /// Writes an external block file: a minimal tree and one block (of items of
    /// `item_size` bytes), as the main file's blocks are written (a large one past the
    /// page cache, its MD5 beside the write, lz4 record by record).
    fn stage_raw_block_file(&self, path: &Path, item_size: usize, options: &WriteOptions) -> Result<Staged> {
        let mut tree = Overlay::new(&self.tree);
        let root = tree.root().ok_or_else(|| usage("no root"))?;
        let lib = software(&mut tree);
        let k = tree.push(node(Value::Str("asdf_library".into())));
        tree.set_value(root, Value::Map(vec![(k, lib)]));
        let mut text = format!("#ASDF 1.0.0\n#ASDF_STANDARD {}\n", self.standard).into_bytes();
        text.extend_from_slice(Emitter::new(&tree).for_standard(&self.standard).document().as_bytes());
        let base = &self.bases[0];
        self.stage_path_with(path, options, |out| {
            out.write_all(&text)?;
            let prepared = prepare(&base.data, base.compression, item_size, options)?;
            write_prepared(out, prepared, &base.data, options)?;
            if options.include_index {
                out.write_all(&index::write(&[text.len() as u64]))?;
            }
            Ok(())
        })
    }

    /// Runs `body` on a temporary file beside `path`, to be renamed into place by the
    /// caller; past the page cache as [`WriteOptions::direct_io`] says (by default with
    /// 64 MiB of array data or more).
    pub(super) fn stage_path_with(
        &self,
        path: &Path,
        options: &WriteOptions,
        body: impl FnOnce(&mut &mut dyn WriteSeek) -> Result<()>,
    ) -> Result<Staged> {
        let mut failure = None;
        let direct = match options.direct_io {
            super::DirectIo::Auto => self.bases.iter().map(|b| b.data.len()).sum::<usize>() >= DIRECT_MIN,
            super::DirectIo::Always => true,
            super::DirectIo::Never => false,
        };
        let result = stage::stage_with(path, StageOptions { sync: options.sync }, |f| {
            let written = match direct.then(|| crate::direct::DirectWriter::new(f)).flatten() {
                Some(direct) => {
                    let mut w = direct;
                    body(&mut (&mut w as &mut dyn WriteSeek)).map(|()| w.finish())
                }
                None => {
                    let mut w = std::io::BufWriter::with_capacity(1 << 20, &*f);
                    body(&mut (&mut w as &mut dyn WriteSeek)).map(|()| w.flush())
                }
            };
            match written {
                Ok(flushed) => flushed,
                Err(e) => {
                    failure = Some(e);
                    Err(std::io::Error::other("write failed"))
                }
            }
        });
        match (result, failure) {
            (_, Some(e)) => Err(e.in_file(path)),
            (Err(e), None) => Err(Error::from(e).in_file(path)),
            (Ok(staged), None) => Ok(staged),
        }
    }
}

/// Puts staged files in place, in order. A rename fails, in practice, only onto a
/// folder: that is looked for first, so that none is put in place then.
pub(super) fn commit(staged: Vec<Staged>) -> Result<()> {
    if let Some(s) = staged.iter().find(|s| s.target().symlink_metadata().is_ok_and(|m| m.is_dir())) {
        let e = std::io::Error::new(std::io::ErrorKind::IsADirectory, "a folder stands where the file goes");
        return Err(Error::from(e).in_file(s.target()));
    }
    let path = staged.last().map(|s| s.target().to_path_buf()).unwrap_or_default();
    commit_all(staged).map_err(|e| Error::from(e).in_file(path))
}

/// Reference notes 5.2: the padding `pad_blocks=True` adds to `len` bytes (4096-byte
/// filesystem blocks, factor 1.1).
fn padding(len: usize) -> usize {
    let bs = 4096usize;
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let blocks = ((len as f64 * 1.1) / bs as f64).ceil() as usize + 1;
    (blocks * bs).saturating_sub(len)
}

/// Compresses `data` (items of `item_size` bytes, which blsc shuffles by) with `comp` at
/// `level` (zlib, bzp2, zstd and blsc; ignored by lz4). At the reference's own levels,
/// exactly [`block::codec::encode`]'s bytes.
pub(super) fn encode(
    comp: Compression,
    data: &[u8],
    level: u32,
    item_size: usize,
) -> std::result::Result<Vec<u8>, BlockError> {
    let corrupt = |message: String| BlockError::Corrupt { codec: comp, message };
    match comp {
        Compression::Zlib if level != super::ZLIB_LEVEL => block::pdeflate::compress(data, level).map_err(corrupt),
        Compression::Bzp2 if level != super::BZP2_LEVEL => {
            if let Some(stream) = block::pbzip::compress(data, level) {
                return Ok(stream);
            }
            let mut e =
                bzip2::write::BzEncoder::new(Vec::with_capacity(data.len() / 2), bzip2::Compression::new(level));
            e.write_all(data).and_then(|()| e.finish()).map_err(|e| corrupt(e.to_string()))
        }
        _ => block::codec::encode_items(comp, data, item_size, Some(level).filter(|&l| l > 0)),
    }
}

/// A block before it is written.
pub(super) enum Prepared<'a> {
    /// Compressed and (small enough) hashed already: its header and stored bytes.
    Encoded(BlockHeader, Cow<'a, [u8]>),
    /// A chunked base: compressed and hashed as its chunks arrive.
    Chunked,
    /// lz4 of two records or more: compressed while it is written (see
    /// [`write_lz4_pipelined`]).
    Lz4Pipelined,
    /// zlib larger than [`WHOLE_MAX`] at this level: compressed while it is written
    /// (see [`write_zlib_pipelined`]).
    ZlibPipelined(u32),
    /// bzp2 larger than [`WHOLE_MAX`] at this level: compressed while it is written
    /// (see [`write_bzp2_streamed`]).
    Bzp2Streamed(u32),
}

/// How the block of `data` is to be written with `comp`: large lz4, zlib and bzp2
/// blocks compressed while they are written, anything else compressed (and, when small,
/// hashed) now.
fn prepare<'a>(data: &'a [u8], comp: Compression, item_size: usize, options: &WriteOptions) -> Result<Prepared<'a>> {
    match comp {
        Compression::Lz4 if data.len() > block::codec::LZ4_CHUNK => Ok(Prepared::Lz4Pipelined),
        Compression::Zlib if data.len() > WHOLE_MAX => Ok(Prepared::ZlibPipelined(options.level(comp))),
        Compression::Bzp2 if data.len() > WHOLE_MAX => Ok(Prepared::Bzp2Streamed(options.level(comp))),
        _ => encode_block(data, comp, item_size, options)
            .map(|(h, stored)| Prepared::Encoded(h, stored))
            .map_err(|e| Error::new(e, Location::default())),
    }
}

fn encode_block<'a>(
    data: &'a [u8],
    comp: Compression,
    item_size: usize,
    options: &WriteOptions,
) -> std::result::Result<(BlockHeader, Cow<'a, [u8]>), BlockError> {
    let stored: Cow<'_, [u8]> = if comp == Compression::None {
        Cow::Borrowed(data)
    } else {
        Cow::Owned(encode(comp, data, options.level(comp), item_size)?)
    };
    // Large blocks: the checksum is computed beside the write (see `write_prepared`).
    let checksums = options.checksums && stored.len() < OVERLAP_MD5;
    let h = BlockHeader {
        offset: 0,
        header_size: block::MIN_HEADER_SIZE,
        flags: 0,
        compression: comp,
        allocated_size: stored.len() as u64,
        used_size: stored.len() as u64,
        data_size: data.len() as u64,
        checksum: if checksums { block::md5(&stored) } else { [0; 16] },
    };
    Ok((h, stored))
}

/// Writes a block [`prepare`]d from `data` at the current position; returns its
/// allocated size. A large block's MD5 is computed on the rayon pool while it is
/// written, then patched into its header.
fn write_prepared<W: WriteSeek>(
    out: &mut W,
    prepared: Prepared<'_>,
    data: &[u8],
    options: &WriteOptions,
) -> Result<u64> {
    let (mut h, stored) = match prepared {
        Prepared::Encoded(h, stored) => (h, stored),
        Prepared::Lz4Pipelined => return write_lz4_pipelined(out, data, options),
        Prepared::ZlibPipelined(level) => return write_zlib_pipelined(out, data, level, options),
        Prepared::Bzp2Streamed(level) => return write_bzp2_streamed(out, data, level, options),
        Prepared::Chunked => return Err(usage("a chunked block is written by its document")),
    };
    let extra = if options.pad_blocks { padding(stored.len()) } else { 0 };
    h.allocated_size = h.used_size + extra as u64;
    if options.checksums && stored.len() >= OVERLAP_MD5 {
        let start = out.stream_position()?;
        // Not hashed as it is copied (`write_hashed`): the bytes are often a mapped
        // file's, and the first touch of each page would then fall on the hash, the
        // write's critical path (1 GiB: 1.55-1.75 s against 1.38-1.71 s this way, where
        // the copy, running ahead of the hash, takes the page faults).
        // The hash is a job on the rayon pool, the write this thread's; should no worker
        // be free, the hash is made here once the bytes are written.
        let mut digest = [0u8; 16];
        let written = rayon::in_place_scope(|scope| {
            scope.spawn(|_| digest = block::md5(&stored));
            out.write_all(&h.to_bytes())
                .and_then(|()| out.write_all(&stored))
                .and_then(|()| out.write_all(&vec![0u8; extra]))
        });
        written?;
        h.checksum = digest;
        let end = out.stream_position()?;
        out.seek(SeekFrom::Start(start))?;
        out.write_all(&h.to_bytes())?;
        out.seek(SeekFrom::Start(end))?;
    } else {
        out.write_all(&h.to_bytes())?;
        out.write_all(&stored)?;
        out.write_all(&vec![0u8; extra])?;
    }
    Ok(h.allocated_size)
}

/// Writes `data` as an lz4 block at the current position; returns its allocated size.
/// The records are compressed two at a time on worker threads (see [`crate::pipeline`]
/// and `lz4_records_into`) while this thread hashes and writes the finished ones in
/// order, in one pass where the writer copies for the disk (`write_hashed`); the buffers
/// go round, so memory stays at a few records however large the block, and no copy of
/// the whole block is made.
fn write_lz4_pipelined<W: WriteSeek>(out: &mut W, data: &[u8], options: &WriteOptions) -> Result<u64> {
    let start = out.stream_position()?;
    out.write_all(&[0u8; block::HEADER_LEN])?;
    // A piece is two records, compressed together (see `lz4_records_into`).
    let piece = 2 * block::codec::LZ4_CHUNK;
    let workers = rayon::current_num_threads();
    let mut md5 = block::Md5::new();
    let mut used = 0u64;
    crate::pipeline::in_order_parts(
        data.len().div_ceil(piece),
        workers,
        LZ4_SLOTS_PER_WORKER * workers,
        |n, buf| {
            let bytes = &data[n * piece..data.len().min((n + 1) * piece)];
            block::codec::lz4_records_into(bytes, buf).map_err(|e| Error::new(e, Location::default()))
        },
        |buf, records| {
            for record in records.map(|r| &buf[r]) {
                if options.checksums {
                    out.write_hashed(record, &mut md5)?;
                } else {
                    out.write_all(record)?;
                }
                used += record.len() as u64;
            }
            Ok(())
        },
    )?;
    finish_block(out, start, Compression::Lz4, used, data.len() as u64, md5.finalize(), options)
}

/// Writes `data` as a zlib block at `level` at the current position; returns its
/// allocated size. The stream is [`block::pdeflate::compress`]'s, byte for byte: its
/// 1 MiB pieces are deflated on worker threads (see [`crate::pipeline`]) while this
/// thread hashes and writes the finished ones in order, and combines their Adler-32s
/// for the stream's end. Memory stays at a few pieces per thread however large the
/// block, and no copy of the whole compressed block is made.
fn write_zlib_pipelined<W: WriteSeek>(out: &mut W, data: &[u8], level: u32, options: &WriteOptions) -> Result<u64> {
    use block::pdeflate;
    let start = out.stream_position()?;
    out.write_all(&[0u8; block::HEADER_LEN])?;
    let workers = rayon::current_num_threads();
    let mut md5 = block::Md5::new();
    let mut used = 0u64;
    let mut adler = 1u32;
    let mut put = |out: &mut W, bytes: &[u8]| -> Result<()> {
        if options.checksums {
            out.write_hashed(bytes, &mut md5)?;
        } else {
            out.write_all(bytes)?;
        }
        used += bytes.len() as u64;
        Ok(())
    };
    put(out, &pdeflate::HEADER)?;
    let corrupt = |message| Error::new(BlockError::Corrupt { codec: Compression::Zlib, message }, Location::default());
    crate::pipeline::in_order_parts(
        pdeflate::piece_count(data.len()),
        workers,
        LZ4_SLOTS_PER_WORKER * workers,
        |n, buf| pdeflate::deflate_piece_of(data, n, level, buf).map_err(corrupt),
        |buf, (len, piece_adler)| {
            adler = pdeflate::combine_adler(adler, piece_adler, len);
            put(out, buf)
        },
    )?;
    put(out, &adler.to_be_bytes())?;
    finish_block(out, start, Compression::Zlib, used, data.len() as u64, md5.finalize(), options)
}

/// Writes `data` as a bzp2 block at `level` at the current position; returns its
/// allocated size. The stream is the one [`encode`] makes, compressed in parallel a
/// batch of a few bzip2 blocks per thread at a time and written as it comes; should the
/// parallel compressor decline (a piece that is not one bzip2 block), the block is
/// written again from its start by the whole-block path, whose stream is the same.
fn write_bzp2_streamed<W: WriteSeek>(out: &mut W, data: &[u8], level: u32, options: &WriteOptions) -> Result<u64> {
    let start = out.stream_position()?;
    out.write_all(&[0u8; block::HEADER_LEN])?;
    let mut md5 = block::Md5::new();
    let mut used = 0u64;
    let streamed = (|| -> Result<std::result::Result<(), String>> {
        let mut stream = match block::pbzip::Stream::new(level) {
            Ok(s) => s,
            Err(e) => return Ok(Err(e)),
        };
        // Eight bzip2 blocks per thread at a time (a few megabytes of input): fewer
        // waits at the end of a batch for its slowest block than with the stream's two.
        let batch = stream.batch_len().saturating_mul(BZP2_BATCHES).max(1);
        let count = data.len().div_ceil(batch).max(1);
        for n in 0..count {
            let bytes = &data[(n * batch).min(data.len())..data.len().min((n + 1) * batch)];
            let stored = match stream.feed(bytes, n + 1 == count) {
                Ok(s) => s,
                Err(e) => return Ok(Err(e)),
            };
            if options.checksums {
                out.write_hashed(&stored, &mut md5)?;
            } else {
                out.write_all(&stored)?;
            }
            used += stored.len() as u64;
        }
        Ok(Ok(()))
    })()?;
    if streamed.is_err() {
        // Over the bytes written so far (the start of the same stream).
        out.seek(SeekFrom::Start(start))?;
        let (h, stored) =
            encode_block(data, Compression::Bzp2, 1, options).map_err(|e| Error::new(e, Location::default()))?;
        return write_prepared(out, Prepared::Encoded(h, stored), data, options);
    }
    finish_block(out, start, Compression::Bzp2, used, data.len() as u64, md5.finalize(), options)
}

/// Ends a block whose data was written after a placeholder header at `start`: pads it
/// (if asked), then writes the real header there; returns the allocated size.
pub(super) fn finish_block<W: Write + Seek>(
    out: &mut W,
    start: u64,
    compression: Compression,
    used: u64,
    data_size: u64,
    digest: [u8; 16],
    options: &WriteOptions,
) -> Result<u64> {
    let extra = if options.pad_blocks { padding(usize::try_from(used).unwrap_or(usize::MAX)) } else { 0 };
    out.write_all(&vec![0u8; extra])?;
    let end = out.stream_position()?;
    let h = BlockHeader {
        offset: start,
        header_size: block::MIN_HEADER_SIZE,
        flags: 0,
        compression,
        allocated_size: used + extra as u64,
        used_size: used,
        data_size,
        checksum: if options.checksums { digest } else { [0; 16] },
    };
    out.seek(SeekFrom::Start(start))?;
    out.write_all(&h.to_bytes())?;
    out.seek(SeekFrom::Start(end))?;
    Ok(h.allocated_size)
}

/// Where a document's bytes go: a writer that seeks, and may hash bytes as it copies
/// them (the direct writer of large files does both in one pass).
pub(super) trait WriteSeek: Write + Seek {
    /// Writes all of `bytes` and feeds them to `md5`.
    fn write_hashed(&mut self, bytes: &[u8], md5: &mut block::Md5) -> std::io::Result<()> {
        md5.update(bytes);
        self.write_all(bytes)
    }
}

impl<T: WriteSeek + ?Sized> WriteSeek for &mut T {
    fn write_hashed(&mut self, bytes: &[u8], md5: &mut block::Md5) -> std::io::Result<()> {
        (**self).write_hashed(bytes, md5)
    }
}

impl WriteSeek for crate::direct::DirectWriter {
    fn write_hashed(&mut self, bytes: &[u8], md5: &mut block::Md5) -> std::io::Result<()> {
        crate::direct::DirectWriter::write_hashed(self, bytes, md5)
    }
}

impl WriteSeek for std::io::BufWriter<&std::fs::File> {}

/// A caller's writer, with no hashing of its own.
pub(super) struct Plain<'w, W: Write + Seek>(pub(super) &'w mut W);

impl<W: Write + Seek> Write for Plain<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.0.write_all(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl<W: Write + Seek> Seek for Plain<'_, W> {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.0.seek(pos)
    }
    fn stream_position(&mut self) -> std::io::Result<u64> {
        self.0.stream_position()
    }
}

impl<W: Write + Seek> WriteSeek for Plain<'_, W> {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compressible data that is not trivially so: a slow ramp with some noise.
    fn sample(n: usize) -> Vec<u8> {
        crate::testutil::noise(n, 11).iter().enumerate().map(|(i, &x)| (i / 512).to_le_bytes()[0] ^ (x & 3)).collect()
    }

    /// The block `prepare` and `write_prepared` write for `data`: its header and stored
    /// bytes, read back from the output (at an offset, as after a tree).
    fn written(data: &[u8], comp: Compression, options: &WriteOptions) -> (BlockHeader, Vec<u8>) {
        let mut cursor = std::io::Cursor::new(b"tree".to_vec());
        cursor.set_position(4);
        let mut out = Plain(&mut cursor);
        let prepared = prepare(data, comp, 1, options).unwrap();
        let allocated = write_prepared(&mut out, prepared, data, options).unwrap();
        let file = cursor.into_inner();
        let h = BlockHeader::parse(&file, 4).unwrap();
        assert_eq!(h.allocated_size, allocated);
        assert_eq!(file.len() as u64, 4 + block::HEADER_LEN as u64 + allocated, "{comp}: nothing past the block");
        let at = 4 + block::HEADER_LEN;
        (h.clone(), file[at..at + usize::try_from(h.used_size).unwrap()].to_vec())
    }

    /// Large blocks compressed while they are written (zlib and bzp2 over `WHOLE_MAX`,
    /// lz4 over a record) are, byte for byte, the streams the whole-block encoders make,
    /// at the reference's levels and others, with their sizes and MD5 in the header.
    #[test]
    fn blocks_written_in_pieces_are_the_whole_blocks_streams() {
        let data = sample(WHOLE_MAX + block::pdeflate::PIECE + 12_345);
        for (comp, level) in [
            (Compression::Zlib, None),
            (Compression::Zlib, Some(1)),
            (Compression::Bzp2, None),
            (Compression::Bzp2, Some(2)),
            (Compression::Lz4, None),
        ] {
            let options = WriteOptions { compression_level: level, ..WriteOptions::default() };
            let (h, stored) = written(&data, comp, &options);
            let whole = encode(comp, &data, options.level(comp), 1).unwrap();
            assert!(stored == whole, "{comp} at {level:?}: {} bytes, whole {}", stored.len(), whole.len());
            assert_eq!((h.data_size, h.compression), (data.len() as u64, comp));
            assert_eq!(h.checksum, block::md5(&whole), "{comp}");
            assert_eq!(block::codec::decode(comp, &stored, data.len() as u64).unwrap(), data, "{comp}");
            // Padded as the whole-block path pads, no checksum when none is asked.
            let options = WriteOptions { pad_blocks: true, checksums: false, ..options };
            let (h, padded) = written(&data, comp, &options);
            assert!(padded == whole, "{comp}");
            assert_eq!(h.checksum, [0; 16]);
            assert_eq!(h.allocated_size, h.used_size + padding(whole.len()) as u64);
        }
        // Just over the bound, and a length of whole pieces.
        for n in [WHOLE_MAX + 1, WHOLE_MAX + block::pdeflate::PIECE] {
            let data = sample(n);
            let (_, stored) = written(&data, Compression::Zlib, &WriteOptions::default());
            assert!(stored == encode(Compression::Zlib, &data, 6, 1).unwrap(), "{n} bytes");
        }
    }

    /// A document of many small compressed blocks and a large one is written as the
    /// whole-block path writes it, in order, whatever the groups the blocks are
    /// compressed in.
    #[test]
    fn groups_of_small_blocks_are_written_in_order() {
        let mut doc = Document::new();
        // Groups of three or four small blocks, and one large block alone.
        let arrays: Vec<Vec<u8>> =
            (0..12u8).map(|i| sample(if i == 5 { WHOLE_MAX + 1 } else { GROUP / 4 + usize::from(i) })).collect();
        for (i, a) in arrays.iter().enumerate() {
            let comp = if i % 3 == 0 { Compression::Lz4 } else { Compression::Zlib };
            doc.set_array(&format!("a{i}"), ndarray::Array1::from_vec(a.clone()), comp).unwrap();
        }
        let mut cursor = std::io::Cursor::new(Vec::new());
        doc.write(&mut cursor, None, &WriteOptions::default()).unwrap();
        let file = crate::OpenOptions::new().from_bytes(cursor.into_inner()).unwrap();
        assert_eq!(file.blocks().len(), arrays.len());
        for (i, a) in arrays.iter().enumerate() {
            assert_eq!(file.array(&format!("a{i}")).unwrap().read::<u8>().unwrap().as_slice().unwrap(), &a[..], "a{i}");
            let comp = if i % 3 == 0 { Compression::Lz4 } else { Compression::Zlib };
            assert_eq!(file.blocks()[i].compression, comp);
        }
        for status in file.verify_blocks() {
            assert_eq!(status.unwrap(), block::ChecksumStatus::MatchesStored);
        }
    }
}
