"""Open ASDF files with the reference library and its astronomy extensions (asdf-astropy,
gwcs, roman_datamodels), validate them against their schemas and build every object.
Exit status 1 with a message when one fails.

    python validate_with_extensions.py FILE...
"""

import sys
import warnings

import asdf
import numpy as np


def touch(x, seen):
    if id(x) in seen:
        return
    seen.add(id(x))
    if isinstance(x, dict):
        for v in x.values():
            touch(v, seen)
    elif isinstance(x, (list, tuple)):
        for v in x:
            touch(v, seen)
    elif hasattr(x, "__array__"):
        np.asarray(x).copy()


def main(paths):
    failed = []
    for p in paths:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", asdf.exceptions.AsdfConversionWarning)
                with asdf.open(p, lazy_load=False, memmap=False) as af:
                    af.validate()
                    touch(af.tree, set())
                    if "roman" in af.tree:
                        from roman_datamodels import datamodels

                        datamodels.open(p).validate()
        except Exception as e:  # noqa: BLE001
            failed.append(f"{p}: {type(e).__name__}: {e}")
    if failed:
        print("\n".join(failed))
        sys.exit(1)
    print(f"{len(paths)} files valid")


if __name__ == "__main__":
    main(sys.argv[1:])
