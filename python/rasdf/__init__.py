"""rasdf: ASDF (Advanced Scientific Data Format) files for Python, read and written in Rust.

>>> import rasdf
>>> with rasdf.open("obs.asdf") as af:          # doctest: +SKIP
...     data = af["sci/data"][...]              # a numpy array
...     print(af.info())

``rasdf.open`` gives the tree as the reference library (``asdf``) reads it with PyYAML:
dicts, lists, strings, numbers, ``datetime``, ``bytes``; tagged mappings, sequences and
strings keep their tag as ``.tag``; ``core/ndarray`` nodes are lazy :class:`NDArray`
objects, read on first use (uncompressed blocks as read-only views on the mapped file,
with no copy). ``rasdf.write`` writes a tree of the same kinds of objects and numpy
arrays, atomically.
"""

from __future__ import annotations

import datetime as _dt
import os
import sys
from typing import Any, Dict, Iterator, Mapping, Optional, Union

import numpy as np

from . import _rasdf
from ._rasdf import AsdfError

__version__: str = _rasdf.__version__

__all__ = [
    "AsdfError",
    "AsdfFile",
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
    if isinstance(mask, np.ndarray):
        return np.ma.array(array, mask=mask.view())
    if mask is not None and np.isscalar(mask):
        try:
            if np.isnan(mask):
                return np.ma.array(array, mask=np.isnan(array))
        except TypeError:
            pass
        return np.ma.masked_values(array, mask)
    return array


class NDArray:
    """A ``core/ndarray`` node, read on first use.

    ``.shape``, ``.dtype``, ``.ndim``, ``.size`` and ``len()`` come from the tree and the
    block headers, with nothing decoded. ``arr[...]`` (or ``arr.read()``,
    ``numpy.asarray(arr)``) gives the data as a numpy array, or a
    ``numpy.ma.MaskedArray`` when the node is masked. Uncompressed data is a read-only
    view on the mapped file (no copy); compressed blocks are decoded once, with the GIL
    released, and shared by every array of the block. Arrays read stay valid after the
    file is closed.
    """

    __slots__ = ("_file", "_id", "_shape", "_spec", "_dtype", "tag", "_mask", "_array", "__weakref__")

    #: Marks lazy arrays for ``rasdf.write``.
    __asdf_lazy_array__ = True

    def __init__(self, file, node_id, shape, dtype, tag, mask):
        self._file = file
        self._id = node_id
        self._shape = shape
        self._spec = dtype
        self._dtype = None
        self.tag: Optional[str] = tag
        self._mask = mask
        self._array = None

    def _meta(self) -> None:
        # A node whose shape could not be found without reading: read it, which says why.
        if self._shape is None:
            shape, spec = self._file.array_meta(self._id)
            self._shape, self._spec = tuple(shape), spec

    @property
    def shape(self) -> tuple:
        """The array's shape (a streamed array's rows counted from its block)."""
        self._meta()
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype (byte order as in the file)."""
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
    def masked(self) -> bool:
        """Whether the node has a ``mask`` (reading gives a ``numpy.ma.MaskedArray``)."""
        return self._mask is not None

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def read(self) -> np.ndarray:
        """The data as a numpy array (cached: later calls give the same object)."""
        if self._array is None:
            array, inline_mask = self._file.read_array(self._id)
            if inline_mask is not None:
                m = inline_mask.reshape(array.shape)
                if m.any():
                    array = np.ma.array(array, mask=m)
            self._array = _apply_mask(array, self._mask)
        return self._array

    def __getitem__(self, key: Any) -> Any:
        if self._array is None and self._mask is None:
            part = self._rows(key)
            if part is not None:
                return part
        return self.read()[key]

    def _rows(self, key: Any) -> Any:
        """``self[key]`` from the rows it needs alone (an lz4 array's records that hold
        them, a remote file's uncompressed array's byte range), sliced on its first axis
        by an int or a step-1 slice, before the whole array is read; or ``None``."""
        first, rest = (key[0], key[1:]) if isinstance(key, tuple) and key else (key, ())
        if not self.shape:
            return None
        if isinstance(first, (int, np.integer)) and not isinstance(first, bool):
            i = int(first) + (self.shape[0] if first < 0 else 0)
            if not 0 <= i < self.shape[0]:
                return None  # numpy's own IndexError, from the whole array
            start, stop, pick = i, i + 1, (0,)
        elif isinstance(first, slice) and first.step in (None, 1):
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
        a = self.read()
        if isinstance(a, np.ma.MaskedArray):
            a = a.filled() if copy is not False else a.data
        if dtype is not None and np.dtype(dtype) != a.dtype:
            if copy is False:
                raise ValueError("a dtype change needs a copy")
            return a.astype(dtype)
        if copy:
            return a.copy()
        return a

    def __iter__(self) -> Iterator[Any]:
        return iter(self.read())

    def to_dask(self, chunks: Any = None) -> Any:
        """A ``dask.array.Array`` of this array, whose tasks open the file (by its path or
        URL, once per process) and read their chunk: picklable, so it computes on threads
        and on a distributed cluster of processes alike. ``chunks=None`` follows the
        storage: an lz4 block the rows of about one of its 4 MiB records, a zlib or bzp2
        block one chunk (it is decoded whole), an uncompressed array slabs of about 64 MiB
        along its first axis. Other ``chunks`` as Dask takes
        them."""
        location = self._file.path
        path = self._file.node_path(self._id)
        if location is None or path is None:
            raise ValueError("this array cannot be read by path: its file has no path, or its node no tree path")
        return _dask_array(str(location), path, self.shape, self.dtype, self.masked, self._chunks(chunks))

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
        kind = "masked array" if self._mask is not None else "array"
        state = "loaded" if self._array is not None else "unloaded"
        try:
            return f"<{kind} ({state}) shape: {list(self.shape)} dtype: {self.dtype}>"
        except AsdfError as e:
            return f"<{kind} (unreadable: {e})>"


# Dask: the default size of an uncompressed array's chunks, and of an lz4 record.
_DASK_CHUNK_BYTES = 64 << 20
_LZ4_RECORD_BYTES = 4 << 20
# Files opened by Dask tasks, by path or URL: each process opens a file once.
_SHARED_FILES: Dict[str, "AsdfFile"] = {}
_SHARED_LOCK = __import__("threading").Lock()


def _shared_file(location: str) -> "AsdfFile":
    with _SHARED_LOCK:
        af = _SHARED_FILES.get(location)
        if af is None or af.closed:
            af = open(location)
            _SHARED_FILES[location] = af
        return af


class _DaskSource:
    """What a Dask task reads: an array by its file's path (or URL) and its tree path.
    Strings and numbers only, so it pickles small; the file is opened in the process that
    reads (once: see ``_shared_file``). No ``copy`` method, so that
    ``dask.array.from_array`` does not copy it."""

    __slots__ = ("location", "path", "shape", "dtype", "ndim", "masked")

    def __init__(self, location: str, path: str, shape: tuple, dtype: np.dtype, masked: bool) -> None:
        self.location, self.path, self.shape, self.dtype, self.masked = location, path, shape, dtype, masked
        self.ndim = len(shape)

    def __getitem__(self, key: Any) -> Any:
        return _shared_file(self.location)[self.path][key]

    def __reduce__(self) -> Any:
        return (_DaskSource, (self.location, self.path, self.shape, self.dtype, self.masked))


def _dask_array(location: str, path: str, shape: tuple, dtype: np.dtype, masked: bool, chunks: Any) -> Any:
    import dask.array as da
    from dask.base import tokenize

    source = _DaskSource(location, path, tuple(shape), dtype, masked)
    meta = np.ma.masked_array(np.empty((0,) * len(shape), dtype)) if masked else np.empty((0,) * len(shape), dtype)
    name = "rasdf-" + tokenize(location, path, tuple(shape), str(dtype), chunks)
    return da.from_array(source, chunks=chunks, name=name, lock=False, asarray=False, meta=meta, fancy=False)


def to_dask(files: Any, path: str, *, chunks: Any = None, axis: int = 0) -> Any:
    """One Dask array of the array at tree ``path`` of each of ``files`` (paths or
    URLs), stacked along a new axis ``axis``: one task graph for many files. Each file is
    opened here for its shape and dtype only; the tasks read the data."""
    import dask.array as da

    arrays = []
    for f in files:
        with open(f) as af:
            node = af[path]
            if not isinstance(node, NDArray):
                raise TypeError(f"{f}: {path} is not an array")
            arrays.append(node.to_dask(chunks))
    if not arrays:
        raise ValueError("no files")
    return da.stack(arrays, axis=axis)


class AsdfFile:
    """An open ASDF file: ``.tree``, ``af[path]``, ``.arrays()``, ``.info()``.

    Use it as a context manager, or call :meth:`close`. Arrays read stay valid after
    ``close()``; lazy arrays not yet read refuse to read then.
    """

    def __init__(self, file: "_rasdf.File") -> None:
        self._file = file
        self._tree: Any = None

    @property
    def tree(self) -> Any:
        """The tree: dicts, lists, scalars, tagged objects and lazy :class:`NDArray` nodes
        (built on first use; parts got before by path or ``arrays()`` are the same
        objects)."""
        if self._tree is None:
            self._tree = self._file.tree(_CLASSES)
            _note_source(self._tree, self._file.standard)
        return self._tree

    def __getitem__(self, path: str) -> Any:
        """The node at ``path``: keys and list indices joined by ``/`` (JSON-pointer
        escapes ``~1`` for ``/`` and ``~0`` for ``~`` in keys), found as ``rasdf``'s
        command line and library find it. Only that node is built, and it is the object
        ``.tree`` holds there (as read: changes made to ``.tree`` are not seen here)."""
        node = self._file.node(str(path), _CLASSES)
        if node is None:
            raise KeyError(path)
        return node

    def __contains__(self, path: str) -> bool:
        try:
            self[path]
        except KeyError:
            return False
        return True

    def arrays(self) -> Dict[str, NDArray]:
        """Every ndarray node by its tree path (``"sci/data"``), in tree order; nothing is
        decoded, and the rest of the tree is not built."""
        return {path.lstrip("/"): a for path, a in self._file.arrays(_CLASSES)}

    def info(
        self,
        max_rows: Optional[int] = None,
        max_cols: Optional[int] = None,
        show_values: bool = True,
        stats: bool = False,
        show_blocks: bool = False,
    ) -> str:
        """The text ``rasdf info`` prints (``stats``: with every array's statistics)."""
        return self._file.info(max_rows, max_cols, show_values, stats, show_blocks)

    def validate(self, *, schemas: Any = None) -> None:
        """Checks the tree against the schemas of its tags, as asdf's ``validate()`` does
        with the extensions it has installed; raises :class:`AsdfError` listing what
        failed. ``schemas`` as for :func:`rasdf.validate` (``False``: the ASDF
        Standard's schemas alone)."""
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


_CLASSES = (TaggedDict, TaggedList, TaggedString, NDArray, "tag", True, _timestamp)


def open(  # noqa: A001 - the name users expect, as asdf.open
    path: PathLike,
    *,
    verify_checksums: bool = False,
    validate: bool = False,
    max_tree_bytes: Optional[int] = None,
    max_nodes: Optional[int] = None,
    max_block_bytes: Optional[int] = None,
    max_array_elements: Optional[int] = None,
    max_inline_bytes: Optional[int] = None,
    timeout: Optional[float] = None,
) -> AsdfFile:
    """Opens an ASDF file (memory-mapped; arrays read on demand), or an ``http://``,
    ``https://`` or ``s3://bucket/key`` URL (read by byte ranges).

    ``verify_checksums``: check each block's MD5 when it is read. ``validate``: check the
    tree against its tags' schemas now, as :meth:`AsdfFile.validate` does (the
    extensions asdf has installed, when it is importable). The ``max_*`` limits bound what a
    hostile file can make rasdf spend (``None``: rasdf's defaults). ``timeout``: for a
    URL, the seconds a server may stay silent (connecting, or between bytes of an
    answer) before the read fails with ``TimeoutError`` (``None``: 60; a timed-out read
    is not retried); ignored for a local path.

    Raises ``FileNotFoundError`` (and the other ``OSError``\\ s) when the file cannot be
    opened, :class:`AsdfError` when it is not a sound ASDF file. A remote file that
    changes while it is read raises ``OSError`` ("the remote file changed while it was
    read"), then and on every later read. A password, token or signature in a URL is
    shown as ``***`` (in ``path``, ``repr`` and errors).
    """
    f = _rasdf.File.open(
        os.fspath(path),
        verify_checksums,
        max_tree_bytes,
        max_nodes,
        max_block_bytes,
        max_array_elements,
        max_inline_bytes,
        timeout,
    )
    if f.may_fill_defaults:
        # A file of standard 1.5.0 or older with tags of extensions: the defaults of
        # their schemas too, as asdf fills them with its installed extensions.
        try:
            schemas = _asdf_schemas()
        except Exception:  # noqa: BLE001 - an asdf that does not load: the standard's alone
            schemas = None
        if schemas is not None:
            f.fill_defaults(schemas)
    af = AsdfFile(f)
    if validate:
        try:
            af.validate()
        except BaseException:
            af.close()
            raise
    return af


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
    if not arr.flags.c_contiguous:
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
    path: PathLike,
    tree: Any,
    *,
    compression: Union[None, str, Mapping[str, Optional[str]]] = None,
    compression_level: Optional[int] = None,
    include_index: bool = True,
    checksums: bool = True,
) -> None:
    """Writes ``tree`` (a mapping, an :class:`AsdfFile`, or asdf's ``AsdfFile``) to
    ``path``, atomically: the old file, if any, stays until the new one is complete.

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
    _rasdf.write(
        os.fspath(path),
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
