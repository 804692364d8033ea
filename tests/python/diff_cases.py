"""Pairs of ASDF files and `asdftool diff`'s verdict on each, for cli/tests/diff.rs.

    python diff_cases.py OUTDIR

Writes pairs made with the pinned asdf (tests/python/requirements.txt) into OUTDIR, adds
the pairs asdf's own diff tests use (from the installed package's test data), runs asdf's
diff on each (with `ignore` where given) and prints a JSON list of
{"name", "a", "b", "ignore", "differs", "output"}. `differs` is whether asdftool printed
anything.
"""

import io
import json
import os
import sys
import warnings

import asdf
import numpy as np
from asdf._commands.diff import diff

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
cases = []


def write(name, tree, **kw):
    path = os.path.join(out, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        asdf.AsdfFile(tree).write_to(path, **kw)
    return path


def pair(name, ta, tb, kwa=None, kwb=None, ignore=None):
    a = write(f"{name}_a.asdf", ta, **(kwa or {}))
    b = write(f"{name}_b.asdf", tb, **(kwb or {}))
    cases.append({"name": name, "a": a, "b": b, "ignore": ignore or []})


rng = np.random.default_rng(7)
img = rng.normal(size=(8, 6)).astype("f4")
ints = np.arange(24, dtype="i4").reshape(4, 6)
meta = {"telescope": "JWST", "exposure": 12.5, "n": 3, "flags": [1, 2, 3], "nested": {"x": 1, "y": [True, None]}}

pair("same", {"meta": meta, "img": img}, {"meta": dict(meta), "img": img.copy()})
pair("int_value", {"n": 3}, {"n": 4})
pair("int_float_equal", {"n": 1}, {"n": 1.0})
# Python compares an int and a float exactly: 2**53 + 1 is not the float it rounds to.
pair("big_int_float", {"n": 2**53 + 1}, {"n": float(2**53)})
pair("big_int_float_equal", {"n": 2**53}, {"n": float(2**53)})
pair("bool_int_equal", {"n": True}, {"n": 1})
pair("str_value", {"s": "JWST"}, {"s": "HST"})
pair("str_int", {"s": "1"}, {"s": 1})
pair("key_added", {"a": 1}, {"a": 1, "b": 2})
pair("key_removed", {"a": 1, "b": 2}, {"a": 1})
pair("nested_value", {"meta": meta}, {"meta": {**meta, "nested": {"x": 2, "y": [True, None]}}})
pair("list_item", {"l": [1, 2, 3]}, {"l": [1, 5, 3]})
pair("list_of_dicts", {"l": [{"a": 1}, {"a": 2}]}, {"l": [{"a": 1}, {"a": 3}]})
pair("null_value", {"x": None}, {"x": 0})
pair("float_value", {"x": 0.1}, {"x": 0.1 + 1e-16})
pair("int_keys", {"m": {1: "a"}}, {"m": {1: "b"}})
pair("array_element", {"img": img}, {"img": np.where(np.arange(img.size).reshape(img.shape) == 7, 0, img).astype("f4")})
pair("array_compressed", {"img": img}, {"img": img}, kwb={"all_array_compression": "zlib"})
pair("array_lz4_bzp2", {"img": ints}, {"img": ints}, kwa={"all_array_compression": "lz4"}, kwb={"all_array_compression": "bzp2"})
pair("array_shape", {"img": ints}, {"img": ints.reshape(6, 4)})
pair("array_dtype", {"img": ints}, {"img": ints.astype("i8")})
pair("array_ints_changed", {"img": ints}, {"img": ints + (ints == 5)})
pair("array_block_order", {"a": img, "b": ints}, {"b": ints, "a": img})
pair("array_view_vs_copy", {"v": ints[1:3, ::2]}, {"v": ints[1:3, ::2].copy()})
pair("array_structured", {"r": np.array([(1, 2.0), (3, 4.0)], dtype=[("a", "i4"), ("b", "f8")])},
     {"r": np.array([(1, 2.0), (3, 4.5)], dtype=[("a", "i4"), ("b", "f8")])})
pair("array_strings", {"s": np.array(["ab", "cd"])}, {"s": np.array(["ab", "ce"])})
pair("array_strings_same", {"s": np.array(["ab", "cd"])}, {"s": np.array(["ab", "cd"])})
pair("array_complex", {"c": np.array([1 + 2j, 3j])}, {"c": np.array([1 + 2j, 3.5j])})
pair("ignored_key", {"a": 1, "date": "2020"}, {"a": 1, "date": "2021"}, ignore=["date"])
pair("ignored_nested", {"l": [{"a": 1, "t": 1}, {"a": 2, "t": 2}]}, {"l": [{"a": 1, "t": 5}, {"a": 2, "t": 6}]},
     ignore=["l[*].t"])
pair("ignored_not_all", {"a": 1, "b": 1}, {"a": 2, "b": 2}, ignore=["a"])
recursive_a, recursive_b = {"x": 1}, {"x": 2}
recursive_a["self"], recursive_b["self"] = recursive_a, recursive_b
pair("self_reference", recursive_a, recursive_b)
same_a, same_b = {"x": 1}, {"x": 1}
same_a["self"], same_b["self"] = same_a, same_b
pair("self_reference_same", same_a, same_b)
# Where rasdf differs from asdftool on purpose (cli/tests/diff.rs says why).
pair("nan_scalar", {"x": float("nan")}, {"x": float("nan")})
pair("list_length", {"l": [1, 2]}, {"l": [1, 2, 3]})
pair("array_byteorder", {"img": ints}, {"img": ints.astype(">i4")})
pair("array_inline_vs_block", {"img": ints}, {"img": ints}, kwb={"all_array_storage": "inline"})
pair("array_nan_same", {"img": np.array([1.0, np.nan])}, {"img": np.array([1.0, np.nan])})

# asdf's own diff test pairs.
data = os.path.join(os.path.dirname(asdf.__file__), "_tests", "data")
for name, a, b, ignore in [
    ("asdf_frames", "frames0.asdf", "frames1.asdf", []),
    ("asdf_frames_ignore_library", "frames0.asdf", "frames1.asdf", ["asdf_library"]),
    ("asdf_frames_ignore_both", "frames0.asdf", "frames1.asdf", ["asdf_library", "frames[*].reference_frame"]),
    ("asdf_ndarrays", "ndarray0.asdf", "ndarray1.asdf", []),
    ("asdf_ndarray_in_list", "ndarray_in_list0.asdf", "ndarray_in_list1.asdf", []),
    ("asdf_blocks", "block0.asdf", "block1.asdf", []),
    ("asdf_frames_same", "frames0.asdf", "frames0.asdf", []),
]:
    cases.append({"name": name, "a": os.path.join(data, a), "b": os.path.join(data, b), "ignore": ignore})

for c in cases:
    s = io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        diff([c["a"], c["b"]], minimal=False, iostream=s, ignore=c["ignore"] or None)
    c["output"] = s.getvalue()
    c["differs"] = bool(s.getvalue().strip())

json.dump(cases, sys.stdout, indent=1)
