"""Make testdata/strings/: trees of strings as the reference library writes them, for
the fast YAML scanner: long plain strings it wraps at 80 columns, strings holding line
breaks, quotes and backslashes (quoted over several lines, with escapes), in mappings,
block and flow sequences, nested lists of lists and mappings, and `!!binary` bytes.

Run with the main venv (requirements.txt):

    python tests/python/make_string_fixtures.py testdata/strings

Deterministic (a seeded generator). The expected values come from the reference run
live by the tests (dump_tree.py).
"""

import os
import random
import sys

import asdf
import numpy as np


def main(out):
    os.makedirs(out, exist_ok=True)
    rng = random.Random(5)
    alphabet = list("abc xyz.,;()-'\"\\\n\u00e9#:") + [" "] * 8

    def text():
        n = rng.choice([0, 1, 5, 30, 79, 80, 81, 120, 300])
        return "".join(rng.choice(alphabet) for _ in range(n))

    for k in range(8):
        tree = {}
        for j in range(24):
            kind = rng.randrange(6)
            if kind == 0:
                tree[f"s{j}"] = text()
            elif kind == 1:
                tree[f"l{j}"] = [text() for _ in range(rng.randrange(1, 4))]
            elif kind == 2:
                tree[f"d{j}"] = {f"k{q}": text() for q in range(2)}
            elif kind == 3:
                tree[f"n{j}"] = [[text(), {"x": text()}], text()]
            elif kind == 4:
                tree[f"w{j}"] = " ".join(["word"] * rng.randrange(1, 60)) + rng.choice(["", " ", "  x"])
            else:
                tree[f"b{j}"] = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 120)))
        tree["arr"] = np.arange(3)
        asdf.AsdfFile(tree).write_to(os.path.join(out, f"strings{k}.asdf"))


if __name__ == "__main__":
    main(sys.argv[1])
