"""rasdf.asdf_hook's validation of tagged trees (`rasdf._asdf_valid`): where rasdf's
validator judges a tree asdf writes, the file written is the same, byte for byte, as
with asdf's own validation (which stores `property_order`, `flow_style` and `style` on
the nodes it checks, and asdf's YAML writer follows them); a tree asdf refuses is
refused with the same error; a warning is the same warning. Every file of the
repository asdf writes again, and hand-made trees: valid, invalid, and of the kinds
rasdf leaves to asdf.
"""

import io
import os
import warnings

import pytest

from conftest import TESTDATA, asdf_files, require

asdf = require("asdf")
np = require("numpy")

import asdf._asdf  # noqa: E402
import asdf.schema  # noqa: E402
import asdf.yamlutil  # noqa: E402
from asdf.tagged import TaggedDict, TaggedList, TaggedString  # noqa: E402

from rasdf import _asdf_valid, asdf_hook  # noqa: E402
from hook_support import no_hook_left  # noqa: E402,F401 - the fixture applies here

FILES = asdf_files("reference_files", "pyasdf", "oldasdf", "astro", "codecs") + [TESTDATA / "example.asdf"]


def outcome(write):
    """What `write()` gives: the bytes written, or the error raised; and the warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = write()
        except Exception as e:  # noqa: BLE001 - the error is the outcome
            out = (type(e).__name__, str(e))
    return out, sorted({(w.category.__name__, str(w.message)) for w in caught})


def hooked(write, fast=True):
    """`write()` with the hook installed; with `fast=False`, asdf's own validation."""
    with asdf_hook.installed():
        if fast:
            return outcome(write)
        asdf.yamlutil.schema = asdf._asdf.schema = asdf.schema
        try:
            return outcome(write)
        finally:
            asdf.yamlutil.schema = asdf._asdf.schema = _asdf_valid.proxy


def judged(write):
    """How many validations rasdf judged (and asdf) during `hooked(write)`, and it."""
    before = dict(_asdf_valid.stats)
    got = hooked(write)
    return {k: _asdf_valid.stats[k] - before[k] for k in before}, got


def rewrite(path):
    def write():
        with asdf.open(path, lazy_load=False, memmap=False) as af:
            out = io.BytesIO()
            af.write_to(out)
            return out.getvalue()

    return write


_judged_files = []


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(TESTDATA)))
def test_a_file_written_is_the_one_asdfs_validation_gives(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with asdf.open(path, lazy_load=False, memmap=False) as af:
                af.write_to(io.BytesIO())
        except Exception:  # noqa: BLE001
            pytest.skip("asdf does not write this file again")
    counts, fast = judged(rewrite(path))
    slow = hooked(rewrite(path), fast=False)
    assert fast == slow
    _judged_files.append(counts["rasdf"] > 0)


def annotations(x, path="", seen=None):
    """Every annotation asdf's validator stores on a tagged tree's nodes, by path."""
    seen = set() if seen is None else seen
    if id(x) in seen:
        return []
    seen.add(id(x))
    out = [(path, name, repr(getattr(x, name))) for name in ("property_order", "flow_style", "style") if name in getattr(x, "__dict__", {})]
    if isinstance(x, dict):
        for k, v in x.items():
            out += annotations(v, f"{path}/{k}", seen)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            out += annotations(v, f"{path}/{i}", seen)
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(TESTDATA)))
def test_a_tree_read_is_validated_as_asdf_validates_it(path):
    """`validate_on_read`: the same errors and warnings as with asdf's own validation,
    and the same annotations on what reaches the tree read (asdf's walk copies the
    tagged tree, so only the nodes it keeps as they are, such as those of tags it does
    not know, carry them there)."""

    def read():
        config = asdf.get_config()
        before = config.validate_on_read
        config.validate_on_read = True
        try:
            with asdf.open(path, lazy_load=False, memmap=False, _force_raw_types=True) as af:
                return annotations(af.tree)
        finally:
            config.validate_on_read = before

    counts, fast = judged(read)
    slow = hooked(read, fast=False)
    assert fast == slow
    _judged_reads.append(counts["rasdf"] > 0)


_judged_reads = []


def test_most_files_are_judged_by_rasdf():
    # Runs after the files above (pytest keeps the file's order).
    assert len(_judged_files) > 20
    assert sum(_judged_files) >= len(_judged_files) * 0.6, f"{sum(_judged_files)} of {len(_judged_files)}"
    assert sum(_judged_reads) >= len(_judged_reads) * 0.6, f"{sum(_judged_reads)} of {len(_judged_reads)}"


def nd(**kw):
    return TaggedDict(dict(kw), "tag:stsci.edu:asdf/core/ndarray-1.1.0")


# Hand-made trees (put in a file's tree as they are: asdf writes tagged nodes as they
# are) and whether rasdf judges them (True), or leaves them to asdf (False); `None` for
# either.
TREES = [
    ("plain", {"a": 1, "b": [1.5, "x", None, True], "c": {"d": -(2**63) + 2, "e": 2**63 - 1}}, True),
    ("inline_array", {"a": np.arange(6).reshape(2, 3)}, True),
    ("arrays_shared", (lambda x: {"a": x, "b": x, "c": [x[1:], x[::2]]})(np.arange(10.0)), True),
    ("masked", {"m": np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0])}, True),
    ("big_int", {"a": 2**63}, False),
    ("big_key", {2**63: 1}, False),
    ("big_np", {"a": np.uint64(2**63)}, False),
    ("small_int", {"a": -(2**63) + 1}, False),
    ("float_key", {1.5: "x"}, False),
    ("tuple_key", {(1, 2): "x"}, False),
    ("none_key", {None: 1}, False),
    ("int_key", {3: "x", True: 2}, True),
    ("ref", {"a": {"$ref": "other.asdf#/x"}}, False),
    ("bytes", {"a": b"xyz"}, False),
    ("tuple", {"a": (1, 2, 3)}, False),
    ("np_scalars", {"a": np.float64(1.5), "b": np.int32(7), "c": np.uint64(2**63 - 1), "d": np.str_("s")}, True),
    ("np_float32", {"a": np.float32(1.5)}, False),
    ("bad_datatype", {"a": nd(source=0, datatype="float7", byteorder="little", shape=[1])}, None),
    ("bad_byteorder", {"a": nd(data=[1, 2], datatype="int8", byteorder="middle", shape=[2])}, None),
    ("negative_shape", {"a": nd(data=[1, 2], datatype="int8", shape=[-2])}, None),
    ("both", {"a": nd(data=[1], source=0, datatype="int8", shape=[1])}, None),
    ("ok_inline", {"a": nd(data=[1, 2], datatype="int8", shape=[2])}, True),
    ("ok_dict", {"a": nd(data=[[1, 2]], datatype="int16", shape=[1, 2], byteorder="big")}, True),
    ("software_no_name", {"asdf_library": TaggedDict({"version": "1"}, "tag:stsci.edu:asdf/core/software-1.0.0")}, None),
    ("software", {"x": TaggedDict({"name": "n", "version": "1"}, "tag:stsci.edu:asdf/core/software-1.0.0")}, True),
    ("history_int", {"history": 5}, None),
    ("unit_string", {"u": TaggedString("m")}, None),
    ("tagged_list", {"l": TaggedList([1, 2], "tag:stsci.edu:asdf/core/ndarray-1.1.0")}, None),
    ("unknown_tag", {"x": TaggedDict({"a": 1}, "tag:example.org/nothing-1.0.0")}, None),
    ("complex", {"c": 1 + 2j}, None),
    ("plain_dict_tagged_value", {"a": nd(data=[1], datatype="int8", shape=[1], extra={"k": [1, {"z": 2}]})}, None),
]


def _tagged_string_tag(t):
    t._tag = "tag:stsci.edu:asdf/unit/unit-1.0.0"
    return t


TREES.append(("unit", {"u": _tagged_string_tag(TaggedString("m"))}, None))


@pytest.mark.parametrize("name,tree,rasdf_judges", TREES, ids=[t[0] for t in TREES])
def test_hand_made_trees_give_what_asdfs_validation_gives(name, tree, rasdf_judges):
    def write():
        out = io.BytesIO()
        asdf.AsdfFile(tree).write_to(out)
        return out.getvalue()

    counts, fast = judged(write)
    slow = hooked(write, fast=False)
    stock = outcome(write)
    assert fast == slow
    # (The hook's own parts, with asdf's validation, write what asdf writes: the other
    # hook tests; an error is asdf's own in any case.)
    if isinstance(stock[0], tuple):
        assert fast == stock
    if rasdf_judges is not None:
        assert (counts["rasdf"] > 0) == rasdf_judges, counts


def test_an_error_is_asdfs_own():
    tree = {"a": nd(source=0, datatype="float7", byteorder="little", shape=[1])}
    with asdf_hook.installed(), pytest.raises(asdf.ValidationError):
        asdf.AsdfFile(tree).write_to(io.BytesIO())


def test_annotations_are_stored_as_asdf_stores_them(tmp_path):
    """A schema with `flowStyle`, `style` and `propertyOrder` (an extension's, through
    asdf's resource manager): rasdf stores what asdf's validator would, on the same
    objects, so the files are the same."""
    from asdf.extension import ManifestExtension

    schema = """%YAML 1.1
---
$schema: http://stsci.edu/schemas/yaml-schema/draft-01
id: asdf://rasdf.test/schemas/styled-1.0.0
type: object
properties:
  seq:
    type: array
    flowStyle: block
  text:
    tag: asdf://rasdf.test/tags/text-1.0.0
    style: literal
  inner:
    type: object
    flowStyle: flow
    propertyOrder: [z, a]
    properties:
      z: {type: integer}
propertyOrder: [text, seq]
...
"""
    text_schema = """%YAML 1.1
---
$schema: http://stsci.edu/schemas/yaml-schema/draft-01
id: asdf://rasdf.test/schemas/text-1.0.0
type: string
...
"""
    manifest = """%YAML 1.1
---
id: asdf://rasdf.test/manifests/styled-1.0.0
extension_uri: asdf://rasdf.test/extensions/styled-1.0.0
tags:
  - tag_uri: asdf://rasdf.test/tags/styled-1.0.0
    schema_uri: asdf://rasdf.test/schemas/styled-1.0.0
  - tag_uri: asdf://rasdf.test/tags/text-1.0.0
    schema_uri: asdf://rasdf.test/schemas/text-1.0.0
...
"""
    resources = {
        "asdf://rasdf.test/schemas/styled-1.0.0": schema,
        "asdf://rasdf.test/schemas/text-1.0.0": text_schema,
        "asdf://rasdf.test/manifests/styled-1.0.0": manifest,
    }

    def make():
        text = TaggedString("line one\nline two\n")
        text._tag = "asdf://rasdf.test/tags/text-1.0.0"
        inner = TaggedDict({"a": 1, "z": 2, "m": 3}, "asdf://rasdf.test/tags/inner-1.0.0")
        return {
            "styled": TaggedDict(
                {"seq": TaggedList([1, 2, 3], "asdf://rasdf.test/tags/list-1.0.0"), "inner": inner, "text": text},
                "asdf://rasdf.test/tags/styled-1.0.0",
            )
        }

    with asdf.config_context() as config:
        config.add_resource_mapping(resources)
        config.add_extension(ManifestExtension.from_uri("asdf://rasdf.test/manifests/styled-1.0.0"))

        def write():
            out = io.BytesIO()
            asdf.AsdfFile(make()).write_to(out)
            return out.getvalue()

        counts, fast = judged(write)
        slow = hooked(write, fast=False)
        stock = outcome(write)
    assert counts["rasdf"] == 1, counts
    assert fast == slow == stock
    text = fast[0].decode("utf-8", "replace")
    # asdf's writer followed what the validation stored.
    assert "text: !<asdf://rasdf.test/tags/text-1.0.0> |" in text, text
    assert text.index("text:") < text.index("seq:")
    assert "{z: 2, a: 1, m: 3}" in text, text


def test_a_schema_not_among_asdfs_resources_leaves_it_to_asdf():
    """A tag whose schema asdf cannot find: asdf warns, with the hook too."""
    from asdf.extension import ManifestExtension

    manifest = """%YAML 1.1
---
id: asdf://rasdf.test/manifests/lost-1.0.0
extension_uri: asdf://rasdf.test/extensions/lost-1.0.0
tags:
  - tag_uri: asdf://rasdf.test/tags/lost-1.0.0
    schema_uri: asdf://rasdf.test/schemas/lost-1.0.0
...
"""
    with asdf.config_context() as config:
        config.add_resource_mapping({"asdf://rasdf.test/manifests/lost-1.0.0": manifest})
        config.add_extension(ManifestExtension.from_uri("asdf://rasdf.test/manifests/lost-1.0.0"))

        def write():
            out = io.BytesIO()
            asdf.AsdfFile({"x": TaggedDict({"a": 1}, "asdf://rasdf.test/tags/lost-1.0.0")}).write_to(out)
            return out.getvalue()

        counts, fast = judged(write)
        stock = outcome(write)
    assert counts == {"rasdf": 0, "asdf": 1}
    assert fast[1] == stock[1] and any("Unable to locate schema" in m for _, m in stock[1]), stock[1]
