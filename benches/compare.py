"""Time rasdf against the reference library (asdf) on the same inputs, in the same run,
and print the ratios.

    .venv/bin/python benches/compare.py [--quick] [--rasdf target/release/rasdf] [--dir DIR]

Inputs are made with the reference library (once, kept in DIR): a tree of 20 000
entries with 500 small arrays, one of 200 000 entries with 2 000, 1 GiB of float64
uncompressed, 256 MiB of float32 with zlib and with lz4, 64 MiB with bzp2 (`--quick`
divides the array sizes by 16).

Reading: `rasdf info --stats` (opens the file, reads and reduces every array; the whole
process) against the reference opening the file and reducing every array (min, max,
mean, NaN count), in its own process with imports excluded from the time. Writing: the
write phase of `rasdf defragment` (as it reports with RASDF_TIMINGS=1: the data is read
and decoded first, untimed) against the reference writing the same, already loaded,
data. Peak memory is the whole process's in both cases.
Times are the best of seven runs for the trees, of three for the arrays (`--runs`); a
rasdf run is timed from its start to its exit (wait4).
Peak memory is each process's maximum resident set (VmHWM) and the peak of its
anonymous memory, polled every millisecond.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

REF_READ = r"""
import json, sys, time, resource
import numpy as np
import asdf
t0 = time.perf_counter()
with asdf.open(sys.argv[1], lazy_load=False, memmap=False) as af:
    out = []
    def walk(x):
        if isinstance(x, (np.ndarray, asdf.tags.core.ndarray.NDArrayType)):
            a = np.asarray(x)
            if a.dtype.kind == "f":
                out.append((np.nanmin(a), np.nanmax(a), np.nanmean(a), int(np.isnan(a).sum())))
            elif a.dtype.kind in "iub":
                out.append((a.min(), a.max(), a.mean(), 0))
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(af.tree)
t = time.perf_counter() - t0
print(json.dumps({"time": t, "arrays": len(out)}))
"""

REF_WRITE = r"""
import json, sys, time, resource
import asdf
with asdf.open(sys.argv[1], lazy_load=False, memmap=False) as af:
    tree = dict(af.tree)
    t0 = time.perf_counter()
    asdf.AsdfFile(tree).write_to(sys.argv[2], all_array_compression=sys.argv[3] if sys.argv[3] != "none" else None)
    t = time.perf_counter() - t0
print(json.dumps({"time": t}))
"""


def make_inputs(d, quick):
    import asdf

    os.makedirs(d, exist_ok=True)
    scale = 16 if quick else 1
    rng = np.random.default_rng(0)

    def tree(groups, entries):
        t = {}
        for g in range(groups):
            t[f"group{g:05d}"] = {
                "meta": {f"key{k}": (k * 1.5 if k % 3 else f"value {k}") for k in range(entries)},
                "array": rng.standard_normal(16),
            }
        return t

    def smooth(n, dtype):
        x = np.linspace(0, 200 * np.pi, n)
        return (np.round(np.sin(x) * 1000 + rng.integers(0, 16, n)) / 8).astype(dtype)

    inputs = [
        ("tree_20k", lambda: tree(500, 39), None),
        ("tree_200k", lambda: tree(2000, 99), None),
        ("f64_1g", lambda: {"data": np.arange((1 << 27) // scale, dtype="<f8")}, None),
        ("f32_256m_zlib", lambda: {"data": smooth((1 << 26) // scale, "<f4")}, "zlib"),
        ("f32_256m_lz4", lambda: {"data": smooth((1 << 26) // scale, "<f4")}, "lz4"),
        ("f32_64m_bzp2", lambda: {"data": smooth((1 << 24) // scale, "<f4")}, "bzp2"),
    ]
    made = []
    for name, build, comp in inputs:
        path = os.path.join(d, name + (".quick" if quick else "") + ".asdf")
        if not os.path.exists(path):
            asdf.AsdfFile(build()).write_to(path, all_array_compression=comp)
        made.append((name, path, comp or "none"))
    return made


def best_of(n, f):
    runs = [f() for _ in range(n)]
    return min(runs, key=lambda r: r["time"])


def watch(p):
    """Waits for `p` to exit and times it to then: (the time of its exit, peak resident
    KiB, peak anonymous KiB). The exit is awaited with wait4, so the time is exact; a
    thread polls /proc meanwhile for the peaks of the process's own image (VmHWM,
    RssAnon) every millisecond."""
    peak_rss = peak_anon = 0
    done = threading.Event()

    def poll():
        nonlocal peak_rss, peak_anon
        while not done.is_set():
            try:
                with open(f"/proc/{p.pid}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            peak_rss = max(peak_rss, int(line.split()[1]))
                        elif line.startswith("RssAnon:"):
                            peak_anon = max(peak_anon, int(line.split()[1]))
            except (FileNotFoundError, ProcessLookupError, ValueError):
                pass
            time.sleep(0.001)

    t = threading.Thread(target=poll, daemon=True)
    t.start()
    _, status, _ = os.wait4(p.pid, 0)
    end = time.perf_counter()
    done.set()
    t.join()
    p.returncode = os.waitstatus_to_exitcode(status)
    return end, peak_rss, peak_anon


def run_rasdf(args, phase=None):
    """Times a rasdf command; with `phase`, the time of that phase as the command
    reports it (RASDF_TIMINGS=1), else the whole process."""

    def once():
        env = dict(os.environ, RASDF_TIMINGS="1")
        err_file = tempfile.TemporaryFile(mode="w+")
        t0 = time.perf_counter()
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err_file, text=True, env=env)
        end, rss, anon = watch(p)
        t = end - t0
        err_file.seek(0)
        err = err_file.read()
        if p.returncode != 0:
            raise SystemExit(f"{args} failed: {err}")
        if phase:
            line = [x for x in err.splitlines() if x.startswith("timings:")][-1]
            t = float(line.split(f"{phase} ")[1].split(" s")[0])
        return {"time": t, "rss_kb": rss, "anon_kb": anon}

    return once


def run_ref(script, *argv):
    def once():
        out_file = tempfile.TemporaryFile(mode="w+")
        p = subprocess.Popen([sys.executable, "-c", script, *argv], stdout=out_file, text=True)
        _, rss, anon = watch(p)
        out_file.seek(0)
        out = json.loads(out_file.read().strip().splitlines()[-1])
        if p.returncode != 0:
            raise SystemExit("reference run failed")
        out.update(rss_kb=rss, anon_kb=anon)
        return out

    return once


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rasdf", default="target/release/rasdf")
    ap.add_argument("--dir", default="target/bench-inputs")
    ap.add_argument("--runs", type=int, default=None, help="runs per case (default: 7 for the trees, 3 for the arrays)")
    ap.add_argument("--only", default=None, help="only the inputs whose name contains this (e.g. tree)")
    a = ap.parse_args()
    inputs = make_inputs(a.dir, a.quick)
    rows = []
    for name, path, comp in inputs:
        if a.only and a.only not in name:
            continue
        # Runs of a few milliseconds vary most on a shared machine: more of them, for
        # both sides alike.
        runs = a.runs or (7 if name.startswith("tree") else 3)
        r = best_of(runs, run_rasdf([a.rasdf, "info", "--stats", "--max-rows", "1", path]))
        p = best_of(runs, run_ref(REF_READ, path))
        rows.append((f"read {name}", p, r))
        out_r = os.path.join(a.dir, "out_rasdf.asdf")
        out_p = os.path.join(a.dir, "out_ref.asdf")
        r = best_of(runs, run_rasdf([a.rasdf, "defragment", path, "-o", out_r, "-c", comp], phase="write"))
        p = best_of(runs, run_ref(REF_WRITE, path, out_p, comp))
        rows.append((f"write {name} ({comp})", p, r))
    print(f"| case | asdf s | rasdf s | speed-up | asdf peak RSS MiB | rasdf peak RSS MiB | rasdf peak anon MiB |")
    print("|---|---|---|---|---|---|---|")
    for case, p, r in rows:
        print(
            f"| {case} | {p['time']:.3f} | {r['time']:.3f} | {p['time'] / r['time']:.1f}x "
            f"| {p['rss_kb'] / 1024:.0f} | {r['rss_kb'] / 1024:.0f} | {r['anon_kb'] / 1024:.0f} |"
        )
    print(f"cores: {os.cpu_count()}")


if __name__ == "__main__":
    main()
