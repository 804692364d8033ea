"""The reading API: the tree, paths, lazy arrays, zero copy, errors, limits, threads."""

import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

import rasdf
from conftest import TESTDATA

ARRAYS = TESTDATA / "pyasdf" / "arrays"


def test_tree_types(example):
    with rasdf.open(example) as af:
        tree = af.tree
        assert isinstance(tree, rasdf.TaggedDict)
        assert tree.tag == "tag:stsci.edu:asdf/core/asdf-1.1.0"
        assert tree["asdf_library"].tag.startswith("tag:stsci.edu:asdf/core/software-")
        assert af["asdf_library/name"] == "asdf"
        assert af["/sci/data"] is tree["sci"]["data"]
        assert "sci/data" in af and "sci/nothing" not in af
        with pytest.raises(KeyError):
            af["sci/nothing"]


def test_pairs_are_lists_of_tuples():
    """`!!pairs` as PyYAML makes it: a list of (key, value) tuples; `!!omap` an OrderedDict."""
    import collections

    with rasdf.open(TESTDATA / "yaml" / "omap_pairs.asdf") as af:
        pairs = af.tree["p"]
        assert type(pairs) is list and pairs and all(type(p) is tuple and len(p) == 2 for p in pairs)
        assert pairs[0] == ("a", 1)
        assert any(type(v) is collections.OrderedDict for v in af.tree.values())


def test_lazy_arrays(example):
    with rasdf.open(example) as af:
        arrays = af.arrays()
        assert list(arrays) == ["catalog", "sci/data", "sci/dq", "sci/err"]
        data = arrays["sci/data"]
        assert data is af["sci/data"]
        assert isinstance(data, rasdf.NDArray)
        assert (data.shape, data.ndim, len(data), data.size) == ((64, 64), 2, 64, 4096)
        assert data.dtype == np.dtype("float32")
        assert data.tag.startswith("tag:stsci.edu:asdf/core/ndarray-")
        assert "unloaded" in repr(data)
        values = data[...]
        assert isinstance(values, np.ndarray) and values.shape == (64, 64)
        assert np.array_equal(np.asarray(data), values)
        assert np.array_equal(data[10:20], values[10:20])
        assert data.read() is data.read()  # read once, cached
        # big-endian data keeps its byte order, as the reference gives it
        err = af["sci/err"]
        assert err.dtype == np.dtype(">f8") and err[...].dtype == np.dtype(">f8")
        cat = af["catalog"][...]
        assert cat.dtype.names == ("id", "mag", "kind")
        assert cat["kind"].tolist() == [b"star", b"galaxy"]


def test_zero_copy_view_valid_after_close(example):
    af = rasdf.open(example)
    values = af["sci/data"][...]
    total = float(values.sum())
    assert not values.flags.writeable
    # the view's buffer is the file's own bytes, kept alive by the file's keeper
    assert type(values.base.base).__name__ == "Keep"
    with pytest.raises(ValueError):
        values[0, 0] = 1
    unread = af["sci/dq"]
    af.close()
    assert af.closed
    assert float(values.sum()) == total
    with pytest.raises(rasdf.AsdfError, match="closed"):
        unread.read()


def test_compressed_blocks_decode_once():
    with rasdf.open(ARRAYS / "dtypes_zlib.asdf") as af, rasdf.open(ARRAYS / "dtypes.asdf") as plain:
        for path, arr in af.arrays().items():
            a, b = arr[...], plain[path][...]
            assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
            assert not a.flags.writeable


def test_masked_arrays():
    with rasdf.open(ARRAYS / "views_masks.asdf") as af:
        masked = [p for p, a in af.arrays().items() if a.masked]
        assert masked
        for p in masked:
            assert isinstance(af[p][...], np.ma.MaskedArray)


def test_missing_and_unopenable(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        rasdf.open(tmp_path / "nothing.asdf")
    assert e.value.filename == str(tmp_path / "nothing.asdf")
    with pytest.raises(IsADirectoryError):
        rasdf.open(tmp_path)


def test_bad_files_raise_asdf_error(tmp_path):
    garbage = tmp_path / "garbage.asdf"
    garbage.write_bytes(b"not an asdf file at all\n")
    with pytest.raises(rasdf.AsdfError) as e:
        rasdf.open(garbage)
    assert isinstance(e.value, ValueError)
    assert e.value.file == str(garbage) and e.value.offset == 0
    for path in sorted((TESTDATA / "bad").glob("*.asdf")):
        try:
            with rasdf.open(path, verify_checksums=True) as af:
                for a in af.arrays().values():
                    a.read()
        except rasdf.AsdfError as err:
            assert str(err)
            assert err.file == str(path)


def test_checksum_mismatch_is_reported():
    path = TESTDATA / "bad" / "checksum_mismatch.asdf"
    with rasdf.open(path) as af:
        with pytest.raises(rasdf.AsdfError, match="checksum") as e:
            af.verify_checksums()
        assert e.value.block is not None
    with pytest.raises(rasdf.AsdfError, match="checksum"):
        with rasdf.open(path, verify_checksums=True) as af:
            for a in af.arrays().values():
                a.read()


def test_truncated_everywhere(tmp_path):
    """A file cut at any length opens and reads, or raises AsdfError: never a crash."""
    src = (ARRAYS / "dtypes_lz4.asdf").read_bytes()
    cut = tmp_path / "cut.asdf"
    outcomes = set()
    for n in range(0, len(src), max(1, len(src) // 97)):
        cut.write_bytes(src[:n])
        try:
            with rasdf.open(cut) as af:
                af.tree
                for a in af.arrays().values():
                    a.read()
            outcomes.add("ok")
        except rasdf.AsdfError:
            outcomes.add("error")
    assert "error" in outcomes


def test_limits():
    with pytest.raises(rasdf.AsdfError, match="max_nodes"):
        rasdf.open(ARRAYS / "large_tree.asdf", max_nodes=10)
    with rasdf.open(TESTDATA / "example.asdf", max_array_elements=100) as af:
        with pytest.raises(rasdf.AsdfError, match="max_array_elements"):
            af["sci/data"].read()


def test_validate():
    with rasdf.open(TESTDATA / "example.asdf", validate=True) as af:
        af.validate()


def test_info_is_the_cli_text(example, capsys):
    with rasdf.open(example) as af:
        text = af.info_text(None, None)
        assert text.startswith("root (AsdfObject)")
        assert "data (NDArrayType): shape=(64, 64), dtype=float32" in text
        assert "mean=" in af.info_text(stats=True)
        # info() prints it (the reference's default limits: 24 rows of 120 columns)
        assert af.info() is None
        assert capsys.readouterr().out == af.info_text(24, 120)


CUT_SCRIPT = """
import faulthandler, os, sys, numpy as np, rasdf
path = sys.argv[1]
af = rasdf.open(path)
faulthandler.enable()  # takes SIGBUS: a read of a map cut short would kill the process
view = af["a"][...]
os.truncate(path, 4096)
try:
    af["b"].read()
    print("b read")
except rasdf.AsdfError as e:
    print("b refused:", e)
print("sum", float(view.sum()))  # read before the cut: its values kept
try:
    af.check_unchanged()
    print("unchanged")
except rasdf.AsdfError as e:
    print("changed:", e)
"""


def test_file_cut_after_open(tmp_path):
    """A file cut short after it was opened, with faulthandler enabled after the open
    (it takes SIGBUS, so a read of a map cut short would kill the process): no crash; an
    array read before keeps its values, one read after is an AsdfError, and
    check_unchanged() says why."""
    path = tmp_path / "big.asdf"
    rasdf.write(path, {"a": np.ones(2_000_000), "b": np.ones(2_000_000)})
    # From another folder: `python -c` puts the current one on the import path, and
    # python/ holds the package's source, without its built module.
    out = subprocess.run(
        [sys.executable, "-c", CUT_SCRIPT, str(path)], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("b refused:") and "cut short" in lines[0] or "ends before" in lines[0], out.stdout
    assert float(lines[1].split()[1]) == 2_000_000, out.stdout
    assert lines[2].startswith("changed:") and "cut short since it was opened" in lines[2], out.stdout


def test_a_file_rewritten_after_open_is_never_read_as_a_mix(tmp_path):
    """A file rewritten in place (the same length, other values) after it was opened: an
    array read after is an AsdfError, never the new values under the old tree; one read
    before keeps its values."""
    path = tmp_path / "f.asdf"
    rasdf.write(path, {"a": np.ones(1_000_000), "b": np.ones(1_000_000)})
    af = rasdf.open(path)
    a = af["a"][...]
    raw = bytearray(path.read_bytes())
    raw[-1000:-990] = b"0123456789"
    import time

    time.sleep(0.02)
    path.write_bytes(bytes(raw))
    with pytest.raises(rasdf.AsdfError, match="changed since it was opened"):
        af["b"][...]
    assert float(a.sum()) == 1_000_000


@pytest.mark.parametrize("change", ["rewrite", "cut"])
def test_a_small_file_read_whole_tells_of_changes_too(tmp_path, change):
    """A file small enough to be read whole at open keeps its bytes, but a change of the
    file (rewritten in place, cut short) is told as for a larger one: check_unchanged()
    and the reads after it fail; an array read before keeps its values."""
    import os
    import time

    path = tmp_path / "small.asdf"
    rasdf.write(path, {"a": np.ones(100), "b": np.ones(100)})
    assert path.stat().st_size < 256 << 10
    af = rasdf.open(path)
    a = af["a"][...]
    af.check_unchanged()
    time.sleep(0.02)
    if change == "cut":
        os.truncate(path, 10)
    else:
        raw = bytearray(path.read_bytes())
        raw[-40:-30] = b"0123456789"
        path.write_bytes(bytes(raw))
    with pytest.raises(rasdf.AsdfError, match="since it was opened"):
        af.check_unchanged()
    with pytest.raises(rasdf.AsdfError, match="since it was opened"):
        af["b"][...]
    assert float(a.sum()) == 100
    # A file replaced by a rename is read on as the one opened.
    path.unlink()
    rasdf.write(path, {"a": np.zeros(3)})
    with rasdf.open(tmp_path / "small.asdf") as again:
        again.check_unchanged()


def test_a_stream_of_no_asdf_is_refused_from_its_first_bytes():
    """A file object that is no ASDF file (an endless pipe, say) is refused from its
    first bytes, not read to its end first."""

    class Endless:
        given = 0

        def read(self, n=-1):
            n = 1 << 20 if n is None or n < 0 else n
            self.given += n
            if self.given > 1 << 30:
                raise AssertionError("read on past the first bytes")
            return b"y\n" * (n // 2)

    stream = Endless()
    with pytest.raises(rasdf.AsdfError, match="not an ASDF file"):
        rasdf.open(stream)
    assert stream.given <= 32 << 20


def test_memmap_gives_views_of_the_file(tmp_path):
    """memmap=True: an uncompressed array is a read-only view of the mapped file (no
    copy); memmap=False (the default) reads it."""
    path = tmp_path / "m.asdf"
    data = np.arange(1_000_000, dtype="f8")
    rasdf.write(path, {"a": data})
    with rasdf.open(path, memmap=True) as af:
        a = af["a"][...]
        assert not a.flags.writeable and not a.flags.owndata
        assert (a == data).all()
    with rasdf.open(path) as af:
        b = af["a"][...]
        assert (b == data).all()


def test_threads_read_in_parallel(tmp_path):
    path = tmp_path / "many.asdf"
    tree = {f"a{i}": np.arange(i, i + 300_000, dtype="i8") for i in range(8)}
    rasdf.write(path, tree, compression="zlib")
    results = {}
    with rasdf.open(path) as af:
        def work(i):
            results[i] = int(af[f"a{i}"][...].sum())
        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert results == {i: int(tree[f"a{i}"].sum()) for i in range(8)}


def test_external_blocks(tmp_path):
    for p in ARRAYS.glob("exploded*.asdf"):
        shutil.copy(p, tmp_path / p.name)
    with rasdf.open(tmp_path / "exploded.asdf") as af:
        for a in af.arrays().values():
            assert a.read().size == a.size


def test_lz4_rows_are_read_from_their_records_alone(tmp_path):
    # 8000 rows of 800 bytes: two records of 4 MiB. Rows read before the whole array come
    # from the records that hold them (the array stays unloaded), the same values.
    noise = np.random.default_rng(2).standard_normal((8000, 100))
    rasdf.write(tmp_path / "lz4.asdf", {"noise": noise, "ints": np.arange(10)}, compression="lz4")
    with rasdf.open(tmp_path / "lz4.asdf") as af:
        arr = af["noise"]
        for key in [slice(10, 26), 7990, -1, slice(5000, 5300), (slice(100, 110), 3), slice(20, 10), slice(1, None)]:
            assert np.array_equal(arr[key], noise[key]), key
        assert "unloaded" in repr(arr)
        assert not arr[0:2].flags.writeable  # as a slice of the whole array read
        with pytest.raises(IndexError):
            arr[8000]
        assert np.array_equal(arr[:], noise)  # every row: the whole array, kept
        assert "unloaded" not in repr(arr) and repr(arr) == repr(arr[...])  # shown as its data
        assert np.array_equal(arr[10:26], noise[10:26])
        assert np.array_equal(af["ints"][2:5], np.arange(2, 5))
