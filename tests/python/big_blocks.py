"""Multi-piece compressed blocks, both ways (the parallel codecs' cross-test).

    python big_blocks.py write OUT     writes arrays `zlib`, `bzp2` of 3 MiB (bzp2 spans 4
                                       blocks of 900 kB), `lz4` of 18 MiB (5 records of 4 MiB,
                                       more than rasdf compresses at once) and `none` of 48 MiB
                                       (72 MiB in all: rasdf writes that past the page cache)
    python big_blocks.py digest FILE   prints {name: md5 of the array's little-endian bytes},
                                       reading with checksums validated
"""

import hashlib
import json
import sys

import asdf
import numpy as np

NAMES = ["zlib", "bzp2", "lz4", "none"]


SIZES = {"zlib": 3 << 18, "bzp2": 3 << 18, "lz4": 18 << 18, "none": 48 << 18}


def data(seed, n):
    rng = np.random.default_rng(seed)
    x = np.linspace(0, 60 * np.pi, n)
    return (np.round(np.sin(x) * 1000 + rng.integers(0, 16, x.size)) / 8).astype("<f4")


if sys.argv[1] == "write":
    af = asdf.AsdfFile({n: data(i, SIZES[n]) for i, n in enumerate(NAMES)})
    for n in NAMES[:3]:
        af.set_array_compression(af.tree[n], n)
    af.write_to(sys.argv[2])
else:
    with asdf.open(sys.argv[2], validate_checksums=True, lazy_load=False, memmap=False) as af:
        out = {n: hashlib.md5(np.ascontiguousarray(af.tree[n], dtype="<f4").tobytes()).hexdigest() for n in NAMES}
    print(json.dumps(out, sort_keys=True))
