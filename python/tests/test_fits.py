"""ASDF-in-FITS (testdata/fits/, JWST products as stdatamodels writes them): `rasdf.open`
reads the tree from the FITS file's ASDF extension and each `fits:` array from its HDU,
as stdatamodels reads them (compared with stdatamodels itself where it is installed: the
astro venv, with RASDF_FITS_REFERENCE=1 making it required)."""

import os

import numpy as np
import pytest

import rasdf
from conftest import TESTDATA

FITS = TESTDATA / "fits"


def test_jwst_image():
    with rasdf.open(FITS / "jwst_image.fits") as af:
        assert af["meta/model_type"] == "ImageModel"
        assert af["meta/instrument/name"] == "NIRCAM"
        data, dq = af["data"], af["dq"]
        assert (data.shape, data.dtype) == ((3, 4), np.dtype(">f4"))
        assert dq.dtype == np.dtype("uint32")
        dq = np.asarray(dq)
        assert dq.tolist() == [[0, 1, 2, 4], [2**31, 2**32 - 1, 7, 0], [1, 0, 0, 1024]]
        sci = np.asarray(data)
        assert sci[0, 0] == -1.375 and np.isnan(sci[1, 2])
        # Read in place: a view of the mapped or read file, not a copy.
        assert not sci.flags.writeable and sci.base is not None


def test_tables_and_old_files():
    with rasdf.open(FITS / "jwst_multispec.fits") as af:
        table = np.asarray(af["spec/1/spec_table"])
        assert table.dtype["DQ"] == np.dtype(">u4")
        assert table["DQ"].tolist() == [0, 1, 2**31 + 1]
        assert table["WAVELENGTH"].tolist() == [2.0, 2.5, 3.0]
    with rasdf.open(FITS / "old_imagehdu.fits") as af:
        assert np.asarray(af["u16"]).tolist() == [0, 1, 65535, 32768]
        assert np.asarray(af["i8"]).tolist() == [-128, -127, -1, 0, 127]
        cat = np.asarray(af["catalog"])
        assert cat["FLAG"].tolist() == [True, False, True]
        assert cat["NAME"].tolist() == [b"alpha", b"b", b""]
        assert cat["SCALED"].tolist() == [0.0, 1.5, -3.0]
        assert cat["GRID"].shape == (3, 2, 3)


def test_a_source_naming_no_hdu(tmp_path):
    data = (FITS / "jwst_image.fits").read_bytes().replace(b"fits:ERR,1", b"fits:ERR,9")
    path = tmp_path / "bad.fits"
    path.write_bytes(data)
    with rasdf.open(path) as af:
        with pytest.raises(rasdf.AsdfError, match="names no HDU"):
            np.asarray(af["err"])
        assert np.asarray(af["dq"]).shape == (3, 4)


def reference():
    try:
        from astropy.io import fits
        from stdatamodels.fits_support import from_fits_asdf
    except ImportError:
        if os.environ.get("RASDF_FITS_REFERENCE"):
            raise
        pytest.skip("stdatamodels is not installed (it is in the astro venv)")
    return fits, from_fits_asdf


@pytest.mark.parametrize("name", ["jwst_image.fits", "jwst_multispec.fits", "old_imagehdu.fits"])
def test_against_stdatamodels(name):
    fits, from_fits_asdf = reference()
    path = FITS / name
    with fits.open(path) as hdulist, rasdf.open(path) as af:
        ref = from_fits_asdf(hdulist)

        def walk(theirs, ours, where):
            if isinstance(theirs, fits.FITS_rec):
                ours = np.asarray(ours)
                assert ours.dtype.names == theirs.dtype.names, where
                for field in theirs.dtype.names:
                    want = theirs[field]
                    got = ours[field]
                    if want.dtype.kind in "US":
                        want = np.char.encode(np.char.rstrip(np.asarray(want)), "ascii")
                    np.testing.assert_array_equal(got, np.asarray(want), err_msg=f"{where}/{field}")
            elif isinstance(theirs, np.ndarray) or type(theirs).__name__ == "NDArrayType":  # asdf's inline arrays
                theirs, ours = np.asarray(theirs), np.asarray(ours)
                assert ours.dtype.newbyteorder("=") == theirs.dtype.newbyteorder("="), where
                np.testing.assert_array_equal(ours, theirs, err_msg=where)
            elif isinstance(theirs, dict):
                assert list(theirs) == list(ours), where
                for k in theirs:
                    walk(theirs[k], ours[k], f"{where}/{k}")
            elif isinstance(theirs, list):
                assert len(theirs) == len(ours), where
                for i, (t, o) in enumerate(zip(theirs, ours)):
                    walk(t, o, f"{where}/{i}")
            else:
                assert theirs == ours, where

        walk(ref.tree, af.tree, "")
