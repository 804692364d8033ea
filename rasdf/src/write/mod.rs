//! Writing ASDF files: the tree, the blocks (compressed as asked, MD5 of the stored
//! bytes), the block index, external (exploded) files; always through a temporary file
//! in the same folder and a rename, so a path holds its old content or all of the new.
//!
//! ```no_run
//! use rasdf::write::{Document, WriteOptions};
//! use rasdf::block::Compression;
//!
//! let mut doc = Document::new();
//! doc.set("meta/telescope", "JWST")?;
//! doc.set("meta/exposure", 120.5)?;
//! let image = ndarray::Array2::<f32>::zeros((64, 64));
//! doc.set_array("sci/data", image.view(), Compression::Zlib)?;
//! doc.write_to_path("out.asdf", &WriteOptions::default())?;
//! # Ok::<(), rasdf::Error>(())
//! ```

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use crate::block::{self, BlockHeader, Compression};
pub mod stage;
pub use crate::direct::{CopyHasher, DirectWriter};
use crate::error::{Error, ErrorKind, Location, Result};
use crate::ndarray::{ByteOrder, Datatype, Element, NativeType, NdArray, Storage as InputStorage, c_strides};
use crate::tree::emit::Emitter;
use crate::tree::overlay::{Children, visit_reachable};
use crate::tree::{ASDF_TAG_PREFIX, Node, NodeArena, NodeId, Overlay, Tree, Value};
use crate::{AsdfFile, index};
pub use stage::{
    StageOptions, Staged, commit_all, ignore_sigxfsz, install_cleanup_handlers, remove_pending_files, write_atomically,
    write_atomically_with,
};

/// Where an array's data goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrayStorage {
    /// A block of the file.
    Internal,
    /// Nested lists in the tree.
    Inline,
    /// A file of its own beside the main one (`<stem>0000.asdf`).
    External,
}

/// How to write. Defaults: each array's own compression and storage, no padding, a
/// block index, checksums, ASDF Standard 1.6.0.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// Compress every block with this (overrides each array's).
    pub compression: Option<Compression>,
    /// Store every array this way (overrides each array's).
    pub storage: Option<ArrayStorage>,
    /// Reserve room after the tree and each block, as the reference's `pad_blocks`.
    pub pad_blocks: bool,
    /// Write the block index.
    pub include_index: bool,
    /// Write MD5 checksums (of the stored bytes).
    pub checksums: bool,
    /// Write only the part of the base a view selects (instead of the whole base).
    pub views_only: bool,
    /// Sync the file to disk before renaming it into place (survives a power loss; the
    /// rename alone already survives a killed process). Also turned on by `RASDF_SYNC=1`.
    pub sync: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            compression: None,
            storage: None,
            pad_blocks: false,
            include_index: true,
            checksums: true,
            views_only: false,
            sync: false,
        }
    }
}

/// An array's data before writing: a base buffer and a layout in it.
#[derive(Debug, Clone)]
struct PendingArray {
    base: usize,
    datatype: Datatype,
    byteorder: ByteOrder,
    shape: Vec<usize>,
    strides: Vec<isize>,
    offset: usize,
    storage: ArrayStorage,
    /// `null`s of inline data, kept when written inline again.
    inline_mask: Option<Vec<bool>>,
    /// What masks the array when it goes to a block, where nulls cannot be written: its
    /// inline nulls, with what a scalar `mask` masks; written as a bool8 array of its
    /// own under `mask`, as the reference writes a masked array.
    block_mask: Option<Vec<bool>>,
}

#[derive(Debug, Clone)]
struct Base<'f> {
    data: Cow<'f, [u8]>,
    compression: Compression,
    /// Data that arrives in chunks at write time (arrays larger than memory).
    chunks: Option<Chunks>,
}

/// A chunk iterator, consumed by the first write, and the bytes it must yield.
#[derive(Clone)]
struct Chunks {
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

/// A tree and its arrays, ready to write.
#[derive(Debug, Clone)]
pub struct Document<'f> {
    /// A file's tree stays borrowed until the document is first changed.
    tree: Cow<'f, Tree>,
    arrays: HashMap<NodeId, PendingArray>,
    bases: Vec<Base<'f>>,
    standard: String,
    /// The streamed array: its node, element type and row shape.
    stream: Option<(NodeId, crate::ndarray::ScalarType, Vec<usize>)>,
    /// The real path of the file the document was read from, which no external file of
    /// a write may replace.
    read_from: Option<PathBuf>,
}

impl Default for Document<'_> {
    fn default() -> Self {
        Self::new()
    }
}

/// The keys of an ndarray node that say where its data is and how it is laid out: a
/// write sets them anew.
const LAYOUT_KEYS: [&str; 7] = ["source", "data", "datatype", "byteorder", "shape", "offset", "strides"];

fn node(value: Value) -> Node {
    Node { tag: None, value, line: 0, col: 0 }
}

fn tagged(tag: &str, value: Value) -> Node {
    Node { tag: Some(format!("{ASDF_TAG_PREFIX}{tag}")), value, line: 0, col: 0 }
}

fn usage(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Usage(msg.into()), Location::default())
}

/// Values [`Document::set`] takes.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    /// null
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
}

macro_rules! scalar_from {
    ($($t:ty => $v:ident $(as $c:ty)?),*) => {$(
        impl From<$t> for Scalar {
            fn from(x: $t) -> Self { Scalar::$v(x $(as $c)?.into()) }
        }
    )*};
}
scalar_from!(bool => Bool, i64 => Int, i32 => Int, u32 => Int, f64 => Float, f32 => Float, String => Str, &str => Str);

impl<'f> Document<'f> {
    /// An empty document (an empty root mapping).
    pub fn new() -> Self {
        let mut tree = Tree::empty();
        let root = tree.push(tagged("core/asdf-1.1.0", Value::Map(Vec::new())));
        tree.set_root(root);
        Document {
            tree: Cow::Owned(tree),
            arrays: HashMap::new(),
            bases: Vec::new(),
            standard: "1.6.0".into(),
            stream: None,
            read_from: None,
        }
    }

    /// The tree being built. For a document from a file, until it is changed, the file's
    /// own tree: its ndarray nodes still hold the layout keys a write sets anew.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    fn text(&mut self, s: &str) -> NodeId {
        self.tree.to_mut().push(node(Value::Str(s.into())))
    }

    /// The mapping at `path`, made (with the mappings above it) when missing.
    fn mapping_at(&mut self, path: &[&str]) -> Result<NodeId> {
        let mut cur = self.tree.root().map(|r| r.id()).ok_or_else(|| usage("the document has no root"))?;
        for step in path {
            let step = crate::tree::unescape_step(step);
            let found = self.tree.node(cur).key(&step).map(|n| n.id());
            cur = match found {
                Some(id) => id,
                None => {
                    let k = self.text(&step);
                    let v = self.tree.to_mut().push(node(Value::Map(Vec::new())));
                    self.attach(cur, k, v)?;
                    v
                }
            };
            if self.tree.node(cur).pairs().is_none() {
                return Err(usage(format!("'{step}' is not a mapping")));
            }
        }
        Ok(cur)
    }

    fn attach(&mut self, map: NodeId, key: NodeId, value: NodeId) -> Result<()> {
        let Value::Map(mut pairs) = self.tree.node(map).value().clone() else {
            return Err(usage("not a mapping"));
        };
        let name = self.tree.node(key).key_text();
        match pairs.iter_mut().find(|(k, _)| self.tree.node(*k).key_text() == name) {
            Some(p) => p.1 = value,
            None => pairs.push((key, value)),
        }
        self.tree.to_mut().set_value(map, Value::Map(pairs));
        Ok(())
    }

    /// Puts node `value` (made in [`Document::tree_mut`]) at `path`, making the mappings
    /// on the way.
    ///
    /// # Errors
    /// A path step that is not a mapping.
    pub fn set_node(&mut self, path: &str, value: NodeId) -> Result<()> {
        let steps: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let (last, parents) = steps.split_last().ok_or_else(|| usage("an empty path"))?;
        let map = self.mapping_at(parents)?;
        let key = self.text(&crate::tree::unescape_step(last));
        self.attach(map, key, value)
    }

    /// Removes the node at `path` (and its array, if it is one).
    ///
    /// # Errors
    /// No such node.
    pub fn remove(&mut self, path: &str) -> Result<()> {
        let steps: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let (last, parents) = steps.split_last().ok_or_else(|| usage("an empty path"))?;
        let parent = self.tree.get(&parents.join("/")).ok_or_else(|| usage(format!("no node at '{path}'")))?;
        let (pid, Value::Map(pairs)) = (parent.id(), parent.value().clone()) else {
            return Err(usage(format!("no node at '{path}'")));
        };
        let before = pairs.len();
        let last = crate::tree::unescape_step(last);
        let kept: Vec<(NodeId, NodeId)> =
            pairs.into_iter().filter(|(k, _)| self.tree.node(*k).key_text() != *last).collect();
        if kept.len() == before {
            return Err(usage(format!("no node at '{path}'")));
        }
        self.tree.to_mut().set_value(pid, Value::Map(kept));
        Ok(())
    }

    /// Sets a scalar at `path` (`a/b/c`; missing mappings are made).
    ///
    /// # Errors
    /// A path step that is not a mapping.
    pub fn set(&mut self, path: &str, value: impl Into<Scalar>) -> Result<()> {
        let v = match value.into() {
            Scalar::Null => Value::Null,
            Scalar::Bool(b) => Value::Bool(b),
            Scalar::Int(i) => Value::Int(i),
            Scalar::Float(f) => Value::Float(f),
            Scalar::Str(s) => Value::Str(s.into()),
        };
        let id = self.tree.to_mut().push(node(v));
        self.set_node(path, id)
    }

    /// Sets any serde-serializable value at `path` (structs become mappings, in field
    /// order).
    ///
    /// # Errors
    /// A value serde cannot express in YAML (a map with non-scalar keys).
    pub fn set_serialize<T: serde::Serialize + ?Sized>(&mut self, path: &str, value: &T) -> Result<()> {
        let id = crate::tree::to_node(self.tree.to_mut(), value).map_err(|e| usage(format!("{path}: {e}")))?;
        self.set_node(path, id)
    }

    /// Sets an array at `path`: its elements are copied in C order (any layout is
    /// accepted; views are written as what they show).
    ///
    /// # Errors
    /// A path step that is not a mapping.
    pub fn set_array<T: NativeType, D: ::ndarray::Dimension>(
        &mut self,
        path: &str,
        array: ::ndarray::ArrayView<'_, T, D>,
        compression: Compression,
    ) -> Result<()> {
        let size = T::SCALAR.size();
        let mut bytes = Vec::with_capacity(array.len() * size);
        for &x in array.iter() {
            T::encode(x, &mut bytes);
        }
        let shape = array.shape().to_vec();
        self.bases.push(Base { data: Cow::Owned(bytes), compression, chunks: None });
        let id = self.tree.to_mut().push(tagged("core/ndarray-1.1.0", Value::Map(Vec::new())));
        self.arrays.insert(
            id,
            PendingArray {
                base: self.bases.len() - 1,
                datatype: Datatype::Scalar(T::SCALAR),
                byteorder: ByteOrder::NATIVE,
                strides: c_strides(&shape, size),
                shape,
                offset: 0,
                storage: ArrayStorage::Internal,
                inline_mask: None,
                block_mask: None,
            },
        );
        self.set_node(path, id)
    }

    /// Sets an array at `path` over bytes as they are: any datatype and byte order, and
    /// any layout that stays inside them. The bytes are written as given (borrowed ones
    /// are not copied), so a foreign layout (column-major, say) is kept with its strides.
    ///
    /// # Errors
    /// A path step that is not a mapping; `shape` and `strides` of different lengths,
    /// or a layout that needs bytes outside `data`.
    pub fn set_array_bytes(&mut self, path: &str, array: ArrayBytes<'f>, compression: Compression) -> Result<()> {
        let id = self.array_node(array, compression).map_err(|e| e.at_path(path))?;
        self.set_node(path, id)
    }

    /// An ndarray node over `array`'s bytes (see [`Document::set_array_bytes`]), not yet
    /// in the tree: the caller places it.
    pub fn array_node(&mut self, array: ArrayBytes<'f>, compression: Compression) -> Result<NodeId> {
        let ArrayBytes { datatype, byteorder, shape, strides, data } = array;
        let meta = crate::ndarray::ArrayMeta {
            source: crate::ndarray::Source::Block(0),
            datatype: datatype.clone(),
            byteorder,
            shape: shape.iter().map(|&d| crate::ndarray::Dim::Fixed(d as u64)).collect(),
            offset: 0,
            strides: Some(strides.iter().map(|&s| s as i64).collect()),
        };
        meta.layout(data.len(), &crate::Limits::unlimited()).map_err(|e| Error::new(e, Location::default()))?;
        self.bases.push(Base { data, compression, chunks: None });
        let id = self.tree.to_mut().push(tagged("core/ndarray-1.1.0", Value::Map(Vec::new())));
        self.arrays.insert(
            id,
            PendingArray {
                base: self.bases.len() - 1,
                datatype,
                byteorder,
                strides,
                shape,
                offset: 0,
                storage: ArrayStorage::Internal,
                inline_mask: None,
                block_mask: None,
            },
        );
        Ok(id)
    }

    /// The tree, to build nodes the path setters cannot reach (keys with `/`, lists).
    pub fn tree_mut(&mut self) -> &mut Tree {
        self.tree.to_mut()
    }

    /// A document with `file`'s tree and arrays: arrays in one block keep sharing it
    /// (views keep their offset and strides), and keep their compression and storage.
    /// The tree is borrowed, not copied; the first change to the document copies it.
    ///
    /// # Errors
    /// Any error reading an array.
    pub fn from_file(file: &'f AsdfFile) -> Result<Document<'f>> {
        if file.tree().root().is_none() {
            return Ok(Document::new());
        }
        // The file's tree is not copied: its ndarray nodes are found and their arrays
        // noted; a write replaces their layout keys (the emitter reads the changes
        // through an overlay), and the first change to the document copies the tree.
        let mut doc = Document {
            tree: Cow::Borrowed(file.tree()),
            arrays: HashMap::new(),
            bases: Vec::new(),
            standard: file.header().standard_version.clone().unwrap_or_else(|| "1.6.0".into()),
            stream: None,
            read_from: file.path().and_then(|p| p.canonicalize().ok()),
        };
        let mut block_base: HashMap<usize, usize> = HashMap::new();
        visit_reachable(file.tree(), |id, _| -> Result<Children> {
            let o = file.tree().node(id);
            if !o.is_asdf_tag("core/ndarray") {
                return Ok(Children::All);
            }
            let a = file.ndarray_at(o).map_err(|e| match path_of(file.tree(), id) {
                Some(path) => e.at_path(&path),
                None => e,
            })?;
            let storage = match a.storage {
                InputStorage::Inline => ArrayStorage::Inline,
                InputStorage::External(_) => ArrayStorage::External,
                InputStorage::Block(_) => ArrayStorage::Internal,
            };
            let base = match a.storage {
                InputStorage::Block(b) => match block_base.get(&b) {
                    Some(&base) => base,
                    None => {
                        let compression = file.blocks()[b].compression;
                        doc.bases.push(Base { data: Cow::Borrowed(file.block_data(b)?), compression, chunks: None });
                        block_base.insert(b, doc.bases.len() - 1);
                        doc.bases.len() - 1
                    }
                },
                _ => {
                    doc.bases.push(Base {
                        data: Cow::Owned(a.data().to_vec()),
                        compression: Compression::None,
                        chunks: None,
                    });
                    doc.bases.len() - 1
                }
            };
            let inline_mask = a.inline_mask().map(<[bool]>::to_vec);
            // (A `mask` array of its own stays as it is, written beside.)
            let mask_array = o.key("mask").is_some_and(|m| m.is_asdf_tag("core/ndarray"));
            // A `mask` the reference cannot apply (text) leaves the nulls alone masking.
            let block_mask = match &inline_mask {
                Some(nulls) if !mask_array => file.mask_at(o, &a).unwrap_or_else(|_| Some(nulls.clone())),
                _ => None,
            };
            let mut p = pending(&a, base, storage, inline_mask);
            p.block_mask = block_mask;
            doc.arrays.insert(id, p);
            // Keys other than the layout's (a mask, unknown extras) may hold arrays.
            Ok(Children::ValuesExcept(&LAYOUT_KEYS))
        })?;
        Ok(doc)
    }

    /// Serializes the document to `out`, with external files (if any) written beside
    /// `main_path`.
    ///
    /// # Errors
    /// I/O errors; an external array with no `main_path` to name its file after.
    pub fn write<W: Write + Seek>(&self, out: &mut W, main_path: Option<&Path>, options: &WriteOptions) -> Result<()> {
        let mut externals = Vec::new();
        self.write_staging(&mut Plain(out), main_path, options, &mut externals)?;
        commit(externals)
    }

    /// [`Document::write`], with the block files of external arrays left staged in
    /// `externals`, for the caller to put in place.
    fn write_staging<W: WriteSeek>(
        &self,
        out: &mut W,
        main_path: Option<&Path>,
        options: &WriteOptions,
        externals: &mut Vec<Staged>,
    ) -> Result<()> {
        let plan = self.plan(options)?;
        self.check_external_names(&plan, main_path)?;
        let tree = self.output_tree(&plan, main_path)?;
        // The header and the tree in one buffer, sized for about 12 bytes a node.
        let mut header = String::with_capacity(tree.len().saturating_mul(12).min(1 << 30));
        let _ = write!(header, "#ASDF 1.0.0\n#ASDF_STANDARD {}\n", self.standard);
        let mut text = Emitter::new(&tree).for_standard(&self.standard).document_after(header).into_bytes();
        let pad = |len: usize| if options.pad_blocks { padding(len) } else { 0 };
        let tree_pad = if plan.internal.is_empty() { 0 } else { pad(text.len()) };
        text.resize(text.len() + tree_pad, 0);
        out.write_all(&text)?;
        // Compress and hash blocks in parallel, then write them in order; chunked data
        // is compressed and hashed as it arrives, and its header patched afterwards.
        let blocks: Vec<Prepared<'_>> = plan
            .internal
            .par_iter()
            .map(|&(base, comp)| {
                if self.bases.get(base).is_some_and(|b| b.chunks.is_some()) {
                    Ok(Prepared::Chunked)
                } else {
                    prepare(self.block_bytes(base, &plan), comp, options)
                }
            })
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| Error::new(e, Location::default()))?;
        let mut offset = text.len() as u64;
        let mut offsets = Vec::with_capacity(blocks.len());
        for (prepared, &(base, comp)) in blocks.into_iter().zip(&plan.internal) {
            offsets.push(offset);
            let allocated = match prepared {
                Prepared::Chunked => self.write_chunked(out, base, comp, options)?,
                other => write_prepared(out, other, self.block_bytes(base, &plan), options)?,
            };
            offset += block::HEADER_LEN as u64 + allocated;
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
                let path = external_path(main, n);
                let mut sub = Document::new();
                sub.standard.clone_from(&self.standard);
                sub.bases.push(Base {
                    data: Cow::Borrowed(self.block_bytes(base, &plan)),
                    compression: comp,
                    chunks: None,
                });
                // As the reference writes them: no padding.
                let sub_opts =
                    WriteOptions { storage: Some(ArrayStorage::Internal), pad_blocks: false, ..options.clone() };
                externals.push(sub.stage_raw_block_file(&path, &sub_opts)?);
            }
        }
        Ok(())
    }

    /// Refuses a write whose external files would replace the file the document was read
    /// from: exploding `a0000.asdf` to `a.asdf` names the first block file `a0000.asdf`,
    /// and the input would be lost to a file of one block.
    fn check_external_names(&self, plan: &Plan, main_path: Option<&Path>) -> Result<()> {
        let (Some(main), Some(from)) = (main_path, &self.read_from) else { return Ok(()) };
        for n in 0..plan.external.len() {
            let path = external_path(main, n);
            if path.canonicalize().is_ok_and(|p| &p == from) {
                return Err(usage(format!(
                    "external file {n} of {} would be {}, the file being rewritten: choose another output name",
                    main.display(),
                    path.display()
                )));
            }
        }
        Ok(())
    }

    /// Writes the block of a chunked base; returns its allocated size.
    fn write_chunked<W: Write + Seek>(
        &self,
        out: &mut W,
        base: usize,
        comp: Compression,
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
                let mut stream = block::pdeflate::Stream::new(6);
                let batch = block::pdeflate::PIECE * 2 * rayon::current_num_threads();
                total = batched(iter, batch, |b, last| {
                    let bytes = stream.feed(b, last).map_err(|message| {
                        Error::new(block::BlockError::Corrupt { codec: comp, message }, Location::default())
                    })?;
                    hw.write_all(&bytes).map_err(io)
                })?;
            }
            Compression::Bzp2 => {
                // Batches of a few blocks per worker, compressed in parallel into one
                // stream: the bytes a whole-array write makes.
                let corrupt =
                    |message| Error::new(block::BlockError::Corrupt { codec: comp, message }, Location::default());
                let mut stream = block::pbzip::Stream::new(9).map_err(corrupt)?;
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
            Compression::Other(_) => {
                return Err(Error::new(block::BlockError::UnknownCompression(comp), Location::default()));
            }
        }
        if total != chunks.len {
            return Err(usage(format!("the chunks held {total} bytes, the array's shape needs {}", chunks.len)));
        }
        let used = hw.n;
        let digest = hw.md5.finalize();
        finish_block(out, start, comp, used, total, digest, options)
    }

    /// Sets an array at `path` whose data (in the machine's byte order, C order) comes
    /// from `chunks` while the file is written, so it never has to fit in memory.
    /// It is stored in a block of the main file.
    ///
    /// # Errors
    /// A path step that is not a mapping.
    pub fn set_array_chunks(
        &mut self,
        path: &str,
        datatype: crate::ndarray::ScalarType,
        shape: &[usize],
        compression: Compression,
        chunks: impl Iterator<Item = Vec<u8>> + Send + 'static,
    ) -> Result<()> {
        let len = shape.iter().try_fold(datatype.size() as u64, |a, &d| a.checked_mul(d as u64));
        let len = len.ok_or_else(|| usage("the shape is too large"))?;
        self.bases.push(Base {
            data: Cow::Borrowed(&[]),
            compression,
            chunks: Some(Chunks { source: Arc::new(Mutex::new(Some(Box::new(chunks)))), len }),
        });
        let id = self.tree.to_mut().push(tagged("core/ndarray-1.1.0", Value::Map(Vec::new())));
        self.arrays.insert(
            id,
            PendingArray {
                base: self.bases.len() - 1,
                datatype: Datatype::Scalar(datatype),
                byteorder: ByteOrder::NATIVE,
                strides: c_strides(shape, datatype.size()),
                shape: shape.to_vec(),
                offset: 0,
                storage: ArrayStorage::Internal,
                inline_mask: None,
                block_mask: None,
            },
        );
        self.set_node(path, id)
    }

    /// Writes an external block file: a minimal tree and one block, as the main file's
    /// blocks are written (a large one past the page cache, its MD5 beside the write,
    /// lz4 record by record).
    fn stage_raw_block_file(&self, path: &Path, options: &WriteOptions) -> Result<Staged> {
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
            let prepared =
                prepare(&base.data, base.compression, options).map_err(|e| Error::new(e, Location::default()))?;
            write_prepared(out, prepared, &base.data, options)?;
            if options.include_index {
                out.write_all(&index::write(&[text.len() as u64]))?;
            }
            Ok(())
        })
    }

    /// Writes the document to `path` through a temporary file and a rename.
    ///
    /// # Errors
    /// As [`Document::write`].
    pub fn write_to_path(&self, path: impl AsRef<Path>, options: &WriteOptions) -> Result<()> {
        let path = path.as_ref();
        if self.stream.is_some() {
            return Err(usage("a document with a stream is written with write_streamed"));
        }
        // The block files of external arrays are staged with the main file and put in
        // place just before it, once all are written: a failed write replaces none.
        let mut staged = Vec::new();
        let main =
            self.stage_path_with(path, options, |out| self.write_staging(out, Some(path), options, &mut staged))?;
        staged.push(main);
        commit(staged)
    }

    /// Runs `body` on a temporary file beside `path`, to be renamed into place by the
    /// caller; with 64 MiB of array data or more, the file is written past the page
    /// cache.
    fn stage_path_with(
        &self,
        path: &Path,
        options: &WriteOptions,
        body: impl FnOnce(&mut &mut dyn WriteSeek) -> Result<()>,
    ) -> Result<Staged> {
        let mut failure = None;
        let big = self.bases.iter().map(|b| b.data.len()).sum::<usize>() >= DIRECT_MIN;
        let result = stage::stage_with(path, StageOptions { sync: options.sync }, |f| {
            let written = match big.then(|| crate::direct::DirectWriter::new(f)).flatten() {
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

    /// Declares a streamed array at `path`: rows of `row_shape` elements of `datatype`,
    /// appended after the file is written (see [`Document::write_streamed`]).
    ///
    /// # Errors
    /// A path step that is not a mapping.
    pub fn set_stream(&mut self, path: &str, datatype: crate::ndarray::ScalarType, row_shape: &[usize]) -> Result<()> {
        let id = self.tree.to_mut().push(tagged("core/ndarray-1.1.0", Value::Map(Vec::new())));
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
        let mut staged =
            Staged::new_with(path, StageOptions { sync: options.sync }).map_err(|e| Error::from(e).in_file(path))?;
        let f = staged.file().try_clone().map_err(|e| Error::from(e).in_file(path))?;
        let mut w = StreamWriter {
            file: Some(std::io::BufWriter::with_capacity(1 << 20, f)),
            staged: Some(staged),
            row_bytes: dt.size() * row.iter().product::<usize>(),
            rows: 0,
        };
        let options = WriteOptions { include_index: false, ..options.clone() };
        if let Some(f) = w.file.as_mut() {
            self.write(f, Some(path), &options)?;
        }
        Ok(w)
    }

    fn block_bytes<'a>(&'a self, base: usize, plan: &'a Plan) -> &'a [u8] {
        match &plan.view_data[base] {
            Some(v) => v,
            None => &self.bases[base].data,
        }
    }
}

/// Puts staged files in place, in order. A rename fails, in practice, only onto a
/// folder: that is looked for first, so that none is put in place then.
fn commit(staged: Vec<Staged>) -> Result<()> {
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

/// `<stem>NNNN.asdf` beside `main`, as the reference names external block files.
pub fn external_path(main: &Path, n: usize) -> PathBuf {
    let stem = main.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    main.with_file_name(format!("{stem}{n:04}.asdf"))
}

/// An array's bytes and their layout, for [`Document::set_array_bytes`].
#[derive(Debug, Clone)]
pub struct ArrayBytes<'f> {
    /// The element type.
    pub datatype: Datatype,
    /// The byte order of `data`.
    pub byteorder: ByteOrder,
    /// The shape.
    pub shape: Vec<usize>,
    /// Byte strides, from the first byte of `data`.
    pub strides: Vec<isize>,
    /// The bytes.
    pub data: Cow<'f, [u8]>,
}

/// A block before it is written.
enum Prepared<'a> {
    /// Compressed and (small enough) hashed already: its header and stored bytes.
    Encoded(BlockHeader, Cow<'a, [u8]>),
    /// A chunked base: compressed and hashed as its chunks arrive.
    Chunked,
    /// lz4 of two records or more: compressed while it is written (see
    /// [`write_lz4_pipelined`]).
    Lz4Pipelined,
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

/// Buffers per worker in [`write_lz4_pipelined`]: one being filled, one waiting its turn.
const LZ4_SLOTS_PER_WORKER: usize = 2;

/// Ends a block whose data was written after a placeholder header at `start`: pads it
/// (if asked), then writes the real header there; returns the allocated size.
fn finish_block<W: Write + Seek>(
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

/// Documents with at least this much array data are written past the page cache
/// where the filesystem allows it (see `crate::direct`).
const DIRECT_MIN: usize = 64 << 20;

/// Blocks at least this large have their MD5 computed while their data is written.
const OVERLAP_MD5: usize = 8 << 20;

fn encode_block(
    data: &[u8],
    comp: Compression,
    checksums: bool,
) -> std::result::Result<(BlockHeader, Cow<'_, [u8]>), block::BlockError> {
    let stored: Cow<'_, [u8]> =
        if comp == Compression::None { Cow::Borrowed(data) } else { Cow::Owned(block::codec::encode(comp, data)?) };
    // Large blocks: the checksum is computed beside the write (see `Document::write`).
    let checksums = checksums && stored.len() < OVERLAP_MD5;
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

/// Where a document's bytes go: a writer that seeks, and may hash bytes as it copies
/// them (the direct writer of large files does both in one pass).
trait WriteSeek: Write + Seek {
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
struct Plain<'w, W: Write + Seek>(&'w mut W);

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

/// How the block of `data` is to be written with `comp`: lz4 of two records or more
/// compressed while it is written, anything else compressed (and, when small, hashed)
/// now.
fn prepare<'a>(
    data: &'a [u8],
    comp: Compression,
    options: &WriteOptions,
) -> std::result::Result<Prepared<'a>, block::BlockError> {
    if comp == Compression::Lz4 && data.len() > block::codec::LZ4_CHUNK {
        return Ok(Prepared::Lz4Pipelined);
    }
    encode_block(data, comp, options.checksums).map(|(h, stored)| Prepared::Encoded(h, stored))
}

/// Writes a block [`prepare`]d from `data` at the current position; returns its
/// allocated size. A large block's MD5 is computed on another thread while it is
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
        let written = std::thread::scope(|scope| {
            let md5 = scope.spawn(|| block::md5(&stored));
            let w = out
                .write_all(&h.to_bytes())
                .and_then(|()| out.write_all(&stored))
                .and_then(|()| out.write_all(&vec![0u8; extra]));
            w.map(|()| md5.join().unwrap_or([0; 16]))
        });
        h.checksum = written?;
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

/// The path of node `id` from the root, found by a walk (for error messages).
fn path_of(tree: &Tree, id: NodeId) -> Option<String> {
    let mut found = None;
    tree.walk(|path, node| {
        if found.is_none() && node.id() == id {
            found = Some(path.to_string());
        }
    });
    found
}

/// The `source` of an array in block `slot` (or external file `slot`, named after `main`).
fn source_node(tree: &mut Overlay<'_>, storage: ArrayStorage, slot: usize, main: Option<&Path>) -> Result<NodeId> {
    Ok(if storage == ArrayStorage::External {
        let main = main.ok_or_else(|| usage("external arrays need the main file's path to name their files"))?;
        let p = external_path(main, slot);
        let name = p.file_name().map(crate::external::percent_encode).unwrap_or_default();
        tree.push(node(Value::Str(name.into())))
    } else {
        tree.push(node(Value::Int(i64::try_from(slot).unwrap_or(i64::MAX))))
    })
}

/// The mask of `array` as an ndarray node of its own: bool8 of its shape, C order, at
/// `source`, tagged `tag` (the array's).
fn mask_node(tree: &mut Overlay<'_>, tag: Option<String>, source: NodeId, array: &PendingArray) -> NodeId {
    let mask = PendingArray {
        datatype: Datatype::Scalar(crate::ndarray::ScalarType::Bool8),
        byteorder: ByteOrder::Big,
        strides: c_strides(&array.shape, 1),
        offset: 0,
        inline_mask: None,
        block_mask: None,
        ..array.clone()
    };
    let mut pairs = vec![(tree.push(node(Value::Str("source".into()))), source)];
    layout_pairs(tree, &mask, &mut pairs);
    tree.push(Node { tag, value: Value::Map(pairs), line: 0, col: 0 })
}

/// Appends the layout keys of array `a` to `pairs`: `datatype`, then (unless inline)
/// `byteorder`, `shape`, then (unless inline) `offset` and `strides` when not the
/// defaults.
fn layout_pairs(tree: &mut Overlay<'_>, a: &PendingArray, pairs: &mut Vec<(NodeId, NodeId)>) {
    let mut put = |tree: &mut Overlay<'_>, k: &str, v: NodeId| {
        let k = tree.push(node(Value::Str(k.into())));
        pairs.push((k, v));
    };
    let dt = datatype_node(tree, &a.datatype);
    put(tree, "datatype", dt);
    if a.storage != ArrayStorage::Inline {
        // One-byte types are written `big`, as the reference does.
        let order = if a.datatype.size() == 1 || matches!(a.datatype, Datatype::Ascii(_)) {
            ByteOrder::Big
        } else {
            a.byteorder
        };
        let bo = tree.push(node(Value::Str(order.name().into())));
        put(tree, "byteorder", bo);
    }
    let dims = a.shape.iter().map(|&d| tree.push(node(Value::Int(i64::try_from(d).unwrap_or(i64::MAX))))).collect();
    let shape = tree.push(node(Value::Seq(dims)));
    put(tree, "shape", shape);
    if a.storage != ArrayStorage::Inline {
        if a.offset != 0 {
            let o = tree.push(node(Value::Int(i64::try_from(a.offset).unwrap_or(i64::MAX))));
            put(tree, "offset", o);
        }
        if a.strides != c_strides(&a.shape, a.datatype.size()) && a.shape.iter().all(|&d| d > 0) {
            let s = a.strides.iter().map(|&s| tree.push(node(Value::Int(s as i64)))).collect();
            let s = tree.push(node(Value::Seq(s)));
            put(tree, "strides", s);
        }
    }
}

fn pending(a: &NdArray<'_>, base: usize, storage: ArrayStorage, inline_mask: Option<Vec<bool>>) -> PendingArray {
    PendingArray {
        base,
        datatype: a.datatype.clone(),
        byteorder: a.byteorder,
        shape: a.shape.clone(),
        strides: a.strides.clone(),
        offset: a.offset,
        storage,
        inline_mask,
        block_mask: None,
    }
}

/// `core/software-1.0.0` naming rasdf.
fn software(tree: &mut impl NodeArena) -> NodeId {
    let mut pairs = Vec::new();
    for (k, v) in [
        ("author", "The rasdf developers"),
        ("homepage", "https://crates.io/crates/rasdf"),
        ("name", "rasdf"),
        ("version", env!("CARGO_PKG_VERSION")),
    ] {
        let k = tree.push(node(Value::Str(k.into())));
        let v = tree.push(node(Value::Str(v.into())));
        pairs.push((k, v));
    }
    tree.push(tagged("core/software-1.0.0", Value::Map(pairs)))
}

/// Where each array goes: block numbers for internal bases, file numbers for external
/// ones, and view copies when only views are written.
struct Plan {
    /// (base, compression) in block order.
    internal: Vec<(usize, Compression)>,
    external: Vec<(usize, Compression)>,
    /// base -> block number or external file number.
    slot: HashMap<usize, usize>,
    /// Per base: the view's own bytes when `views_only` made a copy.
    view_data: Vec<Option<Vec<u8>>>,
    /// Per array node: (storage, base, layout) after overrides.
    arrays: HashMap<NodeId, PendingArray>,
    /// Per array node whose inline nulls go to a block: the base of its mask array.
    masks: HashMap<NodeId, usize>,
}

impl Document<'_> {
    fn plan(&self, options: &WriteOptions) -> Result<Plan> {
        let mut plan = Plan {
            internal: Vec::new(),
            external: Vec::new(),
            slot: HashMap::new(),
            view_data: vec![None; self.bases.len()],
            arrays: HashMap::new(),
            masks: HashMap::new(),
        };
        // Array nodes in tree order (preorder, as the reference numbers blocks).
        let mut order = Vec::new();
        self.tree.walk(|_, n| {
            if self.arrays.contains_key(&n.id()) {
                order.push(n.id());
            }
        });
        let mut extra_bases: Vec<Vec<u8>> = Vec::new();
        for id in order {
            let mut a = self.arrays[&id].clone();
            if let Some(s) = options.storage {
                a.storage = s;
            }
            let whole = self.bases[a.base].data.len();
            let contiguous = a.strides == c_strides(&a.shape, a.datatype.size()) && a.offset == 0;
            let covers = contiguous && a.shape.iter().product::<usize>() * a.datatype.size() == whole;
            // A stride of 0 is read but not written (the schema forbids it): the view is
            // materialised, as the reference's writer does.
            let zero_stride = a.strides.contains(&0) && a.shape.iter().all(|&d| d > 0);
            if (options.views_only && !covers || zero_stride) && a.storage != ArrayStorage::Inline {
                // Copy just what the view shows into a base of its own.
                let view = NdArray::from_layout(
                    &a.datatype,
                    a.byteorder,
                    &a.shape,
                    &a.strides,
                    a.offset,
                    &self.bases[a.base].data,
                );
                let mut bytes = Vec::with_capacity(view.len() * a.datatype.size());
                for at in view.byte_offsets() {
                    bytes.extend_from_slice(&self.bases[a.base].data[at..at + a.datatype.size()]);
                }
                extra_bases.push(bytes);
                a.strides = c_strides(&a.shape, a.datatype.size());
                a.offset = 0;
                a.base = self.bases.len() + extra_bases.len() - 1;
            }
            if a.storage != ArrayStorage::Inline {
                let comp = options.compression.unwrap_or_else(|| self.base_compression(a.base));
                let list = if a.storage == ArrayStorage::External { &mut plan.external } else { &mut plan.internal };
                if let std::collections::hash_map::Entry::Vacant(e) = plan.slot.entry(a.base) {
                    e.insert(list.len());
                    list.push((a.base, comp));
                }
                if let Some(mask) = &a.block_mask {
                    // The mask's block follows the array's, as the reference numbers them.
                    extra_bases.push(mask.iter().map(|&m| u8::from(m)).collect());
                    let base = self.bases.len() + extra_bases.len() - 1;
                    plan.slot.insert(base, list.len());
                    list.push((base, comp));
                    plan.masks.insert(id, base);
                }
            }
            plan.arrays.insert(id, a);
        }
        plan.view_data.extend(extra_bases.into_iter().map(Some));
        Ok(plan)
    }

    fn base_compression(&self, base: usize) -> Compression {
        self.bases.get(base).map_or(Compression::None, |b| b.compression)
    }

    /// The tree to emit: ndarray nodes filled in, asdf_library set, big ints as
    /// core/integer, key order as the schemas' propertyOrder asks.
    fn output_tree(&self, plan: &Plan, main: Option<&Path>) -> Result<Overlay<'_>> {
        // Room for what is added: an array's layout keys and values (inline data: a node
        // an element, and one a row).
        let more: usize = plan
            .arrays
            .values()
            .map(|a| {
                // (A shape with a 0 in it may still overflow a plain product.)
                let elements = a.shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)).unwrap_or(usize::MAX);
                32 + if a.storage == ArrayStorage::Inline { elements.saturating_mul(2) } else { 0 }
            })
            .fold(64, usize::saturating_add);
        // The changes sit on top of the document's tree, which is not copied.
        let mut tree = Overlay::with_room(&self.tree, more.min(self.tree.len().saturating_mul(4) + (1 << 20)));
        // Inline array data keeps its ints as literals (the reference reads them back).
        let mut literal_ranges = Vec::new();
        for (&id, a) in &plan.arrays {
            let old_pairs = match tree.value(id) {
                Value::Map(p) => p.clone(),
                _ => Vec::new(),
            };
            let mut pairs = Vec::new();
            let mut put = |tree: &mut Overlay<'_>, k: &str, v: NodeId| {
                let k = tree.push(node(Value::Str(k.into())));
                pairs.push((k, v));
            };
            // Keys other than the layout's stay (unknown extras), the mask first.
            let extra: Vec<(NodeId, NodeId)> = old_pairs
                .iter()
                .copied()
                .filter(|(k, _)| !tree.as_str(*k).is_some_and(|k| k == "mask" || LAYOUT_KEYS.contains(&k)))
                .collect();
            let mut mask = old_pairs.iter().copied().find(|(k, _)| tree.as_str(*k) == Some("mask")).map(|(_, m)| m);
            let data_bytes = self.block_or_base(a, plan);
            match a.storage {
                ArrayStorage::Inline => {
                    let arr =
                        NdArray::from_layout(&a.datatype, a.byteorder, &a.shape, &a.strides, a.offset, data_bytes);
                    let first = tree.len();
                    let data = inline_data(&mut tree, &arr, a.inline_mask.as_deref());
                    literal_ranges.push(first..tree.len());
                    put(&mut tree, "data", data);
                }
                ArrayStorage::Internal | ArrayStorage::External => {
                    let source = source_node(&mut tree, a.storage, plan.slot[&a.base], main)?;
                    put(&mut tree, "source", source);
                    if let Some(&base) = plan.masks.get(&id) {
                        let source = source_node(&mut tree, a.storage, plan.slot[&base], main)?;
                        let tag = tree.node(id).tag.clone();
                        mask = Some(mask_node(&mut tree, tag, source, a));
                    }
                }
            }
            if let Some(m) = mask {
                put(&mut tree, "mask", m);
            }
            layout_pairs(&mut tree, a, &mut pairs);
            pairs.extend(extra);
            tree.set_value(id, Value::Map(pairs));
        }
        if let Some((id, dt, row)) = &self.stream {
            let mut pairs = Vec::new();
            let mut put = |tree: &mut Overlay<'_>, k: &str, v: Value| {
                let k = tree.push(node(Value::Str(k.into())));
                let v = tree.push(node(v));
                pairs.push((k, v));
            };
            put(&mut tree, "source", Value::Int(-1));
            put(&mut tree, "datatype", Value::Str(dt.name().into()));
            let order = if dt.size() == 1 { ByteOrder::Big } else { ByteOrder::NATIVE };
            put(&mut tree, "byteorder", Value::Str(order.name().into()));
            let mut dims = vec![tree.push(node(Value::Str("*".into())))];
            dims.extend(row.iter().map(|&d| tree.push(node(Value::Int(i64::try_from(d).unwrap_or(i64::MAX))))));
            put(&mut tree, "shape", Value::Seq(dims));
            tree.set_value(*id, Value::Map(pairs));
        }
        let root = tree.root().ok_or_else(|| usage("no root"))?;
        let lib = software(&mut tree);
        let Value::Map(root_pairs) = tree.value(root).clone() else {
            return Err(usage("the root must be a mapping"));
        };
        let lib_key = tree.push(node(Value::Str("asdf_library".into())));
        let mut pairs = vec![(lib_key, lib)];
        let history: Vec<_> = root_pairs.iter().copied().filter(|(k, _)| tree.as_str(*k) == Some("history")).collect();
        pairs.extend(history);
        pairs.extend(
            root_pairs.into_iter().filter(|(k, _)| !matches!(tree.as_str(*k), Some("asdf_library" | "history"))),
        );
        tree.set_value(root, Value::Map(pairs));
        big_ints_to_integer_tags(&mut tree, &literal_ranges);
        Ok(tree)
    }

    fn block_or_base<'a>(&'a self, a: &PendingArray, plan: &'a Plan) -> &'a [u8] {
        self.block_bytes(a.base, plan)
    }
}

/// Ints outside the ASDF literal range [-(2^63 - 2), 2^63 - 1] become core/integer: those
/// the output reaches, apart from the inline array data in `skip`.
fn big_ints_to_integer_tags(tree: &mut Overlay<'_>, skip: &[std::ops::Range<usize>]) {
    // The ranges do not overlap: sorted, the one that may hold `i` is found by halving.
    let mut skip = skip.to_vec();
    skip.sort_unstable_by_key(|r| r.start);
    let skipped = |i: usize| {
        let n = skip.partition_point(|r| r.start <= i);
        n > 0 && skip[n - 1].contains(&i)
    };
    let mut ids: Vec<NodeId> = Vec::new();
    let Ok(()) = visit_reachable(&*tree, |id, node| -> std::result::Result<_, std::convert::Infallible> {
        if skipped(id.0 as usize) {
            return Ok(Children::Skip);
        }
        match node.value {
            Value::BigInt(_) => ids.push(id),
            Value::Int(i) if i < -(i64::MAX - 1) => ids.push(id),
            _ => {}
        }
        Ok(Children::All)
    });
    for id in ids {
        let v: num_bigint::BigInt = match tree.value(id) {
            Value::BigInt(b) => (**b).clone(),
            Value::Int(i) => (*i).into(),
            _ => continue,
        };
        let (sign, mag) = v.into_parts();
        let words = mag.to_u32_digits();
        let word_nodes = words.iter().map(|&w| tree.push(node(Value::Int(i64::from(w))))).collect();
        let data = tree.push(node(Value::Seq(word_nodes)));
        let k_data = tree.push(node(Value::Str("data".into())));
        let dt = tree.push(node(Value::Str("uint32".into())));
        let k_dt = tree.push(node(Value::Str("datatype".into())));
        let n = tree.push(node(Value::Int(i64::try_from(words.len()).unwrap_or(0))));
        let shape = tree.push(node(Value::Seq(vec![n])));
        let k_shape = tree.push(node(Value::Str("shape".into())));
        let arr =
            tree.push(tagged("core/ndarray-1.1.0", Value::Map(vec![(k_data, data), (k_dt, dt), (k_shape, shape)])));
        let k_words = tree.push(node(Value::Str("words".into())));
        let s = tree.push(node(Value::Str(if sign == num_bigint::Sign::Minus { "-" } else { "+" }.into())));
        let k_sign = tree.push(node(Value::Str("sign".into())));
        let text = tree
            .push(node(Value::Str(format!("{}{mag}", if sign == num_bigint::Sign::Minus { "-" } else { "" }).into())));
        let k_text = tree.push(node(Value::Str("string".into())));
        tree.set_value(id, Value::Map(vec![(k_words, arr), (k_sign, s), (k_text, text)]));
        tree.set_tag(id, Some(format!("{ASDF_TAG_PREFIX}core/integer-1.1.0")));
    }
}

/// Nodes for a datatype.
pub(crate) fn datatype_node(tree: &mut impl NodeArena, d: &Datatype) -> NodeId {
    match d {
        Datatype::Scalar(s) => tree.push(node(Value::Str(s.name().into()))),
        Datatype::Ascii(n) | Datatype::Ucs4(n) => {
            let kind =
                tree.push(node(Value::Str(if matches!(d, Datatype::Ascii(_)) { "ascii" } else { "ucs4" }.into())));
            let len = tree.push(node(Value::Int(i64::try_from(*n).unwrap_or(i64::MAX))));
            tree.push(node(Value::Seq(vec![kind, len])))
        }
        Datatype::Record(fields) => {
            let mut items = Vec::with_capacity(fields.len());
            for f in fields {
                let mut pairs = Vec::new();
                if let Some(name) = &f.name {
                    let (k, v) =
                        (tree.push(node(Value::Str("name".into()))), tree.push(node(Value::Str(name.as_str().into()))));
                    pairs.push((k, v));
                }
                let k = tree.push(node(Value::Str("datatype".into())));
                let v = datatype_node(tree, &f.datatype);
                pairs.push((k, v));
                if f.datatype.size() > 1 && !matches!(f.datatype, Datatype::Ascii(_) | Datatype::Record(_)) {
                    let k = tree.push(node(Value::Str("byteorder".into())));
                    let v = tree.push(node(Value::Str(f.byteorder.name().into())));
                    pairs.push((k, v));
                }
                if !f.shape.is_empty() {
                    let k = tree.push(node(Value::Str("shape".into())));
                    let dims = f
                        .shape
                        .iter()
                        .map(|&d| tree.push(node(Value::Int(i64::try_from(d).unwrap_or(i64::MAX)))))
                        .collect();
                    let v = tree.push(node(Value::Seq(dims)));
                    pairs.push((k, v));
                }
                items.push(tree.push(node(Value::Map(pairs))));
            }
            tree.push(node(Value::Seq(items)))
        }
    }
}

/// Nested lists of `a`'s elements (`null` where `mask` says); for a 0-d array the record
/// itself, or `[x]`.
pub(crate) fn inline_data(tree: &mut impl NodeArena, a: &NdArray<'_>, mask: Option<&[bool]>) -> NodeId {
    let leaves: Vec<NodeId> = a
        .elements()
        .iter()
        .enumerate()
        .map(|(i, e)| {
            if mask.is_some_and(|m| m.get(i) == Some(&true)) {
                tree.push(node(Value::Null))
            } else {
                element_node(tree, e)
            }
        })
        .collect();
    if a.shape.is_empty() {
        // A 0-d record is written as the record itself (its list of fields), as the
        // reference writes and reads it. Other 0-d arrays as `data: [x]`: a bare
        // `data: 5` is block 5 to the reference (which reads no inline 0-d form).
        if matches!(a.datatype, Datatype::Record(_)) && leaves.len() == 1 {
            return leaves[0];
        }
        return tree.push(node(Value::Seq(leaves)));
    }
    nest(tree, &mut leaves.into_iter(), &a.shape)
}

fn nest(tree: &mut impl NodeArena, it: &mut impl Iterator<Item = NodeId>, shape: &[usize]) -> NodeId {
    let items: Vec<NodeId> = if shape.len() == 1 {
        it.take(shape[0]).collect()
    } else {
        (0..shape[0]).map(|_| nest(tree, it, &shape[1..])).collect()
    };
    tree.push(node(Value::Seq(items)))
}

/// The node for one element.
pub(crate) fn element_node(tree: &mut impl NodeArena, e: &Element) -> NodeId {
    match e {
        Element::Bool(b) => tree.push(node(Value::Bool(*b))),
        Element::Int(i) => tree.push(node(Value::Int(*i))),
        Element::UInt(u) => match i64::try_from(*u) {
            Ok(i) => tree.push(node(Value::Int(i))),
            Err(_) => tree.push(node(Value::BigInt(Box::new((*u).into())))),
        },
        Element::Float(f) => tree.push(node(Value::Float(*f))),
        Element::Complex(r, i) => {
            tree.push(tagged("core/complex-1.0.0", Value::Str(crate::tree::numtext::complex_repr(*r, *i).into())))
        }
        Element::Bytes(b) => tree.push(node(Value::Str(String::from_utf8_lossy(b).into()))),
        Element::Str(s) => tree.push(node(Value::Str(s.as_str().into()))),
        Element::Record(v) | Element::List(v) => {
            let items = v.iter().map(|x| element_node(tree, x)).collect();
            tree.push(node(Value::Seq(items)))
        }
    }
}

/// Rows appended to a streamed block; [`StreamWriter::finish`] puts the file in place.
/// Dropped without `finish`, the file is not written and the target is unchanged.
pub struct StreamWriter {
    file: Option<std::io::BufWriter<std::fs::File>>,
    staged: Option<Staged>,
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

    /// Appends the rows of a typed array (its first axis).
    ///
    /// # Errors
    /// As [`StreamWriter::append`].
    pub fn append_array<T: NativeType, D: ::ndarray::Dimension>(
        &mut self,
        rows: ::ndarray::ArrayView<'_, T, D>,
    ) -> Result<()> {
        let mut bytes = Vec::with_capacity(rows.len() * T::SCALAR.size());
        for &x in rows.iter() {
            x.encode(&mut bytes);
        }
        self.append(&bytes)
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
