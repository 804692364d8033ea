"""rasdf against what Python users pick instead of ASDF for an image: h5py (with
hdf5plugin for lz4), zarr and tensorstore, on the same 256 MiB float32 image (8192 x
8192, the smooth data of benches/compare.py) stored in chunks of 4 MiB (128 rows;
ASDF's lz4 framing is records of 4 MiB, its zlib and raw blocks are one block),
compressed with lz4, gzip/zlib at level 1, or not at all. Each case: open the file, read
the whole array, sum it; best of N, the libraries alternating in one process.

    python3 -m venv .venv-bench
    .venv-bench/bin/pip install -r benches/requirements-bench.txt
    (cd python && PATH=../.venv-bench/bin:$PATH ../.venv-bench/bin/maturin develop --release)
    .venv-bench/bin/python benches/competitors.py [--runs N] [--dir DIR] [--quick]

Prints a table (times in seconds; the ratio is the other library's time over rasdf's)
and writes it as JSON with --json PATH. Run it on an idle machine.
"""

import argparse
import gc
import json
import os
import sys
import time

import numpy as np

CASES = ("lz4", "gzip1", "none")


def image(quick: bool) -> np.ndarray:
    rows = 8192 // (4 if quick else 1)
    n = rows * 8192
    rng = np.random.default_rng(0)
    x = np.linspace(0, 200 * np.pi, n)
    return (np.round(np.sin(x) * 1000 + rng.integers(0, 16, n)) / 8).astype("<f4").reshape(rows, 8192)


CHUNK = (128, 8192)  # 4 MiB of float32


def write_all(d: str, data: np.ndarray) -> dict:
    """Writes the image in every format and case (once: kept in `d`); the paths."""
    import h5py
    import hdf5plugin
    import tensorstore as ts
    import zarr
    from zarr.codecs import BloscCodec, BytesCodec, GzipCodec

    import rasdf

    os.makedirs(d, exist_ok=True)
    tag = f"{data.shape[0]}"
    paths = {}
    for case in CASES:
        p = os.path.join(d, f"img_{tag}_{case}.asdf")
        if not os.path.exists(p):
            comp = {"lz4": "lz4", "gzip1": "zlib", "none": None}[case]
            rasdf.write(p, {"data": data}, compression=comp, compression_level=1 if case == "gzip1" else None)
        paths[("rasdf", case)] = p

        p = os.path.join(d, f"img_{tag}_{case}.h5")
        if not os.path.exists(p):
            opts = {"lz4": dict(hdf5plugin.LZ4()), "gzip1": dict(compression="gzip", compression_opts=1), "none": {}}[case]
            with h5py.File(p + ".tmp", "w") as f:
                f.create_dataset("data", data=data, chunks=CHUNK, **opts)
            os.replace(p + ".tmp", p)
        paths[("h5py", case)] = p

        p = os.path.join(d, f"img_{tag}_{case}.zarr")
        if not os.path.exists(p):
            compressors = {
                "lz4": [BloscCodec(cname="lz4", clevel=5, shuffle="noshuffle")],
                "gzip1": [GzipCodec(level=1)],
                "none": None,
            }[case]
            z = zarr.create_array(p + ".tmp", shape=data.shape, chunks=CHUNK, dtype="<f4", compressors=compressors)
            z[...] = data
            os.replace(p + ".tmp", p)
        paths[("zarr", case)] = p

        p = os.path.join(d, f"img_{tag}_{case}.ts.zarr")
        if not os.path.exists(p):
            compressor = {
                "lz4": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 0},
                "gzip1": {"id": "zlib", "level": 1},
                "none": None,
            }[case]
            spec = {
                "driver": "zarr",
                "kvstore": {"driver": "file", "path": p + ".tmp"},
                "metadata": {"dtype": "<f4", "shape": list(data.shape), "chunks": list(CHUNK), "compressor": compressor},
                "create": True,
            }
            ts.open(spec).result().write(data).result()
            os.replace(p + ".tmp", p)
        paths[("tensorstore", case)] = p
    return paths


def readers() -> dict:
    import h5py
    import hdf5plugin  # noqa: F401 - registers the lz4 filter
    import tensorstore as ts
    import zarr

    import rasdf

    def r_rasdf(p):
        with rasdf.open(p) as af:
            return af["data"][...].sum(dtype="f8")

    def r_h5py(p):
        with h5py.File(p, "r") as f:
            return f["data"][...].sum(dtype="f8")

    def r_zarr(p):
        return zarr.open_array(p, mode="r")[...].sum(dtype="f8")

    def r_ts(p):
        spec = {"driver": "zarr", "kvstore": {"driver": "file", "path": p}}
        return ts.open(spec, read=True).result().read().result().sum(dtype="f8")

    return {"rasdf": r_rasdf, "h5py": r_h5py, "zarr": r_zarr, "tensorstore": r_ts}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target", "bench-competitors"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    # tensorstore takes no `..` in a file path.
    args.dir = os.path.realpath(args.dir)

    data = image(args.quick)
    paths = write_all(args.dir, data)
    want = float(data.sum(dtype="f8"))
    del data
    libs = readers()
    best = {}
    for _ in range(args.runs):
        for case in CASES:
            for lib, read in libs.items():
                gc.collect()
                t0 = time.perf_counter()
                got = read(paths[(lib, case)])
                t = time.perf_counter() - t0
                if abs(float(got) - want) > 1e-6 * abs(want):
                    print(f"{lib} {case}: sum {got} != {want}", file=sys.stderr)
                    return 1
                best[(lib, case)] = min(best.get((lib, case), t), t)
    print("| case | rasdf s | " + " | ".join(f"{lib} s | ratio" for lib in libs if lib != "rasdf") + " |")
    print("|---|---|" + "---|---|" * (len(libs) - 1))
    rows = []
    for case in CASES:
        r = best[("rasdf", case)]
        cells = [f"{best[(lib, case)]:.3f} | {best[(lib, case)] / r:.2f}x" for lib in libs if lib != "rasdf"]
        print(f"| {case} | {r:.3f} | " + " | ".join(cells) + " |")
        rows.append({"case": case, **{lib: best[(lib, case)] for lib in libs}})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
