"""rasdf: ASDF (Advanced Scientific Data Format) files for Python, read and written in Rust.

>>> import rasdf
>>> with rasdf.open("obs.asdf") as af:          # doctest: +SKIP
...     data = af["sci/data"][...]              # a numpy array
...     af.info()                               # prints the tree

``rasdf.open`` gives the tree as the reference library (``asdf``) reads it with PyYAML:
dicts, lists, strings, numbers, ``datetime``, ``bytes``; tagged mappings, sequences and
strings keep their tag as ``.tag``; ``core/ndarray`` nodes are lazy :class:`NDArray`
objects, read on first use (uncompressed blocks as read-only views on the mapped file,
with no copy) that act as the numpy arrays they hold. The :class:`AsdfFile` is used as
the reference's: a mapping of the tree's top level, ``info()``, ``search()``,
``write_to()``, ``update()``. ``rasdf.write`` writes a tree of the same kinds of
objects and numpy arrays, atomically.
"""

from __future__ import annotations

import copy
import datetime as _dt
import functools
import io
import os
import re
import sys
import time
from typing import Any, Callable, Dict, Iterator, Mapping, NamedTuple, Optional, Union

import numpy as np

from . import _display, _rasdf
from ._display import AsdfSearchResult
from ._rasdf import AsdfError

__version__: str = _rasdf.__version__

__all__ = [
    "AsdfError",
    "AsdfFile",
    "AsdfSearchResult",
    "NDArray",
    "TaggedDict",
    "TaggedList",
    "TaggedString",
    "open",
    "to_dask",
    "validate",
    "write",
]

PathLike = Union[str, "os.PathLike[str]"]
# A codec name: None, "none", "zlib", "bzp2", "lz4", "zstd" or "blsc".
Codec = Optional[str]


class TaggedDict(dict):
    """A mapping with a YAML tag (``.tag``, the full tag URI)."""

    __slots__ = ("tag", "__weakref__")

    def __init__(self, *args: Any, tag: Optional[str] = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tag = tag

    def __repr__(self) -> str:
        return f"TaggedDict({dict.__repr__(self)}, tag={self.tag!r})"


class TaggedList(list):
    """A sequence with a YAML tag (``.tag``)."""

    __slots__ = ("tag",)

    def __init__(self, *args: Any, tag: Optional[str] = None) -> None:
        super().__init__(*args)
        self.tag = tag

    def __repr__(self) -> str:
        return f"TaggedList({list.__repr__(self)}, tag={self.tag!r})"


class TaggedString(str):
    """A string with a YAML tag (``.tag``), such as ``!unit/unit-1.0.0 m``."""

    tag: Optional[str]

    def __new__(cls, value: str = "", tag: Optional[str] = None) -> "TaggedString":
        obj = super().__new__(cls, value)
        obj.tag = tag
        return obj

    def __repr__(self) -> str:
        return f"TaggedString({str.__repr__(self)}, tag={self.tag!r})"


def _timestamp(y, mo, d, h=None, mi=None, s=None, us=None, offset=None):
    """The ``datetime`` or ``date`` PyYAML makes of a YAML timestamp."""
    if h is None:
        return _dt.date(y, mo, d)
    tz = None
    if offset is not None:
        tz = _dt.timezone.utc if offset == 0 else _dt.timezone(_dt.timedelta(minutes=offset))
    return _dt.datetime(y, mo, d, h, mi, s, us, tzinfo=tz)


def _apply_mask(array: np.ndarray, mask: Any) -> np.ndarray:
    """A masked array of ``array`` as the reference makes one from a ``mask`` value: an
    array of flags, or a scalar that masks the elements equal to it (NaN: the NaNs)."""
    if isinstance(mask, NDArray):
        mask = mask.read()
    try:
        if isinstance(mask, np.ndarray):
            return np.ma.array(array, mask=mask.view())
        if mask is not None and np.isscalar(mask):
            if isinstance(mask, (str, bytes)):
                raise TypeError(f"a mask that is text ({mask!r}) masks no number")
            try:
                if np.isnan(mask):
                    return np.ma.array(array, mask=np.isnan(array))
            except TypeError:
                pass
            return np.ma.masked_values(array, mask)
    # numpy's DTypePromotionError is a TypeError; its MaskError (a mask of another size
    # than its data) an MAError.
    except (TypeError, ValueError, np.ma.MAError) as e:
        # The reference fails to make such a masked array too: a damaged node.
        raise AsdfError(f"the node's mask cannot mask its data ({array.dtype}): {e}") from None
    return array


class _Opened(NamedTuple):
    """How the file of a lazy array was opened."""

    #: Arrays are read into writable copies.
    copy_arrays: bool
    #: What tells this version of the file from a later one (see ``_identity``), or
    #: ``None`` when nothing does (a file read from bytes).
    identity: Optional[tuple]
    #: Opened with ``memmap=True``: arrays are views of the mapped file, as they lie.
    memmap: bool = False


_DEFAULT_OPENED = _Opened(False, None)


def _loaded(obj: Any, memo: dict[int, Any] | None = None) -> Any:
    """``obj`` with every lazy array in it (in lists, tuples and dicts too, as numpy
    functions take them) replaced by its data. A container reached again (by another
    path, or inside itself) is copied once."""
    if isinstance(obj, NDArray):
        return obj.read()
    kind = type(obj)
    if kind not in (list, tuple, dict):
        return obj
    if memo is None:
        memo = {}
    if id(obj) in memo:
        return memo[id(obj)]
    if kind is tuple:
        # A tuple is made whole: inside itself (through a list), it stays as it was.
        memo[id(obj)] = obj
        memo[id(obj)] = out = tuple(_loaded(o, memo) for o in obj)
        return out
    # A list or dict is registered before it is filled: inside itself, it is its copy.
    memo[id(obj)] = out = kind()
    if kind is dict:
        out.update((k, _loaded(v, memo)) for k, v in obj.items())
    else:
        out.extend(_loaded(o, memo) for o in obj)
    return out


def _delegate(name: str, arity: int) -> Any:
    """A special method of :class:`NDArray` run by the loaded array: ``arity`` 1 for a
    unary one (``-a``), 2 for a binary one (``a + b``)."""
    if arity == 1:

        def method(self: "NDArray") -> Any:
            return getattr(self.read(), name)()

    else:

        def method(self: "NDArray", other: Any) -> Any:  # type: ignore[misc]
            return getattr(self.read(), name)(_loaded(other))

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``numpy.ndarray.{name}`` of the data."
    return method


def _in_place(name: str) -> Any:
    """An in-place operator of :class:`NDArray`: the loaded array changed (it must be
    writable: see ``rasdf.open(copy_arrays=True)``), the node kept."""

    def method(self: "NDArray", other: Any) -> Any:
        a = self.read()
        out = getattr(a, name)(_loaded(other))
        if out is NotImplemented:
            return out
        return self if out is a else out

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``numpy.ndarray.{name}`` of the data, in place."
    return method


class NDArray:
    """A ``core/ndarray`` node, read on first use, that acts as the numpy array it holds.

    ``.shape``, ``.dtype``, ``.ndim``, ``.size``, ``.nbytes``, ``.itemsize`` and
    ``len()`` come from the tree and the block headers, with nothing decoded.
    ``arr[...]`` (or ``arr.read()``) gives the data as a numpy array, or a
    ``numpy.ma.MaskedArray`` when the node is masked. Everything else a numpy array
    does, the node does with its data: operators (``arr == 0``, ``arr + 1``), ufuncs
    and numpy functions (``np.mean(arr)``: on a masked node, the masked array's mean),
    truth value, iteration, and every other attribute and method (``.T``,
    ``.astype``, ``.mean()``...). ``numpy.asarray(arr)`` is the data without its mask
    (as the reference gives it). An lz4 array's or a remote array's rows (``arr[a:b]``)
    are read alone before the whole array is.

    Uncompressed data is a read-only view on the mapped file (no copy); compressed
    blocks are decoded once, with the GIL released, and shared by every array of the
    block; with ``rasdf.open(..., copy_arrays=True)`` the data is a writable copy.
    Arrays read stay valid after the file is closed.
    """

    __slots__ = ("_file", "_id", "_shape", "_spec", "_dtype", "tag", "_asdf_mask", "_array", "_opened", "__weakref__")

    #: Marks lazy arrays for ``rasdf.write``.
    __asdf_lazy_array__ = True
    #: It defines ``==``: no hash, as numpy arrays.
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, file, node_id, shape, dtype, tag, mask, opened=None):
        self._file = file
        self._id = node_id
        self._shape = shape
        self._spec = dtype
        self._dtype = None
        self.tag: Optional[str] = tag
        self._asdf_mask = mask
        self._array = None
        self._opened: _Opened = opened or _DEFAULT_OPENED

    def _meta(self) -> None:
        # A node whose shape could not be found without reading: read it, which says why.
        if self._shape is None:
            shape, spec = self._file.array_meta(self._id)
            self._shape, self._spec = tuple(shape), spec

    @property
    def shape(self) -> tuple:
        """The array's shape (a streamed array's rows counted from its block)."""
        if self._array is not None:
            return self._array.shape
        self._meta()
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype (byte order as in the file)."""
        if self._array is not None:
            return self._array.dtype
        if self._dtype is None:
            self._meta()
            self._dtype = np.dtype(self._spec)
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of the elements (as numpy counts them: the mask not included)."""
        return self.size * self.dtype.itemsize

    @property
    def masked(self) -> bool:
        """Whether the node has a ``mask`` (reading gives a ``numpy.ma.MaskedArray``)."""
        return self._asdf_mask is not None

    @property
    def _mask(self) -> Any:
        # numpy.ma takes any object's mask as ``getattr(a, "_mask", nomask)``
        # (``getmask``, ``np.ma.array``, ``mean``, ``compressed``...): a masked node's
        # mask (read with the data), and no such attribute for one that is not masked.
        # An array in a block with no mask node is not masked: told without a read.
        if self._asdf_mask is None and self._array is None:
            try:
                block, _ = self._file.array_storage(self._id)
            except Exception:  # noqa: BLE001 - the read below says why
                block = None
            if block is not None:
                raise AttributeError("_mask")
        a = self.read()
        if isinstance(a, np.ma.MaskedArray):
            return a._mask
        raise AttributeError("_mask")

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def read(self) -> np.ndarray:
        """The data as a numpy array (cached: later calls give the same object)."""
        if self._array is None:
            array, inline_mask = self._file.read_array(self._id)
            if self._opened.copy_arrays:
                array = array.copy()
            elif not array.flags.aligned and array.dtype.itemsize and not self._opened.memmap:
                # Lent from a file read whole at open, where the file has the bytes: its
                # elements may lie misaligned, which numpy handles more slowly (and its
                # matrix products round otherwise). A read-only copy, aligned, as the
                # reference reads one. (Not of items of no bytes: a copy widens S0 to S1.)
                array = array.copy()
                array.flags.writeable = False
            if inline_mask is not None:
                m = inline_mask.reshape(array.shape)
                if m.any():
                    array = np.ma.array(array, mask=m)
            self._array = _apply_mask(array, self._asdf_mask)
        return self._array

    def __getitem__(self, key: Any) -> Any:
        if self._array is None and self._asdf_mask is None and not self._opened.copy_arrays:
            part = self._rows(key)
            if part is not None:
                return part
        return self.read()[_loaded(key)]

    def __setitem__(self, key: Any, value: Any) -> None:
        """Sets elements of the data (writable only with ``copy_arrays=True``)."""
        self.read()[_loaded(key)] = _loaded(value)

    def _rows(self, key: Any) -> Any:
        """``self[key]`` from the rows it needs alone (an lz4 array's records that hold
        them, a remote file's uncompressed array's byte range), sliced on its first axis
        by an int or a step-1 slice, before the whole array is read; or ``None``."""
        first, rest = (key[0], key[1:]) if isinstance(key, tuple) and key else (key, ())
        if not self.shape or self.dtype.itemsize == 0:
            return None  # (numpy cannot view bytes as elements of no size)
        if any(isinstance(k, NDArray) for k in rest):
            return None
        if isinstance(first, (int, np.integer)) and not isinstance(first, (bool, np.bool_)):
            i = int(first) + (self.shape[0] if first < 0 else 0)
            if not 0 <= i < self.shape[0]:
                return None  # numpy's own IndexError, from the whole array
            start, stop, pick = i, i + 1, (0,)
        elif isinstance(first, slice) and first.step in (None, 1):
            for bound in (first.start, first.stop):
                if bound is not None and not isinstance(bound, (int, np.integer)):
                    return None  # numpy's own error
            start, stop, _ = first.indices(self.shape[0])
            stop = max(start, stop)
            pick = (slice(None),)
        else:
            return None
        if start == 0 and stop == self.shape[0]:
            return None  # every row: the whole array, read once and kept
        got = self._file.read_rows(self._id, start, stop)
        if got is None:
            return None
        data, shape = got
        rows = np.frombuffer(data, dtype=self.dtype).reshape(shape)
        return rows[pick + tuple(rest)]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        # As the reference's: a masked node's data without its mask (numpy functions and
        # methods see the masked array: see __array_function__).
        a = self.read()
        if isinstance(a, np.ma.MaskedArray):
            a = a.data
        if dtype is not None and np.dtype(dtype) != a.dtype:
            if copy is False:
                raise ValueError("a dtype change needs a copy")
            return a.astype(dtype)
        if copy:
            return a.copy()
        return a

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if "out" in kwargs:
            kwargs["out"] = _loaded(kwargs["out"])
        return getattr(ufunc, method)(*_loaded(inputs), **kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return func(*_loaded(args), **_loaded(kwargs))

    def __getattr__(self, name: str) -> Any:
        # Anything else an array has, from the data (read on first use); private and
        # special names are not looked up there (numpy's protocols go through
        # __array__, so that a masked node converts as the reference's does).
        if name.startswith("_"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(self.read(), name)

    def __dir__(self) -> Any:
        kind = np.ma.MaskedArray if self._asdf_mask is not None else np.ndarray
        return sorted(set(object.__dir__(self)) | {n for n in dir(kind) if not n.startswith("_")})

    def __iter__(self) -> Iterator[Any]:
        return iter(self.read())

    def __contains__(self, value: Any) -> bool:
        return _loaded(value) in self.read()

    def __bool__(self) -> bool:
        return bool(self.read())

    def __round__(self, ndigits: Any = None) -> Any:
        # As round() of the data: numpy scalars round, arrays have no __round__ (TypeError).
        return round(self.read()) if ndigits is None else round(self.read(), ndigits)

    def __delitem__(self, key: Any) -> None:
        del self.read()[_loaded(key)]

    def __copy__(self) -> Any:
        return copy.copy(self.read())

    def __deepcopy__(self, memo: Any) -> Any:
        return copy.deepcopy(self.read(), memo)

    def __reduce__(self) -> Any:
        # Pickled as its data: the file stays in this process.
        return (_unpickle_data, (self.read(),))

    def __format__(self, spec: str) -> str:
        return format(self.read(), spec) if spec else str(self)

    def __str__(self) -> str:
        return str(self._array) if self._array is not None else repr(self)

    def to_dask(self, chunks: Any = None) -> Any:
        """A ``dask.array.Array`` of this array, whose tasks open the file (by its path or
        URL, once per process and version of the file) and read their chunk: picklable,
        so it computes on threads and on a distributed cluster of processes alike. A task
        that finds the file changed since the graph was made (another inode, size or
        modification time; another length of a URL) fails rather than read it.
        ``chunks=None`` follows the storage: an lz4 block the rows of about one of its 4
        MiB records, a zlib or bzp2 block one chunk (it is decoded whole), an
        uncompressed array slabs of about 64 MiB along its first axis. Other ``chunks``
        as Dask takes them."""
        location = self._file.path
        path = self._file.node_path(self._id)
        if location is None or path is None:
            raise ValueError("this array cannot be read by path: its file has no path, or its node no tree path")
        identity = self._opened.identity
        if identity is None:
            raise ValueError("this array's file cannot be told apart from a later version of it")
        return _dask_array(str(location), path, self.shape, self.dtype, self.masked, self._chunks(chunks), identity)

    def _chunks(self, chunks: Any) -> Any:
        if chunks is not None:
            return chunks
        shape = self.shape
        if not shape:
            return ()
        block, compression = self._file.array_storage(self._id)
        row = self.dtype.itemsize
        for d in shape[1:]:
            row *= d
        if compression == "lz4":
            # The reference's lz4 is a run of records of 4 MiB decoded alone: a chunk's
            # rows in about one record (a remote file's chunk decodes only its records).
            rows = max(1, _LZ4_RECORD_BYTES // max(row, 1))
        elif compression is not None:
            return shape  # zlib, bzp2: the block is decoded whole, one chunk
        else:
            rows = max(1, _DASK_CHUNK_BYTES // max(row, 1))
        return (min(rows, max(shape[0], 1)),) + tuple(shape[1:])

    def __repr__(self) -> str:
        if self._array is not None:
            return repr(self._array)
        kind = "masked array" if self._asdf_mask is not None else "array"
        try:
            return f"<{kind} (unloaded) shape: {list(self.shape)} dtype: {self.dtype}>"
        except AsdfError as e:
            return f"<{kind} (unreadable: {e})>"


def _unpickle_data(data: Any) -> Any:
    return data


for _name in (
    "__lt__", "__le__", "__eq__", "__ne__", "__gt__", "__ge__",
    "__add__", "__sub__", "__mul__", "__matmul__", "__truediv__", "__floordiv__", "__mod__",
    "__divmod__", "__pow__", "__lshift__", "__rshift__", "__and__", "__xor__", "__or__",
    "__radd__", "__rsub__", "__rmul__", "__rmatmul__", "__rtruediv__", "__rfloordiv__",
    "__rmod__", "__rdivmod__", "__rpow__", "__rlshift__", "__rrshift__", "__rand__",
    "__rxor__", "__ror__",
):  # fmt: skip
    setattr(NDArray, _name, _delegate(_name, 2))
for _name in ("__neg__", "__pos__", "__abs__", "__invert__", "__int__", "__float__", "__complex__", "__index__"):
    setattr(NDArray, _name, _delegate(_name, 1))
for _name in (
    "__iadd__", "__isub__", "__imul__", "__imatmul__", "__itruediv__", "__ifloordiv__",
    "__imod__", "__ipow__", "__ilshift__", "__irshift__", "__iand__", "__ixor__", "__ior__",
):  # fmt: skip
    setattr(NDArray, _name, _in_place(_name))
del _name


# Dask: the default size of an uncompressed array's chunks, and of an lz4 record.
_DASK_CHUNK_BYTES = 64 << 20
_LZ4_RECORD_BYTES = 4 << 20
# Files opened by Dask tasks, by path or URL and version (see `_identity`): each process
# opens one version of a file once.
_SHARED_FILES: Dict[tuple, "AsdfFile"] = {}
_SHARED_LOCK = __import__("threading").Lock()


def _asdf_error(message: str, file: Optional[str] = None, path: Optional[str] = None) -> AsdfError:
    """An :class:`AsdfError` made here, with its location attributes."""
    e = AsdfError(message)
    e.file, e.block, e.offset, e.path, e.line = file, None, None, path, None
    return e


def _local_identity(path: str) -> tuple:
    """What tells this version of a local file from another: device, inode, size and
    modification time (a rewrite in place changes the last two, a new file put in its
    place the inode)."""
    st = os.stat(path)
    return ("file", st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _remote_identity(f: "_rasdf.File") -> tuple:
    """What tells this version of a remote file from another: its length, and its
    validators (ETag, Last-Modified) when the library gives them."""
    return ("url", f.remote_length, getattr(f, "remote_validators", None))


def _shared_file(location: str, identity: tuple) -> "AsdfFile":
    """The file at ``location`` opened in this process, if it is still the version
    ``identity`` names; else an :class:`AsdfError` (a graph made before the file
    changed never reads the new one, nor a stale copy)."""
    if identity[0] == "file":
        try:
            now = _local_identity(location)
        except OSError:
            now = None
        if now != identity:
            raise _asdf_error(
                "the file changed since the Dask graph was made (it is another file now): make the graph again",
                file=location,
            )
    key = (location, identity)
    with _SHARED_LOCK:
        af = _SHARED_FILES.get(key)
        if af is not None and not af.closed:
            return af
        af = open(location)
        if af._identity != identity:
            af.close()
            raise _asdf_error(
                "the file changed since the Dask graph was made (it is another file now): make the graph again",
                file=location,
            )
        # Other versions of the file are read by no graph that can still run: let them go
        # (tasks running with them keep them alive).
        for old in [k for k in _SHARED_FILES if k[0] == location]:
            del _SHARED_FILES[old]
        _SHARED_FILES[key] = af
        return af


class _DaskSource:
    """What a Dask task reads: an array by its file's path (or URL), the version of the
    file it was made from, and its tree path. Strings and numbers only, so it pickles
    small; the file is opened in the process that reads (once: see ``_shared_file``).
    No ``copy`` method, so that ``dask.array.from_array`` does not copy it."""

    __slots__ = ("location", "path", "shape", "dtype", "ndim", "masked", "identity")

    def __init__(self, location: str, path: str, shape: tuple, dtype: np.dtype, masked: bool, identity: tuple) -> None:
        self.location, self.path, self.shape, self.dtype, self.masked = location, path, shape, dtype, masked
        self.identity = identity
        self.ndim = len(shape)

    def __getitem__(self, key: Any) -> Any:
        return _shared_file(self.location, self.identity)[self.path][key]

    def __reduce__(self) -> Any:
        return (_DaskSource, (self.location, self.path, self.shape, self.dtype, self.masked, self.identity))


def _dask_array(
    location: str, path: str, shape: tuple, dtype: np.dtype, masked: bool, chunks: Any, identity: tuple
) -> Any:
    import dask.array as da
    from dask.base import tokenize

    source = _DaskSource(location, path, tuple(shape), dtype, masked, identity)
    meta = np.ma.masked_array(np.empty((0,) * len(shape), dtype)) if masked else np.empty((0,) * len(shape), dtype)
    # The version in the name: graphs of two versions of a file share no keys.
    name = "rasdf-" + tokenize(location, path, tuple(shape), str(dtype), chunks, identity)
    return da.from_array(source, chunks=chunks, name=name, lock=False, asarray=False, meta=meta, fancy=False)


def to_dask(files: Any, path: str, *, chunks: Any = None, axis: int = 0) -> Any:
    """One Dask array of the array at tree ``path`` of each of ``files`` (paths or
    URLs), stacked along a new axis ``axis``: one task graph for many files. One path
    (a ``str`` or ``os.PathLike``) gives that file's array, not stacked. Each file is
    opened here for its shape, dtype and version only; the tasks read the data (see
    :meth:`NDArray.to_dask`)."""
    import dask.array as da

    single = isinstance(files, (str, bytes, os.PathLike))
    arrays = []
    for f in [files] if single else files:
        with open(f) as af:
            node = af[path]
            if not isinstance(node, NDArray):
                raise TypeError(f"{f}: {path} is not an array")
            arrays.append(node.to_dask(chunks))
    if not arrays:
        raise ValueError("no files")
    if single:
        return arrays[0]
    return da.stack(arrays, axis=axis)


_MISSING = object()


def _key_text(key: Any) -> str:
    """A mapping key as a path step names it (as ``rasdf``'s paths write keys)."""
    if isinstance(key, str):
        return key
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, (bytes, bytearray)):
        return "<binary>"
    if isinstance(key, (tuple, list)):
        return "<sequence>"
    if isinstance(key, (frozenset, dict)):
        return "<mapping>"
    if isinstance(key, _dt.datetime):
        return key.isoformat(" ")
    return str(key)


def _unescape(step: str) -> str:
    return step.replace("~1", "/").replace("~0", "~")


def _escape(step: str) -> str:
    return step.replace("~", "~0").replace("/", "~1")


def _child(node: Any, step: str) -> Any:
    """The child of ``node`` a path step names (see ``AsdfFile.__getitem__``), or
    ``_MISSING``."""
    if isinstance(node, dict):
        for s in (step, _unescape(step)) if "~" in step else (step,):
            if s in node:
                return node[s]
            for k, v in node.items():
                if not isinstance(k, str) and _key_text(k) == s:
                    return v
        return _MISSING
    if isinstance(node, (list, tuple)):
        digits = step[1:] if step.startswith("+") else step
        if digits.isdigit() and digits.isascii() and int(digits) < len(node):
            return node[int(digits)]
    return _MISSING


def _steps(path: str) -> list:
    return [s for s in path.split("/") if s]


def _walk(root: Any, path: Any) -> Any:
    """The node at ``path`` from ``root``: a ``str`` path walked step by step; any other
    key looked up in the root."""
    if not isinstance(path, str):
        try:
            return root[path]
        except (KeyError, IndexError, TypeError):
            raise KeyError(path) from None
    node = root
    for step in _steps(path):
        node = _child(node, step)
        if node is _MISSING:
            raise KeyError(path)
    return node


def _array_paths(root: Any) -> Dict[str, Any]:
    """Every array of a Python tree (lazy or numpy) by path (``sci/data``, keys escaped),
    depth first in tree order, each container and array once."""
    found: Dict[str, Any] = {}
    seen = set()
    stack = [("", root)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, (NDArray, np.ndarray)):
            if id(node) not in seen:
                seen.add(id(node))
                found[path] = node
            continue
        if isinstance(node, (dict, list, tuple)):
            if id(node) in seen:
                continue
            seen.add(id(node))
            items = node.items() if isinstance(node, dict) else enumerate(node)
            prefix = path + "/" if path else ""
            stack.extend(reversed([(prefix + _escape(_key_text(k)), v) for k, v in items]))
    return found


_ARRAY_STORAGES = (None, "internal")


class AsdfFile:
    """An open ASDF file: ``.tree``, ``af[path]``, the mapping of the tree's top level
    (``keys()``, ``len()``, iteration), ``.arrays()``, ``.info()``, ``.search()``,
    ``.write_to()``, ``.update()``.

    Use it as a context manager, or call :meth:`close`. Arrays read stay valid after
    ``close()``; lazy arrays not yet read refuse to read then.
    """

    def __init__(
        self,
        file: "_rasdf.File",
        *,
        opened: Optional[_Opened] = None,
        mode: str = "r",
        update_path: Optional[str] = None,
    ) -> None:
        self._file = file
        self._tree: Any = None
        self._opened = opened or _DEFAULT_OPENED
        self._mode = mode
        # The path `update()` rewrites (a local file opened by path with mode "rw").
        self._update_path = update_path
        self._classes = _classes(self._opened)

    @property
    def _identity(self) -> Optional[tuple]:
        return self._opened.identity

    @property
    def tree(self) -> Any:
        """The tree: dicts, lists, scalars, tagged objects and lazy :class:`NDArray` nodes
        (built on first use; parts got before by path or ``arrays()`` are the same
        objects). Edits to it are seen by ``af[path]``, ``search()``, ``info()``,
        ``write_to()`` and ``update()``."""
        if self._tree is None:
            self._tree = self._file.tree(self._classes)
            _note_source(self._tree, self._file.standard)
        return self._tree

    @tree.setter
    def tree(self, tree: Any) -> None:
        self._tree = tree

    def __getitem__(self, path: Any) -> Any:
        """The node at ``path``: keys and list indices joined by ``/`` (JSON-pointer
        escapes ``~1`` for ``/`` and ``~0`` for ``~`` in keys), found as ``rasdf``'s
        command line and library find them; a key that is not a ``str`` is looked up in
        the top level. Before ``.tree`` is built only that node is built (the object
        ``.tree`` will hold there); after, ``.tree`` is walked, edits included."""
        if self._tree is None and isinstance(path, str):
            node = self._file.node(path, self._classes)
            if node is None:
                raise KeyError(path)
            return node
        return _walk(self.tree, path)

    def __setitem__(self, path: Any, value: Any) -> None:
        """Sets the node at ``path`` (its parent must exist) in ``.tree``."""
        parent, last = self._parent(path)
        if isinstance(parent, list):
            parent[_index(last, len(parent), path)] = value
        else:
            parent[last] = value

    def __delitem__(self, path: Any) -> None:
        """Removes the node at ``path`` from ``.tree``."""
        parent, last = self._parent(path)
        if isinstance(parent, list):
            del parent[_index(last, len(parent), path)]
            return
        if last not in parent:
            raise KeyError(path)
        del parent[last]

    def _parent(self, path: Any) -> tuple:
        """``(parent container, key)`` of ``path`` in ``.tree``: the key as it is in the
        parent when there (a step naming an existing key by its text or escapes), else
        the step unescaped."""
        if not isinstance(path, str):
            return self.tree, path
        steps = _steps(path)
        if not steps:
            raise KeyError(path)
        parent = _walk(self.tree, "/".join(steps[:-1]))
        last = steps[-1]
        if isinstance(parent, dict):
            if last not in parent:
                for s in (last, _unescape(last)):
                    keys = [k for k in parent if k == s or (not isinstance(k, str) and _key_text(k) == s)]
                    if keys:
                        return parent, keys[0]
                last = _unescape(last)
            return parent, last
        if isinstance(parent, list):
            return parent, last
        raise KeyError(path)

    def __contains__(self, path: Any) -> bool:
        try:
            self[path]
        except KeyError:
            return False
        return True

    def keys(self) -> Any:
        """The keys of the tree's top level (as the reference's ``AsdfFile.keys``)."""
        tree = self.tree
        return tree.keys() if isinstance(tree, Mapping) else {}.keys()

    def values(self) -> Any:
        tree = self.tree
        return tree.values() if isinstance(tree, Mapping) else {}.values()

    def items(self) -> Any:
        tree = self.tree
        return tree.items() if isinstance(tree, Mapping) else {}.items()

    def get(self, path: Any, default: Any = None) -> Any:
        """``af[path]``, or ``default`` when there is no such node."""
        try:
            return self[path]
        except KeyError:
            return default

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def _ipython_key_completions_(self) -> list:
        return [k for k in self.keys() if isinstance(k, str)]

    def arrays(self) -> Dict[str, Any]:
        """Every array by its tree path (``"sci/data"``), in tree order; nothing is
        decoded. Before ``.tree`` is built, the file's ndarray nodes (and the rest of the
        tree is not built); after, the arrays ``.tree`` holds (numpy arrays put there
        too)."""
        if self._tree is not None:
            return _array_paths(self._tree)
        return {path.lstrip("/"): a for path, a in self._file.arrays(self._classes)}

    def info(
        self,
        max_rows: Any = _display.DEFAULT_MAX_ROWS,
        max_cols: Optional[int] = _display.DEFAULT_MAX_COLS,
        show_values: bool = _display.DEFAULT_SHOW_VALUES,
        show_blocks: bool = False,
        stats: bool = False,
    ) -> None:
        """Prints the tree, as the reference's ``info()`` does (see :meth:`info_text`,
        which gives the text)."""
        print(self.info_text(max_rows, max_cols, show_values, show_blocks, stats), end="")

    def info_text(
        self,
        max_rows: Any = _display.DEFAULT_MAX_ROWS,
        max_cols: Optional[int] = _display.DEFAULT_MAX_COLS,
        show_values: bool = _display.DEFAULT_SHOW_VALUES,
        show_blocks: bool = False,
        stats: bool = False,
    ) -> str:
        """The text :meth:`info` prints: the tree as ``rasdf info`` (and the reference's
        ``info``) draws it, at most ``max_rows`` lines (an int; a tuple, per level; or
        ``None``: all) of ``max_cols`` characters (``None``: uncut), with values unless
        ``show_values`` is false; arrays on one line with their storage. ``show_blocks``
        adds each block's header, ``stats`` each array's statistics (every array read).
        Before ``.tree`` is built the file's tree is drawn (by the Rust library, fast on
        large trees), after it ``.tree`` with its edits."""
        if self._tree is None and not isinstance(max_rows, tuple):
            return self._file.info(max_rows, max_cols, show_values, stats, show_blocks)
        lines = _display.render(
            self.tree, max_rows=max_rows, max_cols=max_cols, show_values=show_values, file_root=True
        )
        text = "".join(line + "\n" for line in lines)
        if show_blocks or stats:
            # The file's block tables and statistics alone (its tree drawn in no rows,
            # which leaves the one line "Some nodes not shown." first).
            extra = self._file.info(0, max_cols, show_values, stats, show_blocks)
            text += extra.split("\n", 1)[1] if "\n" in extra else ""
        return text

    def search(
        self,
        key: Any = _display.NOT_SET,
        type_: Any = _display.NOT_SET,
        value: Any = _display.NOT_SET,
        filter_: Optional[Callable[..., bool]] = None,
    ) -> "AsdfSearchResult":
        """Searches ``.tree`` (edits included), as the reference's ``AsdfFile.search``:
        see :class:`AsdfSearchResult` for ``key``, ``type_``, ``value`` and ``filter_``,
        and what the result gives (``.paths``, ``.nodes``, ``.node``, ``.path``, its
        drawing as ``repr()``)."""
        result = _display.AsdfSearchResult(["root"], self.tree, file_root=True)
        return result.search(key=key, type_=type_, value=value, filter_=filter_)

    def _write_arguments(
        self,
        all_array_storage: Optional[str],
        all_array_compression: Any,
        compression_kwargs: Optional[Mapping[str, Any]],
        pad_blocks: Any,
        include_block_index: bool,
        version: Optional[str],
        write_checksums: bool,
        compression: Any,
        compression_level: Optional[int],
    ) -> dict:
        """``rasdf.write``'s arguments for the reference's ``write_to``/``update`` ones,
        refusing what rasdf does not write."""
        if all_array_storage not in _ARRAY_STORAGES:
            raise ValueError(f"all_array_storage={all_array_storage!r}: rasdf writes every array to a block ('internal')")
        if pad_blocks not in (False, None, 0):
            raise ValueError("pad_blocks: rasdf writes blocks without padding (update() rewrites the whole file)")
        if version is not None and str(version) != self.version:
            raise ValueError(f"version={version!r}: rasdf writes the ASDF Standard version it writes, not another")
        level = compression_level
        for k, v in (compression_kwargs or {}).items():
            if k != "level":
                raise ValueError(f"compression_kwargs: rasdf takes only 'level', not {k!r}")
            level = v
        if compression is _display.NOT_SET:
            if all_array_compression == "input":
                # Each array of the file with the compression it has there (rasdf.write
                # keeps a lazy array's codec), a new one stored as is.
                compression = None
            else:
                # The reference's None (or ""): stored as is, whatever the array had.
                compression = all_array_compression or "none"
        return dict(
            compression=compression,
            compression_level=level,
            include_index=include_block_index,
            checksums=write_checksums,
        )

    def write_to(
        self,
        fd: Any,
        all_array_storage: Optional[str] = None,
        all_array_compression: Any = "input",
        compression_kwargs: Optional[Mapping[str, Any]] = None,
        pad_blocks: Any = False,
        include_block_index: bool = True,
        version: Optional[str] = None,
        write_checksums: bool = True,
        *,
        compression: Any = _display.NOT_SET,
        compression_level: Optional[int] = None,
    ) -> None:
        """Writes ``.tree`` (edits included) with its arrays to ``fd`` (a path, written
        atomically as :func:`rasdf.write` writes; or a binary file object), as the
        reference's ``write_to``; this file stays as it is and open.

        ``all_array_compression``: ``"input"`` (the default) keeps each array of the
        file compressed as it is there (arrays put in the tree are not compressed);
        ``None``, ``"zlib"``, ``"bzp2"``, ``"lz4"``, ``"zstd"`` or ``"blsc"`` for every
        array. ``compression`` (as :func:`rasdf.write`: a codec, or ``{path: codec}``)
        overrides it. ``compression_kwargs={"level": n}`` or ``compression_level``: the
        level. ``include_block_index`` and ``write_checksums`` as the reference's.
        ``all_array_storage`` other than ``"internal"``, ``pad_blocks`` and another
        ``version`` are refused (``ValueError``)."""
        arguments = self._write_arguments(
            all_array_storage,
            all_array_compression,
            compression_kwargs,
            pad_blocks,
            include_block_index,
            version,
            write_checksums,
            compression,
            compression_level,
        )
        write(fd, self.tree, **arguments)

    def update(
        self,
        all_array_storage: Optional[str] = None,
        all_array_compression: Any = "input",
        compression_kwargs: Optional[Mapping[str, Any]] = None,
        pad_blocks: Any = False,
        include_block_index: bool = True,
        version: Optional[str] = None,
        write_checksums: bool = True,
        *,
        compression: Any = _display.NOT_SET,
        compression_level: Optional[int] = None,
    ) -> None:
        """Writes ``.tree`` (edits included) back to the file it was opened from, as the
        reference's ``update()`` (arguments as :meth:`write_to`), but atomically: the new
        file is written beside the old one and put in its place, so an interrupted update
        leaves the old file whole. The file must have been opened by path with
        ``mode="rw"``. Afterwards this object reads the new file; arrays read before stay
        valid (they keep the old file's data), and ``.tree`` is the same object."""
        if self._update_path is None:
            if self._mode != "rw":
                raise OSError(
                    "Can not update, since the file was opened read-only: open it with mode='rw' (rasdf.open(path, mode='rw'))"
                )
            raise ValueError("Can not update, since there is no associated file (it was opened from a URL or from bytes)")
        arguments = self._write_arguments(
            all_array_storage,
            all_array_compression,
            compression_kwargs,
            pad_blocks,
            include_block_index,
            version,
            write_checksums,
            compression,
            compression_level,
        )
        tree = self.tree
        # Every array is read by the write (kept by its node), so the tree needs nothing
        # more of the old file.
        write(self._update_path, tree, **arguments)
        reopened = open(
            self._update_path,
            mode=self._mode,
            copy_arrays=self._opened.copy_arrays,
            **self._open_limits,
        )
        old = self._file
        self._file, self._opened = reopened._file, reopened._opened
        self._classes = reopened._classes
        # The tree's lazy arrays now stand for the new file's nodes (their data, read
        # by the write, stays theirs): storage, rows and Dask graphs are the new file's.
        fresh = {p.lstrip("/"): a for p, a in self._file.arrays(self._classes)}
        for path, a in _array_paths(tree).items():
            node = fresh.get(path)
            if isinstance(a, NDArray) and node is not None:
                a._file, a._id, a._opened = node._file, node._id, node._opened
        old.close()

    #: The limits `open` was given (for `update`, which opens the new file).
    _open_limits: Dict[str, Any] = {}

    def validate(self, *, schemas: Any = None) -> None:
        """Checks the tree against the schemas of its tags, as asdf's ``validate()`` does
        with the extensions it has installed; raises :class:`AsdfError` listing what
        failed. ``schemas`` as for :func:`rasdf.validate` (``False``: the ASDF
        Standard's schemas alone). The tree checked is the file's (edits to ``.tree``
        are checked once written)."""
        self._file.validate(_chosen_schemas(schemas))

    def verify_checksums(self) -> None:
        """Reads every block and checks its MD5; raises :class:`AsdfError` on the first
        that fails."""
        self._file.verify_checksums()

    def check_unchanged(self) -> None:
        """Raises :class:`AsdfError` if the file was cut short or changed under its map
        since it was opened (views already lent read zeros where it vanished)."""
        self._file.check_unchanged()

    def blocks(self) -> list:
        """The block headers: ``(compression, allocated, used, data_size)`` each."""
        return self._file.blocks()

    @property
    def path(self) -> Optional[str]:
        p = self._file.path
        return None if p is None else os.fspath(p)

    @property
    def mode(self) -> str:
        """``"r"``, or ``"rw"`` (``update()`` allowed), as ``rasdf.open`` was given."""
        return self._mode

    @property
    def version(self) -> str:
        """The ASDF Standard version the file declares."""
        return self._file.standard

    @property
    def closed(self) -> bool:
        return self._file.closed

    def close(self) -> None:
        """Lets the file go (arrays already read stay valid)."""
        self._file.close()

    def __enter__(self) -> "AsdfFile":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<rasdf.AsdfFile {self.path!r} ({state})>"


def _index(step: Any, n: int, path: Any) -> int:
    digits = step[1:] if isinstance(step, str) and step.startswith("+") else step
    if isinstance(digits, str) and digits.isdigit() and digits.isascii() and int(digits) < n:
        return int(digits)
    raise KeyError(path)


_CLASSES = (TaggedDict, TaggedList, TaggedString, NDArray, "tag", True, _timestamp)


def _classes(opened: _Opened) -> tuple:
    """The classes the Rust half builds a file's tree with: its arrays know how the
    file was opened."""
    if opened == _DEFAULT_OPENED:
        return _CLASSES
    return _CLASSES[:3] + (functools.partial(NDArray, opened=opened),) + _CLASSES[4:]


def _local_file_path(obj: Any) -> Optional[str]:
    """The path of a regular local file a file object reads from its start: its
    ``name``, when that is the very file its descriptor has open (same device and
    inode); else ``None``."""
    try:
        name = obj.name
        fd = obj.fileno()
        if not isinstance(name, (str, bytes, os.PathLike)) or obj.tell() != 0:
            return None
        st = os.fstat(fd)
        named = os.stat(name)
    except (AttributeError, OSError, ValueError, TypeError, io.UnsupportedOperation):
        return None
    import stat

    if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (named.st_dev, named.st_ino):
        return None
    return os.fsdecode(name)


def _read_all(obj: Any) -> bytes:
    """Everything a binary file object gives from where it is; a stream whose first
    bytes are neither ASDF's nor FITS's is refused then, not read to its end (a pipe of
    endless bytes would fill the memory)."""
    parts = []
    head = b""
    while True:
        part = obj.read(16 << 20)
        if part is None:  # a non-blocking stream with nothing now: wait for more
            time.sleep(0.01)
            continue
        if not isinstance(part, (bytes, bytearray, memoryview)):
            raise TypeError(f"rasdf.open reads binary file objects; this one gave {type(part).__name__}")
        if not part:
            break
        parts.append(bytes(part))
        if len(head) < 6:
            head = (head + bytes(part))[:6]
            if not (b"#ASDF "[: len(head)] == head or b"SIMPLE"[: len(head)] == head):
                raise AsdfError("byte 0: not an ASDF file: the first line is not '#ASDF <version>'")
    return b"".join(parts)


def open(  # noqa: A001 - the name users expect, as asdf.open
    path: Any,
    *,
    mode: str = "r",
    copy_arrays: bool = False,
    verify_checksums: bool = False,
    validate: bool = False,
    max_tree_bytes: Optional[int] = None,
    max_nodes: Optional[int] = None,
    max_block_bytes: Optional[int] = None,
    max_array_elements: Optional[int] = None,
    max_inline_bytes: Optional[int] = None,
    timeout: Optional[float] = None,
    memmap: bool = False,
) -> AsdfFile:
    """Opens an ASDF file (arrays read on demand): a path, an ``http(s)://`` or
    ``s3://`` URL (read by byte ranges), or a binary file object (``open(p, "rb")``,
    ``io.BytesIO``, an fsspec file): one on a regular local file at its start is opened
    by its path, another is read whole into memory.

    ``memmap``: as asdf's (``False`` by default, as in asdf 6). Without a map, a file is
    read by positional reads: an array once read keeps its values whatever later
    happens to the file, and reading from a file cut short or rewritten since it was
    opened raises :class:`AsdfError`. With ``memmap=True``, an uncompressed array is a
    read-only numpy view of the mapped file (no copy: a 1 GiB array in milliseconds),
    which shows the file's bytes as they are when read; a file cut short by another
    process while mapped then kills the process with ``SIGBUS`` when a page it lost is
    read, as with ``numpy.memmap`` and asdf's ``memmap=True``: that is the caller's
    hazard.

    ``mode``: ``"r"``, or ``"rw"`` to allow :meth:`AsdfFile.update` (a local file opened
    by path). ``copy_arrays``: arrays are read into writable copies in memory, as the
    reference's ``copy_arrays=True`` (asdf < 4; ``memmap=False`` since) gives them,
    instead of read-only views on the file; edits to them are written by ``update()``
    and ``write_to()``. ``verify_checksums``: check each block's MD5 when it is read.
    ``validate``: check the tree against its tags' schemas now, as
    :meth:`AsdfFile.validate` does (the extensions asdf has installed, when it is
    importable). The ``max_*`` limits bound what a hostile file can make rasdf spend
    (``None``: rasdf's defaults). ``timeout``: for a URL, the seconds a server may stay
    silent (connecting, or between bytes of an answer) before the read fails with
    ``TimeoutError`` (``None``: 60; a timed-out read is not retried); ignored otherwise.

    Raises ``FileNotFoundError`` (and the other ``OSError``\\ s) when the file cannot be
    opened, :class:`AsdfError` when it is not a sound ASDF file. A remote file that
    changes while it is read raises ``OSError`` ("the remote file changed while it was
    read"), then and on every later read. A password, token or signature in a URL is
    shown as ``***`` (in ``path``, ``repr`` and errors).
    """
    if mode not in ("r", "rw"):
        raise ValueError(f"mode must be 'r' or 'rw', not {mode!r}")
    limits = dict(
        max_tree_bytes=max_tree_bytes,
        max_nodes=max_nodes,
        max_block_bytes=max_block_bytes,
        max_array_elements=max_array_elements,
        max_inline_bytes=max_inline_bytes,
    )
    args = (
        verify_checksums,
        max_tree_bytes,
        max_nodes,
        max_block_bytes,
        max_array_elements,
        max_inline_bytes,
        timeout,
        memmap,
    )
    update_path = None
    if isinstance(path, (str, bytes, os.PathLike)):
        location = os.fspath(path)
    elif hasattr(path, "read"):
        location = _local_file_path(path)
    else:
        raise TypeError(f"rasdf.open takes a path, a URL or a binary file object, not {type(path).__name__}")
    if location is None:
        f = _rasdf.File.from_bytes(_read_all(path), *args[:-2])
        identity = None
    else:
        f, identity = _open_identified(location, args)
        if identity is not None and identity[0] == "file" and isinstance(path, (str, bytes, os.PathLike)):
            update_path = os.fsdecode(location)
    _fill_extension_defaults(f)
    af = AsdfFile(
        f,
        opened=_Opened(copy_arrays, identity, memmap),
        mode=mode,
        update_path=update_path if mode == "rw" else None,
    )
    af._open_limits = {k: v for k, v in limits.items() if v is not None}
    af._open_limits["verify_checksums"] = verify_checksums
    af._open_limits["memmap"] = memmap
    if validate:
        try:
            af.validate()
        except BaseException:
            af.close()
            raise
    return af


def _fill_extension_defaults(f: "_rasdf.File") -> None:
    """For a file of standard 1.5.0 or older with tags of extensions: the defaults of
    their schemas too, as asdf fills them with its installed extensions."""
    if not f.may_fill_defaults:
        return
    try:
        schemas = _asdf_schemas()
    except Exception:  # noqa: BLE001 - an asdf that does not load: the standard's alone
        schemas = None
    if schemas is not None:
        f.fill_defaults(schemas)


def _open_identified(location: Any, args: tuple) -> tuple:
    """``(File, identity)`` of the file at ``location`` (see ``_local_identity``): the
    identity read before and after the open, which must agree (else the file changed
    meanwhile, and it is opened again); ``None`` when it never held still."""
    is_url = isinstance(location, str) and re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", location) is not None
    if is_url:
        f = _rasdf.File.open(location, *args)
        return f, (_remote_identity(f) if f.remote else None)
    for _ in range(3):
        try:
            before = _local_identity(location)
        except OSError:
            before = None
        f = _rasdf.File.open(location, *args)
        try:
            after = _local_identity(location)
        except OSError:
            after = None
        if before is not None and before == after:
            return f, after
        f.close()
    return _rasdf.File.open(location, *args), None


# The extension schemas of the installed asdf, made once per configuration (its
# resource manager and extension list): (key, _rasdf.Schemas).
_ASDF_SCHEMAS: list = []


def _asdf_schemas() -> Optional["_rasdf.Schemas"]:
    """The schemas and tag definitions of asdf's configuration (``asdf.get_config()``):
    every document of its resource manager, and the tags of each of its extensions with
    their schema URIs and ASDF Standard requirement; ``None`` when asdf is not
    importable."""
    try:
        import asdf
    except ImportError:
        return None
    config = asdf.get_config()
    manager = config.resource_manager
    extensions = config.extensions
    key = (id(manager), tuple(id(e) for e in extensions))
    if _ASDF_SCHEMAS and _ASDF_SCHEMAS[0][0] == key:
        return _ASDF_SCHEMAS[0][1]
    documents = []
    for uri in manager:
        try:
            content = manager[uri]
        except Exception:  # noqa: BLE001 - a resource that does not load: not there
            continue
        if isinstance(content, bytes):
            content = content.decode("utf-8", errors="replace")
        documents.append((uri, content))
    tags = []
    for extension in extensions:
        requirement = extension.asdf_standard_requirement
        definitions = [(t.tag_uri, list(t.schema_uris)) for t in extension.tags]
        tags.append((None if requirement is None else str(requirement), definitions))
    schemas = _rasdf.Schemas([], documents, tags, True)
    _ASDF_SCHEMAS[:] = [(key, schemas)]
    return schemas


def validate(path: PathLike, *, schemas: Any = None) -> None:
    """Validates the tree of the ASDF file at ``path`` as ``asdftool validate`` does: every
    node whose tag the file's ASDF Standard lists, or an extension defines, against the
    tag's schemas. Raises :class:`AsdfError` listing what failed (its ``path`` the first
    failure's), as :meth:`AsdfFile.validate` does; returns ``None`` when the tree is valid.
    A check that cannot be made raises it too, naming the pattern and the schema: a
    ``pattern`` rasdf cannot search as Python's ``re`` does (look-around,
    backreferences), or over the compile budget of a validation (32 MiB).

    ``schemas``: ``None`` takes the extensions asdf has installed (its
    ``get_config().extensions`` and the schemas of its ``resource_manager``, read once)
    when asdf is importable, the standard's schemas alone otherwise; a folder, or a list
    of folders, laid out as the extensions' packages ship their resources (``rasdf
    validate --schemas DIR``); ``False``: the standard's schemas alone. Tags without a
    schema are not checked, as the reference leaves them.
    """
    with open(path) as af:
        af.validate(schemas=schemas)


def _chosen_schemas(schemas: Any) -> Optional["_rasdf.Schemas"]:
    """The extensions' schemas ``schemas`` names (see :func:`validate`); ``None`` for the
    standard's alone."""
    if schemas is None:
        return _asdf_schemas()
    if schemas is False:
        return None
    if isinstance(schemas, _rasdf.Schemas):
        return schemas
    folders = [schemas] if isinstance(schemas, (str, os.PathLike)) else list(schemas)
    return _rasdf.Schemas([os.fspath(f) for f in folders])


_NATIVE = sys.byteorder


def _order(dt: np.dtype) -> str:
    if dt.byteorder == ">":
        return "big"
    if dt.byteorder == "<":
        return "little"
    return _NATIVE


def _dtype_spec(dt: np.dtype) -> tuple:
    """The description of ``dt`` the Rust half reads (see ``datatype_of``)."""
    kind, size = dt.kind, dt.itemsize
    if dt.fields is not None:
        fields = []
        for name in dt.names:
            sub = dt.fields[name][0]
            base, shape = (sub.base, sub.shape) if sub.subdtype is not None else (sub, ())
            fields.append((name, _dtype_spec(base), list(shape)))
        orders = [f[1][2] for f in fields if len(f[1]) > 2]
        return ("record", fields, orders[0] if orders else _NATIVE)
    if kind == "b":
        return ("scalar", "bool8", _NATIVE)
    if kind in "iu" and size in (1, 2, 4, 8):
        return ("scalar", f"{'u' if kind == 'u' else ''}int{8 * size}", _order(dt))
    if kind == "f" and size in (2, 4, 8):
        return ("scalar", f"float{8 * size}", _order(dt))
    if kind == "c" and size in (8, 16):
        return ("scalar", f"complex{8 * size}", _order(dt))
    if kind == "S":
        return ("ascii", size)
    if kind == "U":
        return ("ucs4", size // 4, _order(dt))
    raise TypeError(f"ASDF has no datatype for numpy dtype {dt}")


def _packed(dt: np.dtype) -> np.dtype:
    """``dt`` without padding between or after fields (ASDF records have none)."""
    if dt.fields is None:
        return dt
    fields = []
    for name in dt.names:
        sub = dt.fields[name][0]
        if sub.subdtype is not None:
            fields.append((name, _packed(sub.base), sub.shape))
        else:
            fields.append((name, _packed(sub)))
    return np.dtype(fields)


def _lazy_codec(obj: Any) -> Optional[str]:
    """The codec of the block a lazy array (rasdf's :class:`NDArray`) was read from."""
    try:
        return obj._file.array_storage(obj._id)[1]
    except Exception:  # noqa: BLE001 - inline, external, or no longer open: none
        return None


def _prepare_array(obj: Any, codecs: Optional[Dict[int, Optional[str]]] = None) -> tuple:
    """An array to write: ``(C-contiguous numpy array, dtype description, mask bytes or
    None, the codec of the block it was read from or None)``."""
    mask = None
    codec = None
    if isinstance(obj, NDArray):
        codec = _lazy_codec(obj)
        obj = obj.read()
    elif codecs is not None and id(obj) in codecs:
        codec = codecs[id(obj)]
    if not isinstance(obj, np.ndarray) and hasattr(obj, "_make_array"):
        obj = obj._make_array()  # asdf's lazy NDArrayType
    if isinstance(obj, np.ma.MaskedArray):
        mask = np.ascontiguousarray(np.ma.getmaskarray(obj), dtype=np.uint8).tobytes()
        obj = obj.data
    arr = np.asarray(obj)
    packed = _packed(arr.dtype)
    if packed != arr.dtype:
        arr = arr.astype(packed)
    if arr.dtype.itemsize == 0:
        # Items of no bytes (`[ascii, 0]`): numpy's copies widen `S0` and `U0` to one
        # character, so the array is made again on an empty buffer.
        arr = np.ndarray(arr.shape, dtype=arr.dtype, buffer=b"")
    elif not arr.flags.c_contiguous:
        arr = arr.copy(order="C")
    return arr, _dtype_spec(arr.dtype), mask, codec


# The ASDF Standard of the file each tree built by `AsdfFile.tree` came from, by the
# tree's id: (a weak reference to the tree, the standard).
_TREE_SOURCES: Dict[int, tuple] = {}


def _note_source(tree: Any, standard: str) -> None:
    import weakref

    key = id(tree)
    try:
        ref = weakref.ref(tree, lambda _, key=key: _TREE_SOURCES.pop(key, None))
    except TypeError:  # a plain dict (no tagged root): not noted
        return
    _TREE_SOURCES[key] = (ref, standard)


def _source_standard(tree: Any) -> Optional[str]:
    entry = _TREE_SOURCES.get(id(tree))
    if entry is not None and entry[0]() is tree:
        return entry[1]
    return None


class _AsdfConverters:
    """asdf's converters, for the objects of a tree that are not plain data: each
    object of a type an installed extension converts becomes the tagged node the
    converter makes of it (``asdf.yamlutil.custom_tree_to_tagged_tree``'s step, one
    object at a time: the arrays and objects inside are written by rasdf in turn, so
    arrays go to blocks). Made on first need; asdf not importable: no converters."""

    def __init__(self, standard: Optional[str], asdf_file: Any = None) -> None:
        self._standard = standard
        self._asdf_file = asdf_file
        self._ctx: Any = None
        self._by_type: Dict[type, Any] = {}
        self.ready = False
        self.available = True

    def _start(self) -> None:
        self.ready = True
        try:
            import asdf
            from asdf.extension import _serialization_context as sc
            from asdf.tags.core.ndarray import NDArrayType
        except ImportError:
            self.available = False
            return
        af = self._asdf_file
        if af is None:
            version = self._standard
            try:
                af = asdf.AsdfFile(version=version) if version else asdf.AsdfFile()
            except (ValueError, KeyError):
                af = asdf.AsdfFile()
        self._af = af
        self._ctx = af._create_serialization_context(sc.BlockAccess.WRITE)
        self._lazy = NDArrayType

        def no_blocks(*args: Any, **kwargs: Any) -> Any:
            raise TypeError("the converter writes data to blocks of its own, which rasdf cannot write")

        # A converter that reserves blocks of asdf's own would lose that data here.
        self._ctx.find_available_block_index = no_blocks
        self._ctx.get_block_data_callback = no_blocks

    def __call__(self, obj: Any) -> Any:
        if not self.ready:
            self._start()
        if not self.available:
            return None
        typ = type(obj)
        if typ is self._lazy:
            return ("array", obj)
        manager = self._ctx.extension_manager
        converter = self._by_type.get(typ, _MISSING)
        if converter is _MISSING:
            converter = manager.get_converter_for_type(typ) if manager.handles_type(typ) else None
            self._by_type[typ] = converter
        if converter is None:
            return None
        return self._convert(obj, converter)

    def _convert(self, obj: Any, converter: Any) -> Any:
        from types import GeneratorType

        from asdf import tagged

        ctx = self._ctx
        manager = ctx.extension_manager
        tag = converter.select_tag(obj, ctx)
        used = set()
        # A converter that selects no tag hands the object on to another (asdf's loop).
        while tag is None:
            used.add(converter)
            obj = converter.to_yaml_tree(obj, tag, ctx)
            try:
                converter = manager.get_converter_for_type(type(obj))
            except KeyError:
                return obj  # no converter takes it on: written as it is
            if converter in used:
                raise TypeError("Conversion cycle detected")
            tag = converter.select_tag(obj, ctx)
        ctx.assign_object(obj)
        node = converter.to_yaml_tree(obj, tag, ctx)
        ctx.assign_blocks()
        if isinstance(node, GeneratorType):
            generator = node
            node = next(generator)
            for _ in generator:  # the rest fills the node in
                pass
        if isinstance(node, dict):
            made: Any = tagged.TaggedDict(node, tag)
        elif isinstance(node, list):
            made = tagged.TaggedList(node, tag)
        elif isinstance(node, str):
            made = tagged.TaggedString(node)
            made._tag = tag
        else:
            raise TypeError(f"the converter returned a {type(node).__name__}, not a mapping, list or str")
        ctx._mark_extension_used(converter.extension)
        return made

    def history(self, tree: Any) -> Any:
        """The root's ``history`` with the extensions whose converters were used
        recorded, as asdf records them (``AsdfFile._update_extension_history``), or
        ``None`` when none were (or the standard predates that record)."""
        if self._ctx is None or not self._ctx._extensions_used:
            return None
        holder: Dict[str, Any] = {}
        history = tree.get("history") if isinstance(tree, Mapping) else None
        if isinstance(history, Mapping):
            history = {k: (list(v) if k == "extensions" and isinstance(v, list) else v) for k, v in history.items()}
        elif isinstance(history, list):
            history = list(history)
        if history is not None:
            holder["history"] = history
        self._af._update_extension_history(holder, self._ctx)
        return holder.get("history")


_MISSING = object()


def write(
    path: Any,
    tree: Any,
    *,
    compression: Union[None, str, Mapping[str, Optional[str]]] = None,
    compression_level: Optional[int] = None,
    include_index: bool = True,
    checksums: bool = True,
) -> None:
    """Writes ``tree`` (a mapping, an :class:`AsdfFile`, or asdf's ``AsdfFile``) to
    ``path``, atomically: the old file, if any, stays until the new one is complete.
    ``path`` may also be a binary file object (``open(p, "wb")``, ``io.BytesIO``, an
    fsspec file): the file is made in memory and written to it from where it is.

    It keeps everything it is given, or refuses with a ``TypeError`` naming the type
    and the tree path of what it cannot write:

    - dicts and any other mapping (asdf's ``AsdfObject`` and tagged types too), lists,
      tuples, strings, numbers (``int`` of any size, ``complex``, numpy scalars),
      ``bool``, ``None``, ``bytes``, ``datetime``/``date``, sets, the tagged types;
    - numpy arrays of any dtype (structured, bytes, unicode, complex, big-endian, views;
      ``numpy.ma`` arrays with their masks; memory maps), each to a block; lazy arrays
      (rasdf's and asdf's) keep the codec of the block they were read from;
    - other objects (astropy's quantities, times, tables, coordinates, units, models,
      gwcs WCS, data model nodes...), when ``asdf`` is importable, as the converters of
      its installed extensions write them, so that asdf reads back the same objects. A
      subclass of ``numpy.ndarray`` (``Quantity``, ``Column``...) is never written as a
      bare array.

    The file is labelled with the ASDF Standard its tags need (``#ASDF_STANDARD``): that
    of the file the tree was read from when its tags fit it, else the newest standard
    whose manifests (and asdf's installed extensions) list every tag written. The root's
    ``asdf_library`` names rasdf; its ``history`` is kept, with the extensions whose
    converters were used recorded as asdf records them.

    ``compression``: ``None`` keeps each array's own codec (none for new arrays);
    ``"none"``, ``"zlib"``, ``"bzp2"``, ``"lz4"``, ``"zstd"`` or ``"blsc"`` for every
    array; or a mapping of tree paths (``"sci/data"``) to codecs (``None``: stored as
    is) for some, each path naming an array written (else a ``ValueError``).
    ``"zstd"`` (one Zstandard frame) and ``"blsc"`` (one c-blosc buffer, shuffled by the
    item size) are the asdf-compression plugin's codecs: the reference library reads
    them only with that plugin installed. ``compression_level`` (1-9) sets the level of
    zlib, bzp2 and zstd (also blsc's).
    """
    standard = None
    asdf_file = None
    codecs: Optional[Dict[int, Optional[str]]] = None
    if isinstance(tree, AsdfFile):
        standard = tree.version
        tree = tree.tree
    elif type(tree).__module__.split(".")[0] == "asdf" and hasattr(tree, "version_string") and hasattr(tree, "tree"):
        # asdf's own: its standard, and the codec of each array read from its blocks.
        asdf_file = tree
        standard = tree.version_string
        tree = tree.tree
        codecs = {}
    else:
        standard = _source_standard(tree)
    converters = _AsdfConverters(standard, asdf_file)

    def prepare(obj: Any) -> tuple:
        if codecs is not None and id(obj) not in codecs and not isinstance(obj, NDArray):
            try:
                codec = asdf_file.get_array_compression(obj)
            except Exception:  # noqa: BLE001 - not an array of that file
                codec = None
            codecs[id(obj)] = codec if codec not in ("input", "") else None
        return _prepare_array(obj, codecs)

    default = None
    cmap = None
    if isinstance(compression, Mapping):
        cmap = {str(k): v for k, v in compression.items()}
    else:
        default = compression
    if isinstance(path, (str, bytes, os.PathLike)):
        target = os.fspath(path)
    elif hasattr(path, "write"):
        target = None
    else:
        raise TypeError(f"rasdf.write takes a path or a binary file object, not {type(path).__name__}")
    if isinstance(compression_level, int) and not 1 <= compression_level <= 9:
        # (Told here for any int: one past 64 bits would not reach the library's check.)
        raise AsdfError(f"compression level {compression_level}: zlib, bzp2, zstd and blsc take levels 1 to 9")
    data = _rasdf.write(
        target,
        tree,
        prepare,
        converters,
        lambda: converters.history(tree),
        standard,
        _asdf_schemas,
        default,
        cmap,
        compression_level,
        include_index,
        checksums,
    )
    if target is None:
        view = memoryview(data)
        while view:
            n = path.write(view)
            # Raw (unbuffered) files may write part of it: the rest again.
            view = view[len(view) if n is None else n :]
        flush = getattr(path, "flush", None)
        if flush is not None:
            flush()
