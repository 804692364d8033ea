"""Check what `rasdf extract` wrote against the reference library and numpy: each case of
the JSON list in the file named by argv[1] is an object

    {"file": ASDF, "path": TREE PATH, "out": OUT, "mask": M or null, "raw": bool,
     "inline": bool}

and is read back with `numpy.load` (or as bytes, for `raw`) and compared with the
reference's array at that path: the same dtype (byte order and fields included), the
same shape, the same bytes (so NaNs bit for bit), and, for a `.npy`, the very bytes
`numpy.save` writes of that array; the mask with `numpy.ma.getmaskarray`. Prints one
line per case: `ok OUT`, or `bad OUT: why`.
Inline NaNs too: rasdf's `.nan` is PyYAML's `-inf / inf`, negative on x86.

    python tests/python/check_npy.py cases.json
"""

import io
import json
import sys
import warnings

import asdf
import numpy as np


def node_at(tree, path):
    node = tree
    for step in (s for s in path.split("/") if s):
        step = step.replace("~1", "/").replace("~0", "~")
        node = node[int(step)] if isinstance(node, list) else node[step]
    return node


def reference(case):
    """The reference's array at the case's path: its data (a copy, C order) and its
    mask (None for an array that is not masked)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with asdf.open(case["file"], lazy_load=False, memmap=False) as af:
            want = node_at(af.tree, case["path"])
            if np.ma.isMaskedArray(want):
                return np.asarray(want.data).copy(order="C"), np.ma.getmaskarray(want).copy()
            return np.asarray(want).copy(order="C"), None


def check(case):
    data, mask = reference(case)
    with open(case["out"], "rb") as f:
        written = f.read()
    if case.get("raw"):
        if written != data.tobytes():
            return f"the raw bytes differ ({len(written)} bytes, the reference's {data.nbytes})"
    else:
        got = np.load(case["out"], allow_pickle=False)
        descr = np.lib.format.dtype_to_descr
        if got.dtype != data.dtype or descr(got.dtype) != descr(data.dtype):
            return f"dtype {descr(got.dtype)!r}, the reference's {descr(data.dtype)!r}"
        if got.shape != data.shape:
            return f"shape {got.shape}, the reference's {data.shape}"
        if got.tobytes() != data.tobytes():
            return "the values differ"
        saved = io.BytesIO()
        np.save(saved, data)
        if written != saved.getvalue():
            return "not the bytes numpy.save writes"
    if case.get("mask"):
        if mask is None:
            return "the reference's array has no mask"
        if case.get("raw"):
            with open(case["mask"], "rb") as f:
                if f.read() != mask.astype(np.uint8).tobytes():
                    return "the raw mask differs"
        else:
            got = np.load(case["mask"], allow_pickle=False)
            if got.dtype != np.bool_ or got.shape != data.shape or not np.array_equal(got, mask):
                return f"mask {got.dtype} {got.shape} {got.tolist()}, the reference's {mask.tolist()}"
    return None


def main(cases_json):
    with open(cases_json) as f:
        cases = json.load(f)
    for case in cases:
        try:
            why = check(case)
        except Exception as e:  # noqa: BLE001 - any failure is reported for its case
            why = f"{type(e).__name__}: {e}"
        print(f"ok {case['out']}" if why is None else f"bad {case['out']}: {why}")


if __name__ == "__main__":
    main(sys.argv[1])
