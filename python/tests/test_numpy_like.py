"""Lazy arrays act as the numpy arrays they hold, as the reference's (asdf 6.0.0's
NDArrayType) do: operators, ufuncs, numpy functions, methods and attributes, truth
value; masked nodes convert and reduce as the reference's; writable copies on request
(``copy_arrays=True``); shape, dtype and sizes without decoding."""

import copy
import pickle
import warnings

import numpy as np
import pytest

import rasdf
from conftest import TESTDATA, require

ARRAYS = TESTDATA / "pyasdf" / "arrays"


def reference(path):
    asdf = require("asdf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return asdf.open(path, lazy_load=True, memmap=False)


def ref_node(ref, path):
    node = ref.tree
    for step in path.split("/"):
        node = node[int(step)] if isinstance(node, list) else node[step]
    return node


def same(got, want):
    """Equal values of the same kind: numpy arrays (masks too), numpy scalars, Python
    values."""
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, np.ma.MaskedArray):
        assert np.array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(want))
        got, want = got.filled(0), want.filled(0)
    if isinstance(want, (np.ndarray, np.generic)):
        assert got.dtype == want.dtype and np.shape(got) == np.shape(want)
        assert np.array_equal(got, want, equal_nan=want.dtype.kind in "fc")
    elif isinstance(want, float) and want != want:
        assert got != got
    else:
        assert got == want


# What a numpy user writes, each run on rasdf's node and on the reference's.
NUMERIC = {
    "eq": lambda a: a == 0,
    "ne": lambda a: a != 0,
    "gt": lambda a: a > 1,
    "le": lambda a: a <= 1,
    "add": lambda a: a + 1,
    "radd": lambda a: 1 + a,
    "sub": lambda a: a - 1,
    "mul": lambda a: a * 2,
    "rtruediv": lambda a: 1.0 / (a + 10),
    "pow": lambda a: a**2,
    "neg": lambda a: -a,
    "abs": lambda a: abs(a),
    "self": lambda a: a + a,
    "T": lambda a: a.T,
    "astype": lambda a: a.astype("f8"),
    "copy": lambda a: a.copy(),
    "reshape": lambda a: a.reshape(-1),
    "flatten": lambda a: a.flatten(),
    "ravel": lambda a: a.ravel(),
    "nbytes": lambda a: a.nbytes,
    "itemsize": lambda a: a.itemsize,
    "shape": lambda a: a.shape,
    "ndim": lambda a: a.ndim,
    "size": lambda a: a.size,
    "mean": lambda a: a.mean(),
    "sum": lambda a: a.sum(),
    "min": lambda a: a.min(),
    "max": lambda a: a.max(),
    "std": lambda a: a.std(),
    "any": lambda a: a.any(),
    "all": lambda a: a.all(),
    "tolist": lambda a: a.tolist(),
    "np.mean": lambda a: np.mean(a),
    "np.sum": lambda a: np.sum(a),
    "np.max": lambda a: np.max(a),
    "np.add": lambda a: np.add(a, 1),
    "np.sqrt": lambda a: np.sqrt(np.abs(a)),
    "np.asarray": lambda a: np.asarray(a),
    "np.array": lambda a: np.array(a),
    "np.where": lambda a: np.where(a > 1, a, 0),
    "np.clip": lambda a: np.clip(a, 0, 3),
    "np.isfinite": lambda a: np.isfinite(a),
    "list": lambda a: [np.asarray(x).tolist() for x in a] if np.ndim(a) else None,
    "len": lambda a: len(a) if np.ndim(a) else None,
    "in": lambda a: 3 in a,
    "getitem": lambda a: a[...],
    "bool mask": lambda a: a[a > 1],
}


def numeric_arrays(path):
    with rasdf.open(path) as af:
        return [p for p, a in af.arrays().items() if a.dtype.kind in "iuf" and a.dtype.fields is None]


CASES = [(ARRAYS / "views_masks.asdf", p) for p in numeric_arrays(ARRAYS / "views_masks.asdf")] + [
    (TESTDATA / "example.asdf", p) for p in ("sci/data", "sci/dq", "sci/err")
]


@pytest.mark.parametrize("path,node", CASES, ids=[f"{p.name}:{n}" for p, n in CASES])
def test_acts_as_the_references_array(path, node):
    ref = reference(path)
    with rasdf.open(path) as af:
        for name, f in NUMERIC.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # empty means, 1/0
                try:
                    want = f(ref_node(ref, node))
                except Exception as e:  # noqa: BLE001 - rasdf must fail the same way
                    with pytest.raises(type(e)):
                        f(af[node])
                    continue
                got = f(af[node])
            try:
                same(got, want)
            except AssertionError as e:
                raise AssertionError(f"{node}: {name}: {got!r} != {want!r}") from e


def test_the_issues_examples():
    """`af["dq"] == 0` selects pixels: `sci[...][dq == 0]` is not silently empty."""
    with rasdf.open(TESTDATA / "example.asdf") as af:
        sci, dq = af["sci/data"], af["sci/dq"]
        good = dq == 0
        assert isinstance(good, np.ndarray) and good.dtype == bool and good.shape == (64, 64)
        assert sci[...][good].size == int(np.count_nonzero(dq[...] == 0)) > 0
        assert np.array_equal(sci[good], sci[...][good])
        assert np.array_equal(sci + sci, 2 * sci[...])
        assert sci.T.shape == (64, 64) and sci.astype("f8").dtype == np.float64
        assert sci.copy().flags.writeable and sci.reshape(4096).shape == (4096,)
        assert sci.nbytes == 64 * 64 * 4


def test_truth_value_hash_and_identity():
    with rasdf.open(ARRAYS / "views_masks.asdf") as af:
        base = af["base"]
        with pytest.raises(ValueError, match="ambiguous"):
            bool(base)
        with pytest.raises(ValueError, match="ambiguous"):
            if base == base:
                pass
        with pytest.raises(TypeError):
            hash(base)
        zero_d = af["zero_d"]
        assert bool(zero_d) == bool(zero_d[...]) and float(zero_d) == float(zero_d[...])
        assert isinstance(base, rasdf.NDArray)  # still the lazy node in the tree
        assert af["base"] is base


def test_numpy_functions_take_nodes_in_lists_and_keywords():
    with rasdf.open(ARRAYS / "views_masks.asdf") as af:
        a, b = af["base"], af["reversed"]
        assert np.array_equal(np.concatenate([a, b]), np.concatenate([a[...], b[...]]))
        assert np.array_equal(np.stack((a, a)), np.stack((a[...], a[...])))
        out = np.empty(a.shape, "f8")
        np.add(a, b, out=out)
        assert np.array_equal(out, a[...] + b[...])
        assert np.array_equal(np.where(a > 3, a, b), np.where(a[...] > 3, a[...], b[...]))
        assert np.array_equal(np.sum(a, axis=0, where=a > 3), np.sum(a[...], axis=0, where=a[...] > 3))
        assert np.allclose(np.dot(a, a.T), a[...] @ a[...].T) and np.array_equal(a @ a.T, a[...] @ a[...].T)


def test_arguments_shared_or_holding_themselves_are_loaded_once():
    """The lists and dicts handed to numpy with lazy arrays in them are copied with each
    container once: one reached by 2^60 paths in linear time, one inside itself kept
    inside its copy (numpy then refuses it as it refuses the plain list)."""
    with rasdf.open(ARRAYS / "views_masks.asdf") as af:
        a = af["base"]
        shared = [a, a]
        for _ in range(60):
            shared = [shared, shared]
        loaded = rasdf._loaded(shared)
        assert loaded[0] is loaded[1] and isinstance(loaded[0][0], list)
        inner = loaded
        for _ in range(60):
            inner = inner[0]
        assert type(inner[0]) is np.ndarray and inner[0] is inner[1]
        looped = [a]
        looped.append(looped)
        copied = rasdf._loaded({"x": looped, "y": (looped,)})
        assert copied["x"][1] is copied["x"] and copied["y"][0] is copied["x"]
        assert np.array_equal(copied["x"][0], a[...])
        with pytest.raises((ValueError, RecursionError, TypeError)):
            np.concatenate(looped)


def test_attributes_fall_back_to_the_data_and_are_listed():
    with rasdf.open(ARRAYS / "views_masks.asdf") as af:
        a = af["base"]
        assert "astype" in dir(a) and "cumsum" in dir(a) and "to_dask" in dir(a)
        assert np.array_equal(a.cumsum(), a[...].cumsum())
        assert a.flags.c_contiguous == a[...].flags.c_contiguous
        assert a.strides == a[...].strides
        with pytest.raises(AttributeError):
            a.no_such_attribute  # noqa: B018
        with pytest.raises(AttributeError):
            a.__array_interface__  # noqa: B018 - numpy converts through __array__


def test_shape_dtype_and_sizes_need_no_decoding():
    with rasdf.open(ARRAYS / "dtypes_zlib.asdf") as af:
        for p, a in af.arrays().items():
            a.shape, a.dtype, a.ndim, a.size, a.nbytes, a.itemsize, len(a) if a.shape else None  # noqa: B018
            assert a._array is None, p  # nothing decoded
            assert "unloaded" in repr(a) and "unloaded" in str(a)
            assert a.nbytes == a[...].nbytes and a.itemsize == a[...].itemsize
            assert repr(a) == repr(a[...])  # once loaded, shown as the data (as the reference)


def test_masked_nodes_convert_and_reduce_as_the_reference():
    """np.asarray(node) is the data without the mask, np.mean(node) and node.mean() leave
    the masked elements out, as the reference's nodes do (the fill value is never
    averaged in); every masked array of the test data, inline nulls included."""
    checked = 0
    for path in sorted(TESTDATA.rglob("*.asdf")):
        raw = path.read_bytes()
        if b"mask:" not in raw and b"null" not in raw:
            continue
        try:
            ref = reference(path)
            af = rasdf.open(path)
        except Exception:  # noqa: BLE001 - files either refuses: not this test's
            continue
        with af:
            for p, node in af.arrays().items():
                try:
                    data = node.read()
                    want_node = ref_node(ref, p)
                    want = np.asarray(want_node)
                except Exception:  # noqa: BLE001
                    continue
                if not isinstance(data, np.ma.MaskedArray):
                    continue
                checked += 1
                got = np.asarray(node)
                assert type(got) is np.ndarray and got.dtype == want.dtype, p
                assert np.array_equal(got, want, equal_nan=want.dtype.kind in "fc"), (path, p)
                if want.dtype.kind in "iuf":
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        m, w = np.mean(node), np.mean(want_node)
                    assert (m is np.ma.masked and w is np.ma.masked) or np.isclose(m, w, equal_nan=True), (path, p)
                    assert np.isclose(node.mean(), m, equal_nan=True) or m is np.ma.masked
    assert checked >= 10, checked


MA_FUNCTIONS = {
    "getmask": np.ma.getmask,
    "getmaskarray": np.ma.getmaskarray,
    "is_masked": np.ma.is_masked,
    "array": np.ma.array,
    "asarray": np.ma.asarray,
    "mean": np.ma.mean,
    "sum": np.ma.sum,
    "count": np.ma.count,
    "compressed": np.ma.compressed,
    "filled": lambda a: np.ma.filled(a, 0),
    "concatenate": lambda a: np.ma.concatenate([a, a]),
    "masked_equal": lambda a: np.ma.masked_equal(a, 0),
    "fix_invalid": np.ma.fix_invalid,
    "allequal": lambda a: np.ma.allequal(a, a),
}


def test_numpy_ma_functions_see_the_mask_of_a_node():
    """numpy.ma's functions take a node as they take its array: a masked node's mask
    (ASDF mask or inline nulls), none on a node that is not masked. (numpy.ma reads any
    object's ``_mask`` attribute: the lazy array once kept its own, different, thing
    there, and masked means came out with the masked values averaged in.)"""
    import io

    tree = {
        "plain": np.array([1.0, 2.0, 3.0]),
        "ints": np.arange(6, dtype="i2").reshape(2, 3),
        "masked": np.ma.masked_array([1.0, 2.0, 30.0, np.nan], mask=[0, 0, 1, 0]),
        "all_masked": np.ma.masked_array([5, 6], mask=[1, 1]),
    }
    buf = io.BytesIO()
    rasdf.write(buf, tree)
    inline = TESTDATA / "pyasdf" / "arrays"
    files = [io.BytesIO(buf.getvalue())] + sorted(p for p in inline.glob("*.asdf") if b"null" in p.read_bytes() or b"mask:" in p.read_bytes())
    seen = {"masked": 0, "plain": 0}
    for f in files:
        with rasdf.open(f) as af:
            for p, node in af.arrays().items():
                try:
                    data = node.read()
                except Exception:  # noqa: BLE001 - a node the file cannot give: not this test's
                    continue
                if data.dtype.kind not in "biuf" or data.ndim == 0:
                    continue
                seen["masked" if isinstance(data, np.ma.MaskedArray) else "plain"] += 1
                for name, fn in MA_FUNCTIONS.items():
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        want, got = fn(data), fn(node)
                    assert type(got) is type(want), (p, name, type(got), type(want))
                    if isinstance(want, np.ma.MaskedArray):
                        assert np.array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(want)), (p, name)
                        got, want = got.filled(0), want.filled(0)
                    assert np.array_equal(got, want, equal_nan=True), (p, name, got, want)
    assert seen["masked"] >= 4 and seen["plain"] >= 2, seen


def test_the_issues_masked_mean():
    """A masked array whose fill value is 1e20: its mean is the unmasked elements'."""
    with rasdf.open(ARRAYS / "views_masks.asdf") as af:
        m = af["masked"]
        assert m.masked and isinstance(m[...], np.ma.MaskedArray)
        expected = m[...].compressed().mean()
        assert np.mean(m) == expected == m.mean()
        assert abs(np.mean(m)) < 1e6


def test_arrays_are_read_only_views_by_default():
    with rasdf.open(TESTDATA / "example.asdf") as af:
        a = af["sci/data"]
        with pytest.raises(ValueError, match="read-only"):
            a[0, 0] = 1
        with pytest.raises(ValueError, match="read-only"):
            a += 1
        assert not a.flags.writeable


def test_copy_arrays_gives_writable_copies(tmp_path):
    p = tmp_path / "w.asdf"
    data = np.arange(12, dtype=">i4").reshape(3, 4)
    rasdf.write(p, {"a": data, "z": np.arange(6.0), "m": np.ma.masked_equal(np.arange(5), 2)}, compression={"z": "zlib"})
    with rasdf.open(p, copy_arrays=True) as af:
        a = af["a"]
        assert a[...].flags.writeable and a[...].dtype == data.dtype
        a[0, 0] = 100
        a += 1
        assert af["a"] is a and a[0, 0] == 101 and a[0:1][0, 0] == 101  # rows from the copy
        z = af["z"]
        z[1] = -5
        assert z[...][1] == -5
        m = af["m"]
        m[0] = np.ma.masked  # the mask is writable too
        assert m[...].mask.tolist() == [True, False, True, False, False]
        out = tmp_path / "out.asdf"
        af.write_to(out)
    with rasdf.open(out) as back:
        assert back["a"][0, 0] == 101 and back["a"][1, 0] == 5 and back["z"][1] == -5
        assert back["m"][...].mask.tolist() == [True, False, True, False, False]
    # the file itself is unchanged
    with rasdf.open(p) as af:
        assert af["a"][0, 0] == 0


def test_pickle_and_copies_give_the_data():
    with rasdf.open(TESTDATA / "example.asdf") as af:
        a = af["sci/err"]
        # as numpy pickles and copies the data
        pickled = pickle.loads(pickle.dumps(a))
        assert pickled.dtype == pickle.loads(pickle.dumps(a[...])).dtype
        for c in (pickled, copy.copy(a), copy.deepcopy(a)):
            assert type(c) is np.ndarray and np.array_equal(c, a[...])
        assert copy.copy(a).dtype == copy.deepcopy(a).dtype == a.dtype
        assert copy.deepcopy(a).flags.writeable
        tree = copy.deepcopy(af.tree)
        assert type(tree["sci"]["err"]) is np.ndarray


def test_in_place_and_setitem_need_copies_and_keep_the_node(tmp_path):
    p = tmp_path / "w.asdf"
    rasdf.write(p, {"a": np.zeros(4)})
    with rasdf.open(p, copy_arrays=True) as af:
        node = af["a"]
        af.tree["a"] += 2
        assert af.tree["a"] is node
        node[1:3] = [5, 6]
        assert node.tolist() == [2, 5, 6, 2]


def test_arrays_read_are_aligned_and_round_as_numpy(tmp_path):
    """Arrays of a file read whole at open (its blocks at any byte offset) are aligned,
    read-only, as the reference's reads are (a misaligned one is slower in numpy and its
    matrix products round otherwise); round() acts as on the data."""
    data = np.linspace(0, 1, 64).reshape(8, 8)
    for pad in range(8):
        path = tmp_path / f"p{pad}.asdf"
        rasdf.write(path, {"pad": "x" * pad, "a": data, "c": data.astype("c16"), "i": np.arange(5, dtype="i4")})
        with rasdf.open(path) as af:
            for k in ("a", "c", "i"):
                got = af[k][...]
                assert got.flags.aligned and not got.flags.writeable, (pad, k)
            assert np.array_equal(af["a"] @ af["a"], data @ data), pad
    with rasdf.open(tmp_path / "p0.asdf") as af:
        with pytest.raises(TypeError):
            round(af["a"])
        assert round(af["a"][0, 1], 3) == round(data[0, 1], 3)


def test_compression_levels_out_of_range_are_refused():
    import io

    for level in (-1, 0, 10, 2**40, 2**70):
        with pytest.raises(rasdf.AsdfError, match="take levels 1 to 9"):
            rasdf.write(io.BytesIO(), {"a": np.zeros(3)}, compression="zlib", compression_level=level)
