"""Print, as JSON, every block of the given ASDF files as the reference library reads it.

Usage: python dump_blocks.py FILE... > blocks.json

Output: {basename-or-path: [{"offset": magic offset, "compression": label,
"data_size": decoded bytes, "md5": md5 hex of the decoded bytes}, ...]}.
"""

import hashlib
import json
import sys
import warnings

import asdf


def blocks_of(path):
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with asdf.open(path, lazy_load=False, memmap=False) as af:
            for rb in af._blocks.blocks:
                data = bytes(rb.data)
                label = rb.header["compression"].rstrip(b"\0").decode() or "none"
                out.append(
                    {
                        "offset": rb.offset - 4,
                        "compression": label,
                        "data_size": len(data),
                        "md5": hashlib.md5(data).hexdigest(),
                    }
                )
    return out


def main(paths):
    json.dump({p: blocks_of(p) for p in paths}, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
