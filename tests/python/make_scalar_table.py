"""Make testdata/scalars/: an ASDF file whose tree is a list of plain YAML scalars, and
expected.json, what the pinned reference library (PyYAML 1.1 resolvers) reads each as,
in dump_tree.py's canonical form.

    python tests/python/make_scalar_table.py testdata/scalars
"""

import json
import os
import sys
import warnings

import asdf

import dump_tree

BOOLS = [w for word in ("yes", "no", "true", "false", "on", "off") for w in (word, word.capitalize(), word.upper())]
NOT_BOOLS = ["y", "Y", "n", "N", "yEs", "tRUE", "oN", "Off ", "yes!"]
INTS = [
    "0", "00", "017", "018", "0o17", "0x1F", "0X1F", "0x_1F", "0xg", "0b101", "0b102", "0b_1", "1_000", "1__0",
    "_1", "+1", "-1", "+0", "-0", "-017", "+0x10", "-0b11", "1:30", "-1:30", "+1:30", "1:60", "1:5", "1:30:00",
    "190:20:30", "01:30", "1:3a", "12345678901234567890", "-98765432109876543210", "9223372036854775807",
    "9223372036854775808", "-9223372036854775808", "1,000", "1 000", "0x", "0b", "1_", "0_",
]
FLOATS = [
    "1.0", "1.", ".5", "-.5", "+.5", "1e5", "1.0e5", "1.0e+5", "1.0E+5", "1.0e-5", "1.0e5.0", "1_0.5", "1:30.5",
    "-1:30.5", "190:20:30.15", ".inf", "-.inf", "+.inf", ".Inf", ".INF", ".iNf", ".nan", ".NaN", ".NAN", "-.nan",
    "inf", "nan", "1.2.3", "1e+5", "6.8523015e+5", "685.230_15e+03", "685_230.15", "0.", "-0.0", "+0.0", "1.e+3",
    "._5", "1.5e+", "1.5e", "3.14159", "1e-5", "0.1e-1", "00.5", "1_2.3_4", ".5e+3", "+.5e-3",
]
NULLS = ["~", "null", "Null", "NULL", "nUll", "None", "none"]
TIMES = [
    "2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5", "2001-12-15T02:59:43.1Z",
    "2001-12-14 21:59:43.10", "2002-1-1", "2001-12-14T21:59:43", "2001-12-14 2:59:43", "2001-12-14T21:59:43.123456789",
    "2001-12-14T21:59:43+01:30", "2001-12-14 21:59:43 Z", "20011214", "2001-12-14T21:59", "2001-12-1",
]
STRINGS = [
    "hello", "hello world", "=", "a=b", "-a", "+a", ".a", "..", "1a", "a1", "0.0.0", "1-2", "1/2", "1+2j", "(1+2j)",
    "TRUE1", "nulls", "~a", "a~", "0x1F.5", "1:", ":1", "12:", "True.", "NaN", "Inf", "-inf", "e5", "E", "_",
    "é", "中文", "k:v", "http://x.org/a#b", "a #b", "1 2",
]


def main(out):
    os.makedirs(out, exist_ok=True)
    scalars = BOOLS + NOT_BOOLS + INTS + FLOATS + NULLS + TIMES + STRINGS
    lines = [f"- {s}" if s.strip() == s else f"- '{s}'" for s in scalars] + ["-"]
    text = (
        "#ASDF 1.0.0\n#ASDF_STANDARD 1.6.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\nitems:\n"
        + "\n".join(lines)
        + "\n...\n"
    )
    path = os.path.join(out, "scalars.asdf")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = dump_tree.dump_file(path)
    items = dict((k, v) for k, v in tree["$map"])["items"]
    assert len(items) == len(scalars) + 1
    table = [{"text": s, "value": v} for s, v in zip(scalars + [""], items)]
    with open(os.path.join(out, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(table, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(len(table), "scalars")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "testdata/scalars")
