"""Make testdata/scalars/floats.txt: how the pinned PyYAML writes floats, one per line as
`<16 hex digits of the bits> <text>`, for the emitter's float test (tests/scalars.rs).

    python tests/python/make_float_reprs.py testdata/scalars

The floats: seeded random bit patterns, random decimals of every size, subnormals and
edges, and values whose 17-digit form is an exact tie between two last digits (Python's
repr rounds those half to even; Rust's `{:e}` does not always).
"""

import random
import struct
import sys

import yaml


def bits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def main(out_dir):
    rng = random.Random(20261123)
    values = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 1e-5, 9.999e-5, 1e-4,
              0.5, 1.0, 1e15, 9.5e15, 1e16, 12345678901234567.0, 0.1, 1 / 3]
    while len(values) < 1500:
        x = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        if x == x and abs(x) != float("inf"):
            values.append(x)
    for _ in range(1500):
        values.append(rng.randrange(1_000_000) * 10.0 ** rng.randrange(-20, 20) * rng.choice((1, -1)))
    for _ in range(800):
        # [2^50, 2^51): a quarter is the ulp, so n + 0.25 and n + 0.75 need 17 digits and
        # sit exactly halfway between two of them.
        values.append(rng.randrange(2**50, 2**51) + rng.choice((0.25, 0.75)))
    for _ in range(200):
        values.append(struct.unpack("<d", struct.pack("<Q", rng.getrandbits(52)))[0])
    lines = []
    for x in values:
        text = yaml.safe_dump(x).split("\n")[0]
        lines.append(f"{bits(x):016x} {text}")
    with open(f"{out_dir}/floats.txt", "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
