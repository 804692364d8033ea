"""Write seeded random YAML-only ASDF files that mix PyYAML's scalar forms: numbers in
every YAML 1.1 spelling, bool and null words, timestamps, `<<` and `=`, each plain,
quoted, or as a block, under no tag, the non-specific `!`, `!!str`, and now and then
another core tag; in mappings, flow sequences and keys. Every other file is a random
structure instead: nested flow collections under no tag, `!`, `!!map`, `!!seq`,
`!!omap`, `!!pairs`, `!!set` or an unknown tag, with anchors, aliases, merge keys and
odd keys; a quarter of those are of a random ASDF Standard (1.0.0 to 1.6.0, or none)
and also hold the tags whose schema defaults the reference fills (core/column-1.0.0,
fits/fits-1.0.0, wcs/step...) and those defaults' property names as keys. Many are
files the reference refuses (a core tag on text it cannot construct, a duplicate
anchor); the test compares rasdf with the reference either way.

    python tests/python/make_random_yaml.py OUT_DIR SEED COUNT
"""

import os
import random
import sys

CORES = [
    "1", "-1", "+1", "0", "00", "017", "0o17", "0x1F", "0X1f", "0b101", "0b", "1_000", "1__0", "_1",
    "1:30", "1:30:00", "-1:30", "1:60", "1:30.5", "190:20:30.15", "1.5", ".5", "1.", "-.5", "1e5",
    "1.0e5", "1.0e+5", "1E+5", "1.5E-3", "6.8523015e+5", "685.230_15e+03", ".inf", "-.Inf", "+.INF",
    ".NaN", ".nan", "NaN", "inf", "yes", "Yes", "YES", "yEs", "no", "on", "Off", "y", "n", "true",
    "False", "TRUE", "tRue", "null", "Null", "NULL", "~", "", "2001-12-14", "2001-12-14t21:59:43.10-05:00",
    "2001-12-14 21:59:43.10 -5", "2001-12-14 21:59:43", "2002-12-14T21:59:43Z", "2001-2-3",
    "2001-12-14 21:59:43.1234567", "<<", "=", "abc", "a b", "x:y", "-", "0.0", "-0", "+0.0", "1_2.3_4",
    "0x_1F", "0b1_0", "09", "0_9", ".1_0", "12:00:00.5",
]
OTHER_TAGS = ["!!int ", "!!float ", "!!bool ", "!!null ", "!!timestamp "]
HEAD = "#ASDF 1.0.0\n#ASDF_STANDARD 1.6.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n"


def scalar(rng):
    core = rng.choice(CORES)
    tags = [""] * 6 + ["! "] * 3 + ["!!str "]
    if rng.random() < 0.05:
        tags.append(rng.choice(OTHER_TAGS))
    tag = rng.choice(tags)
    style = rng.choice(["plain", "plain", "single", "double", "block", "folded"])
    if style == "single":
        return tag + "'" + core + "'"
    if style == "double":
        return tag + '"' + core + '"'
    if style in ("block", "folded") and tag:
        chomp = rng.choice(["", "-", "+"])
        return tag + ("|" if style == "block" else ">") + chomp + "\n    " + core + ("\n" if rng.random() < 0.2 else "")
    return tag + core


STRUCT_SCALARS = ["1", "-2", "0x1F", "1.5", "yes", "no", "~", "null", "abc", "'q'", '"d"', "2001-12-14", "1:30",
                  "<<", "=", ".inf", "''", "x y"]
STRUCT_KEYS = ["a", "b", "c", "1", "2", "yes", "~", "1.5", "2001-12-14", "'a'", '"b"', "<<", "=", "0x1", "'1'",
               "!!str 1", "? [1, 2]", "!foo k"]
COLLECTION_TAGS = ["", "", "", "", "! ", "!!map ", "!!seq ", "!!omap ", "!!pairs ", "!!set ", "!foo/bar-1.0.0 ",
                   "!<tag:x.org/y> "]


DEFAULT_TAGS = ["!core/column-1.0.0 ", "!core/table-1.0.0 ", "!fits/fits-1.0.0 ", "!wcs/step-1.0.0 ",
                "!wcs/step-1.1.0 ", "!wcs/step-1.2.0 ", "!wcs/spectral_frame-1.0.0 ",
                "!wcs/spectral_frame-1.1.0 ", "!wcs/icrs_coord-1.1.0 "]
DEFAULT_KEYS = ["meta", "description", "data", "columns", "header", "transform", "ra", "dec", "unit",
                "wrap_angle", "reference_position", "name", "$ref"]
STANDARDS = ["1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "1.5.0", "1.6.0", None]


def structure(rng, anchors, new, depth=0, tags=COLLECTION_TAGS, keys=STRUCT_KEYS):
    r = rng.random()
    if anchors and r < 0.1:
        return "*" + rng.choice(anchors)
    anchor = ""
    if rng.random() < 0.15:
        name = f"a{len(anchors) + len(new)}"
        anchor = "&" + name + " "
        new.append(name)
    if depth > 2 or r < 0.45:
        return anchor + rng.choice(["", "! ", "!!str "] * 3 + ["!foo "]) + rng.choice(STRUCT_SCALARS)
    tag = rng.choice(tags)
    if rng.random() < 0.5:
        items = [structure(rng, anchors, new, depth + 1, tags, keys) for _ in range(rng.randint(0, 3))]
        return anchor + tag + "[" + ", ".join(items) + "]"
    pairs = []
    for _ in range(rng.randint(0, 3)):
        key = rng.choice(keys)
        if key == "<<" and anchors and rng.random() < 0.7:
            if rng.random() < 0.6:
                value = "*" + rng.choice(anchors)
            else:
                value = "[" + ", ".join("*" + rng.choice(anchors) for _ in range(2)) + "]"
        else:
            value = structure(rng, anchors, new, depth + 1, tags, keys)
        pairs.append(f"{key}: {value}")
    return anchor + tag + "{" + ", ".join(pairs) + "}"


def structure_doc(rng, tags=COLLECTION_TAGS, keys=STRUCT_KEYS):
    anchors, lines = [], []
    for i in range(5):
        new = []
        lines.append(f"k{i}: {structure(rng, anchors, new, 0, tags, keys)}")
        anchors.extend(new)
    return lines


def defaults_file(rng):
    """A random structure with the schema defaults' tags and keys, of a random standard
    (its root tag the one the standard lists)."""
    v = rng.choice(STANDARDS)
    head = "#ASDF 1.0.0\n" + (f"#ASDF_STANDARD {v}\n" if v else "") + "%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n"
    head += "--- !core/asdf-" + ("1.0.0" if v in ("1.0.0", "1.1.0", None) else "1.1.0") + "\n"
    tags = COLLECTION_TAGS[:6] + DEFAULT_TAGS * 2
    keys = DEFAULT_KEYS * 2 + STRUCT_KEYS[:4]
    return head + "\n".join(structure_doc(rng, tags, keys)) + "\n...\n"


def main(out, seed, count):
    rng = random.Random(seed)
    os.makedirs(out, exist_ok=True)
    for n in range(count):
        if n % 4 == 3:
            with open(os.path.join(out, f"y{seed}_{n:04d}.asdf"), "w") as f:
                f.write(defaults_file(rng))
            continue
        if n % 2:
            with open(os.path.join(out, f"y{seed}_{n:04d}.asdf"), "w") as f:
                f.write(HEAD + "\n".join(structure_doc(rng)) + "\n...\n")
            continue
        lines = []
        for i in range(6):
            v = scalar(rng)
            if "\n" not in v and rng.random() < 0.2:
                other = (scalar(rng).splitlines() or [""])[0]
                lines.append(f"k{i}: [{v}, {other}]")
            else:
                lines.append(f"k{i}: {v}")
        if rng.random() < 0.3:
            lines.append(f"{rng.choice(CORES)}: keyed")
        with open(os.path.join(out, f"y{seed}_{n:04d}.asdf"), "w") as f:
            f.write(HEAD + "\n".join(lines) + "\n...\n")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
