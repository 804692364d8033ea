"""Remote reads: rasdf against asdf + fsspec over HTTP, with latency added, in one run.

    .venv/bin/pip install fsspec==2026.9.0 aiohttp==3.14.5   # asdf's http support
    .venv/bin/python benches/remote.py [--latency MS] [--dir DIR] [--runs N] [--no-dask]

The inputs are benches/compare.py's (256 MiB of float32 with lz4, 1 GiB of float64
uncompressed), served on 127.0.0.1 by the tests' range server built as a program
(`cargo run --release -p rasdf --example range_server`), which sleeps `--latency` ms
(default 30) before each answer, as a distant server would, and counts requests and
body bytes. Cases, best of N:
- open + read one array: `asdf.open(url)` (fsspec's HTTP file) and `np.asarray` of the
  array, against `rasdf.open(url)` and `arr[...]`;
- a 16-row slice of the uncompressed image (rasdf fetches the rows alone; asdf reads
  through fsspec's file), and 16 values from the middle of the lz4 image (rasdf walks
  the lz4 records' headers and decodes the one record that holds them);
- a Dask sum of the 1 GiB array on a 2-worker `distributed.LocalCluster` of processes:
  `rasdf` `to_dask()` (its tasks read their rows over HTTP) against
  `dask.array.from_array` of asdf's array.
"""

import argparse
import os
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import compare  # noqa: E402

import numpy as np  # noqa: E402


class Stats:
    """The server's counters (requests, bytes) since they were last read."""

    fetch = None


def counted(f):
    Stats.fetch()
    t = time.perf_counter()
    out = f()
    elapsed = time.perf_counter() - t
    requests, sent = Stats.fetch()
    return {"time": elapsed, "requests": requests, "mib": sent / 2**20, "out": out}


def best(runs, f):
    return min((counted(f) for _ in range(runs)), key=lambda r: r["time"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--latency", type=float, default=30.0)
    ap.add_argument("--dir", default=os.path.join(HERE, "..", "target", "bench-inputs"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-dask", action="store_true")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import asdf

    import rasdf

    inputs = {name: path for name, path, _ in compare.make_inputs(args.dir, False)}
    root = os.path.dirname(os.path.abspath(inputs["f32_256m_lz4"]))
    # The tests' range server, built as a program (a Python server limits both sides to
    # its own ~250 MB/s).
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "rasdf", "--example", "range_server"], check=True)
    exe = os.path.join(HERE, "..", "target", "release", "examples", "range_server")
    server = subprocess.Popen([exe, root, str(args.latency)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    base = server.stdout.readline().strip()

    def stats():
        server.stdin.write("\n")
        server.stdin.flush()
        requests, sent = server.stdout.readline().split()
        return int(requests), int(sent)

    Stats.fetch = stats
    print(f"asdf {asdf.__version__}, latency {args.latency:g} ms a request, best of {args.runs}")
    print("| case | asdf + fsspec s | requests | MiB | rasdf s | requests | MiB | speed-up |")
    print("|---|---|---|---|---|---|---|---|")

    def row(name, a, r):
        print(
            f"| {name} | {a['time']:.3f} | {a['requests']} | {a['mib']:.1f} | {r['time']:.3f} | {r['requests']} "
            f"| {r['mib']:.1f} | {a['time'] / r['time']:.1f}x |",
            flush=True,
        )

    lz4 = f"{base}/{os.path.basename(inputs['f32_256m_lz4'])}"

    def ref_read(url, key=Ellipsis):
        with asdf.open(url, lazy_load=True, memmap=False) as af:
            return float(np.asarray(af["data"][key]).sum())

    def rasdf_read(url, key=Ellipsis):
        with rasdf.open(url) as af:
            return float(np.asarray(af["data"][key]).sum())

    a, r = best(args.runs, lambda: ref_read(lz4)), best(args.runs, lambda: rasdf_read(lz4))
    assert a["out"] == r["out"], (a["out"], r["out"])
    row("open + read the 256 MiB lz4 image", a, r)

    big = f"{base}/{os.path.basename(inputs['f64_1g'])}"
    rows = slice(1 << 20, (1 << 20) + 16)
    a, r = best(args.runs, lambda: ref_read(big, rows)), best(args.runs, lambda: rasdf_read(big, rows))
    assert a["out"] == r["out"], (a["out"], r["out"])
    row("open + 16 rows of the 1 GiB float64 array", a, r)

    mid = slice(1 << 25, (1 << 25) + 16)  # the middle of the lz4 image: its ninth record
    a, r = best(args.runs, lambda: ref_read(lz4, mid)), best(args.runs, lambda: rasdf_read(lz4, mid))
    assert a["out"] == r["out"], (a["out"], r["out"])
    row("open + 16 values of the 256 MiB lz4 image", a, r)

    if not args.no_dask:
        import dask.array as da
        import distributed

        with distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
        ) as cluster, distributed.Client(cluster) as client:

            def ref_dask():
                with asdf.open(big, lazy_load=True, memmap=False) as af:
                    d = da.from_array(af["data"], chunks=(1 << 23,))
                    return float(client.compute(d.sum()).result())

            def rasdf_dask():
                with rasdf.open(big) as af:
                    d = af["data"].to_dask()
                return float(client.compute(d.sum()).result())

            a, r = best(1, ref_dask), best(1, rasdf_dask)
            assert a["out"] == r["out"], (a["out"], r["out"])
            row("Dask sum of the 1 GiB array, 2 worker processes", a, r)
    server.stdin.close()
    server.wait(timeout=10)


if __name__ == "__main__":
    main()
