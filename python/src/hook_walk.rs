//! asdf's tree walk (`asdf.treeutil.walk_and_modify`) in Rust, for `rasdf.asdf_hook`'s
//! walks of `tagged_tree_to_custom_tree` and `custom_tree_to_tagged_tree`: the same
//! calls of asdf's callback in the same order, the same new containers, the same shared
//! results, generators and reference cycles handled as asdf handles them, on asdf's own
//! modification context (its map of results, its pending set, its list of generators),
//! so that walks nested in converters see what they would see.
//!
//! What makes it fast: nodes of the exact types the caller names as left alone by the
//! callback (the untagged plain data of a tree, for which asdf's `_walker` returns its
//! argument and does nothing else) are not handed to Python, and a plain leaf does not
//! go through asdf's generator machinery, which for a leaf has no effect.

use std::borrow::Cow;

use pyo3::exceptions::{PyKeyError, PyRecursionError, PyRuntimeError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PySet, PyString, PyTuple, PyType};

/// asdf's words for a node met again while its result is being made.
const CYCLE: &str = "Unhandled cycle in tree.  This is possibly a bug in extension code, which should be \
                     yielding nodes that may contain reference cycles.";

/// One walk: asdf's `walk_and_modify(top, callback, postorder, _context)` with a
/// one-argument callback, run inside the context's `with` (which the caller holds).
#[pyclass(frozen, module = "rasdf._rasdf")]
pub(crate) struct Walker {
    callback: Py<PyAny>,
    postorder: bool,
    context: Py<PyAny>,
    /// The context's `_map` (`id(node) -> (node, result)`) and `_pending` (ids) when
    /// the walk starts: they stay the same objects until the outermost `with` ends.
    map: Py<PyDict>,
    pending: Py<PySet>,
    /// Exact types the callback returns unchanged, doing nothing else (kept alive
    /// here), and their addresses, looked up without touching reference counts.
    _identity: Py<PySet>,
    identity_types: Vec<usize>,
    /// Exact types of leaves whose `(leaf, leaf)` entry in the map is not written (kept
    /// alive in the set; addresses as for `identity_types`). The caller names only
    /// atomic types that every one of asdf's walks sharing this context (reading or
    /// writing, with this extension manager) gives back unchanged: such an entry
    /// changes no walk's result, and its absence spares a tuple and a map slot for
    /// most nodes of a tree. Entries written by others are still looked up.
    _unstored: Py<PySet>,
    unstored_types: Vec<usize>,
    /// `lazy_nodes.AsdfDictNode`, `AsdfListNode`, and `AsdfOrderedDictNode` when this
    /// asdf's walk makes an `OrderedDict` of it (`None` when it does not).
    lazy_dict: Py<PyAny>,
    lazy_list: Py<PyAny>,
    lazy_odict: Py<PyAny>,
    ordered_dict: Py<PyAny>,
    /// `tagged.Tagged`, `treeutil.RemoveNode`, `treeutil.PendingValue`.
    tagged: Py<PyAny>,
    remove: Py<PyAny>,
    pending_value: Py<PyAny>,
    generator: Py<PyType>,
    /// `finish(walker, result, items, is_mapping)`: the generator the context drains
    /// to fill a container's pending items, as asdf's container generators do after
    /// their `yield`.
    finish: Py<PyAny>,
    /// Nesting deeper than this raises `RecursionError`, as asdf's recursive walk does
    /// (the caller works out where, from the interpreter's limit).
    max_depth: usize,
}

/// The walk's view of the context's map and pending set: the ones the walk started
/// with, or (while the context drains its generators, when a nested walk may have
/// reset them) the context's current ones at every use.
struct Run<'a, 'py> {
    w: &'a Walker,
    py: Python<'py>,
    fixed: Option<(Bound<'py, PyDict>, Bound<'py, PySet>)>,
}

#[pymethods]
impl Walker {
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        callback: Py<PyAny>,
        postorder: bool,
        context: &Bound<'_, PyAny>,
        identity: Py<PySet>,
        unstored: Py<PySet>,
        lazy: (Py<PyAny>, Py<PyAny>, Py<PyAny>, Py<PyAny>),
        markers: (Py<PyAny>, Py<PyAny>, Py<PyAny>),
        generator: Py<PyType>,
        finish: Py<PyAny>,
        max_depth: usize,
    ) -> PyResult<Self> {
        let map = context.getattr(intern!(context.py(), "_map"))?.cast_into_exact::<PyDict>()?.unbind();
        let pending = context.getattr(intern!(context.py(), "_pending"))?.cast_into_exact::<PySet>()?.unbind();
        let identity_types = identity.bind(context.py()).iter().map(|t| t.as_ptr() as usize).collect();
        let unstored_types = unstored.bind(context.py()).iter().map(|t| t.as_ptr() as usize).collect();
        Ok(Walker {
            callback,
            postorder,
            context: context.clone().unbind(),
            map,
            pending,
            _identity: identity,
            identity_types,
            _unstored: unstored,
            unstored_types,
            lazy_dict: lazy.0,
            lazy_list: lazy.1,
            lazy_odict: lazy.2,
            ordered_dict: lazy.3,
            tagged: markers.0,
            remove: markers.1,
            pending_value: markers.2,
            generator,
            finish,
            max_depth,
        })
    }

    /// `_recurse(top)`: the walk's result.
    fn walk(slf: &Bound<'_, Self>, top: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let w = slf.get();
        let py = slf.py();
        let run = Run { w, py, fixed: Some((w.map.bind(py).clone(), w.pending.bind(py).clone())) };
        Ok(run.recurse(slf, top, 0)?.unbind())
    }

    /// The rest of asdf's `_handle_mapping` / `_handle_mutable_sequence` after their
    /// `yield`: the pending `(key, value)` items walked now and put in `result`.
    fn fill_pending(
        slf: &Bound<'_, Self>,
        result: &Bound<'_, PyAny>,
        items: &Bound<'_, PyList>,
        is_mapping: bool,
    ) -> PyResult<()> {
        let w = slf.get();
        let py = slf.py();
        let run = Run { w, py, fixed: None };
        let remove = w.remove.bind(py);
        for item in items.iter() {
            let item = item.cast_into::<PyTuple>()?;
            let (key, value) = (item.get_item(0)?, item.get_item(1)?);
            let val = run.recurse(slf, &value, 0)?;
            if is_mapping && val.is(remove) {
                result.del_item(&key)?;
            } else {
                result.set_item(&key, &val)?;
            }
        }
        Ok(())
    }
}

/// The dict's item at `pos` or after (`PyDict_Next`, which is safe whatever the dict
/// went through since the last call), with `pos` moved past it.
fn next_item<'py>(
    dict: &Bound<'py, PyDict>,
    pos: &mut pyo3::ffi::Py_ssize_t,
) -> Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let mut key: *mut pyo3::ffi::PyObject = std::ptr::null_mut();
    let mut value: *mut pyo3::ffi::PyObject = std::ptr::null_mut();
    // SAFETY: `dict` is a live dict and the GIL is held; the borrowed key and value are
    // made owned references at once, before any other Python code runs.
    unsafe {
        if pyo3::ffi::PyDict_Next(dict.as_ptr(), pos, &mut key, &mut value) == 0 {
            return None;
        }
        let py = dict.py();
        Some((Bound::from_borrowed_ptr(py, key), Bound::from_borrowed_ptr(py, value)))
    }
}

/// A leaf's `(node, result)` for the context's map. One of atomic objects (no
/// references to others) can be in no cycle: it is left out of the garbage collector's
/// lists at once (what CPython does to such a tuple at its first collection), which
/// spares every collection during the walk a visit to each of thousands of them.
fn map_entry<'py>(node: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
    let entry = PyTuple::new(node.py(), [node, node])?;
    let atomic = node.is_exact_instance_of::<PyString>()
        || node.is_exact_instance_of::<PyFloat>()
        || node.is_exact_instance_of::<PyInt>()
        || node.is_exact_instance_of::<PyBool>()
        || node.is_none()
        || node.is_exact_instance_of::<PyBytes>();
    if atomic {
        // SAFETY: a tuple just made, tracked, referenced by no one else; untracking an
        // object that holds no tracked objects is always sound.
        unsafe { pyo3::ffi::PyObject_GC_UnTrack(entry.as_ptr().cast()) };
    }
    Ok(entry)
}

/// The address of a node's exact type.
fn type_address(node: &Bound<'_, PyAny>) -> usize {
    // SAFETY: `node` is a live object: its type pointer is read, not kept.
    unsafe { pyo3::ffi::Py_TYPE(node.as_ptr()) as usize }
}

/// A node's id, as Python's `id()` gives it.
fn id_of<'py>(node: &Bound<'py, PyAny>) -> usize {
    node.as_ptr() as usize
}

impl<'py> Run<'_, 'py> {
    fn map(&self) -> PyResult<Cow<'_, Bound<'py, PyDict>>> {
        match &self.fixed {
            Some((m, _)) => Ok(Cow::Borrowed(m)),
            None => {
                Ok(Cow::Owned(self.w.context.bind(self.py).getattr(intern!(self.py, "_map"))?.cast_into::<PyDict>()?))
            }
        }
    }

    fn pending(&self) -> PyResult<Cow<'_, Bound<'py, PySet>>> {
        match &self.fixed {
            Some((_, p)) => Ok(Cow::Borrowed(p)),
            None => Ok(Cow::Owned(
                self.w.context.bind(self.py).getattr(intern!(self.py, "_pending"))?.cast_into::<PySet>()?,
            )),
        }
    }

    fn is_identity(&self, node: &Bound<'py, PyAny>) -> PyResult<bool> {
        Ok(self.w.identity_types.contains(&type_address(node)))
    }

    fn isinstance(&self, node: &Bound<'py, PyAny>, class: &Py<PyAny>) -> PyResult<bool> {
        if class.is_none(self.py) {
            return Ok(false);
        }
        node.is_instance(class.bind(self.py))
    }

    /// asdf's `_recurse(node)`.
    fn recurse(&self, slf: &Bound<'py, Walker>, node: &Bound<'py, PyAny>, depth: usize) -> PyResult<Bound<'py, PyAny>> {
        let id = id_of(node).into_pyobject(self.py)?;
        self.recurse_id(slf, node, id, depth)
    }

    /// `recurse` of a node whose id is made already.
    fn recurse_id(
        &self,
        slf: &Bound<'py, Walker>,
        node: &Bound<'py, PyAny>,
        id: Bound<'py, PyInt>,
        depth: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        if depth > self.w.max_depth {
            return Err(PyRecursionError::new_err("maximum recursion depth exceeded"));
        }
        let map = self.map()?;
        if let Some(entry) = map.get_item(&id)? {
            return entry.get_item(1);
        }
        let pending = self.pending()?;
        if pending.contains(&id)? {
            return Err(PyRuntimeError::new_err(CYCLE));
        }
        let identity = self.is_identity(node)?;
        let leaf = identity
            && !node.is_exact_instance_of::<PyDict>()
            && !node.is_exact_instance_of::<PyList>()
            && !node.is_exact_instance_of::<PyTuple>();
        if leaf {
            // The callback gives it back, it has no children and is no generator:
            // nothing between the look in the map and the store can add it there.
            if !self.w.unstored_types.contains(&type_address(node)) {
                map.set_item(&id, map_entry(node)?)?;
            }
            return Ok(node.clone());
        }
        pending.add(&id)?;
        let result = self.modify(slf, node, identity, depth);
        // `remove`, as asdf's `pending` does in its `finally` (a nested reset of the
        // context shows as its error, over the walk's own).
        if !self.pending()?.discard(&id)? {
            return Err(PyKeyError::new_err(id.unbind()));
        }
        let result = result?;
        // `_context[node] = result`.
        let map = self.map()?;
        if map.contains(&id)? {
            return Err(PyRuntimeError::new_err("Node already has an associated result"));
        }
        map.set_item(&id, (node, &result))?;
        Ok(result)
    }

    /// The inside of `_recurse`'s `with _context.pending(node)`.
    fn modify(
        &self,
        slf: &Bound<'py, Walker>,
        node: &Bound<'py, PyAny>,
        identity: bool,
        depth: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        if !node.is_exact_instance_of::<PyDict>() && self.is_dict(node)? {
            // asdf looks at an "id" (a schema's namespace); on a lazy node, looking
            // converts the value, so it is looked at as asdf does, if unused here.
            let key = intern!(self.py, "id");
            if node.contains(key)? && node.get_item(key)?.is_instance_of::<PyString>() {
                node.get_item(key)?;
            }
        }
        if self.w.postorder {
            let r = self.children(slf, node, depth)?;
            if identity { Ok(r) } else { self.call(&r) }
        } else {
            let r = if identity { node.clone() } else { self.call(node)? };
            self.children(slf, &r, depth)
        }
    }

    fn is_dict(&self, node: &Bound<'py, PyAny>) -> PyResult<bool> {
        Ok(node.is_instance_of::<PyDict>() || self.isinstance(node, &self.w.lazy_dict)?)
    }

    /// `_handle_callback`.
    fn call(&self, node: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        if self.is_identity(node)? {
            return Ok(node.clone());
        }
        let r = self.w.callback.bind(self.py).call1((node,))?;
        self.generator_step(r)
    }

    /// `_handle_generator`: a generator's first value, the generator left to the
    /// context to drain when the outermost walk ends.
    fn generator_step(&self, r: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        if r.get_type().is(self.w.generator.bind(self.py)) {
            let first = r.call_method0(intern!(self.py, "__next__"))?;
            self.w.context.bind(self.py).call_method1(intern!(self.py, "add_generator"), (&r,))?;
            return Ok(first);
        }
        Ok(r)
    }

    /// `_handle_children`.
    fn children(
        &self,
        slf: &Bound<'py, Walker>,
        node: &Bound<'py, PyAny>,
        depth: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        if let Ok(d) = node.cast_exact::<PyDict>() {
            return self.plain_mapping(slf, d, depth);
        }
        if let Ok(l) = node.cast_exact::<PyList>() {
            return self.sequence(slf, node, Some(l), depth);
        }
        if self.is_dict(node)? {
            return self.mapping(slf, node, depth);
        }
        // A named tuple is not walked as a tuple (asdf's words: cpython issue 52044).
        if node.is_instance_of::<PyTuple>() && !node.hasattr(intern!(py, "_fields"))? {
            let mut contents = Vec::new();
            for v in node.try_iter()? {
                contents.push(self.recurse(slf, &v?, depth + 1)?);
            }
            let result = node.getattr(intern!(py, "__class__"))?.call1((PyList::new(py, contents)?,))?;
            self.copy_tag(node, &result)?;
            return Ok(result);
        }
        if node.is_instance_of::<PyList>() || self.isinstance(node, &self.w.lazy_list)? {
            return self.sequence(slf, node, None, depth);
        }
        self.generator_step(node.clone())
    }

    fn copy_tag(&self, node: &Bound<'py, PyAny>, result: &Bound<'py, PyAny>) -> PyResult<()> {
        if self.isinstance(node, &self.w.tagged)? {
            let tag = intern!(self.py, "_tag");
            result.setattr(tag, node.getattr(tag)?)?;
        }
        Ok(())
    }

    /// A child of a container being filled: its result, or (when it is its own
    /// ancestor) `PendingValue` now and its place noted for later.
    fn child(
        &self,
        slf: &Bound<'py, Walker>,
        key: Bound<'py, PyAny>,
        value: Bound<'py, PyAny>,
        waiting: &mut Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
        depth: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let id = id_of(&value).into_pyobject(self.py)?;
        if self.pending()?.contains(&id)? {
            waiting.push((key, value));
            return Ok(self.w.pending_value.bind(self.py).clone());
        }
        self.recurse_id(slf, &value, id, depth + 1)
    }

    /// `_handle_mapping` of an exact `dict`: a new dict.
    fn plain_mapping(
        &self,
        slf: &Bound<'py, Walker>,
        node: &Bound<'py, PyDict>,
        depth: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let result = PyDict::new(self.py);
        let remove = self.w.remove.bind(self.py);
        let mut waiting = Vec::new();
        let size = node.len();
        let mut pos: pyo3::ffi::Py_ssize_t = 0;
        loop {
            let Some((key, value)) = next_item(node, &mut pos) else { break };
            let val = self.child(slf, key.clone(), value, &mut waiting, depth)?;
            if !val.is(remove) {
                result.set_item(key, val)?;
            }
            if node.len() != size {
                // What the dict's iterator raises when a callback changed its size.
                return Err(PyRuntimeError::new_err("dictionary changed size during iteration"));
            }
        }
        let result = result.into_any();
        self.finish(slf, &result, waiting, true)?;
        Ok(result)
    }

    /// `_handle_mapping` of any other mapping asdf walks.
    fn mapping(&self, slf: &Bound<'py, Walker>, node: &Bound<'py, PyAny>, depth: usize) -> PyResult<Bound<'py, PyAny>> {
        let result = if self.isinstance(node, &self.w.lazy_odict)? {
            self.w.ordered_dict.bind(self.py).call0()?
        } else if self.isinstance(node, &self.w.lazy_dict)? {
            PyDict::new(self.py).into_any()
        } else {
            node.getattr(intern!(self.py, "__class__"))?.call0()?
        };
        self.copy_tag(node, &result)?;
        let remove = self.w.remove.bind(self.py);
        let mut waiting = Vec::new();
        for item in node.call_method0(intern!(self.py, "items"))?.try_iter()? {
            let item = item?;
            let (key, value) = (item.get_item(0)?, item.get_item(1)?);
            let val = self.child(slf, key.clone(), value, &mut waiting, depth)?;
            if !val.is(remove) {
                result.set_item(key, val)?;
            }
        }
        self.finish(slf, &result, waiting, true)?;
        Ok(result)
    }

    /// `_handle_mutable_sequence`. An exact list is read as its iterator reads it: by
    /// index, up to its length at each step.
    fn sequence(
        &self,
        slf: &Bound<'py, Walker>,
        node: &Bound<'py, PyAny>,
        plain: Option<&Bound<'py, PyList>>,
        depth: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        let new_list = plain.is_some() || self.isinstance(node, &self.w.lazy_list)?;
        let result =
            if new_list { PyList::empty(py).into_any() } else { node.getattr(intern!(py, "__class__"))?.call0()? };
        if plain.is_none() {
            self.copy_tag(node, &result)?;
        }
        let mut waiting = Vec::new();
        let put = |i: usize, value: Bound<'py, PyAny>, waiting: &mut Vec<_>| -> PyResult<()> {
            let item = self.child(slf, i.into_pyobject(py)?.into_any(), value, waiting, depth)?;
            match result.cast::<PyList>() {
                Ok(l) if new_list => l.append(item),
                _ => result.call_method1(intern!(py, "append"), (item,)).map(|_| ()),
            }
        };
        if let Some(list) = plain {
            let mut i = 0;
            while i < list.len() {
                put(i, list.get_item(i)?, &mut waiting)?;
                i += 1;
            }
        } else {
            for (i, value) in node.try_iter()?.enumerate() {
                put(i, value?, &mut waiting)?;
            }
        }
        self.finish(slf, &result, waiting, false)?;
        Ok(result)
    }

    /// A container's pending items handed to the context, to be walked when it drains
    /// its generators, where asdf's container generator would be in its list.
    fn finish(
        &self,
        slf: &Bound<'py, Walker>,
        result: &Bound<'py, PyAny>,
        waiting: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
        is_mapping: bool,
    ) -> PyResult<()> {
        if waiting.is_empty() {
            return Ok(());
        }
        let py = self.py;
        let items = waiting.into_iter().map(|(k, v)| PyTuple::new(py, [k, v])).collect::<PyResult<Vec<_>>>()?;
        let filler = self.w.finish.bind(py).call1((slf, result, PyList::new(py, items)?, is_mapping))?;
        self.w.context.bind(py).call_method1(intern!(py, "add_generator"), (filler,))?;
        Ok(())
    }
}
