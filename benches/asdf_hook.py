"""`asdf.open` with and without rasdf's hook (`rasdf.asdf_hook`), in the same process and run.

    .venv/bin/python benches/asdf_hook.py [--quick] [--runs N] [--dir DIR] [--profile] [--io-only]
    .venv-astro/bin/python benches/asdf_hook.py --science   # astropy, gwcs and Roman files

Inputs are benches/compare.py's trees (made once with the reference, kept in DIR): 20 000
entries with 500 small arrays, and 200 000 entries with 2 000. Each case is
`asdf.open(path, lazy_tree=...)` then `close()`, best of N runs, stock and hooked
alternating. `lazy_tree=True` converts nothing until asked (roman_datamodels opens this
way); eager (`lazy_tree=False`, asdf's default) converts the whole tree at open; "eager +
validate" also validates it on read (`validate_on_read`). With `--profile`, where the
hooked eager open spends its time, by asdf's phases.

Then asdf's own I/O calls, hook on against off, best of N in this process: `write_to` (to
a new file each time) of the 20 000-entry tree, of a 256 MiB float32 image with lz4 and
of a 64 MiB one with zlib, `asdf.open` + `np.asarray` of the 256 MiB lz4 image, the eager open of the
tree; and the peak resident memory of the image cases, each run alone in a child
process (hook on, then off). With `--science`, the eager open (arrays touched) of the
repository's astropy, gwcs and Roman files, in CPU seconds, and how many files asdf
writes again byte-identical with the hook and without.
"""

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import compare  # noqa: E402 - benches/compare.py makes the inputs


def open_close(asdf, path, lazy, validate):
    asdf.get_config().validate_on_read = validate
    t = time.perf_counter()
    with asdf.open(path, lazy_tree=lazy):
        pass
    return time.perf_counter() - t


def measure(asdf, hook, path, lazy, validate, runs):
    """Best of `runs` of stock and hooked opens, alternating."""
    best = {"stock": float("inf"), "hook": float("inf")}
    for _ in range(runs):
        for name in ("stock", "hook"):
            (hook.install if name == "hook" else hook.uninstall)()
            gc.collect()
            best[name] = min(best[name], open_close(asdf, path, lazy, validate))
    hook.uninstall()
    asdf.get_config().validate_on_read = False
    return best


def profile(asdf, hook, path):
    """Seconds of a hooked eager open by phase (cProfile's cumulative times)."""
    hook.install()
    prof = cProfile.Profile()
    prof.enable()
    with asdf.open(path, lazy_tree=False):
        pass
    prof.disable()
    hook.uninstall()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    phases = {
        "load_tree (rasdf)": "asdf_hook.py",
        "blocks (asdf)": "manager.py",
        "conversion (asdf)": "tagged_tree_to_custom_tree",
        "whole open": "open_asdf",
    }
    found = {}
    for (file, _line, func), (_cc, _nc, _tt, ct, _callers) in stats.stats.items():
        for phase, key in phases.items():
            if (key.endswith(".py") and file.endswith(key) and func in ("load_tree", "read")) or func == key:
                found[phase] = max(found.get(phase, 0.0), ct)
    return found


def timed(f, runs, setup=None):
    """Best wall time of `runs` calls of `f` (after `setup()`, untimed, each time)."""
    best = float("inf")
    for _ in range(runs):
        if setup:
            setup()
        gc.collect()
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def on_off(hook, f, runs, clock=time.perf_counter, setup=None):
    """Best of `runs` of `f` with the hook off and on, alternating (after `setup()`,
    untimed, each time)."""
    best = {"stock": float("inf"), "hook": float("inf")}
    for _ in range(runs):
        for name in ("stock", "hook"):
            (hook.install if name == "hook" else hook.uninstall)()
            if setup:
                setup()
            gc.collect()
            t = clock()
            f()
            best[name] = min(best[name], clock() - t)
    hook.uninstall()
    return best


def smooth(n, dtype):
    import numpy as np

    rng = np.random.default_rng(0)
    x = np.linspace(0, 200 * np.pi, n)
    return (np.round(np.sin(x) * 1000 + rng.integers(0, 16, n)) / 8).astype(dtype)


CHILD = r"""
import sys, time, asdf, numpy as np
def hwm():
    # This process's own peak (VmHWM, KiB): ru_maxrss would carry the parent's over fork.
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))
import rasdf.asdf_hook as hook
case, path, out, on = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
if case == "read":
    if on:
        hook.install()
    before = hwm()
    with asdf.open(path, lazy_load=False, memmap=False) as af:
        a = np.asarray(af.tree["data"]); a.sum()
else:
    # The image read by asdf alone, then the write with the hook on or off.
    with asdf.open(path, lazy_load=False, memmap=False) as af:
        data = np.array(af.tree["data"])
    if on:
        hook.install()
    import gc; gc.collect()
    with open("/proc/self/clear_refs", "w") as c:
        c.write("5")  # the peak so far forgotten: VmHWM starts again from here
    before = hwm()
    f = asdf.AsdfFile({"data": data})
    f.set_array_compression(data, case)
    f.write_to(out)
print(before, hwm())
"""


def peak_mib(case, path, out, on):
    import subprocess

    r = subprocess.run([sys.executable, "-c", CHILD, case, path, out, "1" if on else "0"], capture_output=True, text=True, check=True)
    before, after = (int(v) for v in r.stdout.split())
    return after / 1024, (after - before) / 1024


def io_table(asdf, hook, args):
    import numpy as np

    os.makedirs(args.dir, exist_ok=True)
    scale = 16 if args.quick else 1
    inputs = {n: p for n, p, _ in compare.make_inputs(args.dir, args.quick)}
    lz4_path = inputs["f32_256m_lz4"]
    tree_path = inputs["tree_20k"]
    with asdf.open(tree_path, lazy_load=False, memmap=False) as af:
        tree = dict(af.tree)
    image = smooth((1 << 26) // scale, "<f4")
    image64 = image[: (1 << 24) // scale].copy()
    out = os.path.join(args.dir, "hook-out.asdf")

    def write(t, codec=None, arr=None):
        def f():
            af = asdf.AsdfFile(t)
            if codec:
                af.set_array_compression(arr, codec)
            af.write_to(out)

        return f

    def read_lz4():
        with asdf.open(lz4_path, lazy_load=False, memmap=False) as af:
            np.asarray(af.tree["data"])

    def open_tree():
        with asdf.open(tree_path, lazy_tree=False):
            pass

    cases = [
        ("write_to, 20 000-entry tree", write(tree), ">= 5x"),
        ("write_to, 256 MiB float32 lz4", write({"data": image}, "lz4", image), ">= 3x"),
        ("write_to, 64 MiB float32 zlib", write({"data": image64}, "zlib", image64), ">= 3x"),
        ("asdf.open + np.asarray, 256 MiB lz4", read_lz4, ">= 3x"),
        ("eager asdf.open, 20 000-entry tree", open_tree, ">= 10x"),
    ]
    print(f"\n| call | stock s | hooked s | speed-up | goal |\n|---|---|---|---|---|")
    rows = []
    def fresh():
        # Each write makes a new file: replacing the last one would time the system
        # freeing its pages too.
        if os.path.exists(out):
            os.remove(out)

    for name, f, goal in cases:
        b = on_off(hook, f, args.runs, setup=fresh)
        ratio = b["stock"] / b["hook"]
        rows.append({"case": name, **b, "ratio": ratio})
        print(f"| {name} | {b['stock']:.3f} | {b['hook']:.3f} | {ratio:.1f}x | {goal} |", flush=True)
    fresh()
    # Peak memory, each case alone in a child process.
    src64 = os.path.join(args.dir, "hook-src64.asdf")
    asdf.AsdfFile({"data": image64}).write_to(src64)
    print(f"\n| case | peak RSS MiB stock | hooked | added by the call, stock | hooked |\n|---|---|---|---|---|")
    for name, case, path in (
        ("open + asarray, 256 MiB lz4", "read", lz4_path),
        ("write_to, 256 MiB lz4", "lz4", lz4_path),
        ("write_to, 64 MiB zlib", "zlib", src64),
    ):
        s_peak, s_add = peak_mib(case, path, out, False)
        h_peak, h_add = peak_mib(case, path, out, True)
        print(f"| {name} | {s_peak:.0f} | {h_peak:.0f} | {s_add:.0f} | {h_add:.0f} |", flush=True)
    for p in (out, src64):
        if os.path.exists(p):
            os.remove(p)
    return rows


def science_table(asdf, hook, args):
    """Eager opens of the repository's astropy, gwcs and Roman files, arrays touched:
    CPU seconds, best of N."""
    import glob

    import numpy as np

    root = os.path.join(HERE, "..", "testdata", "astro")
    files = sorted(glob.glob(os.path.join(root, "*.asdf")))

    def touch(x, seen):
        if id(x) in seen:
            return
        seen.add(id(x))
        if isinstance(x, np.ndarray) or type(x).__name__ == "NDArrayType":
            np.asarray(x).sum()
        elif isinstance(x, dict) or hasattr(x, "items"):
            try:
                for v in list(x.values()):
                    touch(v, seen)
            except Exception:
                pass
        elif isinstance(x, (list, tuple)):
            for v in x:
                touch(v, seen)

    def open_all():
        for p in files:
            with asdf.open(p, lazy_load=False, memmap=False, lazy_tree=False) as af:
                touch(af.tree, set())

    b = on_off(hook, open_all, args.runs, clock=time.process_time)
    print(f"\n| {len(files)} astropy, gwcs and Roman files, eager open, arrays touched | CPU s stock | hooked | speed-up |\n|---|---|---|---|")
    print(f"| all | {b['stock']:.3f} | {b['hook']:.3f} | {b['stock'] / b['hook']:.2f}x |")
    identical_table(asdf, hook)


def identical_table(asdf, hook):
    """How many of the files asdf writes again (`write_to`, every array as it was or
    recompressed with each of asdf's codecs) are byte for byte the same with the hook
    as without. (That they read back the same is python/tests/test_asdf_hook_writes.py.)"""
    import glob

    root = os.path.join(HERE, "..", "testdata")
    files = sorted(
        p for d in ("reference_files", "pyasdf", "oldasdf", "astro", "codecs") for p in glob.glob(os.path.join(root, d, "**", "*.asdf"), recursive=True)
    ) + [os.path.join(root, "example.asdf")]

    def write(path, codec, on):
        (hook.install if on else hook.uninstall)()
        try:
            with asdf.open(path, lazy_load=False, memmap=False) as af:
                out = io.BytesIO()
                af.write_to(out, all_array_compression=codec)
                return out.getvalue()
        except Exception:  # noqa: BLE001 - a file asdf does not write again
            return None
        finally:
            hook.uninstall()

    print(f"\n| {len(files)} files written again by asdf, arrays | written | byte-identical with the hook |\n|---|---|---|")
    for label, codec in (("as they were", None), ("zlib", "zlib"), ("lz4", "lz4"), ("bzp2", "bzp2")):
        both = [(write(p, codec, False), write(p, codec, True)) for p in files]
        done = [(a, b) for a, b in both if a is not None and b is not None]
        print(f"| {label} | {len(done)} | {sum(a == b for a, b in done)} |", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--dir", default=os.path.join(HERE, "..", "target", "bench-inputs"))
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--io-only", action="store_true")
    ap.add_argument("--science", action="store_true")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import asdf
    import rasdf.asdf_hook as hook

    if args.science:
        return science_table(asdf, hook, args)
    if args.io_only:
        print(f"asdf {asdf.__version__}, best of {args.runs}")
        return io_table(asdf, hook, args)

    inputs = [(n, p) for n, p, _ in compare.make_inputs(args.dir, args.quick) if n.startswith("tree_")]
    print(f"asdf {asdf.__version__}, best of {args.runs}")
    print(f"| case | stock s | hooked s | speed-up |\n|---|---|---|---|")
    rows = []
    for name, path in inputs:
        for label, lazy, validate in (("lazy_tree", True, False), ("eager", False, False), ("eager + validate", False, True)):
            b = measure(asdf, hook, path, lazy, validate, args.runs)
            ratio = b["stock"] / b["hook"]
            rows.append({"case": f"{name} {label}", **b, "ratio": ratio})
            print(f"| {name} {label} | {b['stock']:.3f} | {b['hook']:.3f} | {ratio:.1f}x |", flush=True)
        if args.profile:
            print(f"profile of a hooked eager open of {name}:", json.dumps({k: round(v, 3) for k, v in profile(asdf, hook, path).items()}))
    rows += io_table(asdf, hook, args)
    return rows


if __name__ == "__main__":
    main()
