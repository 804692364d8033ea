//! The Python module `rasdf._rasdf`: the low-level half of the package `rasdf`.
//!
//! Rust does the work: opening, parsing, building the Python tree, decoding blocks (with
//! the GIL released), turning a Python tree into a document and writing it. The Python
//! half (`python/rasdf/__init__.py`) holds the classes users see (`AsdfFile`, `NDArray`,
//! the tagged types) and the numpy glue, and hands its classes to `File::tree`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use numpy::{PyArray1, PyArrayDescr, PyArrayMethods, npyffi};
use pyo3::exceptions::{PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use rasdf::ndarray::{ByteOrder, Datatype, Field, ScalarType};
use rasdf::tree::{NodeId, NodeRef, Tree};
use rasdf::{AsdfFile, ErrorKind, Limits, OpenOptions};

mod convert;
mod errors;
mod hook;
mod hook_valid;
mod hook_walk;
mod hook_yaml;

use errors::to_pyerr;

/// What an array's numpy view keeps alive: the file its bytes are mapped from or decoded
/// into. A `File` lends its arrays this, not itself, so that `close()` lets the file go
/// while arrays already read stay valid.
#[pyclass(frozen, module = "rasdf._rasdf")]
struct Keep {
    _file: Arc<AsdfFile>,
}

/// An open ASDF file (the Python class `rasdf.AsdfFile` wraps it).
#[pyclass(frozen, module = "rasdf._rasdf")]
struct File {
    inner: Mutex<Option<(Arc<AsdfFile>, Py<Keep>)>>,
    /// The Python objects made of the tree's nodes so far (see `convert::Builder`), so
    /// that parts built by separate calls are the same objects. Taken out by a build
    /// and put back after it (a build runs Python code, so another thread may call in
    /// meanwhile: it then builds objects of its own, and the first build's are kept).
    memo: Mutex<Vec<Option<Py<PyAny>>>>,
    /// The tree with the defaults of extensions' schemas filled in (see
    /// `fill_defaults`), when they added any: what the Python tree is built from.
    filled: Mutex<Option<Arc<Tree>>>,
}

impl File {
    /// Runs `f` with a builder holding the objects built so far, and keeps what it built.
    fn build<'py, 'f, R>(
        &self,
        slf: &Bound<'py, Self>,
        file: &'f AsdfFile,
        tree: &'f Tree,
        classes: &Bound<'py, PyTuple>,
        f: impl FnOnce(&mut convert::Builder<'py, 'f>) -> PyResult<R>,
    ) -> PyResult<R> {
        let memo = std::mem::take(&mut *self.memo.lock().unwrap_or_else(PoisonError::into_inner));
        let mut b = convert::Builder::new(slf.py(), convert::Source::File(file, tree), slf.as_any(), classes, memo)?;
        let out = f(&mut b);
        let mut slot = self.memo.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_empty() {
            *slot = std::mem::take(&mut b.memo);
        }
        out
    }

    /// The file, and its tree with extensions' defaults when there is one.
    fn view(&self) -> PyResult<(Arc<AsdfFile>, Option<Arc<Tree>>)> {
        let (file, _) = self.get()?;
        let filled = self.filled.lock().unwrap_or_else(PoisonError::into_inner).clone();
        Ok((file, filled))
    }

    /// A `File` holding `file`.
    fn new(py: Python<'_>, file: AsdfFile) -> PyResult<File> {
        let file = Arc::new(file);
        let keep = Py::new(py, Keep { _file: Arc::clone(&file) })?;
        Ok(File { inner: Mutex::new(Some((file, keep))), memo: Mutex::new(Vec::new()), filled: Mutex::new(None) })
    }

    fn get(&self) -> PyResult<(Arc<AsdfFile>, Py<Keep>)> {
        let guard = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        match &*guard {
            Some((f, k)) => Python::attach(|py| Ok((Arc::clone(f), k.clone_ref(py)))),
            None => Err(errors::closed()),
        }
    }
}

/// The default limits, with those given changed.
fn limits_of(
    max_tree_bytes: Option<u64>,
    max_nodes: Option<usize>,
    max_block_bytes: Option<u64>,
    max_array_elements: Option<u64>,
    max_inline_bytes: Option<u64>,
) -> Limits {
    let mut limits = Limits::default();
    if let Some(v) = max_tree_bytes {
        limits.max_tree_bytes = v;
    }
    if let Some(v) = max_nodes {
        limits.max_nodes = v;
    }
    if let Some(v) = max_block_bytes {
        limits.max_block_bytes = v;
    }
    if let Some(v) = max_array_elements {
        limits.max_array_elements = v;
    }
    if let Some(v) = max_inline_bytes {
        limits.max_inline_bytes = v;
    }
    limits
}

/// `e`, naming `file` when it names no file.
fn located(e: rasdf::Error, file: &AsdfFile) -> rasdf::Error {
    if e.location().file.is_some() { e } else { e.in_file_opt(file.path()) }
}

/// The node of `id` in `file`'s tree.
fn node_of(file: &AsdfFile, id: u32) -> PyResult<NodeRef<'_>> {
    if (id as usize) < file.tree().len() {
        Ok(file.tree().node(NodeId(id)))
    } else {
        Err(PyValueError::new_err(format!("no node {id} in the tree")))
    }
}

/// The numpy dtype (as `numpy.dtype` takes it: a string, or a list of fields) of
/// `datatype` in `order`.
fn dtype_spec<'py>(py: Python<'py>, datatype: &Datatype, order: ByteOrder) -> PyResult<Bound<'py, PyAny>> {
    let o = match order {
        ByteOrder::Big => '>',
        ByteOrder::Little => '<',
    };
    Ok(match datatype {
        Datatype::Scalar(s) => {
            let (code, size) = match s {
                ScalarType::Int8 => ("i", 1),
                ScalarType::Int16 => ("i", 2),
                ScalarType::Int32 => ("i", 4),
                ScalarType::Int64 => ("i", 8),
                ScalarType::UInt8 => ("u", 1),
                ScalarType::UInt16 => ("u", 2),
                ScalarType::UInt32 => ("u", 4),
                ScalarType::UInt64 => ("u", 8),
                ScalarType::Float16 => ("f", 2),
                ScalarType::Float32 => ("f", 4),
                ScalarType::Float64 => ("f", 8),
                ScalarType::Complex64 => ("c", 8),
                ScalarType::Complex128 => ("c", 16),
                ScalarType::Bool8 => ("b", 1),
            };
            let o = if size == 1 { '|' } else { o };
            PyString::new(py, &format!("{o}{code}{size}")).into_any()
        }
        Datatype::Ascii(n) => PyString::new(py, &format!("|S{n}")).into_any(),
        Datatype::Ucs4(n) => PyString::new(py, &format!("{o}U{n}")).into_any(),
        Datatype::Record(fields) => {
            let list = PyList::empty(py);
            for (i, f) in fields.iter().enumerate() {
                let name = f.numpy_name(i);
                let sub = dtype_spec(py, &f.datatype, f.byteorder)?;
                if f.shape.is_empty() {
                    list.append((name.as_ref(), sub))?;
                } else {
                    list.append((name.as_ref(), sub, PyTuple::new(py, &f.shape)?))?;
                }
            }
            list.into_any()
        }
    })
}

/// The datatype and byte order of a dtype description made by the Python half
/// (`rasdf._dtype_spec`): `("scalar", name, order)`, `("ascii", n)`, `("ucs4", n, order)`
/// or `("record", [(name, spec, shape), ...], order)`.
fn datatype_of(spec: &Bound<'_, PyAny>) -> PyResult<(Datatype, ByteOrder)> {
    let order = |o: &str| match o {
        "big" => ByteOrder::Big,
        "little" => ByteOrder::Little,
        _ => ByteOrder::NATIVE,
    };
    let kind: String = spec.get_item(0)?.extract()?;
    Ok(match kind.as_str() {
        "scalar" => {
            let name: String = spec.get_item(1)?.extract()?;
            let s = ScalarType::from_name(&name)
                .ok_or_else(|| PyTypeError::new_err(format!("ASDF has no datatype {name}")))?;
            (Datatype::Scalar(s), order(&spec.get_item(2)?.extract::<String>()?))
        }
        "ascii" => (Datatype::Ascii(spec.get_item(1)?.extract()?), ByteOrder::NATIVE),
        "ucs4" => (Datatype::Ucs4(spec.get_item(1)?.extract()?), order(&spec.get_item(2)?.extract::<String>()?)),
        "record" => {
            let mut fields = Vec::new();
            for f in spec.get_item(1)?.try_iter()? {
                let f = f?;
                let name: Option<String> = f.get_item(0)?.extract()?;
                let (datatype, byteorder) = datatype_of(&f.get_item(1)?)?;
                let shape: Vec<usize> = f.get_item(2)?.extract()?;
                fields.push(Field { name, datatype, byteorder, shape });
            }
            (Datatype::Record(fields), order(&spec.get_item(2)?.extract::<String>()?))
        }
        other => return Err(PyTypeError::new_err(format!("unknown dtype description {other}"))),
    })
}

/// Where an array read with the GIL released found its bytes.
enum Bytes {
    /// Inside the file (mapped, or a decoded block in its cache): the address.
    Lent(usize),
    /// Made for this read (inline data).
    Owned(Vec<u8>),
}

struct Read {
    bytes: Bytes,
    datatype: Datatype,
    byteorder: ByteOrder,
    shape: Vec<usize>,
    strides: Vec<isize>,
    offset: usize,
    mask: Option<Vec<bool>>,
}

#[pymethods]
impl File {
    /// Opens `path`. Keyword arguments as `rasdf.open`; `None` keeps a limit's default
    /// (and the remote timeout's, 60 s).
    #[staticmethod]
    #[pyo3(signature = (path, verify_checksums=false, max_tree_bytes=None, max_nodes=None, max_block_bytes=None, max_array_elements=None, max_inline_bytes=None, timeout=None, memmap=false))]
    #[allow(clippy::too_many_arguments)]
    fn open(
        py: Python<'_>,
        path: PathBuf,
        verify_checksums: bool,
        max_tree_bytes: Option<u64>,
        max_nodes: Option<usize>,
        max_block_bytes: Option<u64>,
        max_array_elements: Option<u64>,
        max_inline_bytes: Option<u64>,
        timeout: Option<f64>,
        memmap: bool,
    ) -> PyResult<File> {
        crate::errors::guarded(py, || {
            let limits = limits_of(max_tree_bytes, max_nodes, max_block_bytes, max_array_elements, max_inline_bytes);
            let mut remote = rasdf::remote::RemoteOptions::from_env();
            if let Some(t) = timeout {
                // Seconds above 0 (as Python's socket timeouts; 0 and None mean other
                // things there, so neither is taken as "no limit").
                let t = Some(t)
                    .filter(|t| *t > 0.0)
                    .and_then(|t| std::time::Duration::try_from_secs_f64(t).ok())
                    .ok_or_else(|| PyValueError::new_err(format!("timeout={t}: a number of seconds above 0")))?;
                remote = remote.timeout(t);
            }
            let options =
                OpenOptions::new().verify_checksums(verify_checksums).limits(limits).remote(remote).memmap(memmap);
            // A path, or an http(s):// or s3:// URL.
            let file = py.detach(|| options.open_any(&path)).map_err(|e| to_pyerr(py, e))?;
            File::new(py, file)
        })
    }

    /// Reads a file from `data`, the bytes of a whole ASDF file (or of a FITS file holding
    /// one); arguments as `open`. The file has no path: external blocks are not found.
    #[staticmethod]
    #[pyo3(signature = (data, verify_checksums=false, max_tree_bytes=None, max_nodes=None, max_block_bytes=None, max_array_elements=None, max_inline_bytes=None))]
    #[allow(clippy::too_many_arguments)]
    fn from_bytes(
        py: Python<'_>,
        data: Vec<u8>,
        verify_checksums: bool,
        max_tree_bytes: Option<u64>,
        max_nodes: Option<usize>,
        max_block_bytes: Option<u64>,
        max_array_elements: Option<u64>,
        max_inline_bytes: Option<u64>,
    ) -> PyResult<File> {
        crate::errors::guarded(py, || {
            let limits = limits_of(max_tree_bytes, max_nodes, max_block_bytes, max_array_elements, max_inline_bytes);
            let options = OpenOptions::new().verify_checksums(verify_checksums).limits(limits);
            let file = py.detach(|| options.from_bytes(data)).map_err(|e| to_pyerr(py, e))?;
            File::new(py, file)
        })
    }

    /// The length in bytes of a remote file (as its server gave it when it was opened),
    /// `None` for a local file: part of what tells one version of a URL from another.
    #[getter]
    fn remote_length(&self) -> PyResult<Option<u64>> {
        Ok(self.get()?.0.remote().map(rasdf::remote::Remote::len))
    }

    /// Lets the file go: arrays read already stay valid; lazy arrays not yet read, and
    /// this object, refuse to read.
    fn close(&self) {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).take();
        self.memo.lock().unwrap_or_else(PoisonError::into_inner).clear();
        self.filled.lock().unwrap_or_else(PoisonError::into_inner).take();
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).is_none()
    }

    /// The file's path, or its URL (a `str`) for a remote file.
    #[getter]
    fn path<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let (file, _) = self.get()?;
        if let Some(url) = file.url() {
            return Ok(Some(PyString::new(py, url).into_any()));
        }
        file.path().map(|p| p.to_path_buf().into_pyobject(py).map(Bound::into_any)).transpose()
    }

    /// The ASDF Standard version the file declares.
    #[getter]
    fn standard(&self) -> PyResult<String> {
        Ok(self.get()?.0.header().standard().to_string())
    }

    /// Whether the defaults of extensions' schemas may add to the tree: a file of
    /// standard 1.5.0 or older holding a tag its standard does not list.
    #[getter]
    fn may_fill_defaults(&self) -> PyResult<bool> {
        let (file, _) = self.get()?;
        let standard = file.header().standard();
        Ok(standard != "1.6.0"
            && rasdf::header::KNOWN_STANDARDS.contains(&standard)
            && !rasdf::schema::tags_without_schema(file.tree(), Some(standard)).is_empty())
    }

    /// Fills into (a copy of) the tree the defaults of the schemas of `schemas`' tags,
    /// as the reference fills them with those extensions installed; the Python tree is
    /// built from it. Called before any part of the tree is built. Returns how many
    /// values were added.
    fn fill_defaults(&self, py: Python<'_>, schemas: &Bound<'_, Schemas>) -> PyResult<usize> {
        let (file, _) = self.get()?;
        let schemas = Arc::clone(&schemas.get().0);
        let (tree, added) = py.detach(|| {
            let mut tree = file.tree().clone();
            let added = rasdf::schema::fill_defaults_with(&mut tree, file.header().standard(), &schemas);
            (tree, added)
        });
        if added > 0 {
            *self.filled.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(tree));
            self.memo.lock().unwrap_or_else(PoisonError::into_inner).clear();
        }
        Ok(added)
    }

    /// The tree as Python objects.
    ///
    /// `classes` is `(dict, list, str, array, tag_attribute, convert, timestamp)`: the
    /// classes of tagged mappings, sequences and strings (set `tag_attribute` on each),
    /// the lazy array class (`None`: ndarray nodes stay tagged mappings), whether
    /// `core/complex` and `core/integer` become `complex` and `int`, and a function
    /// making a `datetime` or `date` from `(year, month, day, hour, minute, second,
    /// microsecond, offset_minutes)` (time parts `None` for a date). Every call must
    /// pass the same classes: nodes built once are given again.
    fn tree<'py>(slf: &Bound<'py, Self>, classes: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyAny>> {
        crate::errors::guarded(slf.py(), || {
            let py = slf.py();
            let (file, filled) = slf.get().view()?;
            let tree = filled.as_deref().unwrap_or(file.tree());
            match tree.root() {
                Some(r) => slf.get().build(slf, &file, tree, classes, |b| b.build(r, 0)),
                // No tree: the reference's empty tree.
                None => Ok(PyDict::new(py).into_any()),
            }
        })
    }

    /// The Python object of the node at `path` (see `tree`), or `None` when there is
    /// none; only that part of the tree is built.
    fn node<'py>(
        slf: &Bound<'py, Self>,
        path: &str,
        classes: &Bound<'py, PyTuple>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        crate::errors::guarded(slf.py(), || {
            let (file, filled) = slf.get().view()?;
            let tree = filled.as_deref().unwrap_or(file.tree());
            match tree.get(path) {
                Some(n) => slf.get().build(slf, &file, tree, classes, |b| b.build(n, 0)).map(Some),
                None => Ok(None),
            }
        })
    }

    /// `(path, lazy array)` of every ndarray node, in tree order (see `tree`); only the
    /// arrays are built.
    fn arrays<'py>(
        slf: &Bound<'py, Self>,
        classes: &Bound<'py, PyTuple>,
    ) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
        crate::errors::guarded(slf.py(), || {
            let (file, filled) = slf.get().view()?;
            let tree = filled.as_deref().unwrap_or(file.tree());
            // (The filled tree holds the file's nodes under the same numbers.)
            let nodes: Vec<(String, NodeId)> =
                file.arrays().map(|a| (a.path().unwrap_or_default().to_string(), a.node().id())).collect();
            slf.get().build(slf, &file, tree, classes, |b| {
                nodes.into_iter().map(|(path, id)| Ok((path, b.build(tree.node(id), 0)?))).collect()
            })
        })
    }

    /// Reads the array of node `id`: `(array, mask)`, where `array` is a read-only numpy
    /// array over the data (the file's own bytes, mapped or decoded, with no copy; or
    /// bytes made for inline data) and `mask` the flags of inline `null`s (or `None`).
    /// Blocks decode with the GIL released.
    fn read_array<'py>(&self, py: Python<'py>, id: u32) -> PyResult<(Bound<'py, PyAny>, Option<Bound<'py, PyAny>>)> {
        crate::errors::guarded(py, || {
            let (file, keep) = self.get()?;
            node_of(&file, id)?;
            let read = py
                .detach(|| -> rasdf::Result<Read> {
                    let node = file.tree().node(NodeId(id));
                    let a = file.array_at(node).read_dyn()?;
                    let mask = a.inline_mask().map(<[bool]>::to_vec);
                    let (datatype, byteorder, shape, strides, offset) =
                        (a.datatype.clone(), a.byteorder, a.shape.clone(), a.strides.clone(), a.offset);
                    let bytes = match a.into_data() {
                        Cow::Borrowed(b) => {
                            // Touch the data's first and last bytes, so that a file cut short
                            // since it was opened is found now (by the check below) rather than
                            // by the caller reading zeros.
                            if let (Some(first), Some(last)) = (b.first(), b.last()) {
                                // SAFETY: both are references into `b`.
                                unsafe {
                                    std::ptr::read_volatile(first);
                                    std::ptr::read_volatile(last);
                                }
                            }
                            Bytes::Lent(b.as_ptr() as usize)
                        }
                        Cow::Owned(v) => Bytes::Owned(v),
                    };
                    file.check_unchanged()?;
                    Ok(Read { bytes, datatype, byteorder, shape, strides, offset, mask })
                })
                .map_err(|e| to_pyerr(py, located(e, &file)))?;
            let descr = PyArrayDescr::new(py, dtype_spec(py, &read.datatype, read.byteorder)?)?;
            let (ptr, base) = match read.bytes {
                Bytes::Lent(ptr) => (ptr as *mut u8, keep.into_bound(py).into_any()),
                Bytes::Owned(v) => {
                    let owner = PyArray1::from_vec(py, v);
                    (owner.data(), owner.into_any())
                }
            };
            let mut dims: Vec<npyffi::npy_intp> = read.shape.iter().map(|&d| d as npyffi::npy_intp).collect();
            let mut strides: Vec<npyffi::npy_intp> = read.strides.iter().map(|&s| s as npyffi::npy_intp).collect();
            let nd = std::ffi::c_int::try_from(dims.len()).map_err(|_| PyValueError::new_err("too many dimensions"))?;
            // SAFETY: rasdf checked the layout (shape, strides, offset) against the data's
            // length (`NdArray::new`), so every element lies inside the bytes `base` keeps
            // alive; the array is made read-only (no WRITEABLE flag), and numpy works out
            // contiguity and alignment itself. `descr` and `base` are references handed over
            // (NewFromDescr steals the descriptor, SetBaseObject the base).
            let array = unsafe {
                let data = ptr.add(read.offset).cast::<std::ffi::c_void>();
                let raw = npyffi::PY_ARRAY_API.PyArray_NewFromDescr(
                    py,
                    npyffi::get_type_object(py, npyffi::NpyTypes::PyArray_Type),
                    descr.into_ptr().cast(),
                    nd,
                    dims.as_mut_ptr(),
                    strides.as_mut_ptr(),
                    data,
                    0,
                    std::ptr::null_mut(),
                );
                let array = Bound::from_owned_ptr_or_err(py, raw)?;
                if npyffi::PY_ARRAY_API.PyArray_SetBaseObject(py, array.as_ptr().cast(), base.into_ptr()) != 0 {
                    return Err(PyErr::fetch(py));
                }
                array
            };
            let mask = read.mask.map(|m| PyArray1::from_vec(py, m).into_any());
            Ok((array, mask))
        })
    }

    /// The shape and dtype of the array of node `id`, with no block decoded (a
    /// streamed array's rows counted from its block's size).
    fn array_meta<'py>(&self, py: Python<'py>, id: u32) -> PyResult<(Vec<usize>, Bound<'py, PyAny>)> {
        crate::errors::guarded(py, || {
            let (file, _) = self.get()?;
            let node = node_of(&file, id)?;
            let (datatype, order, shape) = file.array_at(node).meta().map_err(|e| to_pyerr(py, located(e, &file)))?;
            Ok((shape, dtype_spec(py, &datatype, order)?))
        })
    }

    /// Where the array of node `id` is stored: `(block number or None, compression name
    /// or None)`; `(None, None)` for inline data and external files.
    fn array_storage(&self, py: Python<'_>, id: u32) -> PyResult<(Option<usize>, Option<String>)> {
        let (file, _) = self.get()?;
        let node = node_of(&file, id)?;
        let block = file.array_at(node).block().map_err(|e| to_pyerr(py, located(e, &file)))?;
        let compression = block
            .and_then(|n| file.blocks().get(n))
            .map(|h| h.compression)
            .filter(|c| *c != rasdf::block::Compression::None)
            .map(|c| c.to_string());
        Ok((block, compression))
    }

    /// Whether the file was opened from a URL.
    #[getter]
    fn remote(&self) -> PyResult<bool> {
        Ok(self.get()?.0.is_remote())
    }

    /// Rows `start..stop` of the array of node `id`, read alone (an lz4 block's records
    /// that hold them, a remote uncompressed block's byte range): `(bytes in the file's
    /// byte order, shape)`, or `None` when the whole array is to be read (see
    /// `ArrayRef::rows`). The read runs with the GIL released.
    fn read_rows<'py>(
        &self,
        py: Python<'py>,
        id: u32,
        start: usize,
        stop: usize,
    ) -> PyResult<Option<(Bound<'py, PyBytes>, Vec<usize>)>> {
        crate::errors::guarded(py, || {
            let (file, _) = self.get()?;
            node_of(&file, id)?;
            let got = py
                .detach(|| file.array_at(file.tree().node(NodeId(id))).rows(start..stop))
                .map_err(|e| to_pyerr(py, located(e, &file)))?;
            Ok(got.map(|(bytes, shape)| (PyBytes::new(py, &bytes), shape)))
        })
    }

    /// The tree path (`/sci/data`) at which node `id` is first reached, or `None`.
    fn node_path(&self, id: u32) -> PyResult<Option<String>> {
        let (file, _) = self.get()?;
        node_of(&file, id)?;
        let mut found = None;
        file.tree().walk(|path, node| {
            if found.is_none() && node.id() == NodeId(id) {
                found = Some(path.to_string());
            }
        });
        Ok(found)
    }

    /// How `rasdf info` describes the array of node `id`: `shape=(64, 64), dtype=float32,
    /// block 0 (zlib)` (or why it is invalid).
    fn array_text(&self, id: u32) -> PyResult<String> {
        let (file, _) = self.get()?;
        let node = node_of(&file, id)?;
        Ok(rasdf_info::array_text(&file, node))
    }

    /// The text `rasdf info` prints (with `stats`, `rasdf info --stats`).
    #[pyo3(signature = (max_rows=None, max_cols=None, show_values=true, stats=false, show_blocks=false))]
    fn info(
        &self,
        py: Python<'_>,
        max_rows: Option<usize>,
        max_cols: Option<usize>,
        show_values: bool,
        stats: bool,
        show_blocks: bool,
    ) -> PyResult<String> {
        crate::errors::guarded(py, || {
            let (file, _) = self.get()?;
            let options = rasdf_info::InfoOptions::default()
                .max_rows(max_rows)
                .max_cols(max_cols)
                .show_values(show_values)
                .show_blocks(show_blocks)
                .stats(stats);
            let out = py
                .detach(|| {
                    let mut out = Vec::new();
                    rasdf_info::report(&file, &options, &mut out).map(|_| out)
                })
                .map_err(|e| PyOSError::new_err(e.to_string()))?;
            Ok(String::from_utf8_lossy(&out).into_owned())
        })
    }

    /// Checks the tree against the standard's schemas, and the extensions' of `schemas`:
    /// `AsdfError` listing what failed (its `path` the first failure's).
    #[pyo3(signature = (schemas=None))]
    fn validate(&self, py: Python<'_>, schemas: Option<&Bound<'_, Schemas>>) -> PyResult<()> {
        crate::errors::guarded(py, || {
            let (file, _) = self.get()?;
            let schemas = schemas.map(|s| Arc::clone(&s.get().0));
            let errors = py.detach(|| {
                let standard = file.header().standard();
                match &schemas {
                    // As the reference validates: the tree with the defaults of the
                    // schemas it validates with filled in (standards up to 1.5.0).
                    Some(s) => {
                        let mut tree = file.tree().clone();
                        rasdf::schema::fill_defaults_with(&mut tree, standard, s);
                        rasdf::schema::validate_with(&tree, Some(standard), s)
                    }
                    None => rasdf::schema::validate(file.tree(), Some(standard)),
                }
            });
            let Some(first) = errors.first() else { return Ok(()) };
            let shown: Vec<String> = errors.iter().take(20).map(ToString::to_string).collect();
            let more = if errors.len() > 20 { format!("\n... and {} more", errors.len() - 20) } else { String::new() };
            // A check that cannot be made (a pattern that does not compile...) is no pass.
            let unchecked = errors.iter().filter(|e| e.kind == rasdf::schema::SchemaErrorKind::CannotCheck).count();
            let invalid = errors.len() - unchecked;
            let head = match (invalid, unchecked) {
                (_, 0) => format!("{invalid} schema error(s)"),
                (0, _) => format!("{unchecked} schema check(s) that cannot be made: the tree is not known to be valid"),
                _ => format!("{invalid} schema error(s) and {unchecked} check(s) that cannot be made"),
            };
            let message = format!("{head}:\n{}{more}", shown.join("\n"));
            let path = if first.path.is_empty() { "/".to_string() } else { first.path.clone() };
            let location = rasdf::Location { path: Some(path), ..rasdf::Location::default() };
            Err(to_pyerr(py, located(rasdf::Error::new(ErrorKind::Usage(message), location), &file)))
        })
    }

    /// Verifies every block's checksum: `AsdfError` for the first block that fails.
    fn verify_checksums(&self, py: Python<'_>) -> PyResult<()> {
        crate::errors::guarded(py, || {
            let (file, _) = self.get()?;
            let results = py.detach(|| file.verify_blocks());
            for (n, r) in results.into_iter().enumerate() {
                if let Err(e) = r {
                    let e = if e.location().block.is_some() { e } else { e.with_block(n) };
                    return Err(to_pyerr(py, located(e, &file)));
                }
            }
            Ok(())
        })
    }

    /// Block headers: `(compression, allocated, used, data size)` each.
    fn blocks(&self) -> PyResult<Vec<(String, u64, u64, u64)>> {
        let (file, _) = self.get()?;
        Ok(file
            .blocks()
            .iter()
            .map(|b| (b.compression.to_string(), b.allocated_size, b.used_size, b.data_size))
            .collect())
    }

    /// Checks that the file was not cut short or changed under its map since it was
    /// opened (views already lent read zeros where the file vanished).
    fn check_unchanged(&self, py: Python<'_>) -> PyResult<()> {
        let (file, _) = self.get()?;
        file.check_unchanged().map_err(|e| to_pyerr(py, located(e, &file)))
    }
}

/// Extension schemas (`rasdf::schema::Schemas`): the documents of folders laid out as
/// the Python packages ship their resources, documents given as `(uri, text)` pairs and
/// extensions given as `(requirement, [(tag, [schema_uri, ...]), ...])`.
#[pyclass(frozen, module = "rasdf._rasdf")]
struct Schemas(Arc<rasdf::schema::Schemas>);

#[pymethods]
impl Schemas {
    /// `skip_unparsable`: a document given that does not parse (as far as adding it
    /// parses it: see `Schemas` of the library) is left out, else it is an `AsdfError`,
    /// as is a folder's file that does not.
    #[new]
    #[pyo3(signature = (dirs=Vec::new(), documents=Vec::new(), extensions=Vec::new(), skip_unparsable=false))]
    #[allow(clippy::type_complexity)]
    fn new(
        py: Python<'_>,
        dirs: Vec<PathBuf>,
        documents: Vec<(String, String)>,
        extensions: Vec<(Option<String>, Vec<(String, Vec<String>)>)>,
        skip_unparsable: bool,
    ) -> PyResult<Self> {
        let built = py.detach(|| -> Result<rasdf::schema::Schemas, rasdf::Error> {
            let mut s = rasdf::schema::Schemas::new();
            for dir in &dirs {
                s.add_dir(dir)?;
            }
            if skip_unparsable {
                for (uri, text) in &documents {
                    // A text that does not parse (and is not parsed later): left out.
                    let _ = s.add_document(uri, text);
                }
            } else {
                s.add_documents(documents)?;
            }
            for (requirement, tags) in extensions {
                s.add_extension(requirement.as_deref(), tags)?;
            }
            Ok(s)
        });
        built.map(|s| Schemas(Arc::new(s))).map_err(|e| to_pyerr(py, e))
    }

    /// How many documents there are.
    #[getter]
    fn documents(&self) -> usize {
        self.0.documents()
    }

    /// How many extensions (manifests) there are.
    #[getter]
    fn extensions(&self) -> usize {
        self.0.extensions()
    }
}

/// Writes `tree` (see `rasdf.write`) to `path`, atomically; with `path` `None`, gives the
/// file's bytes instead.
///
/// `prepare(array)` gives an array's bytes (see `convert::Writer`); `convert(obj)` what
/// asdf's converters make of an object (or `None`); `finish()` the root's `history` to
/// write instead of the tree's (or `None`), once the tree is made; `standard` the ASDF
/// Standard to prefer (the source file's); `schemas()` the extensions' tag definitions
/// (`Schemas`, or `None`), asked for only when the tree holds a tag no standard lists,
/// to choose the standard that fits the tags. `compression`: `None` keeps each array's
/// own codec (none for new arrays); a name sets every array's.
#[pyfunction]
#[pyo3(signature = (path, tree, prepare, convert=None, finish=None, standard=None, schemas=None, compression=None, compression_map=None, compression_level=None, include_index=true, checksums=true))]
#[allow(clippy::too_many_arguments)]
fn write(
    py: Python<'_>,
    path: Option<PathBuf>,
    tree: &Bound<'_, PyAny>,
    prepare: &Bound<'_, PyAny>,
    convert: Option<&Bound<'_, PyAny>>,
    finish: Option<&Bound<'_, PyAny>>,
    standard: Option<String>,
    schemas: Option<&Bound<'_, PyAny>>,
    compression: Option<&str>,
    compression_map: Option<HashMap<String, Option<String>>>,
    compression_level: Option<i64>,
    include_index: bool,
    checksums: bool,
) -> PyResult<Option<Py<PyBytes>>> {
    crate::errors::guarded(py, || {
        // As `write_to_path` refuses a level out of range (`WriteOptions::check` is the
        // library's own), before anything is made.
        let compression_level = match compression_level {
            Some(level) if !(1..=9).contains(&level) => {
                let message = format!("compression level {level}: zlib, bzp2, zstd and blsc take levels 1 to 9");
                return Err(to_pyerr(py, rasdf::Error::new(ErrorKind::Usage(message), rasdf::Location::default())));
            }
            level => level.and_then(|l| u32::try_from(l).ok()),
        };
        let default = compression.map(|c| convert::compression(Some(c))).transpose()?;
        let mut per_path = HashMap::new();
        for (k, v) in compression_map.unwrap_or_default() {
            per_path.insert(k.trim_matches('/').to_string(), convert::compression(v.as_deref())?);
        }
        let mut keep = Vec::new();
        let mut w = convert::Writer::new(py, prepare, convert, default, per_path, &mut keep)?;
        w.fill(tree)?;
        let unused = w.unused_compression_paths();
        if !unused.is_empty() {
            let listed: Vec<String> = unused.iter().map(|p| format!("/{p}")).collect();
            return Err(PyValueError::new_err(format!(
                "compression names {} where the tree holds no array",
                listed.join(", ")
            )));
        }
        if let Some(finish) = finish.filter(|f| !f.is_none()) {
            let history = finish.call0()?;
            if !history.is_none() {
                w.set_root_key("history", &history)?;
            }
        }
        // The source file's standard (its tags, and the objects converted for it, are
        // read there as they were), else the one whose manifests (and enabled
        // extensions) list the tags written.
        let chosen = if let Some(s) = standard.as_deref().filter(|s| rasdf::header::KNOWN_STANDARDS.contains(s)) {
            s
        } else {
            let tree = w.doc_mut().tree();
            let core = rasdf::schema::Schemas::new();
            // Only for a tag no standard lists (an extension's), the extensions' tags.
            let mut unlisted: Option<std::collections::HashSet<String>> = None;
            for standard in rasdf::header::KNOWN_STANDARDS {
                let lacking = rasdf::schema::tags_without_schema(tree, Some(standard)).into_iter().map(|(t, _)| t);
                unlisted = Some(match unlisted {
                    None => lacking.collect(),
                    Some(before) => lacking.filter(|t| before.contains(t)).collect(),
                });
            }
            let needs_extensions = unlisted.is_some_and(|u| !u.is_empty());
            let extensions = match schemas.filter(|s| !s.is_none()) {
                Some(get) if needs_extensions => {
                    let got = get.call0()?;
                    if got.is_none() { None } else { Some(Arc::clone(&got.cast::<Schemas>()?.get().0)) }
                }
                _ => None,
            };
            rasdf::schema::standard_for_tree(tree, None, extensions.as_deref().unwrap_or(&core))
        };
        w.doc_mut().set_standard(chosen).map_err(|e| to_pyerr(py, e))?;
        let doc = w.finish();
        let options = rasdf::write::WriteOptions::default()
            .compression_level(compression_level)
            .include_index(include_index)
            .checksums(checksums);
        let out = match path {
            Some(path) => {
                py.detach(|| doc.write_to_path(&path, &options)).map_err(|e| to_pyerr(py, e))?;
                None
            }
            None => {
                let mut out = std::io::Cursor::new(Vec::new());
                py.detach(|| doc.write(&mut out, None, &options)).map_err(|e| to_pyerr(py, e))?;
                Some(PyBytes::new(py, out.get_ref()).unbind())
            }
        };
        drop(keep);
        Ok(out)
    })
}

/// The Python object of the YAML document `text` (a tree's text: `%YAML 1.1` to `...`),
/// made with `classes` (see `File::tree`; arrays are not made), or `None` for an empty
/// document. An error (`AsdfError`) says where the text does not parse or is refused,
/// and also when it holds more than one document.
#[pyfunction]
#[pyo3(signature = (text, classes, max_nodes=None, max_depth=None))]
fn load_yaml<'py>(
    py: Python<'py>,
    text: &[u8],
    classes: &Bound<'py, PyTuple>,
    max_nodes: Option<usize>,
    max_depth: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    crate::errors::guarded(py, || {
        let mut limits = Limits::default();
        if let Some(n) = max_nodes {
            limits.max_nodes = n;
        }
        if let Some(d) = max_depth {
            limits.max_depth = d;
        }
        let text =
            std::str::from_utf8(text).map_err(|e| errors::at_path(py, format!("the tree is not UTF-8: {e}"), ""))?;
        let tree = py.detach(|| rasdf::tree::Tree::parse(text, &limits)).map_err(|(err, pos)| {
            let at = pos.map(|(l, c)| format!(" (line {l}, column {c})")).unwrap_or_default();
            errors::at_path(py, format!("{err}{at}"), "")
        })?;
        let Some(root) = tree.root() else { return Ok(py.None().into_bound(py)) };
        let mut b = convert::Builder::new(
            py,
            convert::Source::Text(&tree, limits.max_depth),
            &py.None().into_bound(py),
            classes,
            Vec::new(),
        )?;
        b.build(root, 0)
    })
}

/// The module.
#[pymodule]
fn _rasdf(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<File>()?;
    m.add_class::<Keep>()?;
    m.add_class::<Schemas>()?;
    m.add_class::<hook_walk::Walker>()?;
    m.add_function(wrap_pyfunction!(write, m)?)?;
    m.add_function(wrap_pyfunction!(load_yaml, m)?)?;
    m.add_function(wrap_pyfunction!(hook::hook_decode, m)?)?;
    m.add_function(wrap_pyfunction!(hook::hook_encode, m)?)?;
    m.add_function(wrap_pyfunction!(hook_yaml::hook_dump, m)?)?;
    m.add_function(wrap_pyfunction!(hook_valid::hook_validate, m)?)?;
    m.add("AsdfError", m.py().get_type::<errors::AsdfError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
