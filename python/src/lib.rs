//! The Python module `rasdf._rasdf`: the low-level half of the package `rasdf`.
//!
//! Rust does the work: opening, parsing, building the Python tree, decoding blocks (with
//! the GIL released), turning a Python tree into a document and writing it. The Python
//! half (`python/rasdf/__init__.py`) holds the classes users see (`AsdfFile`, `NDArray`,
//! the tagged types) and the numpy glue, and hands its classes to [`File::tree`].

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use numpy::PyArray1;
use numpy::ndarray::ArrayView1;
use pyo3::exceptions::{PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use rasdf::ndarray::{ByteOrder, Datatype, Field, ScalarType};
use rasdf::tree::{NodeId, NodeRef};
use rasdf::{AsdfFile, Limits, OpenOptions};

mod convert;
mod errors;

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
}

impl File {
    fn get(&self) -> PyResult<(Arc<AsdfFile>, Py<Keep>)> {
        let guard = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        match &*guard {
            Some((f, k)) => Python::attach(|py| Ok((Arc::clone(f), k.clone_ref(py)))),
            None => Err(errors::closed()),
        }
    }
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
    /// Inside the file (mapped, or a decoded block in its cache): address and length.
    Lent(usize, usize),
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
    /// Opens `path`. Keyword arguments as `rasdf.open`; `None` keeps a limit's default.
    #[staticmethod]
    #[pyo3(signature = (path, verify_checksums=false, max_tree_bytes=None, max_nodes=None, max_block_bytes=None, max_array_elements=None))]
    fn open(
        py: Python<'_>,
        path: PathBuf,
        verify_checksums: bool,
        max_tree_bytes: Option<u64>,
        max_nodes: Option<usize>,
        max_block_bytes: Option<u64>,
        max_array_elements: Option<u64>,
    ) -> PyResult<File> {
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
        let options = OpenOptions::new().verify_checksums(verify_checksums).limits(limits);
        let file = py.detach(|| options.open(&path)).map_err(|e| to_pyerr(py, e))?;
        let file = Arc::new(file);
        let keep = Py::new(py, Keep { _file: Arc::clone(&file) })?;
        Ok(File { inner: Mutex::new(Some((file, keep))) })
    }

    /// Lets the file go: arrays read already stay valid; lazy arrays not yet read, and
    /// this object, refuse to read.
    fn close(&self) {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).take();
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).is_none()
    }

    /// The file's path.
    #[getter]
    fn path(&self) -> PyResult<Option<PathBuf>> {
        Ok(self.get()?.0.path().map(PathBuf::from))
    }

    /// The ASDF Standard version the file declares.
    #[getter]
    fn standard(&self) -> PyResult<String> {
        Ok(self.get()?.0.header().standard().to_string())
    }

    /// The tree as Python objects, and the lazy arrays made for its ndarray nodes, by
    /// node number.
    ///
    /// `classes` is `(dict, list, str, array, tag_attribute, convert, timestamp)`: the
    /// classes of tagged mappings, sequences and strings (set `tag_attribute` on each),
    /// the lazy array class (`None`: ndarray nodes stay tagged mappings), whether
    /// `core/complex` and `core/integer` become `complex` and `int`, and a function
    /// making a `datetime` or `date` from `(year, month, day, hour, minute, second,
    /// microsecond, offset_minutes)` (time parts `None` for a date).
    fn tree<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        classes: &Bound<'py, PyTuple>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyDict>)> {
        let (file, _) = slf.get().get()?;
        let mut b = convert::Builder::new(py, &file, slf.as_any(), classes)?;
        let root = match file.tree().root() {
            Some(r) => b.build(r, 0)?,
            // No tree: the reference's empty tree.
            None => PyDict::new(py).into_any(),
        };
        Ok((root, b.arrays))
    }

    /// `(path, node number)` of every ndarray node, in tree order.
    fn array_nodes(&self) -> PyResult<Vec<(String, u32)>> {
        let (file, _) = self.get()?;
        Ok(file.ndarray_nodes().into_iter().map(|(p, n)| (p, n.id().0)).collect())
    }

    /// Reads the array of node `id`: `(buffer, dtype, shape, strides, offset, mask)`,
    /// where `buffer` is a read-only uint8 numpy array over the array's data (the
    /// file's own bytes, or decoded ones, with no copy) and `mask` the flags of inline
    /// `null`s (or `None`). Blocks decode with the GIL released.
    #[allow(clippy::type_complexity)]
    fn read_array<'py>(
        &self,
        py: Python<'py>,
        id: u32,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Vec<usize>, Vec<isize>, usize, Option<Bound<'py, PyAny>>)>
    {
        let (file, keep) = self.get()?;
        node_of(&file, id)?;
        let read = py
            .detach(|| -> rasdf::Result<Read> {
                let node = file.tree().node(NodeId(id));
                let a = file.ndarray_at(node)?;
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
                        Bytes::Lent(b.as_ptr() as usize, b.len())
                    }
                    Cow::Owned(v) => Bytes::Owned(v),
                };
                file.check_unchanged()?;
                Ok(Read { bytes, datatype, byteorder, shape, strides, offset, mask })
            })
            .map_err(|e| to_pyerr(py, located(e, &file)))?;
        let buffer = match read.bytes {
            Bytes::Lent(ptr, len) => {
                // SAFETY: the bytes lie in memory `file` owns (its map, its cache of
                // decoded blocks, or an external file it keeps open), which lives as long
                // as `keep`, the numpy array's base; they are never written while lent.
                let view = unsafe { ArrayView1::from_shape_ptr(len, ptr as *const u8) };
                unsafe { PyArray1::<u8>::borrow_from_array(&view, keep.into_bound(py).into_any()) }
            }
            Bytes::Owned(v) => PyArray1::from_vec(py, v),
        };
        buffer.getattr("flags")?.setattr("writeable", false)?;
        let dtype = dtype_spec(py, &read.datatype, read.byteorder)?;
        let mask = read.mask.map(|m| PyArray1::from_vec(py, m).into_any());
        Ok((buffer.into_any(), dtype, read.shape, read.strides, read.offset, mask))
    }

    /// The shape and dtype of the array of node `id`, with no block decoded (a
    /// streamed array's rows counted from its block's size).
    fn array_meta<'py>(&self, py: Python<'py>, id: u32) -> PyResult<(Vec<usize>, Bound<'py, PyAny>)> {
        let (file, _) = self.get()?;
        let node = node_of(&file, id)?;
        let (datatype, order, shape) = file.ndarray_shape_at(node).map_err(|e| to_pyerr(py, located(e, &file)))?;
        Ok((shape, dtype_spec(py, &datatype, order)?))
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
        let (file, _) = self.get()?;
        let options = rasdf_cli::info::InfoOptions { max_rows, max_cols, show_values, show_blocks, stats };
        let out = py
            .detach(|| {
                let mut out = Vec::new();
                rasdf_cli::info::report(&file, &options, &mut out).map(|_| out)
            })
            .map_err(|e| PyOSError::new_err(e.to_string()))?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// What the standard's schemas find wrong with the tree: `(tree path, message)`.
    fn validate(&self, py: Python<'_>) -> PyResult<Vec<(String, String)>> {
        let (file, _) = self.get()?;
        let errors = py.detach(|| rasdf::schema::validate(file.tree(), Some(file.header().standard())));
        Ok(errors
            .into_iter()
            .map(|e| (if e.path.is_empty() { "/".into() } else { e.path.clone() }, e.to_string()))
            .collect())
    }

    /// Verifies every block's checksum: `(block, error text)` for each block that fails.
    fn verify_checksums(&self, py: Python<'_>) -> PyResult<Vec<(usize, String)>> {
        let (file, _) = self.get()?;
        let results = py.detach(|| file.verify_blocks());
        let mut bad = Vec::new();
        for (n, r) in results.into_iter().enumerate() {
            if let Err(e) = r {
                bad.push((n, located(e, &file).to_string()));
            }
        }
        Ok(bad)
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

/// Writes `tree` (see `rasdf.write`) to `path`, atomically.
#[pyfunction]
#[pyo3(signature = (path, tree, prepare, compression=None, compression_map=None, compression_level=None, include_index=true, checksums=true))]
#[allow(clippy::too_many_arguments)]
fn write(
    py: Python<'_>,
    path: PathBuf,
    tree: &Bound<'_, PyAny>,
    prepare: &Bound<'_, PyAny>,
    compression: Option<&str>,
    compression_map: Option<HashMap<String, Option<String>>>,
    compression_level: Option<u32>,
    include_index: bool,
    checksums: bool,
) -> PyResult<()> {
    let default = convert::compression(compression)?;
    let mut per_path = HashMap::new();
    for (k, v) in compression_map.unwrap_or_default() {
        per_path.insert(k.trim_matches('/').to_string(), convert::compression(v.as_deref())?);
    }
    let mut keep = Vec::new();
    let mut w = convert::Writer::new(py, prepare, default, per_path, &mut keep);
    w.fill(tree)?;
    let doc = w.finish()?;
    let options = rasdf::write::WriteOptions { compression_level, include_index, checksums, ..Default::default() };
    py.detach(|| doc.write_to_path(&path, &options)).map_err(|e| to_pyerr(py, e))?;
    drop(keep);
    Ok(())
}

/// The module.
#[pymodule]
fn _rasdf(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<File>()?;
    m.add_class::<Keep>()?;
    m.add_function(wrap_pyfunction!(write, m)?)?;
    m.add("AsdfError", m.py().get_type::<errors::AsdfError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
