"""rasdf.asdf_hook's writes, whole files: what asdf's `write_to` writes with the hook
reads back, with the hook off, to what it writes without the hook: the same raw tree
(types, tags, key order, sharing), the same blocks (codec labels and decoded bytes),
and the same objects and warnings when asdf converts it. For every file of the
repository that asdf opens and writes again, compressed as it was and recompressed
with each of asdf's own codecs (whose bytes differ: rasdf compresses in parallel).
`benches/asdf_hook.py --science` counts how many of these outputs are byte-identical.
"""

import io
import os
import warnings

import pytest

from conftest import TESTDATA, asdf_files, require
from tree_compare import differences

asdf = require("asdf")
np = require("numpy")

from rasdf import asdf_hook  # noqa: E402
from hook_support import no_hook_left  # noqa: E402,F401 - the fixture applies here

FILES = asdf_files("reference_files", "pyasdf", "oldasdf", "astro", "codecs") + [TESTDATA / "example.asdf"]
ASTRO = bool(os.environ.get("RASDF_HOOK_ASTRO"))


def written(path, codec, hooked):
    """The bytes asdf writes of `path` (each array recompressed with `codec`, or as it
    was), with or without the hook; `None` when asdf cannot open or write it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with asdf.open(path, lazy_load=False, memmap=False) as af:
                out = io.BytesIO()
                if hooked:
                    with asdf_hook.installed():
                        af.write_to(out, all_array_compression=codec)
                else:
                    af.write_to(out, all_array_compression=codec)
                return out.getvalue()
        except Exception:  # noqa: BLE001 - a file asdf does not write again
            return None


def read_back(data):
    """With asdf alone: the raw tree, the blocks (label, decoded bytes), the converted
    tree's shape (types, paths) and the warnings of the converting read."""
    assert not asdf_hook.is_installed()
    with asdf.open(io.BytesIO(data), lazy_load=False, memmap=False, _force_raw_types=True) as af:
        raw = af.tree
        blocks = [
            (bytes(b.header["compression"]), np.asarray(b.data).tobytes()) for b in af._blocks.blocks
        ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with asdf.open(io.BytesIO(data), lazy_load=False, memmap=False) as af:
            shape = skeleton(af.tree)
    return raw, blocks, shape, sorted({(w.category.__name__, str(w.message)) for w in caught})


def skeleton(x, path="", seen=None):
    """Every node's path and type, arrays with their values' bytes."""
    seen = set() if seen is None else seen
    out = [(path, type(x).__name__)]
    if id(x) in seen:
        return out
    seen.add(id(x))
    if isinstance(x, np.ndarray) or type(x).__name__ == "NDArrayType":  # (asdf 4's is no ndarray)
        x = np.asarray(x)
        out.append((path, x.dtype.str, x.shape, np.ascontiguousarray(x).tobytes() if x.dtype != object else None))
    elif isinstance(x, dict):
        for k, v in x.items():
            out += skeleton(v, f"{path}/{k}", seen)
    elif isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            out += skeleton(v, f"{path}/{i}", seen)
    return out


@pytest.mark.parametrize("codec", ["input", "zlib", "lz4", "bzp2"])
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(TESTDATA)))
def test_what_the_hook_writes_reads_back_as_what_asdf_writes(path, codec):
    if path.name.startswith(("roman_", "gwcs_", "dkist_", "astropy_")) and not ASTRO:
        pytest.skip("astropy, gwcs and Roman files are written under the astro venv (RASDF_HOOK_ASTRO=1)")
    codec = None if codec == "input" else codec
    stock = written(path, codec, hooked=False)
    hooked = written(path, codec, hooked=True)
    assert (stock is None) == (hooked is None), "one side wrote the file, the other did not"
    if stock is None:
        return
    if stock == hooked:
        return
    (raw_s, blocks_s, shape_s, warn_s), (raw_h, blocks_h, shape_h, warn_h) = read_back(stock), read_back(hooked)
    assert differences(raw_s, raw_h) == []
    assert [label for label, _ in blocks_s] == [label for label, _ in blocks_h]
    assert all(a == b for (_, a), (_, b) in zip(blocks_s, blocks_h))
    assert shape_s == shape_h
    assert warn_s == warn_h


def test_the_comparison_sees_a_changed_block():
    """The checks above fail on files whose block differs (they can fail)."""

    def write(values):
        out = io.BytesIO()
        asdf.AsdfFile({"x": values}).write_to(out, all_array_compression="zlib")
        return out.getvalue()

    values = np.arange(100.0)
    changed = values.copy()
    changed[7] += 1
    (raw_a, blocks_a, shape_a, _), (raw_b, blocks_b, shape_b, _) = read_back(write(values)), read_back(write(changed))
    assert differences(raw_a, raw_b) == []
    assert [d for _, d in blocks_a] != [d for _, d in blocks_b]
    assert shape_a != shape_b
