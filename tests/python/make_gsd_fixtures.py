"""Make the GSD fixtures in testdata/gsd/ with the pinned gsd (5.0.1, `gsd.fl`), and
one file of format version 1.0 (names in 64-byte slots), which gsd 5 no longer writes,
built here from the format's description.

    python tests/python/make_gsd_fixtures.py testdata/gsd

Also the checks of tests/convert.rs:

    python tests/python/make_gsd_fixtures.py check-asdf GSD ASDF [GSD ASDF ...]
        every chunk gsd.fl reads from GSD equals the reference library's reading of
        ASDF's frames/F/NAME (values, shape, dtype), and the header fields match
    python tests/python/make_gsd_fixtures.py make-asdf DIR
        ASDF files with frames, written by the reference library
    python tests/python/make_gsd_fixtures.py check-gsd ASDF GSD [ASDF GSD ...]
        the same comparison, the GSD file being rasdf's

Each check prints one line per pair: `ok NAME`, or what differs.
"""

import os
import struct
import sys

import numpy as np

TYPES = {1: "u1", 2: "u2", 3: "u4", 4: "u8", 5: "i1", 6: "i2", 7: "i4", 8: "i8", 9: "f4", 10: "f8"}


def make(d):
    import gsd.fl
    import gsd.hoomd

    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(3)
    path = os.path.join(d, "every_type.gsd")
    with gsd.fl.open(path, "w", application="rasdf fixtures", schema="test", schema_version=[1, 2]) as f:
        for code in TYPES.values():
            a = (rng.standard_normal((5, 3)) * 50).astype(code)
            f.write_chunk(f"two_d/{code}", a)
            f.write_chunk(f"one_d/{code}", a[:, 0].copy())
        f.write_chunk("text", "hello, GSD")
        f.write_chunk("empty", np.zeros((0, 3), dtype="f4"))
        f.write_chunk("a/name/longer/than/sixty/four/characters/to/need/the/version/two/list", np.arange(3, dtype="i4"))
        f.end_frame()
        # Frame 1 repeats some names, adds one; frame 2 has no chunks; frame 3 one.
        f.write_chunk("one_d/f8", np.linspace(0, 1, 7))
        f.write_chunk("late", np.array([[1, 2], [3, 4]], dtype="u2"))
        f.end_frame()
        f.end_frame()
        f.write_chunk("text", "frame three")
        f.end_frame()
    # A hoomd trajectory, as simulations write them.
    path = os.path.join(d, "hoomd.gsd")
    with gsd.hoomd.open(path, "w") as t:
        for step in range(3):
            fr = gsd.hoomd.Frame()
            fr.configuration.step = step * 100
            fr.configuration.box = [10, 10, 10, 0, 0, 0]
            fr.particles.N = 4
            fr.particles.types = ["A", "B"]
            fr.particles.typeid = [0, 1, 0, 1]
            fr.particles.position = rng.standard_normal((4, 3)).astype("f4")
            fr.log["value/energy"] = np.array([step * 1.5])
            t.append(fr)
    # Version 1.0: names in 64-byte slots, 4 index slots, entries in frame order.
    names = [b"position", b"step"]
    namelist = b"".join(n.ljust(64, b"\0") for n in names) + b"\0" * 64 * 2
    chunks = [(0, 0, "f4", np.arange(6, dtype="f4").reshape(2, 3)), (0, 1, "u8", np.array([7], dtype="u8")),
              (1, 0, "f4", np.arange(6, 12, dtype="f4").reshape(2, 3))]
    index_loc, slots = 256, 4
    namelist_loc = index_loc + 32 * slots
    loc = namelist_loc + len(namelist)
    index = b""
    data = b""
    for frame, nid, code, a in chunks:
        a2 = a.reshape(a.shape[0], -1)
        tid = [k for k, v in TYPES.items() if v == code][0]
        index += struct.pack("<QQqIHBB", frame, a2.shape[0], loc + len(data), a2.shape[1], nid, tid, 0)
        data += a2.tobytes()
    index = index.ljust(32 * slots, b"\0")
    header = struct.pack("<QQQQQII", 0x65DF65DF65DF65DF, index_loc, slots, namelist_loc, len(namelist) // 64,
                         (1 << 16) | 0, 1 << 16)
    header += b"v1 writer".ljust(64, b"\0") + b"v1 schema".ljust(64, b"\0") + b"\0" * 80
    with open(os.path.join(d, "version_1_0.gsd"), "wb") as f:
        f.write(header + index + namelist + data)


def gsd_chunks(path):
    """{(frame, name): value} as gsd.fl reads them, and the header fields."""
    import gsd.fl

    with gsd.fl.open(path, "r") as f:
        out = {}
        names = f.find_matching_chunk_names("")
        for frame in range(f.nframes):
            for name in names:
                if f.chunk_exists(frame, name):
                    out[(frame, name)] = f.read_chunk(frame, name)
        head = (f.application, f.schema, tuple(f.schema_version), f.nframes)
    return out, head


def asdf_chunks(path):
    import asdf

    with asdf.open(path, lazy_load=False, memmap=False, validate_checksums=True) as af:
        out = {}
        for frame, chunks in enumerate(af.tree["frames"]):
            for name, v in chunks.items():
                out[(frame, name)] = v if isinstance(v, str) else np.array(v)
        g = af.tree.get("gsd", {})
        head = (g.get("application"), g.get("schema"), tuple(g.get("schema_version", ())), len(af.tree["frames"]))
    return out, head


def compare(ours, theirs, skip_head=False):
    (a, ha), (b, hb) = ours, theirs
    if not skip_head and ha != hb:
        return f"header {ha} vs {hb}"
    if a.keys() != b.keys():
        return f"chunks {sorted(a.keys() ^ b.keys())}"
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, str) or isinstance(y, str):
            if x != y:
                return f"{k}: {x!r} vs {y!r}"
        elif x.shape != y.shape or x.dtype.newbyteorder("=") != y.dtype.newbyteorder("=") or not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
            return f"{k}: {x.dtype}{x.shape} vs {y.dtype}{y.shape}"
    return None


def make_asdf(d):
    import asdf

    os.makedirs(d, exist_ok=True)
    big = np.arange(12, dtype=">f8").reshape(3, 4)
    cases = {
        "frames": {
            "gsd": {"application": "made by asdf", "schema": "hoomd", "schema_version": [1, 4]},
            "frames": [
                {"particles/position": np.arange(12, dtype="f4").reshape(4, 3), "configuration/step": np.array([0], "u8"),
                 "log/note": "first"},
                {"particles/position": np.arange(12, 24, dtype="f4").reshape(4, 3)},
                {"view": big[:, ::-2], "big_endian": big, "fortran": np.asfortranarray(big.astype("i2")),
                 "ints": np.arange(5, dtype="i8")},
            ],
        },
        "no_header": {"frames": [{"x": np.arange(3, dtype="u1")}]},
    }
    for name, tree in cases.items():
        asdf.AsdfFile(tree).write_to(os.path.join(d, name + ".asdf"))
    print("\n".join(cases))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd in ("check-asdf", "check-gsd"):
        rest = sys.argv[2:]
        for i in range(0, len(rest), 2):
            if cmd == "check-asdf":
                g, a = rest[i], rest[i + 1]
                err = compare(asdf_chunks(a), gsd_chunks(g))
            else:
                a, g = rest[i], rest[i + 1]
                ours, theirs = gsd_chunks(g), asdf_chunks(a)
                # A file without `gsd` gets rasdf's application and an empty schema.
                err = compare(ours, theirs, skip_head=theirs[1][0] is None)
            print(f"{rest[i]}: {err}" if err else f"ok {rest[i]}")
    elif cmd == "make-asdf":
        make_asdf(sys.argv[2])
    else:
        make(cmd)
