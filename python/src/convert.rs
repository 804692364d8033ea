//! Trees between rasdf and Python: [`Builder`] makes Python objects of a file's tree as
//! PyYAML (and so the reference library) makes them; [`Writer`] makes a document of
//! Python objects as the reference writes them.

use std::collections::HashMap;

use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyComplex, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PySet, PyString, PyTuple,
};

use rasdf::AsdfFile;
use rasdf::block::Compression;
use rasdf::tree::resolve::parse_timestamp;
use rasdf::tree::{ASDF_TAG_PREFIX, Node, NodeId, NodeRef, OMAP_TAG, SET_TAG, Tree, Value};
use rasdf::write::Document;

use crate::errors::at_path;

/// Where a [`Builder`]'s tree comes from: an open file (whose arrays and integers it can
/// read) or a YAML text alone.
#[derive(Clone, Copy)]
pub(crate) enum Source<'f> {
    /// An open file, and the tree built from (the file's own, or its copy with the
    /// defaults of extensions' schemas filled in: the same nodes, and more).
    File(&'f AsdfFile, &'f Tree),
    /// A tree parsed from a text, and the depth it was allowed.
    Text(&'f Tree, usize),
}

impl<'f> Source<'f> {
    fn tree(self) -> &'f Tree {
        match self {
            Source::File(_, t) => t,
            Source::Text(t, _) => t,
        }
    }

    fn max_depth(self) -> usize {
        match self {
            Source::File(f, _) => f.limits().max_depth,
            Source::Text(_, d) => d,
        }
    }

    /// Line and column of `node` (in the file, or in the text).
    fn line_of(self, node: NodeRef<'_>) -> (usize, usize) {
        match self {
            Source::File(f, _) => f.line_of(node),
            Source::Text(..) => (node.node().line as usize, node.node().col as usize),
        }
    }
}

/// Makes the Python objects of a tree.
pub(crate) struct Builder<'py, 'f> {
    py: Python<'py>,
    source: Source<'f>,
    file_obj: Bound<'py, PyAny>,
    dict_cls: Bound<'py, PyAny>,
    list_cls: Bound<'py, PyAny>,
    str_cls: Bound<'py, PyAny>,
    array_cls: Option<Bound<'py, PyAny>>,
    tag_attr: Bound<'py, PyString>,
    convert: bool,
    /// Whether the tagged classes wrap a plain container, made as `cls(container, tag)`
    /// (asdf's `TaggedDict` and `TaggedList`, `UserDict` and `UserList`): the builder
    /// then fills the plain container, without a Python call per item.
    wraps: bool,
    timestamp: Bound<'py, PyAny>,
    ordered_dict: Bound<'py, PyAny>,
    /// Containers and arrays made so far, by node number: an alias gives the same
    /// object, a node inside itself the object being filled, and a node built before
    /// (by an earlier call: the file keeps this between calls) the same object again.
    /// (A vector: a hash lookup for each of a large tree's nodes cost a tenth of the
    /// build.)
    pub(crate) memo: Vec<Option<Py<PyAny>>>,
    /// The strings made for mapping keys, by text: the keys of a tree repeat (every
    /// group of a pipeline's tree has the same ones), and Python shares equal keys.
    keys: rustc_hash::FxHashMap<&'f str, Bound<'py, PyString>>,
}

impl<'py, 'f> Builder<'py, 'f> {
    /// A builder with the classes `classes`: `(dict_cls, list_cls, str_cls, array_cls or
    /// None, tag attribute name, convert, timestamp function[, wraps])` (see
    /// `File::tree`).
    pub(crate) fn new(
        py: Python<'py>,
        source: Source<'f>,
        file_obj: &Bound<'py, PyAny>,
        classes: &Bound<'py, PyTuple>,
        memo: Vec<Option<Py<PyAny>>>,
    ) -> PyResult<Self> {
        let array_cls = classes.get_item(3)?;
        let len = source.tree().len();
        Ok(Builder {
            py,
            source,
            file_obj: file_obj.clone(),
            dict_cls: classes.get_item(0)?,
            list_cls: classes.get_item(1)?,
            str_cls: classes.get_item(2)?,
            array_cls: if array_cls.is_none() { None } else { Some(array_cls) },
            tag_attr: classes.get_item(4)?.cast_into::<PyString>()?,
            convert: classes.get_item(5)?.is_truthy()?,
            wraps: classes.len() > 7 && classes.get_item(7)?.is_truthy()?,
            timestamp: classes.get_item(6)?,
            ordered_dict: py.import("collections")?.getattr("OrderedDict")?,
            memo: if memo.len() == len { memo } else { (0..len).map(|_| None).collect() },
            keys: rustc_hash::FxHashMap::default(),
        })
    }

    fn err(&self, node: NodeRef<'f>, message: impl Into<String>) -> PyErr {
        let (line, col) = self.source.line_of(node);
        at_path(self.py, format!("{} (line {line}, column {col})", message.into()), "")
    }

    /// `made` (an instance of one of the tagged classes) with its tag set.
    fn tagged(&self, made: PyResult<Bound<'py, PyAny>>, tag: &str) -> PyResult<Bound<'py, PyAny>> {
        let obj = made?;
        obj.setattr(&self.tag_attr, tag)?;
        Ok(obj)
    }

    /// Records the object made for `node`, for aliases and later calls.
    fn remember(&mut self, node: NodeRef<'f>, obj: &Bound<'py, PyAny>) {
        self.memo[node.id().0 as usize] = Some(obj.clone().unbind());
    }

    /// The Python object of `node` (`depth`: containers above it).
    pub(crate) fn build(&mut self, node: NodeRef<'f>, depth: usize) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        if let Some(Some(obj)) = self.memo.get(node.id().0 as usize) {
            return Ok(obj.bind(py).clone());
        }
        if depth > self.source.max_depth().saturating_add(1) {
            return Err(self.err(node, "the tree nests too deeply"));
        }
        let tag = node.tag();
        if self.convert
            && tag.is_some()
            && let Source::File(file, _) = self.source
        {
            if node.is_asdf_tag("core/ndarray") {
                if let Some(cls) = self.array_cls.clone() {
                    return self.array(file, node, &cls, depth);
                }
            } else if node.is_asdf_tag("core/complex") {
                if let Some((re, im)) = node.as_str().and_then(rasdf::ndarray::parse_complex) {
                    return Ok(PyComplex::from_doubles(py, re, im).into_any());
                }
            } else if node.is_asdf_tag("core/integer")
                && let Ok(v) = file.integer_at(node)
            {
                return big_int(py, &v);
            }
        }
        Ok(match node.value() {
            Value::Null => py.None().into_bound(py),
            Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
            Value::Int(i) => i.into_pyobject(py)?.into_any(),
            Value::BigInt(i) => big_int(py, i)?,
            Value::Float(f) => PyFloat::new(py, *f).into_any(),
            Value::Str(s) => match tag {
                Some(t) => self.tagged(self.str_cls.call1((s.as_str(),)), t)?,
                None => PyString::new(py, s).into_any(),
            },
            Value::Binary(b) => PyBytes::new(py, b).into_any(),
            Value::Timestamp(t) => match parse_timestamp(t) {
                Some(ts) => {
                    let (y, mo, d) = ts.date;
                    match ts.time {
                        Some((h, mi, s, us)) => self.timestamp.call1((y, mo, d, h, mi, s, us, ts.offset_minutes))?,
                        None => self.timestamp.call1((y, mo, d))?,
                    }
                }
                None => PyString::new(py, t).into_any(),
            },
            // An item of a `!!pairs`: a `(key, value)` tuple, as PyYAML makes it.
            Value::Seq(items) if node.tree().is_tuple(node.id()) => {
                let mut pair = Vec::with_capacity(items.len());
                for &c in items {
                    pair.push(self.build(node.tree().node(c), depth + 1)?);
                }
                PyTuple::new(py, pair)?.into_any()
            }
            Value::Seq(items) => {
                let (list, exact) = match tag {
                    Some(t) if self.wraps => {
                        let inner = PyList::empty(py);
                        (self.list_cls.call1((&inner, t))?, Some(inner))
                    }
                    Some(t) => (self.tagged(self.list_cls.call0(), t)?, None),
                    None => {
                        let l = PyList::empty(py);
                        (l.clone().into_any(), Some(l))
                    }
                };
                self.remember(node, &list);
                // Else a subclass that may keep its items elsewhere: its own `append`.
                for &c in items {
                    let child = self.build(node.tree().node(c), depth + 1)?;
                    match &exact {
                        Some(l) => l.append(child)?,
                        None => {
                            list.call_method1(intern!(py, "append"), (child,))?;
                        }
                    }
                }
                list
            }
            Value::Map(pairs) if tag == Some(SET_TAG) => {
                let set = PySet::empty(py)?;
                for &(k, _) in pairs {
                    let key = self.build(node.tree().node(k), depth + 1)?;
                    set.add(self.hashable(node, key)?)?;
                }
                set.into_any()
            }
            Value::Map(pairs) => {
                let (dict, exact) = match tag {
                    Some(OMAP_TAG) => (self.ordered_dict.call0()?, None),
                    Some(t) if self.wraps => {
                        let inner = PyDict::new(py);
                        (self.dict_cls.call1((&inner, t))?, Some(inner))
                    }
                    Some(t) => (self.tagged(self.dict_cls.call0(), t)?, None),
                    None => {
                        let d = PyDict::new(py);
                        (d.clone().into_any(), Some(d))
                    }
                };
                self.remember(node, &dict);
                // Else subclasses through their own `__setitem__` (`OrderedDict` keeps
                // its order apart).
                for &(k, v) in pairs {
                    let key = self.key(node, node.tree().node(k), depth)?;
                    let value = self.build(node.tree().node(v), depth + 1)?;
                    match &exact {
                        Some(d) => d.set_item(key, value)?,
                        None => dict.set_item(key, value)?,
                    }
                }
                dict
            }
        })
    }

    /// The Python key of mapping `node`'s key node `k`: a plain string from the cache of
    /// keys, or any hashable object.
    fn key(&mut self, node: NodeRef<'f>, k: NodeRef<'f>, depth: usize) -> PyResult<Bound<'py, PyAny>> {
        if let (Value::Str(s), None) = (k.value(), k.tag()) {
            let s: &'f str = s.as_str();
            if let Some(cached) = self.keys.get(s) {
                return Ok(cached.clone().into_any());
            }
            let obj = PyString::new(self.py, s);
            self.keys.insert(s, obj.clone());
            return Ok(obj.into_any());
        }
        let key = self.build(k, depth + 1)?;
        self.hashable(node, key)
    }

    /// `key`, when it can be a dict key or set item (PyYAML refuses the others).
    fn hashable(&self, node: NodeRef<'f>, key: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        if key.hash().is_err() {
            return Err(self.err(node, format!("found an unhashable key ({})", key.get_type().name()?)));
        }
        Ok(key)
    }

    /// A lazy array for ndarray node `node`: `cls(file, node number, shape, dtype, tag,
    /// mask)`, with shape and dtype `None` when they cannot be known without reading
    /// (or the node is malformed: reading it says why).
    fn array(
        &mut self,
        file: &'f AsdfFile,
        node: NodeRef<'f>,
        cls: &Bound<'py, PyAny>,
        depth: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        let (shape, dtype) = match file.array_at(node).meta() {
            Ok((datatype, order, shape)) => {
                (PyTuple::new(py, &shape)?.into_any(), crate::dtype_spec(py, &datatype, order)?)
            }
            Err(_) => (py.None().into_bound(py), py.None().into_bound(py)),
        };
        let mask = match node.key("mask") {
            Some(m) => self.build(m, depth + 1)?,
            None => py.None().into_bound(py),
        };
        let id = node.id().0;
        let obj = cls.call1((&self.file_obj, id, shape, dtype, node.tag(), mask))?;
        self.remember(node, &obj);
        Ok(obj)
    }
}

/// The compression a name gives (`None`: stored as is), as the command line names them.
pub(crate) fn compression(name: Option<&str>) -> PyResult<Compression> {
    Compression::from_name(name.unwrap_or("none")).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown compression {name:?}: None, \"zlib\", \"bzp2\", \"lz4\", \"zstd\" or \"blsc\""
        ))
    })
}

/// The compression of a block label or name (`lz4`, `lz4f`...): the codec rasdf
/// writes for it (`Compression::rewritten_as`), `None` for one it does not.
pub(crate) fn own_codec(name: &str) -> Option<Compression> {
    let mut label = [0u8; 4];
    let bytes = name.as_bytes();
    if bytes.len() > 4 {
        return None;
    }
    label[..bytes.len()].copy_from_slice(bytes);
    let c = Compression::from_label(label).rewritten_as();
    c.writable().then_some(c)
}

/// Makes a document of Python objects.
pub(crate) struct Writer<'py, 'k> {
    py: Python<'py>,
    /// `rasdf._prepare_array`: a numpy array (or masked array, or lazy array) in, `(C
    /// contiguous array, dtype description, mask or None, the array's own codec or
    /// None)` out.
    prepare: Bound<'py, PyAny>,
    /// `convert(obj)`: an object of a type asdf's extensions convert, as the tagged
    /// node they make of it (`None`: no converter; `("array", a)`: write `a` as an
    /// array); `None` when asdf is not to be asked.
    convert: Option<Bound<'py, PyAny>>,
    doc: Document<'static>,
    /// The codec of every array (`None`: each array's own, none for new ones).
    default: Option<Compression>,
    per_path: HashMap<String, Compression>,
    /// The tree paths of the arrays written (every place a shared one is met).
    array_paths: std::collections::HashSet<String>,
    /// `collections.UserDict` and `collections.UserList` (asdf's `AsdfObject`,
    /// `TaggedDict` and `TaggedList` keep their items in `.data`, their `dict` or `list`
    /// part empty).
    user_dict: Bound<'py, PyAny>,
    user_list: Bound<'py, PyAny>,
    ordered_dict: Bound<'py, PyAny>,
    ndarray_type: Bound<'py, PyAny>,
    masked_type: Bound<'py, PyAny>,
    memmap_type: Bound<'py, PyAny>,
    /// Containers and arrays made so far, by object identity (shared objects become
    /// one node, written with an anchor), and whether each is finished (one that is
    /// not is being filled: the tree holds itself).
    memo: HashMap<usize, (NodeId, bool)>,
    /// The arrays whose bytes the document borrows, kept alive until it is written.
    keep: &'k mut Vec<Bound<'py, PyAny>>,
    tag_attrs: [Bound<'py, PyString>; 2],
}

impl<'py, 'k> Writer<'py, 'k> {
    pub(crate) fn new(
        py: Python<'py>,
        prepare: &Bound<'py, PyAny>,
        convert: Option<&Bound<'py, PyAny>>,
        default: Option<Compression>,
        per_path: HashMap<String, Compression>,
        keep: &'k mut Vec<Bound<'py, PyAny>>,
    ) -> PyResult<Self> {
        let collections = py.import("collections")?;
        let numpy = py.import("numpy")?;
        Ok(Writer {
            py,
            prepare: prepare.clone(),
            convert: convert.filter(|c| !c.is_none()).cloned(),
            doc: Document::new(),
            default,
            per_path,
            array_paths: std::collections::HashSet::new(),
            user_dict: collections.getattr("UserDict")?,
            user_list: collections.getattr("UserList")?,
            ordered_dict: collections.getattr("OrderedDict")?,
            ndarray_type: numpy.getattr("ndarray")?,
            masked_type: numpy.getattr("ma")?.getattr("MaskedArray")?,
            memmap_type: numpy.getattr("memmap")?,
            memo: HashMap::new(),
            keep,
            tag_attrs: [PyString::new(py, "tag"), PyString::new(py, "_tag")],
        })
    }

    /// The paths of `compression={path: codec}` that name no array written.
    pub(crate) fn unused_compression_paths(&self) -> Vec<String> {
        let mut unused: Vec<String> =
            self.per_path.keys().filter(|p| !self.array_paths.contains(p.as_str())).cloned().collect();
        unused.sort();
        unused
    }

    /// Sets the root's `key` to the node of `obj` (a key already there keeps its place).
    pub(crate) fn set_root_key(&mut self, key: &str, obj: &Bound<'py, PyAny>) -> PyResult<()> {
        let mut path = format!("/{key}");
        let id = self.node(obj, &mut path, 1)?;
        self.doc.set_node(&rasdf::tree::escape_step(key), id).map_err(|e| crate::errors::to_pyerr(self.py, e))
    }

    /// The document being built.
    pub(crate) fn doc_mut(&mut self) -> &mut Document<'static> {
        &mut self.doc
    }

    /// Fills the document's root from `tree`, a mapping.
    pub(crate) fn fill(&mut self, tree: &Bound<'py, PyAny>) -> PyResult<()> {
        let mut path = String::new();
        let id = self.node(tree, &mut path, 0)?;
        let root = self.doc.tree().root().map(|r| r.id()).ok_or_else(|| PyValueError::new_err("no root"))?;
        let node = self.doc.tree().node(id).node().clone();
        let Value::Map(pairs) = node.value else {
            return Err(PyTypeError::new_err(format!(
                "the tree must be a mapping (a dict), not {}",
                tree.get_type().name()?
            )));
        };
        let tree_mut = self.doc.tree_mut();
        tree_mut.set_value(root, Value::Map(pairs));
        if let Some(t) = node.tag {
            tree_mut.set_tag(root, Some(t));
        }
        Ok(())
    }

    pub(crate) fn finish(self) -> Document<'static> {
        self.doc
    }

    fn push(&mut self, tag: Option<String>, value: Value) -> NodeId {
        self.doc.tree_mut().push(Node { tag, value, line: 0, col: 0 })
    }

    fn tag_of(&self, obj: &Bound<'py, PyAny>) -> PyResult<Option<String>> {
        for a in &self.tag_attrs {
            if let Ok(t) = obj.getattr(a) {
                if t.is_none() {
                    continue;
                }
                let t: String = t.extract()?;
                // `!core/...` short forms as the reference's tagged objects may hold them.
                return Ok(Some(match t.strip_prefix('!') {
                    Some(rest) if !rest.starts_with('!') => format!("{ASDF_TAG_PREFIX}{rest}"),
                    _ => t,
                }));
            }
        }
        Ok(None)
    }

    fn err(&self, path: &str, message: String) -> PyErr {
        let at = if path.is_empty() { "/" } else { path };
        PyTypeError::new_err(format!("{message} (at {at})"))
    }

    /// The node of `obj`, at tree path `path`.
    fn node(&mut self, obj: &Bound<'py, PyAny>, path: &mut String, depth: usize) -> PyResult<NodeId> {
        let py = self.py;
        if depth > 10_000 {
            return Err(self.err(path, "the tree nests too deeply".into()));
        }
        if obj.is_none() {
            return Ok(self.push(None, Value::Null));
        }
        if let Ok(b) = obj.cast::<PyBool>() {
            return Ok(self.push(None, Value::Bool(b.is_true())));
        }
        if obj.is_instance_of::<PyInt>() {
            let v = match obj.extract::<i64>() {
                Ok(i) => Value::Int(i),
                Err(_) => {
                    let text = obj.str()?.to_cow()?.into_owned();
                    let v = num_bigint::BigInt::parse_bytes(text.as_bytes(), 10)
                        .ok_or_else(|| PyValueError::new_err(format!("not an integer: {text}")))?;
                    Value::BigInt(Box::new(v))
                }
            };
            return Ok(self.push(None, v));
        }
        if let Ok(f) = obj.cast::<PyFloat>() {
            return Ok(self.push(None, Value::Float(f.value())));
        }
        if let Ok(s) = obj.cast::<PyString>() {
            let tag = if obj.is_exact_instance_of::<PyString>() { None } else { self.tag_of(obj)? };
            return Ok(self.push(tag, Value::Str(s.to_cow()?.as_ref().into())));
        }
        if let Ok(b) = obj.cast::<PyBytes>() {
            return Ok(self.push(None, Value::Binary(b.as_bytes().to_vec())));
        }
        if let Ok(b) = obj.cast::<PyByteArray>() {
            return Ok(self.push(None, Value::Binary(b.to_vec())));
        }
        if let Ok(c) = obj.cast::<PyComplex>() {
            let text = rasdf::tree::numtext::complex_repr(c.real(), c.imag());
            let text = text.strip_prefix('(').and_then(|t| t.strip_suffix(')')).unwrap_or(&text).to_string();
            return Ok(self.push(Some(format!("{ASDF_TAG_PREFIX}core/complex-1.0.0")), Value::Str(text.into())));
        }
        let key = obj.as_ptr() as usize;
        if let Some(&(id, done)) = self.memo.get(&key) {
            if !done {
                return Err(self.err(path, "the tree holds itself (a container inside itself)".into()));
            }
            if self.doc.tree().node(id).is_asdf_tag("core/ndarray") {
                self.array_paths.insert(path.trim_matches('/').to_string());
            }
            return Ok(id);
        }
        let exact = obj.is_exact_instance_of::<PyDict>()
            || obj.is_exact_instance_of::<PyList>()
            || obj.is_exact_instance_of::<PyTuple>()
            || obj.get_type().is(&self.ndarray_type)
            || obj.get_type().is(&self.masked_type);
        // An object of another type (not one of rasdf's or asdf's tagged types, which
        // no converter takes): what asdf's converters make of it, when one converts it
        // (a data model node too, tag and all).
        // A complex long double no complex holds exactly: refused, not rounded (asdf's
        // complex converter would write it rounded).
        if !exact && type_name(obj) == "numpy.clongdouble" {
            let exact_complex = obj.call_method0("__complex__").ok().is_some_and(|c| obj.eq(c).unwrap_or(false));
            if !exact_complex {
                let why = "no Python number holds it exactly (ASDF's numbers are at most 64-bit floats)";
                return Err(self.err(path, format!("rasdf cannot write a numpy.clongdouble scalar: {why}")));
            }
        }
        if !exact
            && let Some(convert) = self.convert.clone()
            && !is_plain_tagged(obj)
            && !obj.hasattr(intern!(py, "__asdf_lazy_array__"))?
        {
            let made = convert.call1((obj,)).map_err(|e| self.converter_error(e, obj, path))?;
            if !made.is_none() {
                // Kept alive until the write ends: the memo knows objects by address.
                self.keep.push(made.clone());
                let id = match made.cast::<PyTuple>() {
                    Ok(t) if t.len() == 2 && t.get_item(0)?.extract::<String>().is_ok_and(|k| k == "array") => {
                        self.array(obj, path)?
                    }
                    _ => self.node(&made, path, depth + 1)?,
                };
                self.memo.insert(key, (id, true));
                return Ok(id);
            }
        }
        // asdf's `AsdfObject` and `TaggedDict` (`UserDict`s), `TaggedList` (a `UserList`):
        // their items are in `.data`.
        if obj.is_instance(&self.user_dict)? || obj.is_instance(&self.user_list)? {
            let data = obj.getattr(intern!(py, "data"))?;
            let tag = self.tag_of(obj)?;
            self.keep.push(data.clone());
            let id = self.node(&data, path, depth + 1)?;
            if tag.is_some() {
                self.doc.tree_mut().set_tag(id, tag);
            }
            self.memo.insert(key, (id, true));
            return Ok(id);
        }
        if let Ok(d) = obj.cast::<PyDict>() {
            let tag = if obj.is_exact_instance_of::<PyDict>() {
                None
            } else if obj.get_type().is(&self.ordered_dict) {
                // As asdf's dumper writes an `OrderedDict`: `!!omap`.
                Some(OMAP_TAG.to_string())
            } else {
                self.tag_of(obj)?
            };
            let id = self.push(tag, Value::Map(Vec::new()));
            self.memo.insert(key, (id, false));
            let mut pairs = Vec::with_capacity(d.len());
            // A copy of the items: another thread may change the dict meanwhile (the
            // GIL can pass at every call into Python), which `PyDict::iter` would
            // report as a panic.
            for item in d.items().iter() {
                let (k, v): (Bound<'py, PyAny>, Bound<'py, PyAny>) = item.extract()?;
                let k_id = self.key(&k, path)?;
                let len = path.len();
                path.push('/');
                path.push_str(&key_step(&k));
                let v_id = self.node(&v, path, depth + 1)?;
                path.truncate(len);
                pairs.push((k_id, v_id));
            }
            self.doc.tree_mut().set_value(id, Value::Map(pairs));
            self.memo.insert(key, (id, true));
            return Ok(id);
        }
        if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
            let tag = if obj.is_exact_instance_of::<PyList>() || obj.is_exact_instance_of::<PyTuple>() {
                None
            } else {
                self.tag_of(obj)?
            };
            let id = self.push(tag, Value::Seq(Vec::new()));
            self.memo.insert(key, (id, false));
            let mut items = Vec::new();
            for (i, item) in obj.try_iter()?.enumerate() {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                items.push(self.node(&item?, path, depth + 1)?);
                path.truncate(len);
            }
            self.doc.tree_mut().set_value(id, Value::Seq(items));
            self.memo.insert(key, (id, true));
            return Ok(id);
        }
        let datetime = py.import("datetime")?;
        if obj.is_instance(&datetime.getattr("datetime")?)? {
            let text: String = obj.call_method1("isoformat", (" ",))?.extract()?;
            return Ok(self.push(None, Value::Timestamp(text.into())));
        }
        if obj.is_instance(&datetime.getattr("date")?)? {
            let text: String = obj.call_method0("isoformat")?.extract()?;
            return Ok(self.push(None, Value::Timestamp(text.into())));
        }
        // numpy arrays, masked arrays and memory maps (the values they hold); rasdf's
        // lazy arrays. Another subclass of `numpy.ndarray` (astropy's `Quantity`,
        // `Column`, `numpy.matrix`...) means more than its values: written by asdf's
        // converter above, else refused, never as a bare array.
        if obj.is_instance_of::<PyUntypedArray>() {
            let t = obj.get_type();
            if !(t.is(&self.ndarray_type) || t.is(&self.masked_type) || t.is(&self.memmap_type)) {
                return Err(self.err(
                    path,
                    format!(
                        "rasdf cannot write a {} (a numpy.ndarray subclass: its values alone would lose what \
                         it adds) without a converter of asdf's installed extensions",
                        type_name(obj)
                    ),
                ));
            }
        }
        if obj.is_instance_of::<PyUntypedArray>() || obj.hasattr(intern!(py, "__asdf_lazy_array__"))? {
            let id = self.array(obj, path)?;
            self.memo.insert(key, (id, true));
            return Ok(id);
        }
        if obj.is_instance_of::<PySet>() || obj.is_instance_of::<PyFrozenSet>() {
            let id = self.push(Some(SET_TAG.into()), Value::Map(Vec::new()));
            let mut pairs = Vec::new();
            for item in obj.try_iter()? {
                let k = self.key(&item?, path)?;
                let null = self.push(None, Value::Null);
                pairs.push((k, null));
            }
            self.doc.tree_mut().set_value(id, Value::Map(pairs));
            return Ok(id);
        }
        // numpy scalars: as the Python value they hold exactly (`item()`); those that
        // hold none (a long double; a date or a duration, which `item()` turns into a
        // bare int or `None`; a record, into a tuple) are refused, never changed.
        let numpy = py.import("numpy")?;
        let generic = numpy.getattr("generic")?;
        if obj.is_instance(&generic)? {
            for (class, what) in [
                ("datetime64", "a date (ASDF has no type for numpy's)"),
                ("timedelta64", "a duration (ASDF has no type for numpy's)"),
                ("void", "a record (write it as a 0-d array, np.asarray(x))"),
            ] {
                if obj.is_instance(&numpy.getattr(class)?)? {
                    return Err(self.err(path, format!("rasdf cannot write a numpy.{class} scalar: {what}")));
                }
            }
            let mut item = obj.call_method0("item")?;
            if item.is_instance(&generic)? {
                // A long double that a float holds exactly is that float, as the
                // reference writes it.
                let float = obj.call_method0("__float__").ok().filter(|f| obj.eq(f).unwrap_or(false));
                if let Some(f) = float {
                    item = f;
                }
            }
            if item.is_instance(&generic)? {
                let why = "no Python number holds it exactly (ASDF's numbers are at most 64-bit floats)";
                return Err(self.err(path, format!("rasdf cannot write a {} scalar: {why}", type_name(obj))));
            }
            return self.node(&item, path, depth + 1);
        }
        // Other mappings (`collections.abc.Mapping`) as dicts.
        let abc = py.import("collections.abc")?;
        if obj.is_instance(&abc.getattr("Mapping")?)? {
            let d = PyDict::new(py);
            for k in obj.try_iter()? {
                let k = k?;
                d.set_item(&k, obj.get_item(&k)?)?;
            }
            let tag = self.tag_of(obj)?;
            let id = self.node(d.as_any(), path, depth)?;
            if tag.is_some() {
                self.doc.tree_mut().set_tag(id, tag);
            }
            return Ok(id);
        }
        let importable = match &self.convert {
            Some(c) => c.getattr(intern!(py, "available")).and_then(|a| a.is_truthy()).unwrap_or(true),
            None => false,
        };
        let hint = if importable { "" } else { " (asdf, whose extensions may convert it, is not importable)" };
        Err(self.err(path, format!("rasdf cannot write an object of type {}{hint}", type_name(obj))))
    }

    /// `e` (a `TypeError` or `ValueError` refusing an array) with the tree path added;
    /// other errors as they are.
    fn at_path(&self, e: PyErr, path: &str) -> PyErr {
        let py = self.py;
        let at = if path.is_empty() { "/" } else { path };
        let text = e.value(py).str().map(|s| s.to_string()).unwrap_or_default();
        // Exactly these two: a subclass (rasdf's AsdfError, numpy's own) is kept as it is,
        // so that `except` clauses for it still catch it.
        let kind = e.get_type(py);
        let named = if kind.is(py.get_type::<PyTypeError>()) {
            PyTypeError::new_err(format!("{text} (at {at})"))
        } else if kind.is(py.get_type::<PyValueError>()) {
            PyValueError::new_err(format!("{text} (at {at})"))
        } else {
            return e;
        };
        named.set_cause(py, Some(e));
        named
    }

    /// A converter's failure, naming the object's type and the tree path.
    fn converter_error(&self, e: PyErr, obj: &Bound<'py, PyAny>, path: &str) -> PyErr {
        let at = if path.is_empty() { "/" } else { path };
        let inner = e.value(self.py).str().map(|s| s.to_string()).unwrap_or_default();
        let err = PyTypeError::new_err(format!(
            "asdf's converter could not convert a {} (at {at}): {}: {inner}",
            type_name(obj),
            e.get_type(self.py).name().map(|n| n.to_string()).unwrap_or_default()
        ));
        err.set_cause(self.py, Some(e));
        err
    }

    /// A mapping key's node: a scalar (PyYAML writes others as complex keys, which
    /// ASDF trees do not use).
    fn key(&mut self, k: &Bound<'py, PyAny>, path: &str) -> PyResult<NodeId> {
        if k.is_none()
            || k.is_instance_of::<PyBool>()
            || k.is_instance_of::<PyInt>()
            || k.is_instance_of::<PyFloat>()
            || k.is_instance_of::<PyString>()
            || k.is_instance_of::<PyBytes>()
            || k.is_instance_of::<PyComplex>()
        {
            let mut p = path.to_string();
            return self.node(k, &mut p, 0);
        }
        Err(self.err(path, format!("rasdf cannot write a key of type {}", k.get_type().name()?)))
    }

    /// An ndarray node for a numpy array (or masked or lazy one).
    fn array(&mut self, obj: &Bound<'py, PyAny>, path: &str) -> PyResult<NodeId> {
        let prepared = self.prepare.call1((obj,)).map_err(|e| self.at_path(e, path))?;
        let arr = prepared.get_item(0)?;
        let spec = prepared.get_item(1)?;
        let mask = prepared.get_item(2)?;
        let own: Option<String> = prepared.get_item(3)?.extract()?;
        let (datatype, byteorder) = crate::datatype_of(&spec).map_err(|e| self.at_path(e, path))?;
        let a = arr.cast::<PyUntypedArray>()?;
        if !a.is_c_contiguous() {
            return Err(PyValueError::new_err("internal: the array is not C-contiguous"));
        }
        let shape = a.shape().to_vec();
        let itemsize = datatype.size();
        let len = a.len().checked_mul(itemsize).ok_or_else(|| PyValueError::new_err("array too large"))?;
        // SAFETY: a C-contiguous numpy array holds `len` bytes from its data pointer.
        let start = unsafe { (*a.as_array_ptr()).fields.data } as usize;
        // Kept alive (and so its buffer) until the document is written.
        self.keep.push(arr.clone());
        let at = path.trim_matches('/').to_string();
        // Asked for this path, else for every array, else the array's own (a block it
        // was read from keeps its codec), else none.
        let compression = match (self.per_path.get(&at), self.default) {
            (Some(&c), _) | (None, Some(c)) => c,
            (None, None) => own.as_deref().and_then(own_codec).unwrap_or(Compression::None),
        };
        self.array_paths.insert(at);
        let id = self
            .doc
            .chunked_array_node(datatype, byteorder, &shape, compression, Snapshots { start, len, at: 0 })
            .map_err(|e| crate::errors::to_pyerr(self.py, e))?;
        if !mask.is_none() {
            let flags: Vec<bool> = mask.cast::<PyBytes>()?.as_bytes().iter().map(|&b| b != 0).collect();
            self.doc.set_array_mask(id, flags).map_err(|e| crate::errors::to_pyerr(self.py, e))?;
        }
        Ok(id)
    }
}

/// An array's bytes for the writer, copied out of the numpy buffer a piece at a time as
/// the file is written: each piece is compressed and hashed from its one copy, so a
/// numpy array that another thread changes meanwhile (the GIL is released while the file
/// is written) still gives a block that decodes and matches its checksum, and memory
/// stays at a few pieces.
struct Snapshots {
    /// The buffer's address, kept alive by the writer's `keep` list.
    start: usize,
    len: usize,
    at: usize,
}

/// The bytes each piece copies: whole lz4 records and zlib pieces.
const SNAPSHOT: usize = 8 << 20;

impl Iterator for Snapshots {
    type Item = Vec<u8>;

    fn next(&mut self) -> Option<Vec<u8>> {
        let n = SNAPSHOT.min(self.len - self.at);
        if n == 0 {
            return None;
        }
        let mut piece = Vec::with_capacity(n);
        // SAFETY: `start..start + len` is the buffer of a C-contiguous numpy array kept
        // alive until the write ends; `at + n <= len`. Another thread may write to the
        // buffer meanwhile: the copy then holds some of its bytes old and some new,
        // which the block holds as copied.
        unsafe {
            std::ptr::copy_nonoverlapping((self.start + self.at) as *const u8, piece.as_mut_ptr(), n);
            piece.set_len(n);
        }
        self.at += n;
        Some(piece)
    }
}

/// A Python `int` of any size (through its decimal text: pyo3's own conversion is for
/// another version of num-bigint, and integers this large are rare in trees).
fn big_int<'py>(py: Python<'py>, v: &num_bigint::BigInt) -> PyResult<Bound<'py, PyAny>> {
    py.get_type::<PyInt>().call1((v.to_string(),))
}

/// Whether `obj` is one of rasdf's or asdf's tagged types (`rasdf.TaggedDict`,
/// `asdf.tagged.TaggedDict`...).
fn is_plain_tagged(obj: &Bound<'_, PyAny>) -> bool {
    obj.get_type().module().is_ok_and(|m| matches!(m.to_cow().as_deref(), Ok("rasdf" | "asdf.tagged")))
}

/// The qualified name of `obj`'s type (`astropy.units.quantity.Quantity`), or its name.
fn type_name(obj: &Bound<'_, PyAny>) -> String {
    let t = obj.get_type();
    let name = t.qualname().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
    match t.module().map(|m| m.to_string()) {
        Ok(m) if m != "builtins" => format!("{m}.{name}"),
        _ => name,
    }
}

/// The path step of a mapping key: its text, with JSON-pointer escapes.
fn key_step(k: &Bound<'_, PyAny>) -> String {
    let text = match k.cast::<PyString>() {
        Ok(s) => s.to_string(),
        Err(_) => k.str().map(|s| s.to_string()).unwrap_or_default(),
    };
    rasdf::tree::escape_step(&text).into_owned()
}
