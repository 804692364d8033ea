//! Arrays larger than memory: a streamed last block of rows appended after the file is
//! written ([`Document::set_stream`], [`Document::write_streamed`], [`StreamWriter`]),
//! and arrays whose data arrives in chunks while the file is written
//! ([`Document::set_array_chunks`]), compressed in parallel batches as it comes.

use std::io::{Seek, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::array::{BaseData, IntoArrayBytes};
use super::blocks::finish_block;
use super::document::{Base, Document, PendingArray};
use super::stage::{StageOptions, Staged};
use super::{ArrayStorage, WriteOptions, usage};
use crate::block::{self, Compression};
use crate::error::{Error, Location, Result};
use crate::ndarray::{ByteOrder, Datatype, ScalarType, c_strides};

/// A chunk iterator, consumed by the first write, and the bytes it must yield.
#[derive(Clone)]
pub(super) struct Chunks {
    source: Arc<Mutex<Option<ChunkIter>>>,
    len: u64,
}

type ChunkIter = Box<dyn Iterator<Item = Vec<u8>> + Send>;

impl std::fmt::Debug for Chunks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Chunks({} bytes)", self.len)
    }
}

/// Passes bytes through, counting them and hashing them.
struct HashCount<'w, W: Write> {
    inner: &'w mut W,
    md5: block::Md5,
    n: u64,
}

impl<W: Write> Write for HashCount<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.md5.update(&buf[..n]);
        self.n += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Rows appended to a streamed block; [`StreamWriter::finish`] puts the file in place.
/// Dropped without `finish`, the file is not written and the target is unchanged.
///
/// A streamed array (reference notes 1.11) is the file's last block, written after the
/// tree with no size: its first dimension is `'*'`, as many rows as the block holds,
/// so rows can be appended without knowing how many there will be, and without holding
/// them in memory.
///
/// ```
/// use rasdf::ndarray::ScalarType;
/// use rasdf::write::{Document, WriteOptions};
///
/// let mut doc = Document::new();
/// doc.set("meta/instrument", "spectrograph")?;
/// // Rows of 4 float64.
/// doc.set_stream("spectra", ScalarType::Float64, &[4])?;
/// let path = std::env::temp_dir().join(format!("rasdf-stream-{}.asdf", std::process::id()));
/// let mut w = doc.write_streamed(&path, &WriteOptions::default())?;
/// for i in 0..10 {
///     let row = ndarray::Array1::from_elem(4, f64::from(i));
///     w.append_array(row.view())?;
/// }
/// assert_eq!(w.rows(), 10);
/// w.finish()?;
///
/// let file = rasdf::AsdfFile::open(&path)?;
/// let spectra = file.array("spectra")?.read::<f64>()?;
/// assert_eq!(spectra.shape(), [10, 4]);
/// assert_eq!(spectra[[9, 3]], 9.0);
/// # drop(spectra);
/// # drop(file);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), rasdf::Error>(())
/// ```
pub struct StreamWriter {
    file: Option<std::io::BufWriter<std::fs::File>>,
    staged: Option<Staged>,
    datatype: ScalarType,
    row_bytes: usize,
    rows: u64,
}

impl StreamWriter {
    /// Appends whole rows (a multiple of the row size, in the machine's byte order).
    ///
    /// # Errors
    /// A partial row; I/O errors.
    pub fn append(&mut self, bytes: &[u8]) -> Result<()> {
        if self.row_bytes == 0 || !bytes.len().is_multiple_of(self.row_bytes) {
            return Err(usage(format!("{} bytes is not a whole number of {}-byte rows", bytes.len(), self.row_bytes)));
        }
        let f = self.file.as_mut().ok_or_else(|| usage("the stream is finished"))?;
        f.write_all(bytes)?;
        self.rows += (bytes.len() / self.row_bytes) as u64;
        Ok(())
    }

    /// Appends the rows of a typed array, in C order: its elements must make whole
    /// rows (a 2-d array of rows, or a 1-d array of one row, say). Any array
    /// [`Document::set_array`] takes: an owned array, a view, `&array`.
    ///
    /// # Errors
    /// An element type other than the stream's; as [`StreamWriter::append`].
    pub fn append_array(&mut self, rows: impl IntoArrayBytes) -> Result<()> {
        let parts = rows.into_parts();
        if parts.scalar != self.datatype {
            return Err(usage(format!(
                "rows of {} appended to a stream of {}",
                parts.scalar.name(),
                self.datatype.name()
            )));
        }
        self.append(&parts.data)
    }

    /// Rows appended so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Flushes the rows and puts the file in place (synced first when
    /// [`WriteOptions::sync`] was set).
    ///
    /// # Errors
    /// I/O errors.
    pub fn finish(mut self) -> Result<()> {
        let f = self.file.take().ok_or_else(|| usage("the stream is finished"))?;
        f.into_inner().map_err(|e| Error::from(e.into_error()))?;
        let staged = self.staged.take().ok_or_else(|| usage("the stream is finished"))?;
        let path = staged.target().to_path_buf();
        staged.commit().map_err(|e| Error::from(e).in_file(path))
    }
}

/// Feeds the bytes of `chunks` to `encode` in batches of `batch` bytes, the last one
/// (shorter, and empty only when there are no bytes at all) with `true`; returns how many
/// bytes there were.
fn batched(
    chunks: impl Iterator<Item = Vec<u8>>,
    batch: usize,
    mut encode: impl FnMut(&[u8], bool) -> Result<()>,
) -> Result<u64> {
    let mut pending: Vec<u8> = Vec::with_capacity(batch);
    let mut total = 0u64;
    for c in chunks {
        total += c.len() as u64;
        let mut rest = &c[..];
        while !rest.is_empty() {
            // A full batch goes only once more bytes arrive: the last one is never empty.
            if pending.len() == batch {
                encode(&pending, false)?;
                pending.clear();
            }
            let take = (batch - pending.len()).min(rest.len());
            pending.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
        }
    }
    encode(&pending, true)?;
    Ok(total)
}

impl Document<'_> {
    /// Sets an array at `path` whose data (in the machine's byte order, C order) comes
    /// from `chunks` while the file is written, so it never has to fit in memory.
    /// It is stored in a block of the main file.
    ///
    /// # Errors
    /// A path step that is not a mapping.
    pub fn set_array_chunks(
        &mut self,
        path: &str,
        datatype: ScalarType,
        shape: &[usize],
        compression: Compression,
        chunks: impl Iterator<Item = Vec<u8>> + Send + 'static,
    ) -> Result<()> {
        let id = self.chunked_array_node(Datatype::Scalar(datatype), ByteOrder::NATIVE, shape, compression, chunks)?;
        self.set_node(path, id)
    }

    /// An ndarray node of any datatype and byte order whose bytes (C order) come from
    /// `chunks` while the file is written (see [`Document::set_array_chunks`]), not yet
    /// in the tree: the caller places it. Each chunk is compressed and hashed from the
    /// one copy of it `chunks` hands over, so data that another thread changes while the
    /// file is written is still written as a block that decodes and matches its checksum.
    ///
    /// # Errors
    /// A shape too large to address.
    pub fn chunked_array_node(
        &mut self,
        datatype: Datatype,
        byteorder: ByteOrder,
        shape: &[usize],
        compression: Compression,
        chunks: impl Iterator<Item = Vec<u8>> + Send + 'static,
    ) -> Result<crate::tree::NodeId> {
        let len = shape.iter().try_fold(datatype.size() as u64, |a, &d| a.checked_mul(d as u64));
        let len = len.ok_or_else(|| usage("the shape is too large"))?;
        self.bases.push(Base {
            data: BaseData::Bytes(std::borrow::Cow::Borrowed(&[])),
            compression,
            chunks: Some(Chunks { source: Arc::new(Mutex::new(Some(Box::new(chunks)))), len }),
        });
        Ok(self.push_array_node(PendingArray {
            base: self.bases.len() - 1,
            strides: c_strides(shape, datatype.size()),
            datatype,
            byteorder,
            shape: shape.to_vec(),
            offset: 0,
            storage: ArrayStorage::Internal,
            inline_mask: None,
            block_mask: None,
        }))
    }

    /// Writes the block of a chunked base (items of `item_size` bytes); returns its
    /// allocated size. zstd is one frame written as the chunks come; blsc, one c-blosc1
    /// buffer, needs the whole array (at most 2 GiB) in memory first.
    pub(super) fn write_chunked<W: Write + Seek>(
        &self,
        out: &mut W,
        base: usize,
        comp: Compression,
        item_size: usize,
        options: &WriteOptions,
    ) -> Result<u64> {
        let chunks = self.bases[base].chunks.as_ref().ok_or_else(|| usage("not a chunked array"))?;
        let iter = chunks.source.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        let iter = iter.ok_or_else(|| usage("a chunked array can be written once: its chunks are used up"))?;
        let start = out.stream_position()?;
        out.write_all(&[0u8; block::HEADER_LEN])?;
        let mut hw = HashCount { inner: out, md5: block::Md5::new(), n: 0 };
        let mut total = 0u64;
        let io = |e: std::io::Error| Error::from(e);
        let corrupt = |message| Error::new(block::BlockError::Corrupt { codec: comp, message }, Location::default());
        match comp {
            Compression::None => {
                for c in iter {
                    total += c.len() as u64;
                    hw.write_all(&c)?;
                }
            }
            Compression::Zlib => {
                // Batches of whole pieces, compressed in parallel into one stream: the
                // bytes a whole-array write makes.
                let mut stream = block::pdeflate::Stream::new(options.level(comp));
                let batch = block::pdeflate::PIECE * 2 * rayon::current_num_threads();
                total = batched(iter, batch, |b, last| {
                    let bytes = stream.feed(b, last).map_err(corrupt)?;
                    hw.write_all(&bytes).map_err(io)
                })?;
            }
            Compression::Bzp2 => {
                // Batches of a few blocks per worker, compressed in parallel into one
                // stream: the bytes a whole-array write makes.
                let mut stream = block::pbzip::Stream::new(options.level(comp)).map_err(corrupt)?;
                total = batched(iter, stream.batch_len(), |b, last| {
                    let bytes = stream.feed(b, last).map_err(corrupt)?;
                    hw.write_all(&bytes).map_err(io)
                })?;
            }
            Compression::Lz4 => {
                // Batches of whole records, two per worker (compressed together), the
                // pairs in parallel.
                let batch = 2 * block::codec::LZ4_CHUNK * rayon::current_num_threads();
                total = batched(iter, batch, |b, _| {
                    if b.is_empty() {
                        return Ok(());
                    }
                    let bytes =
                        block::codec::encode(Compression::Lz4, b).map_err(|e| Error::new(e, Location::default()))?;
                    hw.write_all(&bytes).map_err(io)
                })?;
            }
            #[cfg(feature = "extra-codecs")]
            Compression::Zstd => {
                let level = i32::try_from(options.level(comp)).unwrap_or(3);
                let mut z = zstd::stream::write::Encoder::new(&mut hw, level).map_err(io)?;
                // The frame says how long its content is, as the plugin's do.
                z.set_pledged_src_size(Some(chunks.len)).map_err(io)?;
                for c in iter {
                    total += c.len() as u64;
                    if total > chunks.len {
                        break;
                    }
                    z.write_all(&c).map_err(io)?;
                }
                if total == chunks.len {
                    z.finish().map_err(io)?;
                }
            }
            #[cfg(feature = "extra-codecs")]
            Compression::Blosc => {
                if chunks.len > crate::blosc::BLOSC1_MAX_BYTES as u64 {
                    let e = block::BlockError::Unsupported {
                        codec: comp,
                        message: format!("a c-blosc1 buffer holds at most {} bytes", crate::blosc::BLOSC1_MAX_BYTES),
                    };
                    return Err(Error::new(e, Location::default()));
                }
                let mut all = super::try_buffer(usize::try_from(chunks.len).ok(), "a blsc array's chunks")?;
                for c in iter {
                    total += c.len() as u64;
                    if total > chunks.len {
                        break;
                    }
                    all.extend_from_slice(&c);
                }
                if total == chunks.len {
                    let level = Some(options.level(comp));
                    let bytes = block::codec::encode_items(comp, &all, item_size, level)
                        .map_err(|e| Error::new(e, Location::default()))?;
                    hw.write_all(&bytes).map_err(io)?;
                }
            }
            _ => {
                let _ = item_size;
                return Err(Error::new(block::codec::not_written(comp), Location::default()));
            }
        }
        if total != chunks.len {
            return Err(usage(format!("the chunks held {total} bytes, the array's shape needs {}", chunks.len)));
        }
        let used = hw.n;
        let digest = hw.md5.finalize();
        finish_block(out, start, comp, used, total, digest, options)
    }

    /// Declares a streamed array at `path`: rows of `row_shape` elements of `datatype`,
    /// appended after the file is written (see [`Document::write_streamed`]).
    ///
    /// # Errors
    /// A path step that is not a mapping.
    pub fn set_stream(&mut self, path: &str, datatype: ScalarType, row_shape: &[usize]) -> Result<()> {
        let tag = crate::ndarray::node::NDARRAY_TAG;
        let id = self.tree.to_mut().push(crate::ndarray::node::asdf_tagged(tag, crate::tree::Value::Map(Vec::new())));
        self.stream = Some((id, datatype, row_shape.to_vec()));
        self.set_node(path, id)
    }

    /// Writes the document to a temporary file beside `path`, its last block streamed;
    /// append rows to the returned writer, then [`StreamWriter::finish`] renames it into
    /// place.
    ///
    /// # Errors
    /// No stream declared; I/O errors.
    pub fn write_streamed(&self, path: impl AsRef<Path>, options: &WriteOptions) -> Result<StreamWriter> {
        let path = path.as_ref();
        let (_, dt, row) = self.stream.as_ref().ok_or_else(|| usage("no stream declared (set_stream)"))?;
        options.check()?;
        let mut staged =
            Staged::new_with(path, StageOptions { sync: options.sync }).map_err(|e| Error::from(e).in_file(path))?;
        let f = staged.file().try_clone().map_err(|e| Error::from(e).in_file(path))?;
        let mut w = StreamWriter {
            file: Some(std::io::BufWriter::with_capacity(1 << 20, f)),
            staged: Some(staged),
            datatype: *dt,
            row_bytes: dt.size() * row.iter().product::<usize>(),
            rows: 0,
        };
        let options = WriteOptions { include_index: false, ..options.clone() };
        if let Some(f) = w.file.as_mut() {
            self.write(f, Some(path), &options)?;
        }
        Ok(w)
    }
}
