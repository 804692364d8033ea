"""Make the reference library's own ``asdf.open`` fast: rasdf builds its YAML tree.

>>> import rasdf.asdf_hook
>>> rasdf.asdf_hook.install()        # every later asdf.open, in this process
>>> rasdf.asdf_hook.uninstall()      # back to asdf's own loader

or, for one block of code, ``with rasdf.asdf_hook.installed(): ...``, or for a whole
program without changing it, ``python -m rasdf.asdf_hook script.py args`` (or ``-m
module args``).

``asdf.open`` reads a file's YAML with PyYAML (``asdf.yamlutil.load_tree``), which is most
of its time on a large tree. The hook replaces that one function: rasdf parses the text
and makes exactly the objects asdf's ``AsdfLoader`` makes (``asdf.tagged.TaggedDict``,
``TaggedList`` and ``TaggedString`` for tagged nodes, ``datetime``, ``bytes``,
``OrderedDict``, ``set``, aliases as shared objects, keys in file order). A text rasdf
refuses (bad YAML, or anything it cannot read as PyYAML would) goes to asdf's own
loader, which then gives its own tree or its own error.

The hook also stands in for asdf's block index read, block compression and
decompression (``rasdf._asdf_blocks``), the YAML dump of ``write_to`` and ``update``
(``rasdf._asdf_yaml``) and the tree walks that call asdf's converters when reading and
writing (``rasdf._asdf_walk``), the validation of a tagged tree (before a write, and
of a tree read) where rasdf's validator is sure of asdf's verdict
(``rasdf._asdf_valid``), and keeps the
selection of installed extensions for a file's ASDF Standard (asdf's
``AsdfFile._process_plugin_extensions``, twice an open) once made for the same
extensions and version. Converters and ``lazy_tree`` stay asdf's own.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator, Optional

from . import _rasdf, _timestamp

__all__ = [
    "SUPPORTED",
    "HookWarning",
    "install",
    "installed",
    "is_installed",
    "load_tree",
    "read_block_index",
    "supported",
    "uninstall",
]

_lock = threading.Lock()
# The functions `asdf.yamlutil.load_tree` and `asdf._block.io.read_block_index` held
# before `install()`, while installed.
_stock: Optional[Callable[[Any], Any]] = None
_stock_index: Optional[Callable[..., Any]] = None
_classes: Optional[tuple] = None
# Plain Python objects (the block index is read with asdf's base loader: no tags).
_PLAIN = (dict, list, str, None, "_tag", False, _timestamp)

# asdf hands `load_tree` a reader that stops at the end of the YAML (`...`): read it in
# growing pieces, so a small tree does not read far into the blocks after it.
_FIRST_READ = 1 << 16
_LARGEST_READ = 1 << 24


def _asdf_classes() -> tuple:
    global _classes
    if _classes is None:
        from asdf.tagged import TaggedDict, TaggedList, TaggedString

        # (dict, list, str, no arrays, tag attribute, no conversion, timestamps, wraps):
        # `TaggedDict(data, tag)` and `TaggedList(data, tag)` wrap the plain container.
        _classes = (TaggedDict, TaggedList, TaggedString, None, "_tag", False, _timestamp, True)
    return _classes


# How PyYAML's libyaml parser (`yaml.CSafeLoader`, which asdf's loader is built on when
# PyYAML has libyaml) reads its stream: pieces of 16 384 bytes, less the bytes of a UTF-8
# character cut by the previous piece, which it keeps (libyaml's raw buffer).
_LIBYAML_PIECE = 16384
# asdf's reader looks this many bytes past each piece for its end marker.
_READAHEAD = 7


def _cut_utf8(raw: bytes, end: int) -> int:
    """How many bytes at the end of ``raw[:end]`` are the start of a UTF-8 character
    that goes on past it (what libyaml keeps for its next piece)."""
    for back in range(1, min(3, end) + 1):
        b = raw[end - back]
        if b & 0xC0 == 0x80:  # a continuation byte: look further back
            continue
        width = 1 if b < 0x80 else 2 if b >> 5 == 0b110 else 3 if b >> 4 == 0b1110 else 4 if b >> 3 == 0b11110 else 1
        return back if width > back else 0
    return 0


def _peek_asdf_yaml(stream: Any) -> Optional[tuple]:
    """The YAML of asdf's own reader (``generic_io._TruncatedReader``, the same from asdf
    3.5 to 6.0), read straight from its seekable file without consuming anything:
    ``(text, commit)``, where ``commit()`` leaves the file and the reader as reading the
    text through them would. ``None`` for any other reader or when the end is not found.

    asdf's reader runs a regular expression for its end marker (``\r?\n...`` then a
    line break or the end) over every piece the YAML parser asks for, which costs as
    much as rasdf's whole parse; here a byte search finds the marker. The pieces are
    those libyaml asks for, so that the marker is found where asdf finds it even in its
    odd case: a marker whose ``...`` ends a piece (with the look-ahead) ends there, its
    line break left for the blocks."""
    fd = getattr(stream, "_fd", None)
    initial = getattr(stream, "_initial_content", None)
    if (
        type(stream).__name__ != "_TruncatedReader"
        or fd is None
        or not isinstance(initial, bytes)
        or len(initial) >= _LIBYAML_PIECE
        or getattr(stream, "_past_end", True)
        or getattr(stream, "_include", None) is not True
        or getattr(stream, "_readahead_bytes", None) != _READAHEAD
        or getattr(stream, "_delimiter", None) != _asdf_end_marker()
        or not callable(getattr(fd, "fast_forward", None))
        or not fd.seekable()
        or not _asdf_reads_with_libyaml()
    ):
        return None
    cursor = fd.tell()
    try:
        cut = _find_end(fd, initial)
    finally:
        fd.seek(cursor)
    if cut is None:
        return None
    end, data = cut

    def commit() -> None:
        fd.fast_forward(end)
        stream._initial_content = b""
        stream._trailing_content = b""
        stream._past_end = True

    return initial + data[:end], commit


def _find_end(fd: Any, initial: bytes) -> Optional[tuple]:
    """``(end, data)``: the file's bytes from here (``data``, at least ``end`` of them)
    and where asdf's reader ends the YAML in them; ``None`` if it does not."""
    data = b""
    at_eof = False
    size = _FIRST_READ

    def have(n: int) -> bool:
        """Reads until ``data`` has ``n`` bytes or the file ends; whether it has them."""
        nonlocal data, at_eof, size
        while len(data) < n and not at_eof:
            piece = fd.read(max(size, n - len(data)))
            at_eof = len(piece) < max(size, n - len(data))
            data += piece
            size = min(size * 2, _LARGEST_READ)
        return len(data) >= n

    start = 0  # where the piece starts in `data`
    ask = _LIBYAML_PIECE  # what libyaml asks for
    raw_seen = 0  # bytes libyaml has had, `initial` included
    first = True
    while True:
        take = ask - len(initial) if first else ask
        win_end = start + take + _READAHEAD
        have(win_end)
        win_end = min(win_end, len(data))
        if win_end <= start:
            return None  # the file ends: asdf's "End of YAML marker not found"
        i = data.find(b"\n...", start, win_end)
        while i >= 0:
            after = i + 4
            if after == win_end:
                return after, data  # `...` at the piece's end: `$` matches there
            if data[after : after + 1] == b"\n":
                return after + 1, data
            if data[after : after + 2] == b"\r\n":
                return after + 2, data
            i = data.find(b"\n...", i + 1, win_end)
        if win_end < start + take + _READAHEAD:
            return None  # the file ended in this piece without a marker
        raw_seen += ask
        start += take
        first = False
        # The next piece: libyaml asks for a whole one less a cut character's bytes.
        ask = _LIBYAML_PIECE - _cut_utf8(data, raw_seen - len(initial))


def _asdf_reads_with_libyaml() -> bool:
    import yaml
    from asdf.yamlutil import AsdfLoader

    return bool(getattr(yaml, "__with_libyaml__", False)) and issubclass(AsdfLoader, getattr(yaml, "CSafeLoader", ()))


def _asdf_end_marker() -> Any:
    from asdf import constants

    return getattr(constants, "YAML_END_MARKER_REGEX", None)


def _read_all(stream: Any) -> bytes:
    if isinstance(stream, (bytes, bytearray, memoryview)):
        return bytes(stream)
    if isinstance(stream, str):
        return stream.encode("utf-8")
    parts = []
    size = _FIRST_READ
    while True:
        piece = stream.read(size)
        if not piece:
            break
        parts.append(piece)
        size = min(size * 2, _LARGEST_READ)
    if parts and isinstance(parts[0], str):
        return "".join(parts).encode("utf-8")
    return b"".join(parts)


def load_tree(stream: Any) -> Any:
    """``asdf.yamlutil.load_tree`` through rasdf: the tagged tree of the YAML in
    ``stream`` (a readable file-like object, as asdf passes), the same objects asdf's own
    loader makes. What rasdf refuses goes to asdf's own loader."""
    import asdf.yamlutil

    stock = _stock or asdf.yamlutil.load_tree
    if stock is load_tree:  # pragma: no cover - only if installed by hand
        stock = _pyyaml_load_tree
    peeked = _peek_asdf_yaml(stream)
    if peeked is not None:
        # asdf's reader, nothing read from it yet: what rasdf refuses, asdf's loader
        # reads from the untouched reader, as it would have.
        text, commit = peeked
        tree = _load(text)
        if tree is _REFUSED:
            return stock(stream)
        commit()
        return tree
    if type(stream).__name__ == "_TruncatedReader":
        return stock(stream)  # one the byte search cannot stand in for (not seekable ...)
    text = _read_all(stream)
    tree = _load(text)
    if tree is _REFUSED:
        import io

        return stock(io.BytesIO(text))
    return tree


_REFUSED = object()


def _load(text: bytes) -> Any:
    """rasdf's tree of ``text``, or ``_REFUSED``."""
    if b"<<" in text and not _merges_as_rasdf():
        return _REFUSED
    try:
        return _rasdf.load_yaml(text, _asdf_classes())
    except Exception:
        return _REFUSED


def _merges_as_rasdf() -> bool:
    """Whether PyYAML merges ``<<`` keys as rasdf does. PyYAML 6.0.4 changed it (no
    longer the later mapping of a merged list first, and keys dropped by the identity of
    their parsed text, which CPython shares for one-character strings): with it, or a
    newer one, a text that may hold a merge is left to asdf's own loader."""
    import yaml

    try:
        version = tuple(int(p) for p in yaml.__version__.split(".")[:3])
    except ValueError:
        return False
    return version < (6, 0, 4)


def read_block_index(fd: Any, offset: Optional[int] = None) -> Any:
    """``asdf._block.io.read_block_index`` through rasdf: the block index (``#ASDF BLOCK
    INDEX``, a YAML list of offsets) parsed by rasdf when it is a sorted list of
    integers, as asdf then returns it. Anything else (no index header there, text rasdf
    refuses, a list asdf would refuse) is read again by asdf's own function from the
    same place, which returns or raises what it always does."""
    import asdf._block.io as bio

    stock = _stock_index if _stock_index is not None else bio.read_block_index
    if stock is read_block_index:  # pragma: no cover - only if installed by hand
        raise RuntimeError("asdf's own read_block_index is not known")
    try:
        start = fd.tell() if offset is None else offset
    except Exception:  # noqa: BLE001 - a file that cannot tell: asdf's own reading
        return stock(fd, offset)
    try:
        fast = _fast_block_index(fd, offset)
    except Exception:  # noqa: BLE001 - asdf's own function says what is wrong
        fast = None
    if fast is not None:
        return fast
    # Back where asdf's reading starts, whatever rasdf read.
    fd.seek(start)
    return stock(fd, offset)


def _fast_block_index(fd: Any, offset: Optional[int]) -> Optional[list]:
    from asdf import constants

    if not fd.seekable():
        return None
    if offset is not None:
        fd.seek(offset)
    if fd.read(len(constants.INDEX_HEADER)) != constants.INDEX_HEADER:
        return None
    index = _rasdf.load_yaml(fd.read(-1), _PLAIN)
    if type(index) is list and all(type(v) is int for v in index) and index == sorted(index):
        return index
    return None


def _pyyaml_load_tree(stream: Any) -> Any:
    import yaml
    from asdf.yamlutil import AsdfLoader

    return yaml.load(stream, Loader=AsdfLoader)  # noqa: S506 - asdf's safe loader


# The asdf versions the hook is made for and tested with: from 4.0.0 up to (not
# including) 6.1.0. Under any other, `install()` warns and leaves asdf as it is.
SUPPORTED = ((4, 0, 0), (6, 1, 0))


class HookWarning(UserWarning):
    """``install()`` left asdf as it is (an asdf outside :data:`SUPPORTED`)."""


# asdf's selections of the installed extensions for a version: {(version, ids of the
# extensions): (the extensions, the selection)}. The extensions are kept, so that no id
# is reused meanwhile; a few configurations at most (cleared past 64).
_selections: dict = {}


def process_plugin_extensions(self: Any) -> list:
    """``AsdfFile._process_plugin_extensions``: the installed extensions whose
    ``asdf_standard_requirement`` admits the file's version, as asdf selects them (its
    own function, called once for each list of extensions and version)."""
    import asdf

    extensions = tuple(asdf.get_config().extensions)
    key = (self.version_string, tuple(map(id, extensions)))
    hit = _selections.get(key)
    if hit is None:
        chosen = [e for e in extensions if key[0] in e.asdf_standard_requirement]
        if len(_selections) >= 64:
            _selections.clear()
        hit = _selections[key] = (extensions, chosen)
    return list(hit[1])


def _asdf_version() -> tuple:
    import asdf

    parts = []
    for p in str(getattr(asdf, "__version__", "0")).split(".")[:3]:
        digits = "".join(c for c in p if c.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts + [0] * (3 - len(parts)))


def supported() -> bool:
    """Whether the asdf installed is one the hook is made for (see :data:`SUPPORTED`)."""
    low, high = SUPPORTED
    return low <= _asdf_version() < high


def _patches() -> list:
    """``(module, name, replacement)`` for every function the hook stands in for."""
    import asdf._block.io as bio
    import asdf._compression as mcompression
    import asdf.yamlutil

    from . import _asdf_blocks as blocks
    from . import _asdf_valid, _asdf_walk, _asdf_yaml

    # asdf 5.4 and later write blocks as `blocks.write_block` streams them; earlier ones
    # keep their own `write_block`.
    streamed = [(bio, "write_block", blocks.write_block)] if _asdf_version() >= (5, 4, 0) else []
    return streamed + [
        (asdf._asdf.AsdfFile, "_process_plugin_extensions", process_plugin_extensions),
        (asdf.yamlutil, "load_tree", load_tree),
        (bio, "read_block_index", read_block_index),
        (mcompression, "decompress", blocks.decompress),
        (mcompression, "compress", blocks.compress),
        (bio, "calculate_block_checksum", blocks.calculate_block_checksum),
        (bio, "generate_write_header", blocks.generate_write_header),
        (asdf.yamlutil, "yaml", _asdf_yaml.proxy),
        (asdf.yamlutil, "treeutil", _asdf_walk.proxy),
        (asdf.yamlutil, "schema", _asdf_valid.proxy),
        (asdf._asdf, "schema", _asdf_valid.proxy),
    ]


def install() -> None:
    """Make ``asdf.open`` (and everything that calls it) read trees with rasdf, in this
    process, until :func:`uninstall`. Installing twice is the same as once. Under an
    asdf outside :data:`SUPPORTED`, warns (:class:`HookWarning`) and changes nothing."""
    global _stock, _stock_index
    import warnings

    if not supported():
        import asdf

        low, high = (".".join(map(str, v)) for v in SUPPORTED)
        warnings.warn(
            f"rasdf.asdf_hook is made for asdf >= {low}, < {high}, not {asdf.__version__}: asdf is left as it is",
            HookWarning,
            stacklevel=2,
        )
        return
    from . import _asdf_blocks as blocks
    from . import _asdf_walk, _asdf_yaml

    with _lock:
        _asdf_yaml.install()
        _asdf_walk.install()
        patches = _patches()
        if all(getattr(m, n) is f for m, n, f in patches):
            return
        for module, name, replacement in patches:
            current = getattr(module, name)
            if current is not replacement:
                _stocks[(module.__name__, name)] = current
                setattr(module, name, replacement)
        _stock = _stocks.get(("asdf.yamlutil", "load_tree"))
        _stock_index = _stocks.get(("asdf._block.io", "read_block_index"))
        blocks._stocks = _stocks
        # asdf 5.3 and later checksum the stored bytes (`calculate_block_checksum` of
        # the compressed buffer, made beside the compression); earlier ones the data.
        blocks._HASH = "stored" if _asdf_version() >= (5, 3, 0) else "none"
        # asdf 5.4 and later write blocks as `blocks.write_block` streams them.
        blocks._STREAM_WRITES = _asdf_version() >= (5, 4, 0)


def uninstall() -> None:
    """Give asdf back its own functions (nothing happens if not installed)."""
    global _stock, _stock_index
    if not supported():
        return
    with _lock:
        for module, name, replacement in _patches():
            if getattr(module, name) is replacement and (module.__name__, name) in _stocks:
                setattr(module, name, _stocks[(module.__name__, name)])
        _stocks.clear()
        _stock = _stock_index = None


_stocks: dict = {}


def is_installed() -> bool:
    """Whether ``asdf.open`` reads trees with rasdf now."""
    import asdf.yamlutil

    return asdf.yamlutil.load_tree is load_tree


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """The hook for a ``with`` block only (if it was installed before, it stays)."""
    was = is_installed()
    install()
    try:
        yield
    finally:
        if not was:
            uninstall()


def _main(argv: Optional[list] = None) -> int:
    """``python -m rasdf.asdf_hook script.py args`` or ``... -m module args``: runs a
    program with the hook installed."""
    import runpy
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    usage = "usage: python -m rasdf.asdf_hook (script.py | -m module) [args ...]"
    if not args or args[0] in ("-h", "--help"):
        print(usage, file=sys.stderr if not args else sys.stdout)
        return 2 if not args else 0
    install()
    if args[0] == "-m":
        if len(args) < 2:
            print(usage, file=sys.stderr)
            return 2
        sys.argv = args[1:]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = args
        runpy.run_path(args[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    import sys

    # The module `rasdf.asdf_hook` (not this `__main__` copy of it) holds the hook.
    from rasdf import asdf_hook as _hook

    sys.exit(_hook._main())
