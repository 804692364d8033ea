"""Hostile files and hostile circumstances in Python: a clear exception (``rasdf.AsdfError``,
or an ``OSError`` with a real errno or none), never a crash, an unbounded allocation,
numpy's own exceptions or PyO3's ``PanicException``; writes that another thread races
still give files that decode."""

import os
import resource
import subprocess
import sys
import threading

import numpy as np
import pytest

import rasdf
from conftest import ROOT, require

HEAD = b"#ASDF 1.0.0\n#ASDF_STANDARD 1.6.0\n%YAML 1.1\n%TAG ! tag:stsci.edu:asdf/\n--- !core/asdf-1.1.0\n"


def inline(datatype: str, data: str = "[a, b, c, d, e, f]", shape: str = "[6]") -> bytes:
    return HEAD + f"a: !core/ndarray-1.1.0\n  data: {data}\n  datatype: {datatype}\n  shape: {shape}\n...\n".encode()


HUGE_ITEMS = {
    "ucs4_1g": inline("[ucs4, 1073741824]"),
    "ascii_2_62": inline("[ascii, 4611686018427387904]"),
    "ucs4_512m": inline("[ucs4, 536870911]"),
    "subarray": inline("[{name: x, datatype: float64, shape: [65536, 65536]}]", "[[1], [2]]", "[2]"),
}

# Reads everything a user would, in a process of at most 1 GiB of address space.
READ_ALL = r"""
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
import numpy as np, rasdf
caught = []
af = rasdf.open(sys.argv[1])
for step in (lambda: af.tree, lambda: af["a"].dtype, lambda: np.asarray(af["a"]), lambda: af["a"][...],
             lambda: af.info_text(stats=True), lambda: repr(af["a"])):
    try:
        step()
    except rasdf.AsdfError as e:
        caught.append(str(e))
print(len(caught))
print("\n".join(caught))
"""


@pytest.mark.parametrize("name", sorted(HUGE_ITEMS))
def test_huge_item_sizes_are_refused_in_bounded_memory(tmp_path, name):
    """A few bytes of tree declaring elements of gigabytes: ``AsdfError`` (numpy's item
    size limit, or ``max_inline_bytes``), in well under 1 GiB; a 194-byte file killed the
    interpreter."""
    path = tmp_path / f"{name}.asdf"
    path.write_bytes(HUGE_ITEMS[name])
    out = subprocess.run([sys.executable, "-c", READ_ALL, str(path)], capture_output=True, text=True, timeout=60,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    n, *messages = out.stdout.splitlines()
    assert int(n) >= 3, out.stdout
    assert any("numpy's limit" in m or "max_inline_bytes" in m for m in messages), out.stdout


def test_max_inline_bytes(tmp_path):
    path = tmp_path / "small.asdf"
    path.write_bytes(inline("[ucs4, 4]"))
    with rasdf.open(path, max_inline_bytes=95) as af:
        with pytest.raises(rasdf.AsdfError, match="max_inline_bytes"):
            af["a"][...]
    with rasdf.open(path, max_inline_bytes=96) as af:
        assert af["a"][...].tolist() == list("abcdef")


@pytest.mark.parametrize(
    "mask",
    [
        # An array of another size than the data (numpy's MaskError; asdf raises it).
        "!core/ndarray-1.1.0 {data: [true, false, true], datatype: bool8, shape: [3]}",
        "!core/ndarray-1.1.0 {data: [[true], [false]], datatype: bool8, shape: [2, 1]}",
        "abc",  # text: masks no number
    ],
)
def test_a_mask_that_cannot_mask_its_data_is_an_asdf_error(tmp_path, mask):
    path = tmp_path / "mask.asdf"
    node = f"a: !core/ndarray-1.1.0\n  data: [1, 2, 3, 4, 5, 6]\n  datatype: int64\n  shape: [6]\n  mask: {mask}\n...\n"
    path.write_bytes(HEAD + node.encode())
    with rasdf.open(path) as af:
        with pytest.raises(rasdf.AsdfError, match="mask cannot mask"):
            af["a"][...]
        with pytest.raises(rasdf.AsdfError, match="mask cannot mask"):
            np.asarray(af["a"])


def test_a_write_raced_by_another_thread_decodes(tmp_path):
    """Another thread changes the array while it is written (the GIL is released during
    the write): each piece is compressed and hashed from one copy, so the file decodes
    and its checksums match, whatever mix of old and new values it holds."""
    a = np.zeros(16 << 20, dtype="u4")  # 64 MiB
    stop = threading.Event()

    def scribble():
        k = 0
        while not stop.is_set():
            k += 1
            a[:] = k  # numpy releases the GIL for this

    t = threading.Thread(target=scribble)
    t.start()
    try:
        for codec in (None, "lz4", "zlib", "bzp2", "zstd"):
            path = tmp_path / f"raced_{codec}.asdf"
            rasdf.write(path, {"a": a, "b": a[::2]}, compression=codec)
            with rasdf.open(path, verify_checksums=True) as af:
                af.verify_checksums()
                got = af["a"][...]
                assert got.shape == a.shape
                assert af["b"][...].shape == (a.size // 2,)
    finally:
        stop.set()
        t.join()
    asdf = require("asdf")
    with asdf.open(tmp_path / "raced_lz4.asdf", validate_checksums=True) as af:
        assert np.asarray(af["a"]).shape == a.shape


def test_a_tree_changed_during_a_write_raises_an_ordinary_exception(tmp_path, monkeypatch):
    """Python code runs during a write (the array preparation): a dict it changes is
    written as it was when its items were taken; never PyO3's PanicException (a
    BaseException)."""
    tree = {"x": 1, "a": np.arange(3), "y": 2}
    original = rasdf._prepare_array

    def meddle(obj):
        tree.pop("y", None)
        tree["z"] = 3
        return original(obj)

    monkeypatch.setattr(rasdf, "_prepare_array", meddle)
    path = tmp_path / "meddled.asdf"
    try:
        rasdf.write(path, tree)
    except Exception as e:  # noqa: BLE001 - any ordinary exception is fine
        assert type(e).__name__ != "PanicException"
    else:
        with rasdf.open(path) as af:
            assert af["a"][...].tolist() == [0, 1, 2]


def test_os_errors_carry_a_real_errno_or_none(tmp_path):
    """No ``OSError`` from rasdf has errno 0: a missing file has ENOENT; errors no
    system call gave (a refused remote connection, a server's answer) have ``None``."""
    with pytest.raises(FileNotFoundError) as e:
        rasdf.open(tmp_path / "missing.asdf")
    assert e.value.errno == 2 and e.value.filename is not None
    with pytest.raises(OSError) as e:
        rasdf.open("http://127.0.0.1:9/missing.asdf")
    assert e.value.errno != 0, repr(e.value)
    assert "127.0.0.1" in str(e.value)


def test_hooked_read_block_index_rewinds_when_it_fails():
    """asdf's own test: invalid YAML after the index header is asdf's BlockIndexError,
    from where asdf's reading starts (the hook's failed attempt rewinds)."""
    asdf = require("asdf")
    import io

    import asdf._block.io as bio
    from asdf import constants, generic_io
    from asdf.exceptions import AsdfBlockIndexWarning  # noqa: F401 - asdf >= 3
    from asdf._block.exceptions import BlockIndexError

    import rasdf.asdf_hook

    with rasdf.asdf_hook.installed():
        for text, says in [(b"][", "Failed to parse block index as yaml"), (b"['a', 'b']", "Invalid block index")]:
            bs = io.BytesIO(constants.INDEX_HEADER + text)
            with generic_io.get_file(bs, "r") as fd:
                with pytest.raises(BlockIndexError, match=says):
                    bio.read_block_index(fd)
        bs = io.BytesIO(b"xx" + constants.INDEX_HEADER + b"[1, 2]\n")
        with generic_io.get_file(bs, "r") as fd:
            fd.seek(2)
            assert bio.read_block_index(fd) == [1, 2]
    assert asdf is not None


def test_mutated_fixtures_raise_only_asdf_errors():
    """The mutation campaign (tests/python/hostile_campaign.py), a short run: every case
    in its own process, 20 s and 2 GiB each; none dies, hangs, or raises anything but
    AsdfError and OSErrors with a real errno."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "python" / "hostile_campaign.py"), "--cases", "120", "--seed", "7"],
        capture_output=True, text=True, timeout=1200,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert '"failed": 0' in out.stdout, out.stdout[-2000:]


def test_lz4_decoder_agrees_with_liblz4_on_mutated_records():
    """rasdf's lz4 decoder (lz4_flex's pointer-based one) against liblz4, the reference's,
    on 20 000 mutated records (tests/python/lz4_differential.py): never bytes liblz4 would
    not give, never a record liblz4 refuses, never a byte left unwritten, never a crash."""
    require("lz4")
    out = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "python" / "lz4_differential.py"), "--cases", "20000", "--seed", "3"],
        capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert '"failed": 0' in out.stdout and '"decoded": 0' not in out.stdout, out.stdout[-2000:]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
