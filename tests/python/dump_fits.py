"""Print, as canonical JSON (the form of dump_tree.py), the tree and array values that
stdatamodels reads from ASDF-in-FITS files: the ASDF extension opened by
`stdatamodels.fits_support.from_fits_asdf`, each `fits:` array the HDU's data as astropy
gives it (a table's fields as astropy converts them on access).

Usage: python dump_fits.py FILE... > dumps.json   (in the astro venv)
"""

import json
import os
import sys
import warnings

import numpy as np
from astropy.io import fits
from stdatamodels.fits_support import from_fits_asdf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dump_tree  # noqa: E402


def table(rec):
    """A FITS_rec as the structured array of its fields' values as astropy gives them
    (unsigned, scaled, bool, text with trailing blanks dropped)."""
    fields, columns = [], []
    for name in rec.dtype.names:
        col = rec[name]
        stored = rec.dtype[name]
        if stored.base.kind == "S":
            # astropy's character arrays drop trailing blanks when their items are read.
            col = np.char.encode(np.char.rstrip(np.asarray(col)), "ascii").astype(stored.base)
        col = np.asarray(col)
        fields.append((name, col.dtype, col.shape[1:]))
        columns.append(col)
    out = np.empty(len(rec), dtype=fields)
    for (name, _, _), col in zip(fields, columns):
        out[name] = col
    return out


def dump_file(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with fits.open(path, memmap=False) as hdulist:
            af = from_fits_asdf(hdulist)
            tree = af.tree
            # Replace table data (FITS_rec) by plain structured arrays, anywhere.
            def fix(node):
                if isinstance(node, fits.FITS_rec):
                    return table(node)
                if isinstance(node, list):
                    for i, x in enumerate(node):
                        node[i] = fix(x)
                elif isinstance(node, dict):
                    for k in list(node):
                        node[k] = fix(node[k])
                return node

            fix(tree)
            return dump_tree.dump(tree, set())


def main(paths):
    json.dump({p: dump_file(p) for p in paths}, sys.stdout, indent=None, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
