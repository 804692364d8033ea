"""Make the malformed files in testdata/bad/ from the good fixtures in testdata/pyasdf/.

    python tests/python/make_bad.py testdata/pyasdf testdata/bad

Needs only the standard library. Each file is one defect; expected.json records, for
each, the error rasdf must report: its kind (the ErrorKind variant and the inner
variant, as `Block(BadMagic`), the block number (or null) and the byte offset, all
computed here from the file's structure, independently of rasdf.
"""

import json
import os
import struct
import sys

MAGIC = b"\xd3BLK"


def walk(data):
    pos = data.find(MAGIC)
    out = []
    while pos >= 0 and data[pos : pos + 4] == MAGIC:
        (hs,) = struct.unpack(">H", data[pos + 4 : pos + 6])
        flags, comp, alloc, used, size, ck = struct.unpack(">I4sQQQ16s", data[pos + 6 : pos + 54])
        out.append(dict(pos=pos, hs=hs, flags=flags, comp=comp, alloc=alloc, used=used, size=size))
        pos = pos + 6 + hs + alloc
    return out


def set_field(data, pos, fmt, at, value):
    data = bytearray(data)
    struct.pack_into(fmt, data, pos + at, value)
    return bytes(data)


def main(good, out):
    os.makedirs(out, exist_ok=True)
    read = lambda n: open(os.path.join(good, n), "rb").read()  # noqa: E731
    plain, zlib, bzp2, lz4 = (read(n + ".asdf") for n in ("uncompressed", "zlib", "bzp2", "lz4"))
    pb, zb, bb, lb = walk(plain), walk(zlib), walk(bzp2), walk(lz4)
    expected = {}

    def bad(name, data, kind, block, offset):
        open(os.path.join(out, name), "wb").write(data)
        expected[name] = {"kind": kind, "block": block, "offset": offset}

    b1 = pb[1]["pos"]
    bad("bad_magic_block1.asdf", plain[:b1] + b"XBLK" + plain[b1 + 4 :], "Block(BadMagic", 1, b1)
    b0 = pb[0]["pos"]
    bad("header_size_small.asdf", set_field(plain, b0, ">H", 4, 40), "Block(HeaderTooSmall", 0, b0)
    bad(
        "used_gt_allocated.asdf",
        set_field(plain, b1, ">Q", 22, pb[1]["alloc"] + 8),
        "Block(UsedExceedsAllocated",
        1,
        b1,
    )
    bad(
        "uncompressed_size_mismatch.asdf",
        set_field(plain, b1, ">Q", 30, pb[1]["used"] - 8),
        "Block(SizeMismatch",
        1,
        b1,
    )
    bad("truncated_block_header.asdf", plain[: b1 + 20], "Block(Truncated", 1, b1)
    b2 = pb[2]["pos"]
    bad("truncated_block_data.asdf", plain[: b2 + 54 + 10], "Block(Truncated", 2, b2)
    flipped = bytearray(plain)
    flipped[b0 + 54] ^= 0xFF
    bad("checksum_mismatch.asdf", bytes(flipped), "Block(ChecksumMismatch", 0, b0)
    for name, data, blocks in (("zlib", zlib, zb), ("bzp2", bzp2, bb), ("lz4", lz4, lb)):
        p = blocks[0]["pos"]
        bad(f"{name}_too_long.asdf", set_field(data, p, ">Q", 30, blocks[0]["size"] - 1), "Block(DecodedTooLong", 0, p)
        bad(f"{name}_too_short.asdf", set_field(data, p, ">Q", 30, blocks[0]["size"] + 1), "Block(DecodedTooShort", 0, p)
    z0 = zb[0]["pos"]
    bad("unknown_compression.asdf", zlib[: z0 + 10] + b"zfp\0" + zlib[z0 + 14 :], "Block(UnknownCompression", 0, z0)
    last = pb[-1]["pos"]
    streamed = set_field(set_field(plain, last, ">I", 6, 1), last, ">4s", 10, b"zlib")
    bad("streamed_compressed.asdf", streamed, "Block(StreamedCompressed", 2, last)
    bad("not_asdf.asdf", b"SIMPLE  =                    T\n", "Header(NotAsdf", None, 0)
    bad("bad_version.asdf", b"#ASDF 2.0.0\n", "Header(UnsupportedVersion", None, 6)
    tree_at = plain.index(b"%YAML")
    bad("no_tree_end.asdf", plain[: plain.index(b"\n...\n")] + b"\n", "Header(NoTreeEnd", None, tree_at)
    bad(
        "junk_comment.asdf",
        plain[:tree_at] + b"not a comment\n" + plain[tree_at:],
        "Header(InvalidComment",
        None,
        tree_at,
    )

    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
