"""Mutations of the repository's real-file fixtures, each read by the Python package (and,
with ``--cli``, by the command line) in a subprocess of its own, bounded in time and
memory. A case fails when the reader dies of a signal, exits with an unexpected status,
runs out of time or address space (``--max-mb``, 2048 by default), or raises anything but
``rasdf.AsdfError`` or an ``OSError`` with a real errno (or none); the file read is then
written again (``write_to``), which may also refuse with a ``TypeError`` or ``ValueError``
naming the path, and what it wrote must open and read.

    python tests/python/hostile_campaign.py --cases 2000 --seed 1 --out /tmp/finds [--cli target/release/rasdf]

Prints one line per failing case and a summary with the counts; exits 1 when a case
failed. Failing inputs are kept in ``--out`` (with the reason), so that they can become
fixtures. Deterministic for a seed: case ``k`` of seed ``s`` is the same mutation of the
same file whatever else runs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The reader: everything a user does with a file, each step allowed to fail only with
# rasdf.AsdfError or an OSError whose errno is real (or None).
CHILD = r"""
import errno, io, sys, warnings
warnings.simplefilter("ignore")
import numpy as np
import rasdf

path = sys.argv[1]
bad = []

def step(what, f, refusals=()):
    try:
        return f()
    except rasdf.AsdfError:
        return None
    except refusals as e:
        # A write may refuse what it cannot keep, naming the path.
        if " at /" not in str(e) and "(at " not in str(e):
            bad.append(f"{what}: a refusal that names no path: {type(e).__qualname__}: {str(e)[:300]}")
        return None
    except OSError as e:
        if e.errno == 0:
            bad.append(f"{what}: OSError with errno 0: {e!r}")
        return None
    except BaseException as e:  # noqa: BLE001 - the point: name what leaked
        bad.append(f"{what}: {type(e).__module__}.{type(e).__qualname__}: {str(e)[:300]}")
        return None

# The project's exact tree comparison (python/tests/tree_compare.py), arrays by shape
# and dtype (their values are compared apart).
sys.path.insert(0, sys.argv[2])
from tree_compare import differences

def meta(x):
    return (x.shape, x.dtype) if isinstance(x, rasdf.NDArray) else None

def without_library(root):
    # The writer's `asdf_library`, first; the root tagged as the file's root.
    return dict((k, v) for k, v in root.items() if k != "asdf_library") if isinstance(root, dict) else root

af = step("open", lambda: rasdf.open(path))
if af is not None:
    tree = step("tree", lambda: af.tree)
    arrays = step("arrays", af.arrays) or {}
    read = {}
    for p, a in list(arrays.items())[:64]:
        step(f"meta {p}", lambda: (a.shape, a.dtype, a.ndim, a.size, a.masked, repr(a)))
        step(f"rows {p}", lambda: a[0:1] if a.shape and a.shape[0] > 1 else None)
        data = step(f"read {p}", lambda: np.asarray(a))
        if data is not None:
            read[p] = data
            step(f"values {p}", lambda: data.tobytes()[:64])
        step(f"masked {p}", lambda: a[...])
    step("info", af.info_text)
    step("info stats", lambda: af.info_text(stats=True, show_blocks=True))
    step("blocks", af.blocks)
    step("checksums", af.verify_checksums)
    step("validate", lambda: af.validate(schemas=False))
    # Written again as it was read, then read back: a file, or a refusal naming the path.
    out = io.BytesIO()
    if step("write_to", lambda: af.write_to(out) or True, (TypeError, ValueError)):
        again = step("reopen", lambda: rasdf.open(io.BytesIO(out.getvalue())))
        if again is None:
            bad.append("reopen: what write_to wrote does not open")
        else:
            # The copy's tree is the tree read, and every array that read before reads
            # the same from it.
            try:
                if tree is not None:
                    found = differences(without_library(tree), without_library(again.tree), leaf=meta)
                    if found:
                        bad.append(f"rewritten tree: {found}")
                copied = again.arrays()
                for p, data in read.items():
                    got = np.asarray(copied[p])
                    if got.dtype != data.dtype or got.shape != data.shape or got.tobytes() != data.tobytes():
                        bad.append(f"reread {p}: {got.dtype}{got.shape} is not {data.dtype}{data.shape} or its bytes")
            except BaseException as e:  # noqa: BLE001
                bad.append(f"reread: {type(e).__qualname__}: {str(e)[:300]}")
    step("close", af.close)
if bad:
    print("\n".join(bad))
    sys.exit(3)
"""

FIXTURE_DIRS = ["testdata/astro", "testdata/pyasdf", "testdata/oldasdf", "testdata/codecs", "testdata/fits",
                "testdata/reference_files", "testdata/example.asdf"]

BOUNDARY = [0, 1, -1, 2, 7, 255, 65535, 2**31 - 1, 2**31, 2**32, 2**32 + 1, 2**40, 2**53, 2**62, 2**63 - 1, 2**63,
            2**64 - 1, 2**64, 10**20, -(2**31), -(2**63)]
DATATYPES = ["[ascii, 2147483647]", "[ucs4, 536870911]", "[ucs4, 1073741824]", "[ascii, 4611686018427387904]",
             "[{name: x, datatype: float64, shape: [65536, 65536]}]", "[{datatype: [ucs4, 100000000]}]",
             "bool8", "uint8", "float64", "complex128", "[ascii, 0]", "[{name: a, datatype: int8, shape: [0]}]",
             "[[ascii, 3], int8]", "float16"]
SNIPPETS = ["strides: [0]", "strides: [0, 0]", "strides: [-8, 8]", "offset: 9223372036854775807", "source: -1",
            "source: 99", "source: foo0000.asdf", "source: ../../etc/passwd", "source: /dev/zero",
            "source: fits:SCI,1", "shape: ['*']", "shape: [4294967296, 4294967296]", "mask: !core/ndarray-1.0.0 {data: [1], shape: [1]}",
            "mask: .nan", "mask: 'x'", "byteorder: middle", "data: [[1, 2], [3]]", "&a [*a]", "!!binary AAAA",
            "datatype: [ucs4, 1073741824]", "datatype: [ascii, 2147483648]"]


def fixtures() -> list[Path]:
    out = []
    for d in FIXTURE_DIRS:
        p = ROOT / d
        if p.is_file():
            out.append(p)
        else:
            out.extend(sorted(q for q in p.rglob("*") if q.suffix in (".asdf", ".fits") and q.is_file()))
    return out


def mutate(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One mutation of ``data``, and what it was."""
    b = bytearray(data)
    kind = rng.choice(["flip", "truncate", "number", "datatype", "snippet", "block_field", "splice", "label",
                       "number", "datatype", "snippet", "block_field"])
    tree_end = data.find(b"\n...")
    tree_end = len(data) if tree_end < 0 else tree_end
    if kind == "flip":
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(b))
            b[i] = rng.randrange(256)
        return bytes(b), kind
    if kind == "truncate":
        n = rng.randrange(len(b))
        return bytes(b[:n]), f"truncate {n}"
    if kind == "number":
        nums = [m for m in re.finditer(rb"(?<![\w.])-?\d+(?![\w.])", data[:tree_end])]
        if nums:
            m = rng.choice(nums)
            v = str(rng.choice(BOUNDARY)).encode()
            return data[:m.start()] + v + data[m.end():], f"number at {m.start()} -> {v.decode()}"
    if kind == "datatype":
        spots = [m for m in re.finditer(rb"datatype: (\[[^\n]*\]|\w+)", data[:tree_end])]
        if spots:
            m = rng.choice(spots)
            v = rng.choice(DATATYPES).encode()
            return data[:m.start(1)] + v + data[m.end(1):], f"datatype at {m.start(1)} -> {v.decode()}"
    if kind == "snippet":
        lines = [m for m in re.finditer(rb"\n( +)(source|shape|strides|offset|datatype|byteorder|mask|data): [^\n]*",
                                        data[:tree_end])]
        if lines:
            m = rng.choice(lines)
            v = rng.choice(SNIPPETS).encode()
            return data[:m.start()] + b"\n" + m.group(1) + v + data[m.end():], f"line at {m.start()} -> {v.decode()}"
    if kind == "block_field":
        blocks = [m.start() for m in re.finditer(rb"\xd3BLK", data)]
        if blocks:
            at = rng.choice(blocks)
            # header_size, flags, compression, allocated, used, data_size, checksum
            field = rng.choice([(4, 2), (6, 4), (10, 4), (14, 8), (22, 8), (30, 8), (38, 16)])
            off, width = field
            if at + off + width <= len(b):
                v = rng.choice(BOUNDARY) % (1 << (8 * width))
                if field == (10, 4):
                    raw = rng.choice([b"zlib", b"bzp2", b"lz4\0", b"\0\0\0\0", b"zstd", b"blsc", b"bls2", b"xz\0\0"])
                else:
                    raw = v.to_bytes(width, "big")
                b[at + off: at + off + width] = raw
                return bytes(b), f"block at {at} field {off} -> {raw.hex()}"
    if kind == "splice":
        i, j = sorted(rng.randrange(len(b)) for _ in range(2))
        k = rng.randrange(len(b))
        return bytes(b[:k] + b[i:j] + b[k:]), f"splice {i}:{j} at {k}"
    if kind == "label":
        m = list(re.finditer(rb"!core/ndarray-1\.[01]\.0", data))
        if m:
            x = rng.choice(m)
            return data[:x.start()] + b"!core/ndarray-1.1.0 &x" + data[x.end():], f"anchor at {x.start()}"
    i = rng.randrange(len(b))
    b[i] ^= 0xFF
    return bytes(b), "flip"


def limit(max_mb: int):
    def apply() -> None:
        os.setsid()
        resource.setrlimit(resource.RLIMIT_AS, (max_mb << 20, max_mb << 20))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def run(cmd: list[str], timeout: float, max_mb: int, env: dict, cwd: str) -> tuple[int | None, str, float, int]:
    """(status, output, seconds, peak RSS in MiB); status None on a timeout, negative for
    a signal. The child runs in `cwd`, a folder outside the repository, so that `python -c`
    imports the installed package, never the source folder `python/rasdf` (which holds no
    extension module when the package was installed from its wheel)."""
    t0 = time.monotonic()
    p = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=limit(max_mb), env=env, cwd=cwd
    )
    deadline = t0 + timeout
    # The output is drained as it comes (a child blocked on a full pipe would look like a
    # hang), keeping its last 64 KiB.
    tail = bytearray()

    def drain() -> None:
        assert p.stdout is not None
        for chunk in iter(lambda: p.stdout.read1(1 << 16), b""):
            tail.extend(chunk)
            del tail[: max(0, len(tail) - (1 << 16))]

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    status = None
    rss = 0
    while True:
        pid, st, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            status = os.waitstatus_to_exitcode(st)
            rss = ru.ru_maxrss >> 10
            break
        if time.monotonic() > deadline:
            os.killpg(p.pid, signal.SIGKILL)
            _, st, ru = os.wait4(p.pid, 0)
            rss = ru.ru_maxrss >> 10
            break
        time.sleep(0.01)
    reader.join(timeout=5)
    out = bytes(tail)
    p.returncode = 0
    return status, out.decode("utf-8", "replace"), time.monotonic() - t0, rss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--first", type=int, default=0, help="the first case number")
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--max-mb", type=int, default=2048)
    ap.add_argument("--out", type=Path, default=None, help="keep failing inputs here")
    ap.add_argument("--cli", type=Path, default=None, help="also run this rasdf binary's check and info --stats")
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()

    files = fixtures()
    env = dict(os.environ, PYTHONFAULTHANDLER="1")
    counts = {"cases": 0, "failed": 0, "signal": 0, "timeout": 0, "exception": 0, "status": 0, "over_memory": 0}
    peak = 0
    with tempfile.TemporaryDirectory(prefix="rasdf-campaign-") as tmp:
        for k in range(args.first, args.first + args.cases):
            rng = random.Random(f"{args.seed}/{k}")
            src = rng.choice(files)
            data, what = mutate(src.read_bytes(), rng)
            case = Path(tmp) / f"case{src.suffix}"
            case.write_bytes(data)
            runs = [("python", [args.python, "-c", CHILD, str(case), str(ROOT / "python" / "tests")], (0, 3))]
            if args.cli:
                runs.append(("check", [str(Path(args.cli).resolve()), "check", str(case)], (0, 1, 2)))
                runs.append(("info", [str(Path(args.cli).resolve()), "info", "--stats", str(case)], (0, 1, 2)))
            counts["cases"] += 1
            for name, cmd, allowed in runs:
                status, out, secs, rss = run(cmd, args.timeout, args.max_mb, env, tmp)
                peak = max(peak, rss)
                reason = None
                if status is None:
                    reason, key = f"timeout after {secs:.1f} s", "timeout"
                elif status < 0:
                    reason, key = f"signal {-status}", "signal"
                elif status == 3 and name == "python":
                    reason, key = "exception", "exception"
                elif status not in allowed:
                    reason, key = f"exit status {status}", "status"
                if reason is None and ("MemoryError" in out or "memory allocation of" in out):
                    reason, key = "out of memory", "over_memory"
                if reason is None:
                    continue
                counts["failed"] += 1
                counts[key] += 1
                print(f"case {k} ({src.relative_to(ROOT)}, {what}) {name}: {reason}, {rss} MiB")
                print("    " + out.strip().replace("\n", "\n    ")[-1500:])
                if args.out:
                    args.out.mkdir(parents=True, exist_ok=True)
                    keep = args.out / f"seed{args.seed}-case{k}-{name}{src.suffix}"
                    keep.write_bytes(data)
                    keep.with_suffix(".json").write_text(json.dumps(
                        {"source": str(src.relative_to(ROOT)), "mutation": what, "reader": name, "reason": reason,
                         "output": out[-4000:]}, indent=1))
            sys.stdout.flush()
    counts["peak_rss_mib"] = peak
    print(json.dumps(counts))
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
