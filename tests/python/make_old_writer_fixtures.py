"""Make testdata/oldasdf/: files written by an old reference library, asdf 2.15.2 (the
last 2.x, 2023), at every ASDF Standard it writes (1.0.0 to 1.6.0) and with each codec,
so that rasdf is tested on what an older writer put in files still around: its
`asdf_library` and `history` forms, `core/ndarray-1.0.0`, checksums of the decoded data
of compressed blocks, its block layout, padding and streams.

Run with a venv from requirements-oldasdf.txt (numpy < 2, which asdf 2.15 needs):

    python tests/python/make_old_writer_fixtures.py testdata/oldasdf

The expected values come from the pinned reference library, asdf 6.0.0, run live by the
tests (dump_tree.py in the main venv): every file must read in rasdf as it reads there.
"""

import os
import sys
import warnings

import asdf
import numpy as np


def tree(rng, plain):
    a = rng.normal(size=(4, 5))
    t = {
        "a": a, "view": a[1:3, ::2], "t": a.T, "i": np.arange(50, dtype=">i8"), "small": np.arange(3),
        "s": "text", "nested": {"x": [a[0], a[1]]}, "m": np.ma.array(np.arange(6.0), mask=[0, 1, 0, 0, 1, 0]),
        "b": np.array([True, False]), "f": [1.5, float("nan"), float("inf")], "by": b"\x00\x01bytes",
        "none": None, "tup": (1, 2),
    }
    if plain:
        # asdf 2.15 compresses none of these: records, complex and unicode arrays.
        t["rec"] = np.zeros(3, dtype=[("a", "f4"), ("b", ">i2", (2,)), ("c", "S5")])
        t["c"] = np.array([1 + 2j, 3 - 4j])
        t["u"] = np.array(["ab", "cd\u00e9"])
    return t


def main(out):
    warnings.simplefilter("ignore")
    os.makedirs(out, exist_ok=True)
    assert asdf.__version__ == "2.15.2", asdf.__version__
    rng = np.random.default_rng(3)
    for ver in asdf.versioning.supported_versions:
        for comp in [None, "zlib", "bzp2", "lz4"]:
            af = asdf.AsdfFile(tree(rng, comp is None), version=str(ver))
            af.write_to(os.path.join(out, f"v{ver}_{comp or 'none'}.asdf"), all_array_compression=comp)
    asdf.AsdfFile(tree(rng, True)).write_to(os.path.join(out, "inline.asdf"), all_array_storage="inline")
    asdf.AsdfFile(tree(rng, True)).write_to(os.path.join(out, "pad.asdf"), pad_blocks=True)
    af = asdf.AsdfFile({"s": asdf.Stream([4], np.float32), "x": 1})
    with open(os.path.join(out, "stream.asdf"), "wb") as f:
        af.write_to(f)
        for _ in range(5):
            f.write(np.arange(4, dtype=np.float32).tobytes())


if __name__ == "__main__":
    main(sys.argv[1])
