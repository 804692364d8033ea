"""Time schema validation with extension schemas: `rasdf validate FILE --schemas DIR...`
against `asdftool validate FILE` with the same packages installed (asdf-astropy, gwcs,
roman_datamodels), in the same run, and print the ratios.

    .venv-astro/bin/python benches/validate_extensions.py [--rasdf target/release/rasdf]
        [--runs 3] [FILE...]

FILE defaults to astro fixtures: Roman products (a level 2 image with its gwcs, a source
catalog, a ramp), a gwcs imaging WCS and astropy models. The `--schemas` folders are the
`resources` folders of the installed schema packages (rad, asdf_transform_schemas,
asdf_wcs_schemas, asdf_coordinates_schemas, asdf_astropy, asdf_standard), as
tests/python/extension_schemas.py finds them.

Three times per file, each the best of `--runs`:
- `asdftool`: the whole `asdftool validate FILE` process (what a user waits for: Python
  start, imports, entry points, the schemas loaded, the file validated, checksums);
- `asdf open`: in one process with asdf imported and its extensions listed beforehand,
  `asdf.open(FILE)` with `validate_on_read` on a fresh process's first file (schemas
  loaded and parsed then, as each asdftool run does), imports excluded;
- `rasdf`: the whole `rasdf validate FILE --schemas ...` process (the manifests read,
  the schemas its tags reach parsed, the file validated, checksums).
"""

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FILES = [
    "roman_level2.asdf",
    "roman_ImageSourceCatalogModel.asdf",
    "roman_RampModel.asdf",
    "gwcs_imaging.asdf",
    "models.asdf",
]

# asdf.open with validation, in a fresh process, imports and the extension list
# excluded from the time.
REF_OPEN = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import asdf
from asdf.config import config_context
asdf.get_config().extensions
t0 = time.perf_counter()
with config_context() as cfg:
    cfg.validate_on_read = True
    with asdf.open(sys.argv[1]) as af:
        pass
print(json.dumps({"time": time.perf_counter() - t0}))
"""


def best(run, runs):
    times = []
    for _ in range(runs):
        times.append(run())
    return min(times)


def wall(cmd):
    def run():
        t0 = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True)
        t = time.perf_counter() - t0
        if out.returncode != 0:
            raise SystemExit(f"{cmd}: exit {out.returncode}\n{out.stdout}\n{out.stderr}")
        return t

    return run


def ref_open(path):
    def run():
        out = subprocess.run([sys.executable, "-c", REF_OPEN, path], capture_output=True, text=True, check=True)
        return json.loads(out.stdout)["time"]

    return run


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="*")
    p.add_argument("--rasdf", default=os.path.join(ROOT, "target", "release", "rasdf"))
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    out = subprocess.run(
        [sys.executable, os.path.join(ROOT, "tests", "python", "extension_schemas.py"), "dirs"],
        capture_output=True,
        text=True,
        check=True,
    )
    dirs = json.loads(out.stdout)
    schemas = [a for d in dirs for a in ("--schemas", d)]
    asdftool = os.path.join(os.path.dirname(sys.executable), "asdftool")
    files = args.files or [os.path.join(ROOT, "testdata", "astro", f) for f in FILES]
    print(f"schema folders: {len(dirs)}; runs: best of {args.runs}")
    print("| file | asdftool validate s | asdf.open validating s | rasdf validate s | vs asdftool | vs asdf.open |")
    print("|---|---|---|---|---|---|")
    for f in files:
        t_tool = best(wall([asdftool, "validate", f]), args.runs)
        t_open = best(ref_open(f), args.runs)
        t_rasdf = best(wall([args.rasdf, "validate", "--quiet", f, *schemas]), max(args.runs, 5))
        name = os.path.basename(f)
        print(
            f"| {name} | {t_tool:.3f} | {t_open:.3f} | {t_rasdf:.3f} | {t_tool / t_rasdf:.0f}x | "
            f"{t_open / t_rasdf:.1f}x |",
            flush=True,
        )


if __name__ == "__main__":
    main()
