"""Peak memory of rasdf's streaming writers: `to-yaml` of a 256 MiB float32 array
(uncompressed, and lz4) and `defragment -c zlib` of a 1 GiB float64 array (a ramp,
which compresses to 15 %, and normal noise, which hardly compresses).

    python3 benches/memory.py [--rasdf target/release/rasdf] [--python .venv/bin/python]
                              [--dir /tmp/rasdf-memory] [--keep] [--only NAME]

The script itself needs only the standard library. Its inputs are made by the reference
library (asdf and numpy in the interpreter `--python` names, the pinned `.venv`), with
the data benches/compare.py uses: `np.arange` for the float64 array, a rounded noisy sine
for the float32 ones; and `standard_normal` for the noisy float64 array. They are large
(2.6 GiB, plus up to 1 GiB of output): they go under `--dir` (default /tmp/rasdf-memory)
and are deleted at the end unless `--keep`.

Each case is run once; its peak resident set (ru_maxrss of the child, from wait4) is
printed in MiB, beside the input's size. A memory-mapped input counts in the resident
set as far as its pages are read (the whole of it, for these commands).
"""

import argparse
import os
import subprocess
import sys
import time

MAKE = r"""
import sys
import numpy as np
import asdf

kind, path = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(0)


def smooth(n, dtype):
    x = np.linspace(0, 200 * np.pi, n)
    return (np.round(np.sin(x) * 1000 + rng.integers(0, 16, n)) / 8).astype(dtype)


if kind == "f64_1g":
    tree, comp = {"data": np.arange(1 << 27, dtype="<f8")}, None
elif kind == "f64_1g_noise":
    tree, comp = {"data": rng.standard_normal(1 << 27)}, None
elif kind == "f32_256m":
    tree, comp = {"data": smooth(1 << 26, "<f4")}, None
elif kind == "f32_256m_lz4":
    tree, comp = {"data": smooth(1 << 26, "<f4")}, "lz4"
else:
    raise SystemExit(f"unknown input {kind}")
asdf.AsdfFile(tree).write_to(path, all_array_compression=comp)
"""

MIB = 1 << 20


def make(python, d, kind):
    path = os.path.join(d, kind + ".asdf")
    if not os.path.exists(path):
        t0 = time.perf_counter()
        subprocess.run([python, "-c", MAKE, kind, path], check=True)
        print(f"made {path} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return path


def peak(args):
    """Runs `args`; returns (seconds, peak RSS in MiB, exit code, standard error)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = b""
    # Read standard error while waiting (a full pipe would block the child).
    for chunk in iter(lambda: p.stderr.read(4096), b""):
        err += chunk
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - t0, usage.ru_maxrss / 1024, p.returncode, err.decode(errors="replace")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rasdf", default=os.path.join(root, "target/release/rasdf"))
    ap.add_argument("--python", default=os.path.join(root, ".venv/bin/python"))
    ap.add_argument("--dir", default="/tmp/rasdf-memory")
    ap.add_argument("--keep", action="store_true", help="keep the inputs and outputs")
    ap.add_argument("--only", default=None, help="only the cases whose name contains this")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    cases = [
        ("to-yaml f32_256m", "f32_256m", lambda i, o: ["to-yaml", i, "-o", o], ".yaml"),
        ("to-yaml f32_256m_lz4", "f32_256m_lz4", lambda i, o: ["to-yaml", i, "-o", o], ".yaml"),
        ("defragment -c zlib f64_1g", "f64_1g", lambda i, o: ["defragment", i, "-o", o, "-c", "zlib"], ".asdf"),
        (
            "defragment -c zlib f64_1g_noise",
            "f64_1g_noise",
            lambda i, o: ["defragment", i, "-o", o, "-c", "zlib"],
            ".asdf",
        ),
    ]
    rows = []
    made = []
    try:
        for name, kind, argv, ext in cases:
            if a.only and a.only not in name:
                continue
            src = make(a.python, a.dir, kind)
            made.append(src)
            out = os.path.join(a.dir, f"out_{kind}{ext}")
            made.append(out)
            secs, rss, code, err = peak([a.rasdf, *argv(src, out)])
            if code != 0:
                raise SystemExit(f"{name}: exit {code}: {err.strip()}")
            rows.append((name, os.path.getsize(src) / MIB, os.path.getsize(out) / MIB, rss, secs))
            os.remove(out)
    finally:
        if not a.keep:
            for p in made:
                if os.path.exists(p):
                    os.remove(p)
    print("| case | input MiB | output MiB | peak RSS MiB | s |")
    print("|---|---|---|---|---|")
    for name, size, out_size, rss, secs in rows:
        print(f"| {name} | {size:.0f} | {out_size:.0f} | {rss:.0f} | {secs:.1f} |")


if __name__ == "__main__":
    main()
