"""Make the Blosc2 b2nd fixtures in testdata/b2nd/, each `NAME.b2nd` written by the
pinned python-blosc2 (tests/python/requirements.txt) with `NAME.npy`, the array it
holds: every codec C-Blosc2 builds in, each filter, the split modes, ragged chunks and
blocks, special chunks, dictionaries, variable-length metadata, and the dtypes ASDF
holds.

    python tests/python/make_b2nd_fixtures.py make testdata/b2nd

Also the checks of tests/convert.rs:

    python tests/python/make_b2nd_fixtures.py check-asdf NODE OUT.asdf EXPECTED.npy [...]
        (the reference library reads OUT's NODE as EXPECTED)
    python tests/python/make_b2nd_fixtures.py make-asdf DIR
        (ASDF inputs written by the reference, each with NAME.npy; prints the names)
    python tests/python/make_b2nd_fixtures.py check-b2nd OUT.b2nd EXPECTED.npy [...]
        (python-blosc2 reads OUT as EXPECTED)
    python tests/python/make_b2nd_fixtures.py check-vlmeta IN.b2nd VIA.asdf BACK.b2nd [...]
        (the vlmeta of IN is VIA's b2nd/vlmeta to the reference, and BACK's to blosc2)

Each check prints one line per pair: `ok NAME`, or what differs.
"""

import os
import sys

import numpy as np

from make_ra_fixtures import asdf_cases, check_asdf, each, same

BLOSC2_VERSION = "4.14.1"


def make(d):
    import blosc2

    assert blosc2.__version__ == BLOSC2_VERSION, blosc2.__version__
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(11)
    C, F, S = blosc2.Codec, blosc2.Filter, blosc2.SplitMode
    smooth = (np.sin(np.arange(6000) / 50.0) * 1000).astype("<f4").reshape(60, 100)
    counts = (np.arange(60 * 70) // 7 % 300).astype("<i4").reshape(60, 70)
    cases = []

    def add(name, a, **kw):
        cases.append((name, np.asarray(a), kw))

    # python-blosc2's defaults (Zstandard, shuffle, automatic split), one chunk and many.
    add("default_f4", np.arange(5000, dtype="<f4").reshape(100, 50))
    add("default_many_chunks", smooth, chunks=(25, 40), blocks=(10, 15))
    # Every built-in codec, with and without shuffle, split or not.
    for codec in [C.BLOSCLZ, C.LZ4, C.LZ4HC, C.ZLIB, C.ZSTD]:
        for clevel in [1, 9]:
            for split in [S.ALWAYS_SPLIT, S.NEVER_SPLIT]:
                name = f"{codec.name.lower()}_c{clevel}_{'split' if split == S.ALWAYS_SPLIT else 'nosplit'}"
                cp = dict(codec=codec, clevel=clevel, splitmode=split)
                add(name, counts, chunks=(30, 40), blocks=(7, 11), cparams=cp)
        cp = dict(codec=codec, clevel=5, filters=[F.NOFILTER], filters_meta=[0])
        add(f"{codec.name.lower()}_nofilter", smooth, chunks=(33, 64), blocks=(16, 16), cparams=cp)
    # Filters: bit shuffle (item counts that are and are not multiples of 8), delta with
    # and without shuffle, truncated precision.
    for name, filters, meta in [
        ("bitshuffle", [F.BITSHUFFLE], [0]),
        ("delta_shuffle", [F.DELTA, F.SHUFFLE], [0, 0]),
        ("delta_only", [F.DELTA], [0]),
        ("delta_bitshuffle", [F.DELTA, F.BITSHUFFLE], [0, 0]),
        ("trunc_prec", [F.TRUNC_PREC, F.SHUFFLE], [10, 0]),
        ("bytedelta_shuffle", [F.SHUFFLE, F.BYTEDELTA], [0, 0]),
        ("bytedelta_only", [F.BYTEDELTA], [4]),
    ]:
        for codec in [C.LZ4, C.BLOSCLZ]:
            cp = dict(codec=codec, clevel=5, filters=filters, filters_meta=meta)
            a = counts if name != "trunc_prec" else smooth
            add(f"{name}_{codec.name.lower()}", a, chunks=(20, 35), blocks=(6, 9), cparams=cp)
    wide = (np.arange(60 * 70, dtype="<i4") * 7919 % 100003 - 50000).reshape(60, 70)
    add("int_trunc_zstd", wide, chunks=(30, 40), blocks=(7, 11),
        cparams=dict(codec=C.ZSTD, filters=[F.INT_TRUNC, F.SHUFFLE], filters_meta=[20, 0]))
    add("bytedelta_floats_zstd", smooth, chunks=(33, 64), blocks=(16, 16),
        cparams=dict(codec=C.ZSTD, filters=[F.SHUFFLE, F.BYTEDELTA], filters_meta=[0, 0]))
    a = np.arange(1000, dtype="<u2").reshape(10, 100) % 97
    add("delta_u2_odd_blocks", a, chunks=(7, 30), blocks=(3, 13),
        cparams=dict(codec=C.ZSTD, filters=[F.DELTA, F.BITSHUFFLE], filters_meta=[0, 0]))
    # Dictionaries (Zstandard and LZ4).
    for codec in [C.ZSTD, C.LZ4]:
        cp = dict(codec=codec, clevel=5, use_dict=True)
        add(f"dict_{codec.name.lower()}", counts, chunks=(30, 70), blocks=(5, 70), cparams=cp)
    # dtypes.
    for code in ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8"]:
        add(f"dtype_{code}", (rng.standard_normal((9, 13)) * 100).astype(code), chunks=(4, 6), blocks=(2, 3))
    add("dtype_c8", (rng.standard_normal((5, 7)) + 1j * rng.standard_normal((5, 7))).astype("c8"))
    add("dtype_c16", (rng.standard_normal(31) + 1j).astype("c16"), chunks=(8,), blocks=(4,))
    add("dtype_bool", rng.integers(0, 2, (17, 5)).astype(bool), chunks=(6, 5), blocks=(3, 2))
    add("dtype_bytes", np.array([b"", b"a", b"bc", b"defgh"] * 5, dtype="S5").reshape(4, 5), chunks=(3, 2))
    add("dtype_unicode", np.array(["h\u00e9", "x", "\u00fcber", "\U0001f600!"] * 3, dtype="U4"), chunks=(5,))
    rec = np.zeros(7, dtype=[("a", "<i4"), ("b", "<f8"), ("c", "S2")])
    rec["a"] = np.arange(7)
    rec["b"] = np.arange(7) / 4
    rec["c"] = [b"x", b"yz", b"", b"ab", b"q", b"r", b"st"]
    add("dtype_record", rec, chunks=(3,), blocks=(2,))
    nested = np.zeros((2, 3), dtype=[("p", "<f4", (2,)), ("q", [("r", "<u2"), ("s", "|b1")])])
    nested["p"] = np.arange(12, dtype="f4").reshape(2, 3, 2)
    nested["q"]["r"] = np.arange(6).reshape(2, 3) * 1000
    add("dtype_nested_record", nested)
    # Shapes: 0-d, empty, one axis, five axes, ragged edges everywhere.
    add("zero_d", np.array(2.5))
    add("empty", np.zeros((0, 4), dtype="<i2"))
    add("one_axis_ragged", np.arange(1001, dtype="<i8"), chunks=(300,), blocks=(70,))
    add("five_axes", np.arange(2 * 3 * 4 * 5 * 6, dtype="<u4").reshape(2, 3, 4, 5, 6), chunks=(1, 2, 3, 4, 5), blocks=(1, 1, 2, 3, 2))
    # Chunks far larger than the array (python-blosc2 takes any chunk shape): only the
    # blocks that reach into the array are decoded. A padded last chunk of rows whose
    # array ends inside its first block and inside a later one, with the delta filter
    # (which refers to the chunk's first block).
    add("chunk_past_array_1d", np.arange(5, dtype="<i4"), chunks=(1 << 22,), blocks=(1 << 18,))
    add("chunk_past_array_2d", np.arange(9, dtype="u1").reshape(3, 3), chunks=(1 << 12, 1 << 12), blocks=(64, 64))
    for n, blocks in [(700, 512), (1000, 256)]:
        add(f"delta_last_chunk_{n}", np.arange(n, dtype="<i4") * 3, chunks=(600,), blocks=(blocks,),
            cparams=dict(codec=C.LZ4, filters=[F.DELTA, F.SHUFFLE], filters_meta=[0, 0]))
    # Special chunks: zeros, NaN, a repeated value, uninitialized (read as zeros); one
    # far larger than its array, in a million blocks.
    cases_special = [
        ("special_zeros_past_array", lambda p: blosc2.zeros((3, 3), dtype="u1", chunks=(1 << 10, 1 << 10), blocks=(1, 1), urlpath=p, mode="w")),
        ("special_zeros", lambda p: blosc2.zeros((20, 30), dtype="<f8", chunks=(10, 10), urlpath=p, mode="w")),
        ("special_nan", lambda p: blosc2.full((20, 30), np.nan, dtype="<f4", chunks=(10, 10), urlpath=p, mode="w")),
        ("special_value", lambda p: blosc2.full((20, 30), 7, dtype="<i2", chunks=(10, 10), urlpath=p, mode="w")),
    ]
    # Variable-length metadata in the trailer.
    # The expected array is what python-blosc2 reads back: the input itself, but for the
    # lossy truncated precision.
    for name, a, kw in cases:
        path = os.path.join(d, name + ".b2nd")
        blosc2.asarray(a, urlpath=path, mode="w", **kw)
        back = np.asarray(blosc2.open(path)[()])
        lossy = name.startswith(("trunc_prec", "int_trunc"))
        assert lossy or same(back, a) is None, name
        assert not lossy or same(back, a) is not None, name
        np.save(os.path.join(d, name + ".npy"), back)
    for name, maker in cases_special:
        path = os.path.join(d, name + ".b2nd")
        x = maker(path)
        np.save(os.path.join(d, name + ".npy"), x[()])
    x = blosc2.asarray(smooth, urlpath=os.path.join(d, "vlmeta.b2nd"), mode="w", chunks=(20, 50))
    x.vlmeta["telescope"] = "JWST"
    x.vlmeta["exposures"] = [1, 2, 3]
    np.save(os.path.join(d, "vlmeta.npy"), smooth)
    # Every kind of value python-blosc2 stores (the complex number as an extension type).
    a = np.arange(6, dtype="<i2").reshape(2, 3)
    x = blosc2.asarray(a, urlpath=os.path.join(d, "vlmeta_types.b2nd"), mode="w")
    for k, v in VLMETA_TYPES.items():
        x.vlmeta[k] = v
    np.save(os.path.join(d, "vlmeta_types.npy"), a)


VLMETA_TYPES = {
    "text": "h\u00e9llo",
    "long_text": "x" * 300,
    "int": -7,
    "big": 2**64 - 1,
    "float": 2.5,
    "bools": [True, False, None],
    "bytes": b"\x00\x01\xff",
    "nested": {"a": [1, {"b": "c"}], "n": {}},
    "tuple": (1, "a"),
    "complex": 1 + 2j,
}


def raw_vlmeta(x):
    """Each vlmeta entry's msgpack bytes as stored, and as plain msgpack reads them."""
    import msgpack
    from blosc2 import blosc2_ext

    out = {}
    for k in x.vlmeta.keys():
        raw = bytes(blosc2_ext.vlmeta.get_vlmeta(x.vlmeta, k))
        out[k] = (raw, msgpack.unpackb(raw, raw=False, strict_map_key=False))
    return out


def has_ext(v):
    import msgpack

    if isinstance(v, msgpack.ExtType):
        return True
    if isinstance(v, (list, tuple)):
        return any(has_ext(i) for i in v)
    if isinstance(v, dict):
        return any(has_ext(k) or has_ext(i) for k, i in v.items())
    return False


def check_vlmeta(original, via, back):
    """The reference reads VIA.asdf's b2nd/vlmeta as the plain msgpack of ORIGINAL's
    vlmeta (an entry with an extension type as its msgpack bytes), and python-blosc2
    reads BACK's vlmeta as those same values."""
    import asdf
    import blosc2

    want = raw_vlmeta(blosc2.open(original))
    with asdf.open(via) as af:
        tree = {k: getattr(v, "_value", v) for k, v in af.tree["b2nd"]["vlmeta"].items()}
    got_back = raw_vlmeta(blosc2.open(back))
    errs = []
    for k, (raw, plain) in want.items():
        expected = raw if has_ext(plain) else plain
        if tree.get(k) != expected:
            errs.append(f"{k}: ASDF has {tree.get(k)!r}, not {expected!r}")
        if k not in got_back or got_back[k][1] != expected:
            errs.append(f"{k}: written back as {got_back.get(k, (None, None))[1]!r}, not {expected!r}")
    if set(tree) != set(want) or set(got_back) != set(want):
        errs.append(f"keys {sorted(tree)} / {sorted(got_back)}, not {sorted(want)}")
    print(f"{original}: {'; '.join(errs)}" if errs else f"ok {original}")


def make_asdf(d):
    """ASDF inputs for the conversion to b2nd, written by the reference, each with the
    array's values in NAME.npy."""
    import asdf

    os.makedirs(d, exist_ok=True)
    rec = np.array([(1, 2.5, b"ab"), (-3, 4.5, b"c")], dtype=[("a", ">i4"), ("b", "<f8"), ("c", "S2")])
    cases = {
        **asdf_cases(),
        "empty": np.zeros((3, 0), dtype="<f8"),
        "ascii": np.array([b"one", b"two", b"three"]),
        "ucs4_be": np.array(["\u00e9t\u00e9", "hiver"], dtype=">U5"),
        "record_mixed_order": rec,
        "lz4_many_chunks": (np.arange(3 * 700 * 900, dtype="<u4") % 1013).reshape(3, 700, 900),
    }
    for name, a in cases.items():
        comp = "lz4" if name.startswith("lz4") else None
        asdf.AsdfFile({"x": {"y": a}}).write_to(os.path.join(d, name + ".asdf"), all_array_compression=comp)
        np.save(os.path.join(d, name + ".npy"), a)
    print("\n".join(cases))


def check_b2nd(path, npy):
    import blosc2

    expected = np.load(npy)
    x = blosc2.open(path)
    a = np.asarray(x[()])
    err = None
    if x.shape != expected.shape:
        err = f"shape {x.shape} vs {expected.shape}"
    else:
        err = same(a, expected)
    print(f"{path}: {err}" if err else f"ok {path}")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "make":
        make(sys.argv[2])
    elif cmd == "check-asdf":
        each(sys.argv[3:], 2, lambda out, npy: check_asdf(sys.argv[2], out, npy))
    elif cmd == "make-asdf":
        make_asdf(sys.argv[2])
    elif cmd == "check-vlmeta":
        each(sys.argv[2:], 3, check_vlmeta)
    elif cmd == "check-b2nd":
        each(sys.argv[2:], 2, check_b2nd)
    else:
        sys.exit(f"unknown command {cmd}")
