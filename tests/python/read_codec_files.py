"""Read ASDF files that rasdf wrote with the zstd or blsc codecs, with the reference
library and the asdf-compression plugin, and print what they hold.

    python tests/python/read_codec_files.py FILE...

Prints JSON: ``{file name: {"labels": [each block's compression label], "arrays":
{path: md5 of the array's bytes in C order, as stored}}}``, arrays at the top of the
tree (nested ones by their ``/``-joined path). Fails when a block's checksum does not
hold (``validate_checksums``) or an array does not read.
"""

import hashlib
import json
import os
import sys

import asdf
import numpy as np


def walk(node, path, out):
    if isinstance(node, np.ndarray):
        out[path] = hashlib.md5(np.ascontiguousarray(node).tobytes()).hexdigest()
    elif isinstance(node, dict):
        for k, v in node.items():
            if k != "asdf_library" and k != "history":
                walk(v, f"{path}/{k}" if path else str(k), out)


def main(paths):
    result = {}
    for p in paths:
        with asdf.open(p, lazy_load=False, memmap=False, validate_checksums=True) as f:
            arrays = {}
            walk(f.tree, "", arrays)
            labels = []
            with open(p, "rb") as raw:
                data = raw.read()
            at = data.find(b"\xd3BLK")
            while at >= 0 and data[at : at + 4] == b"\xd3BLK":
                hs = int.from_bytes(data[at + 4 : at + 6], "big")
                labels.append(data[at + 10 : at + 14].rstrip(b"\0").decode())
                allocated = int.from_bytes(data[at + 14 : at + 22], "big")
                at += 6 + hs + allocated
            result[os.path.basename(p)] = {"labels": labels, "arrays": arrays}
    json.dump(result, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
