"""rasdf.write: every kind of value and array, read back the same by rasdf and by the
reference library; compression; atomic replacement; refusals."""

import datetime
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import rasdf
from conftest import require

asdf = require("asdf")

BIG = 2**70


def arrays():
    base = np.arange(60, dtype="f8").reshape(6, 10)
    rec = np.array(
        [(1, 2.5, b"ab", "x", [1, 2]), (3, -1.0, b"cdef", "yz\u00e9", [3, 4])],
        dtype=[("i", "<i4"), ("f", ">f8"), ("s", "S4"), ("u", "<U3"), ("v", "<i2", (2,))],
    )
    return {
        "f4": np.linspace(0, 1, 12, dtype="f4").reshape(3, 4),
        "f2": np.array([1.5, -2, np.inf], dtype="f2"),
        "f8_big": np.arange(5, dtype=">f8"),
        "i1": np.array([-128, 0, 127], dtype="i1"),
        "u8": np.array([0, 2**64 - 1], dtype="u8"),
        "i2_big": np.array([1, -2, 300], dtype=">i2"),
        "c8": np.array([1 + 2j, -3.5j], dtype="c8"),
        "c16_big": np.array([1e300 + 1j], dtype=">c16"),
        "bool": np.array([[True, False], [False, True]]),
        "bytes": np.array([b"a", b"bcd", b""], dtype="S3"),
        "unicode": np.array(["\u00e9t\u00e9", "x"], dtype="<U4"),
        "unicode_big": np.array(["ab", "c"], dtype=">U2"),
        "record": rec,
        "view_strided": base[::2, 1::3],
        "view_transposed": base.T,
        "view_reversed": base[::-1],
        "scalar0d": np.array(3.25),
        "empty": np.zeros((0, 3), dtype="i4"),
        "nan": np.array([np.nan, 1.0]),
        "masked": np.ma.array([1.0, 2.0, 3.0], mask=[False, True, False]),
        "masked_2d": np.ma.masked_greater(np.arange(6).reshape(2, 3), 3),
    }


def tree():
    return {
        "none": None,
        "yes": True,
        "int": -7,
        "big": BIG,
        "negbig": -BIG,
        "float": 1.5,
        "nan": float("nan"),
        "inf": float("-inf"),
        "str": "h\u00e9llo\nworld",
        "tricky": ["yes", "null", "1e3", "0x1F", "", " x ", "~", "2001-01-01"],
        "bytes": b"\x00\xffbin",
        "complex": 1 + 2j,
        "imag": -1.5j,
        "date": datetime.date(2024, 2, 29),
        "datetime": datetime.datetime(2001, 12, 14, 21, 59, 43, 100000),
        "tuple": (1, "two"),
        "nested": {"a": [{"b": [1, [2, [3]]]}], 5: "int key", "x/y~z": "escaped"},
        "tagged": rasdf.TaggedDict({"unit": "m"}, tag="tag:astropy.org:astropy/units/quantity-1.1.0"),
        "tagged_str": rasdf.TaggedString("m", tag="tag:stsci.edu:asdf/unit/unit-1.0.0"),
        "tagged_list": rasdf.TaggedList([1, 2], tag="tag:example.org/list-1.0.0"),
        "omap": OrderedDict([("z", 1), ("a", 2)]),
        "npscalar": np.float32(0.5),
        "npint": np.int64(42),
        "arrays": arrays(),
    }


def same(a, b):
    if isinstance(a, np.ma.MaskedArray) or isinstance(b, np.ma.MaskedArray):
        assert isinstance(a, np.ma.MaskedArray) and isinstance(b, np.ma.MaskedArray)
        assert np.array_equal(np.ma.getmaskarray(a), np.ma.getmaskarray(b))
        assert np.array_equal(a.filled(0), b.filled(0))
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")


def check_values(ours, ref, path=""):
    """`ours` (what a reader gave back) holds `ref` (what was written)."""
    if isinstance(ref, (np.ndarray, np.ma.MaskedArray)):
        got = ours.read() if isinstance(ours, rasdf.NDArray) else ours
        if not isinstance(got, np.ndarray):
            got = got._make_array()  # the reference's lazy NDArrayType
        same(got, ref)
    elif isinstance(ref, dict):
        keys = [str(k) for k in ours.keys() if path or k not in ("asdf_library", "history")]
        assert keys == list(map(str, ref.keys())), path
        for k in ref:
            check_values(ours[k], ref[k], f"{path}/{k}")
    elif isinstance(ref, (list, tuple)):
        assert len(ours) == len(ref), path
        for i, (x, y) in enumerate(zip(ours, ref)):
            check_values(x, y, f"{path}/{i}")
    elif isinstance(ref, float) and ref != ref:
        assert ours != ours, path
    elif isinstance(ref, np.generic):
        assert ours == ref.item(), path
    else:
        assert ours == ref, path
        if isinstance(ref, str):
            assert str(ours) == str(ref)


@pytest.mark.parametrize("compression", [None, "zlib", "bzp2", "lz4", "zstd", "blsc"])
def test_round_trip_rasdf_and_reference(tmp_path, compression):
    if compression in ("zstd", "blsc"):
        # The reference reads them with the asdf-compression plugin.
        require("asdf_compression")
    path = tmp_path / "out.asdf"
    t = tree()
    rasdf.write(path, t, compression=compression)
    with rasdf.open(path) as af:
        check_values(af.tree, t)
        assert af.tree["tagged"].tag == "tag:astropy.org:astropy/units/quantity-1.1.0"
        assert af.tree["tagged_str"].tag == "tag:stsci.edu:asdf/unit/unit-1.0.0"
        assert af.tree["tagged_list"].tag == "tag:example.org/list-1.0.0"
        labels = {c for c, *_ in af.blocks()}
        assert labels == ({"none"} if compression is None else {compression})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with asdf.open(path, lazy_load=False, memmap=False) as ref:
            expected = {k: v for k, v in t.items() if not k.startswith("tagged")}
            check_values({k: ref.tree[k] for k in expected}, expected)
            assert ref.tree["tagged"]._tag == "tag:astropy.org:astropy/units/quantity-1.1.0"


def test_per_path_compression(tmp_path):
    path = tmp_path / "out.asdf"
    rasdf.write(
        path,
        {"a": np.zeros(1000), "b": {"c": np.ones(1000)}, "d": np.arange(10)},
        compression={"a": "zlib", "b/c": "lz4"},
    )
    with rasdf.open(path) as af:
        labels = [b[0] for b in af.blocks()]
        assert sorted(labels) == sorted(["zlib", "lz4", "none"]), labels
        assert af["b/c"][...].sum() == 1000


def test_reference_reads_shared_objects(tmp_path):
    shared = {"k": [1, 2]}
    arr = np.arange(4)
    path = tmp_path / "shared.asdf"
    rasdf.write(path, {"a": shared, "b": shared, "x": arr, "y": arr})
    with rasdf.open(path) as af:
        assert af.tree["a"] is af.tree["b"]
        assert af.tree["x"] is af.tree["y"]
    with asdf.open(path) as ref:
        assert ref.tree["a"] == shared
        assert np.array_equal(ref.tree["y"], arr)


def test_write_a_file_read_by_rasdf(tmp_path):
    src = tmp_path / "src.asdf"
    rasdf.write(src, {"sci": np.arange(100, dtype="u2").reshape(10, 10), "meta": {"k": "v"}}, compression="zlib")
    with rasdf.open(src) as af:
        rasdf.write(tmp_path / "copy.asdf", af)
    with rasdf.open(tmp_path / "copy.asdf") as copy:
        assert copy["meta/k"] == "v"
        same(copy["sci"][...], np.arange(100, dtype="u2").reshape(10, 10))


def test_items_of_no_bytes_are_written_as_read(tmp_path):
    """An array of zero-size items (`[ascii, 0]`, `[ucs4, 0]`, a record of an empty
    field), a view into a block, is written with its datatype: numpy's copies would
    widen `S0` and `U0` to one character."""
    import hashlib
    import struct

    data = bytes(range(64))
    block = b"\xd3BLK" + struct.pack(">HI4sQQQ", 48, 0, b"\0" * 4, 64, 64, 64) + hashlib.md5(data).digest() + data
    tree = "".join(
        f"{name}: !core/ndarray-1.1.0 {{source: 0, datatype: {dt}, byteorder: big, shape: [2, 3], offset: 8, strides: [16, 4]}}\n"
        for name, dt in (("s", "[ascii, 0]"), ("u", "[ucs4, 0]"), ("r", "[{name: a, datatype: int8, shape: [0]}]"))
    )
    src = tmp_path / "zero.asdf"
    src.write_bytes(
        b"#ASDF 1.0.0\n#ASDF_STANDARD 1.6.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n"
        + tree.encode() + b"...\n" + block
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with asdf.open(src) as ref:
            want = {k: np.asarray(ref[k]) for k in "sur"}
    assert [want[k].dtype.itemsize for k in "sur"] == [0, 0, 0]
    with rasdf.open(src) as af:
        for k in "sur":
            assert af[k][...].dtype == want[k].dtype and af[k].shape == (2, 3)
        for target in (af, af.tree):
            out = tmp_path / "copy.asdf"
            rasdf.write(out, target)
            with rasdf.open(out) as copy:
                for k in "sur":
                    assert copy[k][...].dtype == want[k].dtype and copy[k].shape == (2, 3), k
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with asdf.open(out) as ref:
                    for k in "sur":
                        assert np.asarray(ref[k]).dtype == want[k].dtype, k


@pytest.mark.parametrize(
    "value,why",
    [
        (np.datetime64("2020-01-01T00:00:00.123456789"), "numpy.datetime64"),
        (np.datetime64("NaT"), "numpy.datetime64"),
        (np.datetime64("20000-01-01"), "numpy.datetime64"),
        (np.timedelta64(5, "ns"), "numpy.timedelta64"),
        (np.zeros(1, dtype=[("a", "i4"), ("b", "f8")])[0], "numpy.void"),
        (np.longdouble(1) + np.longdouble(2) ** -60, "longdouble"),
        (np.clongdouble(1) + np.longdouble(2) ** -60, "clongdouble"),
        (np.zeros(3, dtype=np.longdouble), "float128"),
        (np.array([1, "a"], dtype=object), "object"),
        (np.array(["2020-01-01"], dtype="datetime64[D]"), "datetime64"),
    ],
)
def test_numpy_values_no_asdf_type_holds_are_refused_naming_the_path(tmp_path, value, why):
    """A numpy scalar or array no ASDF value holds exactly is refused with a TypeError
    naming it and its tree path: never written as something else (numpy's ``item()``
    makes a date a bare int, NaT None, a record a list)."""
    with pytest.raises(TypeError, match=rf"{why}.*\(at /x/1/a\)"):
        rasdf.write(tmp_path / "out.asdf", {"x": [1, {"a": value}]})
    assert list(tmp_path.iterdir()) == []


def test_numpy_scalars_a_python_value_holds_exactly_are_written_as_it(tmp_path):
    """numpy scalars are written as the Python value they hold (a long double too, when
    a float holds it exactly), as the reference writes them; errors of reading a lazy
    array while writing stay AsdfErrors."""
    tree = {"b": np.bool_(True), "i": np.int16(-3), "u": np.uint64(2**64 - 1), "f": np.float32(0.5),
            "h": np.float16(1.5), "c": np.complex64(1 + 2j), "s": np.str_("x"), "y": np.bytes_(b"z"),
            "ld": np.longdouble(1.5)}
    path = tmp_path / "s.asdf"
    rasdf.write(path, tree)
    with asdf.open(path) as af:
        assert [af[k] for k in tree] == [True, -3, 2**64 - 1, 0.5, 1.5, 1 + 2j, "x", b"z", 1.5]
    src = tmp_path / "src.asdf"
    rasdf.write(src, {"a": np.arange(10)})
    with rasdf.open(src) as af:
        src.write_bytes(src.read_bytes()[:-200])
        with pytest.raises(rasdf.AsdfError, match="since it was opened"):
            rasdf.write(tmp_path / "copy.asdf", af.tree)


def test_writes_through_a_symlink_replace_what_it_leads_to(tmp_path):
    """rasdf.write and update() to a symbolic link write the file it leads to, as
    writing through the link would; the link stays a link."""
    import os

    target = tmp_path / "data" / "target.asdf"
    target.parent.mkdir()
    rasdf.write(target, {"v": 1})
    link = tmp_path / "link.asdf"
    os.symlink(os.path.join("data", "target.asdf"), link)
    rasdf.write(link, {"v": 2, "a": np.arange(3)})
    assert link.is_symlink()
    with asdf.open(target) as af:
        assert af["v"] == 2
    with rasdf.open(link, mode="rw") as af:
        af.tree["v"] = 3
        af.update()
    assert link.is_symlink()
    with rasdf.open(target) as af:
        assert af["v"] == 3 and list(af["a"][...]) == [0, 1, 2]
    assert sorted(p.name for p in target.parent.iterdir()) == ["target.asdf"]


def test_replaces_atomically_and_refuses_cleanly(tmp_path):
    path = tmp_path / "out.asdf"
    rasdf.write(path, {"v": 1})
    before = path.read_bytes()
    for bad in ({"v": object()}, {"v": np.array([1, 2], dtype=object)}, {"v": np.array(["2020"], dtype="M8[D]")}):
        with pytest.raises(TypeError):
            rasdf.write(path, bad)
        assert path.read_bytes() == before
    cyclic = {"v": []}
    cyclic["v"].append(cyclic["v"])
    with pytest.raises(TypeError, match="itself"):
        rasdf.write(path, cyclic)
    with pytest.raises(TypeError, match="mapping"):
        rasdf.write(path, [1, 2])
    with pytest.raises(ValueError, match="compression"):
        rasdf.write(path, {"a": np.zeros(3)}, compression="gzip")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.asdf"]
    with pytest.raises(FileNotFoundError):
        rasdf.write(tmp_path / "no" / "such" / "dir.asdf", {"v": 1})
