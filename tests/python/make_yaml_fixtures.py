"""Write hand-made YAML-only ASDF files that exercise YAML 1.1 features, and dumps.json:
each file's tree as the pinned reference library reads it (the canonical form of
dump_tree.py). A file the reference refuses is recorded as {"$error": true}.

    python tests/python/make_yaml_fixtures.py testdata/yaml
"""

import json
import os
import sys
import warnings

import dump_tree

HEAD = "#ASDF 1.0.0\n#ASDF_STANDARD 1.6.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n"

DOCS = {
    "merge": """\
base: &b {x: 1, y: 2}
more: &m {z: 3}
one:
  <<: *b
  y: 20
list:
  <<: [*b, *m]
  w: 4
first_wins:
  <<: [{k: first}, {k: second}]
explicit_wins:
  k: mine
  <<: {k: merged}
tagged_key: {!!merge "<<": {m: 1}, n: 2}
tagged_merge_value: {<<: !!pairs {c: 1}, d: 2}
tagged_merge_list: {<<: !!map [], e: 1}
bang_key: {! "<<": {m: 1}, n: 2}
""",
    "binary": """\
short: !!binary aGVsbG8=
lines: !!binary |
  aGVsbG8g
  d29ybGQ=
empty: !!binary ""
""",
    "omap_pairs": """\
o: !!omap [{b: 1}, {a: 2}]
block: !!omap
  - z: 1
  - y: 2
p: !!pairs [{a: 1}, {a: 2}]
pairs_odd_keys: !!pairs [{!foo k: 1}, {[1, 2]: 2}, {=: 3}, {<<: 4}]
""",
    # An item's own tag is never constructed (gwcs's label mappers write `!!omap` on
    # each item); an alias elsewhere to an item constructs it, tag and all.
    # The non-specific tag `!` resolves a scalar of any style as a plain one (the
    # reference writes history entry times as `! '2026-11-24 08:57:47+00:00'`).
    "bang_tag": """\
time: ! '2026-11-24 08:57:47+00:00'
a: ! 'yes'
b: ! "123"
c: ! 1.5
e: ! 'x'
f: ! ''
g: !<!> "2001-12-14"
h: ! "~"
j: ! "<<"
k: ! "="
l: ! "1:30"
m: ! '0b1_0'
! 'on': key
block_int: ! |
  12
folded_hex: ! >
  0x1F
block_float: ! |
  -1.5e+3
block_date: ! |
  2001-12-14
block_null: ! |
  null
kept: ! |+
  12

block_str: ! |
  x
seq: ! [1, '2']
map: ! {a: 1}
empty_bang: !
eq_block: ! |
  =
merge_block: ! |
  <<
only_break: ! |+

after: 1
""",
    # Inline arrays mixing text with other scalars take numpy's string length (21 for an
    # int, 32 for a float, 5 for a bool) and Python's text of each; record fields
    # without names are f0, f1... (the standard's own ndarray examples).
    "inline_mixed": """\
ints: !core/ndarray-1.1.0 [[M110, 110, 205, And], [M31, -31, 224, And]]
floats: !core/ndarray-1.1.0 {data: [a, 1.5, 1.0e+20, 0.1, -0.0, .inf, 1.0e-05, 123456789.125]}
bools: !core/ndarray-1.1.0 {data: [a, true, false]}
long: !core/ndarray-1.1.0 {data: [abcdefghijklmnopqrstuvwxyzabcdefghijkl, 1, 2.5]}
records: !core/ndarray-1.1.0
  datatype: [[ascii, 4], uint16, {name: f1x, datatype: uint16}, [ascii, 4]]
  data: [[M110, 110, 205, And], [M31, 31, 224, And]]
""",
    "omap_tagged_items": """\
mapper: !!omap
- !!omap
  labels: [1, 2]
- !!omap
  models: [a]
p: !!pairs
- !!omap {a: 1}
- !!seq {b: 2}
t: !!omap [&i !custom/thing-1.0.0 {k: v}, &j !!str {l: w}]
again: *i
""",
    "explicit_core_tags": """\
s: !!str 123
s2: !!str yes
i: !!int "0x10"
i2: !!int "017"
f: !!float "1"
f2: !!float "-.inf"
b: !!bool "off"
n: !!null ""
t: !!timestamp 2001-12-14
t2: !!timestamp 2001-12-14 21:59:43.10 -5
q: !!seq [1, two]
m: !!map {a: 1}
long: !<tag:yaml.org,2002:str> 42
b_case: !!bool tRue
i_prefix: !!int "0o17"
i_spaces: !!int " 12 "
i_hex_prefix: !!int "0x0x1F"
f_block: !!float |+
  0
f_spaces: !!float " -2.5 "
t_block: !!timestamp |
  2001-12-14 21:59:43
t_short: !!timestamp 2001-2-3
f_sexagesimal: !!float "1:60"
""",
    "block_scalars": """\
literal: |
  line one
   indented
  
  after blank
folded: >
  folded
  text

  new para
    more indented
  back
strip: |-
  no newline
keep: |+
  kept

indicator: |2
    two extra
  base
last: >-
  end
""",
    "quoted": """\
dq: "tab\\there \\x41 \\u00e9 \\U0001F600 \\N \\_ \\L \\P \\/ \\\\ \\" \\0 \\a \\b \\e \\f \\v"
dq_fold: "one
  two

  three"
dq_escaped_newline: "joined\\
  here"
sq: 'it''s # not a comment'
sq_fold: 'one
  two'
plain_multi: a plain
  scalar over
  lines
colon_in_plain: a:b c
hash_in_plain: a#b
url: http://example.org/a#frag
""",
    "flow": """\
a: [a: 1, b]
b: {a, b: 2}
c: [ ]
d: { }
e: [1, 2, ]
f: {x: [1, {y: [2]}], z: {}}
g: [[], [[]], {}]
h: {"quoted key": 1, 'single': 2, ? complex : 3}
""",
    "anchors": """\
a: &s scalar
b: *s
c: &l [1, 2]
d: *l
e: &m {k: *s}
f: [*m, *m]
g: &x [1, *x]
h: &y {self: *y}
*s : aliased key
""",
    "keys": """\
"": empty key
~: null key
1: int key
-5: negative key
true: bool key
2020-01-01: date key
"1": string one
\u00e9t\u00e9: non-ascii key
"a\\tb": escaped key
dup: 1
dup: 2
""",
    "comments": """\
# a comment before
a: 1 # trailing
# between
b:   # after key
  - x   # in a list
  # inside
  - y
c: "not # a comment"
d: 'nor # this'
""",
    "nested_deep": "root:\n" + "".join("  " * (i + 1) + f"l{i}:\n" for i in range(25)) + "  " * 26 + "leaf: 1\n",
    "numbers": """\
ints: [0, -0, +7, 0b1010, 0x1F, 0x_1f, 017, 0o17, 1_000, 190:20:30, -1:30, 9223372036854775807, 9223372036854775808, -9223372036854775809]
floats: [1.0, -1.5e+3, 1e5, 1.0e5, 6.8523015e+5, 685.230_15e+03, 685_230.15, 190:20:30.15, .5, 5., .inf, -.INF, .NaN, 1_0.5]
other: [1e, 0x, 0b2, 08, 09.5, +.inf, 1__0]
""",
}

# Files whose tag handles are not the usual one.
SCHEMA_DEFAULTS = """\
t: !core/table-1.0.0
  columns:
  - !core/column-1.0.0 {name: a, data: !core/ndarray-1.0.0 [1, 2]}
  - !core/column-1.0.0 {name: b, data: !core/ndarray-1.0.0 [3, 4], description: B, meta: {k: v}}
f: !fits/fits-1.0.0
- header: [[SIMPLE, true, conforms]]
- {header: [], data: !core/ndarray-1.0.0 [1]}
- !core/table-1.0.0 {columns: []}
s0: !wcs/step-1.0.0 {frame: det}
s1: !wcs/step-1.1.0 {frame: det}
s2: !wcs/step-1.2.0 {frame: det}
sp0: !wcs/spectral_frame-1.0.0 {name: spec}
sp1: !wcs/spectral_frame-1.1.0 {name: spec, reference_position: barycenter}
sp2: !wcs/spectral_frame-1.1.0 {name: spec}
c: !wcs/icrs_coord-1.1.0 {ra: {value: 1.5}, dec: {value: 2.5, unit: rad}}
aliased: &col !core/column-1.0.0 {name: z, data: !core/ndarray-1.0.0 [0]}
again: *col
ref: {$ref: "#/t", t: !core/table-1.0.0 {columns: []}}
deep: [[{x: !core/table-1.0.0 {columns: []}}]]
...
"""

RAW = {
    "tag_handles": "#ASDF 1.0.0\n#ASDF_STANDARD 1.6.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n"
    "%TAG !ex! tag:example.org,2024:\n--- !core/asdf-1.1.0\n"
    "a: !ex!thing-1.0.0 {x: 1}\nb: !<tag:example.org,2024:other-1.0.0> [1]\nc: !local text\n"
    "d: !core/complex-1.0.0 1+2j\ne: !ex!scalar 5\n...\n",
    "crlf": HEAD.replace("\n", "\r\n") + "a: |\r\n  one\r\n  two\r\nb: [1,\r\n  2]\r\n...\r\n",
    "no_document_start_tag": "#ASDF 1.0.0\n%YAML 1.1\n---\na: 1\n...\n",
    "trailing_after_end": HEAD + "a: 1\n...\n\x00\x00garbage after the tree\n",
    "tag_escapes": HEAD + "a: !<tag:example.org/%C3%A9t%C3%A9%2520> {x: 1}\nb: !ex%25ample 5\n"
    "c: !<tag:example.org,2024:[x]> [1]\n...\n",
    # Values on the line after their key: an alias, a tagged scalar.
    "values_next_line": HEAD + "c: &l [1, 2]\nd:\n *l\ne: !core/complex-1.0.0\n  1+2j\nf:\n  [x, y]\n...\n",
    # An ordered map with a key repeated: the last value, at the first place.
    "omap_repeated_key": HEAD + "o: !!omap [{b: 1}, {a: 2}, {b: 3}]\nn: !!omap\n- x: {y: [1, 2]}\n- z: []\ne: !!omap []\n...\n",
    # base64 as Python's non-strict decoder reads it: odd characters skipped, unused
    # bits ignored, data after the padding dropped.
    "binary_lenient": HEAD + "a: !!binary aGVsbG6=\nb: !!binary 'aGVs bG]8='\nc: !!binary aGVsbG8=garbage\n...\n",
    # core/integer: any sign but '-' is positive, as the reference reads it.
    "integer_signs": HEAD + "n: !core/integer-1.1.0 {sign: '-', string: '-4294967419', words: [123, 1]}\n"
    "p: !core/integer-1.1.0 {sign: x, string: '4294967419', words: [123, 1]}\n...\n",
    # Timestamps at the edges of what Python's datetime takes; a quoted one is a string.
    "timestamps_edge": HEAD + "a: 2000-02-29\nb: 2001-12-14 21:59:43 -23:59\nc: 2001-12-14 21:59:43 +5:99\n"
    "d: '2001-02-29'\n...\n",
    # `=` (PyYAML's `!!value`) as a key stays a string key.
    "value_key": HEAD + "=: 1\nb: {=: 2}\n...\n",
    # Schema defaults, filled by the reference into files of standard 1.5.0 and older
    # (each standard lists its own tags), never into those of 1.6.0.
    **{
        f"schema_defaults_{v.replace('.', '_') if v else 'no_standard'}": "#ASDF 1.0.0\n"
        + (f"#ASDF_STANDARD {v}\n" if v else "")
        # The root tag each standard lists (core/asdf-1.0.0 up to 1.1.0).
        + "%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-"
        + ("1.0.0" if v in ("1.0.0", "1.1.0", None) else "1.1.0")
        + "\n"
        # (and the ndarray tag it lists: 1.1.0 in 1.6.0)
        + SCHEMA_DEFAULTS.replace("ndarray-1.0.0", "ndarray-1.1.0" if v == "1.6.0" else "ndarray-1.0.0")
        for v in ["1.0.0", "1.1.0", "1.4.0", "1.5.0", "1.6.0", None]
    },
    # A merge value's tag is not constructed, anchored or not, unless an alias uses it.
    "merge_anchored_tags": HEAD + "b: &b {x: 1}\nm: {<<: &l !!map [*b], y: 2}\nn: {<<: &s !!seq {q: 1}, r: 3}\n"
    "o: {<<: &f !!seq [*b], y: 4}\nf: *f\n...\n",
    # Nor is the tag of a mapping in a merge key's list.
    "merge_list_item_tags": HEAD + "k: {<<: [!!pairs {a: 1}, !!omap {c: 3}, !foo {d: 4}, &s !!set {e: null}], b: 2}\n"
    "z: *s\n...\n",
    # Refused by the reference; rasdf must refuse them too.
    "bad_merge_list_item_tag_aliased": HEAD + "k: {<<: [&p !!pairs {a: 1}], b: 2}\nz: *p\n...\n",
    "bad_pairs_alias_item_folded": HEAD + "a: &a {k: 1, k: 2}\nb: !!pairs [*a]\n...\n",
    "bad_omap_alias_item_merged": HEAD + "m: &m {x: 1}\na: &a {<<: *m, x: 2}\nb: !!omap [*a]\n...\n",
    "bad_merge_list_omap_sequence": HEAD + "k: {<<: [!!omap [{c: 3}]], b: 2}\n...\n",
    "bad_merge_list_tag_aliased": HEAD + "b: &b {x: 1}\nm: {<<: &l !!map [*b], y: 2}\nz: *l\n...\n",
    "bad_merge_mapping_tag_aliased": HEAD + "m: {<<: &a !!seq {q: 1}, y: 2}\nz: *a\n...\n",
    "bad_tagged_key": HEAD + "!<tag:x.org:k-1.0.0> k: 1\n...\n",
    "bad_timestamp_day": HEAD + "a: 2001-02-29\n...\n",
    "bad_timestamp_minute": HEAD + "a: [2001-12-14 21:99:43.1]\n...\n",
    "bad_tagged_key_in_flow": HEAD + "a: {!!foo k: 1}\n...\n",
    "bad_str_on_sequence": HEAD + "a: !!str [1]\n...\n",
    "bad_omap_on_mapping": HEAD + "a: !!omap {k: 1}\n...\n",
    "bad_omap_item_aliased": HEAD + "o: !!omap [&i !!omap {k: 1}]\nagain: *i\n...\n",
    "bad_bang_block_bool": HEAD + "a: ! |\n  yes\n...\n",
    "bad_bang_block_inf": HEAD + "a: ! |\n  -.inf\n...\n",
    "bad_duplicate_anchor": HEAD + "a: &x 1\nb: &x 2\nc: *x\n...\n",
    "bad_omap_item_two_pairs": HEAD + "o: !!omap [{a: 1, a: 2}]\n...\n",
    "bad_seq_on_scalar": HEAD + "a: !!seq x\n...\n",
    "bad_two_documents": HEAD + "a: 1\n--- b\n...\n",
    "bad_alias_after_tagged_root": "#ASDF 1.0.0\n#ASDF_STANDARD 1.6.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n"
    "--- !core/asdf-1.1.0\n*b\n  y: 20\n...\n",
    "bad_verbatim_tag_char": HEAD + "a: !<tag:example.org/`x> 1\n...\n",
    "bad_tag_escape_not_utf8": HEAD + "a: !<tag:example.org/%FF> 1\n...\n",
    "bad_unhashable_key": HEAD + "? [1, 2]\n: v\n...\n",
    "bad_base64": HEAD + "b: !!binary aGVsbG8\n...\n",
    "bad_undefined_alias": HEAD + "a: *nowhere\n...\n",
    "bad_tab_indent": HEAD + "a:\n\t- 1\n...\n",
    "bad_unclosed_flow": HEAD + "a: [1, 2\n...\n",
    "bad_bad_escape": HEAD + 'a: "\\q"\n...\n',
}


def main(out):
    os.makedirs(out, exist_ok=True)
    names = []
    for name, body in DOCS.items():
        with open(os.path.join(out, name + ".asdf"), "w", newline="") as f:
            f.write(HEAD + body + "...\n")
        names.append(name + ".asdf")
    for name, text in RAW.items():
        with open(os.path.join(out, name + ".asdf"), "w", newline="") as f:
            f.write(text)
        names.append(name + ".asdf")
    dumps = {}
    for name in sorted(names):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                dumps[name] = dump_tree.dump_file(os.path.join(out, name))
        except Exception as e:  # noqa: BLE001 - the reference's refusal is the expectation
            print(f"{name}: the reference refuses it: {e!r}"[:200], file=sys.stderr)
            dumps[name] = {"$error": True}
    with open(os.path.join(out, "dumps.json"), "w") as f:
        json.dump(dumps, f, indent=1, sort_keys=True, ensure_ascii=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
