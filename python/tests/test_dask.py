"""NDArray.to_dask and rasdf.to_dask: chunks that follow the storage, tasks that pickle
small (a path and a tree path, never a buffer) and compute the same on threads and on a
cluster of processes; many files in one graph."""

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
