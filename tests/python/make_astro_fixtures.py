"""Make testdata/astro/: files written by astropy, gwcs and roman_datamodels through the
reference library (the kinds of files pipelines trade), so rasdf is tested on real tag
sets: units and quantities, tables, times, sky coordinates, WCS transform trees, and a
Roman level-2 data model.

Run with a venv from requirements-astro.txt:

    python tests/python/make_astro_fixtures.py testdata/astro

The expected values come from the plain reference library without these extensions
(dump_tree.py in the main venv), which keeps every tag as written.
"""

import os
import sys
import warnings

import asdf
import numpy as np


def main(out):
    os.makedirs(out, exist_ok=True)
    import astropy.units as u
    from astropy.coordinates import SkyCoord
    from astropy.table import Table
    from astropy.time import Time

    t = Table({"a": [1, 2, 3], "b": [1.5, 2.5, 3.5] * u.m, "c": ["x", "yy", "zzz"]})
    t.meta["origin"] = "rasdf test"
    tree = {
        "quantity": 3.5 * u.km / u.s,
        "array_quantity": np.arange(6.0).reshape(2, 3) * u.Jy,
        "unit": u.erg / u.cm**2 / u.s,
        "time": Time("2020-01-02T03:04:05.678", scale="utc"),
        "times": Time([58000.0, 58001.5], format="mjd", scale="tdb"),
        "coord": SkyCoord(ra=[10.5, 11.0] * u.deg, dec=[-5.0, 42.0] * u.deg, frame="icrs"),
        "table": t,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        asdf.AsdfFile(tree).write_to(os.path.join(out, "astropy_types.asdf"))

    # A gwcs imaging pipeline: shift, scale, rotation, TAN projection, sky rotation.
    from astropy.modeling import models
    from astropy import coordinates as coord
    from gwcs import coordinate_frames as cf
    from gwcs import wcs

    shift = models.Shift(-10.5) & models.Shift(-13.2)
    scale = models.Scale(0.01) & models.Scale(0.04)
    rot = models.Rotation2D(23)
    tan = models.Pix2Sky_TAN()
    celestial_rotation = models.RotateNative2Celestial(5.63, -72.5, 180)
    det2sky = shift | scale | rot | tan | celestial_rotation
    detector = cf.Frame2D(name="detector", axes_order=(0, 1), unit=(u.pix, u.pix))
    sky = cf.CelestialFrame(reference_frame=coord.ICRS(), name="icrs", unit=(u.deg, u.deg))
    w = wcs.WCS([(detector, det2sky), (sky, None)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        asdf.AsdfFile({"wcs": w, "data": np.arange(12, dtype="<f4").reshape(3, 4)}).write_to(
            os.path.join(out, "gwcs_imaging.asdf"), all_array_compression="zlib"
        )

    # A Roman level-2 image data model, small.
    from roman_datamodels import datamodels

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = datamodels.ImageModel.create_fake_data(shape=(8, 8))
        model.to_asdf(os.path.join(out, "roman_level2.asdf"), all_array_compression="lz4")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "testdata/astro")
