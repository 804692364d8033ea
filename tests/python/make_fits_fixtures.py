"""Make the ASDF-in-FITS fixtures of testdata/fits/ (run in the astro venv, which has
stdatamodels; see tests/python/requirements-astro.txt).

Usage: python make_fits_fixtures.py OUT_DIR

- jwst_image.fits: a stdatamodels ImageModel as every JWST image is written: SCI
  float32, ERR float32, DQ uint32 (BITPIX 32 with BZERO 2147483648), the tree in a
  one-row BINTABLE named ASDF (column ASDF_METADATA), arrays `fits:SCI,1`...
- jwst_multispec.fits: a MultiSpecModel: two table extensions EXTRACT1D (EXTVER 1 and
  2) of float64 columns and a uint32 column (TZERO 2147483648), `fits:EXTRACT1D,2`.
- old_imagehdu.fits: as asdf 2.15 and older wrote ASDF-in-FITS (AsdfInFits with
  use_image_hdu): the ASDF file as the uint8 data of an ImageHDU named ASDF, made with
  astropy and asdf alone; its arrays cover what astropy converts: uint16 (BZERO
  32768), int8 (BITPIX 8, BZERO -128), uint64 (BZERO 2^63), BSCALE/BZERO to float32
  and float64, BLANK to NaN, two HDUs of one EXTNAME told by EXTVER, `fits:INDEX`
  sources, and a binary table with logical, text, unsigned, scaled and 2-D columns.

The files are small (each HDU takes at least two 2880-byte records); the dates in their
trees change at each run, the arrays do not.
"""

import io
import os
import sys
import warnings

import asdf
import numpy as np
from asdf.tagged import TaggedDict
from astropy.io import fits

NDARRAY = "tag:stsci.edu:asdf/core/ndarray-1.0.0"


def jwst_image(path):
    from stdatamodels.jwst import datamodels

    m = datamodels.ImageModel((3, 4))
    m.data = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5) / 4
    m.data[1, 2] = np.nan
    m.err = np.full((3, 4), 0.25, np.float32)
    m.dq = np.array([[0, 1, 2, 4], [2**31, 2**32 - 1, 7, 0], [1, 0, 0, 1024]], np.uint32)
    m.meta.instrument.name = "NIRCAM"
    m.meta.instrument.detector = "NRCA1"
    m.meta.observation.date = "2024-01-01"
    m.meta.target.ra = 53.16
    m.save(path)


def jwst_multispec(path):
    from stdatamodels.jwst import datamodels

    m = datamodels.MultiSpecModel()
    for k in range(2):
        s = datamodels.SpecModel()
        fields = s.schema["properties"]["spec_table"]["datatype"]
        t = np.zeros(3, dtype=[(f["name"], f["datatype"]) for f in fields])
        t["WAVELENGTH"] = np.linspace(1, 2, 3) + k
        t["FLUX"] = [1.5, -2.0, np.nan]
        t["DQ"] = [0, 1, 2**31 + k]
        t["NPIXELS"] = 4.0
        s.spec_table = t
        s.meta.target.catalog_name = f"source {k}"
        m.spec.append(s)
    m.save(path)


def ref(source, datatype, shape):
    return TaggedDict({"source": source, "datatype": datatype, "byteorder": "big", "shape": list(shape)}, NDARRAY)


def image(data, name, ver=None, **header):
    hdu = fits.ImageHDU(data, name=name)
    if ver is not None:
        hdu.ver = ver
    for k, v in header.items():
        hdu.header[k] = v
    return hdu


def old_imagehdu(path):
    hdus = [fits.PrimaryHDU()]
    hdus[0].header["TELESCOP"] = "JWST"
    # Stored values, big-endian, written as given (astropy scales only data it is
    # handed unscaled, so the scaled images get their keywords after the data).
    sci1 = np.arange(6, dtype=np.float32).reshape(2, 3)
    hdus.append(image(sci1, "SCI", 1))
    hdus.append(image(sci1 * 10, "SCI", 2))
    hdus.append(image(np.array([0, 1, 65535, 32768], np.uint16), "U16"))
    hdus.append(image(np.array([2**64 - 1, 0, 2**63], np.uint64), "U64"))
    i8 = fits.ImageHDU(np.array([0, 1, 127, 128, 255], np.uint8), name="I8")
    i8.header["BZERO"] = -128
    hdus.append(i8)
    scaled = fits.ImageHDU(np.array([[1, -2, 7], [300, 0, -32768]], np.int16), name="SCALED16")
    scaled.header["BSCALE"] = 0.1
    scaled.header["BZERO"] = 3.0
    scaled.header["BLANK"] = -32768
    hdus.append(scaled)
    scaled32 = fits.ImageHDU(np.array([5, -5, 2**31 - 1], np.int32), name="SCALED32")
    scaled32.header["BSCALE"] = 2.5
    scaled32.header["BZERO"] = 1
    hdus.append(scaled32)
    blank = fits.ImageHDU(np.array([1, -1, 99], np.int16), name="BLANK16")
    blank.header["BLANK"] = 99
    hdus.append(blank)
    fscaled = fits.ImageHDU(np.array([1.5, -0.25], np.float64), name="FSCALED")
    fscaled.header["BSCALE"] = 2.0
    fscaled.header["BZERO"] = 0.5
    hdus.append(fscaled)
    # An unnamed extension: found by its index alone.
    hdus.append(fits.ImageHDU(np.array([[1, 2], [3, 4]], np.int64)))
    cols = [
        fits.Column(name="FLAG", format="L", array=np.array([True, False, True])),
        fits.Column(name="NAME", format="6A", array=np.array(["alpha", "b", ""])),
        fits.Column(name="COUNT", format="I", bzero=32768, array=np.array([0, 40000, 65535], np.uint16)),
        # Scaled on the way (TSCAL4, TZERO4 below): astropy cannot write this column.
        fits.Column(name="SCALED", format="J", array=np.array([2, 5, -4], np.int32)),
        fits.Column(name="GRID", format="6E", dim="(3,2)", array=np.arange(18, dtype=np.float32).reshape(3, 2, 3)),
        fits.Column(name="BYTES", format="2B", array=np.array([[1, 2], [3, 4], [250, 255]], np.uint8)),
    ]
    cat = fits.BinTableHDU.from_columns(cols, name="CAT")
    cat.header["XSCAL4"] = 0.5
    cat.header["XZERO4"] = -1.0
    hdus.append(cat)
    tree = {
        "meta": {"telescope": "JWST", "note": "asdf <= 2.15 wrote the ASDF extension as an ImageHDU"},
        "sci": [ref("fits:SCI,1", "float32", (2, 3)), ref("fits:sci,2", "float32", (2, 3))],
        "u16": ref("fits:U16,1", "uint16", (4,)),
        "u64": ref("fits:U64,1", "uint64", (3,)),
        "i8": ref("fits:I8,1", "int8", (5,)),
        "scaled16": ref("fits:SCALED16,1", "float32", (2, 3)),
        "scaled32": ref("fits:SCALED32,1", "float64", (3,)),
        "blank16": ref("fits:BLANK16,1", "float32", (3,)),
        "fscaled": ref("fits:FSCALED,1", "float64", (2,)),
        "unnamed": ref("fits:10", "int64", (2, 2)),
        "by_index": ref("fits:1", "float32", (2, 3)),
        "catalog": TaggedDict(
            {
                "source": "fits:CAT,1",
                "datatype": [
                    {"name": "FLAG", "datatype": "bool8"},
                    {"name": "NAME", "datatype": ["ascii", 6]},
                    {"name": "COUNT", "datatype": "uint16", "byteorder": "big"},
                    {"name": "SCALED", "datatype": "float64", "byteorder": "big"},
                    {"name": "GRID", "datatype": "float32", "byteorder": "big", "shape": [2, 3]},
                    {"name": "BYTES", "datatype": "uint8", "shape": [2]},
                ],
                "byteorder": "big",
                "shape": [3],
            },
            NDARRAY,
        ),
        "inline": np.array([1, 2, 3], np.int32),
    }
    # Standard 1.5.0, whose core/ndarray is 1.0.0, as the asdf 2.x of those files wrote.
    af = asdf.AsdfFile(tree, version="1.5.0")
    out = io.BytesIO()
    af.write_to(out, all_array_storage="inline")
    hdus.append(fits.ImageHDU(np.frombuffer(out.getvalue(), np.uint8), name="ASDF"))
    buf = io.BytesIO()
    fits.HDUList(hdus).writeto(buf)
    data = buf.getvalue().replace(b"XSCAL4  =", b"TSCAL4  =").replace(b"XZERO4  =", b"TZERO4  =")
    with open(path, "wb") as f:
        f.write(data)
    with fits.open(path) as h:
        names = [(x.name, x.ver) for x in h]
        assert names[1:3] == [("SCI", 1), ("SCI", 2)], names
        assert list(h["CAT"].data["SCALED"]) == [0.0, 1.5, -3.0], h["CAT"].data["SCALED"]


def main(out):
    os.makedirs(out, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jwst_image(os.path.join(out, "jwst_image.fits"))
        jwst_multispec(os.path.join(out, "jwst_multispec.fits"))
        old_imagehdu(os.path.join(out, "old_imagehdu.fits"))


if __name__ == "__main__":
    main(sys.argv[1])
