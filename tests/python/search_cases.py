"""What `AsdfFile.search` finds, for cli/tests/search.rs.

    python search_cases.py FILE...

For each file and each query below, the paths asdf's search finds (breadth first, the
root left out), as rasdf writes tree paths (`/key/0`), in JSON:
{"FILE": [{"args": [rasdf search's arguments], "paths": [...]}]}.
"""

import json
import sys
import warnings

import asdf
from asdf.search import _walk_tree_breadth_first

# (rasdf search's arguments, AsdfFile.search's keywords)
QUERIES = [
    ([], {}),
    (["a"], {"key": "a"}),
    (["^s"], {"key": "^s"}),
    (["0"], {"key": "0"}),
    (["--type", "int"], {"type_": int}),
    (["--type", "float"], {"type_": float}),
    (["--type", "str"], {"type_": str}),
    (["--type", "bool"], {"type_": bool}),
    (["--type", "dict"], {"type_": dict}),
    (["--type", "list"], {"type_": list}),
    (["--type", "NoneType"], {"type_": type(None)}),
    (["--type", "ndarray"], {"type_": asdf.tags.core.ndarray.NDArrayType}),
    (["--value", "1"], {"value": 1}),
    (["--value", "0.5"], {"value": 0.5}),
    (["--value", "true"], {"value": True}),
    (["--value", "null"], {"value": None}),
    (["--value", "e"], {"value": "e"}),
    (["--value", "^[0-9]+$"], {"value": "^[0-9]+$"}),
    (["name", "--type", "str"], {"key": "name", "type_": str}),
    (["--type", "int", "--value", "1"], {"type_": int, "value": 1}),
]


def path(ids):
    return "".join("/" + str(i).replace("~", "~0").replace("/", "~1") for i in ids[1:])


out = {}
for f in sys.argv[1:]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        af = asdf.open(f, lazy_load=True, memmap=False)
    cases = []
    for args, kw in QUERIES:
        result = af.search(**kw)
        ids_found = []
        def callback(identifiers, parent, node, children, result=result, ids_found=ids_found):
            if len(identifiers) > 1 and all(f(node, identifiers[-1]) for f in result._filters):
                ids_found.append(path(identifiers))

        _walk_tree_breadth_first(result._identifiers, result._node, callback)
        cases.append({"args": args, "paths": ids_found})
    out[f] = cases
    af.close()
json.dump(out, sys.stdout, indent=1)
