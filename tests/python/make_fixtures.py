"""Make the block-layer fixtures in testdata/pyasdf/ with the pinned reference library.

Run with the venv from requirements.txt (asdf==6.0.0, numpy, lz4):

    python tests/python/make_fixtures.py testdata/pyasdf

Each fixture is written by the reference library, or written by it and then edited by
hand (CRLF, no tree, long headers, stale index, old checksums); every edited file is
opened again with the reference library to prove it still reads. `blocks.json` records
each block as the reference reads it (see dump_blocks.py); `cargo test` compares rasdf
against it.
"""

import hashlib
import json
import os
import struct
import sys
import warnings

import asdf
import numpy as np

import dump_blocks

MAGIC = b"\xd3BLK"


def tree():
    return {
        "a": np.arange(100, dtype="<f8"),
        "b": np.arange(30, dtype=">i4").reshape(5, 6),
        "c": np.linspace(0, 1, 64, dtype="<f4"),
        "meta": {"name": "fixture", "n": 3},
    }


def write(path, t=None, **kw):
    af = asdf.AsdfFile(tree() if t is None else t)
    af.write_to(path, **kw)


def walk(data):
    """(magic offset, header_size, fields...) of every block, serially."""
    pos = data.find(MAGIC)
    out = []
    while pos >= 0 and data[pos : pos + 4] == MAGIC:
        (hs,) = struct.unpack(">H", data[pos + 4 : pos + 6])
        flags, comp, alloc, used, size, ck = struct.unpack(">I4sQQQ16s", data[pos + 6 : pos + 54])
        out.append((pos, hs, flags, comp, alloc, used, size, ck))
        if flags & 1:
            break
        pos = pos + 6 + hs + alloc
    return out


def index_bytes(offsets):
    return b"#ASDF BLOCK INDEX\n%YAML 1.1\n---\n" + b"".join(b"- %d\n" % o for o in offsets) + b"...\n"


def strip_index(data):
    i = data.rfind(b"#ASDF BLOCK INDEX")
    return data[:i] if i >= 0 else data


def check_reads(path):
    """The reference library must still read an edited fixture."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with asdf.open(path, lazy_load=False, memmap=False) as af:
            for rb in af._blocks.blocks:
                rb.data


def main(out):
    os.makedirs(out, exist_ok=True)
    p = lambda name: os.path.join(out, name)  # noqa: E731
    made = []

    def done(name):
        check_reads(p(name))
        made.append(name)

    write(p("uncompressed.asdf"))
    done("uncompressed.asdf")
    for codec in ("zlib", "bzp2", "lz4"):
        write(p(f"{codec}.asdf"), all_array_compression=codec)
        done(f"{codec}.asdf")
    # lz4 with small records, so one block holds several.
    write(
        p("lz4_records.asdf"),
        {"x": np.arange(5000, dtype="<i4")},
        all_array_compression="lz4",
        compression_kwargs={"compression_block_size": 4096},
    )
    done("lz4_records.asdf")
    write(p("padded.asdf"), pad_blocks=True)
    done("padded.asdf")
    write(p("no_index.asdf"), include_block_index=False)
    done("no_index.asdf")

    # Stale index: the tree grew after the index was written, every block moved.
    write(p("stale_index.asdf"))
    data = open(p("stale_index.asdf"), "rb").read()
    end = data.index(b"\n...\n")
    data = data[:end] + b"\n# an edit made the tree longer" + data[end:]
    open(p("stale_index.asdf"), "wb").write(data)
    done("stale_index.asdf")

    # Streamed block: rows appended after the header.
    af = asdf.AsdfFile({"rows": asdf.Stream([3], np.float64)})
    with open(p("streamed.asdf"), "wb") as f:
        af.write_to(f)
        for i in range(5):
            f.write((np.arange(3, dtype=np.float64) * i).tobytes())
    done("streamed.asdf")

    # No tree: header and comments, then the blocks.
    write(p("no_tree.asdf"), include_block_index=False)
    data = open(p("no_tree.asdf"), "rb").read()
    data = b"#ASDF 1.0.0\n#ASDF_STANDARD 1.6.0\n" + data[data.index(MAGIC) :]
    open(p("no_tree.asdf"), "wb").write(data)
    done("no_tree.asdf")

    # CRLF line ends in the header, comments and tree.
    write(p("crlf.asdf"), include_block_index=False)
    data = open(p("crlf.asdf"), "rb").read()
    first = data.index(MAGIC)
    data = data[:first].replace(b"\n", b"\r\n") + data[first:]
    open(p("crlf.asdf"), "wb").write(data)
    done("crlf.asdf")

    # Old checksum convention: MD5 of the decoded data of a compressed block.
    write(p("checksum_decoded.asdf"), all_array_compression="zlib")
    data = bytearray(open(p("checksum_decoded.asdf"), "rb").read())
    with asdf.open(p("checksum_decoded.asdf"), lazy_load=False, memmap=False) as af:
        decoded = [bytes(rb.data) for rb in af._blocks.blocks]
    for (pos, *_), raw in zip(walk(bytes(data)), decoded):
        data[pos + 38 : pos + 54] = hashlib.md5(raw).digest()
    open(p("checksum_decoded.asdf"), "wb").write(bytes(data))
    done("checksum_decoded.asdf")

    # header_size 60: twelve extra header bytes the reader must skip; index rebuilt.
    write(p("long_header.asdf"))
    data = strip_index(open(p("long_header.asdf"), "rb").read())
    blocks = walk(data)
    out_bytes = data[: blocks[0][0]]
    offsets = []
    for pos, hs, *_rest in blocks:
        alloc = _rest[2]
        offsets.append(len(out_bytes))
        out_bytes += MAGIC + struct.pack(">H", 60) + data[pos + 6 : pos + 54] + b"\xee" * 12
        out_bytes += data[pos + 6 + hs : pos + 6 + hs + alloc]
    out_bytes += index_bytes(offsets)
    open(p("long_header.asdf"), "wb").write(out_bytes)
    done("long_header.asdf")

    # Trailing NULs after the index (allowed by the standard; the reference warns).
    write(p("index_trailing_nuls.asdf"))
    with open(p("index_trailing_nuls.asdf"), "ab") as f:
        f.write(b"\0" * 16)
    done("index_trailing_nuls.asdf")

    # Files without blocks, and the smallest file there is.
    write(p("tree_only.asdf"), {"x": 1})
    done("tree_only.asdf")
    open(p("header_only.asdf"), "wb").write(b"#ASDF 1.0.0\n")
    done("header_only.asdf")

    # The example file README's main-job command reads.
    example = {
        "meta": {"telescope": "example", "exposure_time": 120.5, "filters": ["F150W", "F200W"], "calibrated": True},
        "sci": {
            "data": (np.arange(64 * 64, dtype="<f4").reshape(64, 64) % 97) / 7,
            "dq": np.zeros((64, 64), dtype=np.uint8),
            "err": np.full((64, 64), 0.25, dtype=">f8"),
        },
        "catalog": np.array([(1, 10.5, b"star"), (2, 11.25, b"galaxy")], dtype=[("id", "<i4"), ("mag", "<f8"), ("kind", "S8")]),
    }
    af = asdf.AsdfFile(example)
    af.set_array_compression(example["sci"]["data"], "zlib")
    af.set_array_compression(example["sci"]["err"], "lz4")
    af.write_to(os.path.join(out, "..", "example.asdf"))
    check_reads(os.path.join(out, "..", "example.asdf"))

    with open(p("blocks.json"), "w") as f:
        paths = [p(n) for n in made]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            d = {os.path.basename(k): v for k, v in zip(paths, map(dump_blocks.blocks_of, paths))}
        json.dump(d, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "testdata/pyasdf")
