"""rasdf.open gives the tree and values the reference library (asdf 6.0.0) gives, on every
file of the repository's test data it reads: the standard's reference files, the fixtures
of every kind, files of older writers and of astronomy packages."""

import datetime
import json
import warnings

import numpy as np
import pytest

import rasdf
from conftest import TESTDATA, asdf_files, require

asdf = require("asdf")
import dump_tree  # noqa: E402 - after the path set-up in conftest

FILES = asdf_files("reference_files", "pyasdf", "yaml", "strings", "scalars", "oldasdf", "astro") + [
    TESTDATA / "example.asdf"
]

# Tags the reference turns into plain dicts (dump_tree.py dumps them without their tag).
PLAIN_TAGS = ("core/asdf-", "core/software-", "core/history_entry-", "core/extension_metadata-", "core/subclass_metadata-")


def plain_tag(tag):
    return tag == "tag:yaml.org,2002:omap" or any(tag.startswith("tag:stsci.edu:asdf/" + t) for t in PLAIN_TAGS)


def dump(v, stack):
    """rasdf's tree in dump_tree.py's canonical form."""
    if isinstance(v, (dict, list)) and id(v) in stack:
        return {"$cycle": True}
    if isinstance(v, rasdf.NDArray):
        return dump_tree.array(v.read())
    if isinstance(v, complex):
        return {"$complex": [dump_tree.fl(v.real), dump_tree.fl(v.imag)]}
    if isinstance(v, (set, frozenset)):
        return {"$set": sorted((dump(x, stack) for x in v), key=lambda j: json.dumps(j, sort_keys=True))}
    tag = getattr(v, "tag", None)
    if isinstance(v, (rasdf.TaggedDict, rasdf.TaggedList, rasdf.TaggedString)) and tag is not None:
        if tag.startswith("tag:stsci.edu:asdf/core/externalarray-") and all(
            k in v for k in ("fileuri", "target", "datatype", "shape")
        ):
            return {
                "$external": {
                    "fileuri": str(v["fileuri"]),
                    "target": dump(v["target"], stack),
                    "datatype": dump(v["datatype"], stack),
                    "shape": [dump(x, stack) for x in v["shape"]],
                }
            }
        if not plain_tag(tag):
            raw = dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else str(v)
            stack.add(id(v))
            inner = plain(raw, stack)
            stack.discard(id(v))
            return {"$tag": tag, "value": inner}
    stack.add(id(v))
    out = plain(v, stack)
    stack.discard(id(v))
    return out


def plain(v, stack):
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, dict):
        return {"$map": [[dump(k, stack), dump(x, stack)] for k, x in v.items()]}
    if isinstance(v, (list, tuple)):
        return [dump(x, stack) for x in v]
    if isinstance(v, (datetime.datetime, datetime.date)):
        return {"$timestamp": v.isoformat()}
    if isinstance(v, str):
        return str(v)
    return dump_tree.element(v)


def reference(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return dump_tree.dump_file(str(path))
        except Exception as e:  # noqa: BLE001 - the reference refusing is an answer
            return {"$error": repr(e)}


def differences(a, b, path="", out=None):
    out = [] if out is None else out
    if type(a) is not type(b):
        out.append(f"{path}: {json.dumps(a)[:200]} != {json.dumps(b)[:200]}")
    elif isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}/{k}: only in one")
            else:
                differences(a[k], b[k], f"{path}/{k}", out)
    elif isinstance(a, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items != {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            differences(x, y, f"{path}/{i}", out)
    elif a != b:
        out.append(f"{path}: {json.dumps(a)[:200]} != {json.dumps(b)[:200]}")
    return out


def test_there_are_files():
    assert len(FILES) > 200


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(TESTDATA)))
def test_same_tree_as_reference(path):
    ref = reference(path)
    if "$error" in ref:
        # The reference refuses it: rasdf may read it (it is more lenient on some damage),
        # but only ever fails with its own errors.
        try:
            with rasdf.open(path) as af:
                for a in af.arrays().values():
                    a.read()
        except (rasdf.AsdfError, OSError):
            pass
        return
    with rasdf.open(path) as af:
        ours = dump(af.tree, set())
    diff = differences(ours, ref)
    assert not diff, "\n".join(diff[:20])
