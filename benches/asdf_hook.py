"""`asdf.open` with and without rasdf's hook (`rasdf.asdf_hook`), in the same process and run.

    .venv/bin/python benches/asdf_hook.py [--quick] [--runs N] [--dir DIR] [--profile]

Inputs are benches/compare.py's trees (made once with the reference, kept in DIR): 20 000
entries with 500 small arrays, and 200 000 entries with 2 000. Each case is
`asdf.open(path, lazy_tree=...)` then `close()`, best of N runs, stock and hooked
alternating. `lazy_tree=True` converts nothing until asked (roman_datamodels opens this
way); eager (`lazy_tree=False`, asdf's default) converts the whole tree at open; "eager +
validate" also validates it on read (`validate_on_read`). With `--profile`, where the
hooked eager open spends its time, by asdf's phases.
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--dir", default=os.path.join(HERE, "..", "target", "bench-inputs"))
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import asdf
    import rasdf.asdf_hook as hook

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
    return rows


if __name__ == "__main__":
    main()
