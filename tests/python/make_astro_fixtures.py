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


def more(out):
    """A wider sweep: model kinds with bounds, fixed parameters, bounding boxes and units;
    masked and mixin table columns; time formats and locations; coordinate frames and
    spectral coordinates; a gwcs with a composite (celestial + spectral) frame and a
    bounding box; numpy layouts (records, strides, 0-d, empty, unicode, masked, big
    integers); inline and lz4 storage; and a set of Roman data models."""
    import astropy.units as u
    import astropy.coordinates as coord
    from astropy.coordinates import Angle, Distance, EarthLocation, Latitude, Longitude, SkyCoord, SpectralCoord
    from astropy.modeling import models
    from astropy.table import Column, MaskedColumn, QTable, Table
    from astropy.time import Time

    warnings.simplefilter("ignore")

    def w(name, tree, **kw):
        asdf.AsdfFile(tree).write_to(os.path.join(out, name + ".asdf"), **kw)

    gauss = models.Gaussian1D(1, 0, 1)
    gauss.bounding_box = (-5, 5)
    w("models", {
        "poly": models.Polynomial2D(3, c0_0=1.5, c1_0=2, c0_1=-1.25),
        "gauss": models.Gaussian2D(1, 0, 0, 2, 3, theta=0.3, bounds={"x_stddev": (0, 10)}),
        "tab": models.Tabular1D(points=np.arange(5.0), lookup_table=np.arange(5.0) ** 2, bounds_error=False),
        "const": models.Const1D(3) | models.Scale(2),
        "mapping": models.Mapping((0, 1, 0)) | models.Shift(1) & models.Shift(2) & models.Shift(3),
        "named": models.Shift(1).rename("sh"),
        "fix_inputs": models.fix_inputs(models.Polynomial2D(1), {"x": 1.5}),
        "units": models.Linear1D(slope=2 * u.m / u.s, intercept=1 * u.m),
        "cheb": models.Chebyshev1D(3, domain=[0, 10], window=[-1, 1]),
        "affine": models.AffineTransformation2D(matrix=[[1, 2], [3, 4]], translation=[0.5, 0.25]),
        "bounding_box": gauss,
        "fixed": models.Shift(3, fixed={"offset": True}),
    })

    t = Table({
        "a": MaskedColumn([1, 2, 3], mask=[False, True, False]),
        "b": Column([1.5, 2.5, 3.5], unit="m", description="len"),
        "s": ["x", "yy", "zzz"],
    })
    t.meta = {"k": 1, "nested": {"z": [1, 2]}}
    qt = QTable({
        "q": [1, 2] * u.km,
        "t": Time(["2020-01-01", "2021-06-30T12:00:00"]),
        "c": SkyCoord([1, 2] * u.deg, [3, 4] * u.deg),
    })
    w("tables", {"t": t, "qt": qt})
    w("times", {
        "jd": Time(2450000.5, format="jd"),
        "unix": Time(1.6e9, format="unix"),
        "iso_vec": Time(["2000-01-01", "2010-05-05T05:05:05.5"], scale="tai"),
        "loc": Time("2020-01-01", location=EarthLocation.from_geodetic(10 * u.deg, 20 * u.deg, 30 * u.m)),
        "mjd2d": Time(np.arange(6.0).reshape(2, 3) + 58000, format="mjd"),
        "decimalyear": Time(2020.5, format="decimalyear"),
    })
    w("coords", {
        "gal": SkyCoord(l=1 * u.deg, b=2 * u.deg, frame="galactic"),
        "fk5": SkyCoord(10 * u.deg, 20 * u.deg, frame="fk5", equinox="J1975"),
        "dist": SkyCoord(10 * u.deg, 20 * u.deg, distance=5 * u.pc),
        "angle": Angle([1, 2, 3] * u.deg),
        "lat": Latitude(10 * u.deg),
        "lon": Longitude(370 * u.deg),
        "el": EarthLocation.from_geocentric(1 * u.km, 2 * u.km, 3 * u.km),
        "spec": SpectralCoord([500, 600] * u.nm),
        "distance": Distance(10 * u.kpc),
    })
    w("units", {
        "q_int": 3 * u.m,
        "q_f32": np.float32(2.5) * u.s,
        "q_big_endian": np.arange(4, dtype=">f8") * u.K,
        "mag": u.mag,
        "scaled": u.Unit("10 km / s"),
        "dimensionless": u.dimensionless_unscaled,
    })

    from gwcs import coordinate_frames as cf
    from gwcs import wcs

    spec = cf.SpectralFrame(name="spec", unit=(u.nm,), axes_names=("wavelength",), axes_order=(2,))
    sky = cf.CelestialFrame(reference_frame=coord.ICRS(), name="icrs", unit=(u.deg, u.deg))
    world = cf.CompositeFrame([sky, spec], name="world")
    det3 = cf.CoordinateFrame(
        naxes=3, axes_type=("SPATIAL", "SPATIAL", "SPECTRAL"), axes_order=(0, 1, 2), name="det3",
        unit=(u.pix, u.pix, u.pix),
    )
    cube = wcs.WCS([(det3, models.Shift(1) & models.Shift(2) & models.Scale(3)), (world, None)])
    image = wcs.WCS([(cf.Frame2D(name="det", axes_order=(0, 1)), models.Identity(2)), (sky, None)])
    image.bounding_box = ((0, 100), (0, 200))
    w("gwcs_spectral", {"cube": cube, "image": image})

    rec = np.array(
        [(1, 2.5, b"ab", [1, 2]), (3, 4.5, b"cd", [3, 4])],
        dtype=[("i", ">i4"), ("f", "<f8"), ("s", "S2"), ("v", "<i2", (2,))],
    )
    base = np.arange(24, dtype="<i8").reshape(4, 6)
    w("numpy_layouts", {
        "rec": rec, "strided": base[::2, 1::2], "transposed": base.T, "zero_d": np.array(5.5),
        "empty": np.zeros((0, 3)), "unicode": np.array(["h\u00e9llo", "w\u00f6rld"]),
        "bools": np.array([True, False]), "f16": np.arange(4, dtype=np.float16),
        "c64": np.array([1 + 2j], dtype=np.complex64), "masked": np.ma.array([1.0, 2, 3], mask=[0, 1, 0]),
        "u64": np.array([2**64 - 1], dtype=np.uint64), "int_2_52": 2**52, "neg_int_2_52": -(2**52),
        "tuple": (1, 2), "nested": [1, [2, [3]]],
    })
    w("inline", {"a": np.arange(10), "b": np.ones((2, 2))}, all_array_storage="inline")
    w("lz4_views", {"a": np.arange(2000.0), "v": np.arange(2000.0)[10:20]}, all_array_compression="lz4")

    from roman_datamodels import datamodels

    cubes = ("ScienceRawModel", "RampModel", "DarkRefModel")
    for name in cubes + (
        "MosaicModel", "FlatRefModel", "ImageSourceCatalogModel", "WfiImgPhotomRefModel",
        "DistortionRefModel", "SegmentationMapModel", "L1DetectorGuidewindowModel",
    ):
        cls = getattr(datamodels, name)
        try:
            model = cls.create_fake_data(shape=(2, 8, 8) if name in cubes else (8, 8))
        except TypeError:  # a model with no shape to choose
            model = cls.create_fake_data()
        model.to_asdf(os.path.join(out, "roman_" + name + ".asdf"))

def selectors(out):
    """gwcs selectors: a label mapper over a dict (written as an `!!omap` whose items are
    `!!omap`-tagged one-pair mappings) and a regions selector over a label array."""
    from astropy.modeling.models import Mapping, Polynomial2D, Scale, Shift
    from gwcs import selector

    warnings.simplefilter("ignore")
    mapper = {float(k): Polynomial2D(1, c0_0=k) for k in (-1.5, 0.25, 2.0)}
    by_dict = selector.LabelMapperDict(("x", "y"), mapper, inputs_mapping=Mapping((0,), n_inputs=2), atol=1e-3)
    labels = np.zeros((5, 6), dtype=np.int32)
    labels[:, 1:3] = 1
    labels[:, 4:5] = 2
    regions = selector.RegionsSelector(
        inputs=("x", "y"),
        outputs=("ra", "dec", "lam"),
        selector={1: Mapping([0, 1, 1]) | Shift(1) & Shift(2) & Shift(3), 2: Mapping([0, 1, 1]) | Scale(2) & Scale(3) & Scale(3)},
        label_mapper=selector.LabelMapperArray(labels),
    )
    asdf.AsdfFile({"by_dict": by_dict, "regions": regions}).write_to(os.path.join(out, "gwcs_selectors.asdf"))


def history(out):
    """History entries as pipelines add them: the reference writes each time as
    `! '2026-11-24 08:57:47+00:00'`, which it reads back as a datetime."""
    import datetime

    af = asdf.AsdfFile({"data": np.arange(6.0).reshape(2, 3)})
    af.add_history_entry("calibrated", software={"name": "pipeline", "version": "1.0"})
    af.add_history_entry("resampled")
    af["history"]["entries"][1]["time"] = datetime.datetime(2026, 1, 2, 3, 4, 5, 600000)
    af.write_to(os.path.join(out, "history.asdf"))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "testdata/astro")
    more(sys.argv[1] if len(sys.argv) > 1 else "testdata/astro")
    selectors(sys.argv[1] if len(sys.argv) > 1 else "testdata/astro")
    history(sys.argv[1] if len(sys.argv) > 1 else "testdata/astro")
