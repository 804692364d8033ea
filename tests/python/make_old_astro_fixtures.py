"""Make testdata/oldastro/: astronomy objects as an older reference library wrote them,
asdf 2.15.2 with asdf-astropy 0.5.0, astropy 5.3.4 and gwcs 0.18.3, at ASDF Standards
1.1.0 to 1.5.0 (the tags of those standards: `unit/quantity-1.1.0`, `core/table-1.0.0`,
`time/time-1.1.0`, transforms of `transform-1.x`), so that rasdf is tested on what its
copies must keep: a copy labelled with another standard than its tags loses the objects
in the reference. Each file's defaults are removed as asdf 2.x's
`AsdfFile.remove_defaults()` removes them (as files of older writers left them out), so
the reader's schema defaults are tested too (`direction` of a rotation, a step's
`transform: null`...).

Run with a venv from requirements-oldastro.txt (numpy < 2):

    python tests/python/make_old_astro_fixtures.py testdata/oldastro
"""

import os
import sys
import warnings

import asdf
import astropy.units as u
import gwcs
import gwcs.coordinate_frames as cf
import numpy as np
from astropy import coordinates as coord
from astropy.modeling import models
from astropy.table import QTable, Table
from astropy.time import Time


def imaging_wcs():
    shift = models.Shift(-10.5) & models.Shift(-13.2)
    scale = models.Scale(0.01) & models.Scale(0.04)
    rotation = models.AffineTransformation2D(np.array([[0.9, -0.1], [0.1, 0.9]]))
    tan = models.Pix2Sky_TAN()
    celestial = models.RotateNative2Celestial(5.63, -72.05, 180)
    forward = shift | scale | rotation | tan | celestial
    detector = cf.Frame2D(name="detector", axes_order=(0, 1), unit=(u.pix, u.pix))
    sky = cf.CelestialFrame(reference_frame=coord.ICRS(), name="icrs", unit=(u.deg, u.deg))
    return gwcs.WCS(forward_transform=forward, input_frame=detector, output_frame=sky)


def tree(rng, version):
    rows = 29
    table = Table(
        {
            "id": np.arange(rows, dtype="i4"),
            "flux": rng.normal(size=rows) * u.Jy,
            "name": [f"src{i}" for i in range(rows)],
        },
        meta={"origin": "fixture"},
    )
    t = {
        "quantity": rng.normal(size=(3, 4)) * u.km / u.s,
        "scalar_quantity": 3.5 * u.m,
        "unit": u.Unit("erg / (s cm2 Angstrom)"),
        "time": Time(["2020-01-01T00:00:00", "2021-06-30T12:00:00"], format="isot", scale="utc"),
        "instant": Time(59000.5, format="mjd", scale="tt"),
        "table": table,
        "qtable": QTable({"x": np.arange(5.0) * u.pix, "y": np.arange(5.0) * u.pix}),
        "coord": coord.SkyCoord(ra=[10.5, 20.25] * u.deg, dec=[-5.0, 41.0] * u.deg, frame="icrs"),
        "rotation": models.EulerAngleRotation(10.0, 20.0, 30.0, "zxz"),
    }
    if version != "1.1.0":
        # (asdf-astropy 0.5 writes no celestial frame for standard 1.1.0.)
        t["wcs"] = imaging_wcs()
    return t


def write_without_defaults():
    """Has asdf's writer drop every value equal to its schema default from the tagged
    tree it writes (asdf 2.15's `schema.remove_defaults`, once the tree is validated),
    as older writers left them out."""
    original_dump, original_validate = asdf.yamlutil.dump_tree, asdf.schema.validate

    def dump_tree(tree, fd, ctx, tree_finalizer=None, _serialization_context=None):
        def validate(tagged, ctx, *args, **kwargs):
            # Once: `remove_defaults` itself validates.
            asdf.schema.validate = original_validate
            original_validate(tagged, ctx, *args, **kwargs)
            asdf.schema.remove_defaults(tagged, ctx)

        asdf.schema.validate = validate
        try:
            return original_dump(tree, fd, ctx, tree_finalizer, _serialization_context)
        finally:
            asdf.schema.validate = original_validate

    asdf.yamlutil.dump_tree = dump_tree


def main(out):
    warnings.simplefilter("ignore")
    os.makedirs(out, exist_ok=True)
    assert asdf.__version__ == "2.15.2", asdf.__version__
    write_without_defaults()
    rng = np.random.default_rng(7)
    for version in ["1.1.0", "1.3.0", "1.4.0", "1.5.0"]:
        af = asdf.AsdfFile(tree(rng, version), version=version)
        af.write_to(os.path.join(out, f"astro_v{version}.asdf"))


if __name__ == "__main__":
    main(sys.argv[1])
