"""rasdf.write of what asdf users hold: astropy quantities, units, times, tables,
coordinates, models, a gwcs WCS and data model nodes (through asdf's converters, when
asdf is importable), asdf's own AsdfFile, AsdfObject, tagged types and lazy arrays,
numpy scalars; read back by asdf to the objects asdf's own write of the same tree reads
back to, with the same history and no warning. The astropy parts run under the venv
with asdf-astropy, gwcs and roman_datamodels (`RASDF_WRITE_ASTRO=1` in scripts/test.sh)
and skip elsewhere; the rest runs in every venv with asdf."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from conftest import TESTDATA, require

import rasdf

asdf = require("asdf")
import copy_report  # noqa: E402 - after the path set-up in conftest


def astro():
    if os.environ.get("RASDF_WRITE_ASTRO"):
        require("asdf_astropy")
        require("gwcs")
        require("roman_datamodels")
        return True
    try:
        import asdf_astropy  # noqa: F401
        import gwcs  # noqa: F401
    except ImportError:
        pytest.skip("astropy's and gwcs's asdf extensions are not installed")
    return True


def read_back(path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with asdf.open(path, lazy_load=False, memmap=False) as af:
            tree = dict(af.tree)
    return tree, [f"{w.category.__name__}: {w.message}" for w in caught]


def without_core(tree):
    """`tree` with the record of asdf's core extension left out of its history: asdf
    records it for its own conversion of the root (an AsdfObject) and of arrays, which
    rasdf writes itself; the other extensions used are recorded by both."""
    history = tree.get("history")
    if isinstance(history, dict) and "extensions" in history:
        kept = [e for e in history["extensions"] if "/core/extensions/" not in str(e.get("extension_uri"))]
        # (In the order each writer met them: a set's order in asdf.)
        kept.sort(key=lambda e: str(e.get("extension_uri")))
        tree["history"] = {**history, "extensions": kept}
        if not kept and len(history) == 1:
            del tree["history"]
    return tree


def same_as_asdfs_own(tree, tmp_path, *, write=None):
    """rasdf's file and asdf's own of `tree`, read back by asdf: the differences."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    ours, theirs = tmp_path / "rasdf.asdf", tmp_path / "asdf.asdf"
    (write or rasdf.write)(ours, tree)
    asdf.AsdfFile(tree).write_to(theirs)
    a, told_a = read_back(theirs)
    b, told_b = read_back(ours)
    a, b = without_core(a), without_core(b)
    assert told_b == told_a
    assert a.pop("asdf_library")["name"] == "asdf"
    assert b.pop("asdf_library")["name"] == "rasdf"
    return copy_report.object_differences(a, b, limit=10)


def astro_tree():
    import astropy.units as u
    from astropy.coordinates import SkyCoord
    from astropy.modeling import models
    from astropy.table import Column, MaskedColumn, QTable, Table
    from astropy.time import Time

    q = np.arange(6.0).reshape(2, 3) * u.km / u.s
    return {
        "quantity": q,
        "again": q,
        "scalar_quantity": 3.5 * u.m,
        "unit": u.erg / u.s,
        "time": Time(["2020-01-01T00:00:00", "2021-06-30T12:00:00"], scale="utc"),
        "table": Table({"id": np.arange(29), "flux": np.linspace(0, 1, 29) * u.Jy, "name": [f"s{i}" for i in range(29)]}),
        "qtable": QTable({"x": np.arange(4.0) * u.pix}),
        "column": Column([1, 2, 3], name="c", unit="m"),
        "masked_column": MaskedColumn([1.0, 2.0], mask=[False, True], name="m"),
        "coord": SkyCoord([10.0, 20.0] * u.deg, [-5.0, 41.0] * u.deg),
        "model": models.Shift(1.5) | models.Scale(2.0),
        "nested": {"list": [1 * u.m, {"t": Time(59000.0, format="mjd")}]},
        "plain": np.arange(5, dtype=">i4"),
        "number": np.float32(2.5),
    }


def test_astropy_objects_read_back_as_asdfs_own_write(tmp_path):
    astro()
    tree = astro_tree()
    assert same_as_asdfs_own(tree, tmp_path) == []
    # Shared objects stay shared; the arrays inside the objects are in blocks.
    back, _ = read_back(tmp_path / "rasdf.asdf")
    assert back["again"] is back["quantity"]
    with rasdf.open(tmp_path / "rasdf.asdf") as af:
        assert af.version == "1.6.0"
        assert len(af.blocks()) >= 8
        assert all(a.tag == "tag:stsci.edu:asdf/core/ndarray-1.1.0" for a in af.arrays().values())


def test_the_extensions_used_are_recorded_as_asdf_records_them(tmp_path):
    astro()
    import astropy.units as u

    tree = {"q": np.arange(3.0) * u.m, "history": {"entries": [{"description": "made", "time": None}]}}
    tree["history"]["entries"][0].pop("time")
    rasdf.write(tmp_path / "ours.asdf", tree)
    asdf.AsdfFile(tree).write_to(tmp_path / "theirs.asdf")
    with asdf.open(tmp_path / "ours.asdf") as ours, asdf.open(tmp_path / "theirs.asdf") as theirs:
        assert ours.tree["history"]["entries"] == theirs.tree["history"]["entries"]
        uris = lambda af: sorted(  # noqa: E731
            e["extension_uri"] for e in af.tree["history"]["extensions"] if "/core/" not in e["extension_uri"]
        )
        assert uris(ours) == uris(theirs) and uris(ours)
    # The tree given is not changed.
    assert "extensions" not in tree["history"]


def test_gwcs_and_data_models(tmp_path):
    astro()
    for name in ["gwcs_imaging.asdf", "gwcs_selectors.asdf", "roman_level2.asdf"]:
        with asdf.open(TESTDATA / "astro" / name, lazy_load=False, memmap=False) as af:
            tree = {k: v for k, v in af.tree.items() if k not in ("asdf_library", "history")}
            assert same_as_asdfs_own(tree, tmp_path) == [], name
            # asdf's own AsdfFile, with its lazy arrays and standard.
            rasdf.write(tmp_path / "whole.asdf", af)
        a, _ = read_back(TESTDATA / "astro" / name)
        b, told = read_back(tmp_path / "whole.asdf")
        for t in (a, b):
            t.pop("asdf_library", None)
            t.pop("history", None)
        assert copy_report.object_differences(a, b) == [], name
        assert not told


def test_old_standard_objects_keep_their_standard(tmp_path):
    """asdf's objects read from a 1.3.0 file are written back at 1.3.0 through asdf's
    AsdfFile; its tree alone at asdf's default standard; both read back the same."""
    astro()
    path = TESTDATA / "oldastro" / "astro_v1.3.0.asdf"
    with asdf.open(path, lazy_load=False, memmap=False) as af:
        rasdf.write(tmp_path / "whole.asdf", af)
        rasdf.write(tmp_path / "tree.asdf", af.tree)
        # The tree alone, as asdf's own write of it reads back (at 1.6.0 a column's
        # description is no longer filled in as '').
        tree = {k: v for k, v in af.tree.items() if k not in ("asdf_library", "history")}
        assert same_as_asdfs_own(tree, tmp_path / "own") == []
    expected, _ = read_back(path)
    expected.pop("asdf_library")
    expected.pop("history")
    for out in ("whole.asdf",):
        with rasdf.open(tmp_path / out) as af:
            assert af.version == "1.3.0", (out, af.version)
    # asdf's tree alone names no standard: its objects are converted at asdf's default
    # one, and written at it.
    with rasdf.open(tmp_path / "tree.asdf") as af:
        assert af.version == "1.6.0"
        got, told = read_back(tmp_path / out)
        assert not told, told
        got.pop("asdf_library")
        got.pop("history")
        assert copy_report.object_differences(expected, got) == [], out


def test_ndarray_subclasses_are_never_bare_arrays(tmp_path):
    class Tagged(np.ndarray):
        pass

    out = tmp_path / "x.asdf"
    for value, name in [(np.arange(3).view(Tagged), "Tagged"), (np.matrix([[1, 2]]), "numpy.matrix")]:
        with pytest.raises(TypeError, match=rf"{name}.*\(at /a/0\)"):
            rasdf.write(out, {"a": [value]})
        assert not out.exists()
    # Memory maps and masked arrays are values.
    mm = np.memmap(tmp_path / "raw.bin", dtype="f8", mode="w+", shape=(3,))
    mm[:] = [1, 2, 3]
    rasdf.write(out, {"mm": mm, "ma": np.ma.array([1, 2], mask=[1, 0])})
    with rasdf.open(out) as af:
        assert af["mm"][...].tolist() == [1, 2, 3]
        assert af["ma"][...].mask.tolist() == [True, False]


def test_without_asdf_other_objects_are_refused_by_type_and_path(tmp_path):
    script = (
        "import sys; sys.modules['asdf'] = None\n"
        "import fractions, numpy as np, rasdf\n"
        "class Sub(np.ndarray): pass\n"
        "for v in (fractions.Fraction(1, 3), np.arange(2).view(Sub)):\n"
        "    try:\n"
        "        rasdf.write(sys.argv[1], {'m': {'x': v}})\n"
        "    except TypeError as e:\n"
        "        print(e)\n"
        "rasdf.write(sys.argv[1], {'ok': np.arange(3), 'n': np.int16(3)})\n"
        "print(rasdf.open(sys.argv[1]).tree['n'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "y.asdf")], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "fractions.Fraction" in lines[0] and "(at /m/x)" in lines[0] and "not importable" in lines[0], lines
    assert "Sub" in lines[1] and "(at /m/x)" in lines[1], lines
    assert lines[2] == "3"


def test_asdf_files_objects_and_tagged_types(tmp_path):
    """asdf's AsdfFile and its tree (an AsdfObject, a UserDict whose dict part is empty),
    asdf's TaggedDict/TaggedList/TaggedString (UserDict, UserList), any Mapping."""
    from collections import UserDict
    from types import MappingProxyType

    from asdf.tagged import TaggedDict, TaggedList, TaggedString

    made = asdf.AsdfFile(
        {
            "a": 1,
            "arr": np.arange(4.0),
            "t": TaggedDict({"k": [1, 2]}, "tag:example.org/thing-1.0.0"),
            "l": TaggedList([1, "x"], "tag:example.org/list-1.0.0"),
            "s": TaggedString("text"),
            "u": UserDict({"x": 1}),
            "p": MappingProxyType({"y": 2}),
        }
    )
    made.tree["s"]._tag = "tag:example.org/str-1.0.0"
    for given in (made, made.tree):
        out = tmp_path / "o.asdf"
        rasdf.write(out, given)
        with rasdf.open(out) as af:
            tree = af.tree
            assert tree["a"] == 1 and tree["arr"][...].tolist() == [0, 1, 2, 3]
            assert tree["t"].tag == "tag:example.org/thing-1.0.0" and tree["t"]["k"] == [1, 2]
            assert tree["l"].tag == "tag:example.org/list-1.0.0" and list(tree["l"]) == [1, "x"]
            assert tree["s"].tag == "tag:example.org/str-1.0.0" and tree["s"] == "text"
            assert tree["u"] == {"x": 1} and tree["p"] == {"y": 2}


def test_lazy_arrays_keep_their_codec(tmp_path):
    src = tmp_path / "src.asdf"
    rasdf.write(
        src, {"z": np.arange(1000.0), "l": np.arange(1000), "b": np.ones(100), "n": np.zeros(3)},
        compression={"z": "zlib", "l": "lz4", "b": "bzp2"},
    )
    codecs = lambda p: [b[0] for b in rasdf.open(p).blocks()]  # noqa: E731
    assert codecs(src) == ["zlib", "lz4", "bzp2", "none"]
    with rasdf.open(src) as af:
        rasdf.write(tmp_path / "copy.asdf", af)
        rasdf.write(tmp_path / "tree.asdf", af.tree)
        rasdf.write(tmp_path / "none.asdf", af, compression="none")
        rasdf.write(tmp_path / "one.asdf", af, compression={"l": None, "n": "zlib"})
    assert codecs(tmp_path / "copy.asdf") == codecs(tmp_path / "tree.asdf") == ["zlib", "lz4", "bzp2", "none"]
    assert codecs(tmp_path / "none.asdf") == ["none"] * 4
    assert codecs(tmp_path / "one.asdf") == ["zlib", "none", "bzp2", "zlib"]
    # asdf's lazy arrays, through its AsdfFile: their block's codec too.
    with asdf.open(src, lazy_load=True, memmap=False) as af:
        rasdf.write(tmp_path / "from_asdf.asdf", af)
    assert codecs(tmp_path / "from_asdf.asdf") == ["zlib", "lz4", "bzp2", "none"]
    with rasdf.open(tmp_path / "from_asdf.asdf") as af:
        assert af["l"][...].tolist() == list(range(1000))


def test_compression_paths_must_name_arrays(tmp_path):
    out = tmp_path / "c.asdf"
    shared = np.arange(3)
    tree = {"a": shared, "b": {"c": shared}, "x": 1}
    rasdf.write(out, tree, compression={"b/c": "zlib"})
    for bad in ("nowhere", "x", "b"):
        with pytest.raises(ValueError, match=f"/{bad}\\b"):
            rasdf.write(tmp_path / "d.asdf", tree, compression={"a": "zlib", bad: "lz4"})
        assert not (tmp_path / "d.asdf").exists()


def test_asdf_library_names_rasdf_and_history_is_kept(tmp_path):
    src = TESTDATA / "oldasdf" / "v1.5.0_zlib.asdf"
    with asdf.open(src) as af:
        entries = af.get_history_entries()
        extensions = af.tree["history"].get("extensions")
    with rasdf.open(src) as af:
        rasdf.write(tmp_path / "copy.asdf", af)
    with asdf.open(tmp_path / "copy.asdf") as af:
        assert af.tree["asdf_library"]["name"] == "rasdf"
        assert af.get_history_entries() == entries
        assert af.tree["history"].get("extensions") == extensions
