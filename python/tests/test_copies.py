"""Copies and trees of real files as the reference sees them, over every real-file
fixture the reference reads (tests/python/copy_report.py): `rasdf.write(out,
rasdf.open(F))` read back by asdf to the objects asdf reads from F, with no new warning;
`rasdf.open(F).tree` equal to asdf's raw tree (schema defaults filled); `rasdf.validate`
giving asdf's verdict. Under the venv with asdf-astropy, gwcs, roman_datamodels and
stdatamodels (`RASDF_COPIES_ASTRO=1` in scripts/test.sh) the objects are astropy's,
gwcs's and the data models'; under the plain venv, the raw tagged dicts asdf makes
without those extensions."""

import os
import shutil

import numpy as np
import pytest
from conftest import TESTDATA, require

import rasdf

asdf = require("asdf")
import copy_report  # noqa: E402 - after the path set-up in conftest

FILES = copy_report.real_files()
IDS = [str(p.relative_to(TESTDATA)) for p in FILES]


def astro():
    return bool(os.environ.get("RASDF_COPIES_ASTRO"))


def test_the_real_files_are_there():
    assert len(FILES) > 180
    assert any("oldastro" in str(p) for p in FILES)
    if astro():
        require("asdf_astropy")
        require("gwcs")
        require("roman_datamodels")


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_a_copy_reads_back_the_same_in_the_reference(path, tmp_path):
    diffs = copy_report.copy_differences(path, str(tmp_path))
    if diffs is None:
        pytest.skip("the reference does not read it")
    assert not diffs, "\n".join(diffs)


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_the_tree_is_the_references_raw_tree(path):
    diffs = copy_report.raw_tree_differences(path)
    if diffs is None:
        pytest.skip("the reference does not read it")
    assert not diffs, "\n".join(diffs)


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_validate_gives_the_references_verdict(path):
    theirs = copy_report.asdf_verdict(path)
    if theirs is None:
        pytest.skip("the reference does not read it")
    assert copy_report.rasdf_verdict(path) == theirs


def test_copies_keep_the_standard_of_their_source(tmp_path):
    for path in sorted((TESTDATA / "oldastro").glob("*.asdf")) + sorted((TESTDATA / "oldasdf").glob("v1.*.asdf")):
        with rasdf.open(path) as af:
            version = af.version
            rasdf.write(tmp_path / "copy.asdf", af)
            rasdf.write(tmp_path / "tree.asdf", af.tree)
        for out in ("copy.asdf", "tree.asdf"):
            with rasdf.open(tmp_path / out) as copy:
                assert copy.version == version, (path, out)


def test_a_copy_labelled_with_another_standard_is_caught(tmp_path):
    """The check can fail: the same copy with `#ASDF_STANDARD 1.6.0` over its 1.5.0 tags
    (what rasdf wrote before) loses the quantities, tables and times in asdf."""
    path = TESTDATA / "oldastro" / "astro_v1.5.0.asdf"

    def relabelled(out, af):
        rasdf.write(out, af)
        data = open(out, "rb").read()
        assert b"#ASDF_STANDARD 1.5.0\n" in data
        with open(out, "wb") as f:
            f.write(data.replace(b"#ASDF_STANDARD 1.5.0\n", b"#ASDF_STANDARD 1.6.0\n", 1))

    assert copy_report.copy_differences(path, str(tmp_path)) == []
    diffs = copy_report.copy_differences(path, str(tmp_path), write=relabelled)
    assert any("new warning" in d for d in diffs), diffs
    if astro():
        assert any("/table" in d or "/quantity" in d or "/time" in d for d in diffs), diffs


def test_the_comparison_sees_differences():
    a = {"x": np.arange(3.0), "m": np.ma.array([1, 2], mask=[0, 1]), "s": "t", "f": float("nan")}
    assert copy_report.object_differences(a, dict(a)) == []
    for key, other in [
        ("x", np.arange(3.0) + 1),
        ("x", np.arange(3, dtype="f4")),
        ("m", np.ma.array([1, 2], mask=[0, 0])),
        ("s", "u"),
        ("f", 1.0),
    ]:
        assert copy_report.object_differences(a, {**a, key: other}), key
    assert copy_report.object_differences(a, {"x": a["x"]})
    if astro():
        import astropy.units as u

        assert copy_report.object_differences({"q": np.arange(2.0) * u.m}, {"q": np.arange(2.0) * u.s})
        assert copy_report.object_differences({"q": np.arange(2.0) * u.m}, {"q": np.arange(2.0)})


def test_trees_of_extension_tags_get_their_schemas_defaults(tmp_path):
    """A 1.5.0 file that leaves a rotation's `direction` and a table's `meta` out: asdf
    fills them from its extensions' schemas when they are installed, and so does rasdf
    (and validates the tree so filled)."""
    path = TESTDATA / "oldastro" / "astro_v1.5.0.asdf"
    with rasdf.open(path) as af:
        rotation = af["wcs/steps/0/transform/forward/1"]
        qtable = af.tree["qtable"]
    if astro():
        assert rotation["direction"] == "native2celestial"
        assert "meta" in qtable
        rasdf.validate(path)
    with rasdf.open(path) as af:
        af.validate(schemas=False)
    # A copy of the file without its extensions' defaults is still read with them.
    plain = tmp_path / "plain.asdf"
    shutil.copy(path, plain)
    with rasdf.open(plain) as af:
        assert ("direction" in af["wcs/steps/0/transform/forward/1"]) == astro()
