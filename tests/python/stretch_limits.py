"""The intervals astropy (pinned in requirements-astro.txt) gives the arrays of an ASDF
file, for `rasdf preview`'s cross-test (cli/tests/preview.rs): for each ARRAY (a tree
path, with " plane N" appended for plane N of a cube, its leading axes flattened) one
line of JSON,
{"path", "zscale": [vmin, vmax], "percentile": [vmin, vmax], "minmax": [vmin, vmax]},
from ZScaleInterval() (astropy's defaults), PercentileInterval(P) and MinMaxInterval()
over the array (a numpy masked array when it has a mask), floats as repr gives them.

    python stretch_limits.py FILE P ARRAY...
"""

import json
import sys

import asdf
import numpy as np
from astropy.visualization import MinMaxInterval, PercentileInterval, ZScaleInterval


def limits(interval, data):
    vmin, vmax = interval.get_limits(data)
    return [float(vmin), float(vmax)]


def main(path, percent, arrays):
    with asdf.open(path, lazy_load=False, memmap=False) as af:
        for spec in arrays:
            name, _, plane = spec.partition(" plane ")
            node = af.tree
            for step in name.strip("/").split("/"):
                node = node[step]
            data = node
            if plane:
                shape = data.shape
                data = data.reshape((-1,) + shape[-2:])[int(plane)]
            if not isinstance(data, np.ma.MaskedArray):
                data = np.asarray(data)
            out = {
                "path": spec,
                "zscale": limits(ZScaleInterval(), data),
                "percentile": limits(PercentileInterval(float(percent)), data),
                "minmax": limits(MinMaxInterval(), data),
            }
            print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
