//! The document API: the tree being built ([`Document::set`], [`Document::set_serialize`],
//! [`Document::remove`]...) and its arrays ([`Document::set_array`] and kin), or a file's
//! tree and arrays to write again ([`Document::from_file`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};

use super::array::{ArrayBytes, BaseData, IntoArrayBytes, SerializedArray};
use super::blocks::{Plain, commit};
use super::stream::Chunks;
use super::{ArrayStorage, WriteOptions, node, try_buffer, usage};
use crate::AsdfFile;
use crate::block::Compression;
use crate::error::{Error, Location, Result};
use crate::ndarray::node::{LAYOUT_KEYS, NDARRAY_TAG, PENDING_NDARRAY_TAG, asdf_tagged};
use crate::ndarray::{ByteOrder, Datatype, NdArray, ScalarType, Storage as InputStorage, c_strides};
use crate::tree::overlay::{Children, visit_reachable};
use crate::tree::{NodeId, Tree, Value};

/// An array's data before writing: a base buffer and a layout in it.
#[derive(Debug, Clone)]
pub(super) struct PendingArray {
    pub(super) base: usize,
    pub(super) datatype: Datatype,
    pub(super) byteorder: ByteOrder,
    pub(super) shape: Vec<usize>,
    pub(super) strides: Vec<isize>,
    pub(super) offset: usize,
    pub(super) storage: ArrayStorage,
    /// `null`s of inline data, kept when written inline again.
    pub(super) inline_mask: Option<Vec<bool>>,
    /// What masks the array when it goes to a block, where nulls cannot be written: its
    /// inline nulls, with what a scalar `mask` masks; written as a bool8 array of its
    /// own under `mask`, as the reference writes a masked array.
    pub(super) block_mask: Option<Vec<bool>>,
}

impl PendingArray {
    /// An array of `shape` over the whole of base `base`, in C order.
    fn c_order(base: usize, datatype: Datatype, byteorder: ByteOrder, shape: Vec<usize>) -> Self {
        PendingArray {
            base,
            strides: c_strides(&shape, datatype.size()),
            datatype,
            byteorder,
            shape,
            offset: 0,
            storage: ArrayStorage::Internal,
            inline_mask: None,
            block_mask: None,
        }
    }
}

/// A buffer that arrays lie in (one block when written whole).
#[derive(Debug, Clone)]
pub(super) struct Base<'f> {
    pub(super) data: BaseData<'f>,
    pub(super) compression: Compression,
    /// Data that arrives in chunks at write time (arrays larger than memory).
    pub(super) chunks: Option<Chunks>,
}

/// A tree and its arrays, ready to write.
///
/// Build one from scratch with [`Document::new`] (or [`Document::from_serialize`]),
/// or from a file's tree and arrays with [`Document::from_file`]; set values at paths
/// (`a/b/c`, the mappings on the way made as needed); write it with
/// [`Document::write_to_path`] (through a temporary file and a rename) or
/// [`Document::write`].
///
/// ```
/// use rasdf::block::Compression;
/// use rasdf::write::{Document, WriteOptions};
///
/// #[derive(serde::Serialize)]
/// struct Instrument {
///     name: &'static str,
///     detector: &'static str,
/// }
///
/// let mut doc = Document::new();
/// doc.set("meta/telescope", "JWST")?;
/// doc.set("meta/exposure", 120.5)?;
/// doc.set("meta/frames", u64::MAX)?;
/// doc.set_serialize("meta/instrument", &Instrument { name: "NIRCAM", detector: "NRCA1" })?;
/// // An owned array is moved in (no copy); a view or `&array` is copied.
/// let image = ndarray::Array2::<f32>::from_elem((64, 32), 1.5);
/// doc.set_array("sci/data", image, Compression::Zlib)?;
/// let cube = ndarray::Array3::<u16>::zeros((2, 3, 4));
/// doc.set_array("sci/cube", &cube, Compression::Lz4)?;
/// let path = std::env::temp_dir().join(format!("rasdf-document-{}.asdf", std::process::id()));
/// doc.write_to_path(&path, &WriteOptions::default())?;
///
/// let file = rasdf::AsdfFile::open(&path)?;
/// assert_eq!(file.get("meta/telescope").and_then(|n| n.as_str()), Some("JWST"));
/// assert_eq!(file.node_at("meta/frames")?.deserialize::<u64>().unwrap(), u64::MAX);
/// assert_eq!(file.array("sci/data")?.read::<f32>()?.shape(), [64, 32]);
/// assert_eq!(file.array("sci/cube")?.read::<u16>()?.ndim(), 3);
/// # drop(file);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), rasdf::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Document<'f> {
    /// A file's tree stays borrowed until the document is first changed.
    pub(super) tree: Cow<'f, Tree>,
    pub(super) arrays: HashMap<NodeId, PendingArray>,
    pub(super) bases: Vec<Base<'f>>,
    pub(super) standard: String,
    /// The streamed array: its node, element type and row shape.
    pub(super) stream: Option<(NodeId, ScalarType, Vec<usize>)>,
    /// The real path of the file the document was read from, which no external file of
    /// a write may replace.
    pub(super) read_from: Option<PathBuf>,
    /// What the document's data was read from: checked before a write is put in place.
    pub(super) sources: Vec<&'f dyn Source>,
}

/// What a document's data may be borrowed from: a file read through a memory map, which
/// another process may cut short while the document is written. A write checks each
/// source after the data is written and before the output is put in place, and fails
/// (leaving the old output) when one changed.
pub trait Source: Sync + std::fmt::Debug {
    /// `Ok` unless the source changed under its map since it was opened.
    ///
    /// # Errors
    /// The change, as an I/O error saying from which offset the file was gone.
    fn check_unchanged(&self) -> Result<()>;
}

impl Source for AsdfFile {
    fn check_unchanged(&self) -> Result<()> {
        AsdfFile::check_unchanged(self)
    }
}

impl Source for crate::file::FileBytes {
    fn check_unchanged(&self) -> Result<()> {
        self.check().map_err(Error::from)
    }
}

impl Default for Document<'_> {
    fn default() -> Self {
        Self::new()
    }
}

/// Values [`Document::set`] takes: made with `.into()` from `bool`, the integers
/// (`i8` to `i128`, `u8` to `u128`, `isize`, `usize`), `f32`, `f64`, `&str`, `String`,
/// and `()` (null).
///
/// Integers outside the range an ASDF file may hold as a literal (`i64`, less its
/// lowest two values) are written as `core/integer` (as the reference library writes
/// a Python int that large), and read back as the same integer: through serde
/// ([`NodeRef::deserialize`](crate::tree::NodeRef::deserialize)`::<u64>()`, say) or
/// [`AsdfFile::integer_at`](crate::AsdfFile::integer_at).
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
    /// An integer beyond `i64`.
    BigInt(num_bigint::BigInt),
}

macro_rules! scalar_from {
    ($($t:ty => $v:ident $(as $c:ty)?),*) => {$(
        impl From<$t> for Scalar {
            fn from(x: $t) -> Self { Scalar::$v(x $(as $c)?.into()) }
        }
    )*};
}
scalar_from!(
    bool => Bool, i8 => Int, i16 => Int, i32 => Int, i64 => Int, u8 => Int, u16 => Int, u32 => Int,
    f64 => Float, f32 => Float, String => Str, &str => Str
);

/// Integers that may not fit an `i64`: an `Int` when they do.
macro_rules! scalar_from_wide {
    ($($t:ty),*) => {$(
        impl From<$t> for Scalar {
            fn from(x: $t) -> Self {
                i64::try_from(x).map_or_else(|_| Scalar::BigInt(x.into()), Scalar::Int)
            }
        }
    )*};
}
scalar_from_wide!(u64, usize, isize, i128, u128);

impl From<num_bigint::BigInt> for Scalar {
    fn from(x: num_bigint::BigInt) -> Self {
        i64::try_from(&x).map_or(Scalar::BigInt(x), Scalar::Int)
    }
}

impl From<()> for Scalar {
    fn from((): ()) -> Self {
        Scalar::Null
    }
}

impl<'f> Document<'f> {
    /// An empty document (an empty root mapping).
    pub fn new() -> Self {
        let mut tree = Tree::empty();
        let root = tree.push(asdf_tagged("core/asdf-1.1.0", Value::Map(Vec::new())));
        tree.set_root(root);
        Document {
            tree: Cow::Owned(tree),
            arrays: HashMap::new(),
            bases: Vec::new(),
            standard: "1.6.0".into(),
            stream: None,
            read_from: None,
            sources: Vec::new(),
        }
    }

    /// A document whose root mapping is `value` serialized (a struct's fields, a map's
    /// entries), as [`Document::set_serialize`] with the path `""`.
    ///
    /// # Errors
    /// A value that is not a mapping; as [`Document::set_serialize`].
    pub fn from_serialize<T: serde::Serialize + ?Sized>(value: &T) -> Result<Self> {
        let mut doc = Document::new();
        doc.set_serialize("", value)?;
        Ok(doc)
    }

    /// The ASDF Standard the document is written for: `#ASDF_STANDARD`, and the version
    /// of its root, ndarray and integer tags. 1.6.0 for a new document, the file's for
    /// [`Document::from_file`] (1.6.0 when it states none).
    pub fn standard(&self) -> &str {
        &self.standard
    }

    /// Writes the document for ASDF Standard `standard` (1.0.0 to 1.6.0). Other tags are
    /// written as they are: [`crate::schema::standard_for_tree`] chooses a standard
    /// that fits them.
    ///
    /// # Errors
    /// A standard rasdf does not know.
    pub fn set_standard(&mut self, standard: &str) -> Result<()> {
        match crate::header::KNOWN_STANDARDS.iter().find(|s| **s == standard) {
            Some(s) => {
                self.standard = (*s).to_string();
                Ok(())
            }
            None => Err(usage(format!(
                "ASDF Standard {standard:?}: rasdf writes {}",
                crate::header::KNOWN_STANDARDS.join(", ")
            ))),
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

    fn root_id(&self) -> Result<NodeId> {
        self.tree.root().map(|r| r.id()).ok_or_else(|| usage("the document has no root"))
    }

    /// The mapping at `path`, made (with the mappings above it) when missing.
    fn mapping_at(&mut self, path: &[&str]) -> Result<NodeId> {
        let mut cur = self.root_id()?;
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
    /// on the way. At the path `""` (the root), `value` must be a mapping: its entries
    /// are set in the root mapping (replacing those of the same keys, the others kept).
    ///
    /// # Errors
    /// A path step that is not a mapping; at the root, a value that is not a mapping.
    pub fn set_node(&mut self, path: &str, value: NodeId) -> Result<()> {
        let steps: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let Some((last, parents)) = steps.split_last() else {
            return self.merge_into_root(value);
        };
        let map = self.mapping_at(parents)?;
        let key = self.text(&crate::tree::unescape_step(last));
        self.attach(map, key, value)
    }

    /// Sets the entries of mapping `value` in the root mapping.
    fn merge_into_root(&mut self, value: NodeId) -> Result<()> {
        let Value::Map(pairs) = self.tree.node(value).value().clone() else {
            return Err(usage(
                "the root of a document is a mapping: only a mapping (a struct, a map) can be set at ''",
            ));
        };
        let root = self.root_id()?;
        for (k, v) in pairs {
            self.attach(root, k, v)?;
        }
        Ok(())
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

    /// Sets a scalar at `path` (`a/b/c`; missing mappings are made): a bool, any
    /// integer (`u64::MAX` too, see [`Scalar`]), a float, a string, or `()` for null.
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
            Scalar::BigInt(i) => match i64::try_from(&i) {
                Ok(i) => Value::Int(i),
                Err(_) => Value::BigInt(Box::new(i)),
            },
        };
        let id = self.tree.to_mut().push(node(v));
        self.set_node(path, id)
    }

    /// Sets any serde-serializable value at `path` (structs become mappings, in field
    /// order). At the path `""` a struct or map becomes the root mapping's entries (see
    /// [`Document::set_node`]). [`Ndarray`](super::Ndarray) fields become arrays with
    /// blocks of their own.
    ///
    /// # Errors
    /// A value serde cannot express in YAML (a map with non-scalar keys); at `""`, a
    /// value that is not a mapping.
    pub fn set_serialize<T: serde::Serialize + ?Sized>(&mut self, path: &str, value: &T) -> Result<()> {
        let first = self.tree.len();
        let id = crate::tree::to_node(self.tree.to_mut(), value).map_err(|e| usage(format!("{path}: {e}")))?;
        self.take_serialized_arrays(first).map_err(|e| usage(format!("{path}: {e}")))?;
        self.set_node(path, id)
    }

    /// Turns the arrays serde serialized (nodes from `first` on that
    /// [`Ndarray`](super::Ndarray) made) into ndarray nodes over bases of their own.
    fn take_serialized_arrays(&mut self, first: usize) -> std::result::Result<(), String> {
        let marked: Vec<NodeId> = (first..self.tree.len())
            .filter_map(|i| u32::try_from(i).ok().map(NodeId))
            .filter(|&id| self.tree.node(id).tag() == Some(PENDING_NDARRAY_TAG))
            .collect();
        for id in marked {
            let a = SerializedArray::parse(self.tree.node(id))?;
            let data = self.tree.node(id).key("data").map(|d| d.id()).ok_or("an array without data")?;
            let bytes = self.tree.to_mut().take_binary(data).ok_or("an array whose data is not bytes")?;
            let datatype = Datatype::Scalar(a.datatype);
            let len = a.shape.iter().try_fold(datatype.size(), |n, &d| n.checked_mul(d));
            if len != Some(bytes.len()) {
                return Err(format!("{} bytes for an array of shape {:?} of {datatype}", bytes.len(), a.shape));
            }
            self.bases.push(Base {
                data: BaseData::Bytes(Cow::Owned(bytes)),
                compression: a.compression,
                chunks: None,
            });
            let pending = PendingArray::c_order(self.bases.len() - 1, datatype, ByteOrder::NATIVE, a.shape);
            let tree = self.tree.to_mut();
            tree.set_tag(id, Some(format!("{}{NDARRAY_TAG}", crate::tree::ASDF_TAG_PREFIX)));
            tree.set_value(id, Value::Map(Vec::new()));
            self.arrays.insert(id, pending);
        }
        Ok(())
    }

    /// Sets an array at `path`: an `ndarray` array of any dimension and element type
    /// ([`IntoArrayBytes`]): owned (moved in, no copy, when in C order), a view or a
    /// reference (copied in C order: views are written as what they show).
    ///
    /// # Errors
    /// A path step that is not a mapping.
    pub fn set_array(&mut self, path: &str, array: impl IntoArrayBytes, compression: Compression) -> Result<()> {
        let parts = array.into_parts();
        self.bases.push(Base { data: parts.data, compression, chunks: None });
        let id = self.push_array_node(PendingArray::c_order(
            self.bases.len() - 1,
            Datatype::Scalar(parts.scalar),
            ByteOrder::NATIVE,
            parts.shape,
        ));
        self.set_node(path, id)
    }

    /// An ndarray node (not yet in the tree) for `array`.
    pub(super) fn push_array_node(&mut self, array: PendingArray) -> NodeId {
        let id = self.tree.to_mut().push(asdf_tagged(NDARRAY_TAG, Value::Map(Vec::new())));
        self.arrays.insert(id, array);
        id
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
    ///
    /// # Errors
    /// As [`Document::set_array_bytes`].
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
        self.bases.push(Base { data: BaseData::Bytes(data), compression, chunks: None });
        Ok(self.push_array_node(PendingArray {
            base: self.bases.len() - 1,
            datatype,
            byteorder,
            strides,
            shape,
            offset: 0,
            storage: ArrayStorage::Internal,
            inline_mask: None,
            block_mask: None,
        }))
    }

    /// Masks the array of node `array` (made by [`Document::array_node`] or a path
    /// setter): `mask` (one flag an element, in C order; `true` hides it) is written as a
    /// bool8 array under the node's `mask` key, as the reference writes a
    /// `numpy.ma.MaskedArray`.
    ///
    /// # Errors
    /// A node that is not one of this document's new arrays; a mask whose length is not
    /// the array's.
    pub fn set_array_mask(&mut self, array: NodeId, mask: Vec<bool>) -> Result<()> {
        let pending = self.arrays.get_mut(&array).ok_or_else(|| usage("not an array of this document"))?;
        let n: usize = pending.shape.iter().product();
        if mask.len() != n {
            return Err(usage(format!("a mask of {} flags for an array of {n} elements", mask.len())));
        }
        pending.block_mask = Some(mask);
        Ok(())
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
            sources: vec![file],
        };
        let mut block_base: HashMap<usize, usize> = HashMap::new();
        visit_reachable(file.tree(), |id, _| -> Result<Children> {
            let o = file.tree().node(id);
            if !o.is_asdf_tag("core/ndarray") {
                return Ok(Children::All);
            }
            let a = file.array_at(o).read_dyn().map_err(|e| match path_of(file.tree(), id) {
                Some(path) => e.at_path(&path),
                None => e,
            })?;
            let storage = match a.storage {
                InputStorage::Inline => ArrayStorage::Inline,
                InputStorage::External(_) => ArrayStorage::External,
                // An HDU's data (ASDF-in-FITS) goes to a block of the file written.
                InputStorage::Block(_) | InputStorage::Fits(_) => ArrayStorage::Internal,
            };
            let base = match a.storage {
                InputStorage::Block(b) => match block_base.get(&b) {
                    Some(&base) => base,
                    None => {
                        // A codec rasdf only reads: the nearest it writes.
                        let compression = file.blocks()[b].compression.rewritten_as();
                        let data = BaseData::Bytes(Cow::Borrowed(file.block_data(b)?));
                        doc.bases.push(Base { data, compression, chunks: None });
                        block_base.insert(b, doc.bases.len() - 1);
                        doc.bases.len() - 1
                    }
                },
                _ => {
                    let mut data = try_buffer(Some(a.data().len()), "an array's data")?;
                    data.extend_from_slice(a.data());
                    // An external block keeps its codec, in a file of its own or in this
                    // one (implode), as an internal block does.
                    let compression = match &a.storage {
                        InputStorage::External(uri) => {
                            file.external_compression(uri)?.map_or(Compression::None, Compression::rewritten_as)
                        }
                        _ => Compression::None,
                    };
                    doc.bases.push(Base { data: BaseData::Bytes(Cow::Owned(data)), compression, chunks: None });
                    doc.bases.len() - 1
                }
            };
            let inline_mask = a.inline_mask().map(<[bool]>::to_vec);
            // (A `mask` array of its own stays as it is, written beside.)
            let mask_array = o.key("mask").is_some_and(|m| m.is_asdf_tag("core/ndarray"));
            // A `mask` the reference cannot apply (text) leaves the nulls alone masking.
            let block_mask = match &inline_mask {
                Some(nulls) if !mask_array => file.array_at(o).mask(&a).unwrap_or_else(|_| Some(nulls.clone())),
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
        self.write_staging(&mut Plain(out), main_path, options, &mut externals, None)?;
        self.check_sources()?;
        commit(externals)
    }

    /// Notes that the document's data borrows from `source`: a write fails, leaving its
    /// target as it was, when `source` changed under its map while the data was written
    /// ([`Document::from_file`] notes its file itself).
    pub fn add_source(&mut self, source: &'f dyn Source) {
        self.sources.push(source);
    }

    /// `Ok` unless a source of the document's data changed while it was read.
    fn check_sources(&self) -> Result<()> {
        self.sources.iter().try_for_each(|s| s.check_unchanged())
    }

    /// Writes the document to `path` through a temporary file and a rename.
    ///
    /// # Errors
    /// As [`Document::write`].
    pub fn write_to_path(&self, path: impl AsRef<Path>, options: &WriteOptions) -> Result<()> {
        // Through a symbolic link: the file it leads to, and the block files of external
        // arrays beside that file (named after it), where its `source`s find them.
        let resolved = super::stage::through_links(path.as_ref()).map_err(|e| Error::from(e).in_file(path.as_ref()))?;
        let path = resolved.as_path();
        if self.stream.is_some() {
            return Err(usage("a document with a stream is written with write_streamed"));
        }
        options.check()?;
        // The block files of external arrays are staged with the main file and put in
        // place just before it, once all are written: a failed write replaces none.
        let mut staged = Vec::new();
        let mut old_set = Vec::new();
        let main = self.stage_path_with(path, options, |out| {
            self.write_staging(out, Some(path), options, &mut staged, Some(&mut old_set))
        })?;
        staged.push(main);
        // The data written is the files' only if they did not change meanwhile.
        self.check_sources()?;
        let new_set: Vec<PathBuf> = staged.iter().map(|s| s.target().to_path_buf()).collect();
        commit(staged)?;
        // The block files of the exploded file replaced, now read by nothing.
        for old in old_set.iter().filter(|p| !new_set.contains(p)) {
            let _ = std::fs::remove_file(old);
        }
        Ok(())
    }
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
