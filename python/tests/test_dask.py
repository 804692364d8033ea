"""NDArray.to_dask and rasdf.to_dask: chunks that follow the storage, tasks that pickle
small (a path and a tree path, never a buffer) and compute the same on threads and on a
cluster of processes; many files in one graph."""

import os
import pickle

import numpy as np
import pytest

import rasdf
from conftest import require

da = require("dask.array")


@pytest.fixture
def files(tmp_path):
    """Three files of a 2-D float image (uncompressed), an lz4 cube and a masked array."""
    out = []
    for k in range(3):
        image = np.arange(600 * 40, dtype="<f8").reshape(600, 40) + k
        cube = (np.arange(4 * 30 * 20, dtype=">i4").reshape(4, 30, 20) * (k + 1)).astype(">i4")
        masked = np.ma.masked_greater(np.arange(50, dtype="f4"), 40)
        p = tmp_path / f"f{k}.asdf"
        rasdf.write(p, {"sci": {"image": image, "cube": cube}, "m": masked}, compression={"sci/cube": "lz4"})
        out.append((p, image, cube, masked))
    return out


def test_chunks_follow_storage_and_values_match(files, monkeypatch):
    p, image, cube, masked = files[0]
    with rasdf.open(p) as af:
        img = af["sci/image"].to_dask()
        assert img.chunks == ((600,), (40,))  # under 64 MiB: one slab
        monkeypatch.setattr(rasdf, "_DASK_CHUNK_BYTES", 40 * 8 * 100)
        img = af["sci/image"].to_dask()
        assert img.chunks == ((100,) * 6, (40,))
        assert np.array_equal(img.compute(scheduler="threads"), image)
        assert float(img.sum().compute()) == float(image.sum())
        c = af["sci/cube"].to_dask()
        assert c.chunks == ((4,), (30,), (20,))  # lz4: rows of one 4 MiB record (all 4 here)
        monkeypatch.setattr(rasdf, "_LZ4_RECORD_BYTES", 30 * 20 * 4)
        assert af["sci/cube"].to_dask().chunks == ((1,) * 4, (30,), (20,))
        assert c.dtype == cube.dtype and np.array_equal(c.compute(), cube)
        custom = af["sci/cube"].to_dask(chunks=(1, 15, 20))
        assert custom.numblocks == (4, 2, 1) and np.array_equal(custom.compute(), cube)
        m = af["m"].to_dask()
        got = m.compute()
        assert isinstance(got, np.ma.MaskedArray) and np.array_equal(got.mask, masked.mask)


def test_tasks_pickle_small_without_buffers(files):
    p, image, _, _ = files[0]
    with rasdf.open(p) as af:
        arr = af["sci/image"].to_dask(chunks=(50, 40))
    blob = pickle.dumps(dict(arr.dask))
    assert len(blob) < 20_000, len(blob)  # 12 tasks: paths and keys, not 192 KB of data
    graph = pickle.loads(blob)
    assert len(graph) >= 12
    # The file is closed here; the graph opens it again.
    assert np.array_equal(arr.compute(scheduler="sync"), image)


def test_many_files_stacked_in_one_graph(files):
    paths = [str(p) for p, *_ in files]
    stack = rasdf.to_dask(paths, "sci/image", chunks=(300, 40))
    assert stack.shape == (3, 600, 40) and stack.numblocks == (3, 2, 1)
    expected = np.stack([image for _, image, _, _ in files])
    assert np.array_equal(stack.compute(), expected)
    assert np.allclose(stack.mean(axis=(1, 2)).compute(), expected.mean(axis=(1, 2)))
    with pytest.raises(TypeError):
        rasdf.to_dask(paths, "sci")


def test_distributed_cluster_of_processes(files):
    distributed = require("distributed")
    paths = [str(p) for p, *_ in files]
    stack = rasdf.to_dask(paths, "sci/image", chunks=(200, 40))
    cube = rasdf.to_dask(paths, "sci/cube")
    expected = np.stack([image for _, image, _, _ in files])
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
    ) as cluster, distributed.Client(cluster) as client:
        total = client.compute(stack.sum()).result(timeout=120)
        assert float(total) == float(expected.sum())
        got = client.compute(cube).result(timeout=120)
        assert np.array_equal(got, np.stack([c for _, _, c, _ in files]))


def test_one_path_gives_its_array(files):
    p, image, _, _ = files[0]
    for one in (str(p), p):
        arr = rasdf.to_dask(one, "sci/image", chunks=(300, 40))
        assert arr.shape == (600, 40) and np.array_equal(arr.compute(), image)


def test_graphs_never_read_a_stale_file(tmp_path):
    """The per-process cache of open files keys on the file's version (device, inode,
    size, modification time): a graph made after a rewrite reads the new file (a new
    shape and dtype too); a graph made before fails rather than read the new bytes as
    the old array."""
    p = tmp_path / "f.asdf"
    rasdf.write(p, {"a": np.arange(100, dtype="f8")})
    old = rasdf.to_dask(str(p), "a", chunks=30)
    assert np.array_equal(old.compute(scheduler="sync"), np.arange(100.0))  # opened and cached here
    rasdf.write(p, {"a": np.arange(50, dtype="i2") * 3})  # a new file in its place
    new = rasdf.to_dask(str(p), "a", chunks=30)
    assert new.dtype == np.dtype("i2") and new.shape == (50,)
    assert np.array_equal(new.compute(scheduler="sync"), np.arange(50, dtype="i2") * 3)
    assert old.name != new.name
    with pytest.raises(rasdf.AsdfError, match="changed since the Dask graph was made"):
        old.compute(scheduler="sync")
    # Rewritten in place, the same size (the same inode): the modification time tells.
    before = os.stat(p)
    same_size = tmp_path / "g.asdf"
    rasdf.write(same_size, {"a": np.arange(50, dtype="i2") * 5})
    assert os.path.getsize(same_size) == before.st_size
    graph = rasdf.to_dask(str(p), "a", chunks=30)
    assert np.array_equal(graph.compute(scheduler="sync"), np.arange(50, dtype="i2") * 3)
    with open(p, "r+b") as f:
        f.write(same_size.read_bytes())
    os.utime(p, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))
    assert os.stat(p).st_ino == before.st_ino
    with pytest.raises(rasdf.AsdfError, match="changed"):
        graph.compute(scheduler="sync")
    assert np.array_equal(rasdf.to_dask(str(p), "a").compute(scheduler="sync"), np.arange(50, dtype="i2") * 5)


def test_arrays_of_files_without_a_path_refuse(tmp_path):
    import io

    p = tmp_path / "f.asdf"
    rasdf.write(p, {"a": np.arange(10)})
    with rasdf.open(io.BytesIO(p.read_bytes())) as af, pytest.raises(ValueError):
        af["a"].to_dask()
