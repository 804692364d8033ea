"""rasdf.open of http:// and s3:// URLs, against a range server of the test's own on
127.0.0.1 (started and stopped by the fixture): the same tree and arrays as the local
file, errors as OSErrors."""

import http.server
import os
import re
import shutil
import threading

import numpy as np
import pytest

import rasdf
from conftest import TESTDATA, require


class RangeHandler(http.server.BaseHTTPRequestHandler):
    """GET with one byte range (or the whole file), an ETag of the file's identity
    (honouring If-Match with 412); `fail` answers 500 to everything."""

    root = None
    fail = False
    requests = 0
    sent = 0

    def do_GET(self):  # noqa: N802 - http.server's name
        type(self).requests += 1
        if self.fail:
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        path = os.path.join(self.root, self.path.split("?")[0].lstrip("/"))
        if ".." in self.path or not os.path.isfile(path):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        st = os.stat(path)
        size = st.st_size
        etag = f'"{st.st_ino:x}-{st.st_mtime_ns:x}-{size:x}"'
        wanted = self.headers.get("If-Match")
        if wanted is not None and wanted != "*" and etag not in [w.strip() for w in wanted.split(",")]:
            self.send_response(412)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        m = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", ""))
        if not m:
            start, end, status = 0, size - 1, 200
        elif m.group(1) == "":
            start, end, status = max(0, size - int(m.group(2))), size - 1, 206
        else:
            start = int(m.group(1))
            end = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
            status = 206
        if start >= size:
            self.send_response(416)
            self.send_header("ETag", etag)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with open(path, "rb") as f:
            f.seek(start)
            body = f.read(end - start + 1)
        self.send_response(status)
        self.send_header("ETag", etag)
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        type(self).sent += len(body)
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    """A server of `tmp_path` (with example.asdf, and bucket/dir/example.asdf for S3)."""
    shutil.copy(TESTDATA / "example.asdf", tmp_path / "example.asdf")
    (tmp_path / "bucket" / "dir").mkdir(parents=True)
    shutil.copy(TESTDATA / "example.asdf", tmp_path / "bucket" / "dir" / "example.asdf")
    handler = type("Handler", (RangeHandler,), {"root": str(tmp_path), "fail": False, "requests": 0, "sent": 0})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def assert_same_file(remote, local):
    assert remote.tree.keys() == local.tree.keys()
    for path, arr in local.arrays().items():
        a, b = remote[path][...], arr[...]
        assert type(a) is type(b) and a.dtype == b.dtype
        if a.dtype.kind == "V":  # records (NaN fields): the same bytes
            assert np.ma.getdata(a).tobytes() == np.ma.getdata(b).tobytes()
        else:
            assert np.array_equal(np.ma.getdata(a), np.ma.getdata(b), equal_nan=a.dtype.kind in "fc")


def test_http_url_reads_as_the_local_file(server):
    base, handler = server
    with rasdf.open(TESTDATA / "example.asdf") as local, rasdf.open(f"{base}/example.asdf") as remote:
        assert remote.path == f"{base}/example.asdf"
        assert remote.info_text(None).replace(f"{base}/example.asdf", "F") == local.info_text(None).replace(
            str(TESTDATA / "example.asdf"), "F"
        )
        assert_same_file(remote, local)
        # The open's requests (4 at most), then one for each block read.
        assert handler.requests <= 4 + len(local.blocks())


def test_s3_url_through_an_endpoint(server, monkeypatch):
    base, _ = server
    monkeypatch.setenv("AWS_ENDPOINT_URL", base)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    with rasdf.open(TESTDATA / "example.asdf") as local, rasdf.open("s3://bucket/dir/example.asdf") as remote:
        assert_same_file(remote, local)


def test_remote_errors_are_oserrors(server):
    base, handler = server
    with pytest.raises(FileNotFoundError, match="404"):
        rasdf.open(f"{base}/missing.asdf")
    handler.fail = True
    with pytest.raises(OSError, match="500"):
        rasdf.open(f"{base}/example.asdf")
    # Nothing listens on a port just let go of: refused at once.
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConnectionError):
        rasdf.open(f"http://127.0.0.1:{port}/x.asdf")


def test_a_slice_of_a_remote_array_fetches_its_rows_only(server, tmp_path):
    base, handler = server
    image = np.arange(4000 * 100, dtype=">f8").reshape(4000, 100)
    rasdf.write(tmp_path / "big.asdf", {"image": image, "packed": image[:50]}, compression={"packed": "zlib"})
    with rasdf.open(f"{base}/big.asdf") as af:
        arr = af["image"]
        handler.sent = 0
        rows = arr[10:26]
        assert np.array_equal(rows, image[10:26]) and rows.dtype == image.dtype
        assert handler.sent == 16 * 100 * 8  # 16 rows of 800 bytes, not the 3.2 MB block
        for key in [5, -1, (7, slice(3, 9)), (slice(-3, None), 2), slice(100, 50), (slice(0, 2), Ellipsis)]:
            assert np.array_equal(arr[key], image[key]), key
        handler.sent = 0
        assert np.array_equal(arr[::500], image[::500])  # a stride: the whole array, once
        assert handler.sent >= image.nbytes
        with pytest.raises(IndexError):
            arr[4000]
        assert np.array_equal(af["packed"][3:5], image[3:5])  # compressed: decoded whole


def test_dask_of_a_remote_array_reads_its_chunks_by_rows(server, tmp_path):
    require("dask")
    base, handler = server
    image = np.arange(4000 * 100, dtype="<f4").reshape(4000, 100)
    rasdf.write(tmp_path / "big.asdf", {"image": image})
    with rasdf.open(f"{base}/big.asdf") as af:
        d = af["image"].to_dask(chunks=(1000, 100))
    handler.sent = 0
    assert float(d[:1000].sum().compute(scheduler="threads")) == float(image[:1000].sum())
    assert handler.sent <= 1000 * 100 * 4 + 200_000  # that chunk's rows (and the open)
    assert np.array_equal(d.compute(scheduler="threads"), image)


def test_dask_of_a_url_never_reads_another_version(server, tmp_path):
    """A graph of a URL made before the file there changed (another length) fails
    rather than read the new bytes as the old array; one made after reads the new."""
    require("dask")
    base, _ = server
    rasdf.write(tmp_path / "v.asdf", {"a": np.arange(1000, dtype="f8")})
    old = rasdf.to_dask(f"{base}/v.asdf", "a", chunks=300)
    assert np.array_equal(old.compute(scheduler="sync"), np.arange(1000.0))
    rasdf.write(tmp_path / "v.asdf", {"a": np.arange(700, dtype="i4")})
    new = rasdf.to_dask(f"{base}/v.asdf", "a", chunks=300)
    assert new.name != old.name
    assert np.array_equal(new.compute(scheduler="sync"), np.arange(700, dtype="i4"))
    with pytest.raises(rasdf.AsdfError, match="changed since the Dask graph was made"):
        old.compute(scheduler="sync")


def test_a_slice_of_a_remote_lz4_array_decodes_only_its_records(server, tmp_path):
    base, handler = server
    noise = np.random.default_rng(1).standard_normal((8000, 100))  # 6.4 MB: two lz4 records
    rasdf.write(tmp_path / "lz4.asdf", {"noise": noise}, compression="lz4")
    with rasdf.open(f"{base}/lz4.asdf") as af:
        handler.sent = 0
        assert np.array_equal(af["noise"][10:26], noise[10:26])
        assert handler.sent < 4_500_000  # the first record, not the whole block
        assert np.array_equal(af["noise"][7990], noise[7990])
        assert np.array_equal(af["noise"][...], noise)


def test_asdf_in_fits_url_reads_as_the_local_file(server, tmp_path):
    # JWST products (ASDF-in-FITS) by URL: the tree from the ASDF extension, each
    # `fits:` array from its HDU.
    base, _ = server
    for path in sorted((TESTDATA / "fits").glob("*.fits")):
        shutil.copy(path, tmp_path / path.name)
        with rasdf.open(path) as local, rasdf.open(f"{base}/{path.name}") as remote:
            assert local.arrays()
            assert_same_file(remote, local)


def test_a_password_in_a_url_is_never_shown(server, tmp_path):
    base, _ = server
    authority = base.removeprefix("http://")
    url = f"http://user:secret@{authority}"
    (tmp_path / "bad_tree.asdf").write_bytes(b"#ASDF 1.0.0\n%YAML 1.1\n--- !core/asdf-1.1.0\na: [1, 2\n...\n")
    shown = []
    with rasdf.open(f"{url}/example.asdf") as af:
        assert af.path == f"http://user:***@{authority}/example.asdf"
        shown += [af.path, repr(af), af.info_text()]
    with rasdf.open(f"{url}/example.asdf?X-Amz-Signature=secret&token=secret") as af:
        assert "X-Amz-Signature=***&token=***" in af.path
        shown += [af.path, repr(af)]
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for target, kind in [
        (f"{url}/missing.asdf", FileNotFoundError),
        (f"http://user:secret@127.0.0.1:{port}/x.asdf", ConnectionError),
        (f"{url}/bad_tree.asdf", rasdf.AsdfError),
        ("ftp://user:secret@host/x.asdf", OSError),
    ]:
        with pytest.raises(kind) as info:
            rasdf.open(target)
        e = info.value
        shown += [str(e), repr(e), repr(e.args), str(getattr(e, "filename", "")), str(getattr(e, "file", ""))]
        assert "***" in str(e), (target, str(e))
        assert getattr(e, "errno", None) != 0, (target, repr(e))
    for text in shown:
        assert "secret" not in text, text


def test_a_stalled_server_fails_within_the_timeout():
    import errno
    import socket
    import time

    # Connections are accepted (by the kernel's backlog) and never answered.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/x.asdf"
        start = time.monotonic()
        with pytest.raises(TimeoutError) as info:
            rasdf.open(url, timeout=1)
        took = time.monotonic() - start
        assert 1 <= took < 4, took
        assert info.value.errno == errno.ETIMEDOUT
        assert "timed out" in str(info.value)
        for bad in [0, -1, float("nan")]:
            with pytest.raises(ValueError):
                rasdf.open(url, timeout=bad)
    # Taken, and ignored, for a local path.
    with rasdf.open(TESTDATA / "example.asdf", timeout=0.5) as af:
        assert af["sci/data"].shape == (64, 64)


def test_a_remote_file_that_changes_is_never_read_as_two_versions(server, tmp_path):
    base, _ = server
    a = np.full(1000, 1.0)
    b = np.full(1000, 2.0)
    rasdf.write(tmp_path / "v.asdf", {"data": a})
    rasdf.write(tmp_path / "b.tmp", {"data": b})
    assert (tmp_path / "v.asdf").stat().st_size == (tmp_path / "b.tmp").stat().st_size
    with rasdf.open(f"{base}/v.asdf") as af:
        # Version B in its place after the open: its data is never read under A's tree.
        os.replace(tmp_path / "b.tmp", tmp_path / "v.asdf")
        with pytest.raises(OSError, match="the remote file changed while it was read") as info:
            af["data"][...]
        assert info.value.errno is None
        with pytest.raises(OSError, match="changed while it was read"):
            af["data"][...]
    with rasdf.open(f"{base}/v.asdf") as af:
        assert np.array_equal(af["data"][...], b)
