"""Make the tree-and-array fixtures in testdata/pyasdf/arrays/ with the pinned reference
library, and dumps.json: each file's tree and values as the reference reads them (the
canonical form of dump_tree.py).

    python tests/python/make_array_fixtures.py testdata/pyasdf/arrays

Covers every datatype in both byte orders, each codec and storage (internal, inline,
external), views (offsets, negative strides, Fortran order), 0-d and empty arrays,
strings, structured records (nested, subarrays, per-field byte order), masks, big
integers, complex scalars, special floats, tricky strings, anchors, unknown tags and a
large tree.
"""

import datetime
import json
import os
import sys
import warnings

import asdf
import numpy as np
from asdf.tagged import TaggedDict, TaggedList, TaggedString

import dump_tree

SCALARS = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16", "b1"]


def values(code, n=12):
    dt = np.dtype(code)
    if dt.kind == "b":
        return np.arange(n) % 3 == 0
    if dt.kind == "f":
        a = np.linspace(-3.5, 1e3, n).astype(dt)
        a[1], a[2], a[3] = np.nan, np.inf, -np.inf
        return a
    if dt.kind == "c":
        return (np.linspace(-2, 2, n) + 1j * np.linspace(5, -5, n)).astype(dt)
    # Inline data is YAML ints, which the reference keeps within [-(2**63 - 2), 2**63 - 1].
    info = np.iinfo(dt)
    lo, hi = max(int(info.min), -(2**63 - 2)), min(int(info.max), 2**63 - 1)
    out = [lo + (hi - lo) * k // (n - 1) for k in range(n)]
    return np.array(out, dtype=dt)


def main(out):
    os.makedirs(out, exist_ok=True)
    p = lambda name: os.path.join(out, name)  # noqa: E731
    made = []

    def write(name, tree, **kw):
        af = asdf.AsdfFile(tree)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            af.write_to(p(name), **kw)
        made.append(name)
        return af

    # Every scalar datatype in both byte orders, 2-D.
    dtypes = {}
    for code in SCALARS:
        for order in "<>":
            dt = np.dtype(code).newbyteorder(order) if np.dtype(code).itemsize > 1 else np.dtype(code)
            dtypes[f"{code}{order}"] = values(code).astype(dt).reshape(3, 4)
    full = dict(dtypes)
    full["u8_full"] = np.array([0, 2**64 - 1, 2**63], dtype=">u8")
    full["i8_full"] = np.array([-(2**63), 2**63 - 1], dtype="<i8")
    write("dtypes.asdf", full)
    for codec in ("zlib", "bzp2", "lz4"):
        write(f"dtypes_{codec}.asdf", dtypes, all_array_compression=codec)
    write("dtypes_inline.asdf", dtypes, all_array_storage="inline")

    # Exploded: every array in its own file beside the main one.
    write("exploded.asdf", {"a": np.arange(10, dtype="<i4"), "b": {"c": np.ones((2, 3), ">f8")}}, all_array_storage="external")
    for f in sorted(os.listdir(out)):
        if f.startswith("exploded") and f != "exploded.asdf":
            made.append(f)

    # Strings and records.
    rec = np.dtype([("id", "<i4"), ("pos", ">f8", (2,)), ("name", "S5"), ("inner", [("a", "u1"), ("b", "<f4")])])
    records = np.zeros(3, dtype=rec)
    records["id"] = [1, 2, 3]
    records["pos"] = [[0.5, 1.5], [2.5, 3.5], [4.5, 5.5]]
    records["name"] = [b"one", b"two", b"three"]
    records["inner"]["a"] = [7, 8, 9]
    records["inner"]["b"] = [0.25, 0.5, 0.75]
    write(
        "strings_records.asdf",
        {
            "ascii": np.array([b"a", b"bc", b"", b"defgh"]),
            "ucs4_le": np.array(["x", "\u00e9t\u00e9", "\U0001f600"], dtype="<U3"),
            "ucs4_be": np.array(["big", "endian"], dtype=">U6"),
            "records": records,
            "records_2d": np.zeros((2, 2), dtype=[("x", "<i2"), ("y", ">i2")]),
        },
    )

    # Views share their base's block; odd layouts; masks.
    base = np.arange(48, dtype="<i2").reshape(6, 8)
    fortran = np.asfortranarray(np.arange(12, dtype="<f4").reshape(3, 4))
    masked = np.ma.array(np.arange(6.0), mask=[0, 1, 0, 0, 1, 0])
    # asdf 6 copies views by default; save_base makes views share their base's block,
    # with offset and strides (how files from older writers look).
    with asdf.config_context() as cfg:
        cfg.default_array_save_base = True
        write(
            "shared_views.asdf",
            {
                "base": base,
                "slice": base[1:4, 2:6],
                "reversed": base[:, ::-1],
                "stepped": base[::2, ::3],
                "column": base[:, 3],
                "transposed": base.T,
                "fortran": fortran,
                "fortran_row": fortran[1],
            },
        )
    write(
        "views_masks.asdf",
        {
            "base": base,
            "slice": base[1:4, 2:6],
            "reversed": base[:, ::-1],
            "stepped": base[::2, ::3],
            "column": base[:, 3],
            "fortran": fortran,
            "zero_d": np.array(3.5),
            "empty": np.zeros((0, 3), dtype="<i4"),
            "masked": masked,
            "masked_int": np.ma.array(np.arange(4, dtype="<i8"), mask=[1, 0, 0, 1]),
        },
    )

    # Scalars and tree features.
    shared = [1, 2, 3]
    tree = {
        "ints": [0, -1, 2**62, -(2**63 - 2), 2**63 - 1],
        "big": asdf.IntegerType(2**100 + 12345),
        "negative_big": asdf.IntegerType(-(2**80)),
        "floats": [0.1, -0.0, 1e20, 1e-7, 3.0, float("nan"), float("inf"), float("-inf"), 1.7976931348623157e308],
        "complex": [1 + 2j, -1.5j, complex("nan+infj")],
        "strings": ["yes", "no", "on", "null", "~", "1:30", "0x1F", "017", "1e5", "2020-01-01", "=", "", " lead", "trail ",
                    "a: b", "# hash", "multi\nline\n", "tab\there", "quote'\"", "\u00e9\u4e2d\U0001f600", "<<", "-", "..."],
        "bools": [True, False],
        "nothing": None,
        "date": datetime.date(2020, 1, 2),
        "datetime": datetime.datetime(2001, 12, 14, 21, 59, 43, 100000),
        "shared_a": shared,
        "shared_b": shared,
        "nested": {"deeper": {"deepest": [{"k": 1}, [2, [3, [4]]]]}},
        "keys": {1: "int key", True: "bool key"},
        "bytes_": b"\x00\x01binary",
        "quantity": TaggedDict({"value": 3.5, "unit": "m"}, "tag:astropy.org:astropy/units/quantity-1.1.0"),
        "unit": TaggedString("km / s"),
        "tagged_list": TaggedList([1, 2], "tag:example.org:custom/list-1.0.0"),
    }
    tree["unit"]._tag = "tag:astropy.org:astropy/units/unit-1.0.0"
    write("scalars_tags.asdf", tree)

    # A large tree: 20 000 entries with small arrays among them.
    rng = np.random.default_rng(1)
    big = {}
    for i in range(200):
        big[f"group{i:03d}"] = {
            "meta": {f"key{j}": (j * 1.5 if j % 3 else f"value {j}") for j in range(90)},
            "flags": [bool(j % 2) for j in range(5)],
            "array": rng.standard_normal(4).astype("<f4") if i % 2 else np.arange(3, dtype=">i8") + i,
        }
    write("large_tree.asdf", big)

    with open(p("dumps.json"), "w") as f:
        dumps = {}
        for name in made:
            if name.startswith("exploded") and name != "exploded.asdf":
                continue
            dumps[name] = dump_tree.dump_file(p(name))
        json.dump(dumps, f, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "testdata/pyasdf/arrays")
