"""The Python package against the reference library (asdf), in the same process and run.

    .venv/bin/python benches/python_api.py [--quick] [--runs N] [--dir DIR] [--only NAME]

Inputs are benches/compare.py's (made once with the reference, kept in DIR): a tree of
20 000 entries with 500 small arrays, one of 200 000 entries with 2 000, 1 GiB of
float64 uncompressed, 256 MiB of float32 with zlib and with lz4, 64 MiB with bzp2.

- open + touch: open the file and turn every array into numpy and reduce it (`sum`):
  `asdf.open(lazy_load=False, memmap=False)` walking its tree, against `rasdf.open` with
  `af.arrays()` (which builds only the arrays) and against `rasdf.open` walking
  `af.tree` (which builds the whole tree); best of N runs, alternating in one process.
- first array: open the file and get its first array as a numpy array (no reduction):
  the reference memory-maps it (`memmap=True`, its fastest way), rasdf gives its view.
- 16 values: open the file and read 16 values from the middle of its first array
  (`af["data"][k:k + 16]`, the reference lazily loading, memory-mapped when it can).
- peak memory: the same open + touch once in a fresh process each (imports included),
  its maximum resident set.
"""

import argparse
import gc
import json
import os
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import compare  # noqa: E402 - benches/compare.py makes the inputs

# The open + touch once, in a process of its own, for its peak memory.
WORK = r"""
import json, sys, warnings
sys.path.insert(0, sys.argv[3])
warnings.simplefilter("ignore")
import numpy as np
import python_api
lib, path = sys.argv[1], sys.argv[2]
if lib == "asdf":
    import asdf
    python_api.ref_touch(asdf, np, path)
else:
    import rasdf
    python_api.rasdf_touch(rasdf, path)
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
print(json.dumps({"peak_mib": int(hwm.split()[1]) / 1024}))
"""


def each_array(x, is_array):
    """The arrays of a tree of dicts and lists, as a walk finds them."""
    if is_array(x):
        yield x
    elif isinstance(x, dict):
        for v in x.values():
            yield from each_array(v, is_array)
    elif isinstance(x, list):
        for v in x:
            yield from each_array(v, is_array)


def ref_touch(asdf, np, path):
    """The reference: open, then every array of its tree as numpy, reduced."""
    lazy = (np.ndarray, asdf.tags.core.ndarray.NDArrayType)
    with asdf.open(path, lazy_load=False, memmap=False) as af:
        arrays = list(each_array(af.tree, lambda x: isinstance(x, lazy)))
        for a in arrays:
            np.asarray(a).sum()
        return len(arrays)


def rasdf_touch(rasdf, path):
    """rasdf: open, then every array of `arrays()` (only the arrays built)."""
    with rasdf.open(path) as af:
        arrays = af.arrays()
        for a in arrays.values():
            a[...].sum()
        return len(arrays)


def rasdf_tree_touch(rasdf, path):
    """The same as rasdf_touch, but through the whole tree (built), as a walk finds them."""
    with rasdf.open(path) as af:
        arrays = list(each_array(af.tree, lambda x: isinstance(x, rasdf.NDArray)))
        for a in arrays:
            a[...].sum()
        return len(arrays)


def ref_first(asdf, np, path):
    with asdf.open(path, memmap=True) as af:
        return np.asarray(af.tree["data"]).shape


def rasdf_first(rasdf, path):
    with rasdf.open(path) as af:
        return af["data"][...].shape


def ref_middle(asdf, np, path):
    with asdf.open(path, lazy_load=True, memmap=True) as af:
        a = af.tree["data"]
        k = a.shape[0] // 2
        return np.array(a[k : k + 16])


def rasdf_middle(rasdf, path):
    with rasdf.open(path) as af:
        a = af["data"]
        k = a.shape[0] // 2
        return a[k : k + 16].copy()


def best(runs, f):
    times = []
    for _ in range(runs):
        gc.collect()
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def peak(lib, path):
    out = subprocess.run([sys.executable, "-c", WORK, lib, path, HERE], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["peak_mib"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--dir", default=os.path.join(HERE, "..", "target", "bench-inputs"))
    ap.add_argument("--only")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import asdf
    import numpy as np

    import rasdf

    rows = []
    for name, path, _comp in compare.make_inputs(args.dir, args.quick):
        if args.only and args.only not in name:
            continue
        n_ref = ref_touch(asdf, np, path)
        n_ours = rasdf_touch(rasdf, path)
        assert n_ref == n_ours, (name, n_ref, n_ours)
        runs = args.runs if name.startswith("tree") else max(1, min(args.runs, 3))
        t_ref = t_ours = t_walk = float("inf")
        for _ in range(runs):  # alternate, so both see the same machine
            t_ref = min(t_ref, best(1, lambda: ref_touch(asdf, np, path)))
            t_ours = min(t_ours, best(1, lambda: rasdf_touch(rasdf, path)))
            t_walk = min(t_walk, best(1, lambda: rasdf_tree_touch(rasdf, path)))
        row = {
            "case": name,
            "arrays": n_ours,
            "asdf_s": t_ref,
            "rasdf_s": t_ours,
            "speedup": t_ref / t_ours,
            "rasdf_tree_walk_s": t_walk,
            "speedup_tree_walk": t_ref / t_walk,
            "asdf_peak_mib": peak("asdf", path),
            "rasdf_peak_mib": peak("rasdf", path),
        }
        if not name.startswith("tree"):
            row["first_asdf_memmap_s"] = best(runs, lambda: ref_first(asdf, np, path))
            row["first_rasdf_s"] = best(runs, lambda: rasdf_first(rasdf, path))
            assert np.array_equal(ref_middle(asdf, np, path), rasdf_middle(rasdf, path))
            row["middle_asdf_s"] = best(runs, lambda: ref_middle(asdf, np, path))
            row["middle_rasdf_s"] = best(runs, lambda: rasdf_middle(rasdf, path))
        rows.append(row)
        print(json.dumps(row), flush=True)
    print()
    print(
        "| case | arrays | asdf s | rasdf s (arrays()) | speed-up | rasdf s (walking .tree) | speed-up "
        "| asdf peak MiB | rasdf peak MiB | first array: asdf memmap s | rasdf s | 16 values: asdf s | rasdf s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        first = (
            f"{r['first_asdf_memmap_s']:.4f} | {r['first_rasdf_s']:.4f} | {r['middle_asdf_s']:.4f} | "
            f"{r['middle_rasdf_s']:.4f}"
            if "first_rasdf_s" in r
            else "- | - | - | -"
        )
        print(
            f"| {r['case']} | {r['arrays']} | {r['asdf_s']:.3f} | {r['rasdf_s']:.4f} | {r['speedup']:.1f}x | "
            f"{r['rasdf_tree_walk_s']:.4f} | {r['speedup_tree_walk']:.1f}x | "
            f"{r['asdf_peak_mib']:.0f} | {r['rasdf_peak_mib']:.0f} | {first} |"
        )


if __name__ == "__main__":
    main()
