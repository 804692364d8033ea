"""asdf's block codecs through rasdf (part of :mod:`rasdf.asdf_hook`).

``asdf._compression.decompress`` and ``compress`` are where asdf's block reader and
writer decode and encode a block's bytes (the same functions from asdf 4.0 to 6.0,
looked up at call time). While the hook is installed they are these functions: for
asdf's own codecs (``zlib``, ``bzp2``, ``lz4``) at their default settings, on a file or
a ``BytesIO``, rasdf does the work in Rust with the GIL released and on every core: it
decodes into the array asdf hands out (lz4 a window of records at a time, zlib as it
reads, so the stored bytes are never all in memory), and compresses in parallel, making
the MD5 that asdf's writer asks for next in the same pass
(``asdf._block.io.calculate_block_checksum``, inside asdf's own
``generate_write_header`` only).

Under asdf 5.4 and later, ``asdf._block.io.write_block`` of a compressed block at the
end of a file (``write_to``, and ``update`` where it appends) goes further: the stored
bytes go straight to the file as they are made, with a placeholder header that is filled
in once their size and MD5 are known, instead of into a buffer the size of the
compressed block that asdf then copies to the file. The file's bytes are the same; the
buffer is never held.

Anything else (a codec from an extension, compression settings, a stream, codec labels
that extensions define twice) is asdf's own function, called as it would have been. Any
failure inside rasdf (a stream rasdf would read otherwise than asdf, corrupt data, bytes
that end early) calls asdf's own function for that call, from where it would have
started, so the result or the error is asdf's.
"""

from __future__ import annotations

import io
import threading
import weakref
from typing import Any, Optional

import numpy as np

from . import _rasdf

# asdf's own functions, filled by `rasdf.asdf_hook.install()`: (module name, name) -> function.
_stocks: dict = {}

_OWN = ("zlib", "bzp2", "lz4")


def _stock(module: str, name: str) -> Any:
    f = _stocks.get((module, name))
    if f is None:  # pragma: no cover - only when called without install()
        import importlib

        f = getattr(importlib.import_module(module), name)
    return f


def _own_label(compression: Any) -> Optional[str]:
    """The label, when it is one of asdf's own codecs and no extension defines any label
    twice or this one at all (asdf's `validate` then neither warns nor fails, and its
    `_get_compressor` gives asdf's own compressor); else ``None``."""
    if isinstance(compression, bytes):
        try:
            label = compression.decode("ascii").strip("\0")
        except UnicodeDecodeError:
            return None
    elif isinstance(compression, str):
        label = compression.strip("\0")
    else:
        return None
    if label not in _OWN:
        return None
    from asdf import _compression as mcompression

    ext = mcompression._get_all_compression_extension_labels()
    if ext and (label in ext or len(set(ext)) != len(ext) or any(e in _OWN for e in ext)):
        return None
    return label


def _file_of(fd: Any) -> Optional[tuple]:
    """Where rasdf can read ``fd``'s bytes from itself: ``("file", fileno)`` for an
    asdf ``RealFile`` over an OS file, ``("bytes", bytesio)`` for a ``MemoryIO`` over a
    ``BytesIO``; ``None`` otherwise."""
    kind = type(fd).__name__
    inner = getattr(fd, "_fd", None)
    if kind == "RealFile":
        raw = getattr(inner, "raw", inner)
        if type(raw) is not io.FileIO or not isinstance(inner, (io.FileIO, io.BufferedReader, io.BufferedRandom)):
            return None
        if inner.writable():
            inner.flush()
        return ("file", inner.fileno())
    if kind == "MemoryIO" and type(inner) is io.BytesIO:
        return ("bytes", inner)
    return None


def decompress(fd: Any, used_size: int, data_size: int, compression: Any, config: Any = None) -> Any:
    """``asdf._compression.decompress`` through rasdf (see the module's text)."""
    stock = _stock("asdf._compression", "decompress")
    try:
        label = _own_label(compression) if not config else None
        ok = (
            label is not None
            and type(used_size) is int
            and type(data_size) is int
            and used_size >= 0
            and data_size >= 0
            and fd.seekable()
        )
        source = _file_of(fd) if ok else None
    except Exception:  # noqa: BLE001 - asdf's own function says what is wrong
        source = None
    if source is None:
        return stock(fd, used_size, data_size, compression, config)
    start = fd.tell()
    buffer = np.empty((data_size,), np.uint8)
    try:
        if source[0] == "file":
            _rasdf.hook_decode(label, buffer, used_size, start, fileno=source[1])
        else:
            # A copy of the block's stored bytes alone (the buffer may change once the
            # GIL is released); fewer than `used_size` when they end early.
            with source[1].getbuffer() as view:
                stored = bytes(view[start : start + used_size])
            _rasdf.hook_decode(label, buffer, used_size, 0, data=stored)
            del stored
    except Exception:  # noqa: BLE001 - asdf's own reading, from the same place
        fd.seek(start)
        return stock(fd, used_size, data_size, compression, config)
    fd.seek(start + used_size)
    return buffer


# The MD5 of the bytes `compress` wrote last, for the checksum asdf's writer asks for
# next. Only inside asdf's own `generate_write_header` (which calls `compress` into a
# fresh BytesIO, then `calculate_block_checksum` of that buffer, nothing between), in
# that thread: `_tls.armed` is set by `generate_write_header` below, and `_tls.last`
# is ((address, length, first and last bytes), digest, a weak reference to the BytesIO
# written) or None. The digest is handed over only for exactly those bytes, still in a
# live BytesIO.
_tls = threading.local()
_HASH = "stored"


def generate_write_header(*args: Any, **kwargs: Any) -> Any:
    """``asdf._block.io.generate_write_header``: asdf's own, with the MD5 that rasdf makes
    while compressing handed to its checksum (see ``_tls``)."""
    _tls.armed, _tls.last = True, None
    try:
        return _stock("asdf._block.io", "generate_write_header")(*args, **kwargs)
    finally:
        _tls.armed, _tls.last = False, None


def _fingerprint(view: Any) -> Optional[tuple]:
    try:
        arr = np.frombuffer(view, np.uint8)
    except Exception:  # noqa: BLE001
        return None
    n = arr.size
    return (arr.ctypes.data, n, bytes(arr[:64]), bytes(arr[max(0, n - 64) :]))


def _at_end(fd: Any) -> Optional[int]:
    """The position of a ``BytesIO`` that is at its end (what is written is appended,
    and cutting back to it undoes the write exactly), else ``None``."""
    if type(fd) is not io.BytesIO:
        return None
    at = fd.tell()
    with fd.getbuffer() as view:
        return at if view.nbytes == at else None


def compress(fd: Any, data: Any, compression: Any, config: Any = None) -> None:
    """``asdf._compression.compress`` through rasdf (see the module's text)."""
    stock = _stock("asdf._compression", "compress")
    try:
        label = _own_label(compression) if not config else None
        arr = None
        if label is not None and isinstance(data, np.ndarray) and data.dtype == np.uint8 and data.ndim == 1:
            arr = data if data.flags.c_contiguous else None
        start = _at_end(fd) if arr is not None else None
    except Exception:  # noqa: BLE001
        start = None
    if start is None:
        return stock(fd, data, compression, config=config)
    armed = getattr(_tls, "armed", False)
    _tls.last = None
    try:
        # The stored bytes go to the BytesIO a piece at a time, as they are made.
        size, md5 = _rasdf.hook_encode(label, arr, _HASH if armed else "none", fd.write)
    except Exception:  # noqa: BLE001 - undone, then asdf's own compressor
        fd.seek(start)
        fd.truncate(start)
        return stock(fd, data, compression, config=config)
    if md5 is not None:
        try:
            with fd.getbuffer() as view:
                fp = _fingerprint(view)
                end = fp[1] if fp else -1
                if fp is not None and end >= size:
                    # The block is the buffer's last `size` bytes.
                    with view[end - size :] as tail:
                        _tls.last = (_fingerprint(tail), md5, weakref.ref(fd))
        except Exception:  # noqa: BLE001 - no shortcut: asdf hashes
            _tls.last = None


# Set by `rasdf.asdf_hook.install()`: whether `write_block` may stream (asdf 5.4 and
# later, whose `generate_write_header` and `write_block` it follows; earlier ones keep
# their own `write_block`).
_STREAM_WRITES = False
_UNSET = object()


def write_block(
    fd: Any,
    data: Any,
    offset: Any = None,
    stream: bool = False,
    compression_kwargs: Any = None,
    padding: Any = False,
    write_checksum: Any = _UNSET,
    **header_kwargs: Any,
) -> Any:
    """``asdf._block.io.write_block`` through rasdf (see the module's text): a block
    compressed with one of asdf's own codecs, at its default settings, at the end of a
    file rasdf writes to, streamed into place; anything else asdf's own (called with
    the arguments it was given, no more)."""
    stock = _stock("asdf._block.io", "write_block")

    def asdf_own() -> Any:
        given = {} if write_checksum is _UNSET else {"write_checksum": write_checksum}
        return stock(
            fd,
            data,
            offset=offset,
            stream=stream,
            compression_kwargs=compression_kwargs,
            padding=padding,
            **given,
            **header_kwargs,
        )

    if write_checksum is _UNSET:
        write_checksum = True

    try:
        label = None
        if _STREAM_WRITES and offset is None and not stream and not compression_kwargs and set(header_kwargs) <= {"compression"}:
            label = _own_label(header_kwargs.get("compression"))
        ok = (
            label is not None
            and type(write_checksum) is bool
            and isinstance(data, np.ndarray)
            and data.ndim == 1
            and data.dtype == np.uint8
            and data.flags.c_contiguous
            and type(fd).__name__ in ("RealFile", "MemoryIO")
            and fd.seekable()
        )
        start = _end_of(fd) if ok else None
    except Exception:  # noqa: BLE001 - asdf's own function says what is wrong
        start = None
    if start is None:
        return asdf_own()
    import struct

    from asdf import util
    import asdf._block.io as bio
    from asdf import _compression as mcompression

    try:
        header = {"compression": mcompression.to_compression_header(header_kwargs.get("compression"))}
        header["flags"] = 0
        header["data_size"] = data.nbytes
        # Room for the size and the header, filled in below.
        fd.write(b"\0" * (2 + bio.BLOCK_HEADER.size))
        size, md5 = _rasdf.hook_encode(label, data, "stored" if write_checksum else "none", fd.write)
        pad = util.calculate_padding(size, padding, fd.block_size)
        header["used_size"] = size
        header["allocated_size"] = size + pad
        header["checksum"] = md5 if write_checksum else b"\0" * 16
        packed = bio.BLOCK_HEADER.pack(**header)
        end = fd.tell()
        fd.seek(start)
        fd.write(struct.pack(b">H", len(packed)))
        fd.write(packed)
        fd.seek(end)
    except Exception:  # noqa: BLE001 - undone, then asdf's own function
        fd.seek(start)
        fd.truncate(start)
        return asdf_own()
    fd.fast_forward(pad)
    return header


def _end_of(fd: Any) -> Optional[int]:
    """The position of an asdf file that is at its end (what is written is appended, and
    cutting back to it undoes the write exactly), else ``None``."""
    at = fd.tell()
    fd.seek(0, 2)
    end = fd.tell()
    fd.seek(at)
    return at if at == end else None


def calculate_block_checksum(data: Any) -> bytes:
    """``asdf._block.io.calculate_block_checksum``: the MD5 rasdf made while compressing,
    when asked inside asdf's own ``generate_write_header`` for exactly the bytes it just
    wrote; asdf's own otherwise."""
    last, _tls.last = getattr(_tls, "last", None), None
    if last is not None and getattr(_tls, "armed", False):
        try:
            if last[2]() is not None and _fingerprint(data) == last[0]:
                return last[1]
        except Exception:  # noqa: BLE001
            pass
    return _stock("asdf._block.io", "calculate_block_checksum")(data)
