"""The wheel alone, as a user installs it: run by scripts/test.sh with the Python of a
fresh venv that holds only the wheel and numpy (tests/python/requirements-wheel.txt).
Imports rasdf, reads the example file's arrays, writes a file and reads it back.

    python wheel_smoke.py testdata/example.asdf
"""

import sys
import sysconfig
import tempfile
from pathlib import Path

import numpy as np

import rasdf

example = Path(sys.argv[1])

# The installed wheel, not a folder of the repository.
site = Path(sysconfig.get_paths()["platlib"]).resolve()
assert Path(rasdf.__file__).resolve().is_relative_to(site), (rasdf.__file__, site)

with rasdf.open(example, verify_checksums=True) as af:
    assert af["asdf_library"]["name"] == "asdf", af["asdf_library"]
    sci = af["sci/data"][...]
    assert sci.shape == (64, 64) and sci.dtype == np.float32, (sci.shape, sci.dtype)
    assert sci.min() == 0.0 and abs(float(sci.max()) - 13.714285850524902) < 1e-6, (sci.min(), sci.max())
    err = af["sci/err"][...]  # an lz4 block
    assert err.shape == (64, 64) and (err == 0.25).all()
    catalog = af["catalog"][...]
    assert catalog.dtype.names == ("id", "mag", "kind"), catalog.dtype
    assert "sci/dq" in af.arrays()
    assert "sci" in af.info_text()

with tempfile.TemporaryDirectory() as tmp:
    out = Path(tmp) / "smoke.asdf"
    tree = {
        "meta": {"telescope": "JWST", "exposure": 120.5},
        "sci": {"data": sci, "cube": np.arange(24, dtype=">i8").reshape(2, 3, 4)},
        "catalog": catalog,
    }
    rasdf.write(out, tree, compression={"sci/data": "lz4", "sci/cube": "zlib"})
    with rasdf.open(out, verify_checksums=True) as back:
        assert back["meta/telescope"] == "JWST" and back["meta/exposure"] == 120.5
        assert np.array_equal(back["sci/data"][...], sci)
        assert np.array_equal(back["sci/cube"][...], tree["sci"]["cube"])
        assert np.array_equal(back["catalog"][...], catalog)
    rasdf.validate(out, schemas=False)  # the standard's schemas, shipped in the wheel

print(f"wheel smoke test passed: rasdf {rasdf.__version__}, numpy {np.__version__}, Python {sys.version.split()[0]}")
