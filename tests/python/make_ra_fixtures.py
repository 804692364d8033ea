"""Make the RawArray fixtures in testdata/ra/, each `NAME.ra` with `NAME.npy`: the array
as the format's Python reader (davidssmith/ra `python/ra.py`) gives it, `dims` as the
shape, column-major data. There is no RawArray package on PyPI, so the files are
written here from the format's description, as ra.py writes them (header of
little-endian u64s, dims in order, `array.transpose().tobytes()`), plus the variants
other implementations write: the C library's LZ4-compressed data (flag 2, size = the
compressed bytes), the Julia package's LEB128 integers (flag 2, size = the raw bytes,
signed values zigzagged), big-endian data (flag 1), user-defined elements (class 0)
and trailing "volatile metadata".

    python tests/python/make_ra_fixtures.py testdata/ra

Also the checks of tests/convert.rs, which run with the pinned reference library:

    python tests/python/make_ra_fixtures.py check-asdf NODE OUT.asdf EXPECTED.npy [OUT EXPECTED ...]
    python tests/python/make_ra_fixtures.py make-asdf DIR      (ASDF inputs, with .npy)
    python tests/python/make_ra_fixtures.py check-ra OUT.ra EXPECTED.npy [OUT EXPECTED ...]

Each check prints one line per pair: `ok NAME`, or what differs.
"""

import os
import struct
import sys

import numpy as np

MAGIC = 0x7961727261776172
CLASS = {"i": 1, "u": 2, "f": 3, "c": 4, "b": 5}


def header(flags, eltype, elbyte, size, dims):
    return struct.pack("<6Q", MAGIC, flags, eltype, elbyte, size, len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)


def ra_bytes(a, flags=0, eltype=None, data=None, size=None, tail=b""):
    """ra.py's write (flags and data overridable for the other writers' variants)."""
    if a.dtype.byteorder == ">":
        flags |= 1
    eltype = CLASS.get(a.dtype.kind, 0) if eltype is None else eltype
    raw = a.transpose().tobytes()
    data = raw if data is None else data
    size = len(raw) if size is None else size
    return header(flags, eltype, a.dtype.itemsize, size, a.shape) + data + tail


def read_ra(path):
    """The array of a plain .ra file as ra.py reads it: dims are the shape."""
    with open(path, "rb") as f:
        b = f.read()
    magic, flags, eltype, elbyte, size, ndims = struct.unpack("<6Q", b[:48])
    assert magic == MAGIC
    dims = struct.unpack(f"<{ndims}Q", b[48 : 48 + 8 * ndims])
    body = b[48 + 8 * ndims :]
    assert size == len(body), (size, len(body))
    order = ">" if flags & 1 else "<"
    kind = {1: "i", 2: "u", 3: "f", 4: "c", 5: "b"}.get(eltype)
    if kind is None:
        return flags, eltype, elbyte, dims, body
    dt = np.dtype(f"{order}{kind}{elbyte}")
    return flags, eltype, elbyte, dims, np.frombuffer(body, dtype=dt).reshape(dims[::-1]).transpose()


def leb128(values, signed, bits):
    out = bytearray()
    for v in values:
        v = int(v)
        if signed:
            v = (v << 1) ^ (v >> (bits - 1))
            v &= (1 << bits) - 1
        while True:
            byte = v & 0x7F
            v >>= 7
            if v:
                out.append(byte | 0x80)
            else:
                out.append(byte)
                break
    return bytes(out)


def make(d):
    import lz4.block

    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(7)
    cases = {}
    for code in ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16"]:
        a = (rng.standard_normal((3, 4)) * 100).astype(code) if code[0] not in "c" else (
            rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
        ).astype(code)
        cases[f"rand_{code}"] = (a, ra_bytes(a))
    a = rng.integers(0, 2, (4, 5)).astype(bool)
    cases["bool"] = (a, ra_bytes(a))
    a = np.arange(24, dtype="<f8").reshape(2, 3, 4)
    cases["cube_f8"] = (a, ra_bytes(a))
    a = np.array(3.25, dtype="<f4")
    cases["scalar_f4"] = (a, ra_bytes(a))
    a = np.zeros((0, 3), dtype="<i4")
    cases["empty_i4"] = (a, ra_bytes(a))
    a = np.arange(12, dtype=">f4").reshape(3, 4) / 3
    cases["big_endian_f4"] = (a, ra_bytes(a))
    a = (np.arange(12) - 6).astype(">c16").reshape(4, 3) * (1 + 2j)
    cases["big_endian_c16"] = (a, ra_bytes(a))
    a = np.arange(10, dtype="<u2").reshape(5, 2)
    cases["trailing_metadata"] = (a, ra_bytes(a, tail=b"volatile: metadata\n"))
    # The C library's compression: a raw LZ4 block, size = its length.
    a = (np.arange(28 * 28 * 3) % 17).astype("u1").reshape(28, 28, 3)
    z = lz4.block.compress(a.transpose().tobytes(), store_size=False)
    cases["c_lz4_u1"] = (a, ra_bytes(a, flags=2, data=z, size=len(z)))
    a = np.linspace(0, 1, 600, dtype="<f4").reshape(20, 30)
    z = lz4.block.compress(a.transpose().tobytes(), store_size=False)
    cases["c_lz4_f4"] = (a, ra_bytes(a, flags=2, data=z, size=len(z)))
    # The Julia package's LEB128 integers: size stays the raw size.
    a = np.array([[-3, 300, 0], [70000, -1, -70000]], dtype="<i4")
    cases["julia_leb128_i4"] = (a, ra_bytes(a, flags=2, data=leb128(a.transpose().ravel(), True, 32)))
    a = np.array([0, 1, 127, 128, 2**63, 2**64 - 1], dtype="<u8")
    cases["julia_leb128_u8"] = (a, ra_bytes(a, flags=2, data=leb128(a, False, 64)))
    a = np.array([-128, 127, 0, -1], dtype="i1").reshape(2, 2)
    cases["julia_leb128_i1"] = (a, ra_bytes(a, flags=2, data=leb128(a.transpose().ravel(), True, 8)))
    # User-defined elements (class 0): 3-byte records, read as bytes with a last axis.
    rec = np.array([(1, b"ab"), (2, b"cd"), (3, b"ef"), (4, b"gh")], dtype=[("n", "u1"), ("s", "S2")]).reshape(2, 2)
    expected = np.empty((2, 2, 3), dtype="u1")
    for i in range(2):
        for j in range(2):
            expected[i, j] = np.frombuffer(rec[i, j].tobytes(), dtype="u1")
    cases["user_records"] = (expected, ra_bytes(rec))
    for name, (a, b) in cases.items():
        with open(os.path.join(d, name + ".ra"), "wb") as f:
            f.write(b)
        np.save(os.path.join(d, name + ".npy"), a)


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype.newbyteorder("=") != b.dtype.newbyteorder("="):
        return f"shape/dtype {a.shape} {a.dtype} vs {b.shape} {b.dtype}"
    if a.dtype.kind in "fc":
        ok = np.array_equal(a, b, equal_nan=True)
    else:
        ok = np.array_equal(a, b)
    return None if ok else f"values differ: {a!r} vs {b!r}"


def check_asdf(node, path, npy):
    import asdf

    expected = np.load(npy)
    with asdf.open(path, lazy_load=False, memmap=False, validate_checksums=True) as af:
        x = af.tree
        for k in node.split("/"):
            x = x[k]
        err = same(x, expected)
    print(f"{path}: {err}" if err else f"ok {path}")


def asdf_cases():
    """The arrays of the ASDF inputs (layouts and byte orders a converter must handle)."""
    base = np.arange(60, dtype="<f8").reshape(6, 10) * 1.5
    return {
        "c_order": np.arange(12, dtype="<i2").reshape(3, 4),
        "fortran": np.asfortranarray(np.arange(12, dtype="<f4").reshape(3, 4)),
        "view": base[1:5:2, ::-3],
        "big_endian": np.arange(6, dtype=">i8").reshape(2, 3) - 3,
        "complex_be": (np.arange(6) * (1 - 1j)).astype(">c8").reshape(3, 2),
        "bool": np.array([[True, False, True]]),
        "f16": np.linspace(-2, 2, 10).astype("<f2").reshape(2, 5),
        "scalar": np.array(7, dtype="<u4"),
    }


def make_asdf(d):
    """ASDF inputs for the conversion to .ra, written by the reference, each with the
    array's values in NAME.npy."""
    import asdf

    os.makedirs(d, exist_ok=True)
    cases = dict(asdf_cases(), lz4=np.arange(1000, dtype="<u4").reshape(10, 100))
    for name, a in cases.items():
        comp = "lz4" if name == "lz4" else None
        asdf.AsdfFile({"x": {"y": a}}).write_to(os.path.join(d, name + ".asdf"), all_array_compression=comp)
        np.save(os.path.join(d, name + ".npy"), a)
    print("\n".join(cases))


def check_ra(path, npy):
    expected = np.load(npy)
    flags, eltype, elbyte, dims, a = read_ra(path)
    if (flags, tuple(dims), eltype, elbyte) != (0, expected.shape, CLASS[expected.dtype.kind], expected.dtype.itemsize):
        err = f"header: flags {flags}, dims {dims}, class {eltype}, {elbyte} bytes"
    else:
        err = same(a, expected)
    print(f"{path}: {err}" if err else f"ok {path}")


def each(args, n, check):
    """Calls `check` on each run of `n` arguments (the check commands' pairs)."""
    for i in range(0, len(args), n):
        check(*args[i : i + n])


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "check-asdf":
        each(sys.argv[3:], 2, lambda out, npy: check_asdf(sys.argv[2], out, npy))
    elif cmd == "make-asdf":
        make_asdf(sys.argv[2])
    elif cmd == "check-ra":
        each(sys.argv[2:], 2, check_ra)
    else:
        make(cmd)
