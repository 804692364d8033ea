"""Write N random ASDF files with the reference library, for differential tests.

Usage: python make_random_files.py SEED N OUTDIR

Each file is a random tree (nested mappings and lists; shared and self-referencing
nodes; keys of type str, int and bool; scalars chosen to stress YAML 1.1 resolution:
strings that look like bools, nulls, numbers, dates and sexagesimals, strings with
quotes, colons, hashes, leading or trailing spaces, newlines, control characters and
non-ASCII text; ints near the int64 limits and beyond them; floats with extreme
exponents, signed zeros, infinities and NaN; complex numbers) holding random arrays
(every numeric datatype in both byte orders, bool, ascii and ucs4 strings, records;
0-d, empty and up to 4-d shapes; views with offsets, steps and transposes sharing one
base; masked arrays; stored in blocks with no compression, zlib, bzp2 or lz4, or inline).
The same SEED writes the same files.
"""

import os
import random
import sys
import warnings

import asdf
import numpy as np
from asdf.tagged import TaggedDict, TaggedList, TaggedString

TRICKY = [
    "", " ", "yes", "No", "ON", "off", "y", "n", "Y", "true", "False", "null", "Null", "~",
    "NULL", "1e5", "1E5", "1.0e5", "1.0e+5", "+1", "-1", "0x1F", "0o17", "017", "0b101", "08",
    "1_000", "1:30", "-1:30:00", "1:30.5", "190:20:30", ".5", "5.", ".inf", "-.Inf", ".NaN",
    "nan", "inf", "2020-01-01", "2020-1-1", "2001-12-14t21:59:43.10-05:00",
    "2001-12-14 21:59:43.10", "=", "<<", "-", "- a", "a: b", "a:b", "a #b", "#x", "'q'",
    '"dq"', "a'b", 'a"b', "\\", "a\\nb", "line\nbreak", "two\n\nbreaks", "trail\n",
    "\ttab", "tab\t", " lead", "trail ", "x\x07y", "\x00", "\x7f", "\u00e9t\u00e9",
    "\u2028sep", "\u00a0nbsp", "\ufeffbom", "\U0001f52d", "[a]", "{a: 1}", "*x", "&x", "!t",
    "%p", "@a", "`b", "|", ">", "?", "? a", ",", "a,b", "...", "---", "0", "-0", "0.0",
    "1.5", "12e3", "3.", "0x", "0xG", "+.5", "-.5e-3", "1__2", "_1", "1_", "0.1_0",
]

NUM = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float16", "float32", "float64", "complex64", "complex128"]


def rand_float(r):
    c = r.random()
    if c < 0.1:
        return r.choice([float("nan"), float("inf"), float("-inf"), -0.0, 0.0])
    if c < 0.2:
        return r.choice([5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 1e-300, 1e300, 0.1, 1 / 3])
    if c < 0.5:
        return float(r.randint(-10**6, 10**6))
    return r.uniform(-1, 1) * 10 ** r.randint(-30, 30)


def rand_int(r):
    c = r.random()
    if c < 0.2:
        return r.choice([0, -1, 2**63 - 1, -(2**63) + 2, 2**63 - 2, 2**31, -(2**31), 2**53 + 1])
    if c < 0.25:
        return r.choice([2**63, -(2**63), -(2**63) + 1, 2**64, 2**70 + 5, -(2**100)])
    return r.randint(-10**9, 10**9)


def rand_str(r):
    if r.random() < 0.7:
        return r.choice(TRICKY)
    n = r.randint(1, 12)
    pool = "abc xyz:#-'\"\\\n\t,[]{}&*!|>%@`?=~01.e+\u00e9\u4e2d"
    return "".join(r.choice(pool) for _ in range(n))


def rand_scalar(r):
    c = r.random()
    if c < 0.35:
        return rand_str(r)
    if c < 0.5:
        return rand_int(r)
    if c < 0.7:
        return rand_float(r)
    if c < 0.8:
        return r.choice([True, False, None])
    return complex(rand_float(r), rand_float(r))


def rand_key(r):
    c = r.random()
    if c < 0.8:
        return rand_str(r)
    if c < 0.92:
        return r.randint(-1000, 1000)
    return r.choice([True, False])


def rand_dtype(r):
    c = r.random()
    bo = r.choice("<>")
    if c < 0.75:
        name = r.choice(NUM)
        return np.dtype(name).newbyteorder(bo)
    if c < 0.8:
        return np.dtype("bool")
    if c < 0.87:
        return np.dtype(f"S{r.randint(1, 6)}")
    if c < 0.93:
        return np.dtype(f"{bo}U{r.randint(1, 4)}")
    fields = []
    for i in range(r.randint(1, 3)):
        sub = np.dtype(r.choice(NUM)).newbyteorder(r.choice("<>"))
        shape = r.choice([(), (), (2,)])
        fields.append((f"f{i}", sub, shape))
    return np.dtype(fields)


def fill(r, dtype, n, rng):
    if dtype.names is not None:
        a = np.zeros(n, dtype=dtype)
        for name in dtype.names:
            sub = a[name]
            a[name] = fill(r, sub.dtype, sub.size, rng).reshape(sub.shape)
        return a
    if dtype.kind == "S":
        pool = [b"", b"a", b"ab", b"xyz", b"\x01\x02", b"longer!!"]
        return np.array([r.choice(pool) for _ in range(n)], dtype=dtype)
    if dtype.kind == "U":
        pool = ["", "a", "\u00e9", "\u4e2d\u6587", "\U0001f52dx"]
        return np.array([r.choice(pool) for _ in range(n)], dtype=dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, n, dtype=dtype.newbyteorder("="), endpoint=True)
        return a.astype(dtype)
    if dtype.kind == "f":
        a = rng.standard_normal(n) * 10.0 ** rng.integers(-5, 6, n)
        if n:
            a[rng.integers(0, n, max(1, n // 10))] = r.choice([np.nan, np.inf, -np.inf, -0.0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return a.astype(dtype)
    re = fill(r, np.dtype("float64"), n, rng)
    im = fill(r, np.dtype("float64"), n, rng)
    out = np.empty(n, dtype=dtype)
    out.real, out.imag = re, im
    return out


def rand_array(r, rng):
    dtype = rand_dtype(r)
    ndim = r.choice([0, 1, 1, 2, 2, 3, 4])
    shape = tuple(r.choice([0, 1, 2, 3, 5]) if r.random() < 0.15 else r.randint(1, 6) for _ in range(ndim))
    n = int(np.prod(shape)) if shape else 1
    a = fill(r, dtype, n, rng).reshape(shape)
    if ndim and r.random() < 0.3:
        a = a.T if r.random() < 0.5 else a[(slice(None, None, r.choice([1, 2, -1])),) + (slice(None),) * (ndim - 1)]
    if r.random() < 0.15 and dtype.names is None and a.size:
        a = np.ma.array(a, mask=rng.integers(0, 2, a.shape).astype(bool))
    return a


def rand_node(r, rng, depth, pool):
    c = r.random()
    if depth > 3 or c < 0.45:
        return rand_scalar(r)
    if c < 0.55:
        a = rand_array(r, rng)
        pool.append(a)
        return a
    if c < 0.6 and pool:
        # A second reference to an earlier node (an alias, or a view of its base).
        x = r.choice(pool)
        if isinstance(x, np.ndarray) and not isinstance(x, np.ma.MaskedArray) and x.ndim and x.shape[0] > 1:
            return x[1:]
        return x
    if c < 0.63:
        # A node of a tag no extension knows: kept as it is, tag and all.
        tag = r.choice(["tag:example.org/thing-1.0.0", "!custom", "tag:stsci.edu:asdf/unknown-9.9.9"])
        kind = r.random()
        if kind < 0.4:
            return TaggedDict({rand_key(r): rand_scalar(r) for _ in range(r.randint(0, 3))}, tag)
        if kind < 0.7:
            return TaggedList([rand_scalar(r) for _ in range(r.randint(0, 3))], tag)
        if kind > 0.9:
            # A core node the reference converts to an object of its own.
            target = r.choice([r.randint(0, 9), rand_str(r), "/sci/data"])
            shape = [r.randint(0, 100) for _ in range(r.randint(0, 3))]
            return asdf.ExternalArrayReference(r.choice(["a.fits", "sub/b.h5", "c d.asdf"]), target, r.choice(NUM), shape)
        t = TaggedString(r.choice(["x", "1", "yes", "a b", "", "0x1F"]))
        t._tag = tag
        return t
    if c < 0.8:
        out = [rand_node(r, rng, depth + 1, pool) for _ in range(r.randint(0, 4))]
        pool.append(out)
        return out
    out = {}
    for _ in range(r.randint(0, 5)):
        out[rand_key(r)] = rand_node(r, rng, depth + 1, pool)
    if r.random() < 0.05:
        out["self"] = out
    pool.append(out)
    return out


def main(seed, n, outdir):
    os.makedirs(outdir, exist_ok=True)
    for i in range(n):
        r = random.Random(seed * 100003 + i)
        rng = np.random.default_rng(seed * 100003 + i)
        pool = []
        tree = {f"k{j}": rand_node(r, rng, 0, pool) for j in range(r.randint(1, 6))}
        comp = r.choice([None, None, "zlib", "bzp2", "lz4"])
        inline = [a for a in pool if isinstance(a, np.ndarray) and r.random() < 0.2]
        path = os.path.join(outdir, f"random{i:04d}.asdf")
        # What the reference cannot write (some inline forms, say) is written without
        # inline arrays; a tree it cannot write at all is left out.
        external = r.random() < 0.1
        for attempt in (inline, []):
            af = asdf.AsdfFile(tree)
            for a in pool:
                if isinstance(a, np.ndarray) and external:
                    af.set_array_storage(a, "external")
            for a in attempt:
                af.set_array_storage(a, "inline")
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    af.write_to(path, all_array_compression=comp)
                break
            except Exception as e:  # noqa: BLE001 - any refusal of the reference's
                if os.path.exists(path):
                    os.remove(path)
                if os.environ.get("VERBOSE"):
                    import traceback; traceback.print_exc()
                print(f"random{i:04d}: the reference cannot write it ({type(e).__name__})", file=sys.stderr)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
