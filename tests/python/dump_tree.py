"""Print, as canonical JSON, the tree and array values the reference library reads.

Usage: python dump_tree.py [--errors] FILE... > dumps.json

The same form is produced by rasdf's tests (testkit/src/dump.rs), so the two can be
compared exactly:
- null, bool and str as themselves; ints {"$int": "123"}; floats {"$float": x} with x a
  JSON number or "nan"/"inf"/"-inf"; complex {"$complex": [re, im]};
- bytes {"$bytes": hex}; dates and datetimes {"$timestamp": isoformat};
- lists as lists; mappings {"$map": [[key, value], ...]} in file order;
- `!!set` {"$set": [members, sorted by their JSON]};
- nodes with tags the reference does not convert {"$tag": tag, "value": ...}, and
  core/constant, whose object keeps just the value, the same way;
- external array references (core/externalarray) {"$external": {"fileuri": str,
  "target": ..., "datatype": ..., "shape": [...]}};
- arrays {"$ndarray": {"datatype": ..., "shape": [...], "values": [...flat, C order],
  "mask": [...] or null}}; a node that contains itself: {"$cycle": true}.
"""

import datetime
import json
import math
import sys
import warnings

import asdf
import numpy as np
from asdf.tagged import Tagged

SCALARS = {
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
}


def fl(x):
    x = float(x)
    if math.isnan(x):
        return {"$float": "nan"}
    if math.isinf(x):
        return {"$float": "inf" if x > 0 else "-inf"}
    return {"$float": x}


def dtype_of(dt):
    if dt.fields is not None:
        out = []
        for name in dt.names:
            sub = dt.fields[name][0]
            shape = []
            if sub.subdtype is not None:
                sub, shape = sub.subdtype[0], list(sub.subdtype[1])
            out.append({"name": name, "datatype": dtype_of(sub), "shape": shape})
        return out
    if dt.kind == "S":
        return ["ascii", dt.itemsize]
    if dt.kind == "U":
        return ["ucs4", dt.itemsize // 4]
    if dt.kind == "b":
        return "bool8"
    name = dt.newbyteorder("=").name
    assert name in SCALARS, name
    return name


def element(v):
    if isinstance(v, np.void) or isinstance(v, tuple):
        return [element(x) for x in v]
    if isinstance(v, np.ndarray):
        return [element(x) for x in v.tolist()] if v.ndim else element(v[()])
    if isinstance(v, list):
        return [element(x) for x in v]
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return {"$int": str(int(v))}
    if isinstance(v, (float, np.floating)):
        return fl(v)
    if isinstance(v, (complex, np.complexfloating)):
        return {"$complex": [fl(v.real), fl(v.imag)]}
    if isinstance(v, bytes):
        return {"$bytes": v.hex()}
    if isinstance(v, str):
        return v
    raise TypeError(type(v))


def array(a):
    mask = None
    if isinstance(a, np.ma.MaskedArray):
        m = np.ma.getmaskarray(a)
        mask = [bool(x) for x in m.reshape(-1)] if m.size else []
        if m.dtype.names is not None:
            mask = [bool(any(x)) for x in m.reshape(-1)]
        a = a.data
    a = np.asarray(a)
    flat = a.reshape(-1)
    values = [element(flat[i]) for i in range(flat.size)]
    return {"$ndarray": {"datatype": dtype_of(a.dtype), "shape": list(a.shape), "values": values, "mask": mask}}


def dump(v, stack):
    if isinstance(v, (dict, list)) and id(v) in stack:
        return {"$cycle": True}
    if isinstance(v, (np.ndarray, asdf.tags.core.ndarray.NDArrayType)):
        return array(v if isinstance(v, np.ndarray) else v._make_array())
    if isinstance(v, Tagged):
        raw = dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else str(v)
        stack.add(id(v))
        inner = dump_plain(raw, stack, v)
        stack.discard(id(v))
        return {"$tag": v._tag, "value": inner}
    if isinstance(v, asdf.ExternalArrayReference):
        return {
            "$external": {
                "fileuri": v.fileuri,
                "target": dump(v.target, stack),
                "datatype": dump(v.dtype, stack),
                "shape": [dump(x, stack) for x in v.shape],
            }
        }
    if isinstance(v, (set, frozenset)):
        # `!!set`: its members, in a canonical order (a set has none).
        return {"$set": sorted((dump(x, stack) for x in v), key=lambda j: json.dumps(j, sort_keys=True))}
    if isinstance(v, asdf.tags.core.Constant):
        # core/constant-1.0.0 (its only version) becomes an object that keeps the value.
        stack.add(id(v))
        inner = dump_plain(v.value, stack, v)
        stack.discard(id(v))
        return {"$tag": "tag:stsci.edu:asdf/core/constant-1.0.0", "value": inner}
    if isinstance(v, asdf.IntegerType):
        return {"$int": str(int(v._value))}
    stack.add(id(v))
    out = dump_plain(v, stack, v)
    stack.discard(id(v))
    return out


def dump_plain(v, stack, orig):
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, dict):
        return {"$map": [[dump(k, stack), dump(x, stack)] for k, x in v.items()]}
    if isinstance(v, (list, tuple)):
        return [dump(x, stack) for x in v]
    if isinstance(v, datetime.datetime) or isinstance(v, datetime.date):
        return {"$timestamp": v.isoformat()}
    return element(v)


def dump_file(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with asdf.open(path, lazy_load=False, memmap=False) as af:
            return dump(af.tree, set())


def dump_or_error(path):
    try:
        return dump_file(path)
    except Exception as e:  # noqa: BLE001 - any failure to read is the answer
        return {"$error": f"{type(e).__name__}: {e}"}


def main(args):
    # --errors: a file the reference cannot read dumps as {"$error": message} instead of
    # failing the run.
    each = dump_or_error if args[:1] == ["--errors"] else dump_file
    paths = args[1:] if args[:1] == ["--errors"] else args
    json.dump({p: each(p) for p in paths}, sys.stdout, indent=None, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
