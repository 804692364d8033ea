"""The file API as the reference's (asdf 6.0.0) AsdfFile: the tree's top level as a
mapping, paths that see edits to ``.tree``, ``info()`` printed with its default limits,
``search()``, ``write_to()`` and an atomic ``update()``; ``rasdf.open`` and
``rasdf.write`` with binary file objects."""

import io
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import rasdf
from conftest import TESTDATA, asdf_files, require

ARRAYS = TESTDATA / "pyasdf" / "arrays"
EXAMPLE = TESTDATA / "example.asdf"


def reference(path, **kwargs):
    asdf = require("asdf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return asdf.open(path, **kwargs)


def plain(tree):
    """A tree as comparable values: arrays as lists, tagged types as their plain ones."""
    if isinstance(tree, dict):
        return {k: plain(v) for k, v in tree.items() if k not in ("asdf_library", "history")}
    if isinstance(tree, (list, tuple)):
        return [plain(v) for v in tree]
    if isinstance(tree, (np.ndarray, rasdf.NDArray)) or type(tree).__name__ == "NDArrayType":
        a = np.ma.filled(tree[...], 0) if isinstance(tree[...], np.ma.MaskedArray) else np.asarray(tree[...])
        return ("array", str(a.dtype.newbyteorder("=")), a.tolist())
    if isinstance(tree, str):
        return str(tree)
    return tree


# The mapping


def test_top_level_is_a_mapping_as_the_references():
    ref = reference(EXAMPLE)
    with rasdf.open(EXAMPLE) as af:
        assert list(af.keys()) == list(ref.keys())
        assert list(af) == list(ref.tree) and len(af) == len(ref.tree)
        assert af._ipython_key_completions_() == list(ref.keys())
        assert [k for k, _ in af.items()] == list(ref.keys())
        assert af.get("meta/telescope") == "example" and af.get("nothing", 5) == 5
        assert dict(af)["meta"] is af.tree["meta"]
        for k in ref.keys():
            assert k in af


def test_paths_see_edits_to_the_tree():
    with rasdf.open(EXAMPLE) as af:
        before = af["meta"]  # built alone, before the tree
        assert af.tree["meta"] is before
        af.tree["meta"]["telescope"] = "JWST"
        af.tree["meta"]["new"] = {"a/b": [1, {"c": 2}]}
        del af.tree["sci"]["dq"]
        assert af["meta/telescope"] == "JWST"
        assert af["meta/new/a~1b/1/c"] == 2
        assert "sci/dq" not in af and "sci/data" in af
        with pytest.raises(KeyError):
            af["sci/dq"]
        af["meta/telescope"] = "Roman"
        af["meta/new/a~1b/0"] = 7
        af["top"] = 1
        assert af.tree["meta"]["telescope"] == "Roman" and af.tree["meta"]["new"]["a/b"][0] == 7
        assert af["top"] == 1 and "top" in list(af)
        del af["meta/new"]
        assert "new" not in af.tree["meta"]
        with pytest.raises(KeyError):
            af["no/such/parent"] = 1
        assert list(af.arrays()) == ["catalog", "sci/data", "sci/err"]
        af.tree = {"x": 1}
        assert af["x"] == 1 and list(af) == ["x"]


def test_non_string_keys_and_indices():
    with rasdf.open(TESTDATA / "example.asdf") as af:
        af.tree["meta"]["filters"].append("F444W")
        assert af["meta/filters/2"] == "F444W" and af["meta/filters/+2"] == "F444W"
        with pytest.raises(KeyError):
            af["meta/filters/3"]
        af.tree[5] = "five"
        assert af[5] == "five" and af["5"] == "five"  # a step names a key by its text too


# info


def test_info_prints_with_the_references_default_limits(capsys):
    with rasdf.open(ARRAYS / "large_tree.asdf") as af:
        assert af.info() is None
        out = capsys.readouterr().out
        lines = out.splitlines()
        assert len(lines) <= 24 and lines[-1] == "Some nodes not shown."
        assert max(len(line) for line in lines) <= 120
        assert out == af.info_text(24, 120)
        assert af.info_text() == out
        full = af.info_text(max_rows=None, max_cols=None)
        assert len(full.splitlines()) > 24 and "Some nodes not shown." not in full


def test_info_shows_edits_once_the_tree_is_built():
    with rasdf.open(EXAMPLE) as af:
        file_text = af.info_text(None, None)
        tree = af.tree
        assert af.info_text(None, None) == file_text  # the same drawing from the tree
        tree["meta"]["telescope"] = "JWST"
        tree["added"] = np.zeros((2, 3), "f4")
        text = af.info_text(None, None)
        assert "telescope (str): JWST" in text
        assert "added (ndarray): shape=(2, 3), dtype=float32, in memory" in text
        assert "block" in af.info_text(show_blocks=True) and "Block #0" in af.info_text(show_blocks=True)
        assert "mean=" in af.info_text(stats=True)


# Known differences of the tree's drawing from the file's: what the Python tree holds
# (`int` for core/integer, tuples for !!pairs) and the repr of lazy arrays inside a
# container shown as a value.
DRAWN_DIFFERENTLY = {"omap_pairs.asdf", "omap_tagged_items.asdf"}


def normalize(text):
    import re

    text = re.sub(r"\(IntegerType\): IntegerType\((-?\d+)\)", r"(int): \1", text)
    return text.replace("(IntegerType)", "(int)")


@pytest.mark.parametrize("options", [(None, None, True), (24, 120, True), (5, 40, False), (1, None, True), (3, 2, True)])
def test_tree_drawn_as_the_file_is(options):
    """The drawing of `.tree` (rasdf._display, in Python) is `rasdf info`'s (Rust) on
    every readable fixture, with every option."""
    from rasdf import _display

    checked = 0
    for path in asdf_files("pyasdf", "yaml", "astro", "oldasdf", "strings", "fits", "codecs", "scalars"):
        if path.name in DRAWN_DIFFERENTLY or path.name.startswith("schema_defaults"):
            continue
        try:
            af = rasdf.open(path)
            tree = af.tree
        except (rasdf.AsdfError, OSError):
            continue
        with af:
            rust = af._file.info(*options, False, False)
            py = "".join(line + "\n" for line in _display.render(tree, *options, file_root=True))
            assert py == normalize(rust), path
            checked += 1
    assert checked > 100


# search


QUERIES = [
    dict(key="version"),
    dict(key="^s"),
    dict(key=0),
    dict(value="asdf"),
    dict(value=120.5),
    dict(value=True),
    dict(type_=str),
    dict(type_=int),
    dict(type_=float),
    dict(type_=dict),
    dict(type_=list),
    dict(type_="Software"),
    dict(type_="NDArrayType"),
    dict(type_="str|bool"),
    dict(filter_=lambda n: isinstance(n, bool)),
    dict(filter_=lambda n, k: k == "name"),
    dict(key="name", value="asdf"),
    dict(),
]


@pytest.mark.parametrize("path", [EXAMPLE, ARRAYS / "views_masks.asdf", ARRAYS / "scalars_tags.asdf", ARRAYS / "large_tree.asdf"])
def test_search_finds_what_the_reference_finds(path):
    ref = reference(path)
    with rasdf.open(path) as af:
        for q in QUERIES:
            got, want = af.search(**q), ref.search(**q)
            if q == dict(type_=int) and path.name == "scalars_tags.asdf":
                # core/integer: an int in rasdf's tree (the reference's IntegerType)
                assert set(want.paths) < set(got.paths)
                continue
            assert got.paths == want.paths, q
            assert len(got.nodes) == len(want.nodes)
        # Results without arrays are drawn as the reference draws them (tags it has no
        # class for are named by the tag, as `rasdf info` names them).
        for q in (dict(key="version"), dict(value="asdf"), dict(type_=float), dict(key="nothing here")):
            if path.name != "scalars_tags.asdf":
                assert repr(af.search(**q)) == repr(ref.search(**q)), q
        # Chained, narrowed, indexed, formatted, as the reference's.
        assert af.search("history").search(type_=str).paths == ref.search("history").search(type_=str).paths
        assert af.search()["asdf_library"].search("name").paths == ref.search()["asdf_library"].search("name").paths
        assert repr(af.search(type_=str).format(max_rows=5)) == repr(ref.search(type_=str).format(max_rows=5))


def test_search_result_node_and_path():
    with rasdf.open(EXAMPLE) as af:
        r = af.search("telescope")
        assert r.path == "root['meta']['telescope']" and r.node == "example"
        assert af.search("nothing").node is None and af.search("nothing").path is None
        assert repr(af.search("nothing")) == "No results found."
        with pytest.raises(RuntimeError, match="More than one result"):
            af.search(type_=str).node
        with pytest.raises(TypeError):
            af.search(type_=5)
        with pytest.raises(ValueError):
            af.search(filter_=lambda a, b, c: True)
        # arrays: found by type (numpy.ndarray too: the reference's lazy arrays are not
        # numpy arrays, and it finds none), never read to match a value
        assert af.search(type_=np.ndarray).paths == ["root['catalog']", "root['sci']['data']", "root['sci']['dq']", "root['sci']['err']"]
        assert af.search(value=0).paths == [] and all(a._array is None for a in af.arrays().values())
        assert af.search(type_=rasdf.NDArray).paths == af.search(type_=np.ndarray).paths
        # edits are searched, and replace() edits
        af.tree["meta"]["telescope"] = "JWST"
        assert af.search(value="JWST").path == "root['meta']['telescope']"
        af.search("telescope").replace("Roman")
        assert af["meta/telescope"] == "Roman"


# write_to and update


def test_write_to_writes_the_edited_tree_with_each_arrays_compression(tmp_path):
    with rasdf.open(EXAMPLE) as af:
        af.tree["meta"]["telescope"] = "JWST"
        af.tree["extra"] = np.arange(5, dtype="u2")
        del af.tree["sci"]["dq"]
        out = tmp_path / "out.asdf"
        af.write_to(out)
        codecs = {p: a._file.array_storage(a._id)[1] for p, a in af.arrays().items() if isinstance(a, rasdf.NDArray)}
        buffer = io.BytesIO()
        af.write_to(buffer, all_array_compression="zlib", write_checksums=False, include_block_index=False)
        expected = plain(af.tree)
    ref = reference(out)
    assert plain(ref.tree) == expected
    assert ref.tree["meta"]["telescope"] == "JWST" and "dq" not in ref.tree["sci"]
    with rasdf.open(out) as back:
        got = {p: back[p]._file.array_storage(back[p]._id)[1] for p in codecs}
        assert got == codecs and "zlib" in codecs.values() and "lz4" in codecs.values()
    buffer.seek(0)
    ref = reference(buffer)
    assert plain(ref.tree) == expected
    buffer.seek(0)
    with rasdf.open(buffer) as back:
        assert {b[0] for b in back.blocks()} == {"zlib"}
    assert b"BLOCK INDEX" not in buffer.getvalue()
    # what rasdf does not write is refused, not ignored
    with rasdf.open(EXAMPLE) as af:
        stored = io.BytesIO()
        af.write_to(stored, all_array_compression=None)  # the reference's: no compression
        stored.seek(0)
        assert {b[0] for b in rasdf.open(stored).blocks()} == {"none"}
        for bad in (dict(all_array_storage="inline"), dict(pad_blocks=True), dict(version="1.0.0"),
                    dict(compression_kwargs={"level": 5, "shuffle": 1})):
            with pytest.raises(ValueError):
                af.write_to(tmp_path / "refused.asdf", **bad)
        assert not (tmp_path / "refused.asdf").exists()
        af.write_to(tmp_path / "level.asdf", all_array_compression="zlib", compression_kwargs={"level": 9})


def test_update_needs_rw_as_the_reference(tmp_path):
    p = tmp_path / "u.asdf"
    rasdf.write(p, {"a": 1})
    with rasdf.open(p) as af, pytest.raises(OSError, match="mode='rw'"):
        af.update()
    with rasdf.open(io.BytesIO(p.read_bytes()), mode="rw") as af, pytest.raises(ValueError, match="no associated file"):
        af.update()
    with pytest.raises(ValueError):
        rasdf.open(p, mode="w")


def test_update_rewrites_the_file_and_keeps_working(tmp_path):
    p = tmp_path / "u.asdf"
    data = np.arange(100_000, dtype="f8")
    rasdf.write(p, {"a": data, "b": np.ones((10, 10), "i4"), "meta": {"n": 1}}, compression={"b": "lz4"})
    inode = os.stat(p).st_ino
    with rasdf.open(p, mode="rw") as af:
        view = af["a"][...]  # a view on the mapped file: stays valid
        af["meta/n"] = 2
        af["meta/list"] = [1, 2, 3]
        af.tree["c"] = np.full(3, 7, "u1")
        tree = af.tree
        af.update()
        assert af.tree is tree and af["meta/n"] == 2
        assert np.array_equal(view, data) and view.sum() == data.sum()
        assert os.stat(p).st_ino != inode  # a new file put in place: never written over
        assert [b[0] for b in af.blocks()] == ["none", "lz4", "none"]  # the file now read
        assert af.version == rasdf.open(p).version
        af["meta/n"] = 3
        af.update()  # again, from the new file
    ref = reference(p)
    assert ref.tree["meta"] == {"n": 3, "list": [1, 2, 3]}
    assert np.array_equal(ref.tree["a"], data) and np.array_equal(ref.tree["c"], [7, 7, 7])
    with rasdf.open(p) as af:
        assert af["b"]._file.array_storage(af["b"]._id)[1] == "lz4"


def test_failed_update_leaves_the_old_file(tmp_path):
    p = tmp_path / "u.asdf"
    rasdf.write(p, {"a": np.arange(10)})
    before = p.read_bytes()
    with rasdf.open(p, mode="rw") as af:
        af.tree["bad"] = object()  # no ASDF value
        with pytest.raises(TypeError):
            af.update()
        assert p.read_bytes() == before
        assert np.array_equal(af["a"], np.arange(10))
    assert sorted(os.listdir(tmp_path)) == ["u.asdf"]


KILLED_UPDATE = textwrap.dedent(
    """
    import sys, numpy as np, rasdf
    af = rasdf.open(sys.argv[1], mode="rw")
    af["big"] = np.full(3_000_000, 2.0)
    af["state"] = "new"
    print("writing", flush=True)
    af.update()
    print("done", flush=True)
    """
)


def test_update_killed_part_way_leaves_old_or_new(tmp_path):
    """The reference's update() writes over the file in place: killed part-way, it
    leaves a mix. rasdf's leaves the old file or the new one, never a mix."""
    p = tmp_path / "k.asdf"
    outcomes = set()
    for delay in (0.01, 0.1, 0.4, 1.5):
        rasdf.write(p, {"big": np.ones(2_000_000), "state": "old"})
        # From the test's folder: `python -c` puts the current one on the import path,
        # and python/ holds the package's source without its built module.
        proc = subprocess.Popen([sys.executable, "-c", KILLED_UPDATE, str(p)], stdout=subprocess.PIPE, cwd=tmp_path)
        assert proc.stdout.readline().strip() == b"writing"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        with rasdf.open(p) as af:
            af.verify_checksums()
            state = af["state"]
            big = af["big"]
            assert (state, big.shape, float(big[-1])) in (("old", (2_000_000,), 1.0), ("new", (3_000_000,), 2.0))
            outcomes.add(state)
        for leftover in os.listdir(tmp_path):
            assert leftover == "k.asdf" or not leftover.endswith(".asdf"), leftover
    assert outcomes


# File objects


def test_open_binary_file_objects():
    want = EXAMPLE.read_bytes()
    with open(EXAMPLE, "rb") as f, rasdf.open(f) as af:
        assert af.path == str(EXAMPLE)  # a regular file from its start: mapped by path
        assert af["sci/data"].shape == (64, 64)
    with rasdf.open(io.BytesIO(want)) as af:
        assert af.path is None and af["meta/telescope"] == "example"
        assert np.array_equal(af["sci/err"], rasdf.open(EXAMPLE)["sci/err"][...])
        with pytest.raises(ValueError, match="path"):
            af["sci/data"].to_dask()

    class Stream(io.RawIOBase):  # not seekable, short reads
        def __init__(self, data):
            self.data = data

        def readable(self):
            return True

        def readinto(self, b):
            n = min(len(b), 1000, len(self.data))
            b[:n], self.data = self.data[:n], self.data[n:]
            return n

    with rasdf.open(Stream(want)) as af:
        assert af["meta/filters"] == ["F150W", "F200W"]
    r, w = os.pipe()
    with os.fdopen(w, "wb") as wf:
        wf.write(want)  # under a pipe's buffer
    with os.fdopen(r, "rb") as rf, rasdf.open(rf) as af:  # a pipe: read, not mapped
        assert af.path is None and af["meta/telescope"] == "example"
    with pytest.raises(TypeError):
        rasdf.open(io.StringIO("#ASDF 1.0.0"))
    with pytest.raises(TypeError):
        rasdf.open(12)


def test_open_and_write_fsspec_files():
    fsspec = require("fsspec")
    fs = fsspec.filesystem("memory")
    tree = {"x": np.arange(6, dtype=">i8").reshape(2, 3), "s": "text"}
    with fs.open("/rasdf/a.asdf", "wb") as f:
        rasdf.write(f, tree, compression="zlib")
    with fs.open("/rasdf/a.asdf", "rb") as f, rasdf.open(f) as af:
        assert af["s"] == "text" and np.array_equal(af["x"], tree["x"]) and af["x"].dtype == ">i8"
    with fs.open("/rasdf/a.asdf", "rb") as f:
        ref = reference(io.BytesIO(f.read()))
        assert np.array_equal(ref.tree["x"], tree["x"])


def test_write_to_file_objects_gives_the_files_bytes(tmp_path):
    tree = {"a": np.arange(1000.0), "m": np.ma.masked_equal(np.arange(4), 1), "t": {"k": [1, "two"]}}
    rasdf.write(tmp_path / "p.asdf", tree, compression={"a": "lz4"})
    buffer = io.BytesIO()
    rasdf.write(buffer, tree, compression={"a": "lz4"})
    assert buffer.getvalue() == (tmp_path / "p.asdf").read_bytes()
    with open(tmp_path / "f.asdf", "wb") as f:
        f.write(b"")
        rasdf.write(f, tree, compression={"a": "lz4"})
    assert (tmp_path / "f.asdf").read_bytes() == buffer.getvalue()

    class Raw(io.RawIOBase):  # writes at most 100 bytes a call
        def __init__(self):
            self.out = bytearray()

        def writable(self):
            return True

        def write(self, b):
            b = bytes(b[:100])
            self.out += b
            return len(b)

    raw = Raw()
    rasdf.write(raw, tree, compression={"a": "lz4"})
    assert bytes(raw.out) == buffer.getvalue()
    with pytest.raises(TypeError):
        rasdf.write(12, tree)
    with pytest.raises(rasdf.AsdfError):
        rasdf.write(io.BytesIO(), tree, compression="zlib", compression_level=12)
