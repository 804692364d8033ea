"""Write ASDF files whose blocks use other writers' codecs, and print what they hold.

    python tests/python/make_codec_fixtures.py OUT_DIR [--small]

Needs the venv of tests/python/requirements.txt: asdf with the asdf-compression plugin
(zstandard, lz4, python-blosc) and python-blosc2.

- ``plugin_<label>.asdf``: written by the reference library with the plugin's own
  compressors (``zstd``, ``lz4f``, ``blsc``), every array compressed.
- The forms other writers use, each written through a compressor registered here for
  that file alone, which lays the block out as that writer's documents say (no code of
  theirs): ``abacus_blsc`` (AbacusSummit: 4 MiB pieces, here 64 KiB, each a big-endian
  ``u32`` length and a c-blosc buffer, Zstandard level 1, shuffle by the item size),
  ``abacus_bsc2`` (a Blosc2 contiguous frame of a super-chunk), ``cxx_blsc`` (asdf-cxx:
  one c-blosc buffer, BloscLZ, bit-shuffle by the item size), ``cxx_bls2`` (a Blosc2
  frame, BloscLZ, bit-shuffle), ``cxx_lz4f`` (an LZ4 frame without a content size),
  ``jl_blsc`` (ASDF.jl: one c-blosc buffer, Zstandard, bit-shuffle), ``jl_zstd`` (one
  Zstandard frame, level 22), ``jl_xz_<check>`` (an xz stream, as liblzma writes it
  for CodecXz, with the CRC32, CRC64 or SHA-256 check), ``bls2_chunk`` (one Blosc2
  chunk, ``blosc2.compress``: the plugin's ``bls2`` after 0.1.0).

Each file is read back by the reference with the same compressor and compared. Prints
JSON: ``{file: {array name: md5 of its bytes in C order, as stored}}``.
"""

import hashlib
import json
import lzma
import os
import struct
import sys

import asdf
import blosc
import blosc2
import lz4.frame
import numpy as np
import zstandard
from asdf.extension import Compressor, Extension


def arrays(small):
    rng = np.random.default_rng(41)
    n, m = (2000, 700) if small else (300_000, 7777)
    rec = np.zeros(300, dtype=[("a", "<i4"), ("b", "<f8")])
    rec["a"] = np.arange(300)
    rec["b"] = np.sqrt(np.arange(300))
    return {
        "f32": np.linspace(-1, 1, 60 * 50, dtype="<f4").reshape(60, 50),
        "i64": np.arange(10 * m, dtype="<i8") * 3 - 7,
        "u2_big": (np.arange(3000) % 1000).astype(">u2"),
        "c16": (np.arange(500) + 1j * np.arange(500)[::-1]).astype("<c16"),
        "u1": rng.integers(0, 255, m, dtype=np.uint8),
        "empty": np.zeros(0, dtype="<f4"),
        "rec": rec,
        "big": np.cumsum(rng.normal(size=n)).astype("<f8"),
    }


def md5(a):
    return hashlib.md5(np.ascontiguousarray(a).tobytes()).hexdigest()


class Writer(Compressor):
    """A compressor of label ``label`` that writes with ``encode(bytes, itemsize)`` and
    reads with ``decode(bytes) -> bytes``."""

    def __init__(self, label, encode, decode):
        self._label, self._encode, self._decode = label, encode, decode

    @property
    def label(self):
        return self._label

    def compress(self, data, **kwargs):
        # The reference hands over bytes: the item size comes as a keyword.
        ts = kwargs.get("typesize", 1)
        yield self._encode(bytes(data), ts if ts <= 255 else 1)

    def decompress(self, data, out, **kwargs):
        raw = self._decode(b"".join(bytes(d) for d in data))
        out[: len(raw)] = raw
        return len(raw)


class WriterExtension(Extension):
    extension_uri = "asdf://rasdf.test/extensions/codec-fixtures-1.0.0"

    def __init__(self, compressor):
        self._compressors = [compressor]

    @property
    def compressors(self):
        return self._compressors


def abacus_pieces(data, ts, piece=64 << 10):
    out = b""
    for i in range(0, max(len(data), 1), piece):
        part = data[i : i + piece]
        if not part:
            break
        buf = blosc.compress(part, typesize=ts, clevel=1, shuffle=blosc.SHUFFLE, cname="zstd")
        out += struct.pack(">I", len(buf)) + buf
    return out


def abacus_unpieces(stored):
    out, at = b"", 0
    while at < len(stored):
        (n,) = struct.unpack(">I", stored[at : at + 4])
        out += blosc.decompress(stored[at + 4 : at + 4 + n])
        at += 4 + n
    return out


def frame(data, ts, codec, filt):
    cparams = blosc2.CParams(codec=codec, filters=[filt], typesize=ts, clevel=5)
    return blosc2.SChunk(chunksize=64 << 10, data=data, cparams=cparams).to_cframe()


def unframe(stored):
    s = blosc2.schunk_from_cframe(stored, copy=True)
    return b"".join(s.decompress_chunk(i) for i in range(s.nchunks))


def xz_writer(check):
    # The reference pads labels with NUL bytes: b"xz" is written `xz\0\0`.
    return Writer(b"xz", lambda d, ts: lzma.compress(d, format=lzma.FORMAT_XZ, check=check), lzma.decompress)


FORMS = {
    "abacus_blsc": Writer(b"blsc", abacus_pieces, abacus_unpieces),
    "abacus_bsc2": Writer(
        b"bsc2", lambda d, ts: frame(d, ts, blosc2.Codec.ZSTD, blosc2.Filter.SHUFFLE), unframe
    ),
    "cxx_blsc": Writer(
        b"blsc",
        lambda d, ts: blosc.compress(d, typesize=ts, clevel=5, shuffle=blosc.BITSHUFFLE, cname="blosclz"),
        blosc.decompress,
    ),
    "cxx_bls2": Writer(
        b"bls2", lambda d, ts: frame(d, ts, blosc2.Codec.BLOSCLZ, blosc2.Filter.BITSHUFFLE), unframe
    ),
    "cxx_lz4f": Writer(b"lz4f", lambda d, ts: lz4.frame.compress(d, store_size=False), lz4.frame.decompress),
    "jl_blsc": Writer(
        b"blsc",
        lambda d, ts: blosc.compress(d, typesize=ts, clevel=9, shuffle=blosc.BITSHUFFLE, cname="zstd"),
        blosc.decompress,
    ),
    "jl_zstd": Writer(
        b"zstd",
        lambda d, ts: zstandard.ZstdCompressor(level=22, write_content_size=True).compress(d),
        lambda s: zstandard.ZstdDecompressor().decompress(s),
    ),
    "jl_xz_crc32": xz_writer(lzma.CHECK_CRC32),
    "jl_xz_crc64": xz_writer(lzma.CHECK_CRC64),
    "jl_xz_sha256": xz_writer(lzma.CHECK_SHA256),
    "bls2_chunk": Writer(b"bls2", lambda d, ts: blosc2.compress(d, typesize=ts), blosc2.decompress),
}


def check(path, tree):
    with asdf.open(path, lazy_load=False, memmap=False) as f:
        for k, v in tree.items():
            assert f[k].dtype == v.dtype and np.array_equal(f[k], v), (path, k)


def main(out, small):
    os.makedirs(out, exist_ok=True)
    tree = arrays(small)
    manifest = {}
    for label in ("zstd", "lz4f", "blsc"):
        path = os.path.join(out, f"plugin_{label}.asdf")
        asdf.AsdfFile(tree).write_to(path, all_array_compression=label)
        check(path, tree)
        manifest[os.path.basename(path)] = {k: md5(v) for k, v in tree.items()}
    for name, comp in FORMS.items():
        path = os.path.join(out, f"{name}.asdf")
        with asdf.config_context() as cfg:
            for ext in list(cfg.extensions):
                if any(c.label == comp.label for c in ext.compressors):
                    cfg.remove_extension(ext)
            cfg.add_extension(WriterExtension(comp))
            af = asdf.AsdfFile(tree)
            for k, v in tree.items():
                af.set_array_compression(af[k], comp.label.decode(), typesize=v.dtype.itemsize)
            af.write_to(path)
            check(path, tree)
        manifest[os.path.basename(path)] = {k: md5(v) for k, v in tree.items()}
    json.dump(manifest, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1], "--small" in sys.argv[2:])
