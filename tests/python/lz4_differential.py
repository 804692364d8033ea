"""rasdf's lz4 decoder against liblz4 (python-lz4, the reference library's own codec) on
mutated records: each case is a record of the reference's framing (`[u32 BE length][u32
LE decoded length][LZ4 block]`) made from one of several kinds of data, then changed
(bytes flipped, cut, spliced, lengths and offsets rewritten) or left whole. rasdf decodes
it into a buffer filled with a sentinel; liblz4 decodes the block with the decoded length
as its bound.

A case fails when rasdf decodes it and liblz4 does not, when both decode it to different
bytes, or when rasdf leaves any byte of the buffer unwritten; a crash ends the run. A
record liblz4 decodes and rasdf refuses is counted, not failed (rasdf also refuses a block
that decodes short of its declared length, which liblz4's bound allows).

    python tests/python/lz4_differential.py --cases 100000 --seed 1

Prints a JSON summary; exits 1 when a case failed. Deterministic for a seed.
"""

from __future__ import annotations

import argparse
import json
import random
import struct
import sys

import lz4.block
import numpy as np

from rasdf import _rasdf

SENTINEL = 0xA5


def data_of(kind: str, n: int, rng: random.Random) -> bytes:
    """`n` bytes of one kind: what arrays, text and noise look like to lz4."""
    r = np.random.default_rng(rng.randrange(1 << 32))
    if kind == "smooth":
        x = np.linspace(0, rng.uniform(1, 100), n // 4 + 1)
        return (np.round(np.sin(x) * 1000) / 8).astype("<f4").tobytes()[:n]
    if kind == "ints":
        return (np.arange(n // 8 + 1, dtype="<i8") * rng.randrange(1, 9)).tobytes()[:n]
    if kind == "text":
        words = [b"ASDF", b"ndarray", b"source", b" ", b"\n", b"datatype: float32", b"0", b"1"]
        out = bytearray()
        while len(out) < n:
            out += rng.choice(words)
        return bytes(out[:n])
    if kind == "zeros":
        return bytes(n)
    if kind == "runs":
        return bytes(r.integers(0, 3, n, dtype=np.uint8).repeat(1)[:n])
    return r.integers(0, 256, n, dtype=np.uint8).tobytes()


def record(raw_len: int, block: bytes) -> bytes:
    return struct.pack(">I", len(block) + 4) + struct.pack("<I", raw_len) + block


def mutate(block: bytes, rng: random.Random) -> bytes:
    b = bytearray(block)
    kind = rng.choice(["flip", "flip", "cut", "splice", "token", "offset", "extend", "whole"])
    if kind == "whole" or not b:
        return bytes(b)
    if kind == "flip":
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif kind == "cut":
        del b[rng.randrange(len(b)):]
    elif kind == "splice":
        i, j = sorted(rng.randrange(len(b)) for _ in range(2))
        k = rng.randrange(len(b))
        b[k:k] = b[i:j]
    elif kind == "token":
        # A token's lengths at their most: 15 literals and a match of 19 or more.
        b[rng.randrange(len(b))] = 0xFF
    elif kind == "offset":
        # Two bytes that may be read as a match offset: far back, or zero.
        i = rng.randrange(max(1, len(b) - 1))
        b[i:i + 2] = rng.choice([b"\xff\xff", b"\x00\x00", b"\x01\x00", struct.pack("<H", min(len(b), 65535))])
    elif kind == "extend":
        b += bytes(rng.randrange(256) for _ in range(rng.randint(1, 32)))
    return bytes(b)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    counts = {"cases": args.cases, "decoded": 0, "refused": 0, "refused_liblz4_decodes": 0, "failed": 0}
    failures = []
    for case in range(args.cases):
        kind = rng.choice(["smooth", "ints", "text", "zeros", "runs", "noise"])
        n = rng.choice([1, 5, 13, 64, 300, 4096, 65536 + rng.randrange(1000)])
        raw = data_of(kind, n, rng)
        block = mutate(lz4.block.compress(raw, store_size=False), rng)
        # The declared length: the data's, or another one.
        raw_len = len(raw) if rng.random() < 0.8 else rng.choice([0, 1, len(raw) - 1, len(raw) + 1, 2 * len(raw)])
        raw_len = max(0, raw_len)
        rec = record(raw_len, block)
        out = np.full(raw_len, SENTINEL, np.uint8)
        try:
            _rasdf.hook_decode("lz4", out, len(rec), 0, data=rec)
            ours = out.tobytes()
        except ValueError:
            ours = None
        try:
            theirs = lz4.block.decompress(block, uncompressed_size=raw_len) if raw_len else None
        except lz4.block.LZ4BlockError:
            theirs = None
        what = f"case {case}: {kind} {n} bytes, block {len(block)}, declared {raw_len}"
        if ours is None:
            counts["refused"] += 1
            if theirs is not None and len(theirs) == raw_len:
                counts["refused_liblz4_decodes"] += 1
            continue
        counts["decoded"] += 1
        if raw_len and theirs is None:
            failures.append(f"{what}: rasdf decoded what liblz4 refuses")
        elif raw_len and theirs != ours:
            failures.append(f"{what}: rasdf's bytes differ from liblz4's")
    counts["failed"] = len(failures)
    for f in failures[:20]:
        print(f)
    print(json.dumps(counts))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
